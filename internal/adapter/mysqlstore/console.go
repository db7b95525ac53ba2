package mysqlstore

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
	err := db.retry(ctx, "user insert", func() error {
		_, err := db.db.ExecContext(ctx, `INSERT INTO users (`+userColumns+`) VALUES (?, ?, ?, ?, ?, 1, ?, ?)`,
			u.Username, u.PasswordHash, u.Role, formatIDs(u.GroupIDs), u.Locale, u.CreatedAt, u.UpdatedAt)
		if isCode(err, errDupEntry) {
			err = fmt.Errorf("username %q is taken: %w", u.Username, xjob.ErrConflict)
		}
		return err
	})
	if err != nil {
		return xjob.User{}, fmt.Errorf("mysql user insert: %w", err)
	}
	return u, nil
}

// UserGet returns one user or xjob.ErrNotFound.
func (db *DB) UserGet(ctx context.Context, username string) (xjob.User, error) {
	u, err := scanUser(db.db.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE username = ?`, username))
	if err != nil {
		return xjob.User{}, fmt.Errorf("mysql user get %q: %w", username, notFound(err))
	}
	return u, nil
}

// UserList returns users in username order, filtered.
func (db *DB) UserList(ctx context.Context, p driver.UserListParams) ([]xjob.User, error) {
	where := []string{"1 = 1"}
	var args []any
	if p.Username != "" {
		where, args = append(where, "INSTR(username, ?) > 0"), append(args, p.Username)
	}
	if p.Role != nil {
		where, args = append(where, "role = ?"), append(args, *p.Role)
	}
	rows, err := db.db.QueryContext(ctx, `SELECT `+userColumns+` FROM users WHERE `+
		strings.Join(where, " AND ")+` ORDER BY username`, args...)
	if err != nil {
		return nil, fmt.Errorf("mysql user list: %w", err)
	}
	out, err := scanAll(rows, scanUser)
	if err != nil {
		return nil, fmt.Errorf("mysql user list: %w", err)
	}
	return out, nil
}

// UserUpdate replaces a user if its version is ExpectVersion.
func (db *DB) UserUpdate(ctx context.Context, p driver.UserUpdateParams) (xjob.User, error) {
	u := p.User
	var out xjob.User
	err := db.tx(ctx, "user update", func(tx *sql.Tx) error {
		n, err := rowsAffected(tx.ExecContext(ctx, `UPDATE users SET password_hash = ?, role = ?, group_ids = ?,
			locale = ?, updated_at = ?, version = version + 1 WHERE username = ? AND version = ?`,
			u.PasswordHash, u.Role, formatIDs(u.GroupIDs), u.Locale, u.UpdatedAt, u.Username, p.ExpectVersion))
		if err != nil {
			return err
		}
		if n == 0 {
			return missingOr(ctx, tx, `SELECT 1 FROM users WHERE username = ?`, u.Username, xjob.ErrConflict)
		}
		out, err = scanUser(tx.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE username = ?`, u.Username))
		return err
	})
	if err != nil {
		return xjob.User{}, fmt.Errorf("mysql user update %q: %w", u.Username, err)
	}
	return out, nil
}

// UserDelete removes a user.
func (db *DB) UserDelete(ctx context.Context, username string) error {
	n, err := rowsAffected(db.db.ExecContext(ctx, `DELETE FROM users WHERE username = ?`, username))
	if err == nil && n == 0 {
		err = xjob.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("mysql user delete %q: %w", username, err)
	}
	return nil
}

// GlueVersionAdd stores a saved source and keeps the job's newest keep,
// in one transaction: the keep-th newest version bounds the delete
// (MySQL allows no LIMIT in an IN subquery).
func (db *DB) GlueVersionAdd(ctx context.Context, v xjob.GlueVersion, keep int) error {
	err := db.tx(ctx, "glue version add", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO glue_versions (job_id, glue_type, source, remark, created_at)
			VALUES (?, ?, ?, ?, ?)`, v.JobID, v.GlueType, v.Source, v.Remark, v.CreatedAt); err != nil {
			return err
		}
		var at, id int64
		err := tx.QueryRowContext(ctx, `SELECT created_at, id FROM glue_versions WHERE job_id = ?
			ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ?`, v.JobID, max(keep, 1)-1).Scan(&at, &id)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM glue_versions WHERE job_id = ?
			AND (created_at < ? OR (created_at = ? AND id < ?))`, v.JobID, at, at, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("mysql glue version add job %d: %w", v.JobID, err)
	}
	return nil
}

// GlueVersionList returns a job's saved sources, newest first.
func (db *DB) GlueVersionList(ctx context.Context, jobID int64, limit int) ([]xjob.GlueVersion, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT job_id, glue_type, source, remark, created_at FROM glue_versions
		WHERE job_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, jobID, clampLimit(limit, xjob.MaxGlueVersions, 1000))
	if err != nil {
		return nil, fmt.Errorf("mysql glue version list job %d: %w", jobID, err)
	}
	out, err := scanAll(rows, func(s scanner) (xjob.GlueVersion, error) {
		var v xjob.GlueVersion
		err := s.Scan(&v.JobID, &v.GlueType, &v.Source, &v.Remark, &v.CreatedAt)
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("mysql glue version list job %d: %w", jobID, err)
	}
	return out, nil
}

// GlueVersionDeleteJob removes every saved source of a job.
func (db *DB) GlueVersionDeleteJob(ctx context.Context, jobID int64) error {
	if _, err := db.db.ExecContext(ctx, `DELETE FROM glue_versions WHERE job_id = ?`, jobID); err != nil {
		return fmt.Errorf("mysql glue version delete job %d: %w", jobID, err)
	}
	return nil
}
