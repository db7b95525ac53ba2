// Package local is `xjob local`: every service of the scheduling center in
// one process on one SQLite file (package sqlitestore), for development,
// demos and small installations. It is also `xjob server` (server.go): the
// same host, one node of a cluster over a PostgreSQL or MySQL database the
// nodes share (pgstore, mysqlstore), each scanning the shards package
// cluster assigns it. Both run host (local.go) over a backend; what differs
// is around it: local mode's files next to the database and its demo, the
// server's membership, readiness, drain and chores under leases.
//
// One process hosts, each on its own goroutine:
//
//	scan (tick at every second) ──▶ ring queue ──▶ ring pollers ──▶ fast lane workers ─┐
//	                                                            └─▶ slow lane workers ─┴▶ dispatch ──▶ executors
//	lane queues (retries, child jobs, manual triggers, overflow) ──▶ lane consumers ──▶ dispatch
//	HTTP listener: xxl-job executor API (/api/…) + admin API (/v1/…) ◀── callbacks, heartbeats, people
//	maintenance: RefreshGroups 30 s · CheckLost 60 s · callback Sweep 10 s · PurgeLogs daily
//	report counters: flushed every second (package report)
//
// The ring dispatches a bucket's fires itself, on bounded per-lane worker
// pools (dispatch.LaneSink), and acknowledges the bucket only once they are
// triggered; what cannot be dispatched now (in flight elsewhere, a store
// error, a saturated lane) goes to the durable lane queue. The ring queue
// and the lane queues live in the file, so nothing in flight is held only
// in memory: a process killed at any instruction loses no fire (its bucket
// comes back, dispatch deduplicates), and a restart on the same file
// resumes where it stopped. The run report's counters are the exception:
// they are best effort, and a kill loses at most the last second of them.
//
// Files kept next to the database (for a DB at PATH):
//
//	PATH.state.json   owner id of this installation and its shard count (0600)
//	PATH.lock         flock held while a process runs on PATH
//	PATH.admin-token  the admin API bearer token, generated on first start (0600)
//
// The owner id is stable across restarts so that a restarted process takes
// its scan-shard leases back at once instead of waiting out their TTL. Two
// processes on one file must not share it: the one that cannot take the lock
// scans under a random owner and competes for leases like any other scanner.
//
// A cluster node's life:
//
//	start: open the database (migrate under its lock; refuse another
//	       shard count, an older binary, other secrets) ──▶ join (first beat)
//	       ──▶ serve HTTP ──▶ scan its shards, beat every second
//	drain (POST /v1/node/drain) or SIGTERM: stop the scan (releasing its
//	       leases) ──▶ leave the node table ──▶ /readyz 503; the others take
//	       the shards at their next beat; SIGTERM then shuts down as below
//	killed: its beat expires after the lease TTL; the others take its shards
//	       as its leases expire, and release the queue messages it held
//
// Shutdown (ctx cancelled, e.g. SIGINT/SIGTERM) runs in pipeline order so
// that nothing is lost: the scan stops and releases its leases; the ring
// finishes the buckets it holds and those already due, dispatching their
// fires; the dispatch lanes drain what is due; only then do the listener
// close, the report counters flush and the store close. Whatever
// the grace period cuts short stays unacknowledged in the durable queues and
// comes back on the next start.
package local
