package pgstore

import (
	"context"
	"testing"

	"github.com/xjobdev/xjob/internal/testenv/storebench"
)

// The benchmarks' bodies are storebench's, shared with sqlitestore and
// mysqlstore so that the stores compare call for call; this file opens
// and seeds a database of the shared server. cpu-µs figures are this
// process's CPU only: the server's is on top.

var bench = storebench.Harness[*DB]{
	Open: func(b *testing.B, shards, handles int) []*DB {
		dsn := newDatabase(b)
		dbs := make([]*DB, handles)
		for i := range dbs {
			dbs[i] = openAt(b, dsn, Options{Shards: shards})
		}
		return dbs
	},
	Seed: seedJobs,
}

func BenchmarkLogCreate(b *testing.B)           { storebench.LogCreate(b, bench) }
func BenchmarkJobsDue(b *testing.B)             { storebench.JobsDue(b, bench) }
func BenchmarkJobAdvance(b *testing.B)          { storebench.JobAdvance(b, bench) }
func BenchmarkJobAdvanceMany(b *testing.B)      { storebench.JobAdvanceMany(b, bench) }
func BenchmarkQueueSendReceiveAck(b *testing.B) { storebench.QueueSendReceiveAck(b, bench) }

// BenchmarkSteadySecond is the store's share of a node's steady
// workload, as sqlitestore's benchmark of the same name writes it, with
// 3,000 jobs a second. Run it with -benchtime=10x or so.
func BenchmarkSteadySecond(b *testing.B) { storebench.SteadySecond(b, bench, 3000, 1) }

// seedJobs bulk-inserts stored jobs into shard 0, due of them at or before 1000.
func seedJobs(b *testing.B, db *DB, stored, due int) {
	b.Helper()
	_, err := db.pool.Exec(context.Background(), `INSERT INTO jobs (shard, group_id, description, author, alarm_email,
		schedule_type, schedule_conf, time_zone, misfire_strategy, route_strategy, handler, param, block_strategy,
		timeout_seconds, fail_retry_count, glue_type, glue_source, glue_remark, glue_updated_at, child_job_ids,
		trigger_status, trigger_last_time, trigger_next_time, version, revision, created_at, updated_at)
		SELECT 0, 1, 'bench', 'b', '', 'CRON', '* * * * * ?', 'UTC', 'DO_NOTHING', 'FIRST', 'h', '', 'SERIAL_EXECUTION',
			0, 0, 'BEAN', '', '', 0, '',
			CASE WHEN i < $2 OR i % 2 = 1 THEN 1 ELSE 0 END, -- stopped jobs keep a next time but are not in the index
			0, CASE WHEN i < $2 THEN i % 1000 ELSE 1000000 + i END, 1, 1, 0, 0
		FROM generate_series(0, $1 - 1) AS i`, stored, due)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.pool.Exec(context.Background(), `ANALYZE jobs`); err != nil {
		b.Fatal(err)
	}
}
