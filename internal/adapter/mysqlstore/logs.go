package mysqlstore

import (
	"cmp"
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

// Log status predicates, as xjob.Log's methods and xxl-job's log page
// define them. failed is a stored generated column (migration 0001).
const (
	sqlLogSuccess = `handle_code = 200`
	sqlLogRunning = `(handle_code = 0 AND trigger_code = 200)`
	sqlLogFailed  = `failed = 1`
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

// occKey is a log's occurrence key, the unique index logs_occurrence:
// the fire time of a scheduled (CRON or MISFIRE) occurrence, which its id
// names, else 0 (a deferred retry carries when it was first due as its
// scheduled time, and its re-plan may not), then the id.
type occKey struct {
	time int64
	id   string
}

func keyOf(l xjob.Log) occKey {
	if l.TriggerType == xjob.TriggerCron || l.TriggerType == xjob.TriggerMisfire {
		return occKey{l.ScheduledTime, l.OccurrenceID}
	}
	return occKey{0, l.OccurrenceID}
}

func cmpKey(a, b occKey) int { return cmp.Or(cmp.Compare(a.time, b.time), strings.Compare(a.id, b.id)) }

func validateNewLog(l xjob.Log) error {
	if l.OccurrenceID == "" {
		return &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "occurrenceId", Message: "is required"}}}
	}
	return nil
}

// LogCreate stores a new log unless its OccurrenceID exists, in which case
// it returns the existing log and xjob.ErrConflict.
func (db *DB) LogCreate(ctx context.Context, l xjob.Log) (xjob.Log, error) {
	if err := validateNewLog(l); err != nil {
		return xjob.Log{}, err
	}
	rows, err := db.insertLogs(ctx, []xjob.Log{l})
	if err != nil {
		return xjob.Log{}, fmt.Errorf("mysql log create %s: %w", l.OccurrenceID, err)
	}
	r := rows[keyOf(l)]
	if !r.created {
		return r.log, fmt.Errorf("mysql log create %s: %w", l.OccurrenceID, xjob.ErrConflict)
	}
	return r.log, nil
}

// insertedLog is a log as insertLogs found it after its insert.
type insertedLog struct {
	log     xjob.Log
	created bool // by this call
}

// insertLogs inserts the logs (of distinct occurrences) in one multi-row
// INSERT that leaves existing occurrences alone, and reads every
// occurrence's log back in one SELECT. The rows this call created carry
// its random created_by; rows another call created carry that one's. Rows
// go in key order, so concurrent batches take the unique index's locks in
// one order; a deadlock all the same is retried.
func (db *DB) insertLogs(ctx context.Context, logs []xjob.Log) (map[occKey]insertedLog, error) {
	logs = slices.Clone(logs)
	slices.SortFunc(logs, func(a, b xjob.Log) int { return cmpKey(keyOf(a), keyOf(b)) })
	const cols = 21
	var out map[occKey]insertedLog
	// One nonce for every attempt: rows an attempt inserted before a
	// later statement of it failed stay committed, and are this call's.
	nonce := randInt63() | 1 // never 0
	err := db.retry(ctx, "log insert", func() error {
		out = make(map[occKey]insertedLog, len(logs))
		var q strings.Builder
		q.WriteString(`INSERT INTO logs (occurrence_id, occurrence_time, created_by, job_id, group_id, trigger_type,
			scheduled_time, trigger_time, trigger_code, trigger_msg, executor_address, executor_handler,
			executor_param, executor_sharding_param, executor_fail_retry_count, handle_time, handle_code,
			handle_msg, alarm_status, claim_until, claimed_by, version) VALUES `)
		args := make([]any, 0, len(logs)*cols)
		keys := make([]any, 0, 2*len(logs))
		for i, l := range logs {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString(`(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,1)`)
			k := keyOf(l)
			args = append(args, l.OccurrenceID, k.time, nonce, l.JobID, l.GroupID, l.TriggerType,
				l.ScheduledTime, l.TriggerTime, l.TriggerCode, l.TriggerMsg, l.ExecutorAddress, l.ExecutorHandler,
				l.ExecutorParam, l.ExecutorShardingParam, l.ExecutorFailRetryCount, l.HandleTime, l.HandleCode,
				l.HandleMsg, l.AlarmStatus, l.ClaimUntil, db.opts.Node)
			keys = append(keys, k.time, k.id)
		}
		q.WriteString(` ON DUPLICATE KEY UPDATE id = id`)
		if _, err := db.db.ExecContext(ctx, q.String(), args...); err != nil {
			return err
		}
		rows, err := db.db.QueryContext(ctx, `SELECT `+logColumns+`, created_by FROM logs
			WHERE (occurrence_time, occurrence_id) IN (`+strings.TrimSuffix(strings.Repeat("(?,?),", len(logs)), ",")+`)`, keys...)
		if err != nil {
			return err
		}
		scan := func(s scanner) (insertedLog, error) {
			var l xjob.Log
			var by int64
			err := s.Scan(&l.ID, &l.OccurrenceID, &l.JobID, &l.GroupID, &l.TriggerType, &l.ScheduledTime, &l.TriggerTime,
				&l.TriggerCode, &l.TriggerMsg, &l.ExecutorAddress, &l.ExecutorHandler, &l.ExecutorParam,
				&l.ExecutorShardingParam, &l.ExecutorFailRetryCount, &l.HandleTime, &l.HandleCode, &l.HandleMsg,
				&l.AlarmStatus, &l.ClaimUntil, &l.Version, &by)
			return insertedLog{log: l, created: by == nonce}, err
		}
		found, err := scanAll(rows, scan)
		if err != nil {
			return err
		}
		for _, f := range found {
			out[keyOf(f.log)] = f
		}
		var missing []any
		for _, l := range logs {
			if k := keyOf(l); !has(out, k) {
				missing = append(missing, k.time, k.id)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		// The insert met rows another call's insert had not committed
		// yet and left them alone without waiting, so the plain read
		// above did not see them. A locking read waits for that insert
		// and reads its rows once committed.
		rows, err = db.db.QueryContext(ctx, `SELECT `+logColumns+`, created_by FROM logs
			WHERE (occurrence_time, occurrence_id) IN (`+strings.TrimSuffix(strings.Repeat("(?,?),", len(missing)/2), ",")+`)
			LOCK IN SHARE MODE`, missing...)
		if err != nil {
			return err
		}
		if found, err = scanAll(rows, scan); err != nil {
			return err
		}
		for _, f := range found {
			out[keyOf(f.log)] = f
		}
		for _, l := range logs {
			if !has(out, keyOf(l)) {
				// That insert rolled back (or a purge deleted the row
				// meanwhile): insert again.
				return errRace
			}
		}
		return nil
	})
	return out, err
}

func has(m map[occKey]insertedLog, k occKey) bool { _, ok := m[k]; return ok }

// LogCreateMany claims a batch of occurrences in two statements (see
// insertLogs), plus one conditional UPDATE per log it takes over: each
// occurrence is created, taken over (untriggered, claim expired by the
// new log's TriggerTime) or reported as it stands, in order, so a repeat
// of an occurrence within the batch sees the earlier item's outcome.
func (db *DB) LogCreateMany(ctx context.Context, logs []xjob.Log) ([]driver.LogCreated, error) {
	out := make([]driver.LogCreated, len(logs))
	first := map[occKey]bool{}
	var fresh []xjob.Log
	for i, l := range logs {
		if err := validateNewLog(l); err != nil {
			out[i] = driver.LogCreated{Err: err}
			continue
		}
		if k := keyOf(l); !first[k] {
			first[k] = true
			fresh = append(fresh, l)
		}
	}
	if len(fresh) == 0 {
		return out, nil
	}
	found, err := db.insertLogs(ctx, fresh)
	if err != nil {
		return nil, fmt.Errorf("mysql log create many: %w", err)
	}
	current := make(map[occKey]xjob.Log, len(found))
	for i, l := range logs {
		if out[i].Err != nil {
			continue
		}
		k := keyOf(l)
		cur, seen := current[k]
		if !seen {
			f := found[k]
			if f.created {
				out[i] = driver.LogCreated{Outcome: driver.ClaimCreated, Log: f.log}
				current[k] = f.log
				continue
			}
			cur = f.log
		}
		c, err := db.claimExisting(ctx, cur, l)
		if err != nil {
			return nil, fmt.Errorf("mysql log create many: %s: %w", l.OccurrenceID, err)
		}
		out[i], current[k] = c, c.Log
	}
	return out, nil
}

// claimExisting decides what a delivery of l may do with its occurrence's
// existing log cur, taking it over when its claim expired (a conditional
// UPDATE on the version; when that loses, the log is read again and the
// decision made anew).
func (db *DB) claimExisting(ctx context.Context, cur, l xjob.Log) (driver.LogCreated, error) {
	for range maxAttempts {
		outcome := driver.ClaimOutcomeOf(cur, l)
		if outcome != driver.ClaimTakenOver {
			return driver.LogCreated{Outcome: outcome, Log: cur}, nil
		}
		var n int64
		err := db.retry(ctx, "log take over", func() error {
			var err error
			n, err = rowsAffected(db.st.logClaim.ExecContext(ctx, l.ClaimUntil, l.TriggerTime, db.opts.Node, cur.ID, cur.Version))
			return err
		})
		if err != nil {
			return driver.LogCreated{}, fmt.Errorf("take over log %d: %w", cur.ID, err)
		}
		if n == 1 {
			// Every write of a log bumps its version, so the row is cur
			// with this claim.
			taken := cur
			taken.ClaimUntil, taken.TriggerTime, taken.Version = l.ClaimUntil, l.TriggerTime, cur.Version+1
			return driver.LogCreated{Outcome: driver.ClaimTakenOver, Log: taken, Prev: cur}, nil
		}
		next, err := scanLog(db.st.logGet.QueryRowContext(ctx, cur.ID))
		if err != nil {
			return driver.LogCreated{}, fmt.Errorf("take over log %d: %w", cur.ID, notFound(err))
		}
		cur = next
	}
	return driver.LogCreated{Outcome: driver.ClaimHeld, Log: cur}, nil
}

// LogGet returns one log or xjob.ErrNotFound.
func (db *DB) LogGet(ctx context.Context, id int64) (xjob.Log, error) {
	l, err := scanLog(db.st.logGet.QueryRowContext(ctx, id))
	if err != nil {
		return xjob.Log{}, fmt.Errorf("mysql log get %d: %w", id, notFound(err))
	}
	return l, nil
}

// LogGetMany reads the logs among ids in one query.
func (db *DB) LogGetMany(ctx context.Context, ids []int64) ([]xjob.Log, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ids = uniqueIDs(ids)
	rows, err := db.db.QueryContext(ctx, `SELECT `+logColumns+` FROM logs WHERE id IN (`+marks(len(ids))+`)`, int64Args(ids)...)
	if err != nil {
		return nil, fmt.Errorf("mysql log get many: %w", err)
	}
	logs, err := scanAll(rows, scanLog)
	if err != nil {
		return nil, fmt.Errorf("mysql log get many: %w", err)
	}
	return logs, nil
}

const sqlLogExists = `SELECT 1 FROM logs WHERE id = ?`

// LogClaim takes over an untriggered log, conditional on its version.
func (db *DB) LogClaim(ctx context.Context, p driver.LogClaimParams) (xjob.Log, error) {
	var l xjob.Log
	err := db.tx(ctx, "log claim", func(tx *sql.Tx) error {
		n, err := rowsAffected(tx.StmtContext(ctx, db.st.logClaim).ExecContext(ctx, p.ClaimUntil, p.TriggerTime, db.opts.Node, p.ID, p.ExpectVersion))
		if err != nil {
			return err
		}
		if n == 0 {
			return missingOr(ctx, tx, sqlLogExists, p.ID, xjob.ErrConflict)
		}
		l, err = scanLog(tx.QueryRowContext(ctx, `SELECT `+logColumns+` FROM logs WHERE id = ?`, p.ID))
		return err
	})
	if err != nil {
		return xjob.Log{}, fmt.Errorf("mysql log claim %d: %w", p.ID, err)
	}
	return l, nil
}

// LogsCalling is driver.CallFence's. MySQL's UPDATE returns no rows, and
// a count of rows changed does not say which: the transaction locks the
// logs first (SELECT … FOR UPDATE), keeps those still at their expected
// version and untriggered, and marks only those, so a concurrent
// ReleaseNodeClaims either waits and then finds them no longer its
// node's, or ran first and bumped their versions.
func (db *DB) LogsCalling(ctx context.Context, logs []driver.LogRef) ([]driver.LogRef, error) {
	if len(logs) == 0 {
		return nil, nil
	}
	expect := make(map[int64]int64, len(logs))
	ids := make([]int64, 0, len(logs))
	for _, l := range logs {
		if _, dup := expect[l.ID]; !dup {
			expect[l.ID] = l.Version
			ids = append(ids, l.ID)
		}
	}
	var kept []driver.LogRef
	err := db.tx(ctx, "logs calling", func(tx *sql.Tx) error {
		kept = kept[:0]
		rows, err := tx.QueryContext(ctx, `SELECT id, version, trigger_code FROM logs WHERE id IN (`+marks(len(ids))+`) FOR UPDATE`,
			int64Args(ids)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r driver.LogRef
			var code int
			if err := rows.Scan(&r.ID, &r.Version, &code); err != nil {
				return err
			}
			if code == 0 && r.Version == expect[r.ID] {
				kept = append(kept, driver.LogRef{ID: r.ID, Version: r.Version + 1})
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(kept) == 0 {
			return nil
		}
		marked := make([]int64, len(kept))
		for i, k := range kept {
			marked[i] = k.ID
		}
		_, err = tx.ExecContext(ctx, `UPDATE logs SET claimed_by = '', version = version + 1 WHERE id IN (`+marks(len(marked))+`)`,
			int64Args(marked)...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mysql logs calling: %w", err)
	}
	return kept, nil
}

// LogTriggered records the executor's reply to /run if none is recorded
// yet: one conditional UPDATE.
func (db *DB) LogTriggered(ctx context.Context, p driver.LogTriggeredParams) error {
	if p.TriggerCode == xjob.CodeNone {
		return fmt.Errorf("mysql log triggered %d: trigger code 0 records nothing", p.ID)
	}
	err := db.retry(ctx, "log triggered", func() error {
		n, err := rowsAffected(db.db.ExecContext(ctx, `UPDATE logs SET executor_address = ?, trigger_code = ?,
			trigger_msg = ?, version = version + 1 WHERE id = ? AND trigger_code = 0`,
			p.ExecutorAddress, p.TriggerCode, p.TriggerMsg, p.ID))
		if err == nil && n == 0 {
			err = missingOr(ctx, db.db, sqlLogExists, p.ID, xjob.ErrConflict)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("mysql log triggered %d: %w", p.ID, err)
	}
	return nil
}

// lockLogs reads the logs among ids with their rows locked (in id order,
// so concurrent batches cannot deadlock on them), inside tx.
func lockLogs(ctx context.Context, tx *sql.Tx, ids []int64) (map[int64]xjob.Log, error) {
	ids = uniqueIDs(ids)
	rows, err := tx.QueryContext(ctx, `SELECT `+logColumns+` FROM logs WHERE id IN (`+marks(len(ids))+`) FOR UPDATE`, int64Args(ids)...)
	if err != nil {
		return nil, err
	}
	logs, err := scanAll(rows, scanLog)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]xjob.Log, len(logs))
	for _, l := range logs {
		out[l.ID] = l
	}
	return out, nil
}

// caseUpdate builds one UPDATE of logs that sets each column by a CASE
// over the ids, and bumps their versions.
type caseUpdate struct {
	cols []string
	vals [][]any // per column: id, value, id, value…
	ids  []any
}

func newCaseUpdate(cols ...string) *caseUpdate {
	return &caseUpdate{cols: cols, vals: make([][]any, len(cols))}
}

func (u *caseUpdate) add(id int64, vals ...any) {
	u.ids = append(u.ids, id)
	for i, v := range vals {
		u.vals[i] = append(u.vals[i], id, v)
	}
}

func (u *caseUpdate) exec(ctx context.Context, tx *sql.Tx) error {
	if len(u.ids) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString(`UPDATE logs SET `)
	whens := strings.Repeat(" WHEN ? THEN ?", len(u.ids))
	var args []any
	for i, c := range u.cols {
		q.WriteString(c + ` = CASE id` + whens + ` END, `)
		args = append(args, u.vals[i]...)
	}
	q.WriteString(`version = version + 1 WHERE id IN (` + marks(len(u.ids)) + `)`)
	_, err := tx.ExecContext(ctx, q.String(), append(args, u.ids...)...)
	return err
}

// LogTriggeredMany records every reply in one transaction of three
// statements: the logs' rows are locked and read, each reply decided in
// order (the first reply of a log wins), and the winners written by one
// UPDATE.
func (db *DB) LogTriggeredMany(ctx context.Context, ps []driver.LogTriggeredParams) ([]error, error) {
	for _, p := range ps {
		if p.TriggerCode == xjob.CodeNone {
			return nil, fmt.Errorf("mysql log triggered %d: trigger code 0 records nothing", p.ID)
		}
	}
	errs := make([]error, len(ps))
	if len(ps) == 0 {
		return errs, nil
	}
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	err := db.tx(ctx, "log triggered many", func(tx *sql.Tx) error {
		clear(errs)
		logs, err := lockLogs(ctx, tx, ids)
		if err != nil {
			return err
		}
		u := newCaseUpdate("executor_address", "trigger_code", "trigger_msg")
		for i, p := range ps {
			l, ok := logs[p.ID]
			switch {
			case !ok:
				errs[i] = fmt.Errorf("mysql log triggered %d: %w", p.ID, xjob.ErrNotFound)
			case l.Triggered():
				errs[i] = fmt.Errorf("mysql log triggered %d: %w", p.ID, xjob.ErrConflict)
			default:
				l.TriggerCode = p.TriggerCode
				logs[p.ID] = l
				u.add(p.ID, p.ExecutorAddress, p.TriggerCode, p.TriggerMsg)
			}
		}
		return u.exec(ctx, tx)
	})
	if err != nil {
		return nil, fmt.Errorf("mysql log triggered many: %w", err)
	}
	return errs, nil
}

// LogFinish records the first result of a log.
func (db *DB) LogFinish(ctx context.Context, p driver.LogFinishParams) (xjob.Log, error) {
	res, err := db.LogFinishMany(ctx, []driver.LogFinishParams{p})
	if err != nil {
		return xjob.Log{}, err
	}
	return res[0].Log, res[0].Err
}

// LogFinishMany records every result in one transaction of three
// statements, as LogTriggeredMany (a second result for one log loses to
// the first), and returns the logs as written.
func (db *DB) LogFinishMany(ctx context.Context, ps []driver.LogFinishParams) ([]driver.LogFinished, error) {
	for _, p := range ps {
		if p.HandleCode == xjob.CodeNone {
			return nil, fmt.Errorf("mysql log finish %d: handle code 0 records nothing", p.ID)
		}
	}
	out := make([]driver.LogFinished, len(ps))
	if len(ps) == 0 {
		return out, nil
	}
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	err := db.tx(ctx, "log finish many", func(tx *sql.Tx) error {
		clear(out)
		logs, err := lockLogs(ctx, tx, ids)
		if err != nil {
			return err
		}
		u := newCaseUpdate("handle_time", "handle_code", "handle_msg")
		for i, p := range ps {
			l, ok := logs[p.ID]
			switch {
			case !ok:
				out[i].Err = fmt.Errorf("mysql log finish %d: %w", p.ID, xjob.ErrNotFound)
			case l.Handled():
				out[i].Err = fmt.Errorf("mysql log finish %d: %w", p.ID, xjob.ErrConflict)
			default:
				l.HandleTime, l.HandleCode, l.HandleMsg = p.HandleTime, p.HandleCode, p.HandleMsg
				l.Version++
				logs[p.ID] = l
				out[i].Log = l
				u.add(p.ID, p.HandleTime, p.HandleCode, p.HandleMsg)
			}
		}
		return u.exec(ctx, tx)
	})
	if err != nil {
		return nil, fmt.Errorf("mysql log finish many: %w", err)
	}
	return out, nil
}

// LogSetAlarm compares-and-sets a log's alarm status.
func (db *DB) LogSetAlarm(ctx context.Context, p driver.LogSetAlarmParams) error {
	err := db.retry(ctx, "log set alarm", func() error {
		n, err := rowsAffected(db.st.logSetAlarm.ExecContext(ctx, p.To, p.ID, p.From))
		if err == nil && n == 0 {
			err = missingOr(ctx, db.db, sqlLogExists, p.ID, xjob.ErrConflict)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("mysql log set alarm %d: %w", p.ID, err)
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
			return driver.LogPage{}, fmt.Errorf("mysql log list: %w", badCursor(p.Cursor))
		}
		where, args = append(where, "(trigger_time < ? OR (trigger_time = ? AND id < ?))"), append(args, t, t, i)
	}
	if p.JobID != 0 {
		where, args = append(where, "job_id = ?"), append(args, p.JobID)
	}
	if p.GroupID != 0 {
		where, args = append(where, "group_id = ?"), append(args, p.GroupID)
	}
	where, args = logFilters(where, args, p.Status, p.From, p.To)
	args = append(args, limit+1)
	rows, err := db.db.QueryContext(ctx, `SELECT `+logColumns+` FROM logs WHERE `+
		strings.Join(where, " AND ")+` ORDER BY trigger_time DESC, id DESC LIMIT ?`, args...)
	if err != nil {
		return driver.LogPage{}, fmt.Errorf("mysql log list: %w", err)
	}
	logs, err := scanAll(rows, scanLog)
	if err != nil {
		return driver.LogPage{}, fmt.Errorf("mysql log list: %w", err)
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

// logFilters adds the status and trigger-time conditions that LogList and
// LogCount share, so that a count walks the same indexes as the list.
func logFilters(where []string, args []any, status xjob.LogStatus, from, to int64) ([]string, []any) {
	switch status {
	case xjob.LogSuccess:
		where = append(where, sqlLogSuccess)
	case xjob.LogFail:
		where = append(where, sqlLogFailed)
	case xjob.LogRunning:
		where = append(where, sqlLogRunning)
	}
	if from != 0 {
		where, args = append(where, "trigger_time >= ?"), append(args, from)
	}
	if to != 0 {
		where, args = append(where, "trigger_time <= ?"), append(args, to)
	}
	return where, args
}

// LogsRunning returns logs triggered successfully at or before before with
// no result yet, oldest first, through logs_running.
func (db *DB) LogsRunning(ctx context.Context, before int64, limit int) ([]xjob.Log, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT `+logColumns+` FROM logs FORCE INDEX (logs_running)
		WHERE `+sqlLogRunning+` AND trigger_time <= ? ORDER BY trigger_time, id LIMIT ?`,
		before, clampLimit(limit, 1000, 10000))
	if err != nil {
		return nil, fmt.Errorf("mysql logs running: %w", err)
	}
	logs, err := scanAll(rows, scanLog)
	if err != nil {
		return nil, fmt.Errorf("mysql logs running: %w", err)
	}
	return logs, nil
}

// LogsFailedUnalarmed returns failed logs with AlarmStatus 0 triggered at
// or before before, oldest first, through logs_failed.
func (db *DB) LogsFailedUnalarmed(ctx context.Context, before int64, limit int) ([]xjob.Log, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT `+logColumns+` FROM logs FORCE INDEX (logs_failed)
		WHERE `+sqlLogFailed+` AND alarm_status = 0 AND trigger_time <= ? ORDER BY trigger_time, id LIMIT ?`,
		before, clampLimit(limit, 1000, 10000))
	if err != nil {
		return nil, fmt.Errorf("mysql logs failed unalarmed: %w", err)
	}
	logs, err := scanAll(rows, scanLog)
	if err != nil {
		return nil, fmt.Errorf("mysql logs failed unalarmed: %w", err)
	}
	return logs, nil
}

// LogDeleteBefore deletes up to limit of the oldest logs triggered before
// before, in one statement.
func (db *DB) LogDeleteBefore(ctx context.Context, before int64, limit int) (int, error) {
	var n int64
	err := db.retry(ctx, "log delete before", func() error {
		var err error
		n, err = rowsAffected(db.db.ExecContext(ctx, `DELETE FROM logs WHERE trigger_time < ? ORDER BY trigger_time, id LIMIT ?`,
			before, clampLimit(limit, 1000, 100000)))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mysql log delete before: %w", err)
	}
	return int(n), nil
}

// LogClear deletes up to p.Limit of the oldest logs of p's scope outside
// its newest p.KeepNewest and before p.Before. The newest kept log is
// looked up first (MySQL allows no LIMIT in an IN subquery); the delete
// is then one statement bounded by it.
func (db *DB) LogClear(ctx context.Context, p driver.LogClearParams) (int, error) {
	scope, args := []string{"1 = 1"}, []any{}
	if p.GroupID != 0 {
		scope, args = append(scope, "group_id = ?"), append(args, p.GroupID)
	}
	if p.JobID != 0 {
		scope, args = append(scope, "job_id = ?"), append(args, p.JobID)
	}
	if p.KeepNewest > 0 {
		var t, id int64
		err := db.db.QueryRowContext(ctx, `SELECT trigger_time, id FROM logs WHERE `+strings.Join(scope, " AND ")+
			` ORDER BY trigger_time DESC, id DESC LIMIT 1 OFFSET ?`, append(slices.Clone(args), p.KeepNewest-1)...).Scan(&t, &id)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return 0, nil // no more logs than are kept
		case err != nil:
			return 0, fmt.Errorf("mysql log clear: %w", err)
		}
		scope, args = append(scope, "(trigger_time < ? OR (trigger_time = ? AND id < ?))"), append(args, t, t, id)
	}
	if p.Before != 0 {
		scope, args = append(scope, "trigger_time < ?"), append(args, p.Before)
	}
	args = append(args, clampLimit(p.Limit, 1000, 100000))
	var n int64
	err := db.retry(ctx, "log clear", func() error {
		var err error
		n, err = rowsAffected(db.db.ExecContext(ctx, `DELETE FROM logs WHERE `+strings.Join(scope, " AND ")+
			` ORDER BY trigger_time, id LIMIT ?`, args...))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mysql log clear: %w", err)
	}
	return int(n), nil
}
