package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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

// GroupInsert stores a new group with Version 1 under g.ID, or a new id
// when it is 0. A taken id is xjob.ErrConflict.
func (db *DB) GroupInsert(ctx context.Context, g xjob.Group) (xjob.Group, error) {
	var out xjob.Group
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		var err error
		out, err = db.groupInsert(ctx, c, g)
		return err
	})
	if err != nil {
		return xjob.Group{}, fmt.Errorf("sqlite group insert: %w", err)
	}
	return out, nil
}

// groupInsert is GroupInsert's statements, run by the writer.
func (db *DB) groupInsert(ctx context.Context, c *sql.Conn, g xjob.Group) (xjob.Group, error) {
	if err := idFree(ctx, db.ws.groupExists, "group", g.ID); err != nil {
		return xjob.Group{}, err
	}
	err := c.QueryRowContext(ctx, `INSERT INTO groups (id, app_name, title, address_type, address_list, version, updated_at)
		VALUES (?, ?, ?, ?, ?, 1, ?) RETURNING id`,
		nullID(g.ID), g.AppName, g.Title, g.AddressType, addressJSON(g.AddressList), g.UpdatedAt).Scan(&g.ID)
	g.Version = 1
	return g, err
}

// GroupGet returns one group or xjob.ErrNotFound.
func (db *DB) GroupGet(ctx context.Context, id int64) (xjob.Group, error) {
	g, err := scanGroup(db.rs.groupGet.QueryRowContext(ctx, id))
	if err != nil {
		return xjob.Group{}, fmt.Errorf("sqlite group get %d: %w", id, notFound(err))
	}
	return g, nil
}

// GroupList returns groups in id order whose app name and title contain
// the filters (case-sensitive, as DynamoDB's contains).
func (db *DB) GroupList(ctx context.Context, p driver.GroupListParams) ([]xjob.Group, error) {
	where := []string{"1 = 1"}
	var args []any
	if p.AppName != "" {
		where, args = append(where, "instr(app_name, ?) > 0"), append(args, p.AppName)
	}
	if p.Title != "" {
		where, args = append(where, "instr(title, ?) > 0"), append(args, p.Title)
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+groupColumns+` FROM groups WHERE `+
		strings.Join(where, " AND ")+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite group list: %w", err)
	}
	out, err := scanAll(rows, scanGroup)
	if err != nil {
		return nil, fmt.Errorf("sqlite group list: %w", err)
	}
	return out, nil
}

// GroupUpdate replaces a group if its version is ExpectVersion.
func (db *DB) GroupUpdate(ctx context.Context, p driver.GroupUpdateParams) (xjob.Group, error) {
	var out xjob.Group
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		var err error
		out, err = db.groupUpdate(ctx, c, p)
		return err
	})
	if err != nil {
		return xjob.Group{}, fmt.Errorf("sqlite group update %d: %w", p.Group.ID, err)
	}
	return out, nil
}

// groupUpdate is GroupUpdate's statement, run by the writer.
func (db *DB) groupUpdate(ctx context.Context, c *sql.Conn, p driver.GroupUpdateParams) (xjob.Group, error) {
	g := p.Group
	out, err := scanGroup(c.QueryRowContext(ctx, `UPDATE groups SET app_name = ?, title = ?,
		address_type = ?, address_list = ?, updated_at = ?, version = version + 1
		WHERE id = ? AND version = ? RETURNING `+groupColumns,
		g.AppName, g.Title, g.AddressType, addressJSON(g.AddressList), g.UpdatedAt, g.ID, p.ExpectVersion))
	if errors.Is(err, sql.ErrNoRows) {
		err = missingOr(ctx, db.ws.groupExists, g.ID, xjob.ErrConflict)
	}
	return out, err
}

// GroupSetAddresses stores a rebuilt address list. It does not bump the
// version: the registry's periodic rebuild must not make a person's edit
// of the same group lose its conditional write.
func (db *DB) GroupSetAddresses(ctx context.Context, id int64, addresses []string, updatedAt int64) error {
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		n, err := rowsAffected(c.ExecContext(ctx, `UPDATE groups SET address_list = ?, updated_at = ? WHERE id = ?`,
			addressJSON(addresses), updatedAt, id))
		if err == nil && n == 0 {
			err = xjob.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite group set addresses %d: %w", id, err)
	}
	return nil
}

// GroupDelete removes a group.
func (db *DB) GroupDelete(ctx context.Context, id int64) error {
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error { return groupDelete(ctx, c, id) })
	if err != nil {
		return fmt.Errorf("sqlite group delete %d: %w", id, err)
	}
	return nil
}

func groupDelete(ctx context.Context, c *sql.Conn, id int64) error {
	n, err := rowsAffected(c.ExecContext(ctx, `DELETE FROM groups WHERE id = ?`, id))
	if err == nil && n == 0 {
		err = xjob.ErrNotFound
	}
	return err
}

// badCursor is the error for a page cursor this store did not issue.
func badCursor(c string) error {
	return &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "cursor", Message: fmt.Sprintf("%q is not a valid page cursor", c)}}}
}
