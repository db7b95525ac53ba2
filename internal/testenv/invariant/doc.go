// Package invariant holds no production code: its tests drive the real core
// services (scan, ring, dispatch, callback) over the real SQLite backend and
// a protocol-speaking executor on loopback, and check the invariants of
// docs/architecture.md end to end — no lost fire, no duplicate execution, one
// active scanner per shard — under injected crashes, redeliveries and races.
package invariant
