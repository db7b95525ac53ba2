package sqlitestore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

// newLogs claims n fresh logs and returns them.
func newLogs(t *testing.T, db *DB, n int, at int64) []xjob.Log {
	t.Helper()
	logs := make([]xjob.Log, n)
	for i := range logs {
		o := fire.Occurrence{JobID: int64(i + 1), Type: xjob.TriggerCron, FireTime: at}
		logs[i] = xjob.Log{OccurrenceID: o.ID(0), JobID: o.JobID, GroupID: 1, TriggerType: o.Type,
			ScheduledTime: at, TriggerTime: at, ExecutorHandler: "h", ClaimUntil: at + 30_000}
	}
	claims, err := db.LogCreateMany(context.Background(), logs)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range claims {
		if c.Err != nil {
			t.Fatal(c.Err)
		}
		logs[i] = c.Log
	}
	return logs
}

// The batched statements write exactly what they are given, byte for
// byte (quotes, backslashes, control characters, non-ASCII, invalid
// UTF-8, NUL), return the logs as stored, and decide winners as one by
// one would: the first result for a log wins, a later one in the same
// batch or after is a conflict, an unknown id is not found.
func TestLogBatchesRecordExactly(t *testing.T) {
	t.Parallel()
	msgs := []string{"ok", `a "quoted" \ back\slash`, "tab\tnew\nline\x01\x1f", "Ωmega ✓ 日本", "", "<br>&amp;"}
	tests := []struct {
		name string
		msg  func(i int) string
	}{
		{"plain strings", func(i int) string { return msgs[i%len(msgs)] }},
		{"invalid UTF-8", func(i int) string { return "bad\xff" + msgs[i%len(msgs)] }},
		{"NUL", func(i int) string { return "nul\x00" + msgs[i%len(msgs)] }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := setup(t, Options{})
			logs := newLogs(t, db, 8, 1_800_000_000_000)
			var replies []driver.LogTriggeredParams
			for i, l := range logs[:6] {
				replies = append(replies, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: "http://127.0.0.1:" + tc.msg(i),
					TriggerCode: 200 + i, TriggerMsg: tc.msg(i + 1)})
			}
			replies = append(replies,
				driver.LogTriggeredParams{ID: logs[0].ID, ExecutorAddress: "x", TriggerCode: 500, TriggerMsg: "second"},
				driver.LogTriggeredParams{ID: 999_999, ExecutorAddress: "x", TriggerCode: 200, TriggerMsg: "none"})
			errs, err := db.LogTriggeredMany(ctx, replies)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range errs {
				want := map[int]error{6: xjob.ErrConflict, 7: xjob.ErrNotFound}[i]
				if (want == nil && e != nil) || (want != nil && !errors.Is(e, want)) {
					t.Errorf("reply %d: err %v, want %v", i, e, want)
				}
			}
			var results []driver.LogFinishParams
			for i, l := range logs[:5] {
				results = append(results, driver.LogFinishParams{ID: l.ID, HandleTime: 1_800_000_000_100 + int64(i),
					HandleCode: 200 + i, HandleMsg: tc.msg(i + 2)})
			}
			results = append(results,
				driver.LogFinishParams{ID: logs[1].ID, HandleTime: 1, HandleCode: 500, HandleMsg: "second"},
				driver.LogFinishParams{ID: 999_999, HandleTime: 1, HandleCode: 200})
			fin, err := db.LogFinishMany(ctx, results)
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range fin {
				want := map[int]error{5: xjob.ErrConflict, 6: xjob.ErrNotFound}[i]
				if (want == nil && f.Err != nil) || (want != nil && !errors.Is(f.Err, want)) {
					t.Errorf("result %d: err %v, want %v", i, f.Err, want)
				}
			}
			stored, err := db.LogGetMany(ctx, []int64{logs[0].ID, logs[1].ID, logs[2].ID, logs[3].ID, logs[4].ID, logs[5].ID, logs[6].ID})
			if err != nil {
				t.Fatal(err)
			}
			for i, got := range stored {
				want := logs[i]
				if i < 6 {
					want.ExecutorAddress, want.TriggerCode, want.TriggerMsg = replies[i].ExecutorAddress, replies[i].TriggerCode, replies[i].TriggerMsg
					want.Version++
				}
				if i < 5 {
					want.HandleTime, want.HandleCode, want.HandleMsg = results[i].HandleTime, results[i].HandleCode, results[i].HandleMsg
					want.Version++
					if fin[i].Log != got {
						t.Errorf("log %d: LogFinishMany returned %+v, stored %+v", i, fin[i].Log, got)
					}
				}
				if got != want {
					t.Errorf("log %d: stored %+v, want %+v", i, got, want)
				}
			}
		})
	}
}

// The batch statements find each log by its primary key, not by scanning the
// table: the plan of each names the rowid lookup.
func TestLogBatchPlansUseTheKey(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	for _, c := range []struct {
		q    string
		args []any
	}{
		{sqlLogFinishRows(2), []any{1, 1, 200, "", 2, 1, 200, ""}},
		{sqlLogIDsIn, []any{"[1,2]"}},
	} {
		q := c.q
		joined := strings.Join(queryPlan(t, db, q, c.args...), "; ")
		if strings.Contains(joined, "SCAN logs") || !strings.Contains(joined, "logs USING INTEGER PRIMARY KEY") {
			t.Errorf("%s\nplan: %s", firstLine(q), joined)
		}
	}
}
