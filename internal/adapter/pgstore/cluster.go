package pgstore

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/xjobdev/xjob/pkg/driver"

	"github.com/jackc/pgx/v5"
)

// Node is one live xjob server node, as its last beat left it.
type Node struct {
	// ID names the node; it is stable across its beats (and, if the
	// operator gives it, across restarts).
	ID string
	// Addr is where the node serves (its advertised URL or host:port).
	Addr string
	// StartedAt is the node's first beat since it was last absent (Unix ms).
	StartedAt int64
	// BeatAt is its last beat and ExpiresAt when it stops counting as
	// live without another (Unix ms).
	BeatAt, ExpiresAt int64
}

// nodeForgetAfter is how long after its expiry a node's row is deleted
// by the next beat of any node: long enough for the others to have seen
// it leave.
const nodeForgetAfter = time.Hour

// NodeBeat records that node id, serving at addr, is live at now (Unix
// ms) until now+ttl: an upsert, one statement per beat. A node that
// beats after its row expired (it was paused, or partitioned away) starts
// anew: StartedAt moves to now, so the others can tell it was absent.
// Rows expired for long are deleted on the way.
func (db *DB) NodeBeat(ctx context.Context, id, addr string, now int64, ttl time.Duration) error {
	if id == "" {
		return errors.New("pgstore node beat: empty node id")
	}
	_, err := db.pool.Exec(ctx, `WITH gone AS (DELETE FROM nodes WHERE expires_at < $5 AND id <> $1)
		INSERT INTO nodes (id, addr, started_at, beat_at, expires_at) VALUES ($1, $2, $3, $3, $4)
		ON CONFLICT (id) DO UPDATE SET addr = excluded.addr, beat_at = excluded.beat_at, expires_at = excluded.expires_at,
			started_at = CASE WHEN nodes.expires_at < excluded.beat_at THEN excluded.beat_at ELSE nodes.started_at END`,
		id, addr, now, now+ttl.Milliseconds(), now-nodeForgetAfter.Milliseconds())
	if err != nil {
		return db.wrap("node beat "+id, err)
	}
	return nil
}

// NodeLeave removes node id at once (a clean shutdown), so that the
// others rebalance without waiting for its beat to expire. Leaving twice
// is not an error.
func (db *DB) NodeLeave(ctx context.Context, id string) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM nodes WHERE id = $1`, id); err != nil {
		return db.wrap("node leave "+id, err)
	}
	return nil
}

// NodesLive returns the nodes whose beat has not expired at now (Unix
// ms), in id order: every node reading it at one instant sees one list,
// from which each derives its share of the shards (driver.NodeStore).
func (db *DB) NodesLive(ctx context.Context, now int64) ([]driver.Node, error) {
	nodes, err := db.NodesDetail(ctx, now)
	if err != nil {
		return nil, err
	}
	out := make([]driver.Node, len(nodes))
	for i, n := range nodes {
		out[i] = driver.Node{ID: n.ID, Addr: n.Addr, ExpiresAt: n.ExpiresAt}
	}
	return out, nil
}

// NodesDetail is NodesLive with when each node started and last beat,
// for operators.
func (db *DB) NodesDetail(ctx context.Context, now int64) ([]Node, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, addr, started_at, beat_at, expires_at FROM nodes
		WHERE expires_at > $1 ORDER BY id COLLATE "C"`, now)
	nodes, err := scanAll(rows, err, func(r pgx.Row) (Node, error) {
		var n Node
		err := r.Scan(&n.ID, &n.Addr, &n.StartedAt, &n.BeatAt, &n.ExpiresAt)
		return n, err
	})
	if err != nil {
		return nil, db.wrap("nodes live", err)
	}
	return nodes, nil
}

// ErrClusterMismatch: a cluster-wide value this node holds (a token's
// digest) differs from the one the cluster's first node stored.
var ErrClusterMismatch = errors.New("pgstore: this node's configuration differs from the cluster's")

// ClusterSecretCheck compares digest, the check value of the secret
// called name (the caller hashes the secret; the store only compares),
// with the one stored for name: the first call for a name stores it,
// every later call must pass the same, or gets an error wrapping
// ErrClusterMismatch. It is what stops a node started with another
// access token from joining a cluster whose executors would then fail
// half of their calls.
func (db *DB) ClusterSecretCheck(ctx context.Context, name, digest string) error {
	if name == "" || digest == "" {
		return errors.New("pgstore cluster secret check: empty name or digest")
	}
	stored, err := metaPut(ctx, db.pool, "secret:"+name, digest)
	if err != nil {
		return db.wrap("cluster secret check "+name, err)
	}
	if subtle.ConstantTimeCompare([]byte(stored), []byte(digest)) != 1 {
		return fmt.Errorf("pgstore: %s differs from the one the cluster's nodes use (set the same on every node): %w", name, ErrClusterMismatch)
	}
	return nil
}
