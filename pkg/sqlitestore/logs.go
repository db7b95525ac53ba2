package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	sqlLogFailed  = `(handle_code NOT IN (0, 200) OR (handle_code = 0 AND trigger_code NOT IN (0, 200)))`
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

// sqlLogCreate inserts a log unless its occurrence has one; RETURNING
// yields no row then.
const sqlLogCreate = `INSERT INTO logs (occurrence_id, job_id, group_id, trigger_type,
	scheduled_time, trigger_time, trigger_code, trigger_msg, executor_address, executor_handler,
	executor_param, executor_sharding_param, executor_fail_retry_count, handle_time, handle_code,
	handle_msg, alarm_status, claim_until, version)
	VALUES (?,?,?,?, ?,?,?,?,?,?, ?,?,?,?,?, ?,?,?, 1)
	ON CONFLICT (occurrence_id) DO NOTHING RETURNING id`

// LogCreate stores a new log unless its OccurrenceID exists, in which case
// it returns the existing log and xjob.ErrConflict.
func (db *DB) LogCreate(ctx context.Context, l xjob.Log) (xjob.Log, error) {
	if l.OccurrenceID == "" {
		return xjob.Log{}, &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "occurrenceId", Message: "is required"}}}
	}
	var existing *xjob.Log
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		err := db.ws.logCreate.QueryRowContext(ctx,
			l.OccurrenceID, l.JobID, l.GroupID, l.TriggerType,
			l.ScheduledTime, l.TriggerTime, l.TriggerCode, l.TriggerMsg, l.ExecutorAddress, l.ExecutorHandler,
			l.ExecutorParam, l.ExecutorShardingParam, l.ExecutorFailRetryCount, l.HandleTime, l.HandleCode,
			l.HandleMsg, l.AlarmStatus, l.ClaimUntil).Scan(&l.ID)
		if errors.Is(err, sql.ErrNoRows) {
			// Read in the same transaction: the log that won is there.
			e, err := scanLog(db.ws.logByOccurrence.QueryRowContext(ctx, l.OccurrenceID))
			existing = &e
			return err
		}
		return err
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

// LogGet returns one log or xjob.ErrNotFound.
func (db *DB) LogGet(ctx context.Context, id int64) (xjob.Log, error) {
	l, err := scanLog(db.rs.logGet.QueryRowContext(ctx, id))
	if err != nil {
		return xjob.Log{}, fmt.Errorf("sqlite log get %d: %w", id, notFound(err))
	}
	return l, nil
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
	if p.TriggerCode == xjob.CodeNone {
		return fmt.Errorf("sqlite log triggered %d: trigger code 0 records nothing", p.ID)
	}
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		n, err := rowsAffected(db.ws.logTriggered.ExecContext(ctx, p.ExecutorAddress, p.TriggerCode, p.TriggerMsg, p.ID))
		if err == nil && n == 0 {
			err = missingOr(ctx, db.ws.logExists, p.ID, xjob.ErrConflict)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite log triggered %d: %w", p.ID, err)
	}
	return nil
}

// LogFinish records the first result of a log.
func (db *DB) LogFinish(ctx context.Context, p driver.LogFinishParams) (xjob.Log, error) {
	if p.HandleCode == xjob.CodeNone {
		return xjob.Log{}, fmt.Errorf("sqlite log finish %d: handle code 0 records nothing", p.ID)
	}
	var l xjob.Log
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		var err error
		l, err = scanLog(db.ws.logFinish.QueryRowContext(ctx, p.HandleTime, p.HandleCode, p.HandleMsg, p.ID))
		if errors.Is(err, sql.ErrNoRows) {
			err = missingOr(ctx, db.ws.logExists, p.ID, xjob.ErrConflict)
		}
		return err
	})
	if err != nil {
		return xjob.Log{}, fmt.Errorf("sqlite log finish %d: %w", p.ID, err)
	}
	return l, nil
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
	where := []string{"1 = 1"}
	var args []any
	if p.Cursor != "" {
		ts, id, ok := strings.Cut(p.Cursor, ":")
		t, err1 := strconv.ParseInt(ts, 10, 64)
		i, err2 := strconv.ParseInt(id, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return driver.LogPage{}, fmt.Errorf("sqlite log list: %w", badCursor(p.Cursor))
		}
		where, args = append(where, "(trigger_time, id) < (?, ?)"), append(args, t, i)
	}
	if p.JobID != 0 {
		where, args = append(where, "job_id = ?"), append(args, p.JobID)
	}
	if p.GroupID != 0 {
		where, args = append(where, "group_id = ?"), append(args, p.GroupID)
	}
	switch p.Status {
	case xjob.LogSuccess:
		where = append(where, sqlLogSuccess)
	case xjob.LogFail:
		where = append(where, sqlLogFailed)
	case xjob.LogRunning:
		where = append(where, sqlLogRunning)
	}
	if p.From != 0 {
		where, args = append(where, "trigger_time >= ?"), append(args, p.From)
	}
	if p.To != 0 {
		where, args = append(where, "trigger_time <= ?"), append(args, p.To)
	}
	args = append(args, limit+1)
	rows, err := db.r.QueryContext(ctx, `SELECT `+logColumns+` FROM logs WHERE `+
		strings.Join(where, " AND ")+` ORDER BY trigger_time DESC, id DESC LIMIT ?`, args...)
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
