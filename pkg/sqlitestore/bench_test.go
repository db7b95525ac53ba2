package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

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
		reportBatching(b, db)
	})
}

// reportBatching reports how many write requests shared a transaction.
func reportBatching(b *testing.B, db *DB) {
	if c := db.commits.Load(); c > 0 {
		b.ReportMetric(float64(db.committed.Load())/float64(c), "reqs/commit")
	}
}

// seedJobs bulk-inserts stored jobs into shard 0, due of them at or before 1000.
func seedJobs(b *testing.B, db *DB, stored, due int) {
	b.Helper()
	ctx := context.Background()
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		stmt, err := c.PrepareContext(ctx, `INSERT INTO jobs (shard, group_id, description, author, alarm_email,
			schedule_type, schedule_conf, time_zone, misfire_strategy, route_strategy, handler, param, block_strategy,
			timeout_seconds, fail_retry_count, glue_type, glue_source, glue_remark, glue_updated_at, child_job_ids,
			trigger_status, trigger_last_time, trigger_next_time, version, revision, created_at, updated_at)
			VALUES (0, 1, 'bench', 'b', '', 'CRON', '* * * * * ?', 'UTC', 'DO_NOTHING', 'FIRST', 'h', '', 'SERIAL_EXECUTION',
			0, 0, 'BEAN', '', '', 0, '', ?, 0, ?, 1, 1, 0, 0)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i := range stored {
			status, next := 1, int64(1_000_000+i) // running, not due yet
			switch {
			case i < due:
				next = int64(i % 1000)
			case i%2 == 0:
				status = 0 // stopped jobs keep a next time but are not in the index
			}
			if _, err := stmt.ExecContext(ctx, status, next); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
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

func BenchmarkJobAdvance(b *testing.B) {
	db := setup(b, Options{})
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

func BenchmarkQueueSendReceiveAck(b *testing.B) {
	for _, batch := range []int{1, 10} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			db := setup(b, Options{})
			q := db.Dispatch(xjob.LaneFast)
			ctx := context.Background()
			msgs := make([]driver.Outgoing[xjob.DispatchTask], batch)
			for i := range msgs {
				msgs[i].Msg = xjob.DispatchTask{Occurrence: xjob.Occurrence{JobID: int64(i + 1), Type: xjob.TriggerCron, FireTime: 1}}
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
