package ring_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/ring"
	"github.com/xjobdev/xjob/pkg/clock"
)

// nopSink takes every hand-off and does nothing with it: what is left is
// the ring's own work.
type nopSink struct{}

func (nopSink) Deliver(context.Context, fire.Lane, []fire.DispatchTask) error { return nil }

// BenchmarkFireBucket is the ring's work on one second of benchFireJobs
// every-second jobs, all due at the second's start as a steady run's are:
// the jobs' read (JobGetMany, its cache warm), the revision and misfire
// checks, the plan of the instant and its hand-off, to a sink that does
// nothing. The clock stands at the instant, so nothing sleeps.
func BenchmarkFireBucket(b *testing.B) {
	const benchFireJobs = 2000
	ctx := context.Background()
	clk := clock.NewFake(t0)
	db, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "x.db"), sqlitestore.Options{Shards: 1, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	r, err := ring.New(ring.Config{Jobs: db, Queues: db, Sink: nopSink{}, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	jobs := make([]xjob.Job, benchFireJobs)
	for i := range jobs {
		j := xjob.Job{GroupID: 1, Description: "d", Author: "a", ScheduleType: xjob.ScheduleCron, ScheduleConf: "* * * * * ?",
			Handler: "h", TriggerStatus: xjob.StatusRunning, TriggerNextTime: t0.UnixMilli()}
		j.ApplyDefaults()
		if jobs[i], err = db.JobInsert(ctx, j); err != nil {
			b.Fatal(err)
		}
	}
	items := make([]fire.RingItem, len(jobs))
	b.ReportAllocs()
	second := t0.Unix()
	for b.Loop() {
		second++
		at := time.Unix(second, 0)
		for i, j := range jobs {
			items[i] = fire.RingItem{JobID: j.ID, FireTime: at.UnixMilli(), Revision: j.Revision}
		}
		clk.Set(at)
		st, err := r.Fire(ctx, fire.RingBucket{Second: second, Items: items})
		if err != nil || st.Fired != len(jobs) {
			b.Fatalf("fired %d of %d: %v", st.Fired, len(jobs), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchFireJobs), "ns/fire")
}
