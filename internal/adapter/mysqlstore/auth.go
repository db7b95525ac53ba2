package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/xjobdev/xjob/pkg/driver"
)

var _ driver.AuthStore = (*DB)(nil)

// AttemptAdd counts one attempt in key's window in one transaction: an
// upsert that starts a new window when the old one ended (its assignments
// run left to right, each reading the row's old expiry before it is
// replaced), then a read of the count under the row lock the upsert holds,
// so concurrent adds each see their own count. Windows that ended are
// deleted afterwards, a few at a time, which bounds the table.
func (db *DB) AttemptAdd(ctx context.Context, p driver.AttemptAddParams) (int, error) {
	var n int
	expires := p.Now + p.Window.Milliseconds()
	err := db.tx(ctx, "attempt add", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO auth_attempts (`key`, window_start, expires_at, count) VALUES (?, ?, ?, 1) "+
			"ON DUPLICATE KEY UPDATE count = IF(expires_at <= ?, 1, count + 1), "+
			"window_start = IF(expires_at <= ?, VALUES(window_start), window_start), "+
			"expires_at = IF(expires_at <= ?, VALUES(expires_at), expires_at)",
			p.Key, p.Now, expires, p.Now, p.Now, p.Now); err != nil {
			return err
		}
		err := tx.QueryRowContext(ctx, "SELECT count FROM auth_attempts WHERE `key` = ? FOR UPDATE", p.Key).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			err = errRace // the upsert met a concurrent insert that rolled back
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mysql attempt add: %w", err)
	}
	_, _ = db.db.ExecContext(ctx, `DELETE FROM auth_attempts WHERE expires_at <= ? LIMIT 100`, p.Now)
	return n, nil
}

// AttemptReset deletes key's window.
func (db *DB) AttemptReset(ctx context.Context, key string) error {
	if _, err := db.db.ExecContext(ctx, "DELETE FROM auth_attempts WHERE `key` = ?", key); err != nil {
		return fmt.Errorf("mysql attempt reset: %w", err)
	}
	return nil
}

// SessionRevoke records id as over; records of sessions whose cookie has
// ended anyway are deleted on the way.
func (db *DB) SessionRevoke(ctx context.Context, id string, expires int64) error {
	err := db.retry(ctx, "session revoke", func() error {
		_, err := db.db.ExecContext(ctx, `INSERT INTO revoked_sessions (id, expires_at) VALUES (?, ?)
			ON DUPLICATE KEY UPDATE expires_at = GREATEST(expires_at, VALUES(expires_at))`, id, expires)
		return err
	})
	if err != nil {
		return fmt.Errorf("mysql session revoke: %w", err)
	}
	_, _ = db.db.ExecContext(ctx, `DELETE FROM revoked_sessions WHERE expires_at < ? LIMIT 100`, expires-maxSessionMillis)
	return nil
}

// maxSessionMillis is the longest a session may last (a week): a record
// whose cookie ended more than that before a new revocation's end is past
// any cookie still in use. (The store does not read the clock; the new
// record's expiry stands in for now.)
const maxSessionMillis = 7 * 24 * 3600 * 1000

// SessionRevoked reports whether id was revoked.
func (db *DB) SessionRevoked(ctx context.Context, id string) (bool, error) {
	var one int
	err := db.db.QueryRowContext(ctx, `SELECT 1 FROM revoked_sessions WHERE id = ?`, id).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("mysql session revoked: %w", err)
	}
	return true, nil
}
