package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/xjobdev/xjob/pkg/driver"
)

// Cluster identity and membership: what every node of one database must
// agree on (the shard count, the shared secrets), and which nodes are
// alive, for spreading the scan shards over them.

// ErrClusterMismatch is wrapped by the errors of a node whose settings
// differ from the ones the cluster was set up with.
var ErrClusterMismatch = errors.New("cluster mismatch")

// metaShards is the meta row of the scan shard count.
const metaShards = "shards"

// agreeShards records want as the database's shard count if none is
// recorded yet, and returns the recorded one; a different non-zero want
// is refused. 0 takes the recorded count (DefaultShards on a new
// database).
func (db *DB) agreeShards(ctx context.Context, want int) (int, error) {
	first := want
	if first == 0 {
		first = DefaultShards
	}
	got, err := db.metaSetOnce(ctx, metaShards, strconv.Itoa(first))
	if err != nil {
		return 0, fmt.Errorf("mysqlstore: shard count: %w", err)
	}
	n, err := strconv.Atoi(got)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("mysqlstore: the database records %q scan shards", got)
	}
	if want != 0 && want != n {
		return 0, fmt.Errorf("mysqlstore: the database was set up with %d scan shards, this node was started with %d: every node must use the same shard count: %w",
			n, want, ErrClusterMismatch)
	}
	return n, nil
}

// metaSetOnce stores value under name unless name has a value, and returns
// the stored value (the first writer's).
func (db *DB) metaSetOnce(ctx context.Context, name, value string) (string, error) {
	var got string
	err := db.retry(ctx, "meta", func() error {
		if _, err := db.db.ExecContext(ctx, `INSERT INTO meta (name, value) VALUES (?, ?)
			ON DUPLICATE KEY UPDATE name = name`, name, value); err != nil {
			return err
		}
		// A locking read: it waits for a first writer's insert that is
		// not committed yet instead of missing it (see insertLogs).
		err := db.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE name = ? LOCK IN SHARE MODE`, name).Scan(&got)
		if errors.Is(err, sql.ErrNoRows) {
			err = errRace
		}
		return err
	})
	return got, err
}

// ClusterSecretCheck stores digest under name on the first call for name
// and, on every later one, checks that digest is the one stored: an error
// wrapping ErrClusterMismatch when it is not. The caller hashes the
// secret (a node's access token, the console's signing key); the store
// only compares, so that a node started with another secret than its
// peers refuses to join instead of failing requests one by one.
func (db *DB) ClusterSecretCheck(ctx context.Context, name, digest string) error {
	if name == "" || digest == "" {
		return errors.New("mysqlstore: cluster secret check: empty name or digest")
	}
	got, err := db.metaSetOnce(ctx, "secret:"+name, digest)
	if err != nil {
		return fmt.Errorf("mysqlstore: cluster secret %s: %w", name, err)
	}
	if got != digest {
		return fmt.Errorf("mysqlstore: this node's %s differs from the one the cluster was set up with: %w", name, ErrClusterMismatch)
	}
	return nil
}

// Node is a live xjob server node (driver.Node): ID, Addr and when
// (Unix ms) it counts as gone unless it beats again.
type Node = driver.Node

var _ driver.NodeStore = (*DB)(nil)

// nodeForgetAfter is how long an expired node's row stays, for anyone
// reading membership history; then NodeBeat deletes it on the way.
const nodeForgetAfter = time.Hour

// NodeBeat records that node id, reachable at addr, is alive at now (Unix
// ms) and for ttl after: an upsert that never moves the expiry back, so a
// delayed beat cannot shorten a fresher one.
func (db *DB) NodeBeat(ctx context.Context, id, addr string, now int64, ttl time.Duration) error {
	if id == "" {
		return errors.New("mysqlstore: node beat: empty node id")
	}
	err := db.retry(ctx, "node beat", func() error {
		_, err := db.db.ExecContext(ctx, `INSERT INTO nodes (id, addr, expires_at) VALUES (?, ?, ?)
			ON DUPLICATE KEY UPDATE addr = VALUES(addr), expires_at = GREATEST(expires_at, VALUES(expires_at))`,
			id, addr, now+ttl.Milliseconds())
		return err
	})
	if err != nil {
		return fmt.Errorf("mysqlstore: node beat %s: %w", id, err)
	}
	_, _ = db.db.ExecContext(ctx, `DELETE FROM nodes WHERE expires_at < ? LIMIT 100`, now-nodeForgetAfter.Milliseconds())
	return nil
}

// NodeLeave removes node id: its peers take its shards over at once
// instead of after its expiry. Leaving twice is not an error.
func (db *DB) NodeLeave(ctx context.Context, id string) error {
	if _, err := db.db.ExecContext(ctx, `DELETE FROM nodes WHERE id = ?`, id); err != nil {
		return fmt.Errorf("mysqlstore: node leave %s: %w", id, err)
	}
	return nil
}

// NodesLive returns the nodes whose expiry is after now (Unix ms), in id
// order (byte order).
func (db *DB) NodesLive(ctx context.Context, now int64) ([]Node, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT id, addr, expires_at FROM nodes WHERE expires_at > ? ORDER BY id`, now)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: nodes live: %w", err)
	}
	out, err := scanAll(rows, func(s scanner) (Node, error) {
		var n Node
		err := s.Scan(&n.ID, &n.Addr, &n.ExpiresAt)
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: nodes live: %w", err)
	}
	return out, nil
}
