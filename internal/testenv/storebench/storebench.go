// Package storebench holds the bodies of the SQL stores' Go benchmarks,
// so that sqlitestore, pgstore and mysqlstore measure the same calls the
// same way and compare call for call; each store's bench_test.go holds
// only how to open and seed that store and one line per benchmark.
//
// It lives under internal/testenv rather than in pkg/driver/drivertest:
// it reads the process's CPU time through getrusage, which the public
// package must not need, and it promises no contract, only a workload.
package storebench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Store is what the benchmarks call: jobs, logs and the queues.
type Store interface {
	driver.JobStore
	driver.LogStore
	driver.Queues
}

// Harness is how a benchmark opens and fills one backend.
type Harness[S Store] struct {
	// Open opens handles handles on one fresh, empty database whose jobs
	// spread over shards scan shards (0: the store's default), all
	// closed when b ends.
	Open func(b *testing.B, shards, handles int) []S
	// Seed inserts stored running jobs into shard 0, due of them due at or
	// before 1000 and, of the rest, every other one stopped (stopped jobs
	// keep a next time but are not in the due index), in the store's
	// fastest bulk way; their ids are 1 to stored.
	Seed func(b *testing.B, s S, stored, due int)
	// Report, when set, adds the store's own metrics after the parallel
	// LogCreate run and after SteadySecond (SQLite: requests, pages and
	// waits per group commit, checkpoints).
	Report func(b *testing.B, s S)
}

func (h Harness[S]) one(b *testing.B, shards int) S {
	b.Helper()
	return h.Open(b, shards, 1)[0]
}

// LogCreate measures claims one log at a time, from one goroutine and
// from four.
func LogCreate[S Store](b *testing.B, h Harness[S]) {
	log := func(i int64) xjob.Log {
		return xjob.Log{OccurrenceID: fmt.Sprintf("j%d/CRON/t%d/s0", i%1000, i), JobID: i % 1000, GroupID: 1,
			TriggerType: xjob.TriggerCron, TriggerTime: 1_700_000_000_000 + i, ExecutorHandler: "demoHandler", ClaimUntil: 1}
	}
	b.Run("sequential", func(b *testing.B) {
		db := h.one(b, 0)
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
		db := h.one(b, 0)
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
		if h.Report != nil {
			h.Report(b, db)
		}
	})
}

// JobsDue measures the scan's read of 1,000 due jobs out of 1,000 and out
// of 100,000 stored: with the due index, the second costs about the
// first.
func JobsDue[S Store](b *testing.B, h Harness[S]) {
	for _, c := range []struct{ stored, due int }{{1000, 1000}, {100_000, 1000}} {
		b.Run(fmt.Sprintf("stored=%d/due=%d", c.stored, c.due), func(b *testing.B) {
			db := h.one(b, 1)
			h.Seed(b, db, c.stored, c.due)
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

// JobAdvance measures one job's conditional advance, one call each.
func JobAdvance[S Store](b *testing.B, h Harness[S]) {
	db := h.one(b, 0)
	ctx := context.Background()
	j, err := db.JobInsert(ctx, xjob.Job{GroupID: 1, TriggerStatus: xjob.StatusRunning, TriggerNextTime: 1})
	if err != nil {
		b.Fatal(err)
	}
	v := j.Version
	for b.Loop() {
		if err := db.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: v, TriggerLastTime: v, TriggerNextTime: v + 1}); err != nil {
			b.Fatal(err)
		}
		v++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "advances/s")
}

// JobAdvanceMany measures the scan's advance of one job and of a page of
// 256 in one call.
func JobAdvanceMany[S Store](b *testing.B, h Harness[S]) {
	for _, n := range []int{1, 256} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			db := h.one(b, 1)
			h.Seed(b, db, n, n)
			ctx := context.Background()
			ps := make([]driver.JobAdvanceParams, n)
			for i := range ps {
				ps[i] = driver.JobAdvanceParams{ID: int64(i + 1), ExpectVersion: 1}
			}
			for b.Loop() {
				errs, err := db.JobAdvanceMany(ctx, ps)
				if err != nil {
					b.Fatal(err)
				}
				for i := range ps {
					if errs[i] != nil {
						b.Fatalf("advance of job %d: %v", ps[i].ID, errs[i])
					}
					ps[i].ExpectVersion++
					ps[i].TriggerLastTime, ps[i].TriggerNextTime = ps[i].TriggerNextTime, ps[i].TriggerNextTime+1000
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "advances/s")
		})
	}
}

// QueueSendReceiveAck measures a dispatch lane's round of send, receive
// and ack, one message at a time and ten at a time.
func QueueSendReceiveAck[S Store](b *testing.B, h Harness[S]) {
	for _, batch := range []int{1, 10} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			q := h.one(b, 0).Dispatch(fire.LaneFast)
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

// SteadySecond is the store's share of a steady workload: one iteration
// is one second of jobs every-second jobs, written as a node writes them
// — claims in LogCreateMany chunks of 256, four chunks in flight per
// handle (the lane sink), each chunk's /run replies in one
// LogTriggeredMany, and results in LogFinishMany batches of 100 (the
// executor's callback requests). With handles > 1 the chunks and batches
// spread over that many handles on one database, as nodes of a cluster
// would. The jobs are claimed shard by shard, ids ascending within a
// shard (scanShards shards by fire.ShardOf), as ring buckets hand them to
// the dispatcher: a chunk's job ids are spread over the whole id range,
// as they are in local mode, not consecutive, which would let one leaf of
// a job-first index take many of a chunk's entries. cpu-µs/trigger is
// this process's CPU (user + system, every goroutine) per trigger; a
// database server's CPU is not in it.
func SteadySecond[S Store](b *testing.B, h Harness[S], jobs, handles int) {
	steadySecond(b, h, jobs, handles, false)
}

// SteadySecondAdvancing is SteadySecond with the scan's share added: the
// jobs are stored (Harness.Seed, ids 1 to jobs), and every second a
// fifth of them is advanced, one JobAdvanceMany a scan shard, four
// shards at once, beside the claims, as local mode's scan advances an
// every-second job about once per five seconds (it plans Advance past
// the pre-read window). The fifth is a range of ids, as in make bench's
// steady run, whose jobs, created one after another, come due in the
// order they were created. Its pages and CPU are not comparable with
// SteadySecond's.
func SteadySecondAdvancing[S Store](b *testing.B, h Harness[S], jobs, handles int) {
	steadySecond(b, h, jobs, handles, true)
}

func steadySecond[S Store](b *testing.B, h Harness[S], jobs, handles int, advancing bool) {
	const (
		chunk      = 256
		inFlight   = 4
		results    = 100
		scanShards = 16 // local mode's default
		// advanceEvery is how many seconds apart the scan advances one
		// every-second job (local mode: about five).
		advanceEvery = 5
		// scanParallel is how many shards a scan tick advances at once
		// (package scan's default Parallel).
		scanParallel = 4
	)
	order := make([]int64, jobs)
	for i := range order {
		order[i] = int64(i + 1)
	}
	slices.SortFunc(order, func(a, b int64) int {
		return cmp.Or(cmp.Compare(fire.ShardOf(a, scanShards), fire.ShardOf(b, scanShards)), cmp.Compare(a, b))
	})
	dbs := h.Open(b, 0, handles)
	ctx := context.Background()
	// versions[id] is job id's version, which each advance expects.
	var versions []int64
	if advancing {
		h.Seed(b, dbs[0], jobs, jobs)
		versions = make([]int64, jobs+1)
		for i := range versions {
			versions[i] = 1
		}
	}
	// shardStart[k] is where shard k's jobs start in order; advBufs[k]
	// holds its advances, kept from one second to the next.
	shardStart := make([]int, scanShards+1)
	for _, id := range order {
		shardStart[fire.ShardOf(id, scanShards)+1]++
	}
	for k := range scanShards {
		shardStart[k+1] += shardStart[k]
	}
	advBufs := make([][]driver.JobAdvanceParams, scanShards)
	// Each chunk builds its claims and replies in buffers kept from one
	// iteration to the next. The store is called through a type
	// parameter, so slices made per chunk would escape to the heap, and
	// B/op and allocs/op would count the benchmark's allocations as the
	// store's (a body written for one store keeps them on the stack).
	logBufs := make([][]xjob.Log, (jobs+chunk-1)/chunk)
	replyBufs := make([][]driver.LogTriggeredParams, len(logBufs))
	for k := range logBufs {
		logBufs[k] = make([]xjob.Log, 0, chunk)
		replyBufs[k] = make([]driver.LogTriggeredParams, chunk)
	}
	sec := int64(1_800_000_000)
	cpu0 := cpuTime(b)
	for b.Loop() {
		sec++
		at := sec * 1000
		var wg sync.WaitGroup
		slots := make(chan struct{}, inFlight*handles)
		finish := make(chan int64, jobs)
		if advancing {
			// One call a shard, its jobs in id order, scanParallel
			// shards at once, as the scan's tick goes.
			sem := make(chan struct{}, scanParallel)
			for shard := range scanShards {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					advances := advBufs[shard][:0]
					for _, id := range order[shardStart[shard]:shardStart[shard+1]] {
						if (id-1)*advanceEvery/int64(jobs) == sec%advanceEvery {
							advances = append(advances, driver.JobAdvanceParams{ID: id, ExpectVersion: versions[id],
								TriggerLastTime: at, TriggerNextTime: at + advanceEvery*1000})
						}
					}
					if len(advances) == 0 {
						return
					}
					errs, err := dbs[shard%handles].JobAdvanceMany(ctx, advances)
					if err != nil {
						b.Error(err)
						return
					}
					for i, err := range errs {
						if err != nil {
							b.Errorf("advance of job %d: %v", advances[i].ID, err)
							return
						}
						versions[advances[i].ID]++
					}
				})
			}
		}
		for k, start := 0, 0; start < jobs; k, start = k+1, start+chunk {
			slots <- struct{}{}
			db := dbs[k%handles]
			wg.Go(func() {
				defer func() { <-slots }()
				logs := logBufs[k][:0]
				for j := start; j < min(start+chunk, jobs); j++ {
					o := fire.Occurrence{JobID: order[j], Type: xjob.TriggerCron, FireTime: at}
					logs = append(logs, xjob.Log{OccurrenceID: o.ID(0), JobID: o.JobID, GroupID: 1, TriggerType: o.Type,
						ScheduledTime: at, TriggerTime: at, ExecutorAddress: "http://127.0.0.1:9999", ExecutorHandler: "demoHandler",
						ClaimUntil: at + 30_000})
				}
				claims, err := db.LogCreateMany(ctx, logs)
				if err != nil {
					b.Error(err)
					return
				}
				replies := replyBufs[k][:len(claims)]
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
				ps, db := batch, dbs[k%handles]
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
	if h.Report != nil {
		h.Report(b, dbs[0])
	}
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
