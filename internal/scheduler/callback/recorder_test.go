package callback_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// sentQueue keeps what is sent to it (the recorder's queue is an adapter's
// job; only the split and the error path are under test here).
type sentQueue struct {
	driver.Queue[callback.Recorded]
	sent []callback.Recorded
	err  error
}

func (q *sentQueue) Send(_ context.Context, msgs []driver.Outgoing[callback.Recorded]) error {
	if q.err != nil {
		return q.err
	}
	for _, m := range msgs {
		q.sent = append(q.sent, m.Msg)
	}
	return nil
}

func TestRecorderSplitsAndValidates(t *testing.T) {
	clk := clock.NewFake(start)
	q := &sentQueue{}
	r := callback.NewRecorder(q, clk)
	big := strings.Repeat("x", 20000)
	items := []protocol.HandleCallbackParam{
		{LogID: 1, HandleCode: 200},
		{LogID: 0, HandleCode: 200}, // no such log
		{LogID: 2, HandleCode: 0},   // no result
		{LogID: 3, HandleCode: 500, HandleMsg: big},
		{LogID: 4, HandleCode: 500, HandleMsg: big},
	}
	errs := r.Callback(context.Background(), items)
	if errs[0] != nil || errs[3] != nil || errs[4] != nil {
		t.Fatalf("valid items rejected: %v", errs)
	}
	if !errors.Is(errs[1], xjob.ErrNotFound) || !callback.Final(errs[2]) {
		t.Errorf("invalid items: %v, %v", errs[1], errs[2])
	}
	var ids []int64
	for _, m := range q.sent {
		b, _ := json.Marshal(m)
		if len(b) > callback.MaxRecordedBytes {
			t.Errorf("recorded message of %d bytes, over %d", len(b), callback.MaxRecordedBytes)
		}
		if m.At != start.UnixMilli() {
			t.Errorf("recorded at %d, want the arrival %d", m.At, start.UnixMilli())
		}
		for _, it := range m.Items {
			ids = append(ids, it.LogID)
			if len(it.HandleMsg) > callback.MaxHandleMsg+3 {
				t.Errorf("message of %d bytes kept", len(it.HandleMsg))
			}
		}
	}
	if len(q.sent) != 2 || len(ids) != 3 {
		t.Errorf("sent %d messages with logs %v, want 2 with 1, 3, 4", len(q.sent), ids)
	}
	q.err = errors.New("queue down")
	errs = r.Callback(context.Background(), items[:1])
	if errs[0] == nil || callback.Final(errs[0]) {
		t.Errorf("a failed send must fail its items with a retryable error, got %v", errs[0])
	}
}

// TestApplyMergesRecordedRequests: results recorded by several requests
// are applied together, each with its arrival as handle time; the first
// result of a log wins, a repeat is a final verdict, and only a store
// failure asks for the request again.
func TestApplyMergesRecordedRequests(t *testing.T) {
	e := setup(t)
	j := e.job(0)
	a := e.triggered(j, xjob.CodeSuccess, 0, "")
	b := e.triggered(j, xjob.CodeSuccess, 0, "")
	at := clock.Millis(e.clk)
	e.clk.Advance(3000)
	retry := e.svc.Apply(e.ctx, []callback.Recorded{
		{At: at, Items: []protocol.HandleCallbackParam{{LogID: a.ID, HandleCode: 200, HandleMsg: "first"}}},
		{At: at + 5, Items: []protocol.HandleCallbackParam{{LogID: b.ID, HandleCode: 500}, {LogID: a.ID, HandleCode: 500, HandleMsg: "second"}}},
		{At: at + 9, Items: []protocol.HandleCallbackParam{{LogID: 987654321, HandleCode: 200}}},
	})
	for i, r := range retry {
		if r {
			t.Errorf("recorded request %d asked again", i)
		}
	}
	ga, gb := e.get(a.ID), e.get(b.ID)
	if ga.HandleCode != 200 || ga.HandleMsg != "first" || ga.HandleTime != at {
		t.Errorf("log a = code %d msg %q at %d, want the first result at %d", ga.HandleCode, ga.HandleMsg, ga.HandleTime, at)
	}
	if gb.HandleCode != 500 || gb.HandleTime != at+5 {
		t.Errorf("log b = code %d at %d, want 500 at %d", gb.HandleCode, gb.HandleTime, at+5)
	}
	rep, err := e.db.ReportList(e.ctx, driver.ReportListParams{From: callback.Day(a.TriggerTime), To: callback.Day(a.TriggerTime)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep) != 1 || rep[0].SucCount != 1 || rep[0].FailCount != 1 || rep[0].RunningCount != 0 {
		t.Errorf("report = %+v, want 1 success, 1 failure, none running", rep)
	}
}

// A results message says its format: one without "v" (written before
// records carried one) reads as version 1, a newer one is refused with a
// VersionError of kind "results", and every record is written with the
// current version.
func TestRecordedVersions(t *testing.T) {
	want := callback.Recorded{At: 1_700_000_000_000, Items: []protocol.HandleCallbackParam{{LogID: 9, HandleCode: 200}}}
	for _, tc := range []struct {
		name    string
		body    string
		version int
		bad     bool
	}{
		{name: "unversioned", body: `{"at":1700000000000,"items":[{"logId":9,"handleCode":200}]}`},
		{name: "version 1", body: `{"v":1,"at":1700000000000,"items":[{"logId":9,"handleCode":200}]}`},
		{name: "newer version", body: `{"v":3,"at":1,"items":[]}`, version: 3},
		{name: "not a version", body: `{"v":-1}`, bad: true},
		{name: "not an object", body: `[]`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got callback.Recorded
			err := json.Unmarshal([]byte(tc.body), &got)
			var verr *fire.VersionError
			switch {
			case tc.version != 0:
				if !errors.As(err, &verr) || verr.Kind != "results" || verr.Version != tc.version || verr.Newest != callback.RecordedVersion {
					t.Fatalf("err = %v, want a results VersionError of version %d", err, tc.version)
				}
			case tc.bad:
				if err == nil || errors.As(err, &verr) {
					t.Fatalf("err = %v, want a malformed-message error", err)
				}
			case err != nil:
				t.Fatalf("decode: %v", err)
			case got.At != want.At || len(got.Items) != 1 || got.Items[0].LogID != 9 || got.Items[0].HandleCode != 200:
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
	body, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(body), `{"v":1,`) {
		t.Fatalf("written as %s, want version %d first", body, callback.RecordedVersion)
	}
}
