// Package driver is the seam between xjob's core services and its backends.
// It holds the ports — job, group, log, registry, lease and report stores,
// the ring and dispatch queues, the executor client and the alarmer — in the
// domain's words, with no SQL or AWS types in any signature.
//
// Who implements it: xjob's own backends (sqlitestore for local mode,
// pgstore and mysqlstore for a cluster, dynamostore and sqsqueue on AWS),
// and anyone who wants xjob on another database. A backend passes the
// contract suites in package drivertest, which is what keeps the backends
// interchangeable; run them from the backend's tests (see the example in
// drivertest).
//
// What may change: the ports grow with the scheduler. A release may add a
// method to an interface, a field to a params struct or a new port, and the
// queue messages (Queues carries internal types) may change with any
// release. A field's meaning or an error contract does not change
// silently: the contract suites change with it, so a backend outside this
// module that runs them against each xjob release learns of it there.
//
// Conventions: ctx first; one params struct per method where there is more
// than one argument; missing records are xjob.ErrNotFound, lost conditional
// writes xjob.ErrConflict; never a nil record with a nil error.
package driver

import (
	"context"
	"fmt"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// Store is everything a backend keeps in its database.
type Store interface {
	JobStore
	GroupStore
	LogStore
	RegistryStore
	LeaseStore
	ReportStore
	UserStore
	GlueStore
	AuthStore
	ChangeStore
}

// Queues are a backend's durable queues: the ring and the two dispatch lanes.
type Queues interface {
	Ring() Queue[fire.RingBucket]
	Dispatch(lane fire.Lane) Queue[fire.DispatchTask]
}

// JobStore keeps jobs. Jobs are read by scan through the due index on
// (shard, nextTriggerTime), which holds running jobs only.
type JobStore interface {
	// JobInsert stores a new job and returns it with ID, Shard, Version 1
	// and Revision 1 set. The caller has validated it.
	JobInsert(ctx context.Context, job xjob.Job) (xjob.Job, error)
	// JobGet returns one job or xjob.ErrNotFound.
	JobGet(ctx context.Context, id int64) (xjob.Job, error)
	// JobGetMany returns the jobs that exist among ids, in no set order.
	JobGetMany(ctx context.Context, ids []int64) ([]xjob.Job, error)
	// JobUpdate replaces a job if its stored version is ExpectVersion, and
	// returns it with the version bumped. Revision is stored as given: the
	// caller bumps it for edits that change the schedule.
	JobUpdate(ctx context.Context, p JobUpdateParams) (xjob.Job, error)
	// JobAdvance records a scan's progress on a job, conditional on its
	// version; xjob.ErrConflict when another writer got there first.
	JobAdvance(ctx context.Context, p JobAdvanceParams) error
	// JobAdvanceMany applies several advances, each conditional on its own
	// version exactly as JobAdvance, in order, so a scan page costs one
	// call instead of one per job. The i-th error is ps[i]'s outcome: nil,
	// xjob.ErrConflict or xjob.ErrNotFound (wrapped). The second return is
	// a failure of the whole call (store unreachable, transaction failed);
	// then the per-item slice is nil and any subset of the advances may
	// have been applied, which the caller must tolerate as it tolerates a
	// crash (the next scan re-reads the jobs).
	JobAdvanceMany(ctx context.Context, ps []JobAdvanceParams) ([]error, error)
	// JobRecordSlow counts one dispatch slower than 500 ms in minute
	// (Unix minutes). It does not bump Version: it is not a schedule write.
	JobRecordSlow(ctx context.Context, id int64, minute int64) error
	// JobDelete removes a job; xjob.ErrNotFound if there is none.
	JobDelete(ctx context.Context, id int64) error
	// JobListByName returns the jobs whose Name is name, in id order; none
	// for an empty name. Names are unique by the admin's checks, not by a
	// store constraint: two concurrent creates of one name (two executors
	// declaring the same job at once) can both land, and the caller that
	// sees more than one keeps the lowest id.
	JobListByName(ctx context.Context, name string) ([]xjob.Job, error)
	// DeclarationRetire records that a person deleted the job an executor
	// declared under key, whose declaration was declared (its canonical
	// form; see xjob.JobDeclaration.Canonical), replacing any earlier
	// record of key: the executor's next declaration of that same
	// definition must not bring the job back.
	DeclarationRetire(ctx context.Context, key, declared string) error
	// DeclarationRetired returns the declaration last retired under key;
	// ok is false when none was.
	DeclarationRetired(ctx context.Context, key string) (declared string, ok bool, err error)
	// JobList pages through jobs in id order, filtered.
	JobList(ctx context.Context, p JobListParams) (JobPage, error)
	// JobsDue returns running jobs of one shard with TriggerNextTime ≤
	// Before, ordered by (TriggerNextTime, ID), strictly after the cursor,
	// at most Limit. Its cost is proportional to the jobs returned.
	JobsDue(ctx context.Context, p JobsDueParams) ([]xjob.Job, error)
	// JobCount counts the jobs JobList pages through with the same
	// filters, over the groups in GroupIDs (every group when empty): the
	// console's totals. Its cost is one index count per group without a
	// status or text filter, and proportional to the groups' jobs with one.
	JobCount(ctx context.Context, p JobCountParams) (int, error)
}

// JobCountParams filters JobStore.JobCount as JobListParams filters
// JobList, over several groups at once.
type JobCountParams struct {
	GroupIDs    []int64
	Status      *xjob.TriggerStatus
	Description string
	Handler     string
	Author      string
}

// JobUpdateParams is the input of JobStore.JobUpdate.
type JobUpdateParams struct {
	Job           xjob.Job
	ExpectVersion int64
}

// JobAdvanceParams is the input of JobStore.JobAdvance.
type JobAdvanceParams struct {
	ID              int64
	ExpectVersion   int64
	TriggerLastTime int64
	TriggerNextTime int64
	// Stop stops the job (status 0, last/next 0): its next fire time
	// cannot be computed. The revision stays: the fires the scan already
	// pushed (a one-shot job's last one) must still fire.
	Stop bool
}

// JobListParams filters JobStore.JobList. Zero values match everything;
// text filters match substrings.
type JobListParams struct {
	GroupID     int64
	Status      *xjob.TriggerStatus
	Description string
	Handler     string
	Author      string
	Cursor      string
	Limit       int
}

// JobPage is one page of jobs; Next is the cursor of the following page,
// empty at the end.
type JobPage struct {
	Jobs []xjob.Job
	Next string
}

// DueCursor marks where a JobsDue page ended.
type DueCursor struct {
	NextTime int64
	ID       int64
}

// JobsDueParams is the input of JobStore.JobsDue.
type JobsDueParams struct {
	Shard  int
	Before int64
	After  DueCursor
	Limit  int
}

// GroupStore keeps executor groups.
type GroupStore interface {
	GroupInsert(ctx context.Context, g xjob.Group) (xjob.Group, error)
	GroupGet(ctx context.Context, id int64) (xjob.Group, error)
	// GroupList returns groups in id order, filtered by substrings.
	GroupList(ctx context.Context, p GroupListParams) ([]xjob.Group, error)
	// GroupUpdate replaces a group if its stored version is ExpectVersion.
	GroupUpdate(ctx context.Context, p GroupUpdateParams) (xjob.Group, error)
	// GroupSetAddresses stores an automatic group's rebuilt address list.
	GroupSetAddresses(ctx context.Context, id int64, addresses []string, updatedAt int64) error
	GroupDelete(ctx context.Context, id int64) error
}

// GroupListParams filters GroupStore.GroupList.
type GroupListParams struct {
	AppName string
	Title   string
}

// GroupUpdateParams is the input of GroupStore.GroupUpdate.
type GroupUpdateParams struct {
	Group         xjob.Group
	ExpectVersion int64
}

// ChangeStore writes a set of group and job changes as one unit: what
// `xjob apply` and `xjob import` plan. Readers see the set before or after,
// never a part of it once ChangeApply has returned or ChangeResume has run.
//
// A backend with multi-statement transactions (SQLite) writes the set in
// one. One without (DynamoDB, whose transactions hold 100 items) stages
// it: the resolved set is stored first, then marked committed, then
// written item by item, then removed. A crash before the mark leaves
// nothing but the staged copy, which ChangeResume removes (rolled back); a
// crash after it leaves a committed set, which ChangeResume writes to the
// end (rolled forward), so that readers meanwhile see part of the set. The
// admin calls ChangeResume before each apply, and xjob on AWS also as its
// web function starts and in its maintenance every minute.
type ChangeStore interface {
	// ChangeApply checks every condition of cs (ids free, versions
	// current, records present) and then writes all of it, or returns
	// the first failed condition (xjob.ErrConflict or xjob.ErrNotFound,
	// wrapped) and writes nothing. Inserts with ID 0 get new ids; a
	// negative GroupID or child id -k refers to the k-th group or job
	// insert of the set (1-based), so a job may name a group or child the
	// same set creates. The result holds the inserted records' ids in
	// order.
	ChangeApply(ctx context.Context, cs ChangeSet) (ChangeResult, error)
	// ChangeResume finishes or undoes a set a crash left staged; nothing
	// when none is.
	ChangeResume(ctx context.Context) error
}

// ChangeLease is the lease an apply holds from its plan to its write
// (and an edit of child jobs from its cycle check to its write): whoever
// resumes a change set (ChangeResume) takes it too, so that it never
// meets a set another process is still staging.
const ChangeLease = "admin-child-graph"

// ChangeSet is the input of ChangeStore.ChangeApply. The writes happen in
// this order: group inserts, group updates, job inserts, job updates, job
// deletes, group deletes.
type ChangeSet struct {
	GroupInserts []xjob.Group
	GroupUpdates []GroupUpdateParams
	GroupDeletes []int64
	JobInserts   []xjob.Job
	JobUpdates   []JobUpdateParams
	JobDeletes   []int64
}

// Empty reports a set with nothing to write.
func (cs *ChangeSet) Empty() bool {
	return len(cs.GroupInserts)+len(cs.GroupUpdates)+len(cs.GroupDeletes)+
		len(cs.JobInserts)+len(cs.JobUpdates)+len(cs.JobDeletes) == 0
}

// ResolveRef turns a reference -k into the k-th id of ids (1-based); an
// id of 0 or more is returned as it is.
func ResolveRef(id int64, ids []int64) (int64, error) {
	if id >= 0 {
		return id, nil
	}
	if k := -id; k <= int64(len(ids)) {
		return ids[k-1], nil
	}
	return 0, fmt.Errorf("reference %d names no insert of the set (%d inserts)", id, len(ids))
}

// ResolveRefs is ResolveRef over a list; nil stays nil.
func ResolveRefs(refs, ids []int64) ([]int64, error) {
	if refs == nil {
		return nil, nil
	}
	out := make([]int64, len(refs))
	for i, r := range refs {
		id, err := ResolveRef(r, ids)
		if err != nil {
			return nil, err
		}
		out[i] = id
	}
	return out, nil
}

// ChangeResult is what ChangeApply wrote: the ids of the inserts, in the
// set's order.
type ChangeResult struct {
	GroupIDs []int64
	JobIDs   []int64
}

// LogStore keeps trigger logs. Each state change is a conditional write, so
// concurrent deliveries of one occurrence or one result cannot both win.
type LogStore interface {
	// LogCreate stores a new log under its OccurrenceID and returns it with
	// ID and Version set. If a log with that OccurrenceID exists it returns
	// the existing log and xjob.ErrConflict. Ids are unique and positive
	// below 2^53, not necessarily in creation order (DynamoDB derives them
	// from the occurrence). A scheduled (CRON or MISFIRE) log's
	// ScheduledTime is part of its occurrence: the fire time its
	// OccurrenceID names, the same for every log of that occurrence (SQLite
	// keys its deduplication index by it, then the id).
	LogCreate(ctx context.Context, l xjob.Log) (xjob.Log, error)
	LogGet(ctx context.Context, id int64) (xjob.Log, error)
	// LogClaim takes over a log that was created but never triggered, whose
	// claim has expired: conditional on ExpectVersion and TriggerCode 0.
	LogClaim(ctx context.Context, p LogClaimParams) (xjob.Log, error)
	// LogTriggered records the executor's reply to /run, conditional on the
	// log not having been triggered yet, or being provisional
	// (xjob.Log.Provisional: the reply replaces the provisional record and
	// ends it). It leaves handle fields alone (the callback may already
	// have arrived).
	LogTriggered(ctx context.Context, p LogTriggeredParams) error
	// LogFinish records the result, conditional on no result having been
	// recorded (first result wins); returns the updated log.
	LogFinish(ctx context.Context, p LogFinishParams) (xjob.Log, error)
	// LogSetAlarm moves AlarmStatus from From to To (compare-and-set).
	LogSetAlarm(ctx context.Context, p LogSetAlarmParams) error

	// The batch methods below are the write path of a ring bucket and of a
	// callback request: one call (one write transaction on SQLite) per
	// batch instead of one per trigger. Each item keeps the conditional
	// semantics of its single-item method; items naming the same
	// occurrence or log take effect in order, as if called one by one.
	// The second return is a failure of the whole call (store unreachable,
	// transaction failed): the per-item slice is nil then, and any subset
	// of the items may have been applied, which the caller tolerates as it
	// tolerates a crash.

	// LogGetMany returns the logs that exist among ids, in no set order.
	LogGetMany(ctx context.Context, ids []int64) ([]xjob.Log, error)
	// LogCreateMany claims a batch of occurrences: for each log it
	// creates the log under its OccurrenceID, or, when the occurrence has
	// a log already, reports that log and whether this caller may trigger
	// it (see ClaimOutcome). An untriggered log whose claim expired at or
	// before the new log's TriggerTime is taken over in the same call
	// (as LogClaim: new ClaimUntil and TriggerTime, version bumped).
	LogCreateMany(ctx context.Context, logs []xjob.Log) ([]LogCreated, error)
	// LogTriggeredMany records executors' replies to /run, each as
	// LogTriggered. The i-th error is ps[i]'s outcome: nil,
	// xjob.ErrConflict (already triggered) or xjob.ErrNotFound (wrapped).
	LogTriggeredMany(ctx context.Context, ps []LogTriggeredParams) ([]error, error)
	// LogFinishMany records results, each as LogFinish (first result
	// wins). The i-th result is ps[i]'s: the updated log, or Err
	// xjob.ErrConflict (a result was recorded already) or
	// xjob.ErrNotFound (wrapped).
	LogFinishMany(ctx context.Context, ps []LogFinishParams) ([]LogFinished, error)
	// LogList pages logs by trigger time, newest first.
	LogList(ctx context.Context, p LogListParams) (LogPage, error)
	// LogsRunning returns logs triggered successfully at or before Before
	// that have no result yet, oldest first (the lost-job check).
	LogsRunning(ctx context.Context, before int64, limit int) ([]xjob.Log, error)
	// LogsFailedUnalarmed returns failed logs whose AlarmStatus is still 0,
	// triggered at or before Before (the fail monitor's backstop).
	LogsFailedUnalarmed(ctx context.Context, before int64, limit int) ([]xjob.Log, error)
	// LogDeleteBefore deletes up to limit logs triggered before before and
	// returns how many it deleted.
	LogDeleteBefore(ctx context.Context, before int64, limit int) (int, error)
	// LogClear deletes up to p.Limit of the oldest logs in p's scope that
	// are not among its KeepNewest newest and were triggered before
	// p.Before (when set), and returns how many it deleted: the console's
	// and /v1's "clear logs" (xxl-job's /joblog/clearLog), which the
	// caller repeats until fewer than Limit are deleted.
	LogClear(ctx context.Context, p LogClearParams) (int, error)
	// LogCount counts the logs LogList pages through with the same
	// filters, over the groups in GroupIDs (every group when empty), and
	// stops at Limit: a count equal to a positive Limit means "Limit or
	// more". It reads the same indexes as LogList; its cost is
	// proportional to the logs counted, which Limit bounds.
	LogCount(ctx context.Context, p LogCountParams) (int, error)
}

// LogExpirer is a LogStore that retires logs itself once their retention
// has passed (DynamoDB's TTL, whose deletes cost nothing but lag up to
// days): it never returns, changes or counts a log past LogExpiry after
// its trigger time, whether or not the log is deleted yet. The upkeep's
// purge (LogDeleteBefore, which pays for every delete) skips such a
// store; LogDeleteBefore and LogClear keep their contract for explicit
// use.
type LogExpirer interface {
	// LogExpiry is the logs' retention, counted from their trigger time;
	// 0 when this store does not retire logs (the upkeep purges them).
	LogExpiry() time.Duration
}

// CallFence is a LogStore on which a claim can end before its
// ClaimUntil: the nodes of a cluster end the claims of a node they see
// leave (its beats stopped), so that the fires it held go out at once
// rather than after the claim TTL. A node that is only slow, not dead,
// may then still be about to call what another node has taken over, or
// already calling it. So a caller on such a store marks its claims as
// calling, in one conditional write, between its claim and its executor
// calls, and calls only the logs the write kept:
//
//	claimed (names its node) ──LogsCalling──▶ calling (names no node) ──LogTriggered──▶ triggered
//	     │ the node is seen leaving                 │ only ClaimUntil ends it
//	     ▼                                          ▼
//	released: taken over at once            taken over after ClaimUntil
//
// Claim release and LogsCalling are conditional on the same row, so one
// of them wins: either the node calls and the claim lasts until its
// ClaimUntil, or another node takes the log over and this one does not
// call.
type CallFence interface {
	// LogsCalling keeps, of logs, those still as the caller's claim left
	// them (the same Version, untriggered), and makes each kept log's
	// claim one that only its ClaimUntil ends: no release of a node's
	// claims touches it. It returns the kept logs with their new
	// versions, in no set order; a log changed since, triggered or gone
	// is left out. On error, any subset may have been marked, and
	// the caller calls none of them (a marked log is taken over after
	// its ClaimUntil, late but once).
	LogsCalling(ctx context.Context, logs []LogRef) ([]LogRef, error)
}

// LogRef names one version of a log.
type LogRef struct {
	ID      int64
	Version int64
}

// LogCountParams filters LogStore.LogCount as LogListParams filters
// LogList, over several groups at once.
type LogCountParams struct {
	GroupIDs []int64
	JobID    int64
	Status   xjob.LogStatus
	From     int64
	To       int64
	// Limit stops the count (0: no bound).
	Limit int
}

// LogClearParams is the input of LogStore.LogClear. Zero GroupID / JobID
// mean every group / job; zero Before and KeepNewest put no bound, so the
// zero scope with neither clears every log (xxl-job's "clear all").
type LogClearParams struct {
	GroupID int64
	JobID   int64
	// Before: only logs triggered strictly before it (Unix ms) go.
	Before int64
	// KeepNewest: the newest KeepNewest logs of the scope (by trigger time,
	// then id) stay, whatever their age.
	KeepNewest int
	// Limit bounds one call (the store clamps it; 0 takes its default).
	Limit int
}

// LogClaimParams is the input of LogStore.LogClaim.
type LogClaimParams struct {
	ID            int64
	ExpectVersion int64
	ClaimUntil    int64
	TriggerTime   int64
}

// LogTriggeredParams is the input of LogStore.LogTriggered.
type LogTriggeredParams struct {
	ID              int64
	ExecutorAddress string
	TriggerCode     int
	TriggerMsg      string
}

// LogFinishParams is the input of LogStore.LogFinish.
type LogFinishParams struct {
	ID         int64
	HandleTime int64
	HandleCode int
	HandleMsg  string
}

// ClaimOutcome says what LogCreateMany did with one occurrence, and so
// whether its caller may call the executor.
type ClaimOutcome int

// Claim outcomes. Only ClaimCreated and ClaimTakenOver let the caller
// trigger; every other delivery of the occurrence sees one of the others.
const (
	// ClaimCreated: the log is new; the caller triggers it.
	ClaimCreated ClaimOutcome = iota + 1
	// ClaimTakenOver: the occurrence's log was created but never
	// triggered and its claim had expired (its dispatcher died); the
	// caller now holds it and triggers it. LogCreated.Prev is the log as
	// the dead dispatcher left it.
	ClaimTakenOver
	// ClaimTriggered: the log was triggered already, or another delivery
	// holds a provisional claim on it; a duplicate, dropped.
	ClaimTriggered
	// ClaimHeld: the log is untriggered (or provisionally claimed by the
	// same delivery) and the claim is still valid; the caller retries
	// after the claim expires.
	ClaimHeld
)

// ClaimOutcomeOf decides what a new delivery of an occurrence (incoming:
// the log it would create) may do with the log the occurrence already has,
// at instant incoming.TriggerTime: ClaimTriggered, ClaimHeld, or
// ClaimTakenOver when the log's claim expired (the store then takes it
// over conditionally).
//
// A provisional claim (xjob.Log.Provisional: its success recorded before
// the call) answers to its own delivery only:
//
//	existing log                          same Delivery     another delivery
//	result, or triggered (not provisional)  ClaimTriggered    ClaimTriggered
//	provisional, claim valid                ClaimHeld         ClaimTriggered
//	provisional, claim expired              ClaimTakenOver    ClaimTriggered
//	untriggered, claim valid                ClaimHeld         ClaimHeld
//	untriggered, claim expired              ClaimTakenOver    ClaimTakenOver
//
// Another delivery may drop a provisional claim's fire because the holder's
// own message is still there while the holder has not called: it is
// acknowledged only once the call was made, and comes back if its
// dispatcher dies first.
func ClaimOutcomeOf(existing, incoming xjob.Log) ClaimOutcome {
	switch {
	case existing.Provisional():
		switch {
		case incoming.Delivery != existing.Delivery:
			return ClaimTriggered
		case incoming.TriggerTime < existing.ClaimUntil:
			return ClaimHeld
		}
		return ClaimTakenOver
	case existing.Triggered():
		return ClaimTriggered
	case incoming.TriggerTime < existing.ClaimUntil:
		return ClaimHeld
	}
	return ClaimTakenOver
}

// TakeOver is existing as taken over by incoming (ClaimTakenOver): the
// new claim's ClaimUntil and TriggerTime, and its provisional record
// when it makes one (or none: a plain claim taking over a provisional one
// clears it). The caller bumps the version.
func TakeOver(existing, incoming xjob.Log) xjob.Log {
	taken := existing
	taken.ClaimUntil, taken.TriggerTime = incoming.ClaimUntil, incoming.TriggerTime
	if existing.Provisional() || incoming.Delivery != "" {
		taken.Delivery, taken.TriggerCode, taken.TriggerMsg = incoming.Delivery, incoming.TriggerCode, incoming.TriggerMsg
		if incoming.Delivery != "" {
			taken.ExecutorAddress = incoming.ExecutorAddress
		}
	}
	return taken
}

// LogCreated is one item's outcome of LogStore.LogCreateMany.
type LogCreated struct {
	Outcome ClaimOutcome
	// Log is the stored log: the new one, the one taken over (with this
	// caller's claim), or the existing one.
	Log xjob.Log
	// Prev is the log before a take-over (ClaimTakenOver only).
	Prev xjob.Log
	// Err is set for an item that was refused without effect (a
	// *xjob.ValidationError); Outcome is 0 then.
	Err error
}

// LogFinished is one item's outcome of LogStore.LogFinishMany.
type LogFinished struct {
	Log xjob.Log
	Err error
}

// LogSetAlarmParams is the input of LogStore.LogSetAlarm.
type LogSetAlarmParams struct {
	ID   int64
	From xjob.AlarmStatus
	To   xjob.AlarmStatus
}

// LogListParams filters LogStore.LogList. Zero values match everything;
// From and To bound the trigger time (inclusive).
type LogListParams struct {
	JobID   int64
	GroupID int64
	Status  xjob.LogStatus
	From    int64
	To      int64
	Cursor  string
	Limit   int
}

// LogPage is one page of logs; Next is empty at the end.
type LogPage struct {
	Logs []xjob.Log
	Next string
}

// RegistryStore keeps executor heartbeats.
type RegistryStore interface {
	// RegistryUpsert inserts an entry or refreshes its UpdatedAt.
	RegistryUpsert(ctx context.Context, e xjob.RegistryEntry) error
	// RegistryRemove deletes one entry; removing a missing entry is not an error.
	RegistryRemove(ctx context.Context, e xjob.RegistryEntry) error
	// RegistryList returns entries updated at or after Since, for one key
	// (appname) or for all keys when Key is empty.
	RegistryList(ctx context.Context, p RegistryListParams) ([]xjob.RegistryEntry, error)
	// RegistryDeleteBefore deletes entries not updated since before.
	RegistryDeleteBefore(ctx context.Context, before int64) (int, error)
}

// RegistryListParams filters RegistryStore.RegistryList.
type RegistryListParams struct {
	Key   string
	Since int64
}

// LeaseStore keeps leases (one per scan shard) with fencing tokens.
type LeaseStore interface {
	// LeaseAcquire takes the named lease for Owner if it is free, expired,
	// or already Owner's; the token grows whenever the owner changes or
	// the lease was free. xjob.ErrLeaseHeld otherwise.
	LeaseAcquire(ctx context.Context, p LeaseAcquireParams) (Lease, error)
	// LeaseRenew extends a lease still held with the same owner and token;
	// xjob.ErrLeaseLost if it was taken over or released.
	LeaseRenew(ctx context.Context, p LeaseRenewParams) (Lease, error)
	// LeaseRelease gives the lease up (keeping its token, so tokens stay
	// monotonic); releasing a lease one no longer holds is xjob.ErrLeaseLost.
	LeaseRelease(ctx context.Context, l Lease) error
	// LeaseGet returns the lease's current state or xjob.ErrNotFound.
	LeaseGet(ctx context.Context, name string) (Lease, error)
}

// LeaseAcquireParams is the input of LeaseStore.LeaseAcquire.
// NodeStore keeps the nodes of a cluster (`xjob server` over a shared
// database): each node beats with an expiry, and every node reads the
// live set to work out its share of the scan shards. Only cluster
// backends implement it; local mode and AWS have no nodes.
type NodeStore interface {
	// NodeBeat records that node id (serving at addr) is alive at now
	// (Unix ms) until now+ttl, creating or replacing its record.
	NodeBeat(ctx context.Context, id, addr string, now int64, ttl time.Duration) error
	// NodeLeave removes node id at once (a clean shutdown); leaving a
	// node that is not there is not an error.
	NodeLeave(ctx context.Context, id string) error
	// NodesLive returns the nodes whose beat has not expired at now,
	// ordered by id.
	NodesLive(ctx context.Context, now int64) ([]Node, error)
}

// RestoreStore writes records exactly as another store of the same
// installation holds them, ids and counters included: what `xjob db copy`
// needs to move a local installation into a cluster database, and what the
// other ports cannot do (JobInsert starts a job at version and revision 1,
// dropping the revision its queued fires were planned under; LogCreate
// gives a log a new id, which would break the links executors, alarms and
// people hold). Only the SQL stores implement it.
type RestoreStore interface {
	// JobRestore inserts jobs with every field as given — id, version,
	// revision, schedule state, slow-dispatch counters, times — all or
	// none. A job's Shard must be the one this store derives from its id
	// (it was placed under another shard count otherwise), and a taken id
	// is xjob.ErrConflict. Ids allocated later are above every restored one.
	JobRestore(ctx context.Context, jobs []xjob.Job) error
	// LogRestore inserts logs with every field as given, id and version
	// included, all or none; a taken id or occurrence is
	// xjob.ErrConflict. Ids allocated later are above every restored one.
	LogRestore(ctx context.Context, logs []xjob.Log) error
}

// Node is one member of a cluster as NodeStore records it.
type Node struct {
	ID        string
	Addr      string
	ExpiresAt int64 // Unix ms
}

// Lease is a time-bounded claim on a named resource (a scan shard). Token is
// a fencing token: it grows every time the lease changes hands, so a holder
// that was taken over can be told apart from the current one.
type Lease struct {
	Name      string `json:"name"`
	Owner     string `json:"owner"`
	Token     int64  `json:"token"`
	ExpiresAt int64  `json:"expiresAt"`
}

type LeaseAcquireParams struct {
	Name  string
	Owner string
	Now   int64
	TTL   time.Duration
	// PurgeAt, when > 0, is when (Unix ms) the lease's record becomes
	// useless: a store may delete it any time after (DynamoDB's TTL), so
	// that a lease per job does not outlive its job. Only for leases whose
	// absence then means the same as their expiry: a shard lease, whose
	// token must keep growing, never sets it. A store without deletion
	// ignores it.
	PurgeAt int64
}

// LeaseRenewParams is the input of LeaseStore.LeaseRenew.
type LeaseRenewParams struct {
	Lease Lease
	Now   int64
	TTL   time.Duration
}

// ReportStore keeps the daily run report as counters per day and group:
// per group so that the report of a user limited to some groups is a read
// of a few counters, not a count of their logs; per day and group rather
// than per day so that concurrent writers spread over several counters.
type ReportStore interface {
	// ReportAdd adds the deltas to the counters of d.Day and d.GroupID
	// (creating them; GroupID 0 is the "no one group" counter).
	ReportAdd(ctx context.Context, d xjob.ReportDay) error
	// ReportList returns, for each day in p's range that has counters,
	// their sum over the groups p selects, in day order, GroupID 0.
	ReportList(ctx context.Context, p ReportListParams) ([]xjob.ReportDay, error)
}

// ReportListParams is the input of ReportStore.ReportList.
type ReportListParams struct {
	// From and To bound the days, inclusive (yyyy-mm-dd).
	From, To string
	// GroupIDs selects the groups summed. Empty means every counter,
	// group 0 included: the installation's report. A non-empty set never
	// includes group 0, whose counts belong to no one group.
	GroupIDs []int64
}

// UserStore keeps console users, keyed by username.
type UserStore interface {
	// UserInsert stores a new user with Version 1; xjob.ErrConflict if the
	// username is taken.
	UserInsert(ctx context.Context, u xjob.User) (xjob.User, error)
	// UserGet returns one user or xjob.ErrNotFound.
	UserGet(ctx context.Context, username string) (xjob.User, error)
	// UserList returns users in username order, filtered.
	UserList(ctx context.Context, p UserListParams) ([]xjob.User, error)
	// UserUpdate replaces a user if its stored version is ExpectVersion and
	// returns it with the version bumped.
	UserUpdate(ctx context.Context, p UserUpdateParams) (xjob.User, error)
	// UserDelete removes a user; xjob.ErrNotFound if there is none.
	UserDelete(ctx context.Context, username string) error
}

// UserListParams filters UserStore.UserList. Zero values match everything;
// Username matches a substring.
type UserListParams struct {
	Username string
	Role     *xjob.Role
}

// UserUpdateParams is the input of UserStore.UserUpdate.
type UserUpdateParams struct {
	User          xjob.User
	ExpectVersion int64
}

// AuthStore keeps what signing in must share between processes — every
// Lambda environment, every restart of xjob local — so that a limit holds
// for the installation and not per process: counters of sign-in and
// password attempts, and sessions ended before their cookie expires.
type AuthStore interface {
	// AttemptAdd counts one attempt under p.Key and returns the count of
	// its window, this attempt included. A window starts at the first
	// attempt and lasts p.Window; an attempt after that starts a new
	// window at 1. Concurrent adds each see a different count, so a burst
	// cannot all pass a check made before any of them is counted.
	AttemptAdd(ctx context.Context, p AttemptAddParams) (int, error)
	// AttemptReset forgets p.Key's window (a successful sign-in).
	AttemptReset(ctx context.Context, key string) error
	// SessionRevoke records that the session id is over. expires (Unix
	// ms) is when its cookie would have ended; after it the store may
	// forget the record.
	SessionRevoke(ctx context.Context, id string, expires int64) error
	// SessionRevoked reports whether id was revoked.
	SessionRevoked(ctx context.Context, id string) (bool, error)
}

// AttemptAddParams is the input of AuthStore.AttemptAdd.
type AttemptAddParams struct {
	Key    string
	Now    int64 // Unix ms
	Window time.Duration
}

// GlueStore keeps the saved GLUE sources of jobs.
type GlueStore interface {
	// GlueVersionAdd stores a saved source and deletes the job's oldest
	// versions beyond keep.
	GlueVersionAdd(ctx context.Context, v xjob.GlueVersion, keep int) error
	// GlueVersionList returns a job's versions, newest first, at most limit.
	GlueVersionList(ctx context.Context, jobID int64, limit int) ([]xjob.GlueVersion, error)
	// GlueVersionDeleteJob removes every version of a job (the job was deleted).
	GlueVersionDeleteJob(ctx context.Context, jobID int64) error
}

// Queue is a durable at-least-once queue of T with delayed visibility and a
// visibility timeout: a received message stays hidden for Visibility, then
// comes back unless it was acked. The ring is one; each dispatch lane is one.
type Queue[T any] interface {
	// Send enqueues messages; each becomes visible at its VisibleAt.
	Send(ctx context.Context, msgs []Outgoing[T]) error
	// Receive returns up to Max visible messages, hiding them for
	// Visibility; with Wait > 0 it waits that long for one to appear. A
	// message this code cannot decode (a newer version's: fire.VersionError,
	// or corrupt) is never deleted unread and never holds back the others:
	// a backend leaves it hidden to be tried again later and returns the
	// rest.
	Receive(ctx context.Context, p ReceiveParams) ([]Delivery[T], error)
	// Ack deletes delivered messages; acking an already-acked one is not an error.
	Ack(ctx context.Context, tokens []string) error
	// Retry makes a delivered message visible again after delay.
	Retry(ctx context.Context, token string, delay time.Duration) error
}

// Outgoing is a message to send and when it becomes visible (Unix ms; 0
// or the past means now).
type Outgoing[T any] struct {
	Msg       T
	VisibleAt int64
}

// ReceiveParams is the input of Queue.Receive.
type ReceiveParams struct {
	Max        int
	Visibility time.Duration
	Wait       time.Duration
}

// Delivery is a received message. Token acknowledges it; Receives counts
// deliveries of this message, this one included.
type Delivery[T any] struct {
	Msg      T
	Token    string
	Receives int
}

// ExecutorClient calls an executor's HTTP endpoints. Transport failures come
// back as a failing ReturnT, as in xxl-job, so callers record them.
type ExecutorClient interface {
	Run(ctx context.Context, address string, p protocol.TriggerParam) protocol.ReturnT
	Beat(ctx context.Context, address string) protocol.ReturnT
	IdleBeat(ctx context.Context, address string, jobID int64) protocol.ReturnT
	Kill(ctx context.Context, address string, jobID int64) protocol.ReturnT
	Log(ctx context.Context, address string, p protocol.LogParam) (protocol.LogResult, protocol.ReturnT)
}

// Alarm is what an Alarmer is told about a final failure.
type Alarm struct {
	Job xjob.Job
	Log xjob.Log
}

// Alarmer tells people about a failure that will not be retried.
type Alarmer interface {
	Alarm(ctx context.Context, a Alarm) error
}
