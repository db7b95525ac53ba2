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

const userColumns = `username, password_hash, role, group_ids, locale, version, created_at, updated_at`

func scanUser(s pgx.Row) (xjob.User, error) {
	var u xjob.User
	var groups string
	if err := s.Scan(&u.Username, &u.PasswordHash, &u.Role, &groups, &u.Locale, &u.Version, &u.CreatedAt, &u.UpdatedAt); err != nil {
		return xjob.User{}, err
	}
	ids, err := xjob.ParseChildJobIDs(groups) // the same comma list of ids
	if err != nil {
		return xjob.User{}, fmt.Errorf("user %s group ids: %w", u.Username, err)
	}
	u.GroupIDs = ids
	return u, nil
}

// UserInsert stores a new user with Version 1; xjob.ErrConflict if the
// username is taken.
func (db *DB) UserInsert(ctx context.Context, u xjob.User) (xjob.User, error) {
	u.Version = 1
	tag, err := db.pool.Exec(ctx, `INSERT INTO users (`+userColumns+`)
		VALUES ($1, $2, $3, $4, $5, 1, $6, $7) ON CONFLICT (username) DO NOTHING`,
		u.Username, u.PasswordHash, u.Role, formatIDs(u.GroupIDs), u.Locale, u.CreatedAt, u.UpdatedAt)
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("username %q is taken: %w", u.Username, xjob.ErrConflict)
	}
	if err != nil {
		return xjob.User{}, db.wrap("user insert", err)
	}
	return u, nil
}

// UserGet returns one user or xjob.ErrNotFound.
func (db *DB) UserGet(ctx context.Context, username string) (xjob.User, error) {
	u, err := scanUser(db.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE username = $1`, username))
	if err != nil {
		return xjob.User{}, db.wrap(fmt.Sprintf("user get %q", username), notFound(err))
	}
	return u, nil
}

// UserList returns users in username order, filtered.
func (db *DB) UserList(ctx context.Context, p driver.UserListParams) ([]xjob.User, error) {
	where := []string{"true"}
	var a args
	if p.Username != "" {
		where = append(where, "strpos(username, "+a.add(p.Username)+") > 0")
	}
	if p.Role != nil {
		where = append(where, "role = "+a.add(int(*p.Role)))
	}
	// COLLATE "C": byte order, as SQLite sorts, whatever the database's locale.
	rows, err := db.pool.Query(ctx, `SELECT `+userColumns+` FROM users WHERE `+
		strings.Join(where, " AND ")+` ORDER BY username COLLATE "C"`, a...)
	out, err := scanAll(rows, err, scanUser)
	if err != nil {
		return nil, db.wrap("user list", err)
	}
	return out, nil
}

// UserUpdate replaces a user if its version is ExpectVersion.
func (db *DB) UserUpdate(ctx context.Context, p driver.UserUpdateParams) (xjob.User, error) {
	u := p.User
	out, err := scanUser(db.pool.QueryRow(ctx, `UPDATE users SET password_hash = $1, role = $2, group_ids = $3,
		locale = $4, updated_at = $5, version = version + 1
		WHERE username = $6 AND version = $7 RETURNING `+userColumns,
		u.PasswordHash, u.Role, formatIDs(u.GroupIDs), u.Locale, u.UpdatedAt, u.Username, p.ExpectVersion))
	if errors.Is(err, pgx.ErrNoRows) {
		var one int
		err = db.pool.QueryRow(ctx, `SELECT 1 FROM users WHERE username = $1`, u.Username).Scan(&one)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			err = xjob.ErrNotFound
		case err == nil:
			err = xjob.ErrConflict
		}
	}
	if err != nil {
		return xjob.User{}, db.wrap(fmt.Sprintf("user update %q", u.Username), err)
	}
	return out, nil
}

// UserDelete removes a user.
func (db *DB) UserDelete(ctx context.Context, username string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM users WHERE username = $1`, username)
	if err == nil && tag.RowsAffected() == 0 {
		err = xjob.ErrNotFound
	}
	if err != nil {
		return db.wrap(fmt.Sprintf("user delete %q", username), err)
	}
	return nil
}

// GlueVersionAdd stores a saved source and keeps the job's newest keep,
// in one transaction.
func (db *DB) GlueVersionAdd(ctx context.Context, v xjob.GlueVersion, keep int) error {
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO glue_versions (job_id, glue_type, source, remark, created_at)
			VALUES ($1, $2, $3, $4, $5)`, v.JobID, v.GlueType, v.Source, v.Remark, v.CreatedAt); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM glue_versions WHERE job_id = $1 AND id NOT IN
			(SELECT id FROM glue_versions WHERE job_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2)`,
			v.JobID, max(keep, 1))
		return err
	})
	if err != nil {
		return db.wrap(fmt.Sprintf("glue version add job %d", v.JobID), err)
	}
	return nil
}

// GlueVersionList returns a job's saved sources, newest first.
func (db *DB) GlueVersionList(ctx context.Context, jobID int64, limit int) ([]xjob.GlueVersion, error) {
	rows, err := db.pool.Query(ctx, `SELECT job_id, glue_type, source, remark, created_at FROM glue_versions
		WHERE job_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, jobID, clampLimit(limit, xjob.MaxGlueVersions, 1000))
	out, err := scanAll(rows, err, func(s pgx.Row) (xjob.GlueVersion, error) {
		var v xjob.GlueVersion
		err := s.Scan(&v.JobID, &v.GlueType, &v.Source, &v.Remark, &v.CreatedAt)
		return v, err
	})
	if err != nil {
		return nil, db.wrap(fmt.Sprintf("glue version list job %d", jobID), err)
	}
	return out, nil
}

// GlueVersionDeleteJob removes every saved source of a job.
func (db *DB) GlueVersionDeleteJob(ctx context.Context, jobID int64) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM glue_versions WHERE job_id = $1`, jobID); err != nil {
		return db.wrap(fmt.Sprintf("glue version delete job %d", jobID), err)
	}
	return nil
}
