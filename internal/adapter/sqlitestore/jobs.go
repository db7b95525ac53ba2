package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

// idsJSON is ids as a JSON array: the argument of the statements that
// take a list of ids through json_each.
func idsJSON(ids []int64) string {
	b := make([]byte, 0, len(ids)*8+2)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}

// sqlJobInsert inserts a job with version and revision 1 under the id
// given, or a new one for NULL (AUTOINCREMENT keeps later ids above an
// explicit one); the shard is set by a second statement once the id is known.
const sqlJobInsert = `INSERT INTO jobs (id, name, group_id, description, author, alarm_email,
	schedule_type, schedule_conf, time_zone, misfire_strategy,
	route_strategy, handler, param, block_strategy, timeout_seconds, fail_retry_count,
	glue_type, glue_source, glue_remark, glue_updated_at, child_job_ids,
	trigger_status, trigger_last_time, trigger_next_time,
	version, revision, created_at, updated_at, after_completion, declared, applied)
	VALUES (?,?, ?,?,?,?, ?,?,?,?, ?,?,?,?,?,?, ?,?,?,?,?, ?,?,?, 1,1,?,?,?,?,?) RETURNING id`

// JobInsert stores a new job under job.ID, or a new id when it is 0; its
// shard is derived from the id. A taken id is xjob.ErrConflict.
func (db *DB) JobInsert(ctx context.Context, job xjob.Job) (xjob.Job, error) {
	var out xjob.Job
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		var err error
		out, err = db.jobInsert(ctx, job)
		return err
	})
	if err != nil {
		return xjob.Job{}, fmt.Errorf("sqlite job insert: %w", err)
	}
	return out, nil
}

// jobInsert is JobInsert's statements, run by the writer.
func (db *DB) jobInsert(ctx context.Context, job xjob.Job) (xjob.Job, error) {
	if err := idFree(ctx, db.ws.jobExists, "job", job.ID); err != nil {
		return xjob.Job{}, err
	}
	err := db.ws.jobInsert.QueryRowContext(ctx,
		nullID(job.ID), job.Name, job.GroupID, job.Description, job.Author, job.AlarmEmail,
		job.ScheduleType, job.ScheduleConf, job.TimeZone, job.MisfireStrategy,
		job.RouteStrategy, job.Handler, job.Param, job.BlockStrategy, job.TimeoutSeconds, job.FailRetryCount,
		job.GlueType, job.GlueSource, job.GlueRemark, job.GlueUpdatedAt, formatIDs(job.ChildJobIDs),
		job.TriggerStatus, job.TriggerLastTime, job.TriggerNextTime,
		job.CreatedAt, job.UpdatedAt, job.AfterCompletion.OrKeep(), job.Declared, job.Applied).Scan(&job.ID)
	if err != nil {
		return xjob.Job{}, err
	}
	job.Shard = fire.ShardOf(job.ID, db.opts.Shards)
	if _, err = db.ws.jobSetShard.ExecContext(ctx, job.Shard, job.ID); err != nil {
		return xjob.Job{}, err
	}
	job.Version, job.Revision, job.SlowMinute, job.SlowCount = 1, 1, 0, 0
	return job, nil
}

// JobGet returns one job or xjob.ErrNotFound.
func (db *DB) JobGet(ctx context.Context, id int64) (xjob.Job, error) {
	j, err := scanJob(db.rs.jobGet.QueryRowContext(ctx, id))
	if err != nil {
		return xjob.Job{}, fmt.Errorf("sqlite job get %d: %w", id, notFound(err))
	}
	return j, nil
}

// JobGetMany returns the jobs that exist among ids. A ring bucket's jobs
// are read three times in a few milliseconds (ring, dispatch, callback), so
// it first reads only each row's version (and the slow-dispatch counters,
// which change without a version bump) and serves the jobs whose version
// it has seen from memory; only the others are read whole. Every write
// of a job's content bumps its version, in any process, so a cached job
// is never served stale.
func (db *DB) JobGetMany(ctx context.Context, ids []int64) ([]xjob.Job, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	list := idsJSON(ids)
	rows, err := db.rs.jobVersions.QueryContext(ctx, list)
	if err != nil {
		return nil, fmt.Errorf("sqlite job get many: %w", err)
	}
	stamps, err := scanAll(rows, func(s scanner) (jobStamp, error) {
		var v jobStamp
		err := s.Scan(&v.id, &v.version, &v.createdAt, &v.slowMinute, &v.slowCount)
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite job get many: %w", err)
	}
	jobs, err := db.jobsStamped(ctx, stamps, true)
	if err != nil {
		return nil, fmt.Errorf("sqlite job get many: %w", err)
	}
	return jobs, nil
}

// jobStamp is what tells whether a cached job is the stored one: its id,
// version and creation time (a job deleted and inserted again under its
// id starts over at version 1), with the slow-dispatch counters, which
// change without a version bump.
type jobStamp struct{ id, version, createdAt, slowMinute, slowCount int64 }

// jobsStamped returns the jobs of stamps: from the cache when it holds
// the stamped version, else read whole (and cached). slow says whether
// the stamps carry the slow-dispatch counters; without them a cached
// job keeps the counters it was read with.
func (db *DB) jobsStamped(ctx context.Context, stamps []jobStamp, slow bool) ([]xjob.Job, error) {
	jobs := make([]xjob.Job, 0, len(stamps))
	var miss []int64
	db.jobs.mu.Lock()
	for _, st := range stamps {
		j, ok := db.jobs.m[st.id]
		if !ok || j.Version != st.version || j.CreatedAt != st.createdAt {
			miss = append(miss, st.id)
			continue
		}
		if slow {
			j.SlowMinute, j.SlowCount = st.slowMinute, int(st.slowCount)
		}
		jobs = append(jobs, j)
	}
	db.jobs.mu.Unlock()
	if len(miss) == 0 {
		return jobs, nil
	}
	rows, err := db.rs.jobGetMany.QueryContext(ctx, idsJSON(miss))
	if err != nil {
		return nil, err
	}
	read, err := scanAll(rows, scanJob)
	if err != nil {
		return nil, err
	}
	db.jobs.put(read)
	return append(jobs, read...), nil
}

// sqlLogJobs reads the job of each log among a JSON array of log ids,
// whether the log has a result, and the stamp of that job (version 0
// when it is gone).
const sqlLogJobs = `SELECT l.id, l.job_id, l.handle_code != 0, coalesce(j.version, 0), coalesce(j.created_at, 0)
	FROM logs AS l LEFT JOIN jobs AS j ON j.id = l.job_id
	WHERE l.id IN (SELECT value FROM json_each(?))`

// LogJobs returns, for the logs among logIDs that exist, each one's job
// id (jobOf), whether it has a result already (handled), and those of
// their jobs that exist, in one statement. It is what the callback needs
// before it records results (the job's children go into a success's
// message; a log with a result is answered as a repeat at once) and
// costs a fraction of LogGetMany and JobGetMany: five integers a log
// instead of every column of the log, then of a version stamp. The jobs
// are as JobGetMany returns them but for the slow-dispatch counters,
// which may be as last read: the callback does not use them.
func (db *DB) LogJobs(ctx context.Context, logIDs []int64) (jobOf map[int64]int64, handled map[int64]bool, jobs []xjob.Job, err error) {
	if len(logIDs) == 0 {
		return nil, nil, nil, nil
	}
	rows, err := db.rs.logJobs.QueryContext(ctx, idsJSON(logIDs))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sqlite log jobs: %w", err)
	}
	jobOf = make(map[int64]int64, len(logIDs))
	var stamps []jobStamp
	seen := make(map[int64]bool)
	err = func() error {
		defer rows.Close()
		for rows.Next() {
			var logID int64
			var done bool
			var st jobStamp
			if err := rows.Scan(&logID, &st.id, &done, &st.version, &st.createdAt); err != nil {
				return err
			}
			jobOf[logID] = st.id
			if done {
				if handled == nil {
					handled = map[int64]bool{}
				}
				handled[logID] = true
			}
			if st.version != 0 && !seen[st.id] {
				seen[st.id] = true
				stamps = append(stamps, st)
			}
		}
		return rows.Err()
	}()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sqlite log jobs: %w", err)
	}
	if jobs, err = db.jobsStamped(ctx, stamps, false); err != nil {
		return nil, nil, nil, fmt.Errorf("sqlite log jobs: %w", err)
	}
	return jobOf, handled, jobs, nil
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
// job at v with only the trigger times changed and the version v+1, so the
// cached copy is updated instead of being read whole again. Without it the
// scan's advance of a frequent job would make every ring and dispatch read
// of it a miss. errs[i] != nil (or Stop) leaves entry i alone; a stale
// entry is never served, as JobGetMany checks the version.
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
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		var err error
		out, err = db.jobUpdate(ctx, c, p)
		return err
	})
	if err != nil {
		return xjob.Job{}, fmt.Errorf("sqlite job update %d: %w", p.Job.ID, err)
	}
	return out, nil
}

// jobUpdate is JobUpdate's statement, run by the writer.
func (db *DB) jobUpdate(ctx context.Context, c *sql.Conn, p driver.JobUpdateParams) (xjob.Job, error) {
	j := p.Job
	out, err := scanJob(c.QueryRowContext(ctx, `UPDATE jobs SET name = ?, group_id = ?, description = ?, author = ?, alarm_email = ?,
		schedule_type = ?, schedule_conf = ?, time_zone = ?, misfire_strategy = ?,
		route_strategy = ?, handler = ?, param = ?, block_strategy = ?, timeout_seconds = ?, fail_retry_count = ?,
		glue_type = ?, glue_source = ?, glue_remark = ?, glue_updated_at = ?, child_job_ids = ?,
		trigger_status = ?, trigger_last_time = ?, trigger_next_time = ?,
		revision = ?, updated_at = ?, after_completion = ?, declared = ?, applied = ?, version = version + 1
		WHERE id = ? AND version = ? RETURNING `+jobColumns,
		j.Name, j.GroupID, j.Description, j.Author, j.AlarmEmail,
		j.ScheduleType, j.ScheduleConf, j.TimeZone, j.MisfireStrategy,
		j.RouteStrategy, j.Handler, j.Param, j.BlockStrategy, j.TimeoutSeconds, j.FailRetryCount,
		j.GlueType, j.GlueSource, j.GlueRemark, j.GlueUpdatedAt, formatIDs(j.ChildJobIDs),
		j.TriggerStatus, j.TriggerLastTime, j.TriggerNextTime,
		j.Revision, j.UpdatedAt, j.AfterCompletion.OrKeep(), j.Declared, j.Applied, j.ID, p.ExpectVersion))
	if errors.Is(err, sql.ErrNoRows) {
		err = missingOr(ctx, db.ws.jobExists, j.ID, xjob.ErrConflict)
	}
	return out, err
}

// JobAdvance records a scan's progress, conditional on the version.
func (db *DB) JobAdvance(ctx context.Context, p driver.JobAdvanceParams) error {
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		return db.advance(ctx, p)
	})
	if err != nil {
		return fmt.Errorf("sqlite job advance %d: %w", p.ID, err)
	}
	db.jobs.advanced([]driver.JobAdvanceParams{p}, nil)
	return nil
}

// JobAdvanceMany applies every advance in one write transaction, each
// conditional on its own version as JobAdvance is, in order.
func (db *DB) JobAdvanceMany(ctx context.Context, ps []driver.JobAdvanceParams) ([]error, error) {
	errs := make([]error, len(ps))
	if len(ps) == 0 {
		return errs, nil
	}
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		for i, p := range ps {
			err := db.advance(ctx, p)
			switch {
			case errors.Is(err, xjob.ErrConflict), errors.Is(err, xjob.ErrNotFound):
				errs[i] = fmt.Errorf("sqlite job advance %d: %w", p.ID, err)
			case err != nil:
				return fmt.Errorf("job %d: %w", p.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite job advance many: %w", err)
	}
	db.jobs.advanced(ps, errs)
	return errs, nil
}

// advance runs one conditional advance inside the writer's transaction.
func (db *DB) advance(ctx context.Context, p driver.JobAdvanceParams) error {
	var res sql.Result
	var err error
	if p.Stop {
		res, err = db.ws.jobStop.ExecContext(ctx, p.ID, p.ExpectVersion)
	} else {
		res, err = db.ws.jobAdvance.ExecContext(ctx, p.TriggerLastTime, p.TriggerNextTime, p.ID, p.ExpectVersion)
	}
	n, err := rowsAffected(res, err)
	if err == nil && n == 0 {
		err = missingOr(ctx, db.ws.jobExists, p.ID, xjob.ErrConflict)
	}
	return err
}

// JobRecordSlow counts a slow dispatch in minute; a count for an older
// minute than the one stored is dropped.
func (db *DB) JobRecordSlow(ctx context.Context, id int64, minute int64) error {
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		n, err := rowsAffected(db.ws.jobRecordSlow.ExecContext(ctx, minute, id))
		if err == nil && n == 0 {
			// Either missing or an out-of-date minute (nothing to do).
			err = missingOr(ctx, db.ws.jobExists, id, nil)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite job record slow %d: %w", id, err)
	}
	return nil
}

// JobDelete removes a job.
func (db *DB) JobDelete(ctx context.Context, id int64) error {
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error { return jobDelete(ctx, c, id) })
	if err != nil {
		return fmt.Errorf("sqlite job delete %d: %w", id, err)
	}
	return nil
}

func jobDelete(ctx context.Context, c *sql.Conn, id int64) error {
	n, err := rowsAffected(c.ExecContext(ctx, `DELETE FROM jobs WHERE id = ?`, id))
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
			return driver.JobPage{}, fmt.Errorf("sqlite job list: %w", badCursor(p.Cursor))
		}
		where, args = append(where, "id > ?"), append(args, after)
	}
	if p.GroupID != 0 {
		where, args = append(where, "group_id = ?"), append(args, p.GroupID)
	}
	if p.Status != nil {
		where, args = append(where, "trigger_status = ?"), append(args, int(*p.Status))
	}
	for _, f := range []struct{ col, v string }{
		{"description", p.Description}, {"handler", p.Handler}, {"author", p.Author},
	} {
		if f.v != "" {
			where, args = append(where, "instr("+f.col+", ?) > 0"), append(args, f.v)
		}
	}
	args = append(args, limit+1)
	rows, err := db.r.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE `+
		strings.Join(where, " AND ")+` ORDER BY id LIMIT ?`, args...)
	if err != nil {
		return driver.JobPage{}, fmt.Errorf("sqlite job list: %w", err)
	}
	jobs, err := scanAll(rows, scanJob)
	if err != nil {
		return driver.JobPage{}, fmt.Errorf("sqlite job list: %w", err)
	}
	var page driver.JobPage
	if len(jobs) > limit {
		jobs = jobs[:limit]
		page.Next = strconv.FormatInt(jobs[limit-1].ID, 10)
	}
	page.Jobs = jobs
	return page, nil
}

// jobsDueSQL reads through the partial index jobs_due: the literal
// trigger_status = 1 is what lets SQLite pick it.
const jobsDueSQL = `SELECT ` + jobColumns + ` FROM jobs INDEXED BY jobs_due
	WHERE trigger_status = 1 AND shard = ? AND trigger_next_time <= ?
	  AND (trigger_next_time, id) > (?, ?)
	ORDER BY trigger_next_time, id LIMIT ?`

// JobsDue returns running jobs of one shard due at or before p.Before.
func (db *DB) JobsDue(ctx context.Context, p driver.JobsDueParams) ([]xjob.Job, error) {
	limit := clampLimit(p.Limit, 1000, 100000)
	after := p.After
	if after == (driver.DueCursor{}) {
		after = driver.DueCursor{NextTime: -1 << 62}
	}
	rows, err := db.rs.jobsDue.QueryContext(ctx, p.Shard, p.Before, after.NextTime, after.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite jobs due: %w", err)
	}
	jobs, err := scanAll(rows, scanJob)
	if err != nil {
		return nil, fmt.Errorf("sqlite jobs due: %w", err)
	}
	return jobs, nil
}

// DeclarationRetire records key's retired declaration (see driver.JobStore).
func (db *DB) DeclarationRetire(ctx context.Context, key, declared string) error {
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `INSERT INTO declarations_retired (key, declared) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET declared = excluded.declared`, key, declared)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite declaration retire %q: %w", key, err)
	}
	return nil
}

// DeclarationRetired returns key's retired declaration (see driver.JobStore).
func (db *DB) DeclarationRetired(ctx context.Context, key string) (string, bool, error) {
	var declared string
	err := db.r.QueryRowContext(ctx, `SELECT declared FROM declarations_retired WHERE key = ?`, key).Scan(&declared)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("sqlite declaration retired %q: %w", key, err)
	}
	return declared, true, nil
}

// JobListByName returns the jobs named name, in id order (more than one
// only while two concurrent creates race; see driver.JobStore).
func (db *DB) JobListByName(ctx context.Context, name string) ([]xjob.Job, error) {
	if name == "" {
		return nil, nil
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE name = ? AND name != '' ORDER BY id`, name)
	if err != nil {
		return nil, fmt.Errorf("sqlite job list by name %q: %w", name, err)
	}
	jobs, err := scanAll(rows, scanJob)
	if err != nil {
		return nil, fmt.Errorf("sqlite job list by name %q: %w", name, err)
	}
	return jobs, nil
}
