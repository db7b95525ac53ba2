package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

const userColumns = `username, password_hash, role, group_ids, locale, version, created_at, updated_at`

func scanUser(s scanner) (xjob.User, error) {
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
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		n, err := rowsAffected(c.ExecContext(ctx, `INSERT INTO users (`+userColumns+`)
			VALUES (?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT (username) DO NOTHING`,
			u.Username, u.PasswordHash, u.Role, formatIDs(u.GroupIDs), u.Locale, u.CreatedAt, u.UpdatedAt))
		if err == nil && n == 0 {
			err = fmt.Errorf("username %q is taken: %w", u.Username, xjob.ErrConflict)
		}
		return err
	})
	if err != nil {
		return xjob.User{}, fmt.Errorf("sqlite user insert: %w", err)
	}
	return u, nil
}

// UserGet returns one user or xjob.ErrNotFound.
func (db *DB) UserGet(ctx context.Context, username string) (xjob.User, error) {
	u, err := scanUser(db.r.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE username = ?`, username))
	if err != nil {
		return xjob.User{}, fmt.Errorf("sqlite user get %q: %w", username, notFound(err))
	}
	return u, nil
}

// UserList returns users in username order, filtered.
func (db *DB) UserList(ctx context.Context, p driver.UserListParams) ([]xjob.User, error) {
	where := []string{"1 = 1"}
	var args []any
	if p.Username != "" {
		where, args = append(where, "instr(username, ?) > 0"), append(args, p.Username)
	}
	if p.Role != nil {
		where, args = append(where, "role = ?"), append(args, *p.Role)
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+userColumns+` FROM users WHERE `+
		strings.Join(where, " AND ")+` ORDER BY username`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite user list: %w", err)
	}
	out, err := scanAll(rows, scanUser)
	if err != nil {
		return nil, fmt.Errorf("sqlite user list: %w", err)
	}
	return out, nil
}

// UserUpdate replaces a user if its version is ExpectVersion.
func (db *DB) UserUpdate(ctx context.Context, p driver.UserUpdateParams) (xjob.User, error) {
	u := p.User
	var out xjob.User
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		var err error
		out, err = scanUser(c.QueryRowContext(ctx, `UPDATE users SET password_hash = ?, role = ?, group_ids = ?,
			locale = ?, updated_at = ?, version = version + 1
			WHERE username = ? AND version = ? RETURNING `+userColumns,
			u.PasswordHash, u.Role, formatIDs(u.GroupIDs), u.Locale, u.UpdatedAt, u.Username, p.ExpectVersion))
		if errors.Is(err, sql.ErrNoRows) {
			var one int
			err = c.QueryRowContext(ctx, `SELECT 1 FROM users WHERE username = ?`, u.Username).Scan(&one)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				err = xjob.ErrNotFound
			case err == nil:
				err = xjob.ErrConflict
			}
		}
		return err
	})
	if err != nil {
		return xjob.User{}, fmt.Errorf("sqlite user update %q: %w", u.Username, err)
	}
	return out, nil
}

// UserDelete removes a user.
func (db *DB) UserDelete(ctx context.Context, username string) error {
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		n, err := rowsAffected(c.ExecContext(ctx, `DELETE FROM users WHERE username = ?`, username))
		if err == nil && n == 0 {
			err = xjob.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite user delete %q: %w", username, err)
	}
	return nil
}

// GlueVersionAdd stores a saved source and keeps the job's newest keep.
func (db *DB) GlueVersionAdd(ctx context.Context, v xjob.GlueVersion, keep int) error {
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `INSERT INTO glue_versions (job_id, glue_type, source, remark, created_at)
			VALUES (?, ?, ?, ?, ?)`, v.JobID, v.GlueType, v.Source, v.Remark, v.CreatedAt); err != nil {
			return err
		}
		_, err := c.ExecContext(ctx, `DELETE FROM glue_versions WHERE job_id = ? AND id NOT IN
			(SELECT id FROM glue_versions WHERE job_id = ? ORDER BY created_at DESC, id DESC LIMIT ?)`,
			v.JobID, v.JobID, max(keep, 1))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite glue version add job %d: %w", v.JobID, err)
	}
	return nil
}

// GlueVersionList returns a job's saved sources, newest first.
func (db *DB) GlueVersionList(ctx context.Context, jobID int64, limit int) ([]xjob.GlueVersion, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT job_id, glue_type, source, remark, created_at FROM glue_versions
		WHERE job_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, jobID, clampLimit(limit, xjob.MaxGlueVersions, 1000))
	if err != nil {
		return nil, fmt.Errorf("sqlite glue version list job %d: %w", jobID, err)
	}
	out, err := scanAll(rows, func(s scanner) (xjob.GlueVersion, error) {
		var v xjob.GlueVersion
		err := s.Scan(&v.JobID, &v.GlueType, &v.Source, &v.Remark, &v.CreatedAt)
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite glue version list job %d: %w", jobID, err)
	}
	return out, nil
}

// GlueVersionDeleteJob removes every saved source of a job.
func (db *DB) GlueVersionDeleteJob(ctx context.Context, jobID int64) error {
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `DELETE FROM glue_versions WHERE job_id = ?`, jobID)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite glue version delete job %d: %w", jobID, err)
	}
	return nil
}
