// Package mysqlstore is xjob's cluster-mode backend on MySQL or MariaDB:
// every store port and the ring and dispatch queues of package driver, in
// one database that several `xjob server` nodes share, through
// database/sql and github.com/go-sql-driver/mysql. It mirrors package
// sqlitestore (local mode) statement for statement where it can, with the
// same conditional-write rules and the same error mapping (a missing
// record is xjob.ErrNotFound, a lost conditional write xjob.ErrConflict).
//
// # Supported servers
//
// MySQL ≥ 8.0.1 and MariaDB ≥ 10.6: the queues need SELECT … FOR UPDATE
// SKIP LOCKED. Open checks the version and refuses older servers.
//
// # Session settings
//
// Open forces, whatever the DSN says: READ COMMITTED isolation (through
// transaction_isolation on MySQL, tx_isolation on MariaDB before 11.1,
// found by asking the server), utf8mb4 with the binary collation, strict
// SQL mode, affected rows counting matched rows (clientFoundRows), client-
// side interpolation of one-off statements, no multi-statements, a 5 s
// connect timeout unless the DSN sets one, and a 10 s lock wait timeout.
//
// READ COMMITTED because every decision the store makes is either one
// conditional statement (UPDATE … WHERE version = ?, whose row lock and
// re-read of the latest committed row decide the winner), or a
// transaction that locks the rows it decides on (SELECT … FOR UPDATE).
// Neither needs REPEATABLE READ's snapshot, and REPEATABLE READ's gap and
// next-key locks on the range scans (due jobs, queue claims, retention
// deletes) would make concurrent nodes block and deadlock on rows none of
// them writes. A deadlock or lock wait timeout that happens anyway rolls
// the transaction back whole; the store runs it again (up to six times).
//
// # Tables
//
//	jobs                  jobs; jobs_due (trigger_status, shard, trigger_next_time, id)
//	                      is the scan's index: the running jobs of one shard, in due order
//	job_groups            executor groups (GROUPS is reserved in MySQL 8)
//	logs                  trigger logs; unique (occurrence_time, occurrence_id)
//	                      deduplicates occurrences; failed is a stored generated column
//	registry              executor heartbeats
//	leases                scan-shard and chore leases with fencing tokens
//	report_days           the run report per day and group
//	queue_messages        the ring and the dispatch lanes, by queue name
//	users, glue_versions, declarations_retired, auth_attempts, revoked_sessions
//	meta                  what every node must agree on: shard count, secret digests
//	nodes                 live xjob server nodes and their expiry
//	schema_version        the migrations applied
//
// # Queue claims
//
// The ring and each dispatch lane are rows of queue_messages under their
// queue name. A message is ready when visible_at ≤ now. Receive locks the
// oldest ready rows with SELECT … FOR UPDATE SKIP LOCKED — receivers on
// every node take disjoint messages without waiting for one another —
// and in the same transaction hides them until now + visibility under a
// fresh random receipt; the delivery token is "<id>.<receipt>".
//
//	Send ──▶ ready (visible_at ≤ now)
//	           │
//	           │ Receive: FOR UPDATE SKIP LOCKED, then
//	           │ visible_at = now + visibility, receipt = fresh, receives + 1
//	           ▼
//	         claimed ──── Ack(token) ───────────────────────────▶ deleted
//	           │
//	           ├── visibility expires (visible_at passes) ──▶ ready
//	           ├── Retry(token, delay): visible_at = now + delay ──▶ ready
//	           └── ReleaseClaims / ReleaseNodeClaims: receipt = '' ──▶ ready
//
// A token acks or retries only the delivery it came with: a redelivery
// draws a new receipt, so a stale token matches no row (Ack ignores it,
// Retry returns xjob.ErrNotFound). A message this code cannot decode is
// set aside for SetAside, never deleted unread. A long-polling Receive
// wakes at once for sends through the same *DB, at the earliest
// visible_at, and every PollInterval for sends from other nodes. A claim
// first reads the queue's least visible_at (one index dive) and opens its
// transaction only when that is due: an empty poll, what most polls are
// with a 100 ms interval and no notifications, is that one statement,
// which also tells the wait when to poll again.
//
// # Log claims across nodes
//
// A claim (LogCreateMany, LogClaim) stamps logs.claimed_by with this
// node's name, so that the nodes that see it leave can end its claims at
// once (ReleaseNodeClaims) instead of after the claim TTL. A node marks
// its claims as calling right before its executor calls (LogsCalling,
// driver.CallFence): in one transaction it locks the logs (SELECT … FOR
// UPDATE), keeps those at the version it claimed and untriggered, and
// clears their claimed_by; from then on only claim_until ends the claim,
// because the node may be calling:
//
//	created / taken over (claimed_by = node, claim_until = t + TTL)
//	   ├── ReleaseNodeClaims(node): claim_until = now, version + 1 ──▶ free: the next delivery takes it over
//	   └── LogsCalling (version as claimed): claimed_by = '', version + 1
//	         ▼
//	       calling ──LogTriggered──▶ triggered (a later delivery is a duplicate)
//	         └── claim_until passes (the caller died mid-call) ──▶ free
//
// The release waits on the mark's row locks or runs first and bumps the
// versions, so one wins: a node seen leaving while it was only slow
// either calls and keeps the log until claim_until, or finds its mark
// kept nothing and does not call what another node takes over.
//
// # Batches
//
// The write path of a ring bucket costs a few statements whatever its
// size. LogCreateMany is one multi-row INSERT … ON DUPLICATE KEY UPDATE
// (the rows it created carry its random created_by) and one SELECT of the
// occurrences. Under contention MariaDB was seen to let such an INSERT
// pass over rows a concurrent insert held uncommitted; the keys the
// SELECT misses are read again with a locking read, which waits for that
// insert, and the INSERT runs again if they are gone. LogTriggeredMany,
// LogFinishMany and JobAdvanceMany each lock their rows in id order
// (SELECT … FOR UPDATE), decide every item in order in Go, and write the
// winners with one UPDATE … CASE.
//
// # Migrations
//
// migrations/NNNN_name.sql, embedded, run in order at Open under
// GET_LOCK('xjob_migrate:<database>'): of nodes starting together one
// migrates and the others wait, then find the versions recorded in
// schema_version. DDL commits itself in MySQL, so each statement is safe
// to run again and the version is recorded after the migration's last
// statement. A database migrated by a newer xjob is refused
// (SchemaTooNewError). See migrate.go.
//
// # Cluster identity
//
// The first Open records the scan shard count in meta; an Open with
// another count is refused (ErrClusterMismatch), since a job's shard is
// fixed when it is inserted. ClusterSecretCheck does the same for digests
// of the secrets nodes must share. NodeBeat, NodeLeave and NodesLive keep
// the membership the shard balancing reads.
package mysqlstore
