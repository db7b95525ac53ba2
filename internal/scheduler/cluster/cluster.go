package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Config describes one node.
type Config struct {
	Nodes driver.NodeStore
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Logger receives membership changes; nil: slog.Default().
	Logger *slog.Logger
	// ID names this node (unique in the cluster: a host or pod name);
	// Addr is where it serves, for operators reading the node table.
	ID, Addr string
	// Shards is the cluster's scan shard count.
	Shards int
	// TTL is how long a node counts as live after its last beat: the
	// shard lease TTL, so that a dead node's shards are reassigned when
	// its leases expire. Beats go every TTL/5, at most once a second.
	TTL time.Duration
	// Gone, if set, is called after a beat with the nodes that were live
	// at the previous beat and are not now (left or died), for cleanup
	// such as releasing their queue claims. Every node calls it: it must
	// be idempotent.
	Gone func(ctx context.Context, ids []string)
}

// Member keeps one node in the cluster and says which shards it owns.
type Member struct {
	cfg   Config
	log   *slog.Logger
	every time.Duration

	mu       sync.Mutex
	owned    []bool
	live     []string
	lastBeat time.Time // of the last beat the store accepted
	left     bool
}

// New checks cfg and returns a member that has not joined yet: it owns
// no shard until its first Beat.
func New(cfg Config) (*Member, error) {
	switch {
	case cfg.Nodes == nil:
		return nil, errors.New("cluster: Nodes is required")
	case cfg.ID == "":
		return nil, errors.New("cluster: ID is required")
	case cfg.Shards < 1:
		return nil, errors.New("cluster: Shards must be ≥ 1")
	case cfg.TTL < 2*time.Second:
		return nil, errors.New("cluster: TTL must be ≥ 2s")
	}
	cfg.Clock = fallback.Clock(cfg.Clock)
	log := fallback.Logger(cfg.Logger)
	every := min(time.Second, cfg.TTL/5)
	return &Member{cfg: cfg, log: log, every: every, owned: make([]bool, cfg.Shards)}, nil
}

// Run beats until ctx ends. A failed beat is logged and retried at the
// next period; the node keeps its shards meanwhile (their leases, not
// the beats, guard them) and reports not ready once its last accepted
// beat is older than the TTL.
func (m *Member) Run(ctx context.Context) {
	for {
		if err := m.Beat(ctx); err != nil && ctx.Err() == nil {
			m.log.WarnContext(ctx, "cluster: beat failed", "node", m.cfg.ID, "err", err)
		}
		if err := m.cfg.Clock.SleepUntil(ctx, m.cfg.Clock.Now().Add(m.every)); err != nil {
			return
		}
	}
}

// Beat records this node as live, reads the live set and recomputes the
// shards this node owns.
func (m *Member) Beat(ctx context.Context) error {
	m.mu.Lock()
	left := m.left
	m.mu.Unlock()
	if left {
		return nil
	}
	now := m.cfg.Clock.Now()
	if err := m.cfg.Nodes.NodeBeat(ctx, m.cfg.ID, m.cfg.Addr, now.UnixMilli(), m.cfg.TTL); err != nil {
		return fmt.Errorf("cluster: beat: %w", err)
	}
	nodes, err := m.cfg.Nodes.NodesLive(ctx, now.UnixMilli())
	if err != nil {
		return fmt.Errorf("cluster: live nodes: %w", err)
	}
	ids := make([]string, 0, len(nodes)+1)
	for _, n := range nodes {
		ids = append(ids, n.ID)
	}
	if !slices.Contains(ids, m.cfg.ID) { // a read racing our own beat's expiry
		ids = append(ids, m.cfg.ID)
		slices.Sort(ids)
	}
	owner := Assign(m.cfg.Shards, ids)
	var gone []string
	defer func() {
		if len(gone) > 0 && m.cfg.Gone != nil {
			m.cfg.Gone(ctx, gone)
		}
	}()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.left {
		return nil
	}
	m.lastBeat = now
	if !slices.Equal(ids, m.live) {
		for _, id := range m.live {
			if !slices.Contains(ids, id) {
				gone = append(gone, id)
			}
		}
		n := 0
		for s := range owner {
			m.owned[s] = owner[s] == m.cfg.ID
			if m.owned[s] {
				n++
			}
		}
		m.log.InfoContext(ctx, "cluster: nodes changed", "node", m.cfg.ID, "nodes", ids, "shards", n)
		m.live = ids
	}
	return nil
}

// Owns reports whether this node should scan shard (scan.Config.Owns).
func (m *Member) Owns(shard int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.left && shard >= 0 && shard < len(m.owned) && m.owned[shard]
}

// Live returns the live node ids as of the last beat.
func (m *Member) Live() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.live)
}

// Ready reports whether this node is in the cluster: it has beaten within
// the TTL and has not left.
func (m *Member) Ready() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.left && !m.lastBeat.IsZero() && m.cfg.Clock.Now().Sub(m.lastBeat) < m.cfg.TTL
}

// Leave gives up every shard and removes this node from the node table,
// so the others take its shards at their next beat. Call it after the
// scanner has released its leases. Beats stop for good.
func (m *Member) Leave(ctx context.Context) error {
	m.mu.Lock()
	m.left = true
	clear(m.owned)
	m.mu.Unlock()
	if err := m.cfg.Nodes.NodeLeave(ctx, m.cfg.ID); err != nil {
		return fmt.Errorf("cluster: leave: %w", err)
	}
	return nil
}
