package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

const groupColumns = `id, app_name, title, address_type, address_list, version, updated_at`

func scanGroup(s pgx.Row) (xjob.Group, error) {
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
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if g.ID != 0 {
			if err := lockForExplicitIDs(ctx, tx, "groups"); err != nil {
				return err
			}
		}
		var err error
		out, err = groupInsert(ctx, tx, g)
		return err
	})
	if err != nil {
		return xjob.Group{}, db.wrap("group insert", err)
	}
	return out, nil
}

// groupInsert is GroupInsert's statements, in the caller's transaction
// (which holds lockForExplicitIDs when g.ID is set).
func groupInsert(ctx context.Context, tx pgx.Tx, g xjob.Group) (xjob.Group, error) {
	var explicit *int64
	if g.ID != 0 {
		explicit = &g.ID
	}
	err := tx.QueryRow(ctx, `INSERT INTO groups (id, app_name, title, address_type, address_list, version, updated_at)
		VALUES (coalesce($1, nextval(pg_get_serial_sequence('groups', 'id'))), $2, $3, $4, $5, 1, $6)
		ON CONFLICT (id) DO NOTHING RETURNING id`,
		explicit, g.AppName, g.Title, g.AddressType, addressJSON(g.AddressList), g.UpdatedAt).Scan(&g.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return xjob.Group{}, fmt.Errorf("group id %d is taken: %w", g.ID, xjob.ErrConflict)
	}
	if err != nil {
		return xjob.Group{}, err
	}
	if explicit != nil {
		if err := bumpSequence(ctx, tx, "groups", g.ID); err != nil {
			return xjob.Group{}, err
		}
	}
	g.Version = 1
	return g, nil
}

// GroupGet returns one group or xjob.ErrNotFound.
func (db *DB) GroupGet(ctx context.Context, id int64) (xjob.Group, error) {
	g, err := scanGroup(db.pool.QueryRow(ctx, `SELECT `+groupColumns+` FROM groups WHERE id = $1`, id))
	if err != nil {
		return xjob.Group{}, db.wrap(fmt.Sprintf("group get %d", id), notFound(err))
	}
	return g, nil
}

// GroupList returns groups in id order whose app name and title contain
// the filters (case-sensitive, as DynamoDB's contains).
func (db *DB) GroupList(ctx context.Context, p driver.GroupListParams) ([]xjob.Group, error) {
	where := []string{"true"}
	var a args
	if p.AppName != "" {
		where = append(where, "strpos(app_name, "+a.add(p.AppName)+") > 0")
	}
	if p.Title != "" {
		where = append(where, "strpos(title, "+a.add(p.Title)+") > 0")
	}
	rows, err := db.pool.Query(ctx, `SELECT `+groupColumns+` FROM groups WHERE `+
		strings.Join(where, " AND ")+` ORDER BY id`, a...)
	out, err := scanAll(rows, err, scanGroup)
	if err != nil {
		return nil, db.wrap("group list", err)
	}
	return out, nil
}

// GroupUpdate replaces a group if its version is ExpectVersion.
func (db *DB) GroupUpdate(ctx context.Context, p driver.GroupUpdateParams) (xjob.Group, error) {
	out, err := db.groupUpdate(ctx, db.pool, p)
	if err != nil {
		return xjob.Group{}, db.wrap(fmt.Sprintf("group update %d", p.Group.ID), err)
	}
	return out, nil
}

func (db *DB) groupUpdate(ctx context.Context, q querier, p driver.GroupUpdateParams) (xjob.Group, error) {
	g := p.Group
	out, err := scanGroup(q.QueryRow(ctx, `UPDATE groups SET app_name = $1, title = $2,
		address_type = $3, address_list = $4, updated_at = $5, version = version + 1
		WHERE id = $6 AND version = $7 RETURNING `+groupColumns,
		g.AppName, g.Title, g.AddressType, addressJSON(g.AddressList), g.UpdatedAt, g.ID, p.ExpectVersion))
	if errors.Is(err, pgx.ErrNoRows) {
		err = db.missingOr(ctx, q, "groups", g.ID, xjob.ErrConflict)
	}
	return out, err
}

// GroupSetAddresses stores a rebuilt address list. It does not bump the
// version: the registry's periodic rebuild must not make a person's edit
// of the same group lose its conditional write.
func (db *DB) GroupSetAddresses(ctx context.Context, id int64, addresses []string, updatedAt int64) error {
	tag, err := db.pool.Exec(ctx, `UPDATE groups SET address_list = $1, updated_at = $2 WHERE id = $3`,
		addressJSON(addresses), updatedAt, id)
	if err == nil && tag.RowsAffected() == 0 {
		err = xjob.ErrNotFound
	}
	if err != nil {
		return db.wrap(fmt.Sprintf("group set addresses %d", id), err)
	}
	return nil
}

// GroupDelete removes a group.
func (db *DB) GroupDelete(ctx context.Context, id int64) error {
	if err := deleteByID(ctx, db.pool, "groups", id); err != nil {
		return db.wrap(fmt.Sprintf("group delete %d", id), err)
	}
	return nil
}
