package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

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

func scanJob(s pgx.Row) (xjob.Job, error) {
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

// scanAll reads every row of rows with scan, then closes rows.
func scanAll[T any](rows pgx.Rows, err error, scan func(pgx.Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
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

func formatIDs(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ",")
}

// sqlJobInsert inserts a job with version and revision 1 under the id
// $1, or a new one from the identity sequence when $1 is NULL; the shard
// is set by a second statement of the transaction once the id is known.
const sqlJobInsert = `INSERT INTO jobs (id, name, group_id, description, author, alarm_email,
	schedule_type, schedule_conf, time_zone, misfire_strategy,
	route_strategy, handler, param, block_strategy, timeout_seconds, fail_retry_count,
	glue_type, glue_source, glue_remark, glue_updated_at, child_job_ids,
	trigger_status, trigger_last_time, trigger_next_time,
	version, revision, created_at, updated_at, after_completion, declared, applied)
	VALUES (coalesce($1, nextval(pg_get_serial_sequence('jobs', 'id'))), $2, $3, $4, $5, $6,
	$7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24,
	1, 1, $25, $26, $27, $28, $29)
	ON CONFLICT (id) DO NOTHING RETURNING id`

// JobInsert stores a new job under job.ID, or a new id when it is 0; its
// shard is derived from the id. A taken id is xjob.ErrConflict.
func (db *DB) JobInsert(ctx context.Context, job xjob.Job) (xjob.Job, error) {
	var out xjob.Job
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if job.ID != 0 {
			if err := lockForExplicitIDs(ctx, tx, "jobs"); err != nil {
				return err
			}
		}
		var err error
		out, err = db.jobInsert(ctx, tx, job)
		return err
	})
	if err != nil {
		return xjob.Job{}, db.wrap("job insert", err)
	}
	return out, nil
}

// lockForExplicitIDs makes an insert under an explicit id safe for the
// identity sequence of table. PostgreSQL's sequence does not follow an
// explicit id, so the insert moves it past the id (setval), and setval
// must not run while another transaction draws from the sequence, or it
// could move it back under an id already handed out. Every draw happens
// inside an INSERT, which holds ROW EXCLUSIVE on the table; SHARE ROW
// EXCLUSIVE waits for those inserts and keeps new ones out until commit.
// Explicit ids are rare (imports, change sets that restore a job), so
// the pause is too. A transaction that may insert under explicit ids
// takes it before its first write to the table, so that two of them never
// upgrade their locks in opposite orders.
func lockForExplicitIDs(ctx context.Context, tx pgx.Tx, table string) error {
	_, err := tx.Exec(ctx, `LOCK TABLE `+table+` IN SHARE ROW EXCLUSIVE MODE`)
	return err
}

// bumpSequence moves table's identity sequence past an explicit id, so
// that later ids are above it (SQLite's AUTOINCREMENT does the same). The
// caller holds lockForExplicitIDs.
func bumpSequence(ctx context.Context, tx pgx.Tx, table string, id int64) error {
	// A sequence never drawn from (is_called false) hands out last_value
	// next; one drawn from, last_value + 1.
	_, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence($1, 'id'), $2)
		FROM `+table+`_id_seq WHERE (CASE WHEN is_called THEN last_value ELSE last_value - 1 END) < $2`, table, id)
	return err
}

// jobInsert is JobInsert's statements, in the caller's transaction.
func (db *DB) jobInsert(ctx context.Context, tx pgx.Tx, job xjob.Job) (xjob.Job, error) {
	var explicit *int64
	if job.ID != 0 {
		explicit = &job.ID
	}
	err := tx.QueryRow(ctx, sqlJobInsert,
		explicit, job.Name, job.GroupID, job.Description, job.Author, job.AlarmEmail,
		job.ScheduleType, job.ScheduleConf, job.TimeZone, job.MisfireStrategy,
		job.RouteStrategy, job.Handler, job.Param, job.BlockStrategy, job.TimeoutSeconds, job.FailRetryCount,
		job.GlueType, job.GlueSource, job.GlueRemark, job.GlueUpdatedAt, formatIDs(job.ChildJobIDs),
		job.TriggerStatus, job.TriggerLastTime, job.TriggerNextTime,
		job.CreatedAt, job.UpdatedAt, job.AfterCompletion.OrKeep(), job.Declared, job.Applied).Scan(&job.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return xjob.Job{}, fmt.Errorf("job id %d is taken: %w", job.ID, xjob.ErrConflict)
	}
	if err != nil {
		return xjob.Job{}, err
	}
	if explicit != nil {
		if err := bumpSequence(ctx, tx, "jobs", job.ID); err != nil {
			return xjob.Job{}, err
		}
	}
	job.Shard = fire.ShardOf(job.ID, db.opts.Shards)
	if _, err = tx.Exec(ctx, `UPDATE jobs SET shard = $1 WHERE id = $2`, job.Shard, job.ID); err != nil {
		return xjob.Job{}, err
	}
	job.Version, job.Revision, job.SlowMinute, job.SlowCount = 1, 1, 0, 0
	return job, nil
}

// JobGet returns one job or xjob.ErrNotFound.
func (db *DB) JobGet(ctx context.Context, id int64) (xjob.Job, error) {
	j, err := scanJob(db.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, id))
	if err != nil {
		return xjob.Job{}, db.wrap(fmt.Sprintf("job get %d", id), notFound(err))
	}
	return j, nil
}

// JobGetMany returns the jobs that exist among ids. A ring bucket's jobs
// are read three times in a few milliseconds (ring, dispatch, callback), so
// it first reads only each row's version (and the slow-dispatch counters,
// which change without a version bump) and serves the jobs whose version
// it has seen from memory; only the others are read whole. Every write
// of a job's content bumps its version, on any node, so a cached job is
// never served stale.
func (db *DB) JobGetMany(ctx context.Context, ids []int64) ([]xjob.Job, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT id, version, created_at, slow_minute, slow_count FROM jobs
		WHERE id = ANY($1)`, ids)
	type stamp struct{ id, version, createdAt, slowMinute, slowCount int64 }
	stamps, err := scanAll(rows, err, func(s pgx.Row) (stamp, error) {
		var v stamp
		err := s.Scan(&v.id, &v.version, &v.createdAt, &v.slowMinute, &v.slowCount)
		return v, err
	})
	if err != nil {
		return nil, db.wrap("job get many", err)
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
	rows, err = db.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ANY($1)`, miss)
	read, err := scanAll(rows, err, scanJob)
	if err != nil {
		return nil, db.wrap("job get many", err)
	}
	db.jobs.put(read)
	return append(jobs, read...), nil
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
// cached copy is updated instead of being read whole again. errs[i] != nil
// (or Stop) leaves entry i alone; a stale entry is never served, as
// JobGetMany checks the version.
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
	out, err := db.jobUpdate(ctx, db.pool, p)
	if err != nil {
		return xjob.Job{}, db.wrap(fmt.Sprintf("job update %d", p.Job.ID), err)
	}
	return out, nil
}

// jobUpdate is JobUpdate's statement: one conditional UPDATE, whose
// WHERE PostgreSQL re-checks on the row's latest version when a
// concurrent writer got there first, so exactly one of two racing
// updates of one version wins.
func (db *DB) jobUpdate(ctx context.Context, q querier, p driver.JobUpdateParams) (xjob.Job, error) {
	j := p.Job
	out, err := scanJob(q.QueryRow(ctx, `UPDATE jobs SET name = $1, group_id = $2, description = $3, author = $4, alarm_email = $5,
		schedule_type = $6, schedule_conf = $7, time_zone = $8, misfire_strategy = $9,
		route_strategy = $10, handler = $11, param = $12, block_strategy = $13, timeout_seconds = $14, fail_retry_count = $15,
		glue_type = $16, glue_source = $17, glue_remark = $18, glue_updated_at = $19, child_job_ids = $20,
		trigger_status = $21, trigger_last_time = $22, trigger_next_time = $23,
		revision = $24, updated_at = $25, after_completion = $26, declared = $27, applied = $28, version = version + 1
		WHERE id = $29 AND version = $30 RETURNING `+jobColumns,
		j.Name, j.GroupID, j.Description, j.Author, j.AlarmEmail,
		j.ScheduleType, j.ScheduleConf, j.TimeZone, j.MisfireStrategy,
		j.RouteStrategy, j.Handler, j.Param, j.BlockStrategy, j.TimeoutSeconds, j.FailRetryCount,
		j.GlueType, j.GlueSource, j.GlueRemark, j.GlueUpdatedAt, formatIDs(j.ChildJobIDs),
		j.TriggerStatus, j.TriggerLastTime, j.TriggerNextTime,
		j.Revision, j.UpdatedAt, j.AfterCompletion.OrKeep(), j.Declared, j.Applied, j.ID, p.ExpectVersion))
	if errors.Is(err, pgx.ErrNoRows) {
		err = db.missingOr(ctx, q, "jobs", j.ID, xjob.ErrConflict)
	}
	return out, err
}

// JobAdvance records a scan's progress, conditional on the version.
func (db *DB) JobAdvance(ctx context.Context, p driver.JobAdvanceParams) error {
	errs, err := db.JobAdvanceMany(ctx, []driver.JobAdvanceParams{p})
	if err != nil {
		return err
	}
	return errs[0]
}

// sqlJobAdvance applies a set of advances in one statement: each row of
// the arrays is one conditional advance (id, expected version, last and
// next time, stop), applied only where the version still matches. It
// returns the ids it advanced.
const sqlJobAdvance = `UPDATE jobs j SET
		trigger_status    = CASE WHEN a.stop THEN 0 ELSE j.trigger_status END,
		trigger_last_time = CASE WHEN a.stop THEN 0 ELSE a.last END,
		trigger_next_time = CASE WHEN a.stop THEN 0 ELSE a.next END,
		version = j.version + 1
	FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bool[]) AS a(id, expect, last, next, stop)
	WHERE j.id = a.id AND j.version = a.expect
	RETURNING j.id`

// JobAdvanceMany applies the advances in one statement per round, each
// conditional on its own version as JobAdvance is. Round k holds the
// k-th advance of each job, so that two advances of one job in one call
// take effect in order, as if called one by one (one statement cannot
// update a row twice); a scan page has each job once, so one round.
func (db *DB) JobAdvanceMany(ctx context.Context, ps []driver.JobAdvanceParams) ([]error, error) {
	errs := make([]error, len(ps))
	if len(ps) == 0 {
		return errs, nil
	}
	for _, round := range rounds(len(ps), func(i int) int64 { return ps[i].ID }) {
		n := len(round)
		ids, expect, last, next := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		stop := make([]bool, n)
		for k, i := range round {
			p := ps[i]
			ids[k], expect[k], last[k], next[k], stop[k] = p.ID, p.ExpectVersion, p.TriggerLastTime, p.TriggerNextTime, p.Stop
		}
		var done map[int64]bool
		err := retry(func() error {
			rows, err := db.pool.Query(ctx, sqlJobAdvance, ids, expect, last, next, stop)
			got, err := scanAll(rows, err, scanID)
			done = setOf(got)
			return err
		})
		if err != nil {
			return nil, db.wrap("job advance many", err)
		}
		missing, err := db.missingIDs(ctx, "jobs", ids, done)
		if err != nil {
			return nil, db.wrap("job advance many", err)
		}
		for _, i := range round {
			id := ps[i].ID
			switch {
			case done[id]:
			case missing[id]:
				errs[i] = fmt.Errorf("pgstore job advance %d: %w", id, xjob.ErrNotFound)
			default:
				errs[i] = fmt.Errorf("pgstore job advance %d: %w", id, xjob.ErrConflict)
			}
		}
	}
	db.jobs.advanced(ps, errs)
	return errs, nil
}

// rounds splits items 0..n-1 into rounds in which no key repeats: round
// k holds the k-th item of each key, in item order. A batch of distinct
// keys is one round.
func rounds(n int, key func(i int) int64) [][]int {
	seen := make(map[int64]int, n)
	var out [][]int
	for i := range n {
		k := seen[key(i)]
		seen[key(i)] = k + 1
		if k == len(out) {
			out = append(out, nil)
		}
		out[k] = append(out[k], i)
	}
	return out
}

func scanID(r pgx.Row) (int64, error) {
	var id int64
	err := r.Scan(&id)
	return id, err
}

func setOf(ids []int64) map[int64]bool {
	m := make(map[int64]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// missingIDs returns which of ids outside done have no row in table, in
// one read (none when every id is done): the items of a batch whose
// conditional write failed are xjob.ErrNotFound then, else lost.
func (db *DB) missingIDs(ctx context.Context, table string, ids []int64, done map[int64]bool) (map[int64]bool, error) {
	var ask []int64
	for _, id := range ids {
		if !done[id] {
			ask = append(ask, id)
		}
	}
	if len(ask) == 0 {
		return nil, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT id FROM `+table+` WHERE id = ANY($1)`, ask)
	found, err := scanAll(rows, err, scanID)
	if err != nil {
		return nil, err
	}
	have := setOf(found)
	missing := map[int64]bool{}
	for _, id := range ask {
		if !have[id] {
			missing[id] = true
		}
	}
	return missing, nil
}

// JobRecordSlow counts a slow dispatch in minute; a count for an older
// minute than the one stored is dropped.
func (db *DB) JobRecordSlow(ctx context.Context, id int64, minute int64) error {
	tag, err := db.pool.Exec(ctx, `UPDATE jobs SET
			slow_count = CASE WHEN slow_minute = $1 THEN slow_count + 1 ELSE 1 END,
			slow_minute = $1
		WHERE id = $2 AND slow_minute <= $1`, minute, id)
	if err == nil && tag.RowsAffected() == 0 {
		err = db.missingOr(ctx, db.pool, "jobs", id, nil) // missing, or an out-of-date minute (nothing to do)
	}
	if err != nil {
		return db.wrap(fmt.Sprintf("job record slow %d", id), err)
	}
	return nil
}

// JobDelete removes a job.
func (db *DB) JobDelete(ctx context.Context, id int64) error {
	if err := deleteByID(ctx, db.pool, "jobs", id); err != nil {
		return db.wrap(fmt.Sprintf("job delete %d", id), err)
	}
	return nil
}

// deleteByID deletes row id of table; xjob.ErrNotFound if there is none.
func deleteByID(ctx context.Context, q querier, table string, id int64) error {
	tag, err := q.Exec(ctx, `DELETE FROM `+table+` WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		err = xjob.ErrNotFound
	}
	return err
}

// jobTextFilters adds the substring filters JobList and JobCount share
// (strpos: case-sensitive, no pattern characters, as SQLite's instr).
func jobTextFilters(where []string, a *args, description, handler, author string) []string {
	for _, f := range []struct{ col, v string }{
		{"description", description}, {"handler", handler}, {"author", author},
	} {
		if f.v != "" {
			where = append(where, "strpos("+f.col+", "+a.add(f.v)+") > 0")
		}
	}
	return where
}

// JobList pages through jobs in id order. The cursor is the last id served.
func (db *DB) JobList(ctx context.Context, p driver.JobListParams) (driver.JobPage, error) {
	limit := clampLimit(p.Limit, 100, 1000)
	where := []string{"true"}
	var a args
	if p.Cursor != "" {
		after, err := strconv.ParseInt(p.Cursor, 10, 64)
		if err != nil {
			return driver.JobPage{}, fmt.Errorf("pgstore job list: %w", badCursor(p.Cursor))
		}
		where = append(where, "id > "+a.add(after))
	}
	if p.GroupID != 0 {
		where = append(where, "group_id = "+a.add(p.GroupID))
	}
	if p.Status != nil {
		where = append(where, "trigger_status = "+a.add(int(*p.Status)))
	}
	where = jobTextFilters(where, &a, p.Description, p.Handler, p.Author)
	rows, err := db.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE `+
		strings.Join(where, " AND ")+` ORDER BY id LIMIT `+a.add(limit+1), a...)
	jobs, err := scanAll(rows, err, scanJob)
	if err != nil {
		return driver.JobPage{}, db.wrap("job list", err)
	}
	var page driver.JobPage
	if len(jobs) > limit {
		jobs = jobs[:limit]
		page.Next = strconv.FormatInt(jobs[limit-1].ID, 10)
	}
	page.Jobs = jobs
	return page, nil
}

// sqlJobsDue reads through the partial index jobs_due: the literal
// trigger_status = 1 is what lets the planner pick it, and the row
// comparison is an index condition, so a page starts where the last ended.
const sqlJobsDue = `SELECT ` + jobColumns + ` FROM jobs
	WHERE trigger_status = 1 AND shard = $1 AND trigger_next_time <= $2
	  AND (trigger_next_time, id) > ($3, $4)
	ORDER BY trigger_next_time, id LIMIT $5`

// JobsDue returns running jobs of one shard due at or before p.Before.
func (db *DB) JobsDue(ctx context.Context, p driver.JobsDueParams) ([]xjob.Job, error) {
	limit := clampLimit(p.Limit, 1000, 100000)
	after := p.After
	if after == (driver.DueCursor{}) {
		after = driver.DueCursor{NextTime: -1 << 62}
	}
	rows, err := db.pool.Query(ctx, sqlJobsDue, p.Shard, p.Before, after.NextTime, after.ID, limit)
	jobs, err := scanAll(rows, err, scanJob)
	if err != nil {
		return nil, db.wrap("jobs due", err)
	}
	return jobs, nil
}

// DeclarationRetire records key's retired declaration (see driver.JobStore).
func (db *DB) DeclarationRetire(ctx context.Context, key, declared string) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO declarations_retired (key, declared) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET declared = excluded.declared`, key, declared)
	if err != nil {
		return db.wrap(fmt.Sprintf("declaration retire %q", key), err)
	}
	return nil
}

// DeclarationRetired returns key's retired declaration (see driver.JobStore).
func (db *DB) DeclarationRetired(ctx context.Context, key string) (string, bool, error) {
	var declared string
	err := db.pool.QueryRow(ctx, `SELECT declared FROM declarations_retired WHERE key = $1`, key).Scan(&declared)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, db.wrap(fmt.Sprintf("declaration retired %q", key), err)
	}
	return declared, true, nil
}

// JobListByName returns the jobs named name, in id order (more than one
// only while two concurrent creates race; see driver.JobStore).
func (db *DB) JobListByName(ctx context.Context, name string) ([]xjob.Job, error) {
	if name == "" {
		return nil, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE name = $1 AND name <> '' ORDER BY id`, name)
	jobs, err := scanAll(rows, err, scanJob)
	if err != nil {
		return nil, db.wrap(fmt.Sprintf("job list by name %q", name), err)
	}
	return jobs, nil
}
