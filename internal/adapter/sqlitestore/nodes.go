package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/xjobdev/xjob/pkg/driver"
)

var _ driver.NodeStore = (*DB)(nil)

// NodeBeat records node id as live until now+ttl.
func (db *DB) NodeBeat(ctx context.Context, id, addr string, now int64, ttl time.Duration) error {
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `INSERT INTO nodes (id, addr, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET addr = excluded.addr, expires_at = excluded.expires_at`,
			id, addr, now+ttl.Milliseconds())
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite node beat %s: %w", id, err)
	}
	return nil
}

// NodeLeave removes node id.
func (db *DB) NodeLeave(ctx context.Context, id string) error {
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `DELETE FROM nodes WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite node leave %s: %w", id, err)
	}
	return nil
}

// NodesLive returns the nodes whose beat outlives now, by id.
func (db *DB) NodesLive(ctx context.Context, now int64) ([]driver.Node, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, addr, expires_at FROM nodes WHERE expires_at > ? ORDER BY id`, now)
	if err != nil {
		return nil, fmt.Errorf("sqlite live nodes: %w", err)
	}
	defer rows.Close()
	var out []driver.Node
	for rows.Next() {
		var n driver.Node
		if err := rows.Scan(&n.ID, &n.Addr, &n.ExpiresAt); err != nil {
			return nil, fmt.Errorf("sqlite live nodes: %w", err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite live nodes: %w", err)
	}
	return out, nil
}

// ErrClusterMismatch is a ClusterSecretCheck whose digest differs from
// the one the cluster's first node stored.
var ErrClusterMismatch = errors.New("differs from the cluster's")

// ClusterSecretCheck stores digest under name on first use; a later call
// with another digest fails with ErrClusterMismatch.
func (db *DB) ClusterSecretCheck(ctx context.Context, name, digest string) error {
	var stored string
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `INSERT INTO cluster_secrets (name, digest) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
			name, digest); err != nil {
			return err
		}
		return c.QueryRowContext(ctx, `SELECT digest FROM cluster_secrets WHERE name = ?`, name).Scan(&stored)
	})
	if err != nil {
		return fmt.Errorf("sqlite cluster secret %s: %w", name, err)
	}
	if stored != digest {
		return fmt.Errorf("sqlite cluster secret %s: %w", name, ErrClusterMismatch)
	}
	return nil
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.r.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite ping: %w", err)
	}
	return nil
}
