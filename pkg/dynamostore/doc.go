// Package dynamostore is xjob's AWS backend for the store ports of package
// driver (jobs, groups, logs, registry, leases, report), on DynamoDB
// through aws-sdk-go-v2. It passes the same contract suite as sqlitestore
// (drivertest.Exercise), run in go test against dynalite.
//
// # Rules the design follows
//
//   - Single-item conditional writes only. No TransactWriteItems: it costs
//     twice the write units, and dynalite (our offline stand-in) lacks it.
//     Every multi-item change is ordered so that a crash between its writes
//     leaves a state the next writer repairs (see LogCreate).
//   - A lost condition (errors.As *types.ConditionalCheckFailedException)
//     becomes xjob.ErrConflict, or xjob.ErrNotFound after one consistent
//     read on the failure path only; leases map it to ErrLeaseHeld/Lost.
//   - Throttling and 5xx are retried by the SDK's standard retryer (with
//     backoff) configured on the client by the caller; BatchGetItem
//     UnprocessedKeys and BatchWriteItem UnprocessedItems are retried here
//     with exponential backoff (20 ms doubling, capped at 1 s, 10 tries).
//   - Single-item reads (JobGet, LogGet, LeaseGet, reads on a conditional
//     failure path) are strongly consistent: callers act on what they just
//     wrote. Index queries are eventually consistent by nature; every write
//     that follows one is conditional on a version, so a stale read loses
//     instead of corrupting.
//   - TTL: logs and registry entries carry AttrPurgeAt
//     (Unix seconds). Infra enables TTL on it (dynalite has no TTL, and code
//     never calls UpdateTimeToLive). TTL is only the backstop: retention
//     (LogDeleteBefore, RegistryDeleteBefore) stays exact.
//
// # Tables (names: TablesWithPrefix; schema: TableSpecs)
//
//	table        key                          GSIs (partition, sort; projection)
//	jobs         id N                         due (dueShard N, dueKey S; ALL) sparse
//	                                          byGroup (groupId N, id N; KEYS_ONLY)
//	groups       id N                         —
//	logs         id N                         byJob (jobId N, tkey S; KEYS_ONLY)
//	                                          byGroup (groupId N, tkey S; KEYS_ONLY)
//	                                          byTime (part N, tkey S; KEYS_ONLY)
//	                                          running (runPart N, tkey S; KEYS_ONLY) sparse: parked logs only
//	                                          failed (failPart N, tkey S; KEYS_ONLY) sparse
//	registry     registryKey S, member S      —   appname; group#address, TTL
//	leases       name S                       —   owner, token, expiresAt
//	reports      day S                        —   ADD counters per day
//	counters     name S                       —   ADD value: id allocation
//
// Jobs. The due index is sparse: dueShard (= the job's shard) exists only
// while TriggerStatus is running — JobInsert/JobUpdate set or remove it,
// JobAdvance with Stop removes it — so the index holds running jobs only
// and a scan reads O(due jobs): one Query per shard per tick, dueShard =
// :s AND dueKey BETWEEN cursor AND SortKey(before, max), Limit = page size,
// projection ALL so no second read. dueKey = SortKey(nextTriggerTime, id)
// orders ties by id, so the (NextTime, ID) keyset cursor of the port is a
// single key condition. Each advance rewrites dueKey: 1 WRU on the table +
// 2 on the index (an index sort key change is a delete and a put); that is
// the scan's per-fire write cost. JobRecordSlow is an ADD that does not bump
// the version (it costs a due-index write only when a dispatch was slow).
// JobList by group walks byGroup (keys only, so advances never write it)
// and batch-reads; without a group it scans the table (admin page only).
//
// Ids. Jobs and groups get numeric ids from an atomic counter item:
// UpdateItem ADD value 1, RETURN UPDATED_NEW (ids in insert order).
//
// Log ids are derived from the occurrence, so creating a log is one
// conditional put that is also the dedupe (no counter write, no marker
// item). The id (logid.go) is
//
//	(fire second − 2020-01-01) << 22  |  (fnv64a(occurrenceId) + probe) mod 2^22
//
// below 2^53 until 2088, so JavaScript/JSON readers keep it exact. The fire
// second comes from the occurrence id itself ("j<job>/t<ms>/s<shard>"),
// which every delivery of an occurrence shares; occurrences without a fire
// time (manual, API, retry, parent) take the high bits from the hash too.
//
//	LogCreate(occ):  probe = 0
//	  put log{id(occ, probe)} if attribute_not_exists(id)
//	    ok ──────────────────────────────▶ created (1 write + 3 index writes)
//	    taken ─▶ consistent get id(occ, probe)
//	               same occurrenceId ────▶ ErrConflict + stored log (claim rules)
//	               other occurrenceId ───▶ probe++ (≤ 16), put again
//	               gone (purged) ────────▶ put the same id again
//
// Every delivery walks the same probe sequence, so all meet at one log.
// Collisions need the same fire second and hash slot: with 1,000 fires in a
// second about one in 4,000 fires collides once (one more write and read).
// The sequence only breaks if a log earlier in it is deleted while a repeat
// of a later occurrence is still to come; logs of one fire second are
// purged together, 30 days after the repeats stop, so that cannot happen
// under retention; for hash-only ids (manual triggers) it needs a 53-bit
// collision plus that coincidence. Trade-offs: log ids are unique but not
// in creation order (lists order by trigger time, then id), and they are
// large (≈ 2^50), which xxl-job executors carry as a Java long. Upgrading
// from the marker layout: drain the queues first, since an occurrence
// created under a counter id would not be recognised on redelivery.
//
// Log state changes are single conditional updates: LogClaim (version and
// triggerCode = 0), LogTriggered (triggerCode = 0; the common case also
// requires handleCode = 0 and, on a failed trigger, enters the failed index; the
// callback-came-first case is a second attempt that leaves the indexes
// alone), LogFinish (handleCode = 0: first result wins), LogSetAlarm
// (alarmStatus compare-and-set).
//
// Log queries. Every log index sorts on tkey = SortKey(triggerTime, id)
// and is KEYS_ONLY, so updates of a log's state (2 per trigger) do not
// rewrite byJob/byGroup/byTime; only failed membership (and the rare
// parking) writes an index. A trigger's write units: create 1 + 3 index
// entries, LogTriggered 1, LogFinish 1 (6; it was 10 with the occurrence
// marker and the running index). Readers page keys and BatchGetItem the logs (eventually
// consistent, ½ RRU per log ≤ 4 KB), then apply the filters the key cannot
// (status; group when a job is given).
//
//	LogList(job)        Query byJob jobId, tkey BETWEEN From..To/cursor, newest first
//	LogList(group)      Query byGroup groupId, same
//	LogList(all)        Query byTime for each part 0..LogPartitions-1, merged
//	LogsRunning         Query running (parked) per part, then byTime from the watermark (below)
//	LogsFailedUnalarmed Query failed per part, merged; re-checks each log
//	LogDeleteBefore     byTime oldest first, then BatchWrite deletes
//
// Running logs. A successful trigger writes no index: entering a sparse
// running index on LogTriggered and leaving it on LogFinish cost two index
// writes per trigger, a third of the whole budget. The lost check
// (registry.CheckLost, LogsRunning(now − LostAfter)) instead reads byTime
// once, behind a watermark kept in the counters table:
//
//	byTime:  ...finished... | watermark | ...read on the next call... | before | newer
//	                 ▲ parked (still running when passed): running index
//
// Each call walks the running index (parked logs), then byTime from the
// watermark up to before (at most 200,000 logs), parks each unfinished log
// it reads (UpdateItem SET runPart if handleCode = 0: only jobs running
// longer than LostAfter, so rarely) and moves the watermark forward
// (conditional on it growing). LogFinish REMOVEs runPart, free when absent.
// Cost: ½ read unit per log once (eventually consistent BatchGetItem) plus
// the keys-only Query bytes, instead of 2 write units. Precondition: a
// caller's before stays behind the trigger time of logs still to be created
// (true for now − LostAfter; LogClaim moves a taken-over log forward, and a
// parked one stays in the index). An untriggered log that is never taken
// over stays parked until its TTL; reads filter it out. A new table starts
// the watermark at the oldest log.
//
// part = id mod LogPartitions spreads the time-ordered indexes over several
// partition key values (write sharding), so no index partition takes every
// log write; readers merge the partitions in key order (cost: one Query per
// partition per page). The failed index may hold a log that is no longer
// unalarmed for a moment (index membership is set in the same write as the
// state, but a superset is harmless): reads re-check, so results are exact.
// The page cursor is the last log's tkey (base64), used as the exclusive
// upper bound of the next page.
//
// Registry, leases, reports. A heartbeat is one UpdateItem conditional on
// the stored updatedAt not being newer. RegistryList queries the appname's
// partition (or scans the small table for all appnames);
// RegistryDeleteBefore scans and deletes each stale entry with a condition
// that it is still stale. A lease is one item: LeaseAcquire tries "owner =
// me" (keep token, extend), then "free or expired" (SET owner, ADD token 1:
// a free lease's token still grows, fencing stays monotonic); renew and
// release are conditional on owner and token; release REMOVEs the owner.
// The report is one item per day with ADD counters; ReportList scans the
// table (one item per retained day).
package dynamostore
