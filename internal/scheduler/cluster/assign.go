package cluster

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
)

// Assign maps each of shards scan shards to one of nodes (ids, in any
// order; duplicates count once): every node gets ⌊shards/n⌋ or ⌈shards/n⌉
// of them, and most shards stay where they were when a node joins or
// leaves. Every node that sees the same live set computes the same map.
//
// It is rendezvous hashing with quotas: each shard ranks the nodes by a
// hash of (shard, node) and goes to the best-ranked node that still has
// room. The quotas keep the counts within one of each other, which plain
// rendezvous hashing does not (16 shards on 3 nodes could split 8/5/3);
// the ranking keeps moves few.
func Assign(shards int, nodes []string) []string {
	ids := slices.Clone(nodes)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	owner := make([]string, shards)
	if len(ids) == 0 {
		return owner
	}
	// The first shards%n nodes, in id order, take one shard more.
	quota := make(map[string]int, len(ids))
	for i, id := range ids {
		quota[id] = shards / len(ids)
		if i < shards%len(ids) {
			quota[id]++
		}
	}
	ranked := make([]string, len(ids))
	for s := range shards {
		copy(ranked, ids)
		slices.SortFunc(ranked, func(a, b string) int {
			ha, hb := score(s, a), score(s, b)
			switch {
			case ha > hb:
				return -1
			case ha < hb:
				return 1
			}
			return 0
		})
		for _, id := range ranked {
			if quota[id] > 0 {
				quota[id]--
				owner[s] = id
				break
			}
		}
	}
	return owner
}

// score is the rendezvous weight of node id for shard s.
func score(s int, id string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(s))
	_, _ = h.Write(b[:])
	_, _ = h.Write([]byte(id))
	x := h.Sum64()
	// fnv's low bits mix poorly for short inputs: finish with splitmix64.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
