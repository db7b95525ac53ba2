package httptarget

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/egress"
	"github.com/xjobdev/xjob/internal/target"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/protocol"
)

const testSecret = "session-key-0123456789abcdef"

// env is one Executor whose reports land on a channel, on a fake clock.
type env struct {
	exec    *Executor
	clk     *clock.Fake
	sealer  *target.Sealer
	reports chan protocol.HandleCallbackParam
}

func setup(t *testing.T, policy egress.Policy, tune func(*Config)) *env {
	t.Helper()
	sealer, err := target.NewSealer(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{clk: clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), sealer: sealer,
		reports: make(chan protocol.HandleCallbackParam, 64)}
	cfg := Config{Policy: policy, Sealer: sealer, Clock: e.clk,
		Report: func(_ context.Context, items []protocol.HandleCallbackParam) []error {
			for _, it := range items {
				e.reports <- it
			}
			return make([]error, len(items))
		}}
	if tune != nil {
		tune(&cfg)
	}
	e.exec, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.exec.Close)
	return e
}

var loopback = egress.Policy{AllowLoopback: true}

// spec is the sealed GLUE source of a spec (as the admin stores it).
func (e *env) spec(t *testing.T, s target.Spec) string {
	t.Helper()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	sealed, err := target.Resolve(e.sealer, s, "")
	if err != nil {
		t.Fatal(err)
	}
	return sealed.Canonical()
}

func (e *env) start(t *testing.T, logID int64, source string, tune func(*target.Call)) protocol.ReturnT {
	t.Helper()
	c := target.Call{Vars: target.Vars{JobID: 1, LogID: logID, Param: "p", ShardTotal: 1,
		ScheduleTime: e.clk.Now().UnixMilli(), TriggerTime: e.clk.Now().UnixMilli()}, Source: source}
	if tune != nil {
		tune(&c)
	}
	return e.exec.Start(context.Background(), c)
}

func (e *env) report(t *testing.T) protocol.HandleCallbackParam {
	t.Helper()
	select {
	case r := <-e.reports:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no report")
		return protocol.HandleCallbackParam{}
	}
}

func TestCallReportsStatusAndBody(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, path, query, auth, ctype, body string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b)}
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"accepted":true}`+strings.Repeat("x", 2*target.ResultBytes))
	}))
	defer srv.Close()
	e := setup(t, loopback, nil)
	src := e.spec(t, target.Spec{Method: "POST", URL: srv.URL + "/hook/{{jobId}}?log={{logId}}",
		Headers: map[string]string{"Content-Type": "application/json"}, SecretHeaders: map[string]string{"Authorization": "Bearer s3cret"},
		Body: `{"param":{{param|json}},"shard":{{shardIndex}}}`})
	if rt := e.start(t, 42, src, nil); rt.Code != protocol.SuccessCode {
		t.Fatalf("Start = %+v", rt)
	}
	s := <-got
	want := seen{"POST", "/hook/1", "log=42", "Bearer s3cret", "application/json", `{"param":"p","shard":0}`}
	if s != want {
		t.Fatalf("request = %+v\nwant %+v", s, want)
	}
	r := e.report(t)
	if r.LogID != 42 || r.HandleCode != xjob.CodeSuccess || !strings.Contains(r.HandleMsg, "HTTP 202 Accepted · POST ") ||
		!strings.Contains(r.HandleMsg, `{"accepted":true}`) || strings.Contains(r.HandleMsg, "s3cret") {
		t.Fatalf("report = %+v", r)
	}
	if n := strings.Count(r.HandleMsg, "x"); n > target.ResultBytes {
		t.Fatalf("result keeps %d bytes of the body, at most %d", n, target.ResultBytes)
	}
	if strings.Contains(r.HandleMsg, "log=42") {
		t.Fatalf("the result shows the URL's query: %q", r.HandleMsg)
	}
}

func TestStatusOutsideSuccessCodesFails(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	tests := []struct {
		codes string
		want  int
	}{
		{"", xjob.CodeSuccess},
		{"200,201", xjob.CodeFail},
		{"204", xjob.CodeSuccess},
	}
	for _, tc := range tests {
		t.Run(tc.codes, func(t *testing.T) {
			t.Parallel()
			e := setup(t, loopback, nil)
			e.start(t, 1, e.spec(t, target.Spec{URL: srv.URL, SuccessCodes: tc.codes}), nil)
			if r := e.report(t); r.HandleCode != tc.want || !strings.Contains(r.HandleMsg, "HTTP 204") {
				t.Fatalf("report = %+v, want code %d", r, tc.want)
			}
		})
	}
}

// TestHangingTargetIsCutAtTimeout: a target that never answers is cut
// when the injected clock passes the timeout, and its worker slot serves
// the next call.
func TestHangingTargetIsCutAtTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	defer close(release)
	e := setup(t, loopback, func(c *Config) { c.Workers = 1 })
	e.start(t, 1, e.spec(t, target.Spec{URL: srv.URL + "/hang"}), func(c *target.Call) { c.TimeoutSeconds = 5 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.clk.WaitForSleepers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(5 * time.Second)
	r := e.report(t)
	if r.HandleCode != xjob.CodeFail || !strings.Contains(r.HandleMsg, "timed out after 5s") {
		t.Fatalf("report = %+v", r)
	}
	e.start(t, 2, e.spec(t, target.Spec{URL: srv.URL + "/ok"}), func(c *target.Call) { c.Vars.JobID = 2 })
	if r := e.report(t); r.LogID != 2 || r.HandleCode != xjob.CodeSuccess {
		t.Fatalf("next call after the cut = %+v", r)
	}
}

func TestRedirects(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/here", http.StatusFound)
			return
		}
		_, _ = io.WriteString(w, "auth="+r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	e := setup(t, loopback, nil)
	e.start(t, 1, e.spec(t, target.Spec{URL: srv.URL + "/moved"}), nil)
	if r := e.report(t); r.HandleCode != xjob.CodeSuccess || !strings.Contains(r.HandleMsg, "HTTP 200") {
		t.Fatalf("redirect without a secret header = %+v, want followed", r)
	}
	e.start(t, 2, e.spec(t, target.Spec{URL: srv.URL + "/moved", SecretHeaders: map[string]string{"Authorization": "Bearer s3cret"}}),
		func(c *target.Call) { c.Vars.JobID = 2 })
	r := e.report(t)
	if r.HandleCode != xjob.CodeFail || !strings.Contains(r.HandleMsg, "HTTP 302 Found") ||
		!strings.Contains(r.HandleMsg, "redirect not followed: the call carries a secret header to /here") {
		t.Fatalf("redirect with a secret header = %+v", r)
	}
}

func TestEgressRuleRefusesAddresses(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("a refused address was called")
	}))
	t.Cleanup(srv.Close)
	tests := []struct {
		name   string
		policy egress.Policy
		url    string
		want   string
	}{
		{"loopback without opt-in", egress.Policy{}, srv.URL, "is loopback"},
		{"metadata", loopback, "http://169.254.169.254/latest/meta-data/", "link-local (cloud metadata)"},
		{"operator deny", egress.Policy{AllowLoopback: true, Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, srv.URL, "denied range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, tc.policy, nil)
			e.start(t, 1, e.spec(t, target.Spec{URL: tc.url}), nil)
			if r := e.report(t); r.HandleCode != xjob.CodeFail || !strings.Contains(r.HandleMsg, tc.want) {
				t.Fatalf("report = %+v, want a refusal containing %q", r, tc.want)
			}
		})
	}
}

func TestStartRefusesWhatCannotRun(t *testing.T) {
	t.Parallel()
	e := setup(t, loopback, nil)
	other, _ := target.NewSealer("another-session-key-0123456789")
	foreign, _ := target.Resolve(other, target.Spec{URL: "http://127.0.0.1/", SecretHeaders: map[string]string{"X-Key": "v"}}, "")
	tests := []struct {
		name, src, param, want string
	}{
		{"not a spec", `{"url":`, "", "HTTP target spec"},
		{"sealed with another key", foreign.Canonical(), "", "cannot be decrypted"},
		{"line break from the parameter", `{"url":"http://127.0.0.1/","headers":{"X-P":"{{param}}"}}`, "a\r\nb", "line break"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rt := e.start(t, 1, tc.src, func(c *target.Call) { c.Param = tc.param })
			if rt.Code == protocol.SuccessCode || !strings.Contains(rt.Msg, tc.want) {
				t.Fatalf("Start = %+v, want a failure containing %q", rt, tc.want)
			}
		})
	}
}

// blocking is a target that holds each call until released, announcing
// each arrival.
func blocking(t *testing.T) (*httptest.Server, chan string, chan struct{}) {
	arrived := make(chan string, 16)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.URL.Query().Get("log")
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	return srv, arrived, release
}

func TestBlockStrategies(t *testing.T) {
	t.Parallel()
	t.Run("serial", func(t *testing.T) {
		t.Parallel()
		srv, arrived, release := blocking(t)
		e := setup(t, loopback, nil)
		src := e.spec(t, target.Spec{URL: srv.URL + "/?log={{logId}}"})
		serial := func(c *target.Call) { c.BlockStrategy = string(xjob.BlockSerialExecution) }
		e.start(t, 1, src, serial)
		if got := <-arrived; got != "1" {
			t.Fatalf("first call = %s", got)
		}
		if rt := e.start(t, 2, src, serial); rt.Code != protocol.SuccessCode {
			t.Fatalf("queued call = %+v", rt)
		}
		select {
		case got := <-arrived:
			t.Fatalf("call %s ran beside the running one", got)
		default:
		}
		release <- struct{}{}
		if r := e.report(t); r.LogID != 1 {
			t.Fatalf("report = %+v", r)
		}
		if got := <-arrived; got != "2" {
			t.Fatalf("second call = %s", got)
		}
		close(release)
		if r := e.report(t); r.LogID != 2 {
			t.Fatalf("report = %+v", r)
		}
	})
	t.Run("discard later", func(t *testing.T) {
		t.Parallel()
		srv, arrived, release := blocking(t)
		e := setup(t, loopback, nil)
		src := e.spec(t, target.Spec{URL: srv.URL + "/?log={{logId}}"})
		discard := func(c *target.Call) { c.BlockStrategy = string(xjob.BlockDiscardLater) }
		e.start(t, 1, src, discard)
		<-arrived
		if rt := e.start(t, 2, src, discard); rt.Code == protocol.SuccessCode || rt.Msg != msgDiscardLater {
			t.Fatalf("second call = %+v, want discarded", rt)
		}
		close(release)
		e.report(t)
	})
	t.Run("cover early", func(t *testing.T) {
		t.Parallel()
		srv, arrived, release := blocking(t)
		defer close(release)
		e := setup(t, loopback, nil)
		src := e.spec(t, target.Spec{URL: srv.URL + "/?log={{logId}}"})
		cover := func(c *target.Call) { c.BlockStrategy = string(xjob.BlockCoverEarly) }
		e.start(t, 1, src, cover)
		<-arrived
		if rt := e.start(t, 2, src, cover); rt.Code != protocol.SuccessCode {
			t.Fatalf("covering call = %+v", rt)
		}
		if r := e.report(t); r.LogID != 1 || r.HandleCode != xjob.CodeFail || !strings.Contains(r.HandleMsg, msgCoverEarly) {
			t.Fatalf("covered call's report = %+v", r)
		}
		if got := <-arrived; got != "2" {
			t.Fatalf("covering call = %s", got)
		}
	})
}

func TestKillAndClose(t *testing.T) {
	t.Parallel()
	srv, arrived, _ := blocking(t)
	e := setup(t, loopback, nil)
	x := Executors{Local: e.exec}
	src := e.spec(t, target.Spec{URL: srv.URL + "/?log={{logId}}"})
	e.start(t, 1, src, nil)
	<-arrived
	if rt := x.IdleBeat(context.Background(), target.Address, 1); rt.Code == protocol.SuccessCode {
		t.Fatalf("IdleBeat of a busy job = %+v", rt)
	}
	if rt := x.Kill(context.Background(), target.Address, 1); rt.Code != protocol.SuccessCode {
		t.Fatalf("Kill = %+v", rt)
	}
	if r := e.report(t); r.HandleCode != xjob.CodeFail || !strings.Contains(r.HandleMsg, msgKilled) {
		t.Fatalf("killed call's report = %+v", r)
	}
	e.start(t, 2, src, func(c *target.Call) { c.Vars.JobID = 2 })
	<-arrived
	e.exec.Close()
	if r := e.report(t); r.LogID != 2 || !strings.Contains(r.HandleMsg, msgStopping) {
		t.Fatalf("report at close = %+v", r)
	}
	if rt := e.start(t, 3, src, nil); rt.Code == protocol.SuccessCode {
		t.Fatalf("Start after Close = %+v", rt)
	}
}

// TestDrain: Drain returns once every started call has reported, and
// takes calls again after; at its deadline it cuts the running call and
// the one queued behind it, each reporting the cause, and still leaves
// the executor open (a Lambda invocation's end, not a shutdown).
func TestDrain(t *testing.T) {
	t.Parallel()
	srv, arrived, release := blocking(t)
	e := setup(t, loopback, nil)
	src := e.spec(t, target.Spec{URL: srv.URL + "/?log={{logId}}"})
	serial := func(c *target.Call) { c.BlockStrategy = string(xjob.BlockSerialExecution) }

	e.start(t, 1, src, serial)
	<-arrived
	release <- struct{}{}
	e.exec.Drain(context.Background(), errors.New("unused"))
	select {
	case r := <-e.reports:
		if r.LogID != 1 || r.HandleCode != xjob.CodeSuccess {
			t.Fatalf("report = %+v", r)
		}
	default:
		t.Fatal("Drain returned before the call reported")
	}

	e.start(t, 2, src, serial)
	<-arrived
	e.start(t, 3, src, serial) // queued behind 2
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.exec.Drain(ctx, errors.New("cut at the end of the invocation"))
	got := map[int64]string{}
	for range 2 {
		select {
		case r := <-e.reports:
			if r.HandleCode != xjob.CodeFail {
				t.Fatalf("cut call's report = %+v", r)
			}
			got[r.LogID] = r.HandleMsg
		default:
			t.Fatalf("Drain returned with reports missing: %v", got)
		}
	}
	for _, id := range []int64{2, 3} {
		if !strings.Contains(got[id], "cut at the end of the invocation") {
			t.Fatalf("log %d's report %q does not name the cause", id, got[id])
		}
	}
	if e.exec.Busy(1) {
		t.Fatal("job still busy after the drain")
	}
	e.start(t, 4, src, nil)
	if got := <-arrived; got != "4" {
		t.Fatalf("call after the drain = %s", got)
	}
	close(release)
	e.exec.Drain(context.Background(), errors.New("unused"))
	if r := e.report(t); r.LogID != 4 || r.HandleCode != xjob.CodeSuccess {
		t.Fatalf("report after the drain = %+v", r)
	}
}

func TestExecutorsRouteByAddress(t *testing.T) {
	t.Parallel()
	e := setup(t, loopback, nil)
	x := Executors{Local: e.exec}
	if rt := x.Beat(context.Background(), target.Address); rt.Code != protocol.SuccessCode {
		t.Fatalf("Beat = %+v", rt)
	}
	if rt := x.Run(context.Background(), target.Address, protocol.TriggerParam{GlueType: "BEAN"}); rt.Code == protocol.SuccessCode {
		t.Fatalf("Run of a BEAN job on the built-in target = %+v", rt)
	}
	res, rt := x.Log(context.Background(), target.Address, protocol.LogParam{FromLineNum: 1})
	b, _ := json.Marshal(res)
	if rt.Code != protocol.SuccessCode || !res.IsEnd || !strings.Contains(res.LogContent, "handle message") {
		t.Fatalf("Log = %s, %+v", b, rt)
	}
}
