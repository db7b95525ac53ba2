package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Batched log creation.
//
// A steady second of local mode claims one occurrence per trigger, in
// LogCreateMany batches of up to a few hundred. Inserted one statement a
// log, database/sql's and the driver's per-statement work and the
// statement journal SQLite opens for each insert cost about a fifth of
// the insert. Here a batch goes in multi-row INSERTs of logCreateRows
// rows (the largest that fit, then smaller ones), with the same ON
// CONFLICT DO NOTHING as one log's insert. The writer holds the write
// transaction and logs.id is AUTOINCREMENT, so when every row of a
// statement went in, they got consecutive ids in VALUES order, ending at
// its last insert id, and nothing is read back. When some row clashed
// with a log its occurrence already had, each row of the statement is
// read back by its occurrence, in order (see claimChunkSlow); ids are
// then not consecutive (SQLite draws a row's id before it finds the
// clash), but every id it drew is above the largest id before the
// statement, which claimMany reads once a batch.

// logCreateRows are the row counts of the prepared multi-row inserts,
// largest first; a single log uses sqlLogCreate.
var logCreateRows = [...]int{64, 32, 16, 8, 4, 2}

// logCreateParams is the number of bound parameters a row of a log insert has.
const logCreateParams = 18

// sqlLogCreateRows is sqlLogCreate for n rows.
func sqlLogCreateRows(n int) string {
	head, _, _ := strings.Cut(sqlLogCreate, "VALUES")
	row := "(?,?,?,?, ?,?,?,?,?,?, ?,?,?,?,?, ?,?,?, 1)"
	return head + "VALUES " + strings.Repeat(row+",", n-1) + row + " ON CONFLICT DO NOTHING"
}

// appendLogArgs appends l's insert parameters in sqlLogCreate's order.
func appendLogArgs(args []any, l xjob.Log) []any {
	return append(args, l.OccurrenceID, l.JobID, l.GroupID, l.TriggerType,
		l.ScheduledTime, l.TriggerTime, l.TriggerCode, l.TriggerMsg, l.ExecutorAddress, l.ExecutorHandler,
		l.ExecutorParam, l.ExecutorShardingParam, l.ExecutorFailRetryCount, l.HandleTime, l.HandleCode,
		l.HandleMsg, l.AlarmStatus, l.ClaimUntil)
}

// claimMany is LogCreateMany's transaction body: it fills out[i] for
// every valid logs[i] (the invalid ones are already answered and skipped).
func (db *DB) claimMany(ctx context.Context, logs []xjob.Log, out []driver.LogCreated) error {
	idx := make([]int, 0, len(logs)) // the valid logs' indexes, in order
	for i := range logs {
		if out[i].Err == nil {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	// floor is the largest log id before the next statement: every log
	// that statement inserts has a larger one.
	var floor int64
	if err := db.ws.logMaxID.QueryRowContext(ctx).Scan(&floor); err != nil {
		return fmt.Errorf("read largest log id: %w", err)
	}
	args := make([]any, 0, logCreateParams*min(len(idx), logCreateRows[0]))
	for len(idx) > 0 {
		var n int
		for _, r := range logCreateRows {
			if r <= len(idx) {
				n = r
				break
			}
		}
		if n == 0 { // one log left
			c, err := db.claimOccurrence(ctx, logs[idx[0]])
			if err != nil {
				return fmt.Errorf("%s: %w", logs[idx[0]].OccurrenceID, err)
			}
			out[idx[0]] = c
			if c.Outcome == driver.ClaimCreated {
				floor = max(floor, c.Log.ID)
			}
			idx = idx[1:]
			continue
		}
		args = args[:0]
		for _, i := range idx[:n] {
			args = appendLogArgs(args, logs[i])
		}
		last, err := db.claimChunk(ctx, n, floor, args, logs, idx[:n], out)
		if err != nil {
			return err
		}
		floor = max(floor, last)
		idx = idx[n:]
	}
	return db.enterJobIndex(ctx, floor) // floor: now the largest log id
}

// claimChunk inserts the n logs named by idx in one statement, fills
// their outcomes and returns the statement's last insert id (0: none).
// Every log id before the statement is at most floor.
func (db *DB) claimChunk(ctx context.Context, n int, floor int64, args []any, logs []xjob.Log, idx []int, out []driver.LogCreated) (int64, error) {
	res, err := db.logCreateStmt(n).ExecContext(ctx, args...)
	if err != nil {
		return 0, fmt.Errorf("insert %d logs: %w", n, err)
	}
	inserted, err := res.RowsAffected()
	if err != nil || inserted == 0 {
		if err != nil {
			return 0, fmt.Errorf("insert %d logs: %w", n, err)
		}
		return 0, db.claimChunkSlow(ctx, floor, logs, idx, out)
	}
	last, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("insert %d logs: %w", n, err)
	}
	if inserted < int64(n) {
		return last, db.claimChunkSlow(ctx, floor, logs, idx, out)
	}
	for k, i := range idx {
		l := logs[i]
		l.ID, l.Version = last-int64(n-1-k), 1
		out[i] = driver.LogCreated{Outcome: driver.ClaimCreated, Log: l}
	}
	return last, nil
}

// claimChunkSlow fills the outcomes of a chunk some of whose rows clashed
// with an existing occurrence; the logs it inserted have ids above floor.
// Read back in order, a row's log is the one this row inserted if its id
// is above floor and no earlier row of the chunk took it (an earlier row
// with the same occurrence inserted it, and this one clashed with it, as
// it would have one insert after the other); otherwise the row clashed,
// and it is decided, and taken over, as one log's claim is.
func (db *DB) claimChunkSlow(ctx context.Context, floor int64, logs []xjob.Log, idx []int, out []driver.LogCreated) error {
	taken := make(map[int64]bool, len(idx))
	for _, i := range idx {
		l := logs[i]
		e, err := scanLog(db.ws.logByOccurrence.QueryRowContext(ctx, l.TriggerType, l.ScheduledTime, l.OccurrenceID))
		if err != nil {
			return fmt.Errorf("%s: read back: %w", l.OccurrenceID, err)
		}
		if e.ID > floor && !taken[e.ID] {
			taken[e.ID] = true
			l.ID, l.Version = e.ID, 1
			out[i] = driver.LogCreated{Outcome: driver.ClaimCreated, Log: l}
			continue
		}
		c, err := db.claimExisting(ctx, l, e)
		if err != nil {
			return fmt.Errorf("%s: %w", l.OccurrenceID, err)
		}
		out[i] = c
	}
	return nil
}

// Batched replies.
//
// LogTriggeredMany records a chunk's /run replies the same way: UPDATE …
// FROM a VALUES list of logTriggeredRows rows (the largest that fit),
// each row conditional on its log's trigger code still 0, inside a
// savepoint of its own. When every row changed its log, that is every
// answer. Otherwise (a log already triggered, or missing) the chunk is
// rolled back to the savepoint and recorded a statement a reply, which
// tells each reply's fate. A batch naming one log twice goes that way
// from the start: its second reply must lose to its first.

// logTriggeredParams is the number of bound parameters of a reply row.
const logTriggeredParams = 4

// sqlLogTriggeredRows records n replies given as (id, executor_address,
// trigger_code, trigger_msg) rows.
func sqlLogTriggeredRows(n int) string {
	row := "(?,?,?,?)"
	return `UPDATE logs SET executor_address = p.column2, trigger_code = p.column3,
	trigger_msg = p.column4, version = version + 1
	FROM (VALUES ` + strings.Repeat(row+",", n-1) + row + `) AS p
	WHERE logs.id = p.column1 AND logs.trigger_code = 0`
}

// triggeredMany is LogTriggeredMany's transaction body.
func (db *DB) triggeredMany(ctx context.Context, ps []driver.LogTriggeredParams, errs []error) error {
	seen := make(map[int64]struct{}, len(ps))
	for _, p := range ps {
		if _, dup := seen[p.ID]; dup {
			return db.triggeredOneByOne(ctx, ps, errs)
		}
		seen[p.ID] = struct{}{}
	}
	args := make([]any, 0, logTriggeredParams*min(len(ps), logCreateRows[0]))
	for len(ps) > 0 {
		var n int
		for _, r := range logCreateRows {
			if r <= len(ps) {
				n = r
				break
			}
		}
		if n == 0 {
			return db.triggeredOneByOne(ctx, ps, errs)
		}
		args = args[:0]
		for _, p := range ps[:n] {
			args = append(args, p.ID, p.ExecutorAddress, p.TriggerCode, p.TriggerMsg)
		}
		if err := db.triggeredChunk(ctx, n, args, ps[:n], errs[:n]); err != nil {
			return err
		}
		ps, errs = ps[n:], errs[n:]
	}
	return nil
}

// triggeredChunk records the n replies ps in one statement if all of
// them win, else one by one.
func (db *DB) triggeredChunk(ctx context.Context, n int, args []any, ps []driver.LogTriggeredParams, errs []error) error {
	if _, err := db.ws.chunkSavepoint.ExecContext(ctx); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	changed, err := rowsAffected(db.logTriggeredStmt(n).ExecContext(ctx, args...))
	if err == nil && changed == int64(n) {
		if _, err := db.ws.chunkRelease.ExecContext(ctx); err != nil {
			return fmt.Errorf("release savepoint: %w", err)
		}
		return nil
	}
	if err != nil {
		err = fmt.Errorf("record %d replies: %w", n, err)
	}
	if _, rerr := db.ws.chunkRollbackTo.ExecContext(ctx); rerr != nil {
		return errors.Join(err, fmt.Errorf("rollback to savepoint: %w", rerr))
	}
	if _, rerr := db.ws.chunkRelease.ExecContext(ctx); rerr != nil {
		return errors.Join(err, fmt.Errorf("release savepoint: %w", rerr))
	}
	if err != nil {
		return err
	}
	return db.triggeredOneByOne(ctx, ps, errs)
}
