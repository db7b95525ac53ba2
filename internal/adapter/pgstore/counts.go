package pgstore

import (
	"context"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// inGroups appends "col = ANY(…)" for a non-empty id list.
func inGroups(where []string, a *args, col string, ids []int64) []string {
	if len(ids) == 0 {
		return where
	}
	return append(where, col+" = ANY("+a.add(ids)+")")
}

// JobCount counts jobs through jobs_group (an index-only count for the
// unfiltered case once the table is vacuumed).
func (db *DB) JobCount(ctx context.Context, p driver.JobCountParams) (int, error) {
	var a args
	where := inGroups([]string{"true"}, &a, "group_id", p.GroupIDs)
	if p.Status != nil {
		where = append(where, "trigger_status = "+a.add(int(*p.Status)))
	}
	where = jobTextFilters(where, &a, p.Description, p.Handler, p.Author)
	var n int64
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE `+strings.Join(where, " AND "), a...).Scan(&n); err != nil {
		return 0, db.wrap("job count", err)
	}
	return int(n), nil
}

// logFilters adds the status and trigger-time conditions that LogList and
// LogCount share, so that a count walks the same indexes as the list.
func logFilters(where []string, a *args, status xjob.LogStatus, from, to int64) []string {
	switch status {
	case xjob.LogSuccess:
		where = append(where, sqlLogSuccess)
	case xjob.LogFail:
		where = append(where, sqlLogFailed)
	case xjob.LogRunning:
		where = append(where, sqlLogRunning)
	}
	if from != 0 {
		where = append(where, "trigger_time >= "+a.add(from))
	}
	if to != 0 {
		where = append(where, "trigger_time <= "+a.add(to))
	}
	return where
}

// LogCount counts logs through the same indexes as LogList; the inner
// LIMIT stops the walk at p.Limit (LIMIT NULL: no bound).
func (db *DB) LogCount(ctx context.Context, p driver.LogCountParams) (int, error) {
	var a args
	where := inGroups([]string{"true"}, &a, "group_id", p.GroupIDs)
	if p.JobID != 0 {
		where = append(where, "job_id = "+a.add(p.JobID))
	}
	where = logFilters(where, &a, p.Status, p.From, p.To)
	var limit *int64
	if p.Limit > 0 {
		l := int64(p.Limit)
		limit = &l
	}
	var n int64
	err := db.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM logs WHERE `+
		strings.Join(where, " AND ")+` LIMIT `+a.add(limit)+`) AS counted`, a...).Scan(&n)
	if err != nil {
		return 0, db.wrap("log count", err)
	}
	return int(n), nil
}
