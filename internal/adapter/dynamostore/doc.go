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
//     leaves a state the next writer repairs (see "Log pages").
//   - A lost condition (errors.As *types.ConditionalCheckFailedException)
//     becomes xjob.ErrConflict, or xjob.ErrNotFound after one consistent
//     read on the failure path only; leases map it to ErrLeaseHeld/Lost.
//   - Throttling and 5xx are retried by the SDK's standard retryer (with
//     backoff) configured on the client by the caller; BatchGetItem
//     UnprocessedKeys and BatchWriteItem UnprocessedItems are retried here
//     with exponential backoff (20 ms doubling, capped at 1 s, 10 tries).
//   - Single-item reads (JobGet, LogGet, LeaseGet, a log page before its
//     change, reads on a conditional failure path) are strongly consistent: callers act on what they just
//     wrote. Index queries are eventually consistent by nature; every write
//     that follows one is conditional on a version, so a stale read loses
//     instead of corrupting.
//   - TTL: log pages, their list entries, registry entries, the console's
//     sign-in attempt counters and signed-out sessions, and leases acquired
//     with a PurgeAt (misfire episodes) carry AttrPurgeAt (Unix seconds).
//     Infra enables TTL on it (dynalite has no TTL, and code never calls
//     UpdateTimeToLive). TTL is the logs' retention (free, but up to days
//     late: readers filter, see "Retention"); for registry entries it is
//     the backstop of RegistryDeleteBefore, which stays exact; a misfire
//     episode's item goes once no late fire it covers can arrive, which
//     its absence then answers as its expiry would.
//
// # Tables (names: TablesWithPrefix; schema: TableSpecs)
//
//	table        key                          GSIs (partition, sort; projection)
//	jobs         id N                         due (dueShard N, dueKey S; ALL) sparse
//	             (id < 0: a GLUE source item)
//	                                          byGroup (groupId N, id N; KEYS_ONLY)
//	                                          byShard (shard N, id N; KEYS_ONLY)
//	groups       id N                         —
//	logpages     pk S, sk S                   byTime (part N, tkey S; INCLUDE lo, jobs, groups) sparse: pages only
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
// and batch-reads; without a group it merges byShard's shard partitions
// by id. Declared jobs are found by name claims in the console table
// (names.go). No path a user or an executor starts scans the jobs table,
// bar the one-time name claims backfill after an upgrade.
//
// GLUE sources. The due index projects the whole job item, and each
// advance moves its entry (a delete and a put at the item's size), so a
// source longer than 1 KB lives in an item of its own (glue.go): id =
// −glueRef, a random number the job item holds, with no index attribute.
// A new source is a new item, written before the job item that names it;
// the replaced one is deleted after the job's write (a crash in between
// leaves an unused item, never a job without its source). Reads return
// jobs whole: the source items of a page of jobs in one batch read. The
// job item's glueType carries "+apart" meanwhile, so an older release
// (a rollback) fails the job's runs on an unknown GLUE type rather than
// run an empty source; an inline source wins over a reference (only such
// a release writes both).
//
// Ids. Jobs and groups get numeric ids from an atomic counter item:
// UpdateItem ADD value 1, RETURN UPDATED_NEW (ids in insert order).
//
// # Log pages
//
// A log item of its own, with its index entries, would cost a trigger
// six write units (a put with three keys-only index entries, an update
// for the executor's reply, one for the result) — most of what a trigger
// costs on AWS. So logs live in pages: one item per (fire second, part),
// part = the job's shard among 16 masked to Options.LogPages (1, 2, 4, 8
// or 16; default 16: ShardOf(job, 16) & (LogPages−1)), whose logs are one
// attribute, JSON compressed with deflate and a preset dictionary of a
// log's field names and trigger message (pagedict.go; pages written before
// it, without one, are read as they were). Every change to a log reads its
// page (strongly consistent), changes the logs in memory and writes the
// page back conditional on the version it read; when another writer got
// there first it reads and applies again (mutatePage). A ring bucket's
// fires (one scan shard, one second: ShardOf is one hash mod the shard
// count, so with a shard count that divides LogPages, which divides 16, a
// bucket owns its pages) are claimed with one write per page, its
// executors' replies recorded with one more, a callback request's results
// with one per page they fall in. A write costs ⌈page size/1 KB⌉:
// at ~25 bytes a compressed log, a 250-log page is ~7 write units for
// 250 triggers, and a page of one log (a sparse deployment's: one fire in
// its second and shard) ~90 bytes of body, one unit with room to spare.
// LogPages trades the two: at 16 a dense second's results each rewrite a
// sixteenth of its logs; at 1 a sparse deployment's fires of one second
// share one page (one claim, one reply record and one index entry for
// them all, where 16 pages would take one each), but every write of that
// second rewrites all its logs and all its writers race on one page. It
// must not change once logs exist: a job's logs are listed from its
// partition of the time index, which LogPages picks (the AWS wiring
// records it in the layout item and refuses a change).
//
//	pk "p<page>"  sk "p"     the page: v (version), b (logs), part, tkey, lo, jobs, groups, purgeAt
//	pk "f<n>"     sk tkey    failed list: a failed, unalarmed log (id), n = id mod LogPartitions
//	pk "r<n>"     sk tkey    parked list: a log still unfinished when LogsRunning passed it
//	counters "logpages-span", "logpages-running-from" (tkey, parkGen, parkEmpty)
//
// Ids. A log id names its page and its place in it (logid.go):
//
//	id = fire second since 2020 (31 bits) << 22 | k (18 bits) << 4 | part
//
// below 2^53 until 2088, so JavaScript/JSON readers keep it exact. The
// part (ShardOf(job, 16) & (LogPages−1)) keeps its four bits whatever
// LogPages is, so a log's page is read from its id and a log is found by
// id whatever setting wrote it. The page
// depends only on the occurrence id and its job, which every delivery of an
// occurrence shares: every delivery reads the same page and finds the
// occurrence's log in it by occurrence id, whatever k it got. A scheduled
// occurrence prefers k = job id mod 2^18 (+ a multiple of its broadcast shard),
// distinct for distinct jobs of a page; others (manual, API, retry,
// parent) take second and k from a hash of the occurrence id, with the
// second's top bit set: a page no schedule uses (fire seconds stay below
// 2^30 until 2054). A taken k moves to the next free one.
//
//	LogCreateMany(bucket):  per page: read ─▶ per fire: log of its occurrence?
//	    no ──────────────────▶ insert at its k (or the next free)     ClaimCreated
//	    yes, triggered ───────▶                                       ClaimTriggered
//	    yes, provisional, another delivery ─▶                         ClaimTriggered
//	    yes, claim valid ─────▶                                       ClaimHeld
//	    yes, claim expired ───▶ new claim, trigger time, version+1    ClaimTakenOver
//	  ─▶ put page if v = read version ── lost ─▶ read again, apply again
//
// A provisional claim (the ring's, on AWS: driver.ClaimOutcomeOf, package
// dispatch) stores its success record and the name of the ring message
// that made it (the log's "delivery" in the page body) with the claim, so
// a successful call is one page write, not two; the reply record of a
// failed call replaces it, a result keeps it and drops the name:
//
//	claimed (code 200, delivery D) ──failed call──▶ triggered (reply; no D)
//	      │                         ──result──────▶ handled (no D)
//	      └─ D again, claim expired ─▶ taken over (new claim, D)
//
// A claim is normally its page's first write, so a claim of a page the
// store does not remember starts without the read: it puts the page as
// its claims make it from empty, conditional on no page being there, and
// only when one is (a message delivered again, pushes sharing a page)
// goes the way above (claimPage).
//
// A store remembers, for 2 s, the pages it has just written
// (recentPages): the next change of such a page (the ring's record of its
// executors' replies after its claims) starts from it, without a read;
// one that another writer changed since loses its write and is read, and
// a change that finds nothing to do on a remembered page reads it too. A
// page read strongly consistent (a callback's LogGetMany) is remembered
// too when it is settled: at most four logs, each with its trigger
// recorded (a provisional claim's counts), so that the callback's results
// are written without a second read; a page whose ring has yet to record a
// reply is read again.
//
// Every other change is the same round on the logs it names: LogClaim
// (version and untriggered), LogTriggered (untriggered or provisional: a
// result that came first stays), LogFinish (no result yet: first result wins), LogSetAlarm
// (compare-and-set), deletes (a page left empty is deleted). Each log keeps
// its own version, bumped by every change of it. A page's compressed logs
// stay under 300 KB: when a page would outgrow that, the trigger and handle
// messages of its logs are cut to 16 KB, then 4 KB, 1 KB, 256 bytes, and
// then the executor and sharding params with them to 1 KB, 256 and 64
// bytes (a page over the item limit could never be written: its fires
// would end in the dead-letter queue, whatever the params).
// Trade-offs: writers of one page serialise on it (a bucket's dispatcher
// and the callbacks of its fastest jobs retry each other's rounds now and
// then, and so do the ring invocations of a (shard, second) that came in
// several messages: the admin's push of a bulk start sends one per bulk
// request for the scan horizon, each of which claims and records its own
// share of the pages — one write per page per message, and lost rounds
// when they race; the scan sends one message per page and second, its
// plans aligned by the page's shard among 16), a page write costs the
// whole page, so a callback request with one
// result pays for its page (an executor that batches results, as xxl-job's
// callback thread does, pays a share), and pages read strongly consistent
// cost one read unit per 4 KB before each change.
//
// Index. Each page carries its time index keys: part = page mod 16 (its
// jobs' shard among 16 masked to LogPages: partitions 0..LogPages−1 hold
// entries, the others none) and tkey = SortKey(latest trigger time in the
// page, page), with the earliest trigger time and the page's job and group ids
// projected. A page's entry is written when the page is created and again
// only when those change (a late log, a take-over): not per trigger. The
// counters item "logpages-span" records the widest (latest − earliest)
// span of any page beyond 60 s (rounded up to 60 s × 2^n), raised before
// such a page is written; walks look that far past their bounds. Only a
// log triggered long after its second's other fires records one (a
// take-over after a dispatcher died, a partial outage): from then on each
// list and retention walk reads that many more seconds of index entries.
//
//	LogList        walk byTime newest first (one partition for a job, all
//	               LogPages otherwise) from upper bound + span; skip entries whose lo,
//	               jobs or groups cannot match; read pages 50 at a time
//	               (eventually consistent) and emit a log once every unread
//	               page's latest trigger time is below it (exact order by
//	               trigger time, then id)
//	LogDeleteBefore walk byTime oldest first, from the retention's floor up
//	               to before + span, read pages holding older logs, delete
//	               the oldest limit logs page by page (explicit use only:
//	               retention is TTL's)
//	LogClear       LogList the scope, delete by id page by page
//	LogsRunning    the parked list, then byTime past the watermark (below)
//	LogsFailedUnalarmed the failed list oldest first; every entry re-checked
//	               against its log, stale ones dropped on the way
//
// Failed list. A page change that makes a log failed and unalarmed writes
// the log's entry before the page (a crash leaves an entry for a log that
// is not failed, which readers drop; never a failed log without one) and
// removes entries of logs that no longer are after it (best effort).
//
// Running logs. The lost check (upkeep.CheckLost, LogsRunning(now −
// LostAfter)) reads each page once, behind a watermark kept in the
// counters table:
//
//	byTime:  ...read... | watermark | ...read on the next call... | before | newer
//	                 ▲ unfinished when passed: parked list
//
// Each call walks the parked list (re-checking each log, dropping finished
// ones), then byTime from the watermark up to before (at most 200,000
// logs), parks each unfinished log it reads and moves the watermark
// forward (conditional on it growing). A page that gets a later log moves
// up the index past the watermark and is read again. Precondition: a
// caller's before stays behind the trigger time of logs still to be
// created (true for now − LostAfter). A running log in a page whose latest
// trigger time is still after before is reported once before passes it.
//
// An idle minute costs the watermark's GetItem and the LogPages Queries
// of byTime: the watermark is written only when a call read a page past it,
// and the parked list is walked only while the watermark's item says it
// may hold entries. A call that parks logs bumps a generation (parkGen)
// after writing them and before moving the watermark; a walk that finds
// no live entry records the generation it read before walking
// (parkEmpty, conditional on parkGen being still that). The list is
// skipped while parkEmpty = parkGen: entries written after a walk began
// are followed by a bump, and entries whose call died before its bump
// are parked again by the next call, which reads their pages again from
// the watermark the dead call left.
//
// Retention. Pages and list entries carry AttrPurgeAt (latest trigger
// time + LogTTL, rewritten with every page write), and DynamoDB's TTL
// deletes them: free, but up to days late. The store is a
// driver.LogExpirer, so the upkeep's purge (which would pay a write per
// page) leaves it alone. Every page read drops the logs past their
// retention — now at or after trigger time + LogTTL (in AttrPurgeAt's
// whole seconds), or after the page's stored AttrPurgeAt, whichever comes
// first — so no reader, list, count or change sees an expired log, deleted
// or not (a change treats it as missing). Walks of the time index and of
// the failed and parked lists start at the retention's floor (now −
// LogTTL − 1 s), so expired items cost no reads; a page's next write drops
// its expired logs with the write it makes anyway. A new LogTTL applies at
// once to reads and to every page written from then on: shorter, older
// logs disappear at once (their items go at their stored TTL; `log clear`
// deletes them sooner); longer, a page written before keeps its stored
// expiry, and its logs disappear then.
//
// Upgrading from the per-log "logs" table: logs are not migrated (the old
// table is kept, not dropped, by the templates) and queues should be
// drained first, since an occurrence claimed in the old table would not be
// recognised in the new.
//
// Registry, leases, reports. A heartbeat is one UpdateItem conditional on
// the stored updatedAt not being newer. RegistryList queries the appname's
// partition (or scans the small table for all appnames);
// RegistryDeleteBefore scans and deletes each stale entry with a condition
// that it is still stale. A lease is one item: LeaseAcquire tries "owner =
// me" (keep token, extend), then "free or expired" (SET owner, ADD token 1:
// a free lease's token still grows, fencing stays monotonic); renew and
// release are conditional on owner and token; release REMOVEs the owner.
// The report is one item per day and group with ADD counters, keyed
// "day#group" ("day" alone for group 0, the counts kept before the report
// was per group): a group's report reads its items by key, the
// installation's scans the table and sums each day's items.
package dynamostore
