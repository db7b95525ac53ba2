package sqlitestore

import (
	"context"
	"fmt"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// inGroups appends "col IN (…)" for a non-empty id list.
func inGroups(where []string, args []any, col string, ids []int64) ([]string, []any) {
	if len(ids) == 0 {
		return where, args
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ")
	for _, id := range ids {
		args = append(args, id)
	}
	return append(where, col+" IN ("+marks+")"), args
}

// JobCount counts jobs through jobs_group (a covering index for the
// unfiltered count).
func (db *DB) JobCount(ctx context.Context, p driver.JobCountParams) (int, error) {
	where, args := inGroups([]string{"1 = 1"}, nil, "group_id", p.GroupIDs)
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
	var n int
	err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE `+strings.Join(where, " AND "), args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sqlite job count: %w", err)
	}
	return n, nil
}

// logFilters adds the status and trigger-time conditions that LogList and
// LogCount share, so that a count walks the same indexes as the list
// (for logsOf, which names the columns).
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
		where, args = append(where, "$trigger_time >= ?"), append(args, from)
	}
	if to != 0 {
		where, args = append(where, "$trigger_time <= ?"), append(args, to)
	}
	return where, args
}

// LogCount counts logs through the same indexes as LogList; the inner
// LIMIT stops the walk at p.Limit.
func (db *DB) LogCount(ctx context.Context, p driver.LogCountParams) (int, error) {
	q, args := logCountQuery(p)
	var n int
	if err := db.r.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite log count: %w", err)
	}
	return n, nil
}

// logCountQuery is LogCount's statement.
func logCountQuery(p driver.LogCountParams) (string, []any) {
	where, args := inGroups(nil, nil, "group_id", p.GroupIDs)
	where, args = logFilters(where, args, p.Status, p.From, p.To)
	limit := -1 // SQLite: no bound
	if p.Limit > 0 {
		limit = p.Limit
	}
	sel, args := logsOf("1", where, args, p.JobID)
	return `SELECT COUNT(*) FROM (` + sel + ` LIMIT ?)`, append(args, limit)
}
