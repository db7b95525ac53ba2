package mysqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/xjobdev/xjob/pkg/driver"
)

// inGroups appends "col IN (…)" for a non-empty id list.
func inGroups(where []string, args []any, col string, ids []int64) ([]string, []any) {
	if len(ids) == 0 {
		return where, args
	}
	return append(where, col+" IN ("+marks(len(ids))+")"), append(args, int64Args(ids)...)
}

// JobCount counts jobs through jobs_group (a covering index for the
// unfiltered count).
func (db *DB) JobCount(ctx context.Context, p driver.JobCountParams) (int, error) {
	where, args := inGroups([]string{"1 = 1"}, nil, "group_id", p.GroupIDs)
	where, args = jobFilters(where, args, p.Status, p.Description, p.Handler, p.Author)
	var n int
	err := db.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE `+strings.Join(where, " AND "), args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("mysql job count: %w", err)
	}
	return n, nil
}

// LogCount counts logs through the same indexes as LogList; the inner
// LIMIT stops the walk at p.Limit.
func (db *DB) LogCount(ctx context.Context, p driver.LogCountParams) (int, error) {
	where, args := inGroups([]string{"1 = 1"}, nil, "group_id", p.GroupIDs)
	if p.JobID != 0 {
		where, args = append(where, "job_id = ?"), append(args, p.JobID)
	}
	where, args = logFilters(where, args, p.Status, p.From, p.To)
	inner := `SELECT 1 FROM logs WHERE ` + strings.Join(where, " AND ")
	if p.Limit > 0 {
		inner, args = inner+` LIMIT ?`, append(args, p.Limit)
	}
	var n int
	if err := db.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (`+inner+`) counted`, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("mysql log count: %w", err)
	}
	return n, nil
}
