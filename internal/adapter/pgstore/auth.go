package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/xjobdev/xjob/pkg/driver"
)

var _ driver.AuthStore = (*DB)(nil)

// AttemptAdd counts one attempt in key's window with one upsert, which
// locks the key's row: concurrent adds queue on it and each sees its own
// count. A window that ended restarts at 1 in the same statement; the
// other keys' ended windows are deleted on the way, which bounds the
// table by the attempts of one window.
func (db *DB) AttemptAdd(ctx context.Context, p driver.AttemptAddParams) (int, error) {
	if _, err := db.pool.Exec(ctx, `DELETE FROM auth_attempts WHERE expires_at <= $1 AND key <> $2`, p.Now, p.Key); err != nil {
		return 0, db.wrap("attempt add", err)
	}
	var n int
	err := db.pool.QueryRow(ctx, `INSERT INTO auth_attempts (key, window_start, expires_at, count) VALUES ($1, $2, $3, 1)
		ON CONFLICT (key) DO UPDATE SET
			count        = CASE WHEN auth_attempts.expires_at <= $2 THEN 1 ELSE auth_attempts.count + 1 END,
			window_start = CASE WHEN auth_attempts.expires_at <= $2 THEN $2 ELSE auth_attempts.window_start END,
			expires_at   = CASE WHEN auth_attempts.expires_at <= $2 THEN $3 ELSE auth_attempts.expires_at END
		RETURNING count`, p.Key, p.Now, p.Now+p.Window.Milliseconds()).Scan(&n)
	if err != nil {
		return 0, db.wrap("attempt add", err)
	}
	return n, nil
}

// AttemptReset deletes key's window.
func (db *DB) AttemptReset(ctx context.Context, key string) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM auth_attempts WHERE key = $1`, key); err != nil {
		return db.wrap("attempt reset", err)
	}
	return nil
}

// maxSessionMillis is the longest a session may last (a week): a record
// whose cookie ended more than that before a new revocation's end is past
// any cookie still in use. (The store does not read the clock; the new
// record's expiry stands in for now.)
const maxSessionMillis = 7 * 24 * 3600 * 1000

// SessionRevoke records id as over; records of sessions whose cookie has
// ended anyway are deleted on the way.
func (db *DB) SessionRevoke(ctx context.Context, id string, expires int64) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM revoked_sessions WHERE expires_at < $1`, expires-maxSessionMillis); err != nil {
		return db.wrap("session revoke", err)
	}
	_, err := db.pool.Exec(ctx, `INSERT INTO revoked_sessions (id, expires_at) VALUES ($1, $2)
		ON CONFLICT (id) DO UPDATE SET expires_at = greatest(revoked_sessions.expires_at, excluded.expires_at)`, id, expires)
	if err != nil {
		return db.wrap("session revoke", err)
	}
	return nil
}

// SessionRevoked reports whether id was revoked.
func (db *DB) SessionRevoked(ctx context.Context, id string) (bool, error) {
	var one int
	err := db.pool.QueryRow(ctx, `SELECT 1 FROM revoked_sessions WHERE id = $1`, id).Scan(&one)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, db.wrap("session revoked", err)
	}
	return true, nil
}
