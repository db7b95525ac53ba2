package callback_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// BenchmarkCallbackBatch is the callback's share of the steady 10,000
// every-second jobs scenario on SQLite: one iteration is one executor
// request of 500 successes (the bench executor sends what 50 ms brought),
// for CRON logs of plain jobs (no children) that dispatch created and
// recorded as triggered, with the jobs read once before as ring and
// dispatch read them. It reports the cost per result, in wall time
// (ns/result) and in CPU time of every goroutine (cpu-ns/result, the
// writer's included); allocs/op are per request.
func BenchmarkCallbackBatch(b *testing.B) {
	const (
		jobs  = 1000
		batch = 500
	)
	ctx := context.Background()
	clk := clock.NewFake(start)
	db, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "xjob.db"), sqlitestore.Options{Shards: 4, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	svc, err := callback.New(callback.Config{Store: db, Queues: db, Alarmer: &recorder{}, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	g, err := db.GroupInsert(ctx, xjob.Group{AppName: "xjob-bench", Title: "bench", AddressType: xjob.AddressAuto})
	if err != nil {
		b.Fatal(err)
	}
	jobIDs := make([]int64, jobs)
	for i := range jobIDs {
		j := xjob.Job{GroupID: g.ID, Description: "bench", Author: "ops", Handler: "demoHandler",
			ScheduleType: xjob.ScheduleCron, ScheduleConf: "* * * * * ?"}
		j.ApplyDefaults()
		j.CreatedAt, j.UpdatedAt = clock.Millis(clk), clock.Millis(clk)
		if j, err = db.JobInsert(ctx, j); err != nil {
			b.Fatal(err)
		}
		jobIDs[i] = j.ID
	}
	if _, err := db.JobGetMany(ctx, jobIDs); err != nil { // ring and dispatch read them first
		b.Fatal(err)
	}
	items := make([][]protocol.HandleCallbackParam, b.N)
	at := clock.Millis(clk)
	for n := range items {
		fireAt := at + int64(n)*1000
		logs := make([]xjob.Log, batch)
		for i := range logs {
			o := fire.Occurrence{JobID: jobIDs[(n*batch+i)%jobs], Type: xjob.TriggerCron, FireTime: fireAt}
			logs[i] = xjob.Log{OccurrenceID: o.ID(0), JobID: o.JobID, GroupID: g.ID, TriggerType: o.Type,
				ScheduledTime: fireAt, TriggerTime: fireAt, ExecutorHandler: "demoHandler", ClaimUntil: fireAt + 30_000}
		}
		claims, err := db.LogCreateMany(ctx, logs)
		if err != nil {
			b.Fatal(err)
		}
		replies := make([]driver.LogTriggeredParams, batch)
		items[n] = make([]protocol.HandleCallbackParam, batch)
		for i, c := range claims {
			if c.Err != nil {
				b.Fatal(c.Err)
			}
			replies[i] = driver.LogTriggeredParams{ID: c.Log.ID, ExecutorAddress: "http://127.0.0.1:9999",
				TriggerCode: xjob.CodeSuccess, TriggerMsg: "Trigger type: CRON<br>Route strategy: FIRST<br>Run: ok"}
			items[n][i] = protocol.HandleCallbackParam{LogID: c.Log.ID, LogDateTim: fireAt, HandleCode: xjob.CodeSuccess}
		}
		if _, err := db.LogTriggeredMany(ctx, replies); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for i, err := range svc.Callback(ctx, items[n]) {
			if err != nil {
				b.Fatalf("item %d: %v", i, err)
			}
		}
	}
	b.StopTimer()
	results := float64(b.N * batch)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/results, "ns/result")
	// CPU time is what the steady scenario's figure is (xjob CPU per
	// trigger), and unlike wall time it does not move with the other
	// processes of a shared machine.
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/results, "cpu-ns/result")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
