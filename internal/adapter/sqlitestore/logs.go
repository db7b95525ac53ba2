package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

const logColumns = `id, occurrence_id, job_id, group_id, trigger_type, scheduled_time, trigger_time,
	trigger_code, trigger_msg, executor_address, executor_handler, executor_param,
	executor_sharding_param, executor_fail_retry_count, handle_time, handle_code, handle_msg,
	alarm_status, claim_until, version`

// Log status predicates, as xjob.Log's methods and xxl-job's log page define them.
const (
	sqlLogSuccess = `handle_code = 200`
	sqlLogRunning = `(trigger_code = 200 AND handle_code = 0)`
	// sqlLogFailed is also the WHERE of the partial indexes logs_failed and
	// logs_group_failed (migration 0010): change them together.
	sqlLogFailed = `(handle_code NOT IN (0, 200) OR (handle_code = 0 AND trigger_code NOT IN (0, 200)))`
)

func scanLog(s scanner) (xjob.Log, error) {
	var l xjob.Log
	err := s.Scan(&l.ID, &l.OccurrenceID, &l.JobID, &l.GroupID, &l.TriggerType, &l.ScheduledTime, &l.TriggerTime,
		&l.TriggerCode, &l.TriggerMsg, &l.ExecutorAddress, &l.ExecutorHandler, &l.ExecutorParam,
		&l.ExecutorShardingParam, &l.ExecutorFailRetryCount, &l.HandleTime, &l.HandleCode, &l.HandleMsg,
		&l.AlarmStatus, &l.ClaimUntil, &l.Version)
	if err != nil {
		return xjob.Log{}, err
	}
	return l, nil
}

// sqlLogOccurrenceKey is the time half of a log's occurrence key, the
// expression logs_occurrence (migration 0007) indexes before the id: the
// fire time of a scheduled occurrence, which its id names, so that one
// second's claims append at one end of the index; 0 for the others.
const sqlLogOccurrenceKey = `(CASE WHEN trigger_type IN ('CRON', 'MISFIRE') THEN scheduled_time ELSE 0 END)`

// sqlLogByOccurrence reads the log of an occurrence (its trigger type,
// scheduled time and id) through logs_occurrence.
const sqlLogByOccurrence = `SELECT ` + logColumns + ` FROM logs
	WHERE ` + sqlLogOccurrenceKey + ` = (CASE WHEN ? IN ('CRON', 'MISFIRE') THEN ? ELSE 0 END) AND occurrence_id = ?`

// sqlLogCreate inserts a log unless its occurrence has one (no row
// changes then). It has no RETURNING clause: SQLite codes RETURNING as a
// trigger, so each insert would open and free a statement journal, about
// 60% more per insert than the Exec and its last insert id. Its conflict
// target is implicit: the only unique key a new row can clash on is
// logs_occurrence's (the id is AUTOINCREMENT).
const sqlLogCreate = `INSERT INTO logs (occurrence_id, job_id, group_id, trigger_type,
	scheduled_time, trigger_time, trigger_code, trigger_msg, executor_address, executor_handler,
	executor_param, executor_sharding_param, executor_fail_retry_count, handle_time, handle_code,
	handle_msg, alarm_status, claim_until, version)
	VALUES (?,?,?,?, ?,?,?,?,?,?, ?,?,?,?,?, ?,?,?, 1)
	ON CONFLICT DO NOTHING`

// LogCreate stores a new log unless its OccurrenceID exists, in which case
// it returns the existing log and xjob.ErrConflict.
func (db *DB) LogCreate(ctx context.Context, l xjob.Log) (xjob.Log, error) {
	if err := validateNewLog(l); err != nil {
		return xjob.Log{}, err
	}
	var existing *xjob.Log
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		var err error
		l.ID, existing, err = db.insertLog(ctx, l)
		if err != nil || existing != nil {
			return err
		}
		return db.enterJobIndex(ctx, l.ID)
	})
	if err != nil {
		return xjob.Log{}, fmt.Errorf("sqlite log create %s: %w", l.OccurrenceID, err)
	}
	if existing != nil {
		return *existing, fmt.Errorf("sqlite log create %s: %w", l.OccurrenceID, xjob.ErrConflict)
	}
	l.Version = 1
	return l, nil
}

func validateNewLog(l xjob.Log) error {
	if l.OccurrenceID == "" {
		return &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "occurrenceId", Message: "is required"}}}
	}
	return nil
}

// insertLog inserts l inside the writer's transaction and returns its id,
// or the log its occurrence already has (read in the same transaction: the
// log that won is there).
func (db *DB) insertLog(ctx context.Context, l xjob.Log) (int64, *xjob.Log, error) {
	res, err := db.ws.logCreate.ExecContext(ctx,
		l.OccurrenceID, l.JobID, l.GroupID, l.TriggerType,
		l.ScheduledTime, l.TriggerTime, l.TriggerCode, l.TriggerMsg, l.ExecutorAddress, l.ExecutorHandler,
		l.ExecutorParam, l.ExecutorShardingParam, l.ExecutorFailRetryCount, l.HandleTime, l.HandleCode,
		l.HandleMsg, l.AlarmStatus, l.ClaimUntil)
	if err != nil {
		return 0, nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		if err != nil {
			return 0, nil, err
		}
		id, err := res.LastInsertId()
		return id, nil, err
	}
	e, err := scanLog(db.ws.logByOccurrence.QueryRowContext(ctx, l.TriggerType, l.ScheduledTime, l.OccurrenceID))
	if err != nil {
		return 0, nil, err
	}
	return 0, &e, nil
}

// LogCreateMany claims every occurrence of logs in one write transaction:
// each is created, taken over (untriggered, claim expired by its
// TriggerTime) or reported as it stands, in order.
func (db *DB) LogCreateMany(ctx context.Context, logs []xjob.Log) ([]driver.LogCreated, error) {
	out := make([]driver.LogCreated, len(logs))
	for i, l := range logs {
		if err := validateNewLog(l); err != nil {
			out[i] = driver.LogCreated{Err: err}
		}
	}
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		return db.claimMany(ctx, logs, out)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite log create many: %w", err)
	}
	return out, nil
}

// claimOccurrence is one item of LogCreateMany, inside the transaction.
func (db *DB) claimOccurrence(ctx context.Context, l xjob.Log) (driver.LogCreated, error) {
	id, existing, err := db.insertLog(ctx, l)
	switch {
	case err != nil:
		return driver.LogCreated{}, err
	case existing == nil:
		l.ID, l.Version = id, 1
		return driver.LogCreated{Outcome: driver.ClaimCreated, Log: l}, nil
	}
	return db.claimExisting(ctx, l, *existing)
}

// claimExisting is the claim of l on the log prev its occurrence already
// has, inside the transaction.
func (db *DB) claimExisting(ctx context.Context, l xjob.Log, prev xjob.Log) (driver.LogCreated, error) {
	outcome := driver.ClaimOutcomeOf(prev, l)
	if outcome != driver.ClaimTakenOver {
		return driver.LogCreated{Outcome: outcome, Log: prev}, nil
	}
	taken, err := scanLog(db.ws.logClaim.QueryRowContext(ctx, l.ClaimUntil, l.TriggerTime, prev.ID, prev.Version))
	if err != nil {
		return driver.LogCreated{}, fmt.Errorf("take over log %d: %w", prev.ID, err)
	}
	return driver.LogCreated{Outcome: driver.ClaimTakenOver, Log: taken, Prev: prev}, nil
}

// LogGet returns one log or xjob.ErrNotFound.
func (db *DB) LogGet(ctx context.Context, id int64) (xjob.Log, error) {
	l, err := scanLog(db.rs.logGet.QueryRowContext(ctx, id))
	if err != nil {
		return xjob.Log{}, fmt.Errorf("sqlite log get %d: %w", id, notFound(err))
	}
	return l, nil
}

// LogGetMany reads the logs among ids in one query.
func (db *DB) LogGetMany(ctx context.Context, ids []int64) ([]xjob.Log, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := db.rs.logGetMany.QueryContext(ctx, idsJSON(ids))
	if err != nil {
		return nil, fmt.Errorf("sqlite log get many: %w", err)
	}
	logs, err := scanAll(rows, scanLog)
	if err != nil {
		return nil, fmt.Errorf("sqlite log get many: %w", err)
	}
	return logs, nil
}

// LogClaim takes over an untriggered log, conditional on its version.
func (db *DB) LogClaim(ctx context.Context, p driver.LogClaimParams) (xjob.Log, error) {
	var l xjob.Log
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		var err error
		l, err = scanLog(db.ws.logClaim.QueryRowContext(ctx, p.ClaimUntil, p.TriggerTime, p.ID, p.ExpectVersion))
		if errors.Is(err, sql.ErrNoRows) {
			err = missingOr(ctx, db.ws.logExists, p.ID, xjob.ErrConflict)
		}
		return err
	})
	if err != nil {
		return xjob.Log{}, fmt.Errorf("sqlite log claim %d: %w", p.ID, err)
	}
	return l, nil
}

// LogTriggered records the executor's reply to /run if none is recorded yet.
func (db *DB) LogTriggered(ctx context.Context, p driver.LogTriggeredParams) error {
	errs, err := db.LogTriggeredMany(ctx, []driver.LogTriggeredParams{p})
	if err != nil {
		return err
	}
	return errs[0]
}

// LogTriggeredMany records every reply in one write transaction, in order.
func (db *DB) LogTriggeredMany(ctx context.Context, ps []driver.LogTriggeredParams) ([]error, error) {
	for _, p := range ps {
		if p.TriggerCode == xjob.CodeNone {
			return nil, fmt.Errorf("sqlite log triggered %d: trigger code 0 records nothing", p.ID)
		}
	}
	errs := make([]error, len(ps))
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		return db.triggeredMany(ctx, ps, errs)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite log triggered many: %w", err)
	}
	return errs, nil
}

// triggeredOneByOne records ps with a statement each, inside the write
// transaction: errs[i] is ps[i]'s ErrConflict or ErrNotFound.
func (db *DB) triggeredOneByOne(ctx context.Context, ps []driver.LogTriggeredParams, errs []error) error {
	for i, p := range ps {
		n, err := rowsAffected(db.ws.logTriggered.ExecContext(ctx, p.ExecutorAddress, p.TriggerCode, p.TriggerMsg, p.ID))
		if err == nil && n == 0 {
			err = missingOr(ctx, db.ws.logExists, p.ID, xjob.ErrConflict)
		}
		switch {
		case errors.Is(err, xjob.ErrConflict), errors.Is(err, xjob.ErrNotFound):
			errs[i] = fmt.Errorf("sqlite log triggered %d: %w", p.ID, err)
		case err != nil:
			return fmt.Errorf("sqlite log triggered %d: %w", p.ID, err)
		}
	}
	return nil
}

// LogFinish records the first result of a log.
func (db *DB) LogFinish(ctx context.Context, p driver.LogFinishParams) (xjob.Log, error) {
	res, err := db.LogFinishMany(ctx, []driver.LogFinishParams{p})
	if err != nil {
		return xjob.Log{}, err
	}
	return res[0].Log, res[0].Err
}

// LogFinishMany records every result in one write transaction, in order
// (a second result for one log loses to the first).
func (db *DB) LogFinishMany(ctx context.Context, ps []driver.LogFinishParams) ([]driver.LogFinished, error) {
	for _, p := range ps {
		if p.HandleCode == xjob.CodeNone {
			return nil, fmt.Errorf("sqlite log finish %d: handle code 0 records nothing", p.ID)
		}
	}
	out := make([]driver.LogFinished, len(ps))
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		if finishBatchable(ps) {
			return db.logFinishBatch(ctx, ps, out)
		}
		for i, p := range ps {
			var l xjob.Log
			res, err := db.ws.logFinish.ExecContext(ctx, p.HandleTime, p.HandleCode, p.HandleMsg, p.ID)
			var n int64
			if err == nil {
				n, err = res.RowsAffected()
			}
			switch {
			case err == nil && n == 1:
				l, err = scanLog(db.ws.logByID.QueryRowContext(ctx, p.ID))
			case err == nil:
				err = missingOr(ctx, db.ws.logExists, p.ID, xjob.ErrConflict)
			}
			switch {
			case errors.Is(err, xjob.ErrConflict), errors.Is(err, xjob.ErrNotFound):
				out[i].Err = fmt.Errorf("sqlite log finish %d: %w", p.ID, err)
			case err != nil:
				return fmt.Errorf("sqlite log finish %d: %w", p.ID, err)
			default:
				out[i].Log = l
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite log finish many: %w", err)
	}
	return out, nil
}

// LogSetAlarm compares-and-sets a log's alarm status.
func (db *DB) LogSetAlarm(ctx context.Context, p driver.LogSetAlarmParams) error {
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		n, err := rowsAffected(db.ws.logSetAlarm.ExecContext(ctx, p.To, p.ID, p.From))
		if err == nil && n == 0 {
			err = missingOr(ctx, db.ws.logExists, p.ID, xjob.ErrConflict)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite log set alarm %d: %w", p.ID, err)
	}
	return nil
}

// LogList pages logs newest first; the cursor is "triggerTime:id" of the
// last log served.
func (db *DB) LogList(ctx context.Context, p driver.LogListParams) (driver.LogPage, error) {
	limit := clampLimit(p.Limit, 100, 1000)
	q, args, err := logListQuery(p, limit)
	if err != nil {
		return driver.LogPage{}, fmt.Errorf("sqlite log list: %w", err)
	}
	rows, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return driver.LogPage{}, fmt.Errorf("sqlite log list: %w", err)
	}
	logs, err := scanAll(rows, scanLog)
	if err != nil {
		return driver.LogPage{}, fmt.Errorf("sqlite log list: %w", err)
	}
	var page driver.LogPage
	if len(logs) > limit {
		logs = logs[:limit]
		last := logs[limit-1]
		page.Next = strconv.FormatInt(last.TriggerTime, 10) + ":" + strconv.FormatInt(last.ID, 10)
	}
	page.Logs = logs
	return page, nil
}

// LogsRunning returns logs triggered successfully at or before before with
// no result yet, oldest first.
func (db *DB) LogsRunning(ctx context.Context, before int64, limit int) ([]xjob.Log, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+logColumns+` FROM logs
		WHERE `+sqlLogRunning+` AND trigger_time <= ? ORDER BY trigger_time, id LIMIT ?`,
		before, clampLimit(limit, 1000, 10000))
	if err != nil {
		return nil, fmt.Errorf("sqlite logs running: %w", err)
	}
	logs, err := scanAll(rows, scanLog)
	if err != nil {
		return nil, fmt.Errorf("sqlite logs running: %w", err)
	}
	return logs, nil
}

// LogsFailedUnalarmed returns failed logs with AlarmStatus 0 triggered at
// or before before, oldest first.
func (db *DB) LogsFailedUnalarmed(ctx context.Context, before int64, limit int) ([]xjob.Log, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+logColumns+` FROM logs
		WHERE alarm_status = 0 AND `+sqlLogFailed+` AND trigger_time <= ? ORDER BY trigger_time, id LIMIT ?`,
		before, clampLimit(limit, 1000, 10000))
	if err != nil {
		return nil, fmt.Errorf("sqlite logs failed unalarmed: %w", err)
	}
	logs, err := scanAll(rows, scanLog)
	if err != nil {
		return nil, fmt.Errorf("sqlite logs failed unalarmed: %w", err)
	}
	return logs, nil
}

// LogDeleteBefore deletes up to limit of the oldest logs triggered before
// before.
func (db *DB) LogDeleteBefore(ctx context.Context, before int64, limit int) (int, error) {
	var n int64
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		var err error
		n, err = rowsAffected(c.ExecContext(ctx, `DELETE FROM logs WHERE id IN (
			SELECT id FROM logs WHERE trigger_time < ? ORDER BY trigger_time, id LIMIT ?)`,
			before, clampLimit(limit, 1000, 100000)))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite log delete before: %w", err)
	}
	return int(n), nil
}

// logListQuery is LogList's statement for a page of limit logs (and one
// more, which says whether there is a next page).
func logListQuery(p driver.LogListParams, limit int) (string, []any, error) {
	var where []string
	var args []any
	if p.Cursor != "" {
		ts, id, ok := strings.Cut(p.Cursor, ":")
		t, err1 := strconv.ParseInt(ts, 10, 64)
		i, err2 := strconv.ParseInt(id, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return "", nil, badCursor(p.Cursor)
		}
		where, args = append(where, "($trigger_time, $id) < (?, ?)"), append(args, t, i)
	}
	if p.GroupID != 0 {
		where, args = append(where, "group_id = ?"), append(args, p.GroupID)
	}
	where, args = logFilters(where, args, p.Status, p.From, p.To)
	q, args := logsOf(logColumns, where, args, p.JobID)
	return q + ` ORDER BY trigger_time DESC, id DESC LIMIT ?`, append(args, limit+1), nil
}

// LogClear deletes up to p.Limit of the oldest logs of p's scope outside
// its newest p.KeepNewest and before p.Before, in one write transaction.
func (db *DB) LogClear(ctx context.Context, p driver.LogClearParams) (int, error) {
	q, args := logClearQuery(p)
	var n int64
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		var err error
		n, err = rowsAffected(c.ExecContext(ctx, q, args...))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite log clear: %w", err)
	}
	return int(n), nil
}

// logClearQuery is LogClear's statement: the oldest first of p's scope,
// less its newest p.KeepNewest, each found through logsOf.
func logClearQuery(p driver.LogClearParams) (string, []any) {
	var scope []string
	var args []any
	if p.GroupID != 0 {
		scope, args = append(scope, "group_id = ?"), append(args, p.GroupID)
	}
	cond, condArgs := slices.Clone(scope), slices.Clone(args)
	if p.KeepNewest > 0 {
		keep, keepArgs := logsOf("id, trigger_time", scope, args, p.JobID)
		cond = append(cond, `$id NOT IN (SELECT id FROM (`+keep+` ORDER BY trigger_time DESC, id DESC LIMIT ?))`)
		condArgs = append(append(condArgs, keepArgs...), p.KeepNewest)
	}
	if p.Before != 0 {
		cond, condArgs = append(cond, "$trigger_time < ?"), append(condArgs, p.Before)
	}
	sel, selArgs := logsOf("id, trigger_time", cond, condArgs, p.JobID)
	return `DELETE FROM logs WHERE id IN (SELECT id FROM (` + sel + ` ORDER BY trigger_time, id LIMIT ?))`,
		append(selArgs, clampLimit(p.Limit, 1000, 100000))
}
