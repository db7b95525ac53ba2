package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// RegistryUpsert inserts an entry or refreshes its UpdatedAt (never moving
// it back, so a delayed heartbeat cannot age a fresher one).
func (db *DB) RegistryUpsert(ctx context.Context, e xjob.RegistryEntry) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO registry (grp, key, value, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (grp, key, value) DO UPDATE SET updated_at = greatest(registry.updated_at, excluded.updated_at)`,
		e.Group, e.Key, e.Value, e.UpdatedAt)
	if err != nil {
		return db.wrap("registry upsert", err)
	}
	return nil
}

// RegistryRemove deletes one entry; a missing one is not an error.
func (db *DB) RegistryRemove(ctx context.Context, e xjob.RegistryEntry) error {
	_, err := db.pool.Exec(ctx, `DELETE FROM registry WHERE grp = $1 AND key = $2 AND value = $3`, e.Group, e.Key, e.Value)
	if err != nil {
		return db.wrap("registry remove", err)
	}
	return nil
}

// RegistryList returns entries updated at or after Since, for one key or
// all, in byte order of (group, key, value) as SQLite sorts them.
func (db *DB) RegistryList(ctx context.Context, p driver.RegistryListParams) ([]xjob.RegistryEntry, error) {
	var a args
	where := "updated_at >= " + a.add(p.Since)
	if p.Key != "" {
		where += " AND key = " + a.add(p.Key)
	}
	rows, err := db.pool.Query(ctx, `SELECT grp, key, value, updated_at FROM registry WHERE `+where+`
		ORDER BY grp COLLATE "C", key COLLATE "C", value COLLATE "C"`, a...)
	out, err := scanAll(rows, err, func(s pgx.Row) (xjob.RegistryEntry, error) {
		var e xjob.RegistryEntry
		err := s.Scan(&e.Group, &e.Key, &e.Value, &e.UpdatedAt)
		return e, err
	})
	if err != nil {
		return nil, db.wrap("registry list", err)
	}
	return out, nil
}

// RegistryDeleteBefore deletes entries not updated since before.
func (db *DB) RegistryDeleteBefore(ctx context.Context, before int64) (int, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM registry WHERE updated_at < $1`, before)
	if err != nil {
		return 0, db.wrap("registry delete before", err)
	}
	return int(tag.RowsAffected()), nil
}

// ReportAdd adds d's counters to its day and group, creating them, in one
// upsert (concurrent adds queue on the row, none is lost).
func (db *DB) ReportAdd(ctx context.Context, d xjob.ReportDay) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO report_days (day, group_id, running_count, suc_count, fail_count)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (day, group_id) DO UPDATE SET
			running_count = report_days.running_count + excluded.running_count,
			suc_count = report_days.suc_count + excluded.suc_count,
			fail_count = report_days.fail_count + excluded.fail_count`,
		d.Day, d.GroupID, d.RunningCount, d.SucCount, d.FailCount)
	if err != nil {
		return db.wrap("report add "+d.Day, err)
	}
	return nil
}

// ReportList sums the days' counters over p's groups, in day order, in
// one range read of the (day, group_id) key.
func (db *DB) ReportList(ctx context.Context, p driver.ReportListParams) ([]xjob.ReportDay, error) {
	var a args
	where := []string{"day >= " + a.add(p.From), "day <= " + a.add(p.To)}
	if len(p.GroupIDs) > 0 {
		where = append(where, "group_id <> 0", "group_id = ANY("+a.add(p.GroupIDs)+")")
	}
	rows, err := db.pool.Query(ctx, `SELECT day, sum(running_count), sum(suc_count), sum(fail_count)
		FROM report_days WHERE `+strings.Join(where, " AND ")+` GROUP BY day ORDER BY day`, a...)
	out, err := scanAll(rows, err, func(s pgx.Row) (xjob.ReportDay, error) {
		var d xjob.ReportDay
		var run, suc, fail int64
		err := s.Scan(&d.Day, &run, &suc, &fail)
		d.RunningCount, d.SucCount, d.FailCount = int(run), int(suc), int(fail)
		return d, err
	})
	if err != nil {
		return nil, db.wrap("report list", err)
	}
	return out, nil
}

// LeaseAcquire takes the named lease in one upsert: the row is written only
// if it is free (released), expired, or already the caller's, and the token
// grows unless the owner stays the same. On a conflict PostgreSQL locks
// the row and evaluates the WHERE on its latest version, so of two nodes
// racing for one lease exactly one wins.
func (db *DB) LeaseAcquire(ctx context.Context, p driver.LeaseAcquireParams) (driver.Lease, error) {
	if p.Owner == "" {
		return driver.Lease{}, &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "owner", Message: "is required"}}}
	}
	l := driver.Lease{Name: p.Name, Owner: p.Owner}
	err := db.pool.QueryRow(ctx, `INSERT INTO leases (name, owner, token, expires_at) VALUES ($1, $2, 1, $3)
		ON CONFLICT (name) DO UPDATE SET
			token = CASE WHEN leases.owner = excluded.owner THEN leases.token ELSE leases.token + 1 END,
			owner = excluded.owner,
			expires_at = excluded.expires_at
		WHERE leases.owner = excluded.owner OR leases.owner = '' OR leases.expires_at <= $4
		RETURNING token, expires_at`, p.Name, p.Owner, p.Now+p.TTL.Milliseconds(), p.Now).Scan(&l.Token, &l.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		err = xjob.ErrLeaseHeld
	}
	if err != nil {
		return driver.Lease{}, db.wrap("lease acquire "+p.Name, err)
	}
	return l, nil
}

// LeaseRenew extends a lease still held with the same owner and token.
func (db *DB) LeaseRenew(ctx context.Context, p driver.LeaseRenewParams) (driver.Lease, error) {
	l := p.Lease
	if l.Owner == "" {
		return driver.Lease{}, fmt.Errorf("pgstore lease renew %s: %w", l.Name, xjob.ErrLeaseLost)
	}
	err := db.pool.QueryRow(ctx, `UPDATE leases SET expires_at = $1 WHERE name = $2 AND owner = $3 AND token = $4
		RETURNING expires_at`, p.Now+p.TTL.Milliseconds(), l.Name, l.Owner, l.Token).Scan(&l.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		err = xjob.ErrLeaseLost
	}
	if err != nil {
		return driver.Lease{}, db.wrap("lease renew "+l.Name, err)
	}
	return l, nil
}

// LeaseRelease frees the lease, keeping its token.
func (db *DB) LeaseRelease(ctx context.Context, l driver.Lease) error {
	tag, err := db.pool.Exec(ctx, `UPDATE leases SET owner = '', expires_at = 0
		WHERE name = $1 AND owner = $2 AND token = $3 AND owner <> ''`, l.Name, l.Owner, l.Token)
	if err == nil && tag.RowsAffected() == 0 {
		err = xjob.ErrLeaseLost
	}
	if err != nil {
		return db.wrap("lease release "+l.Name, err)
	}
	return nil
}

// LeaseGet returns the lease's current state (Owner empty when released).
func (db *DB) LeaseGet(ctx context.Context, name string) (driver.Lease, error) {
	l := driver.Lease{Name: name}
	err := db.pool.QueryRow(ctx, `SELECT owner, token, expires_at FROM leases WHERE name = $1`, name).
		Scan(&l.Owner, &l.Token, &l.ExpiresAt)
	if err != nil {
		return driver.Lease{}, db.wrap("lease get "+name, notFound(err))
	}
	return l, nil
}
