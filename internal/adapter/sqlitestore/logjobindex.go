package sqlitestore

import (
	"context"
	"fmt"
	"strings"
)

// The per-job log index, entered in batches (migration 0013).
//
// The per-job reads (a job's page of logs, its count, its clear) need the
// logs keyed by job first. As an index of logs, each trigger's entry
// landed on a leaf of its job's own: a steady second of 10,000
// every-second jobs dirtied 10,000 leaves, which every commit wrote to
// the WAL and every checkpoint copied again. So the entries live in
// logs_by_job, and a new log gets its entry only when the logs without
// one reach jobIndexBatch: the writer then enters them all with one
// INSERT … SELECT in key order, inside the transaction of the claims that
// crossed the mark, and a job's entries of several seconds share one leaf
// write. (The first version kept the index and a flag column; entering
// meant updating every log row again, in id order, and with the writer's
// 2 MB page cache each leaf was spilled and written once per entry
// anyway: ×0.90 of the WAL pages instead of about a third.)
//
// logs_by_job_through.through is the largest id up to which every log has
// its entry. Log ids only grow (AUTOINCREMENT), so a log without one has
// an id above it; a restore that inserts ids at or below it enters them
// itself. A per-job read is therefore the union of two disjoint halves:
// the entered logs, found through logs_by_job in order, and the rowid
// range above the mark, filtered by job: never much longer than a batch.
// Reading the mark in the same statement keeps the halves one snapshot.

// jobIndexBatch is how many logs wait for their entry before the writer
// enters them: at 10,000 every-second jobs, about three seconds of a
// job's entries share a leaf write, and a per-job read walks at most
// this many rows past the entries.
const jobIndexBatch = 1 << 15

// enterJobIndex enters the waiting logs into logs_by_job once the newest
// log id is a batch past the mark. It runs on the writer, inside the
// transaction that inserted newest; db.jobIndexNext caches when to look
// again (another process sharing the file may enter logs too, so the
// stored mark decides).
func (db *DB) enterJobIndex(ctx context.Context, newest int64) error {
	if newest < db.jobIndexNext {
		return nil
	}
	var through int64
	if err := db.ws.jobIndexedRead.QueryRowContext(ctx).Scan(&through); err != nil {
		return fmt.Errorf("read the job index mark: %w", err)
	}
	if newest-through < db.jobIndexBatch {
		db.jobIndexNext = through + db.jobIndexBatch
		return nil
	}
	n, err := rowsAffected(db.ws.jobIndexEnter.ExecContext(ctx, through, newest))
	if err != nil {
		return fmt.Errorf("enter logs %d–%d into the job index: %w", through+1, newest, err)
	}
	if _, err := db.ws.jobIndexedSet.ExecContext(ctx, newest); err != nil {
		return fmt.Errorf("set the job index mark: %w", err)
	}
	db.stats.jobIndexed.Add(n)
	db.jobIndexNext = newest + db.jobIndexBatch
	return nil
}

// Statements of the batch entry, on the writer. The ORDER BY makes the
// insert walk logs_by_job's leaves once each, in order. OR IGNORE: an
// entry that exists already is the same entry (its key is the whole
// row), and a batch that failed on it would fail every claim after it.
const (
	sqlJobIndexedRead = `SELECT through FROM logs_by_job_through WHERE one = 1`
	sqlJobIndexEnter  = `INSERT OR IGNORE INTO logs_by_job (job_id, trigger_time, id)
		SELECT job_id, trigger_time, id FROM logs WHERE id > ? AND id <= ?
		ORDER BY job_id, trigger_time, id`
	sqlJobIndexedSet = `UPDATE logs_by_job_through SET through = ? WHERE one = 1`
	// sqlJobIndexRestored enters restored logs the mark already passed.
	sqlJobIndexRestored = `INSERT OR IGNORE INTO logs_by_job (job_id, trigger_time, id)
		SELECT job_id, trigger_time, id FROM logs
		WHERE id IN (SELECT value FROM json_each(?)) AND id <= (SELECT through FROM logs_by_job_through WHERE one = 1)`
)

// Conditions given to logsOf name trigger_time, id and job_id as
// $trigger_time, $id and $job_id: as they are on logs, or, in the entered
// half of a per-job read, as logs_by_job holds them (k), so that the
// planner walks its key in order and a cursor or time range bounds the
// walk.
var (
	plainCols = strings.NewReplacer("$trigger_time", "trigger_time", "$id", "id", "$job_id", "job_id")
	keyedCols = strings.NewReplacer("$trigger_time", "k.trigger_time", "$id", "k.id", "$job_id", "k.job_id")
)

// logsOf is the rows of logs matching where (its args in args), selected
// as cols (a list of log column names, or 1): with jobID 0 a plain
// SELECT; else the compound of the job's entered logs (logs_by_job in key
// order, each log looked up by rowid) and its logs not yet entered (the
// rowid range above the mark; NOT INDEXED keeps the planner from trading
// that bounded walk for a group or time index, which could read every
// log of the group). A caller appends ORDER BY (of columns in cols) and
// LIMIT, which SQLite applies to the compound by merging the two halves
// in order.
func logsOf(cols string, where []string, args []any, jobID int64) (string, []any) {
	cond := strings.Join(append([]string{"1 = 1"}, where...), " AND ")
	if jobID == 0 {
		return `SELECT ` + cols + ` FROM logs WHERE ` + plainCols.Replace(cond), args
	}
	names := strings.Split(cols, ",")
	for i, n := range names {
		switch n = strings.TrimSpace(n); n {
		case "1":
		case "id", "trigger_time", "job_id":
			names[i] = "k." + n + " AS " + n
		default:
			names[i] = "logs." + n
		}
	}
	q := `SELECT ` + strings.Join(names, ", ") + ` FROM logs_by_job AS k CROSS JOIN logs ON logs.id = k.id
		WHERE k.job_id = ? AND ` + keyedCols.Replace(cond) +
		` UNION ALL SELECT ` + cols + ` FROM logs NOT INDEXED
		WHERE id > (SELECT through FROM logs_by_job_through WHERE one = 1) AND job_id = ? AND ` + plainCols.Replace(cond)
	all := make([]any, 0, 2*len(args)+2)
	all = append(append(append(all, jobID), args...), jobID)
	return q, append(all, args...)
}
