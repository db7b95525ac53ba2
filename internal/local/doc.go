// Package local is `xjob local`: every service of the scheduling center in
// one process on one SQLite file (package sqlitestore), for development,
// demos and small installations.
//
// One process hosts, each on its own goroutine:
//
//	scan (tick at every second) ──▶ ring queue ──▶ ring pollers ──▶ fast lane ─┐
//	                                                            └─▶ slow lane ─┴▶ dispatch workers ──▶ executors
//	HTTP listener: xxl-job executor API (/api/…) + admin API (/v1/…) ◀── callbacks, heartbeats, people
//	maintenance: RefreshGroups 30 s · CheckLost 60 s · callback Sweep 10 s · PurgeLogs daily
//
// Every queue lives in the file, so nothing in flight is held only in
// memory: a process killed at any instruction loses no fire, and a restart
// on the same file resumes where it stopped.
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
// Shutdown (ctx cancelled, e.g. SIGINT/SIGTERM) runs in pipeline order so
// that nothing is lost: the scan stops and releases its leases; the ring
// finishes the buckets it holds and those already due; the dispatch lanes
// drain what is due; only then do the listener and the store close. Whatever
// the grace period cuts short stays unacknowledged in the durable queues and
// comes back on the next start.
package local
