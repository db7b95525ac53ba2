package cluster_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/scheduler/cluster"
	"github.com/xjobdev/xjob/pkg/clock"
)

const shards = 16

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

type env struct {
	db  *sqlitestore.DB
	clk *clock.Fake
}

func setup(t *testing.T) env {
	t.Helper()
	clk := clock.NewFake(t0)
	db, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "xjob.db"), sqlitestore.Options{Shards: shards, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return env{db: db, clk: clk}
}

func (e env) member(t *testing.T, id string) *cluster.Member {
	t.Helper()
	m, err := cluster.New(cluster.Config{Nodes: e.db, Clock: e.clk, ID: id, Addr: "http://" + id, Shards: shards, TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func beat(t *testing.T, ms ...*cluster.Member) {
	t.Helper()
	for _, m := range ms {
		if err := m.Beat(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// owned returns, per shard, which of ms owns it; the test fails when a
// shard has two owners or, with all, none.
func owned(t *testing.T, all bool, ms ...*cluster.Member) map[*cluster.Member]int {
	t.Helper()
	n := map[*cluster.Member]int{}
	for s := range shards {
		owners := 0
		for _, m := range ms {
			if m.Owns(s) {
				owners++
				n[m]++
			}
		}
		if owners > 1 || (all && owners == 0) {
			t.Fatalf("shard %d has %d owners", s, owners)
		}
	}
	return n
}

func TestMembersShareShards(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, b, c := e.member(t, "a"), e.member(t, "b"), e.member(t, "c")
	if a.Ready() || a.Owns(0) {
		t.Fatal("a member owns shards or is ready before its first beat")
	}
	beat(t, a)
	if n := owned(t, true, a); n[a] != shards || !a.Ready() {
		t.Fatalf("alone, a owns %d shards (ready %v), want all", n[a], a.Ready())
	}
	beat(t, b, c, a, b) // everyone has seen everyone
	n := owned(t, true, a, b, c)
	for _, m := range []*cluster.Member{a, b, c} {
		if n[m] < shards/3 || n[m] > shards/3+1 {
			t.Fatalf("with three nodes the shares are %v, want 5 or 6 each", n)
		}
	}

	// b leaves cleanly: a and c own everything at their next beat.
	if err := b.Leave(t.Context()); err != nil {
		t.Fatal(err)
	}
	if b.Owns(0) || b.Ready() || owned(t, false, b)[b] != 0 {
		t.Fatal("b still owns shards after leaving")
	}
	beat(t, a, c)
	if n := owned(t, true, a, c); n[a]+n[c] != shards {
		t.Fatalf("after b left: %v", n)
	}

	// c dies: no beat. Before its TTL a still counts it; after, a owns all.
	e.clk.Advance(4 * time.Second)
	beat(t, a)
	if owned(t, false, a)[a] == shards {
		t.Fatal("a took c's shards before c's beat expired")
	}
	e.clk.Advance(2 * time.Second)
	beat(t, a)
	if n := owned(t, true, a); n[a] != shards {
		t.Fatalf("after c's beat expired a owns %d shards, want all", n[a])
	}
	if c.Ready() {
		t.Fatal("c is ready although its last beat is older than the TTL")
	}
}

func TestMemberRunBeatsUntilCancelled(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.member(t, "a")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	// Each period the clock moves, the member beats again and stays ready.
	for range 10 {
		if err := e.clk.WaitForSleepers(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Second)
	}
	if err := e.clk.WaitForSleepers(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if !a.Ready() {
		t.Fatal("a running member is not ready")
	}
	live, err := e.db.NodesLive(t.Context(), e.clk.Now().UnixMilli())
	if err != nil || len(live) != 1 || live[0].ExpiresAt != e.clk.Now().Add(5*time.Second).UnixMilli() {
		t.Fatalf("live %+v %v, want a's beat of now", live, err)
	}
	cancel()
	<-done
}
