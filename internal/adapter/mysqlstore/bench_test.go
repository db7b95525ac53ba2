package mysqlstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/xjobdev/xjob/internal/testenv/mariadb"
	"github.com/xjobdev/xjob/internal/testenv/storebench"
)

// The benchmarks' bodies are storebench's, shared with sqlitestore and
// pgstore so that the stores compare call for call; this file opens and
// seeds a database of the shared MariaDB server (data on /dev/shm,
// innodb_flush_log_at_trx_commit=2): they measure the statements and
// round trips, not a disk. cpu-µs/trigger counts this process only; the
// server's CPU is not in it.

var bench = storebench.Harness[*DB]{
	Open: func(b *testing.B, shards, handles int) []*DB {
		dsn := mariadb.Shared(b).NewDatabase(b)
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

// BenchmarkSteadySecond is the store's share of a steady workload, as
// sqlitestore's, with 3,000 jobs a second; nodes=3 splits the chunks
// over three *DB on the one database, as three xjob server nodes would.
func BenchmarkSteadySecond(b *testing.B) {
	for _, nodes := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) { storebench.SteadySecond(b, bench, 3000, nodes) })
	}
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
