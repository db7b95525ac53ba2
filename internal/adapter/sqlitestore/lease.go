package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// LeaseAcquire takes the named lease in one upsert: the row is written only
// if it is free (released), expired, or already the caller's, and the token
// grows unless the owner stays the same.
func (db *DB) LeaseAcquire(ctx context.Context, p driver.LeaseAcquireParams) (driver.Lease, error) {
	if p.Owner == "" {
		return driver.Lease{}, &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "owner", Message: "is required"}}}
	}
	l := driver.Lease{Name: p.Name, Owner: p.Owner}
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		return db.ws.leaseAcquire.QueryRowContext(ctx, p.Name, p.Owner, p.Now+p.TTL.Milliseconds(), p.Now).
			Scan(&l.Token, &l.ExpiresAt)
	})
	if errors.Is(err, sql.ErrNoRows) {
		err = xjob.ErrLeaseHeld
	}
	if err != nil {
		return driver.Lease{}, fmt.Errorf("sqlite lease acquire %s: %w", p.Name, err)
	}
	return l, nil
}

// LeaseRenew extends a lease still held with the same owner and token.
func (db *DB) LeaseRenew(ctx context.Context, p driver.LeaseRenewParams) (driver.Lease, error) {
	l := p.Lease
	if l.Owner == "" {
		return driver.Lease{}, fmt.Errorf("sqlite lease renew %s: %w", l.Name, xjob.ErrLeaseLost)
	}
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		return db.ws.leaseRenew.QueryRowContext(ctx, p.Now+p.TTL.Milliseconds(), l.Name, l.Owner, l.Token).
			Scan(&l.ExpiresAt)
	})
	if errors.Is(err, sql.ErrNoRows) {
		err = xjob.ErrLeaseLost
	}
	if err != nil {
		return driver.Lease{}, fmt.Errorf("sqlite lease renew %s: %w", l.Name, err)
	}
	return l, nil
}

// LeaseRelease frees the lease, keeping its token.
func (db *DB) LeaseRelease(ctx context.Context, l driver.Lease) error {
	err := db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		n, err := rowsAffected(db.ws.leaseRelease.ExecContext(ctx, l.Name, l.Owner, l.Token))
		if err == nil && n == 0 {
			err = xjob.ErrLeaseLost
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite lease release %s: %w", l.Name, err)
	}
	return nil
}

// LeaseGet returns the lease's current state (Owner empty when released).
func (db *DB) LeaseGet(ctx context.Context, name string) (driver.Lease, error) {
	l := driver.Lease{Name: name}
	err := db.rs.leaseGet.QueryRowContext(ctx, name).Scan(&l.Owner, &l.Token, &l.ExpiresAt)
	if err != nil {
		return driver.Lease{}, fmt.Errorf("sqlite lease get %s: %w", name, notFound(err))
	}
	return l, nil
}
