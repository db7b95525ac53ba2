package sqlitestore

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

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

// The batched results write exactly what the statement-per-log path
// writes, byte for byte (quotes, backslashes, control characters,
// non-ASCII), and decide winners the same way: the first result for a log
// wins, a later one in the same batch or after is a conflict, an unknown
// id is not found. Strings JSON cannot carry intact take the per-log path.
func TestLogBatchesMatchPerLogPath(t *testing.T) {
	t.Parallel()
	msgs := []string{"ok", `a "quoted" \ back\slash`, "tab\tnew\nline\x01\x1f", "Ωmega ✓ 日本", "", "<br>&amp;"}
	tests := []struct {
		name string
		msg  func(i int) string
	}{
		{"json-safe strings: one batch", func(i int) string { return msgs[i%len(msgs)] }},
		{"invalid UTF-8: per log", func(i int) string { return "bad\xff" + msgs[i%len(msgs)] }},
		{"NUL: per log", func(i int) string { return "nul\x00" + msgs[i%len(msgs)] }},
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
	for _, q := range []string{sqlLogFinishBatch, sqlLogsByIDs} {
		joined := strings.Join(queryPlan(t, db, q, "[1,2]"), "; ")
		if strings.Contains(joined, "SCAN logs") || !strings.Contains(joined, "logs USING INTEGER PRIMARY KEY") {
			t.Errorf("%s\nplan: %s", firstLine(q), joined)
		}
	}
}

// BenchmarkLogFinishMany records one callback request's 500 successes on
// logs triggered as dispatch leaves them (the writer's share of
// BenchmarkCallbackBatch), reporting CPU time per result.
func BenchmarkLogFinishMany(b *testing.B) {
	const batch = 500
	ctx := context.Background()
	db := setup(b, Options{})
	fins := make([][]driver.LogFinishParams, b.N)
	for n := range fins {
		at := int64(1_800_000_000_000 + n*1000)
		logs := make([]xjob.Log, batch)
		for i := range logs {
			o := fire.Occurrence{JobID: int64(i + 1), Type: xjob.TriggerCron, FireTime: at}
			logs[i] = xjob.Log{OccurrenceID: o.ID(0), JobID: o.JobID, GroupID: 1, TriggerType: o.Type,
				ScheduledTime: at, TriggerTime: at, ExecutorHandler: "h", ClaimUntil: at + 30_000}
		}
		claims, err := db.LogCreateMany(ctx, logs)
		if err != nil {
			b.Fatal(err)
		}
		replies := make([]driver.LogTriggeredParams, batch)
		fins[n] = make([]driver.LogFinishParams, batch)
		for i, c := range claims {
			replies[i] = driver.LogTriggeredParams{ID: c.Log.ID, ExecutorAddress: "http://127.0.0.1:9999",
				TriggerCode: xjob.CodeSuccess, TriggerMsg: "Trigger type: CRON<br>Route strategy: FIRST<br>Run: ok"}
			fins[n][i] = driver.LogFinishParams{ID: c.Log.ID, HandleTime: at + 5, HandleCode: xjob.CodeSuccess}
		}
		if _, err := db.LogTriggeredMany(ctx, replies); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	cpu0 := cpuNow(b)
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		res, err := db.LogFinishMany(ctx, fins[n])
		if err != nil || res[0].Err != nil {
			b.Fatal(err, res[0].Err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuNow(b)-cpu0).Nanoseconds())/float64(b.N*batch), "cpu-ns/result")
}

// cpuNow is the process's user and system CPU time so far.
func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
