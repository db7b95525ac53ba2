package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// RegistryUpsert inserts an entry or refreshes its UpdatedAt (never moving
// it back, so a delayed heartbeat cannot age a fresher one).
func (db *DB) RegistryUpsert(ctx context.Context, e xjob.RegistryEntry) error {
	err := db.retry(ctx, "registry upsert", func() error {
		_, err := db.st.registryUpsert.ExecContext(ctx, e.Group, e.Key, e.Value, e.UpdatedAt)
		return err
	})
	if err != nil {
		return fmt.Errorf("mysql registry upsert: %w", err)
	}
	return nil
}

// RegistryRemove deletes one entry; a missing one is not an error.
func (db *DB) RegistryRemove(ctx context.Context, e xjob.RegistryEntry) error {
	_, err := db.db.ExecContext(ctx, "DELETE FROM registry WHERE grp = ? AND `key` = ? AND value = ?", e.Group, e.Key, e.Value)
	if err != nil {
		return fmt.Errorf("mysql registry remove: %w", err)
	}
	return nil
}

// RegistryList returns entries updated at or after Since, for one key or all.
func (db *DB) RegistryList(ctx context.Context, p driver.RegistryListParams) ([]xjob.RegistryEntry, error) {
	var rows *sql.Rows
	var err error
	if p.Key != "" {
		rows, err = db.st.registryByKey.QueryContext(ctx, p.Key, p.Since)
	} else {
		rows, err = db.st.registryList.QueryContext(ctx, p.Since)
	}
	if err != nil {
		return nil, fmt.Errorf("mysql registry list: %w", err)
	}
	out, err := scanAll(rows, func(s scanner) (xjob.RegistryEntry, error) {
		var e xjob.RegistryEntry
		err := s.Scan(&e.Group, &e.Key, &e.Value, &e.UpdatedAt)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("mysql registry list: %w", err)
	}
	return out, nil
}

// RegistryDeleteBefore deletes entries not updated since before.
func (db *DB) RegistryDeleteBefore(ctx context.Context, before int64) (int, error) {
	var n int64
	err := db.retry(ctx, "registry delete before", func() error {
		var err error
		n, err = rowsAffected(db.db.ExecContext(ctx, `DELETE FROM registry WHERE updated_at < ?`, before))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mysql registry delete before: %w", err)
	}
	return int(n), nil
}

// ReportAdd adds d's counters to its day and group, creating them.
func (db *DB) ReportAdd(ctx context.Context, d xjob.ReportDay) error {
	err := db.retry(ctx, "report add", func() error {
		_, err := db.st.reportAdd.ExecContext(ctx, d.Day, d.GroupID, d.RunningCount, d.SucCount, d.FailCount)
		return err
	})
	if err != nil {
		return fmt.Errorf("mysql report add %s: %w", d.Day, err)
	}
	return nil
}

// ReportList sums the days' counters over p's groups, in day order, in
// one range read of the (day, group_id) key.
func (db *DB) ReportList(ctx context.Context, p driver.ReportListParams) ([]xjob.ReportDay, error) {
	var rows *sql.Rows
	var err error
	if len(p.GroupIDs) == 0 {
		rows, err = db.st.reportList.QueryContext(ctx, p.From, p.To)
	} else {
		where, args := inGroups([]string{"day >= ?", "day <= ?", "group_id <> 0"}, []any{p.From, p.To}, "group_id", p.GroupIDs)
		rows, err = db.db.QueryContext(ctx, `SELECT day, CAST(SUM(running_count) AS SIGNED), CAST(SUM(suc_count) AS SIGNED),
			CAST(SUM(fail_count) AS SIGNED) FROM report_days WHERE `+strings.Join(where, " AND ")+` GROUP BY day ORDER BY day`, args...)
	}
	if err != nil {
		return nil, fmt.Errorf("mysql report list: %w", err)
	}
	out, err := scanAll(rows, func(s scanner) (xjob.ReportDay, error) {
		var d xjob.ReportDay
		err := s.Scan(&d.Day, &d.RunningCount, &d.SucCount, &d.FailCount)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("mysql report list: %w", err)
	}
	return out, nil
}
