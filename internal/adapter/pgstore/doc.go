// Package pgstore is xjob's cluster-mode backend: every store port and the
// ring and dispatch queues of package driver, kept in one PostgreSQL
// database that several `xjob server` nodes share, through pgx v5 and its
// connection pool. It keeps sqlitestore's semantics call for call (the
// same contract suites, the same conditional-write rules, the same errors:
// xjob.ErrNotFound for a missing record, xjob.ErrConflict for a lost
// conditional write) and adds what a shared database needs: versioned
// migrations under a lock, the cluster's identity, and the list of live
// nodes.
//
// # Supported servers
//
// PostgreSQL 12 or later: the occurrence key is a stored generated column
// (12), ids are identity columns (10), queues rely on SKIP LOCKED (9.5).
// Tests run against the server on PATH or under /usr/lib/postgresql
// (internal/testenv/pgserver). The role needs only to own its schema:
// no superuser, no extension. Tables are named unqualified, so the
// DSN's search_path (or the role's default) picks the schema: one
// database may hold several installations, one schema each.
//
// # Tables
//
//	jobs                  jobs; the partial index jobs_due (shard, trigger_next_time, id)
//	                      WHERE trigger_status = 1 holds running jobs only, so a scan
//	                      costs O(due jobs)
//	declarations_retired  declarations whose job a person deleted
//	groups                executor groups
//	logs                  trigger logs; unique (occurrence_time, occurrence_id) is the
//	                      deduplication key of an occurrence
//	registry              executor heartbeats
//	leases                leases with fencing tokens (scan shards, cluster chores)
//	report_days           run report counters per day and group
//	users, glue_versions  console users, saved GLUE sources
//	auth_attempts,
//	revoked_sessions      sign-in limits and ended sessions
//	queue_messages        the ring and the dispatch lanes, one row per message
//	cluster_meta          the shard count and the secrets' check values
//	nodes                 live xjob server nodes (NodeBeat, NodesLive)
//	schema_version        the migrations applied
//
// # Isolation and conditional writes
//
// Every statement runs at READ COMMITTED, the server's default. A
// conditional write is one UPDATE … WHERE id = $1 AND version = $2 (or an
// upsert, INSERT … ON CONFLICT): when a concurrent transaction changed the
// row first, PostgreSQL waits for it, then re-evaluates the WHERE on the
// row's newest version before writing, so of two writers that read one
// version exactly one matches and the other affects no row. That is the
// whole of the compare-and-set; nothing reads in one statement and writes
// in another on the strength of the read, so no stronger isolation is
// needed, and none of its serialization failures is paid for. Whether a
// write that affected nothing lost (ErrConflict) or found no row
// (ErrNotFound) is a second read, as in sqlitestore.
//
// The batch methods (JobAdvanceMany, LogCreateMany, LogTriggeredMany,
// LogFinishMany, queue Send and Ack) send a batch as arrays and apply it
// in one set-based statement (FROM unnest(…)), each row keeping its own
// condition: one round trip per ring bucket or callback request. One
// statement cannot write a row twice, so a batch naming a record more than
// once runs in rounds, the k-th mention of each record in round k, which
// keeps the port's "in order, as if one by one". A statement the server
// aborted for a deadlock is run again (it was rolled back whole).
//
// LogCreateMany inserts the bucket's logs with ON CONFLICT DO NOTHING; the
// occurrences that had a log are read back and decided as sqlitestore
// decides them (driver.ClaimOutcomeOf), and the take-overs are one more
// conditional UPDATE, which, if another node took the log first, is
// decided again on the log as that node left it.
//
// # Log claims across nodes
//
// A claim (LogCreateMany, LogClaim) stamps logs.claimed_by with this
// node's name, so that the nodes that see it leave can end its claims at
// once (ReleaseNodeClaims) instead of after the claim TTL. A node marks
// its claims as calling right before its executor calls (LogsCalling,
// driver.CallFence): the mark clears claimed_by, and from then on only
// claim_until ends the claim, because the node may be calling:
//
//	created / taken over (claimed_by = node, claim_until = t + TTL)
//	   ├── ReleaseNodeClaims(node): claim_until = now, version + 1 ──▶ free: the next delivery takes it over
//	   └── LogsCalling (version as claimed): claimed_by = '', version + 1
//	         ▼
//	       calling ──LogTriggered──▶ triggered (a later delivery is a duplicate)
//	         └── claim_until passes (the caller died mid-call) ──▶ free
//
// The release and the mark are conditional UPDATEs of the same row, so
// one wins: a node seen leaving while it was only slow either calls and
// keeps the log until claim_until, or finds its mark kept nothing and
// does not call what another node takes over.
//
// # Queues
//
// A message is a row of queue_messages. Receive claims the oldest visible
// messages of one queue with
//
//	UPDATE … FROM (SELECT id … WHERE queue = $q AND visible_at <= now
//	               ORDER BY visible_at, id LIMIT $max FOR UPDATE SKIP LOCKED)
//
// which hides them for the visibility timeout and stamps a random receipt;
// SKIP LOCKED makes receivers on every node take disjoint messages without
// waiting on each other. The token is "<id>.<receipt>", so a delivery's
// token stops working once the message is delivered again:
//
//	Send ──▶ ready (visible_at ≤ now)
//	           │  Receive: visible_at = now + Visibility, receives + 1, receipt r
//	           ▼
//	         claimed (visible_at > now, receipt r)
//	           ├── Ack("id.r") ───────────────────────────────▶ deleted
//	           ├── the visibility timeout passes ─────────────▶ ready (redelivered)
//	           ├── Retry("id.r", delay): visible_at = now+delay ▶ ready after delay
//	           └── ReleaseClaims / ReleaseNodeClaims: receipt cleared,
//	               visible_at = now ──────────────────────────▶ ready
//
// A long-polling Receive sleeps on the injected clock until the earliest
// visible_at, a Send through the same DB, a notification of a send on
// another node (each DB keeps one connection LISTENing; Send, Retry and
// the releases pg_notify in their statement: notify.go), or PollInterval,
// the backstop for a lost notification, whichever is first. A claim that
// takes nothing returns the queue's least visible_at in the same
// statement, so an empty poll is one round trip. A message this version
// cannot decode is set aside for SetAside, never deleted unread.
//
// # Migrations
//
// migrations/NNNN_what.sql are embedded and applied in number order at
// Open, all pending ones in one transaction that first takes
// pg_advisory_xact_lock: nodes starting together queue on the lock, the
// first migrates, the others find the schema current. schema_version
// records each number; a database whose version is above the newest this
// binary knows is refused (ErrSchemaTooNew: a newer xjob migrated it), and
// numbers are unique (a test fails on two files of one number). The same
// transaction records the cluster's shard count in cluster_meta on the
// first Open and refuses an Open with another (ErrShardsMismatch), since a
// job's shard is fixed when it is inserted.
//
// # Cluster identity and nodes
//
// ClusterSecretCheck stores the first node's check value of a cluster-wide
// secret (the caller hashes it) and refuses a node with another
// (ErrClusterMismatch). NodeBeat upserts a node's row with an expiry,
// NodeLeave deletes it, and NodesLive lists the unexpired ones in id
// order, from which each node derives its share of the scan shards.
//
// # The DSN
//
// No error of this package contains the DSN's password: connection and
// parse errors are rebuilt with the password replaced (dsn.go), and
// unwrap only to a context error or the server's *pgconn.PgError. A
// connection attempt is bounded by Options.ConnectTimeout (5 s) unless the
// DSN sets connect_timeout.
package pgstore
