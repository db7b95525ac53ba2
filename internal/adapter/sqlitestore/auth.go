package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/xjobdev/xjob/pkg/driver"
)

var _ driver.AuthStore = (*DB)(nil)

// AttemptAdd counts one attempt in key's window with one upsert on the
// writer, so concurrent adds are serialized and each sees its own count.
// Windows that ended are deleted on the way, which bounds the table by
// the attempts of one window.
func (db *DB) AttemptAdd(ctx context.Context, p driver.AttemptAddParams) (int, error) {
	var n int
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `DELETE FROM auth_attempts WHERE expires_at <= ?`, p.Now); err != nil {
			return err
		}
		return c.QueryRowContext(ctx, `INSERT INTO auth_attempts (key, window_start, expires_at, count) VALUES (?, ?, ?, 1)
			ON CONFLICT (key) DO UPDATE SET count = count + 1
			RETURNING count`, p.Key, p.Now, p.Now+p.Window.Milliseconds()).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite attempt add: %w", err)
	}
	return n, nil
}

// AttemptReset deletes key's window.
func (db *DB) AttemptReset(ctx context.Context, key string) error {
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `DELETE FROM auth_attempts WHERE key = ?`, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite attempt reset: %w", err)
	}
	return nil
}

// SessionRevoke records id as over; records of sessions whose cookie has
// ended anyway are deleted on the way.
func (db *DB) SessionRevoke(ctx context.Context, id string, expires int64) error {
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `DELETE FROM revoked_sessions WHERE expires_at < ?`, expires-maxSessionMillis); err != nil {
			return err
		}
		_, err := c.ExecContext(ctx, `INSERT INTO revoked_sessions (id, expires_at) VALUES (?, ?)
			ON CONFLICT (id) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)`, id, expires)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite session revoke: %w", err)
	}
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
	err := db.r.QueryRowContext(ctx, `SELECT 1 FROM revoked_sessions WHERE id = ?`, id).Scan(&one)
	switch {
	case err == sql.ErrNoRows:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("sqlite session revoked: %w", err)
	}
	return true, nil
}
