package route

import "fmt"

// Shard is one trigger of a SHARDING_BROADCAST fan-out: the executor gets
// broadcastIndex=Index and broadcastTotal=Total.
type Shard struct {
	Index   int
	Total   int
	Address string
}

// Broadcast returns xxl-job's SHARDING_BROADCAST fan-out: one shard per
// address, i = 0..n-1 of n, sent to addrs[i]. It is empty for an empty
// list; xxl-job then writes a single failed trigger with shard 0/1, which
// is the dispatcher's job.
func Broadcast(addrs []string) []Shard {
	shards := make([]Shard, len(addrs))
	for i, a := range addrs {
		shards[i] = Shard{Index: i, Total: len(addrs), Address: a}
	}
	return shards
}

// ShardAddress returns the executor for shard index of a broadcast, as
// xxl-job chooses it when a shard is triggered on its own (a retry reuses
// the stored index/total): addrs[index], or addrs[0] when the group has
// shrunk below index+1 (or index is negative).
func ShardAddress(addrs []string, index int) (string, error) {
	if len(addrs) == 0 {
		return "", fmt.Errorf("route shard %d: %w", index, ErrNoAddress)
	}
	if index >= 0 && index < len(addrs) {
		return addrs[index], nil
	}
	return addrs[0], nil
}
