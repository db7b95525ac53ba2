package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

const jobColumns = `id, name, shard, group_id, description, author, alarm_email,
	schedule_type, schedule_conf, time_zone, misfire_strategy,
	route_strategy, handler, param, block_strategy, timeout_seconds, fail_retry_count,
	glue_type, glue_source, glue_remark, glue_updated_at, child_job_ids,
	trigger_status, trigger_last_time, trigger_next_time,
	version, revision, slow_minute, slow_count, created_at, updated_at, after_completion, declared, applied`

type scanner interface{ Scan(dest ...any) error }

// scanAll reads every row of rows with scan, then closes rows.
func scanAll[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func scanJob(s scanner) (xjob.Job, error) {
	var j xjob.Job
	var children string
	err := s.Scan(&j.ID, &j.Name, &j.Shard, &j.GroupID, &j.Description, &j.Author, &j.AlarmEmail,
		&j.ScheduleType, &j.ScheduleConf, &j.TimeZone, &j.MisfireStrategy,
		&j.RouteStrategy, &j.Handler, &j.Param, &j.BlockStrategy, &j.TimeoutSeconds, &j.FailRetryCount,
		&j.GlueType, &j.GlueSource, &j.GlueRemark, &j.GlueUpdatedAt, &children,
		&j.TriggerStatus, &j.TriggerLastTime, &j.TriggerNextTime,
		&j.Version, &j.Revision, &j.SlowMinute, &j.SlowCount, &j.CreatedAt, &j.UpdatedAt, &j.AfterCompletion, &j.Declared, &j.Applied)
	if err != nil {
		return xjob.Job{}, err
	}
	if j.ChildJobIDs, err = xjob.ParseChildJobIDs(children); err != nil {
		return xjob.Job{}, fmt.Errorf("job %d child ids: %w", j.ID, err)
	}
	return j, nil
}

func formatIDs(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ",")
}

const sqlJobInsert = `INSERT INTO jobs (id, shard, name, group_id, description, author, alarm_email,
	schedule_type, schedule_conf, time_zone, misfire_strategy,
	route_strategy, handler, param, block_strategy, timeout_seconds, fail_retry_count,
	glue_type, glue_source, glue_remark, glue_updated_at, child_job_ids,
	trigger_status, trigger_last_time, trigger_next_time,
	version, revision, slow_minute, slow_count, created_at, updated_at, after_completion, declared, applied)
	VALUES (?,?,?,?,?,?,?, ?,?,?,?, ?,?,?,?,?,?, ?,?,?,?,?, ?,?,?, 1,1,0,0,?,?,?,?,?)`

// JobInsert stores a new job under job.ID, or a new id when it is 0; its
// shard is derived from the id. A taken id is xjob.ErrConflict.
func (db *DB) JobInsert(ctx context.Context, job xjob.Job) (xjob.Job, error) {
	var out xjob.Job
	var err error
	if job.ID != 0 { // one statement: the shard is known
		err = db.retry(ctx, "job insert", func() error {
			out, err = db.jobInsert(ctx, db.db, job)
			return err
		})
	} else {
		err = db.tx(ctx, "job insert", func(tx *sql.Tx) error {
			out, err = db.jobInsert(ctx, tx, job)
			return err
		})
	}
	if err != nil {
		return xjob.Job{}, fmt.Errorf("mysql job insert: %w", err)
	}
	return out, nil
}

// jobInsert inserts job through e. A new id's shard is set by a second
// statement once the id is known, so e must be a transaction then.
func (db *DB) jobInsert(ctx context.Context, e execer, job xjob.Job) (xjob.Job, error) {
	var id any
	if job.ID != 0 {
		id, job.Shard = job.ID, fire.ShardOf(job.ID, db.opts.Shards)
	} else {
		job.Shard = 0
	}
	res, err := e.ExecContext(ctx, sqlJobInsert,
		id, job.Shard, job.Name, job.GroupID, job.Description, job.Author, job.AlarmEmail,
		job.ScheduleType, job.ScheduleConf, job.TimeZone, job.MisfireStrategy,
		job.RouteStrategy, job.Handler, job.Param, job.BlockStrategy, job.TimeoutSeconds, job.FailRetryCount,
		job.GlueType, job.GlueSource, job.GlueRemark, job.GlueUpdatedAt, formatIDs(job.ChildJobIDs),
		job.TriggerStatus, job.TriggerLastTime, job.TriggerNextTime,
		job.CreatedAt, job.UpdatedAt, job.AfterCompletion.OrKeep(), job.Declared, job.Applied)
	if isCode(err, errDupEntry) {
		return xjob.Job{}, fmt.Errorf("job id %d is taken: %w", job.ID, xjob.ErrConflict)
	}
	if err != nil {
		return xjob.Job{}, err
	}
	if job.ID == 0 {
		if job.ID, err = res.LastInsertId(); err != nil {
			return xjob.Job{}, err
		}
		job.Shard = fire.ShardOf(job.ID, db.opts.Shards)
		if job.Shard != 0 {
			if _, err := e.ExecContext(ctx, `UPDATE jobs SET shard = ? WHERE id = ?`, job.Shard, job.ID); err != nil {
				return xjob.Job{}, err
			}
		}
	}
	job.Version, job.Revision, job.SlowMinute, job.SlowCount = 1, 1, 0, 0
	job.AfterCompletion = job.AfterCompletion.OrKeep()
	return job, nil
}

// JobGet returns one job or xjob.ErrNotFound.
func (db *DB) JobGet(ctx context.Context, id int64) (xjob.Job, error) {
	j, err := scanJob(db.st.jobGet.QueryRowContext(ctx, id))
	if err != nil {
		return xjob.Job{}, fmt.Errorf("mysql job get %d: %w", id, notFound(err))
	}
	return j, nil
}

// JobGetMany returns the jobs that exist among ids. A ring bucket's jobs
// are read three times in a few milliseconds (ring, dispatch, callback), so
// it first reads only each row's version (and the slow-dispatch counters,
// which change without a version bump) and serves the jobs whose version
// it has seen from memory; only the others are read whole. Every write of
// a job's content bumps its version, on any node, so a cached job is
// never served stale.
func (db *DB) JobGetMany(ctx context.Context, ids []int64) ([]xjob.Job, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ids = uniqueIDs(ids)
	rows, err := db.db.QueryContext(ctx, `SELECT id, version, created_at, slow_minute, slow_count FROM jobs
		WHERE id IN (`+marks(len(ids))+`)`, int64Args(ids)...)
	if err != nil {
		return nil, fmt.Errorf("mysql job get many: %w", err)
	}
	type stamp struct{ id, version, createdAt, slowMinute, slowCount int64 }
	stamps, err := scanAll(rows, func(s scanner) (stamp, error) {
		var v stamp
		err := s.Scan(&v.id, &v.version, &v.createdAt, &v.slowMinute, &v.slowCount)
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("mysql job get many: %w", err)
	}
	jobs := make([]xjob.Job, 0, len(stamps))
	var miss []int64
	db.jobs.mu.Lock()
	for _, st := range stamps {
		j, ok := db.jobs.m[st.id]
		if !ok || j.Version != st.version || j.CreatedAt != st.createdAt {
			miss = append(miss, st.id)
			continue
		}
		j.SlowMinute, j.SlowCount = st.slowMinute, int(st.slowCount)
		jobs = append(jobs, j)
	}
	db.jobs.mu.Unlock()
	if len(miss) == 0 {
		return jobs, nil
	}
	rows, err = db.db.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id IN (`+marks(len(miss))+`)`, int64Args(miss)...)
	if err != nil {
		return nil, fmt.Errorf("mysql job get many: %w", err)
	}
	read, err := scanAll(rows, scanJob)
	if err != nil {
		return nil, fmt.Errorf("mysql job get many: %w", err)
	}
	db.jobs.put(read)
	return append(jobs, read...), nil
}

// uniqueIDs returns ids without repeats (sorted), for IN lists.
func uniqueIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// jobCache holds jobs as JobGetMany last read them whole, for serving
// again while their version is unchanged.
type jobCache struct {
	mu sync.Mutex
	m  map[int64]xjob.Job
}

// jobCacheMax bounds the cache; a full cache starts over.
const jobCacheMax = 100_000

// advanced carries committed advances into the cache: an advance
// conditional on version v that committed leaves the row as the cached
// job at v with only the trigger times changed and the version v+1, so
// the cached copy is updated instead of being read whole again. errs[i]
// != nil (or Stop) leaves entry i alone; a stale entry is never served,
// as JobGetMany checks the version.
func (c *jobCache) advanced(ps []driver.JobAdvanceParams, errs []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range ps {
		if p.Stop || (errs != nil && errs[i] != nil) {
			continue
		}
		j, ok := c.m[p.ID]
		if !ok || j.Version != p.ExpectVersion {
			continue
		}
		j.Version++
		j.TriggerLastTime, j.TriggerNextTime = p.TriggerLastTime, p.TriggerNextTime
		c.m[p.ID] = j
	}
}

func (c *jobCache) put(jobs []xjob.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m)+len(jobs) > jobCacheMax {
		c.m = make(map[int64]xjob.Job, len(jobs))
	}
	for _, j := range jobs {
		c.m[j.ID] = j
	}
}

// JobUpdate replaces a job if its version is ExpectVersion. ID, shard,
// creation time and the slow-dispatch counters are kept from the store.
func (db *DB) JobUpdate(ctx context.Context, p driver.JobUpdateParams) (xjob.Job, error) {
	var out xjob.Job
	err := db.tx(ctx, "job update", func(tx *sql.Tx) error {
		var err error
		out, err = db.jobUpdate(ctx, tx, p)
		return err
	})
	if err != nil {
		return xjob.Job{}, fmt.Errorf("mysql job update %d: %w", p.Job.ID, err)
	}
	return out, nil
}

// jobUpdate is JobUpdate's statements, inside tx (it reads the row it wrote).
func (db *DB) jobUpdate(ctx context.Context, tx *sql.Tx, p driver.JobUpdateParams) (xjob.Job, error) {
	j := p.Job
	n, err := rowsAffected(tx.ExecContext(ctx, `UPDATE jobs SET name = ?, group_id = ?, description = ?, author = ?, alarm_email = ?,
		schedule_type = ?, schedule_conf = ?, time_zone = ?, misfire_strategy = ?,
		route_strategy = ?, handler = ?, param = ?, block_strategy = ?, timeout_seconds = ?, fail_retry_count = ?,
		glue_type = ?, glue_source = ?, glue_remark = ?, glue_updated_at = ?, child_job_ids = ?,
		trigger_status = ?, trigger_last_time = ?, trigger_next_time = ?,
		revision = ?, updated_at = ?, after_completion = ?, declared = ?, applied = ?, version = version + 1
		WHERE id = ? AND version = ?`,
		j.Name, j.GroupID, j.Description, j.Author, j.AlarmEmail,
		j.ScheduleType, j.ScheduleConf, j.TimeZone, j.MisfireStrategy,
		j.RouteStrategy, j.Handler, j.Param, j.BlockStrategy, j.TimeoutSeconds, j.FailRetryCount,
		j.GlueType, j.GlueSource, j.GlueRemark, j.GlueUpdatedAt, formatIDs(j.ChildJobIDs),
		j.TriggerStatus, j.TriggerLastTime, j.TriggerNextTime,
		j.Revision, j.UpdatedAt, j.AfterCompletion.OrKeep(), j.Declared, j.Applied, j.ID, p.ExpectVersion))
	if err != nil {
		return xjob.Job{}, err
	}
	if n == 0 {
		return xjob.Job{}, missingOr(ctx, tx, sqlJobExists, j.ID, xjob.ErrConflict)
	}
	return scanJob(tx.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, j.ID))
}

const sqlJobExists = `SELECT 1 FROM jobs WHERE id = ?`

// JobAdvance records a scan's progress, conditional on the version: one
// statement.
func (db *DB) JobAdvance(ctx context.Context, p driver.JobAdvanceParams) error {
	err := db.retry(ctx, "job advance", func() error {
		var res sql.Result
		var err error
		if p.Stop {
			res, err = db.st.jobStop.ExecContext(ctx, p.ID, p.ExpectVersion)
		} else {
			res, err = db.st.jobAdvance.ExecContext(ctx, p.TriggerLastTime, p.TriggerNextTime, p.ID, p.ExpectVersion)
		}
		n, err := rowsAffected(res, err)
		if err == nil && n == 0 {
			err = missingOr(ctx, db.db, sqlJobExists, p.ID, xjob.ErrConflict)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("mysql job advance %d: %w", p.ID, err)
	}
	db.jobs.advanced([]driver.JobAdvanceParams{p}, nil)
	return nil
}

// JobAdvanceMany applies every advance in one transaction of three
// statements, whatever their number: it locks the jobs' rows and reads
// their versions (SELECT … FOR UPDATE, in id order, so concurrent calls
// cannot deadlock on them), decides each advance in order as JobAdvance
// would against the versions the earlier items left, and writes each
// job's final state in one UPDATE.
func (db *DB) JobAdvanceMany(ctx context.Context, ps []driver.JobAdvanceParams) ([]error, error) {
	errs := make([]error, len(ps))
	if len(ps) == 0 {
		return errs, nil
	}
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	ids = uniqueIDs(ids)
	type state struct {
		version, last, next int64
		stop, changed       bool
	}
	err := db.tx(ctx, "job advance many", func(tx *sql.Tx) error {
		clear(errs)
		rows, err := tx.QueryContext(ctx, `SELECT id, version FROM jobs WHERE id IN (`+marks(len(ids))+`) FOR UPDATE`, int64Args(ids)...)
		if err != nil {
			return err
		}
		cur := map[int64]*state{}
		type idv struct{ id, v int64 }
		got, err := scanAll(rows, func(s scanner) (idv, error) {
			var r idv
			return r, s.Scan(&r.id, &r.v)
		})
		if err != nil {
			return err
		}
		for _, r := range got {
			cur[r.id] = &state{version: r.v}
		}
		for i, p := range ps {
			st, ok := cur[p.ID]
			switch {
			case !ok:
				errs[i] = fmt.Errorf("mysql job advance %d: %w", p.ID, xjob.ErrNotFound)
			case st.version != p.ExpectVersion:
				errs[i] = fmt.Errorf("mysql job advance %d: %w", p.ID, xjob.ErrConflict)
			default:
				st.version++
				st.changed = true
				if p.Stop {
					st.stop, st.last, st.next = true, 0, 0
				} else {
					st.last, st.next = p.TriggerLastTime, p.TriggerNextTime
				}
			}
		}
		var w updateCase
		for _, id := range ids {
			st := cur[id]
			if st == nil || !st.changed {
				continue
			}
			status := any(nil) // unchanged
			if st.stop {
				status = int(xjob.StatusStopped)
			}
			w.add(id, st.last, st.next, st.version, status)
		}
		if w.n == 0 {
			return nil
		}
		_, err = tx.ExecContext(ctx, w.sql(), w.args()...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mysql job advance many: %w", err)
	}
	db.jobs.advanced(ps, errs)
	return errs, nil
}

// updateCase builds JobAdvanceMany's one UPDATE: each column set by a
// CASE over the ids.
type updateCase struct {
	n                       int
	ids                     []any
	last, next, ver, status []any
	hasStatus               bool
}

func (u *updateCase) add(id, last, next, version int64, status any) {
	u.n++
	u.ids = append(u.ids, id)
	u.last = append(u.last, id, last)
	u.next = append(u.next, id, next)
	u.ver = append(u.ver, id, version)
	if status != nil {
		u.hasStatus = true
		u.status = append(u.status, id, status)
	}
}

func (u *updateCase) sql() string {
	whens := strings.Repeat(" WHEN ? THEN ?", u.n)
	q := `UPDATE jobs SET trigger_last_time = CASE id` + whens + ` END, trigger_next_time = CASE id` + whens +
		` END, version = CASE id` + whens + ` END`
	if u.hasStatus {
		q += `, trigger_status = CASE id` + strings.Repeat(" WHEN ? THEN ?", len(u.status)/2) + ` ELSE trigger_status END`
	}
	return q + ` WHERE id IN (` + marks(u.n) + `)`
}

func (u *updateCase) args() []any {
	out := slices.Concat(u.last, u.next, u.ver)
	if u.hasStatus {
		out = append(out, u.status...)
	}
	return append(out, u.ids...)
}

// JobRecordSlow counts a slow dispatch in minute; a count for an older
// minute than the one stored is dropped.
func (db *DB) JobRecordSlow(ctx context.Context, id int64, minute int64) error {
	err := db.retry(ctx, "job record slow", func() error {
		n, err := rowsAffected(db.st.jobRecordSlow.ExecContext(ctx, minute, minute, id, minute))
		if err == nil && n == 0 {
			// Either missing or an out-of-date minute (nothing to do).
			err = missingOr(ctx, db.db, sqlJobExists, id, nil)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("mysql job record slow %d: %w", id, err)
	}
	return nil
}

// JobDelete removes a job.
func (db *DB) JobDelete(ctx context.Context, id int64) error {
	if err := jobDelete(ctx, db.db, id); err != nil {
		return fmt.Errorf("mysql job delete %d: %w", id, err)
	}
	return nil
}

func jobDelete(ctx context.Context, e execer, id int64) error {
	n, err := rowsAffected(e.ExecContext(ctx, `DELETE FROM jobs WHERE id = ?`, id))
	if err == nil && n == 0 {
		err = xjob.ErrNotFound
	}
	return err
}

// JobList pages through jobs in id order. The cursor is the last id served.
func (db *DB) JobList(ctx context.Context, p driver.JobListParams) (driver.JobPage, error) {
	limit := clampLimit(p.Limit, 100, 1000)
	where := []string{"1 = 1"}
	var args []any
	if p.Cursor != "" {
		after, err := strconv.ParseInt(p.Cursor, 10, 64)
		if err != nil {
			return driver.JobPage{}, fmt.Errorf("mysql job list: %w", badCursor(p.Cursor))
		}
		where, args = append(where, "id > ?"), append(args, after)
	}
	if p.GroupID != 0 {
		where, args = append(where, "group_id = ?"), append(args, p.GroupID)
	}
	where, args = jobFilters(where, args, p.Status, p.Description, p.Handler, p.Author)
	args = append(args, limit+1)
	rows, err := db.db.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE `+
		strings.Join(where, " AND ")+` ORDER BY id LIMIT ?`, args...)
	if err != nil {
		return driver.JobPage{}, fmt.Errorf("mysql job list: %w", err)
	}
	jobs, err := scanAll(rows, scanJob)
	if err != nil {
		return driver.JobPage{}, fmt.Errorf("mysql job list: %w", err)
	}
	var page driver.JobPage
	if len(jobs) > limit {
		jobs = jobs[:limit]
		page.Next = strconv.FormatInt(jobs[limit-1].ID, 10)
	}
	page.Jobs = jobs
	return page, nil
}

// jobFilters adds the status and substring conditions JobList and JobCount
// share. INSTR on the binary collation is a case-sensitive substring
// match, as SQLite's instr.
func jobFilters(where []string, args []any, status *xjob.TriggerStatus, description, handler, author string) ([]string, []any) {
	if status != nil {
		where, args = append(where, "trigger_status = ?"), append(args, int(*status))
	}
	for _, f := range []struct{ col, v string }{
		{"description", description}, {"handler", handler}, {"author", author},
	} {
		if f.v != "" {
			where, args = append(where, "INSTR("+f.col+", ?) > 0"), append(args, f.v)
		}
	}
	return where, args
}

// sqlJobsDue reads the due index jobs_due: trigger_status = 1 and the
// shard are its equality prefix, so the range on trigger_next_time comes
// out in index order and the LIMIT stops the read. The keyset condition
// is spelled out, not a row comparison, so the optimizer ranges on it.
const sqlJobsDue = `SELECT ` + jobColumns + ` FROM jobs FORCE INDEX (jobs_due)
	WHERE trigger_status = 1 AND shard = ? AND trigger_next_time <= ?
	  AND (trigger_next_time > ? OR (trigger_next_time = ? AND id > ?))
	ORDER BY trigger_next_time, id LIMIT ?`

// JobsDue returns running jobs of one shard due at or before p.Before.
func (db *DB) JobsDue(ctx context.Context, p driver.JobsDueParams) ([]xjob.Job, error) {
	limit := clampLimit(p.Limit, 1000, 100000)
	after := p.After
	if after == (driver.DueCursor{}) {
		after = driver.DueCursor{NextTime: -1 << 62}
	}
	rows, err := db.st.jobsDue.QueryContext(ctx, p.Shard, p.Before, after.NextTime, after.NextTime, after.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("mysql jobs due: %w", err)
	}
	jobs, err := scanAll(rows, scanJob)
	if err != nil {
		return nil, fmt.Errorf("mysql jobs due: %w", err)
	}
	return jobs, nil
}

// DeclarationRetire records key's retired declaration (see driver.JobStore).
func (db *DB) DeclarationRetire(ctx context.Context, key, declared string) error {
	err := db.retry(ctx, "declaration retire", func() error {
		_, err := db.db.ExecContext(ctx, "INSERT INTO declarations_retired (`key`, declared) VALUES (?, ?) "+
			"ON DUPLICATE KEY UPDATE declared = VALUES(declared)", key, declared)
		return err
	})
	if err != nil {
		return fmt.Errorf("mysql declaration retire %q: %w", key, err)
	}
	return nil
}

// DeclarationRetired returns key's retired declaration (see driver.JobStore).
func (db *DB) DeclarationRetired(ctx context.Context, key string) (string, bool, error) {
	var declared string
	err := db.db.QueryRowContext(ctx, "SELECT declared FROM declarations_retired WHERE `key` = ?", key).Scan(&declared)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("mysql declaration retired %q: %w", key, err)
	}
	return declared, true, nil
}

// JobListByName returns the jobs named name, in id order (more than one
// only while two concurrent creates race; see driver.JobStore).
func (db *DB) JobListByName(ctx context.Context, name string) ([]xjob.Job, error) {
	if name == "" {
		return nil, nil
	}
	rows, err := db.db.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE name = ? ORDER BY id`, name)
	if err != nil {
		return nil, fmt.Errorf("mysql job list by name %q: %w", name, err)
	}
	jobs, err := scanAll(rows, scanJob)
	if err != nil {
		return nil, fmt.Errorf("mysql job list by name %q: %w", name, err)
	}
	return jobs, nil
}
