package cluster

import (
	"fmt"
	"testing"
)

func counts(owner []string) map[string]int {
	c := map[string]int{}
	for _, o := range owner {
		c[o]++
	}
	return c
}

func TestAssignBalances(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		shards int
		nodes  []string
	}{
		{16, []string{"a"}},
		{16, []string{"a", "b"}},
		{16, []string{"a", "b", "c"}},
		{16, []string{"n1", "n2", "n3", "n4", "n5"}},
		{3, []string{"a", "b", "c", "d"}}, // more nodes than shards: some get none
		{64, []string{"xjob-0", "xjob-1", "xjob-2"}},
		{1, []string{"a", "b"}},
	} {
		t.Run(fmt.Sprintf("%d/%d", tc.shards, len(tc.nodes)), func(t *testing.T) {
			t.Parallel()
			owner := Assign(tc.shards, tc.nodes)
			c := counts(owner)
			lo, hi := tc.shards/len(tc.nodes), (tc.shards+len(tc.nodes)-1)/len(tc.nodes)
			total := 0
			for _, n := range tc.nodes {
				if c[n] < lo || c[n] > hi {
					t.Fatalf("node %s holds %d shards, want %d..%d: %v", n, c[n], lo, hi, owner)
				}
				total += c[n]
			}
			if total != tc.shards || c[""] != 0 {
				t.Fatalf("assigned %d of %d shards (%d unowned): %v", total, tc.shards, c[""], owner)
			}
		})
	}
}

func TestAssignSameForEveryNode(t *testing.T) {
	t.Parallel()
	a := Assign(16, []string{"c", "a", "b", "a"})
	b := Assign(16, []string{"a", "b", "c"})
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("order or duplicates changed the assignment:\n%v\n%v", a, b)
	}
	if got := Assign(4, nil); len(got) != 4 || got[0] != "" {
		t.Fatalf("no nodes: %v, want 4 unowned shards", got)
	}
}

// A node that joins takes about its share and the others keep the rest:
// far fewer moves than re-dealing every shard (modulo placement moves
// about two thirds of them going from 2 to 3 nodes).
func TestAssignMovesFew(t *testing.T) {
	t.Parallel()
	const shards = 64
	before := Assign(shards, []string{"a", "b"})
	after := Assign(shards, []string{"a", "b", "c"})
	moved := 0
	for s := range shards {
		if before[s] != after[s] {
			moved++
			if after[s] != "c" {
				t.Errorf("shard %d moved between old nodes %s → %s", s, before[s], after[s])
			}
		}
	}
	if want := shards / 3; moved > want+1 {
		t.Fatalf("%d shards moved when c joined, want about %d (c's share)", moved, want)
	}
	// c leaves again: exactly its shards move back.
	back := Assign(shards, []string{"a", "b"})
	for s := range shards {
		if back[s] != before[s] {
			t.Fatalf("shard %d: %s after c left, %s before it joined", s, back[s], before[s])
		}
	}
}
