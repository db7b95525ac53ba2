// Package dispatch triggers occurrences on executors: it loads the job and
// its group, finds the executor addresses, routes, creates the trigger log
// under the occurrence's deterministic id, POSTs /run and records the reply.
//
// The trigger log is the deduplication point. It is created with a write
// conditional on its occurrence id, so a second delivery of the same
// occurrence finds it. Per occurrence:
//
//	claim (occurrence id) ──created──▶ POST /run ──▶ record reply (trigger code, msg)
//	      │exists
//	      ├── log already triggered ──────────────▶ drop (duplicate)
//	      ├── untriggered, claim still valid ─────▶ ErrInFlight (retry later)
//	      └── untriggered, claim expired ─taken over─▶ POST /run (take over)
//
// The take-over closes the gap of a dispatcher that died between creating
// the log and calling the executor: the fire is not lost. The only case in
// which an executor can see one log id twice is a dispatcher that called
// /run and died before recording it, and its claim then expired; xxl-job
// executors reject a log id that is still queued with them.
//
// Provisional claims (Config.ProvisionalClaims, the AWS functions) save the
// record of a successful call: a task that names its ring message
// (fire.DispatchTask.Delivery) claims with the success already recorded,
// in that message's name, and answers to that message only:
//
//	claim (code 200, msg, delivery D) ──▶ POST /run ──success──▶ (nothing: the claim said it)
//	                                                 └─failed──▶ record reply (clears D)
//	a later delivery:  another message ─────────────────▶ drop (D's message is still there
//	                                                        until D's dispatcher called)
//	                   D again, claim valid ────────────▶ ErrInFlight
//	                   D again, claim expired ─taken over─▶ probe, POST /run if unknown
//	the result (callback) ──▶ no longer provisional: every delivery drops it
//
// What this adds to "twice" above: a copy of D delivered again after the
// claim expired and before the result, for a job whose executor no longer
// answers the probe (an SQS duplicate of a message already handled).
//
// The unit of durable work is a batch (a ring bucket's instant on one
// lane, handed over in process by LaneSink: locally, and for the fast lane
// in the AWS ring function; an SQS batch of a lane queue), not a trigger: Load reads the batch's jobs
// in one JobGetMany and each group and its addresses once; Batch.Run
// claims all its occurrences in one LogCreateMany, calls the executors
// concurrently, records every reply in one LogTriggeredMany and adds the
// report counters once per day. DispatchMany is Load + Run; Dispatch is a
// batch of one; there is one path.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/egress"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/scheduler/route"
	"github.com/xjobdev/xjob/internal/target"
	"github.com/xjobdev/xjob/internal/text"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// ErrInFlight means another dispatcher holds an unexpired claim on the
// occurrence: the caller should retry the task after the claim TTL rather
// than drop it.
var ErrInFlight = errors.New("occurrence is being dispatched elsewhere")

// Router picks one executor address for a job (every strategy except
// SHARDING_BROADCAST, which Dispatcher fans out itself); the result's trail
// describes the choice for the trigger message (FAILOVER's beat results).
// *route.Router is the implementation; the interface lets tests count calls.
type Router interface {
	Route(ctx context.Context, strategy xjob.RouteStrategy, jobID int64, addrs []string) (route.Result, error)
}

var _ Router = (*route.Router)(nil)

// AddressSource lists the executor addresses of a group: a manual group's
// typed list, or an automatic group's live registrations.
type AddressSource interface {
	Addresses(ctx context.Context, g xjob.Group) ([]string, error)
}

// Completer takes a log that reached a final state (here: a failed
// trigger) through retry, alarm and child-job handling.
type Completer interface {
	Complete(ctx context.Context, l xjob.Log) error
}

// Targets runs the jobs that need no executor (glue type HTTP) in
// process: *httptarget.Executor. Start returns at once, as an executor's
// /run does; the result comes back through the callback path.
type Targets interface {
	Start(ctx context.Context, c target.Call) protocol.ReturnT
}

// Config wires a Dispatcher: its ports (Store, Executors, Router,
// Addresses and Completer are required; Clock defaults to the wall clock,
// Logger to slog.Default()) and its tunables.
type Config struct {
	Store     driver.Store
	Executors driver.ExecutorClient
	Router    Router
	Addresses AddressSource
	Completer Completer
	Clock     clock.Clock
	Logger    *slog.Logger
	// Metrics, if set, counts triggers, duplicates, drops and fire delay.
	Metrics *metric.Metrics
	// Targets, if set, runs HTTP jobs; without it their triggers fail
	// saying the deployment does not run them.
	Targets Targets

	// ClaimTTL is how long a created log is reserved for the dispatcher
	// that created it before another may take it over (default 30 s).
	ClaimTTL time.Duration
	// InFlightRetry is how soon a task whose occurrence another
	// dispatcher holds (ErrInFlight) comes back (default ClaimTTL, when
	// the claim has surely ended). A cluster node sets it shorter: a dead
	// node's claims are released when the others see it gone (the lease
	// TTL), well before the claim TTL, and its fires should follow then,
	// not 30 s later; a live holder's claim costs one more read a retry.
	InFlightRetry time.Duration
	// Fence, if set, marks every claim as calling right before its
	// executor call and calls only what the mark kept (Claimed.fence):
	// for a store on which other processes end live claims, a cluster's,
	// where the nodes that see one leave release its claims. Nil trusts
	// the claims: a single process's (xjob local), or the AWS functions',
	// whose claims nothing ends before their ClaimUntil.
	Fence driver.CallFence
	// ProvisionalClaims claims the tasks that name their ring message
	// (fire.DispatchTask.Delivery) provisionally: the claim records the
	// trigger's success (code 200 and the message a success writes) in
	// the message's name, and a call that succeeds needs no second write;
	// only a failed call, or a reply that differs, is recorded. Only a
	// store that keeps xjob.Log.Delivery may be given such claims (the
	// AWS functions' DynamoDB store); elsewhere every claim is a plain one
	// and every reply is recorded, as when this is off.
	ProvisionalClaims bool
	// AdminAddress is shown in trigger messages (xxl-job shows the admin IP).
	AdminAddress string
	// AnyTriggerAddress lets a task's address override name any address.
	// Off (the default), an override address that is neither in the
	// group's stored list nor a live executor of the group fails the
	// trigger without a call: the admin service checks overrides when a
	// person triggers, and this keeps a task that reaches a lane some
	// other way (a direct invocation of the dispatch function) to the
	// same rule.
	AnyTriggerAddress bool
	// BatchConcurrency bounds the tasks of one DispatchMany triggered at
	// the same time, and its concurrent group reads (default 32): a batch
	// shares its reads, not its executors' latency.
	BatchConcurrency int
}

// Dispatcher triggers occurrences.
type Dispatcher struct {
	cfg Config
}

// New builds a Dispatcher.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Store == nil || cfg.Executors == nil || cfg.Router == nil || cfg.Addresses == nil || cfg.Completer == nil {
		return nil, errors.New("dispatch: Store, Executors, Router, Addresses and Completer are required")
	}
	cfg.Clock, cfg.Logger = fallback.Clock(cfg.Clock), fallback.Logger(cfg.Logger)
	if cfg.ClaimTTL == 0 {
		cfg.ClaimTTL = 30 * time.Second
	}
	if cfg.InFlightRetry <= 0 || cfg.InFlightRetry > cfg.ClaimTTL {
		cfg.InFlightRetry = cfg.ClaimTTL
	}
	if cfg.BatchConcurrency <= 0 {
		cfg.BatchConcurrency = 32
	}
	return &Dispatcher{cfg: cfg}, nil
}

// Outcome says what happened to one task.
type Outcome struct {
	// Logs are the logs created or taken over (one per broadcast shard);
	// the lane sink's batches, which never read them, leave them out.
	Logs []xjob.Log
	// Duplicates counts shards that were already triggered.
	Duplicates int
	// Dropped is set when the task no longer applies (job deleted,
	// stopped or rescheduled since it was planned); Reason says why.
	Dropped bool
	Reason  string
}

// Dispatch triggers task. It returns ErrInFlight when another dispatcher
// holds the occurrence, a *xjob.ValidationError for a malformed task, and
// other errors for store failures (retry later). Executor failures are not
// errors: they are recorded in the log and completed (retry/alarm).
// It is DispatchMany of one task.
func (d *Dispatcher) Dispatch(ctx context.Context, task fire.DispatchTask) (Outcome, error) {
	outs, errs := d.DispatchMany(ctx, []fire.DispatchTask{task})
	return outs[0], errs[0]
}

// DispatchMany triggers tasks with shared reads (Load): their jobs in one
// JobGetMany, each distinct group and its addresses once; then every task
// concurrently, at most
// Config.BatchConcurrency at a time. The i-th outcome and error are
// tasks[i]'s and mean exactly what Dispatch's do.
func (d *Dispatcher) DispatchMany(ctx context.Context, tasks []fire.DispatchTask) ([]Outcome, []error) {
	return d.Load(ctx, tasks).Run(ctx, span(0, len(tasks)), nil)
}

// Batch is a set of tasks whose reads are done: what Load learnt about
// each task, waiting for Run. It lets a caller that paces its own work
// (the local lane sink) share the reads of DispatchMany and still run the
// batch in chunks, each chunk one claim and one record.
type Batch struct {
	d     *Dispatcher
	tasks []batchTask
	// noLogs leaves Outcome.Logs empty: a caller that never reads them
	// (the lane sink) saves a copy of every log, 224 bytes a trigger.
	noLogs bool
}

// batchTask is one task's state after Load: done with (out, err) when
// validation, the job or its group decided it; else t is ready to trigger.
type batchTask struct {
	done bool
	out  Outcome
	err  error
	t    *trigger
}

// Load validates tasks and reads what triggering them needs: all jobs in
// one JobGetMany, each distinct group once, and each group's addresses
// once (only for groups some task needs them for). Read failures are not
// returned here but by the Run of each task they concern; Load has no
// other effect, so a caller may leave some tasks of a batch untriggered.
func (d *Dispatcher) Load(ctx context.Context, tasks []fire.DispatchTask) *Batch {
	return d.LoadKnown(ctx, tasks, nil)
}

// LoadKnown is Load for a caller that has just read some of the tasks'
// jobs itself: the ring reads a bucket's jobs to drop stale fires, and
// passes them here so that a trigger reads its job once, not twice (on
// DynamoDB, half a read unit a trigger). known maps job ids to those
// jobs; it is only read. Jobs not in it are read as Load reads them.
func (d *Dispatcher) LoadKnown(ctx context.Context, tasks []fire.DispatchTask, known map[int64]*xjob.Job) *Batch {
	b := &Batch{d: d, tasks: make([]batchTask, len(tasks))}
	byID, err := d.readJobs(ctx, b, tasks, known)
	groups := d.newTriggers(b, tasks, byID, err)
	d.readGroups(ctx, groups)
	d.applyGroups(b, groups)
	return b
}

// readJobs validates tasks (deciding b's invalid ones) and returns the
// jobs of the rest by id: those in known as given, the others read in one
// JobGetMany, whose error it returns beside what it read.
//
// When known has every job (the ring's hand-offs), known itself is
// returned, only ever read: copied, it was a map of 10,000 entries a
// second under steady 10,000 jobs.
func (d *Dispatcher) readJobs(ctx context.Context, b *Batch, tasks []fire.DispatchTask, known map[int64]*xjob.Job) (map[int64]*xjob.Job, error) {
	var ids []int64
	for i := range tasks {
		if err := tasks[i].Validate(); err != nil {
			b.tasks[i] = batchTask{done: true, err: err}
			continue
		}
		if id := tasks[i].Occurrence.JobID; known[id] == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return known, nil
	}
	byID := make(map[int64]*xjob.Job, len(tasks))
	for i := range tasks {
		if j := known[tasks[i].Occurrence.JobID]; j != nil && !b.tasks[i].done {
			byID[j.ID] = j
		}
	}
	slices.Sort(ids)
	jobs, err := d.loadJobs(ctx, slices.Compact(ids))
	for i := range jobs {
		byID[jobs[i].ID] = &jobs[i]
	}
	return byID, err
}

// groupRead is what LoadKnown reads of one group, once for every task of
// the batch that needs it.
type groupRead struct {
	id        int64
	needAddrs bool
	group     xjob.Group
	addrs     []string
	err       error // group read failure (not ErrNotFound)
	missing   bool
	addrsErr  error
}

// newTriggers decides the tasks of b whose job is unreadable, deleted or
// superseded (fire.Superseded), readErr being the job read's failure;
// gives every other one its trigger; and returns the groups those need,
// each once, in first-seen order.
func (d *Dispatcher) newTriggers(b *Batch, tasks []fire.DispatchTask, byID map[int64]*xjob.Job, readErr error) []*groupRead {
	groups := map[int64]*groupRead{}
	var (
		order []*groupRead
		// The batch's triggers, in one allocation rather than one a task:
		// they live as long as the batch does either way.
		triggers []trigger
	)
	for i, task := range tasks {
		bt := &b.tasks[i]
		if bt.done {
			continue
		}
		occ := task.Occurrence
		job, ok := byID[occ.JobID]
		if !ok && readErr != nil {
			*bt = batchTask{done: true, err: fmt.Errorf("dispatch job %d: %w", occ.JobID, readErr)}
			continue
		}
		if reason := fire.Superseded(job, occ, task.Revision); reason != "" {
			*bt = batchTask{done: true, out: Outcome{Dropped: true, Reason: reason}}
			continue
		}
		if triggers == nil {
			triggers = make([]trigger, len(tasks))
		}
		bt.t = &triggers[i]
		fillTrigger(bt.t, job, task)
		g := groups[job.GroupID]
		if g == nil {
			g = &groupRead{id: job.GroupID}
			groups[job.GroupID] = g
			order = append(order, g)
		}
		g.needAddrs = g.needAddrs || (!bt.t.target && (len(task.AddressList) == 0 || !d.cfg.AnyTriggerAddress))
	}
	return order
}

// readGroups reads each group, and its addresses where a task needs them,
// concurrently.
func (d *Dispatcher) readGroups(ctx context.Context, groups []*groupRead) {
	each(len(groups), d.cfg.BatchConcurrency, func(i int) {
		g := groups[i]
		g.group, g.err = d.cfg.Store.GroupGet(ctx, g.id)
		if errors.Is(g.err, xjob.ErrNotFound) {
			g.missing, g.err = true, nil
		}
		if g.err != nil || g.missing || !g.needAddrs {
			return
		}
		g.addrs, g.addrsErr = d.cfg.Addresses.Addresses(ctx, g.group)
	})
}

// applyGroups gives each trigger of b its group and the addresses it may
// be routed to, or decides its task when they could not be read; a
// trigger whose group is gone, or whose address override names an address
// foreign to the group, fails without a call.
func (d *Dispatcher) applyGroups(b *Batch, groups []*groupRead) {
	byID := make(map[int64]*groupRead, len(groups))
	for _, g := range groups {
		byID[g.id] = g
	}
	for i := range b.tasks {
		bt := &b.tasks[i]
		if bt.done {
			continue
		}
		t := bt.t
		g := byID[t.job.GroupID]
		switch {
		case g.missing:
			t.fail = "executor group " + strconv.FormatInt(t.job.GroupID, 10) + " does not exist"
		case g.err != nil:
			*bt = batchTask{done: true, err: fmt.Errorf("dispatch job %d: group: %w", t.job.ID, g.err)}
		case t.target:
			// The built-in executor runs it: no address to look up, and
			// an override cannot send its spec anywhere else.
			t.group, t.addrs = groupOf(g.group), []string{target.Address}
			if d.cfg.Targets == nil {
				t.fail = "HTTP jobs are not run on this deployment"
			}
		default:
			t.group = groupOf(g.group)
			t.addrs = t.task.AddressList
			if (len(t.addrs) == 0 || !d.cfg.AnyTriggerAddress) && g.addrsErr != nil {
				*bt = batchTask{done: true, err: fmt.Errorf("dispatch job %d: addresses: %w", t.job.ID, g.addrsErr)}
				continue
			}
			if len(t.addrs) == 0 {
				t.addrs = g.addrs
			} else if !d.cfg.AnyTriggerAddress {
				if bad := foreignAddress(t.addrs, g.group.AddressList, g.addrs); bad != "" {
					t.fail = "address override " + bad + " is not an address of group " + g.group.AppName
				}
			}
		}
	}
}

// foreignAddress returns the first of overrides found in neither of the
// group's lists, or "".
func foreignAddress(overrides []string, lists ...[]string) string {
	known := map[string]bool{}
	for _, l := range lists {
		for _, a := range l {
			known[egress.AddressKey(a)] = true
		}
	}
	for _, a := range overrides {
		if !known[egress.AddressKey(a)] {
			return a
		}
	}
	return ""
}

// loadJobs reads the jobs among ids that exist with one JobGetMany, for a
// single job too: a batch of one is read as any batch, so it is served
// from the store's version-checked job cache (SQLite) and costs half a
// read unit (an eventually consistent BatchGetItem on DynamoDB; the ring
// checked the job's revision, and a batch has always read this way).
func (d *Dispatcher) loadJobs(ctx context.Context, ids []int64) ([]xjob.Job, error) {
	return d.cfg.Store.JobGetMany(ctx, ids)
}

// Run triggers the tasks idx of b (indexes into the tasks given to Load)
// as one unit of durable work, and returns their outcomes and errors in
// the order of idx, each meaning exactly what Dispatch's does:
//
//	Claim: route every pending log ──▶ LogCreateMany (one claim for all)
//	Claimed.Run: POST /run, concurrently ──▶ LogTriggeredMany (one record for all replies)
//	    ──▶ report counters once per day, slow marks, failed triggers completed
//
// Executor calls take a slot of calls each (a buffered channel used as a
// semaphore, shared by the Runs of one lane); nil bounds them to
// Config.BatchConcurrency for this Run. Each task must be Run (or Claimed)
// once; Runs of different tasks of one Batch may overlap.
func (b *Batch) Run(ctx context.Context, idx []int, calls chan struct{}) ([]Outcome, []error) {
	return b.Claim(ctx, idx).Run(ctx, calls)
}

// Claimed is a Run cut after its claim: the tasks' logs are routed and
// their logs created (or taken over), and only the executor calls and the
// record remain. A caller that has its tasks ahead of their instant (the
// lane sink, for the ring's prepared hand-offs) claims then, so that at
// the instant no store write stands between the clock and the executor.
//
// A claim that is never Run is not lost: its logs stay claimed until
// their ClaimUntil, and the next delivery of the occurrence takes them
// over then (late by the claim TTL, never twice).
type Claimed struct {
	d      *Dispatcher
	noLogs bool // Batch.noLogs
	outs   []Outcome
	errs   []error
	logs   []*pendingLog
	call   []*pendingLog // claimed by this Run: to call and record
	now    int64
	// called is when Run's last executor call returned (Unix ms on the
	// dispatcher's clock; 0 before Run, or when it had nothing to call):
	// the lane sink's burst timeline tells calls from their record by it.
	called int64
}

// Claim routes the tasks idx of b and claims their logs in one
// LogCreateMany: the first half of Run. A scheduled occurrence claimed
// before its instant records the instant as its trigger time (that is
// when its executor is called), and its claim runs ClaimTTL from there.
func (b *Batch) Claim(ctx context.Context, idx []int) *Claimed {
	d := b.d
	c := &Claimed{d: d, noLogs: b.noLogs, outs: make([]Outcome, len(idx)), errs: make([]error, len(idx)), now: clock.Millis(d.cfg.Clock)}
	// The claim's pending logs, in one allocation rather than one a log
	// (append below never outgrows it: n counts them first).
	n := 0
	for _, i := range idx {
		if bt := &b.tasks[i]; !bt.done {
			n += logsOf(bt.t)
		}
	}
	pls := make([]pendingLog, 0, n)
	add := func(pl pendingLog) {
		pls = append(pls, pl)
		c.logs = append(c.logs, &pls[len(pls)-1])
	}
	c.logs = make([]*pendingLog, 0, n)
	for k, i := range idx {
		bt := &b.tasks[i]
		if bt.done {
			if bt.out.Dropped {
				// Counted here, not in Load: a task Load decided but its
				// caller never runs (the local sink's spill) is not dropped.
				d.cfg.Metrics.Drop()
			}
			c.outs[k], c.errs[k] = bt.out, bt.err
			continue
		}
		t, task := bt.t, bt.t.task
		switch {
		case t.broadcast && task.ShardTotal > 0:
			// A retried shard re-runs only itself.
			add(pendingLog{k: k, t: t, index: task.ShardIndex, total: task.ShardTotal})
		case t.broadcast && t.fail == "" && len(t.addrs) > 0:
			for i := range t.addrs {
				add(pendingLog{k: k, t: t, index: i, total: len(t.addrs)})
			}
		default:
			add(pendingLog{k: k, t: t, index: 0, total: 1})
		}
	}
	if len(c.logs) > 0 {
		c.call = d.claimLogs(ctx, c.logs, c.now)
	}
	return c
}

// logsOf is how many pending logs Claim makes for t: one per executor
// for a sharding broadcast (or its one retried shard), else one.
func logsOf(t *trigger) int {
	if t.broadcast && t.task.ShardTotal == 0 && t.fail == "" && len(t.addrs) > 0 {
		return len(t.addrs)
	}
	return 1
}

// fence marks the logs c claimed and is to call as calling
// (driver.CallFence), in one LogsCalling, and keeps only those the mark
// kept: for a store on which another process may end a live claim. A
// cluster node's claims are released by the nodes that see it leave
// (ReleaseNodeClaims); a node that is only slow, whose beats the others
// missed, learns it here: a claim it lost was taken over or is free to
// be, and calling it would run the fire twice. A kept log's claim no
// longer names the node and lasts until its ClaimUntil whatever the
// others see, so its call and the record of the reply cannot overlap a
// take-over. A log not kept ends with ErrInFlight (its task comes back
// after InFlightRetry and finds the log triggered, or takes it over); a
// failed mark ends every log so, as no claim can be shown to be still
// this Run's (a log marked by the failed write is taken over after its
// ClaimUntil: late, never twice).
func (c *Claimed) fence(ctx context.Context, f driver.CallFence) {
	refs := make([]driver.LogRef, len(c.call))
	for j, pl := range c.call {
		refs[j] = driver.LogRef{ID: pl.log.ID, Version: pl.log.Version}
	}
	kept, err := f.LogsCalling(ctx, refs)
	version := make(map[int64]int64, len(kept))
	for _, k := range kept {
		version[k.ID] = k.Version
	}
	call := c.call[:0]
	for _, pl := range c.call {
		v, ok := version[pl.log.ID]
		switch {
		case err != nil:
			pl.err = fmt.Errorf("dispatch %s: mark claim as calling: %w (%w)", pl.log.OccurrenceID, ErrInFlight, err)
		case !ok:
			pl.err = fmt.Errorf("dispatch %s: claim ended before the call: %w", pl.log.OccurrenceID, ErrInFlight)
		default:
			pl.log.Version = v
			call = append(call, pl)
		}
	}
	c.call = call
}

// Run calls the executors of the logs c claimed and records their
// replies: the second half of Batch.Run, whose results it returns.
func (c *Claimed) Run(ctx context.Context, calls chan struct{}) ([]Outcome, []error) {
	if f := c.d.cfg.Fence; f != nil && len(c.call) > 0 {
		c.fence(ctx, f)
	}
	if len(c.call) > 0 {
		c.called = c.d.callLogs(ctx, c.call, calls, c.now)
	}
	// The outcomes' logs share one backing array, a log's slot capped at
	// itself so that a broadcast's second log appends elsewhere.
	var logs []xjob.Log
	for j, pl := range c.logs {
		out := &c.outs[pl.k]
		switch {
		case pl.err != nil:
			c.errs[pl.k] = errors.Join(c.errs[pl.k], pl.err)
		case pl.duplicate:
			out.Duplicates++
		case c.noLogs:
		case pl.recorded && out.Logs == nil:
			if logs == nil {
				logs = make([]xjob.Log, len(c.logs))
			}
			logs[j] = pl.log
			out.Logs = logs[j : j+1 : j+1]
		case pl.recorded:
			out.Logs = append(out.Logs, pl.log)
		}
	}
	return c.outs, c.errs
}

// pendingLog is one trigger log of a Run on its way: routed, claimed,
// its executor called, its reply recorded. A task has one, or one per
// executor for a sharding broadcast (index of total).
type pendingLog struct {
	k            int // the task's position in Run's idx
	t            *trigger
	index, total int

	address, trail, fail string
	log                  xjob.Log // to create; then as stored
	// prev is a taken-over log as its dead dispatcher left it (takenOver),
	// by pointer: every trigger has a pendingLog, and a take-over is rare
	// (held by value, it was a third of the pendingLog's 648 bytes).
	prev      *xjob.Log
	takenOver bool

	ret       protocol.ReturnT
	called    int64 // when its call started (Unix ms)
	took      time.Duration
	duplicate bool
	recorded  bool
	err       error
}

// claimLogs routes pending logs and claims them; it returns the ones
// this claim won, to be called.
func (d *Dispatcher) claimLogs(ctx context.Context, pending []*pendingLog, now int64) []*pendingLog {
	d.route(ctx, pending)
	logs := make([]xjob.Log, len(pending))
	for j, pl := range pending {
		pl.log = d.newLog(pl, now)
		if d.cfg.ProvisionalClaims && pl.t.task.Delivery != "" {
			d.provisional(pl)
		}
		logs[j] = pl.log
	}
	claims, err := d.cfg.Store.LogCreateMany(ctx, logs)
	if err == nil && len(claims) != len(logs) {
		err = fmt.Errorf("store returned %d claims for %d logs", len(claims), len(logs))
	}
	var call []*pendingLog
	mine := map[int64]bool{} // logs this Run claimed
	for j, pl := range pending {
		if err != nil {
			pl.err = fmt.Errorf("dispatch %s: create log: %w", pl.log.OccurrenceID, err)
			continue
		}
		c := claims[j]
		if c.Outcome == driver.ClaimHeld && mine[c.Log.ID] {
			// Claimed by this very batch (the occurrence was delivered
			// twice in it), which triggers it: a duplicate.
			c.Outcome = driver.ClaimTriggered
		}
		switch c.Outcome {
		case driver.ClaimCreated:
			pl.log = c.Log
			mine[c.Log.ID] = true
		case driver.ClaimTakenOver:
			// Keep what this attempt routed; the stored log keeps its id.
			prev := c.Prev
			pl.log, pl.prev, pl.takenOver = c.Log, &prev, true
			pl.log.ExecutorAddress = pl.address
			mine[c.Log.ID] = true
		case driver.ClaimTriggered:
			pl.duplicate = true
			d.cfg.Metrics.Duplicate()
			continue
		case driver.ClaimHeld:
			pl.err = fmt.Errorf("dispatch %s: %w", pl.log.OccurrenceID, ErrInFlight)
			continue
		default:
			pl.err = fmt.Errorf("dispatch %s: create log: %w", pl.log.OccurrenceID, c.Err)
			continue
		}
		call = append(call, pl)
	}
	return call
}

// provisional makes pl's claim its ring message's (Config.ProvisionalClaims):
// in the message's name always, and, when an executor is to be called, with
// the record a successful call would write. A built-in (HTTP or AWS) job's
// claim stays a plain one: its call cannot be asked about (the take-over's
// probe), so its reply is always recorded.
func (d *Dispatcher) provisional(pl *pendingLog) {
	pl.log.Delivery = pl.t.task.Delivery
	if pl.fail != "" || pl.t.target {
		return
	}
	pl.log.TriggerCode = xjob.CodeSuccess
	pl.log.TriggerMsg = d.triggerMsg(pl.t, pl.address, pl.trail, protocol.ReturnT{Code: xjob.CodeSuccess})
}

// callLogs calls the executors of claimed logs, records their replies
// in one LogTriggeredMany, and does what follows a trigger (counters, slow
// marks, failed triggers completed). It returns when the last call
// returned (Unix ms), before the record.
func (d *Dispatcher) callLogs(ctx context.Context, call []*pendingLog, calls chan struct{}, now int64) (called int64) {
	if calls == nil {
		calls = make(chan struct{}, d.cfg.BatchConcurrency)
	}
	// Workers take the calls in turn, rather than a goroutine a call: a
	// call's stack (the executor client's included) grows once per worker,
	// not once per trigger, which was 1–2 % of local mode's CPU at 10,000
	// triggers a second. A worker is started only once it holds a slot of
	// calls, and keeps that slot while this batch has calls left, so a
	// batch never has more goroutines than slots it holds (the claimed
	// chunks of a second all run at once and share the lane's slots).
	// Each call's context names its group (see call), made here once per
	// run of calls of one group: a worker often takes only a few calls of
	// a chunk, so a context kept per worker was made again by most.
	ctxs := make([]context.Context, len(call))
	app := appContext{parent: ctx}
	for i, pl := range call {
		ctxs[i] = app.of(pl.t.group.appName)
	}
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	n := int64(len(call))
	for {
		calls <- struct{}{}
		if next.Load() >= n {
			<-calls
			break
		}
		wg.Go(func() {
			defer func() { <-calls }()
			for {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				d.call(ctxs[i], call[i])
			}
		})
	}
	wg.Wait()
	called = clock.Millis(d.cfg.Clock)

	// A reply its provisional claim recorded already (the common
	// success) is not written again: reply[j] is call[j]'s record in
	// replies, or -1.
	replies := make([]driver.LogTriggeredParams, 0, len(call))
	reply := make([]int, len(call))
	for j, pl := range call {
		code := pl.ret.Code
		if code != xjob.CodeSuccess {
			code = xjob.CodeFail
		}
		msg := d.triggerMsg(pl.t, pl.address, pl.trail, pl.ret)
		if pl.log.Provisional() && code == pl.log.TriggerCode && msg == pl.log.TriggerMsg && pl.address == pl.log.ExecutorAddress {
			reply[j] = -1
			continue
		}
		reply[j] = len(replies)
		replies = append(replies, driver.LogTriggeredParams{ID: pl.log.ID, ExecutorAddress: pl.address, TriggerCode: code, TriggerMsg: msg})
		pl.log.TriggerCode, pl.log.TriggerMsg, pl.log.ExecutorAddress, pl.log.Delivery = code, msg, pl.address, ""
	}
	var (
		rerrs []error
		err   error
	)
	if len(replies) > 0 {
		rerrs, err = d.cfg.Store.LogTriggeredMany(ctx, replies)
	}
	if err == nil && len(rerrs) != len(replies) {
		// A broken store must not take the dispatcher down with an index
		// panic: treat the whole record as failed (the claims expire and
		// are taken over, which asks the executor before re-running).
		err = fmt.Errorf("store returned %d outcomes for %d replies", len(rerrs), len(replies))
	}
	var failed []xjob.Log
	// The report counts per day and group, so a user limited to some
	// groups reads their counters instead of counting their logs.
	// A day is keyed by its number since the epoch and formatted once:
	// formatting it a trigger was one allocation a trigger.
	type counter struct {
		day   int64
		group int64
	}
	days := map[counter]*xjob.ReportDay{}
	for j, pl := range call {
		// err fails the whole batch (rerrs is then not to be read);
		// rerrs[j] this log only.
		var perr error
		if r := reply[j]; r >= 0 {
			perr = err
			if perr == nil && rerrs[r] != nil && !errors.Is(rerrs[r], xjob.ErrConflict) {
				perr = rerrs[r]
			}
		}
		if perr != nil {
			pl.err = fmt.Errorf("dispatch %s: record trigger: %w", pl.log.OccurrenceID, perr)
			continue
		}
		pl.recorded = true
		ok := pl.log.TriggerCode == xjob.CodeSuccess
		var delay time.Duration
		if occ := pl.t.task.Occurrence; occ.Scheduled() {
			// From the call, not the log's trigger time: a claim made
			// ahead records the instant there.
			delay = time.Duration(pl.called-occ.FireTime) * time.Millisecond
		}
		d.cfg.Metrics.TriggerOf(string(pl.t.task.Occurrence.Type), ok, delay)
		k := counter{floorDiv(pl.log.TriggerTime, msPerDay), pl.log.GroupID}
		delta := days[k]
		if delta == nil {
			day := time.UnixMilli(pl.log.TriggerTime).UTC().Format(time.DateOnly)
			delta = &xjob.ReportDay{Day: day, GroupID: pl.log.GroupID}
			days[k] = delta
		}
		if ok {
			delta.RunningCount++
		} else {
			delta.FailCount++
			failed = append(failed, pl.log)
		}
		if pl.took > fire.SlowDispatch*time.Millisecond {
			if err := d.cfg.Store.JobRecordSlow(ctx, pl.t.job.ID, now/60000); err != nil {
				d.cfg.Logger.WarnContext(ctx, "dispatch record slow", "job", pl.t.job.ID, "err", err)
			}
		}
	}
	for _, delta := range days {
		if err := d.cfg.Store.ReportAdd(ctx, *delta); err != nil {
			d.cfg.Logger.WarnContext(ctx, "dispatch report", "err", err)
		}
	}
	each(len(failed), d.cfg.BatchConcurrency, func(j int) {
		if err := d.cfg.Completer.Complete(ctx, failed[j]); err != nil {
			// The fail monitor's sweep will pick it up again.
			d.cfg.Logger.WarnContext(ctx, "dispatch complete failed trigger", "log", failed[j].ID, "err", err)
		}
	})
	return called
}

// msPerDay is a UTC day in milliseconds.
const msPerDay = 24 * 60 * 60 * 1000

// floorDiv is a / b rounded down (b > 0), so that times before the epoch
// fall in their own day.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// route picks each pending log's executor: a broadcast's logs their own address,
// other tasks through the Router (FAILOVER and BUSYOVER probe executors,
// so those run concurrently; the rest decide in memory).
func (d *Dispatcher) route(ctx context.Context, pending []*pendingLog) {
	var probing []*pendingLog
	app := appContext{parent: ctx}
	for _, pl := range pending {
		t := pl.t
		switch {
		case t.fail != "":
			pl.fail = t.fail
		case len(t.addrs) == 0:
			pl.fail = "no executor address available"
		case t.target:
			pl.address = target.Address
		case t.broadcast:
			pl.address = t.addrs[0]
			if pl.index < len(t.addrs) {
				pl.address = t.addrs[pl.index]
			}
		case t.job.RouteStrategy == xjob.RouteFailover || t.job.RouteStrategy == xjob.RouteBusyover:
			probing = append(probing, pl)
		default:
			d.routeOne(app.of(pl.t.group.appName), pl)
		}
	}
	each(len(probing), d.cfg.BatchConcurrency, func(j int) {
		d.routeOne(protocol.WithAppName(ctx, probing[j].t.group.appName), probing[j])
	})
}

// routeOne routes pl; ctx carries its group's appname (route probes name
// the group: xxl-job 3.5 executors require XXL-JOB-APPNAME).
func (d *Dispatcher) routeOne(ctx context.Context, pl *pendingLog) {
	res, err := d.cfg.Router.Route(ctx, pl.t.job.RouteStrategy, pl.t.job.ID, pl.t.addrs)
	pl.address, pl.trail = res.Address, res.Trail
	if err != nil {
		pl.address, pl.fail = "", err.Error()
	}
}

// newLog is the trigger log pl creates at now. Its trigger time is
// now, or for a scheduled occurrence claimed ahead of its instant the
// instant; it is claimed until ClaimTTL after that.
func (d *Dispatcher) newLog(pl *pendingLog, now int64) xjob.Log {
	t, occ := pl.t, pl.t.task.Occurrence
	if occ.Scheduled() {
		now = max(now, occ.FireTime)
	}
	sharding := ""
	if t.broadcast {
		sharding = fire.ShardingParam(pl.index, pl.total)
	}
	return xjob.Log{
		OccurrenceID:           occ.ID(pl.index),
		JobID:                  t.job.ID,
		GroupID:                t.job.GroupID,
		TriggerType:            occ.Type,
		ScheduledTime:          occ.FireTime,
		TriggerTime:            now,
		ExecutorAddress:        pl.address,
		ExecutorHandler:        t.job.Handler,
		ExecutorParam:          t.param,
		ExecutorShardingParam:  sharding,
		ExecutorFailRetryCount: t.retry,
		ClaimUntil:             now + d.cfg.ClaimTTL.Milliseconds(),
	}
}

// call POSTs /run for one claimed log (or, for a log taken over from a
// dead dispatcher, first asks its executor whether the run got there).
//
// Every executor call (/run, the take-over probe) names the group: xxl-job
// 3.5 executors require XXL-JOB-APPNAME, so ctx must carry pl's group's
// appname (protocol.WithAppName; appContext).
func (d *Dispatcher) call(ctx context.Context, pl *pendingLog) {
	pl.called = clock.Millis(d.cfg.Clock)
	if pl.takenOver && pl.prev.ExecutorAddress != "" && pl.prev.ExecutorAddress != target.Address {
		if rt, ok := d.probe(ctx, *pl.prev); ok {
			pl.ret, pl.address, pl.fail = rt, pl.prev.ExecutorAddress, ""
			return
		}
	}
	if pl.fail != "" {
		pl.ret = protocol.Fail(pl.fail)
		return
	}
	t := pl.t
	started := d.cfg.Clock.Now()
	if t.target {
		pl.ret = d.cfg.Targets.Start(ctx, d.targetCall(pl))
		pl.took = d.cfg.Clock.Now().Sub(started)
		return
	}
	pl.ret = d.cfg.Executors.Run(ctx, pl.address, protocol.TriggerParam{
		JobID:                 t.job.ID,
		ExecutorHandler:       t.job.Handler,
		ExecutorParams:        t.param,
		ExecutorBlockStrategy: string(t.job.BlockStrategy),
		ExecutorTimeout:       t.job.TimeoutSeconds,
		LogID:                 pl.log.ID,
		LogDateTime:           pl.log.TriggerTime,
		GlueType:              string(t.job.GlueType),
		GlueSource:            t.job.GlueSource,
		GlueUpdatetime:        t.job.GlueUpdatedAt,
		BroadcastIndex:        pl.index,
		BroadcastTotal:        pl.total,
	})
	pl.took = d.cfg.Clock.Now().Sub(started)
	if pl.ret.Code != xjob.CodeSuccess && strings.HasPrefix(pl.ret.Msg, msgRepeatTrigger) {
		// A taken-over log the executor still holds in its queue.
		pl.ret = protocol.ReturnT{Code: xjob.CodeSuccess, Msg: "recovered: " + pl.ret.Msg}
	}
}

// appContext is parent carrying an appname (protocol.WithAppName), kept
// for the next trigger of the same group: a chunk's triggers are mostly
// of one group, and a context a trigger (two allocations) was 2 of the
// 30-odd allocations a trigger.
type appContext struct {
	parent context.Context
	app    string
	ctx    context.Context
}

// of is parent carrying app, reused while app is the same.
func (a *appContext) of(app string) context.Context {
	if a.ctx == nil || a.app != app {
		a.app, a.ctx = app, protocol.WithAppName(a.parent, app)
	}
	return a.ctx
}

// each runs fn(0..n-1), at most limit at a time; one call runs inline.
func each(n, limit int, fn func(int)) {
	if n == 1 {
		fn(0)
		return
	}
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}

// trigger is what one task knows before it routes. A prepared instant's
// triggers live until its second is dispatched: under steady 10,000 a
// second, 22,000 of them at once when xjob keeps up, 89,000 when behind. They hold the few fields of the
// job a dispatch reads (triggerJob), not a copy of the whole job, which
// made a trigger 712 bytes instead of 408, kept every string of the job
// alive, and was 60 % of local mode's live heap (docs/performance.md,
// "Where the memory goes"); of the group, likewise, the two fields it
// reads (triggerGroup). A batch's triggers are one array (newTriggers).
type trigger struct {
	job       triggerJob
	task      fire.DispatchTask
	group     triggerGroup
	addrs     []string
	param     string
	retry     int
	broadcast bool
	target    bool   // an HTTP or AWS job: run by Config.Targets
	fail      string // set when no executor can be called
}

// triggerJob is what a dispatch reads of its job: the fields of xjob.Job
// of the same names and types.
type triggerJob struct {
	ID, GroupID    int64
	Handler        string
	RouteStrategy  xjob.RouteStrategy
	BlockStrategy  xjob.BlockStrategy
	TimeoutSeconds int
	GlueType       xjob.GlueType
	GlueSource     string
	GlueUpdatedAt  int64
}

// triggerGroup is what a dispatch reads of its job's group (the whole
// xjob.Group was 88 of a trigger's 392 bytes).
type triggerGroup struct {
	appName     string
	addressType xjob.AddressType
}

func groupOf(g xjob.Group) triggerGroup {
	return triggerGroup{appName: g.AppName, addressType: g.AddressType}
}

func (d *Dispatcher) newTrigger(job *xjob.Job, task fire.DispatchTask) *trigger {
	t := new(trigger)
	fillTrigger(t, job, task)
	return t
}

// fillTrigger sets *t to task's trigger of job, before routing.
func fillTrigger(t *trigger, job *xjob.Job, task fire.DispatchTask) {
	isTarget := job.GlueType.Target()
	*t = trigger{job: triggerJob{ID: job.ID, GroupID: job.GroupID, Handler: job.Handler, RouteStrategy: job.RouteStrategy,
		BlockStrategy: job.BlockStrategy, TimeoutSeconds: job.TimeoutSeconds, GlueType: job.GlueType,
		GlueSource: job.GlueSource, GlueUpdatedAt: job.GlueUpdatedAt}, task: task, param: job.Param, retry: job.FailRetryCount, target: isTarget,
		broadcast: !isTarget && job.RouteStrategy == xjob.RouteShardingBroadcast}
	if task.Param != nil {
		t.param = *task.Param
	}
	if task.FailRetryCount != nil {
		t.retry = *task.FailRetryCount
	}
}

// msgRepeatTrigger starts an xxl-job executor's refusal of a log id it
// already holds in its queue ("repeate trigger job, logId:N").
const msgRepeatTrigger = "repeate trigger job"

// probe asks the executor an abandoned attempt was routed to whether it
// already has the run. The dispatcher that took the log over cannot know
// whether the dead one's /run got through; xxl-job executors (ours too)
// create the run's log file, keyed by log id and trigger date, when the
// run starts, and /log tells whether it exists. Any doubt (executor
// unreachable, no file) means "no": the trigger is sent again, and an
// executor that still has it queued refuses the repeat (msgRepeatTrigger).
func (d *Dispatcher) probe(ctx context.Context, prev xjob.Log) (protocol.ReturnT, bool) {
	res, rt := d.cfg.Executors.Log(ctx, prev.ExecutorAddress, protocol.LogParam{
		LogDateTim: prev.TriggerTime, LogID: prev.ID, FromLineNum: 1,
	})
	if rt.Code != xjob.CodeSuccess || (res.IsEnd && res.ToLineNum == 0) {
		return rt, false
	}
	return protocol.ReturnT{Code: xjob.CodeSuccess, Msg: fmt.Sprintf(
		"recovered: the executor already has log %d (%d log lines); not sent again", prev.ID, res.ToLineNum)}, true
}

// triggerMsg is the trigger_msg xxl-job shows on its log page, in English.
func (d *Dispatcher) triggerMsg(t *trigger, address, trail string, ret protocol.ReturnT) string {
	reg := "automatic"
	switch {
	case t.target:
		reg = "built-in (" + string(t.job.GlueType) + " job)"
	case t.group.addressType == xjob.AddressManual || len(t.task.AddressList) > 0:
		reg = "manual"
	}
	// Appended, not formatted: one message a trigger, and fmt's
	// reflection over a dozen verbs was about 1% of a steady second's CPU.
	// Built in a buffer on the stack (one that does not fit grows on the
	// heap): the string is then the message's one allocation.
	var buf [1024]byte
	b := buf[:0]
	b = append(b, "Trigger type: "...)
	b = append(b, t.task.Occurrence.Type...)
	b = append(b, "<br>"...)
	if d.cfg.AdminAddress != "" {
		b = append(b, "Admin address: "...)
		b = append(b, d.cfg.AdminAddress...)
		b = append(b, "<br>"...)
	}
	b = append(b, "Executor registry type: "...)
	b = append(b, reg...)
	b = append(b, "<br>Executor address list: "...)
	for i, a := range t.addrs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, a...)
	}
	b = append(b, "<br>Route strategy: "...)
	b = append(b, t.job.RouteStrategy...)
	b = append(b, "<br>Block strategy: "...)
	b = append(b, t.job.BlockStrategy...)
	b = append(b, "<br>Timeout: "...)
	b = strconv.AppendInt(b, int64(t.job.TimeoutSeconds), 10)
	b = append(b, "<br>Fail retry count: "...)
	b = strconv.AppendInt(b, int64(t.retry), 10)
	b = append(b, "<br><br><span style=\"color:#00c0ef;\" > >>>>>>>>>>>Trigger<<<<<<<<<<< </span><br>"...)
	if trail != "" {
		b = append(b, trail...)
		b = append(b, "<br><br>"...)
	}
	b = append(b, "Trigger result: "...)
	b = append(b, codeTitle(ret.Code)...)
	b = append(b, "<br>address: "...)
	b = append(b, address...)
	b = append(b, "<br>code: "...)
	b = strconv.AppendInt(b, int64(ret.Code), 10)
	b = append(b, "<br>msg: "...)
	b = append(b, ret.Msg...)
	return text.Truncate(string(b), 15000)
}

func codeTitle(code int) string {
	if code == xjob.CodeSuccess {
		return "success"
	}
	return "fail"
}

// targetCall is what the built-in executor needs of pl: the log, the
// job's spec and settings, and the values its templates may name (the
// schedule time is the occurrence's instant, or the trigger time for a
// trigger that has none).
func (d *Dispatcher) targetCall(pl *pendingLog) target.Call {
	t, occ := pl.t, pl.t.task.Occurrence
	sched := pl.log.TriggerTime
	if occ.Scheduled() {
		sched = occ.FireTime
	}
	return target.Call{
		GlueType: string(t.job.GlueType),
		Vars: target.Vars{JobID: t.job.ID, LogID: pl.log.ID, Param: t.param, ShardIndex: pl.index, ShardTotal: pl.total,
			ScheduleTime: sched, TriggerTime: pl.log.TriggerTime},
		Source: t.job.GlueSource, TimeoutSeconds: t.job.TimeoutSeconds, BlockStrategy: string(t.job.BlockStrategy),
	}
}
