package mysqlstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/testenv/mariadb"
	"github.com/xjobdev/xjob/pkg/driver"
)

// The benchmarks mirror sqlitestore's, on the shared MariaDB server (data
// on /dev/shm, innodb_flush_log_at_trx_commit=2): they measure the
// statements and round trips, not a disk. cpu-µs/trigger counts this
// process only; the server's CPU is not in it.

func BenchmarkLogCreate(b *testing.B) {
	log := func(i int64) xjob.Log {
		return xjob.Log{OccurrenceID: fmt.Sprintf("j%d/CRON/t%d/s0", i%1000, i), JobID: i % 1000, GroupID: 1,
			TriggerType: xjob.TriggerCron, TriggerTime: 1_700_000_000_000 + i, ExecutorHandler: "demoHandler", ClaimUntil: 1}
	}
	b.Run("sequential", func(b *testing.B) {
		db := setup(b, Options{})
		ctx := context.Background()
		var i int64
		for b.Loop() {
			i++
			if _, err := db.LogCreate(ctx, log(i)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "logs/s")
	})
	b.Run("parallel", func(b *testing.B) {
		db := setup(b, Options{})
		ctx := context.Background()
		var n atomic.Int64
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := db.LogCreate(ctx, log(n.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "logs/s")
	})
}

// seedJobs bulk-inserts stored jobs into shard 0, due of them at or before 1000.
func seedJobs(b *testing.B, db *DB, stored, due int) {
	b.Helper()
	ctx := context.Background()
	const chunk = 1000
	for start := 0; start < stored; start += chunk {
		var args []any
		n := min(chunk, stored-start)
		for i := start; i < start+n; i++ {
			status, next := 1, int64(1_000_000+i) // running, not due yet
			switch {
			case i < due:
				next = int64(i % 1000)
			case i%2 == 0:
				status = 0 // stopped jobs keep a next time but are not scanned
			}
			args = append(args, status, next)
		}
		row := `(0, '', 1, 'bench', 'b', '', 'CRON', '* * * * * ?', 'UTC', 'DO_NOTHING', 'FIRST', 'h', '', 'SERIAL_EXECUTION',
			0, 0, 'BEAN', '', '', 0, '', ?, 0, ?, 1, 1, 0, 0, 'KEEP', '', '')`
		_, err := db.db.ExecContext(ctx, `INSERT INTO jobs (shard, name, group_id, description, author, alarm_email,
			schedule_type, schedule_conf, time_zone, misfire_strategy, route_strategy, handler, param, block_strategy,
			timeout_seconds, fail_retry_count, glue_type, glue_source, glue_remark, glue_updated_at, child_job_ids,
			trigger_status, trigger_last_time, trigger_next_time, version, revision, created_at, updated_at,
			after_completion, declared, applied) VALUES `+strings.TrimSuffix(strings.Repeat(row+",", n), ","), args...)
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJobsDue(b *testing.B) {
	for _, c := range []struct{ stored, due int }{{1000, 1000}, {100_000, 1000}} {
		b.Run(fmt.Sprintf("stored=%d/due=%d", c.stored, c.due), func(b *testing.B) {
			db := setup(b, Options{Shards: 1})
			seedJobs(b, db, c.stored, c.due)
			ctx := context.Background()
			for b.Loop() {
				jobs, err := db.JobsDue(ctx, driver.JobsDueParams{Shard: 0, Before: 1000, Limit: 6000})
				if err != nil || len(jobs) != c.due {
					b.Fatalf("due: %d jobs, %v", len(jobs), err)
				}
			}
		})
	}
}

func BenchmarkJobAdvanceMany(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			db := setup(b, Options{})
			ctx := context.Background()
			ps := make([]driver.JobAdvanceParams, batch)
			for i := range ps {
				j, err := db.JobInsert(ctx, xjob.Job{GroupID: 1, TriggerStatus: xjob.StatusRunning, TriggerNextTime: 1})
				if err != nil {
					b.Fatal(err)
				}
				ps[i] = driver.JobAdvanceParams{ID: j.ID, ExpectVersion: j.Version}
			}
			for b.Loop() {
				for i := range ps {
					ps[i].TriggerLastTime, ps[i].TriggerNextTime = ps[i].ExpectVersion, ps[i].ExpectVersion+1
				}
				errs, err := db.JobAdvanceMany(ctx, ps)
				if err != nil {
					b.Fatal(err)
				}
				for i := range ps {
					if errs[i] != nil {
						b.Fatal(errs[i])
					}
					ps[i].ExpectVersion++
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "advances/s")
		})
	}
}

func BenchmarkQueueSendReceiveAck(b *testing.B) {
	for _, batch := range []int{1, 10} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			db := setup(b, Options{})
			q := db.Dispatch(fire.LaneFast)
			ctx := context.Background()
			msgs := make([]driver.Outgoing[fire.DispatchTask], batch)
			for i := range msgs {
				msgs[i].Msg = fire.DispatchTask{Occurrence: fire.Occurrence{JobID: int64(i + 1), Type: xjob.TriggerCron, FireTime: 1}}
			}
			tokens := make([]string, 0, batch)
			for b.Loop() {
				if err := q.Send(ctx, msgs); err != nil {
					b.Fatal(err)
				}
				ds, err := q.Receive(ctx, driver.ReceiveParams{Max: batch, Visibility: time.Minute})
				if err != nil || len(ds) != batch {
					b.Fatalf("receive: %d, %v", len(ds), err)
				}
				tokens = tokens[:0]
				for _, d := range ds {
					tokens = append(tokens, d.Token)
				}
				if err := q.Ack(ctx, tokens); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkSteadySecond is the store's share of a steady workload, as
// sqlitestore's: one iteration is one second of `jobs` every-second
// jobs, claimed in LogCreateMany chunks of 256 with four in flight, each
// chunk's /run replies in one LogTriggeredMany, results in LogFinishMany
// batches of 100. nodes=3 splits the chunks over three *DB on the one
// database, as three xjob server nodes would.
func BenchmarkSteadySecond(b *testing.B) {
	for _, nodes := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) { steadySecond(b, nodes, 3000) })
	}
}

func steadySecond(b *testing.B, nodes, jobs int) {
	const (
		chunk    = 256
		inFlight = 4
		results  = 100
	)
	dsn := sharedDSN(b)
	dbs := make([]*DB, nodes)
	for i := range dbs {
		dbs[i] = openAt(b, dsn, Options{})
	}
	ctx := context.Background()
	sec := int64(1_800_000_000)
	cpu0 := cpuTime(b)
	for b.Loop() {
		sec++
		at := sec * 1000
		var wg sync.WaitGroup
		slots := make(chan struct{}, inFlight*nodes)
		finish := make(chan int64, jobs)
		for k, start := 0, 0; start < jobs; k, start = k+1, start+chunk {
			slots <- struct{}{}
			db := dbs[k%nodes]
			wg.Go(func() {
				defer func() { <-slots }()
				logs := make([]xjob.Log, 0, chunk)
				for j := start; j < min(start+chunk, jobs); j++ {
					o := fire.Occurrence{JobID: int64(j + 1), Type: xjob.TriggerCron, FireTime: at}
					logs = append(logs, xjob.Log{OccurrenceID: o.ID(0), JobID: o.JobID, GroupID: 1, TriggerType: o.Type,
						ScheduledTime: at, TriggerTime: at, ExecutorAddress: "http://127.0.0.1:9999", ExecutorHandler: "demoHandler",
						ClaimUntil: at + 30_000})
				}
				claims, err := db.LogCreateMany(ctx, logs)
				if err != nil {
					b.Error(err)
					return
				}
				replies := make([]driver.LogTriggeredParams, len(claims))
				for i, c := range claims {
					replies[i] = driver.LogTriggeredParams{ID: c.Log.ID, ExecutorAddress: "http://127.0.0.1:9999",
						TriggerCode: xjob.CodeSuccess, TriggerMsg: "Trigger type: CRON<br>Route strategy: FIRST<br>Run: ok"}
				}
				if _, err := db.LogTriggeredMany(ctx, replies); err != nil {
					b.Error(err)
					return
				}
				for _, c := range claims {
					finish <- c.Log.ID
				}
			})
		}
		wg.Go(func() {
			var fw sync.WaitGroup
			batch := make([]driver.LogFinishParams, 0, results)
			k := 0
			flush := func() {
				ps, db := batch, dbs[k%nodes]
				k++
				batch = make([]driver.LogFinishParams, 0, results)
				fw.Go(func() {
					if _, err := db.LogFinishMany(ctx, ps); err != nil {
						b.Error(err)
					}
				})
			}
			for range jobs {
				batch = append(batch, driver.LogFinishParams{ID: <-finish, HandleTime: at + 5, HandleCode: xjob.CodeSuccess})
				if len(batch) == results {
					flush()
				}
			}
			if len(batch) > 0 {
				flush()
			}
			fw.Wait()
		})
		wg.Wait()
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N*jobs), "cpu-µs/trigger")
	b.ReportMetric(float64(b.N*jobs)/b.Elapsed().Seconds(), "triggers/s")
}

// sharedDSN is a fresh database of the shared server.
func sharedDSN(b *testing.B) string {
	b.Helper()
	return mariadb.Shared(b).NewDatabase(b)
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
