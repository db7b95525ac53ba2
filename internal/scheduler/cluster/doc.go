// Package cluster divides the scan shards among the live nodes of an
// `xjob server` cluster: every node schedules, each about shards ÷ nodes
// of them, and a node's share passes to the others when it leaves or dies.
//
// Each node beats into the node table (driver.NodeStore) once a second
// with an expiry of one lease TTL, and reads the live set back. Every node
// computes the same assignment from the same live set (Assign: a pure
// function of the shard count and the sorted node ids), and its scanner
// holds only its own shards (scan.Config.Owns). The shard leases, not this
// package, keep scanning exclusive: while two nodes disagree about the
// live set for a moment, both may want a shard, and only the lease holder
// scans it; the other keeps trying.
//
// A node's life, as the others see it:
//
//	(absent) ──first beat──▶ live ──beat every 1 s──▶ live
//	                          │  └─ SIGTERM / drain: NodeLeave ──▶ (absent) at once;
//	                          │     its scanner released its leases first, so
//	                          │     the new owners take the shards on their next tick
//	                          └─ killed: no more beats ──TTL──▶ (absent); its leases
//	                             expire within the same TTL, then the new owners take them
//
// A dead node's pre-read fires are not lost meanwhile: they wait in the
// ring (a table of the shared database), and any node fires them.
package cluster
