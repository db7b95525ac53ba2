package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/storebench"
	"github.com/xjobdev/xjob/pkg/driver"
)

// The benchmarks' bodies are storebench's, shared with pgstore and
// mysqlstore so that the stores compare call for call; this file opens
// and seeds a SQLite file.

var bench = storebench.Harness[*DB]{
	Open: func(b *testing.B, shards, handles int) []*DB {
		path := filepath.Join(b.TempDir(), "xjob.db")
		dbs := make([]*DB, handles)
		for i := range dbs {
			dbs[i] = openAt(b, path, Options{Shards: shards})
			if n, err := strconv.ParseInt(os.Getenv("XJOB_BENCH_JOB_INDEX_BATCH"), 10, 64); err == nil && n > 0 {
				dbs[i].jobIndexBatch = n // to weigh another batch in one run
			}
		}
		if os.Getenv("XJOB_BENCH_WAL_TREES") == "1" {
			pinWAL(b, dbs[0], path) // walpages_test.go
		}
		return dbs
	},
	Seed: seedJobs,
	Report: func(b *testing.B, db *DB) {
		reportBatching(b, db)
		reportWALTrees(b, db)
	},
}

func BenchmarkLogCreate(b *testing.B)           { storebench.LogCreate(b, bench) }
func BenchmarkJobsDue(b *testing.B)             { storebench.JobsDue(b, bench) }
func BenchmarkJobAdvance(b *testing.B)          { storebench.JobAdvance(b, bench) }
func BenchmarkJobAdvanceMany(b *testing.B)      { storebench.JobAdvanceMany(b, bench) }
func BenchmarkQueueSendReceiveAck(b *testing.B) { storebench.QueueSendReceiveAck(b, bench) }

// BenchmarkSteadySecond is the store's share of xjob local's steady
// workload (make bench's steady 10,000): one iteration is one second of
// 10,000 every-second jobs, written as local mode writes it. Run it with
// -benchtime=30x so that the table grows as a 30 s run's does.
func BenchmarkSteadySecond(b *testing.B) { storebench.SteadySecond(b, bench, 10000, 1) }

// BenchmarkSteadySecondAdvancing adds the scan's job advances to
// BenchmarkSteadySecond: a fifth of the 10,000 stored jobs a second, one
// call a scan shard.
func BenchmarkSteadySecondAdvancing(b *testing.B) {
	storebench.SteadySecondAdvancing(b, bench, 10000, 1)
}

// reportBatching reports what the writer did: how many write requests
// shared a transaction, the pages (WAL frames) a commit wrote, how long a
// request waited for its answer, and the frames checkpoints copied into
// the file, per op (one op of BenchmarkSteadySecond is a second).
func reportBatching(b *testing.B, db *DB) {
	s := db.WriterStats()
	if s.Commits == 0 {
		return
	}
	n := float64(b.N)
	b.ReportMetric(float64(s.Commits)/n, "commits/op")
	b.ReportMetric(float64(s.Requests)/float64(s.Commits), "reqs/commit")
	b.ReportMetric(float64(s.Pages)/float64(s.Commits), "pages/commit")
	b.ReportMetric(float64(s.Pages)/n, "pages/op")
	b.ReportMetric(float64(s.CacheMisses)/n, "misses/op")
	b.ReportMetric(float64(s.Waited.Microseconds())/float64(s.Requests), "µs-wait/req")
	b.ReportMetric(float64(s.MaxWait.Microseconds()), "µs-maxwait")
	b.ReportMetric(float64(s.Checkpoints)/n, "ckpts/op")
	b.ReportMetric(float64(s.Backfilled)/n, "ckpt-frames/op")
	b.ReportMetric(float64(s.JobIndexed)/n, "job-indexed/op")
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

// BenchmarkLogListJob is a console page of one job's logs, newest first,
// with 1,000 jobs' logs stored and a batch's worth less one waiting for
// their per-job index entry: the longest walk past the index a page
// takes (logjobindex.go).
func BenchmarkLogListJob(b *testing.B) {
	const jobs, perJob = 1000, 96
	db := openAt(b, filepath.Join(b.TempDir(), "xjob.db"), Options{})
	ctx := context.Background()
	for r := range perJob {
		logs := make([]xjob.Log, jobs)
		for j := range logs {
			at := int64(1_800_000_000_000 + r*1000)
			logs[j] = xjob.Log{OccurrenceID: fmt.Sprintf("j%d/r%d", j+1, r), JobID: int64(j + 1), GroupID: 1,
				TriggerType: xjob.TriggerCron, ScheduledTime: at, TriggerTime: at, ExecutorHandler: "demoHandler"}
		}
		if _, err := db.LogCreateMany(ctx, logs); err != nil {
			b.Fatal(err)
		}
	}
	var waiting int
	if err := db.r.QueryRowContext(ctx, `SELECT max(id) - (SELECT through FROM logs_by_job_through) FROM logs`).Scan(&waiting); err != nil {
		b.Fatal(err)
	}
	j := int64(0)
	for b.Loop() {
		j = j%jobs + 1
		page, err := db.LogList(ctx, driver.LogListParams{JobID: j, Limit: 100})
		if err != nil || len(page.Logs) != 96 {
			b.Fatalf("job %d: %d logs, %v", j, len(page.Logs), err)
		}
	}
	b.ReportMetric(float64(waiting), "waiting")
}
