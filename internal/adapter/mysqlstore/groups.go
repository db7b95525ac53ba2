package mysqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

const groupColumns = `id, app_name, title, address_type, address_list, version, updated_at`

func scanGroup(s scanner) (xjob.Group, error) {
	var g xjob.Group
	var addrs string
	if err := s.Scan(&g.ID, &g.AppName, &g.Title, &g.AddressType, &addrs, &g.Version, &g.UpdatedAt); err != nil {
		return xjob.Group{}, err
	}
	if err := json.Unmarshal([]byte(addrs), &g.AddressList); err != nil {
		return xjob.Group{}, fmt.Errorf("group %d address list: %w", g.ID, err)
	}
	return g, nil
}

func addressJSON(addrs []string) string {
	if addrs == nil {
		addrs = []string{}
	}
	b, _ := json.Marshal(addrs) // a []string always marshals
	return string(b)
}

const sqlGroupExists = `SELECT 1 FROM job_groups WHERE id = ?`

// GroupInsert stores a new group with Version 1 under g.ID, or a new id
// when it is 0. A taken id is xjob.ErrConflict.
func (db *DB) GroupInsert(ctx context.Context, g xjob.Group) (xjob.Group, error) {
	var out xjob.Group
	err := db.retry(ctx, "group insert", func() error {
		var err error
		out, err = groupInsert(ctx, db.db, g)
		return err
	})
	if err != nil {
		return xjob.Group{}, fmt.Errorf("mysql group insert: %w", err)
	}
	return out, nil
}

func groupInsert(ctx context.Context, e execer, g xjob.Group) (xjob.Group, error) {
	var id any
	if g.ID != 0 {
		id = g.ID
	}
	res, err := e.ExecContext(ctx, `INSERT INTO job_groups (id, app_name, title, address_type, address_list, version, updated_at)
		VALUES (?, ?, ?, ?, ?, 1, ?)`, id, g.AppName, g.Title, g.AddressType, addressJSON(g.AddressList), g.UpdatedAt)
	if isCode(err, errDupEntry) {
		return xjob.Group{}, fmt.Errorf("group id %d is taken: %w", g.ID, xjob.ErrConflict)
	}
	if err != nil {
		return xjob.Group{}, err
	}
	if g.ID == 0 {
		if g.ID, err = res.LastInsertId(); err != nil {
			return xjob.Group{}, err
		}
	}
	g.Version = 1
	return g, nil
}

// GroupGet returns one group or xjob.ErrNotFound.
func (db *DB) GroupGet(ctx context.Context, id int64) (xjob.Group, error) {
	g, err := scanGroup(db.st.groupGet.QueryRowContext(ctx, id))
	if err != nil {
		return xjob.Group{}, fmt.Errorf("mysql group get %d: %w", id, notFound(err))
	}
	return g, nil
}

// GroupList returns groups in id order whose app name and title contain
// the filters (case-sensitive, as DynamoDB's contains).
func (db *DB) GroupList(ctx context.Context, p driver.GroupListParams) ([]xjob.Group, error) {
	where := []string{"1 = 1"}
	var args []any
	if p.AppName != "" {
		where, args = append(where, "INSTR(app_name, ?) > 0"), append(args, p.AppName)
	}
	if p.Title != "" {
		where, args = append(where, "INSTR(title, ?) > 0"), append(args, p.Title)
	}
	rows, err := db.db.QueryContext(ctx, `SELECT `+groupColumns+` FROM job_groups WHERE `+
		strings.Join(where, " AND ")+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("mysql group list: %w", err)
	}
	out, err := scanAll(rows, scanGroup)
	if err != nil {
		return nil, fmt.Errorf("mysql group list: %w", err)
	}
	return out, nil
}

// GroupUpdate replaces a group if its version is ExpectVersion.
func (db *DB) GroupUpdate(ctx context.Context, p driver.GroupUpdateParams) (xjob.Group, error) {
	var out xjob.Group
	err := db.tx(ctx, "group update", func(tx *sql.Tx) error {
		var err error
		out, err = groupUpdate(ctx, tx, p)
		return err
	})
	if err != nil {
		return xjob.Group{}, fmt.Errorf("mysql group update %d: %w", p.Group.ID, err)
	}
	return out, nil
}

// groupUpdate is GroupUpdate's statements, inside tx.
func groupUpdate(ctx context.Context, tx *sql.Tx, p driver.GroupUpdateParams) (xjob.Group, error) {
	g := p.Group
	n, err := rowsAffected(tx.ExecContext(ctx, `UPDATE job_groups SET app_name = ?, title = ?,
		address_type = ?, address_list = ?, updated_at = ?, version = version + 1
		WHERE id = ? AND version = ?`,
		g.AppName, g.Title, g.AddressType, addressJSON(g.AddressList), g.UpdatedAt, g.ID, p.ExpectVersion))
	if err != nil {
		return xjob.Group{}, err
	}
	if n == 0 {
		return xjob.Group{}, missingOr(ctx, tx, sqlGroupExists, g.ID, xjob.ErrConflict)
	}
	return scanGroup(tx.QueryRowContext(ctx, `SELECT `+groupColumns+` FROM job_groups WHERE id = ?`, g.ID))
}

// GroupSetAddresses stores a rebuilt address list. It does not bump the
// version: the registry's periodic rebuild must not make a person's edit
// of the same group lose its conditional write.
func (db *DB) GroupSetAddresses(ctx context.Context, id int64, addresses []string, updatedAt int64) error {
	err := db.retry(ctx, "group set addresses", func() error {
		n, err := rowsAffected(db.db.ExecContext(ctx, `UPDATE job_groups SET address_list = ?, updated_at = ? WHERE id = ?`,
			addressJSON(addresses), updatedAt, id))
		if err == nil && n == 0 {
			err = xjob.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("mysql group set addresses %d: %w", id, err)
	}
	return nil
}

// GroupDelete removes a group.
func (db *DB) GroupDelete(ctx context.Context, id int64) error {
	if err := groupDelete(ctx, db.db, id); err != nil {
		return fmt.Errorf("mysql group delete %d: %w", id, err)
	}
	return nil
}

func groupDelete(ctx context.Context, e execer, id int64) error {
	n, err := rowsAffected(e.ExecContext(ctx, `DELETE FROM job_groups WHERE id = ?`, id))
	if err == nil && n == 0 {
		err = xjob.ErrNotFound
	}
	return err
}
