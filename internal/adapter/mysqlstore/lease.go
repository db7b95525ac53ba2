package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// LeaseAcquire takes the named lease if it is free (released), expired,
// or already the caller's, in one transaction: the row is read locked
// (SELECT … FOR UPDATE), the decision made, and the row written; the
// token grows unless the owner stays the same. Of two first acquires of
// a lease that does not exist yet, one inserts and the other fails on the
// key and runs again, to find the lease held.
func (db *DB) LeaseAcquire(ctx context.Context, p driver.LeaseAcquireParams) (driver.Lease, error) {
	if p.Owner == "" {
		return driver.Lease{}, &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "owner", Message: "is required"}}}
	}
	expires := p.Now + p.TTL.Milliseconds()
	var l driver.Lease
	var err error
	for range maxAttempts {
		err = db.tx(ctx, "lease acquire", func(tx *sql.Tx) error {
			l = driver.Lease{Name: p.Name, Owner: p.Owner, ExpiresAt: expires}
			var owner string
			var token, until int64
			err := tx.StmtContext(ctx, db.st.leaseLock).QueryRowContext(ctx, p.Name).Scan(&owner, &token, &until)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				l.Token = 1
				_, err = tx.StmtContext(ctx, db.st.leaseInsert).ExecContext(ctx, p.Name, p.Owner, expires)
				return err
			case err != nil:
				return err
			case owner != p.Owner && owner != "" && until > p.Now:
				return xjob.ErrLeaseHeld
			}
			l.Token = token
			if owner != p.Owner {
				l.Token++
			}
			_, err = tx.StmtContext(ctx, db.st.leaseTake).ExecContext(ctx, p.Owner, l.Token, expires, p.Name)
			return err
		})
		if !isCode(err, errDupEntry) {
			break
		}
	}
	if err != nil {
		return driver.Lease{}, fmt.Errorf("mysql lease acquire %s: %w", p.Name, err)
	}
	return l, nil
}

// LeaseRenew extends a lease still held with the same owner and token.
func (db *DB) LeaseRenew(ctx context.Context, p driver.LeaseRenewParams) (driver.Lease, error) {
	l := p.Lease
	if l.Owner == "" {
		return driver.Lease{}, fmt.Errorf("mysql lease renew %s: %w", l.Name, xjob.ErrLeaseLost)
	}
	l.ExpiresAt = p.Now + p.TTL.Milliseconds()
	err := db.retry(ctx, "lease renew", func() error {
		n, err := rowsAffected(db.st.leaseRenew.ExecContext(ctx, l.ExpiresAt, l.Name, l.Owner, l.Token))
		if err == nil && n == 0 {
			err = xjob.ErrLeaseLost
		}
		return err
	})
	if err != nil {
		return driver.Lease{}, fmt.Errorf("mysql lease renew %s: %w", l.Name, err)
	}
	return l, nil
}

// LeaseRelease frees the lease, keeping its token.
func (db *DB) LeaseRelease(ctx context.Context, l driver.Lease) error {
	err := db.retry(ctx, "lease release", func() error {
		n, err := rowsAffected(db.st.leaseRelease.ExecContext(ctx, l.Name, l.Owner, l.Token))
		if err == nil && n == 0 {
			err = xjob.ErrLeaseLost
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("mysql lease release %s: %w", l.Name, err)
	}
	return nil
}

// LeaseGet returns the lease's current state (Owner empty when released).
func (db *DB) LeaseGet(ctx context.Context, name string) (driver.Lease, error) {
	l := driver.Lease{Name: name}
	if err := db.st.leaseGet.QueryRowContext(ctx, name).Scan(&l.Owner, &l.Token, &l.ExpiresAt); err != nil {
		return driver.Lease{}, fmt.Errorf("mysql lease get %s: %w", name, notFound(err))
	}
	return l, nil
}
