package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

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
	// logs_group_failed (migration 0001): change them together.
	sqlLogFailed = `(handle_code NOT IN (0, 200) OR (handle_code = 0 AND trigger_code NOT IN (0, 200)))`
)

func scanLog(s pgx.Row) (xjob.Log, error) {
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

// occKey is a log's occurrence key: the unique key of logs_occurrence,
// (occurrence_time, occurrence_id).
type occKey struct {
	time int64
	id   string
}

// occurrenceTime is the column occurrence_time computes: the fire time
// of a scheduled occurrence, 0 for the others.
func occurrenceTime(l xjob.Log) int64 {
	if l.TriggerType == xjob.TriggerCron || l.TriggerType == xjob.TriggerMisfire {
		return l.ScheduledTime
	}
	return 0
}

func keyOf(l xjob.Log) occKey { return occKey{occurrenceTime(l), l.OccurrenceID} }

// sqlLogCreate inserts a set of logs, each unless its occurrence has a
// log already, and returns the ids and keys of those it inserted. The
// arrays come sorted by key, so that concurrent inserts of overlapping
// sets wait for each other in one order instead of deadlocking.
const sqlLogCreate = `INSERT INTO logs (occurrence_id, job_id, group_id, trigger_type,
	scheduled_time, trigger_time, trigger_code, trigger_msg, executor_address, executor_handler,
	executor_param, executor_sharding_param, executor_fail_retry_count, handle_time, handle_code,
	handle_msg, alarm_status, claim_until, version, claimed_by)
	SELECT u.*, 1, $19 FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[],
		$5::bigint[], $6::bigint[], $7::int[], $8::text[], $9::text[], $10::text[],
		$11::text[], $12::text[], $13::int[], $14::bigint[], $15::int[],
		$16::text[], $17::int[], $18::bigint[]) AS u
	ON CONFLICT (occurrence_time, occurrence_id) DO NOTHING
	RETURNING id, occurrence_time, occurrence_id`

// insertLogs runs sqlLogCreate for logs, whose keys are distinct, and
// returns the new ids by key.
func (db *DB) insertLogs(ctx context.Context, logs []xjob.Log) (map[occKey]int64, error) {
	sorted := slices.Clone(logs)
	slices.SortFunc(sorted, func(a, b xjob.Log) int {
		ka, kb := keyOf(a), keyOf(b)
		if ka.time != kb.time {
			return compareInt(ka.time, kb.time)
		}
		return strings.Compare(ka.id, kb.id)
	})
	n := len(sorted)
	occ, typ, msg, addr, handler, param, shardParam, handleMsg :=
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	job, group, sched, trig, handleTime, claim := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	trigCode, retries, handleCode, alarm := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	for i, l := range sorted {
		occ[i], job[i], group[i], typ[i] = l.OccurrenceID, l.JobID, l.GroupID, string(l.TriggerType)
		sched[i], trig[i], trigCode[i], msg[i], addr[i], handler[i] = l.ScheduledTime, l.TriggerTime, int32(l.TriggerCode), l.TriggerMsg, l.ExecutorAddress, l.ExecutorHandler
		param[i], shardParam[i], retries[i], handleTime[i], handleCode[i] = l.ExecutorParam, l.ExecutorShardingParam, int32(l.ExecutorFailRetryCount), l.HandleTime, int32(l.HandleCode)
		handleMsg[i], alarm[i], claim[i] = l.HandleMsg, int32(l.AlarmStatus), l.ClaimUntil
	}
	created := make(map[occKey]int64, n)
	err := retry(func() error {
		clear(created)
		rows, err := db.pool.Query(ctx, sqlLogCreate, occ, job, group, typ, sched, trig, trigCode, msg, addr, handler,
			param, shardParam, retries, handleTime, handleCode, handleMsg, alarm, claim, db.opts.Node)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var k occKey
			if err := rows.Scan(&id, &k.time, &k.id); err != nil {
				return err
			}
			created[k] = id
		}
		return rows.Err()
	})
	return created, err
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// logsByKey reads the logs of a set of occurrence keys.
func (db *DB) logsByKey(ctx context.Context, keys []occKey) (map[occKey]xjob.Log, error) {
	times, ids := make([]int64, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		times[i], ids[i] = k.time, k.id
	}
	rows, err := db.pool.Query(ctx, `SELECT `+logColumns+` FROM logs
		WHERE (occurrence_time, occurrence_id) IN (SELECT * FROM unnest($1::bigint[], $2::text[]))`, times, ids)
	logs, err := scanAll(rows, err, scanLog)
	if err != nil {
		return nil, err
	}
	out := make(map[occKey]xjob.Log, len(logs))
	for _, l := range logs {
		out[keyOf(l)] = l
	}
	return out, nil
}

// LogCreate stores a new log unless its OccurrenceID exists, in which case
// it returns the existing log and xjob.ErrConflict.
func (db *DB) LogCreate(ctx context.Context, l xjob.Log) (xjob.Log, error) {
	if err := validateNewLog(l); err != nil {
		return xjob.Log{}, err
	}
	// The insert and the read of the log that won are two statements: the
	// winner may be deleted in between (retention), then insert again.
	for range maxAttempts {
		created, err := db.insertLogs(ctx, []xjob.Log{l})
		if err != nil {
			return xjob.Log{}, db.wrap("log create "+l.OccurrenceID, err)
		}
		if id, ok := created[keyOf(l)]; ok {
			l.ID, l.Version = id, 1
			return l, nil
		}
		existing, err := db.logsByKey(ctx, []occKey{keyOf(l)})
		if err != nil {
			return xjob.Log{}, db.wrap("log create "+l.OccurrenceID, err)
		}
		if e, ok := existing[keyOf(l)]; ok {
			return e, fmt.Errorf("pgstore log create %s: %w", l.OccurrenceID, xjob.ErrConflict)
		}
	}
	return xjob.Log{}, fmt.Errorf("pgstore log create %s: its log kept disappearing between insert and read", l.OccurrenceID)
}

func validateNewLog(l xjob.Log) error {
	if l.OccurrenceID == "" {
		return &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "occurrenceId", Message: "is required"}}}
	}
	return nil
}

// sqlLogClaim takes over untriggered logs, each conditional on its
// version (id, version, claim until, trigger time per row), for the node
// $5.
var sqlLogClaim = `UPDATE logs l SET claim_until = c.until, trigger_time = c.at, claimed_by = $5, version = l.version + 1
	FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[]) AS c(id, expect, until, at)
	WHERE l.id = c.id AND l.version = c.expect AND l.trigger_code = 0
	RETURNING ` + prefixed("l.", logColumns)

// prefixed qualifies every column of a column list with p.
func prefixed(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// LogCreateMany claims the occurrences of logs: each is created, taken
// over (untriggered, claim expired by its TriggerTime) or reported as it
// stands. A bucket of new occurrences costs one INSERT; occurrences that
// have a log cost one read, and take-overs one conditional UPDATE. Round
// k handles the k-th log of each occurrence, so repeats within the call
// see the earlier ones' effect, as if called one by one.
func (db *DB) LogCreateMany(ctx context.Context, logs []xjob.Log) ([]driver.LogCreated, error) {
	out := make([]driver.LogCreated, len(logs))
	valid := make([]int, 0, len(logs))
	for i, l := range logs {
		if err := validateNewLog(l); err != nil {
			out[i] = driver.LogCreated{Err: err}
			continue
		}
		valid = append(valid, i)
	}
	keys := make([]occKey, len(logs))
	ordinal := map[occKey]int64{}
	for _, i := range valid {
		k := keyOf(logs[i])
		keys[i] = k
		if _, ok := ordinal[k]; !ok {
			ordinal[k] = int64(len(ordinal))
		}
	}
	for _, round := range rounds(len(valid), func(j int) int64 { return ordinal[keys[valid[j]]] }) {
		items := make([]int, len(round))
		for k, j := range round {
			items[k] = valid[j]
		}
		if err := db.claimRound(ctx, logs, keys, items, out); err != nil {
			return nil, db.wrap("log create many", err)
		}
	}
	return out, nil
}

// claimRound claims items (indexes into logs, of distinct occurrences).
// A take-over that loses to a concurrent writer (another node took the
// log over, or triggered it) reads the log again and decides again;
// each such loss is another node's progress, so the loop ends.
func (db *DB) claimRound(ctx context.Context, logs []xjob.Log, keys []occKey, items []int, out []driver.LogCreated) error {
	pending := items
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == 16 {
			return fmt.Errorf("occurrence %s: claim still contended after %d attempts", logs[pending[0]].OccurrenceID, attempt)
		}
		batch := make([]xjob.Log, len(pending))
		for k, i := range pending {
			batch[k] = logs[i]
		}
		created, err := db.insertLogs(ctx, batch)
		if err != nil {
			return err
		}
		var exist []int
		for _, i := range pending {
			if id, ok := created[keys[i]]; ok {
				l := logs[i]
				l.ID, l.Version = id, 1
				out[i] = driver.LogCreated{Outcome: driver.ClaimCreated, Log: l}
				continue
			}
			exist = append(exist, i)
		}
		if len(exist) == 0 {
			return nil
		}
		want := make([]occKey, len(exist))
		for k, i := range exist {
			want[k] = keys[i]
		}
		existing, err := db.logsByKey(ctx, want)
		if err != nil {
			return err
		}
		var again, takeover []int
		for _, i := range exist {
			prev, ok := existing[keys[i]]
			if !ok {
				again = append(again, i) // deleted since the insert: insert again
				continue
			}
			switch o := driver.ClaimOutcomeOf(prev, logs[i]); o {
			case driver.ClaimTakenOver:
				out[i] = driver.LogCreated{Outcome: o, Prev: prev}
				takeover = append(takeover, i)
			default:
				out[i] = driver.LogCreated{Outcome: o, Log: prev}
			}
		}
		if len(takeover) > 0 {
			n := len(takeover)
			ids, expect, until, at := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
			for k, i := range takeover {
				ids[k], expect[k], until[k], at[k] = out[i].Prev.ID, out[i].Prev.Version, logs[i].ClaimUntil, logs[i].TriggerTime
			}
			var taken []xjob.Log
			err := retry(func() error {
				rows, err := db.pool.Query(ctx, sqlLogClaim, ids, expect, until, at, db.opts.Node)
				taken, err = scanAll(rows, err, scanLog)
				return err
			})
			if err != nil {
				return fmt.Errorf("take over: %w", err)
			}
			byID := make(map[int64]xjob.Log, len(taken))
			for _, l := range taken {
				byID[l.ID] = l
			}
			for _, i := range takeover {
				if l, ok := byID[out[i].Prev.ID]; ok {
					out[i].Log = l
				} else {
					again = append(again, i) // lost to a concurrent writer
				}
			}
		}
		slices.Sort(again)
		pending = again
	}
	return nil
}

// LogGet returns one log or xjob.ErrNotFound.
func (db *DB) LogGet(ctx context.Context, id int64) (xjob.Log, error) {
	l, err := scanLog(db.pool.QueryRow(ctx, `SELECT `+logColumns+` FROM logs WHERE id = $1`, id))
	if err != nil {
		return xjob.Log{}, db.wrap(fmt.Sprintf("log get %d", id), notFound(err))
	}
	return l, nil
}

// LogGetMany reads the logs among ids in one query.
func (db *DB) LogGetMany(ctx context.Context, ids []int64) ([]xjob.Log, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT `+logColumns+` FROM logs WHERE id = ANY($1)`, ids)
	logs, err := scanAll(rows, err, scanLog)
	if err != nil {
		return nil, db.wrap("log get many", err)
	}
	return logs, nil
}

// LogClaim takes over an untriggered log, conditional on its version.
func (db *DB) LogClaim(ctx context.Context, p driver.LogClaimParams) (xjob.Log, error) {
	l, err := scanLog(db.pool.QueryRow(ctx, `UPDATE logs SET claim_until = $1, trigger_time = $2, claimed_by = $5, version = version + 1
		WHERE id = $3 AND version = $4 AND trigger_code = 0 RETURNING `+logColumns,
		p.ClaimUntil, p.TriggerTime, p.ID, p.ExpectVersion, db.opts.Node))
	if errors.Is(err, pgx.ErrNoRows) {
		err = db.missingOr(ctx, db.pool, "logs", p.ID, xjob.ErrConflict)
	}
	if err != nil {
		return xjob.Log{}, db.wrap(fmt.Sprintf("log claim %d", p.ID), err)
	}
	return l, nil
}

// sqlLogsCalling marks claims as calling, each conditional on its
// version: the claim no longer names its node, so ReleaseNodeClaims
// leaves it to its ClaimUntil.
var sqlLogsCalling = `UPDATE logs l SET claimed_by = '', version = l.version + 1
	FROM unnest($1::bigint[], $2::bigint[]) AS c(id, expect)
	WHERE l.id = c.id AND l.version = c.expect AND l.trigger_code = 0
	RETURNING l.id, l.version`

// LogsCalling is driver.CallFence's: one conditional UPDATE for the
// batch, under the same row locks as ReleaseNodeClaims, so either the
// release or the mark wins each log.
func (db *DB) LogsCalling(ctx context.Context, logs []driver.LogRef) ([]driver.LogRef, error) {
	if len(logs) == 0 {
		return nil, nil
	}
	// In id order, as the plan's nested loop over the arrays then locks
	// the rows; a deadlock (with a release, whose order is the index's)
	// is rolled back whole and run again.
	sorted := slices.SortedFunc(slices.Values(logs), func(a, b driver.LogRef) int { return cmp.Compare(a.ID, b.ID) })
	ids, expect := make([]int64, len(sorted)), make([]int64, len(sorted))
	for i, l := range sorted {
		ids[i], expect[i] = l.ID, l.Version
	}
	var kept []driver.LogRef
	err := retry(func() error {
		rows, err := db.pool.Query(ctx, sqlLogsCalling, ids, expect)
		kept, err = scanAll(rows, err, func(s pgx.Row) (driver.LogRef, error) {
			var r driver.LogRef
			return r, s.Scan(&r.ID, &r.Version)
		})
		return err
	})
	if err != nil {
		return nil, db.wrap("logs calling", err)
	}
	return kept, nil
}

// LogTriggered records the executor's reply to /run if none is recorded yet.
func (db *DB) LogTriggered(ctx context.Context, p driver.LogTriggeredParams) error {
	errs, err := db.LogTriggeredMany(ctx, []driver.LogTriggeredParams{p})
	if err != nil {
		return err
	}
	return errs[0]
}

// sqlLogTriggered records a set of replies to /run, each only on a log
// not triggered yet, and returns the ids it recorded.
const sqlLogTriggered = `UPDATE logs l SET executor_address = t.addr, trigger_code = t.code,
		trigger_msg = t.msg, version = l.version + 1
	FROM unnest($1::bigint[], $2::text[], $3::int[], $4::text[]) AS t(id, addr, code, msg)
	WHERE l.id = t.id AND l.trigger_code = 0
	RETURNING l.id`

// LogTriggeredMany records every reply in one statement per round (round
// k holds the k-th reply of each log, so that a repeat loses to the first
// as if called one by one).
func (db *DB) LogTriggeredMany(ctx context.Context, ps []driver.LogTriggeredParams) ([]error, error) {
	for _, p := range ps {
		if p.TriggerCode == xjob.CodeNone {
			return nil, fmt.Errorf("pgstore log triggered %d: trigger code 0 records nothing", p.ID)
		}
	}
	errs := make([]error, len(ps))
	for _, round := range rounds(len(ps), func(i int) int64 { return ps[i].ID }) {
		n := len(round)
		ids, addr, code, msg := make([]int64, n), make([]string, n), make([]int32, n), make([]string, n)
		for k, i := range round {
			p := ps[i]
			ids[k], addr[k], code[k], msg[k] = p.ID, p.ExecutorAddress, int32(p.TriggerCode), p.TriggerMsg
		}
		var done map[int64]bool
		err := retry(func() error {
			rows, err := db.pool.Query(ctx, sqlLogTriggered, ids, addr, code, msg)
			got, err := scanAll(rows, err, scanID)
			done = setOf(got)
			return err
		})
		if err != nil {
			return nil, db.wrap("log triggered many", err)
		}
		missing, err := db.missingIDs(ctx, "logs", ids, done)
		if err != nil {
			return nil, db.wrap("log triggered many", err)
		}
		for _, i := range round {
			id := ps[i].ID
			switch {
			case done[id]:
			case missing[id]:
				errs[i] = fmt.Errorf("pgstore log triggered %d: %w", id, xjob.ErrNotFound)
			default:
				errs[i] = fmt.Errorf("pgstore log triggered %d: %w", id, xjob.ErrConflict)
			}
		}
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

// sqlLogFinish records a set of results, each only on a log without one,
// and returns the logs it updated.
var sqlLogFinish = `UPDATE logs l SET handle_time = f.at, handle_code = f.code, handle_msg = f.msg,
		version = l.version + 1
	FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[]) AS f(id, at, code, msg)
	WHERE l.id = f.id AND l.handle_code = 0
	RETURNING ` + prefixed("l.", logColumns)

// LogFinishMany records every result in one statement per round (a
// second result for one log loses to the first).
func (db *DB) LogFinishMany(ctx context.Context, ps []driver.LogFinishParams) ([]driver.LogFinished, error) {
	for _, p := range ps {
		if p.HandleCode == xjob.CodeNone {
			return nil, fmt.Errorf("pgstore log finish %d: handle code 0 records nothing", p.ID)
		}
	}
	out := make([]driver.LogFinished, len(ps))
	for _, round := range rounds(len(ps), func(i int) int64 { return ps[i].ID }) {
		n := len(round)
		ids, at, code, msg := make([]int64, n), make([]int64, n), make([]int32, n), make([]string, n)
		for k, i := range round {
			p := ps[i]
			ids[k], at[k], code[k], msg[k] = p.ID, p.HandleTime, int32(p.HandleCode), p.HandleMsg
		}
		var finished []xjob.Log
		err := retry(func() error {
			rows, err := db.pool.Query(ctx, sqlLogFinish, ids, at, code, msg)
			finished, err = scanAll(rows, err, scanLog)
			return err
		})
		if err != nil {
			return nil, db.wrap("log finish many", err)
		}
		byID := make(map[int64]xjob.Log, len(finished))
		for _, l := range finished {
			byID[l.ID] = l
		}
		done := make(map[int64]bool, len(finished))
		for id := range byID {
			done[id] = true
		}
		missing, err := db.missingIDs(ctx, "logs", ids, done)
		if err != nil {
			return nil, db.wrap("log finish many", err)
		}
		for _, i := range round {
			id := ps[i].ID
			switch {
			case done[id]:
				out[i].Log = byID[id]
			case missing[id]:
				out[i].Err = fmt.Errorf("pgstore log finish %d: %w", id, xjob.ErrNotFound)
			default:
				out[i].Err = fmt.Errorf("pgstore log finish %d: %w", id, xjob.ErrConflict)
			}
		}
	}
	return out, nil
}

// LogSetAlarm compares-and-sets a log's alarm status.
func (db *DB) LogSetAlarm(ctx context.Context, p driver.LogSetAlarmParams) error {
	tag, err := db.pool.Exec(ctx, `UPDATE logs SET alarm_status = $1, version = version + 1
		WHERE id = $2 AND alarm_status = $3`, int(p.To), p.ID, int(p.From))
	if err == nil && tag.RowsAffected() == 0 {
		err = db.missingOr(ctx, db.pool, "logs", p.ID, xjob.ErrConflict)
	}
	if err != nil {
		return db.wrap(fmt.Sprintf("log set alarm %d", p.ID), err)
	}
	return nil
}

// LogList pages logs newest first; the cursor is "triggerTime:id" of the
// last log served.
func (db *DB) LogList(ctx context.Context, p driver.LogListParams) (driver.LogPage, error) {
	limit := clampLimit(p.Limit, 100, 1000)
	where := []string{"true"}
	var a args
	if p.Cursor != "" {
		ts, id, ok := strings.Cut(p.Cursor, ":")
		t, err1 := strconv.ParseInt(ts, 10, 64)
		i, err2 := strconv.ParseInt(id, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return driver.LogPage{}, fmt.Errorf("pgstore log list: %w", badCursor(p.Cursor))
		}
		where = append(where, "(trigger_time, id) < ("+a.add(t)+", "+a.add(i)+")")
	}
	if p.JobID != 0 {
		where = append(where, "job_id = "+a.add(p.JobID))
	}
	if p.GroupID != 0 {
		where = append(where, "group_id = "+a.add(p.GroupID))
	}
	where = logFilters(where, &a, p.Status, p.From, p.To)
	rows, err := db.pool.Query(ctx, `SELECT `+logColumns+` FROM logs WHERE `+
		strings.Join(where, " AND ")+` ORDER BY trigger_time DESC, id DESC LIMIT `+a.add(limit+1), a...)
	logs, err := scanAll(rows, err, scanLog)
	if err != nil {
		return driver.LogPage{}, db.wrap("log list", err)
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
	rows, err := db.pool.Query(ctx, `SELECT `+logColumns+` FROM logs
		WHERE `+sqlLogRunning+` AND trigger_time <= $1 ORDER BY trigger_time, id LIMIT $2`,
		before, clampLimit(limit, 1000, 10000))
	logs, err := scanAll(rows, err, scanLog)
	if err != nil {
		return nil, db.wrap("logs running", err)
	}
	return logs, nil
}

// LogsFailedUnalarmed returns failed logs with AlarmStatus 0 triggered at
// or before before, oldest first.
func (db *DB) LogsFailedUnalarmed(ctx context.Context, before int64, limit int) ([]xjob.Log, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+logColumns+` FROM logs
		WHERE alarm_status = 0 AND `+sqlLogFailed+` AND trigger_time <= $1 ORDER BY trigger_time, id LIMIT $2`,
		before, clampLimit(limit, 1000, 10000))
	logs, err := scanAll(rows, err, scanLog)
	if err != nil {
		return nil, db.wrap("logs failed unalarmed", err)
	}
	return logs, nil
}

// LogDeleteBefore deletes up to limit of the oldest logs triggered before
// before.
func (db *DB) LogDeleteBefore(ctx context.Context, before int64, limit int) (int, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM logs WHERE id IN (
		SELECT id FROM logs WHERE trigger_time < $1 ORDER BY trigger_time, id LIMIT $2)`,
		before, clampLimit(limit, 1000, 100000))
	if err != nil {
		return 0, db.wrap("log delete before", err)
	}
	return int(tag.RowsAffected()), nil
}

// LogClear deletes up to p.Limit of the oldest logs of p's scope outside
// its newest p.KeepNewest and before p.Before, in one statement.
func (db *DB) LogClear(ctx context.Context, p driver.LogClearParams) (int, error) {
	var a args
	scope := []string{"true"}
	if p.GroupID != 0 {
		scope = append(scope, "group_id = "+a.add(p.GroupID))
	}
	if p.JobID != 0 {
		scope = append(scope, "job_id = "+a.add(p.JobID))
	}
	where := strings.Join(scope, " AND ")
	cond := where
	if p.KeepNewest > 0 {
		cond += ` AND id NOT IN (SELECT id FROM logs WHERE ` + where + ` ORDER BY trigger_time DESC, id DESC LIMIT ` + a.add(p.KeepNewest) + `)`
	}
	if p.Before != 0 {
		cond += " AND trigger_time < " + a.add(p.Before)
	}
	tag, err := db.pool.Exec(ctx, `DELETE FROM logs WHERE id IN (
		SELECT id FROM logs WHERE `+cond+` ORDER BY trigger_time, id LIMIT `+a.add(clampLimit(p.Limit, 1000, 100000))+`)`, a...)
	if err != nil {
		return 0, db.wrap("log clear", err)
	}
	return int(tag.RowsAffected()), nil
}
