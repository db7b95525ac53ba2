package scan_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/scheduler/scan"
	"github.com/xjobdev/xjob/pkg/clock"
)

// BenchmarkTick measures one scan tick over 1,000 due jobs (FIX_RATE 1 s:
// one ring fire each per tick, plus the conditional advance) with 1k and
// 100k jobs stored. Scan cost must follow the due jobs, not the stored ones.
func BenchmarkTick(b *testing.B) {
	for _, stored := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("stored=%d/due=1000", stored), func(b *testing.B) {
			benchTick(b, stored, func(j *xjob.Job, i int) {})
		})
	}
}

// BenchmarkTickCron is BenchmarkTick with CRON jobs: every-second
// expressions, a third of them in a named time zone, ten distinct
// expressions in all. It is what parsing each due job's schedule on every
// tick costs (and what caching the parsed schedules saves).
func BenchmarkTickCron(b *testing.B) {
	zones := []string{"", "Europe/Berlin", "America/New_York"}
	benchTick(b, 1_000, func(j *xjob.Job, i int) {
		j.ScheduleType = xjob.ScheduleCron
		j.ScheduleConf = fmt.Sprintf("* * * * * ? %d-2199", 2010+i%10) // every second, 10 texts
		j.TimeZone = zones[i%len(zones)]
	})
}

func benchTick(b *testing.B, stored int, shape func(j *xjob.Job, i int)) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	db, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlitestore.Options{Shards: 1, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for i := range stored {
		j := xjob.Job{GroupID: 1, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixRate,
			ScheduleConf: "1", Handler: "h", TriggerStatus: xjob.StatusRunning,
			TriggerNextTime: t0.Add(time.Second).UnixMilli()}
		if i >= 1000 {
			j.ScheduleConf, j.TriggerNextTime = "86400", t0.Add(24*time.Hour).UnixMilli()
		}
		if i < 1000 {
			shape(&j, i)
		}
		j.ApplyDefaults()
		if _, err := db.JobInsert(ctx, j); err != nil {
			b.Fatal(err)
		}
	}
	s, err := scan.New(scan.Config{
		Jobs: db, Leases: db, Queues: db, Clock: clk,
		Owner: "bench", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tunables: scan.Tunables{Shards: 1},
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Tick(ctx); err != nil { // fill the window once
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		clk.Advance(time.Second)
		st, err := s.Tick(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.Jobs != 1000 {
			b.Fatalf("tick read %d jobs, want 1000", st.Jobs)
		}
	}
	b.ReportMetric(float64(1000*b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkPlanJob measures the pure classification of one due job.
func BenchmarkPlanJob(b *testing.B) {
	job := &xjob.Job{TriggerNextTime: t0.Add(time.Second).UnixMilli(), MisfireStrategy: xjob.MisfireDoNothing,
		ScheduleType: xjob.ScheduleCron, ScheduleConf: "*/2 * * * * ?", TimeZone: "Europe/Berlin"}
	sched, err := job.Schedule()
	if err != nil {
		b.Fatal(err)
	}
	pol := scan.Policy{PreRead: 5 * time.Second, MisfireThreshold: 5 * time.Second}
	now := t0.UnixMilli()
	for range b.N {
		scan.PlanJob(job, sched, now, pol)
	}
}
