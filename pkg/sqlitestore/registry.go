package sqlitestore

import (
	"context"
	"fmt"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// RegistryUpsert inserts an entry or refreshes its UpdatedAt (never moving
// it back, so a delayed heartbeat cannot age a fresher one).
func (db *DB) RegistryUpsert(ctx context.Context, e xjob.RegistryEntry) error {
	_, err := db.w.ExecContext(ctx, `INSERT INTO registry (grp, key, value, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (grp, key, value) DO UPDATE SET updated_at = max(updated_at, excluded.updated_at)`,
		e.Group, e.Key, e.Value, e.UpdatedAt)
	if err != nil {
		return fmt.Errorf("sqlite registry upsert: %w", err)
	}
	return nil
}

// RegistryRemove deletes one entry; a missing one is not an error.
func (db *DB) RegistryRemove(ctx context.Context, e xjob.RegistryEntry) error {
	_, err := db.w.ExecContext(ctx, `DELETE FROM registry WHERE grp = ? AND key = ? AND value = ?`, e.Group, e.Key, e.Value)
	if err != nil {
		return fmt.Errorf("sqlite registry remove: %w", err)
	}
	return nil
}

// RegistryList returns entries updated at or after Since, for one key or all.
func (db *DB) RegistryList(ctx context.Context, p driver.RegistryListParams) ([]xjob.RegistryEntry, error) {
	q := `SELECT grp, key, value, updated_at FROM registry WHERE updated_at >= ?`
	args := []any{p.Since}
	if p.Key != "" {
		q += ` AND key = ?`
		args = append(args, p.Key)
	}
	rows, err := db.r.QueryContext(ctx, q+` ORDER BY grp, key, value`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite registry list: %w", err)
	}
	defer rows.Close()
	var out []xjob.RegistryEntry
	for rows.Next() {
		var e xjob.RegistryEntry
		if err := rows.Scan(&e.Group, &e.Key, &e.Value, &e.UpdatedAt); err != nil {
			return nil, fmt.Errorf("sqlite registry list: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite registry list: %w", err)
	}
	return out, nil
}

// RegistryDeleteBefore deletes entries not updated since before.
func (db *DB) RegistryDeleteBefore(ctx context.Context, before int64) (int, error) {
	n, err := rowsAffected(db.w.ExecContext(ctx, `DELETE FROM registry WHERE updated_at < ?`, before))
	if err != nil {
		return 0, fmt.Errorf("sqlite registry delete before: %w", err)
	}
	return int(n), nil
}

// ReportAdd adds d's counters to its day, creating the day.
func (db *DB) ReportAdd(ctx context.Context, d xjob.ReportDay) error {
	_, err := db.w.ExecContext(ctx, `INSERT INTO report_days (day, running_count, suc_count, fail_count)
		VALUES (?, ?, ?, ?) ON CONFLICT (day) DO UPDATE SET
		running_count = running_count + excluded.running_count,
		suc_count = suc_count + excluded.suc_count,
		fail_count = fail_count + excluded.fail_count`,
		d.Day, d.RunningCount, d.SucCount, d.FailCount)
	if err != nil {
		return fmt.Errorf("sqlite report add %s: %w", d.Day, err)
	}
	return nil
}

// ReportList returns the days from..to inclusive, in day order.
func (db *DB) ReportList(ctx context.Context, from, to string) ([]xjob.ReportDay, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT day, running_count, suc_count, fail_count FROM report_days
		WHERE day >= ? AND day <= ? ORDER BY day`, from, to)
	if err != nil {
		return nil, fmt.Errorf("sqlite report list: %w", err)
	}
	defer rows.Close()
	var out []xjob.ReportDay
	for rows.Next() {
		var d xjob.ReportDay
		if err := rows.Scan(&d.Day, &d.RunningCount, &d.SucCount, &d.FailCount); err != nil {
			return nil, fmt.Errorf("sqlite report list: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite report list: %w", err)
	}
	return out, nil
}
