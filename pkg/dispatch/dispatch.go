// Package dispatch triggers occurrences on executors: it loads the job and
// its group, finds the executor addresses, routes, creates the trigger log
// under the occurrence's deterministic id, POSTs /run and records the reply.
//
// The trigger log is the deduplication point. It is created with a write
// conditional on its occurrence id, so a second delivery of the same
// occurrence finds it:
//
//	LogCreate(occurrence id) ──ok──▶ POST /run ──▶ LogTriggered(code, msg)
//	      │conflict
//	      ├── log already triggered ──────────────▶ drop (duplicate)
//	      ├── untriggered, claim still valid ─────▶ ErrInFlight (retry later)
//	      └── untriggered, claim expired ─LogClaim─▶ POST /run (take over)
//
// The take-over closes the gap of a dispatcher that died between creating
// the log and calling the executor: the fire is not lost. The only case in
// which an executor can see one log id twice is a dispatcher that called
// /run and died before recording it, and its claim then expired; xxl-job
// executors reject a log id that is still queued with them.
//
// DispatchMany (and Load + Batch.Trigger for callers with their own worker
// pools) triggers a batch with shared reads: one JobGetMany, each group
// and its addresses once. Dispatch is a batch of one; there is one path.
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
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/metric"
	"github.com/xjobdev/xjob/pkg/protocol"
	"github.com/xjobdev/xjob/pkg/route"
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

// Config holds dispatch tunables.
type Config struct {
	// ClaimTTL is how long a created log is reserved for the dispatcher
	// that created it before another may take it over (default 30 s).
	ClaimTTL time.Duration
	// AdminAddress is shown in trigger messages (xxl-job shows the admin IP).
	AdminAddress string
	// BatchConcurrency bounds the tasks of one DispatchMany triggered at
	// the same time, and its concurrent group reads (default 32): a batch
	// shares its reads, not its executors' latency.
	BatchConcurrency int
}

// Deps are the ports a Dispatcher uses.
type Deps struct {
	Store     driver.Store
	Executors driver.ExecutorClient
	Router    Router
	Addresses AddressSource
	Completer Completer
	Clock     clock.Clock
	Logger    *slog.Logger
	// Metrics, if set, counts triggers, duplicates, drops and fire delay.
	Metrics *metric.Metrics
}

// Dispatcher triggers occurrences.
type Dispatcher struct {
	cfg Config
	d   Deps
}

// New builds a Dispatcher.
func New(cfg Config, d Deps) (*Dispatcher, error) {
	if cfg.ClaimTTL == 0 {
		cfg.ClaimTTL = 30 * time.Second
	}
	if cfg.BatchConcurrency <= 0 {
		cfg.BatchConcurrency = 32
	}
	if d.Store == nil || d.Executors == nil || d.Router == nil || d.Addresses == nil || d.Completer == nil || d.Clock == nil {
		return nil, errors.New("dispatch: Store, Executors, Router, Addresses, Completer and Clock are required")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &Dispatcher{cfg: cfg, d: d}, nil
}

// Outcome says what happened to one task.
type Outcome struct {
	// Logs are the logs created or taken over (one per broadcast shard).
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
func (d *Dispatcher) Dispatch(ctx context.Context, task xjob.DispatchTask) (Outcome, error) {
	outs, errs := d.DispatchMany(ctx, []xjob.DispatchTask{task})
	return outs[0], errs[0]
}

// DispatchMany triggers tasks with shared reads (Load): their jobs in one
// JobGetMany (JobGet when they are all one job's), each distinct group
// and its addresses once; then every task concurrently, at most
// Config.BatchConcurrency at a time. The i-th outcome and error are
// tasks[i]'s and mean exactly what Dispatch's do.
func (d *Dispatcher) DispatchMany(ctx context.Context, tasks []xjob.DispatchTask) ([]Outcome, []error) {
	b := d.Load(ctx, tasks)
	outs, errs := make([]Outcome, len(tasks)), make([]error, len(tasks))
	each(len(tasks), d.cfg.BatchConcurrency, func(i int) { outs[i], errs[i] = b.Trigger(ctx, i) })
	return outs, errs
}

// Batch is a set of tasks whose reads are done: what Load learnt about
// each task, waiting for Trigger. It lets a caller that bounds its own
// workers (the local lane pools) share the reads of DispatchMany and
// still start each trigger when a worker is free.
type Batch struct {
	d     *Dispatcher
	tasks []batchTask
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
// one JobGetMany (JobGet for a single job), each distinct group once, and each group's addresses
// once (only for groups some task needs them for). Read failures are not
// returned here but by the Trigger of each task they concern; Load has no
// other effect, so a caller may leave some tasks of a batch untriggered.
func (d *Dispatcher) Load(ctx context.Context, tasks []xjob.DispatchTask) *Batch {
	b := &Batch{d: d, tasks: make([]batchTask, len(tasks))}
	ids := make([]int64, 0, len(tasks))
	for i := range tasks {
		if err := tasks[i].Validate(); err != nil {
			b.tasks[i] = batchTask{done: true, err: err}
			continue
		}
		ids = append(ids, tasks[i].Occurrence.JobID)
	}
	if len(ids) == 0 {
		return b
	}
	slices.Sort(ids)
	jobs, err := d.loadJobs(ctx, slices.Compact(ids))
	byID := make(map[int64]*xjob.Job, len(jobs))
	for i := range jobs {
		byID[jobs[i].ID] = &jobs[i]
	}

	// Jobs: drop what no longer applies; note the groups the rest need.
	type groupRead struct {
		id        int64
		needAddrs bool
		group     xjob.Group
		addrs     []string
		err       error // group read failure (not ErrNotFound)
		missing   bool
		addrsErr  error
	}
	groups := map[int64]*groupRead{}
	var order []*groupRead
	for i, task := range tasks {
		bt := &b.tasks[i]
		if bt.done {
			continue
		}
		occ := task.Occurrence
		if err != nil {
			*bt = batchTask{done: true, err: fmt.Errorf("dispatch job %d: %w", occ.JobID, err)}
			continue
		}
		job, ok := byID[occ.JobID]
		if !ok {
			*bt = batchTask{done: true, out: Outcome{Dropped: true, Reason: "job deleted"}}
			continue
		}
		// A person's stop or edit bumps the revision; the scan stopping a
		// job whose schedule ended does not, and its last fires still run.
		if occ.Scheduled() && task.Revision != 0 && job.Revision != task.Revision {
			*bt = batchTask{done: true, out: Outcome{Dropped: true, Reason: "job stopped or edited since the fire was planned"}}
			continue
		}
		bt.t = d.newTrigger(*job, task)
		g := groups[job.GroupID]
		if g == nil {
			g = &groupRead{id: job.GroupID}
			groups[job.GroupID] = g
			order = append(order, g)
		}
		g.needAddrs = g.needAddrs || len(task.AddressList) == 0
	}

	// Groups and their addresses, each once, concurrently.
	each(len(order), d.cfg.BatchConcurrency, func(i int) {
		g := order[i]
		g.group, g.err = d.d.Store.GroupGet(ctx, g.id)
		if errors.Is(g.err, xjob.ErrNotFound) {
			g.missing, g.err = true, nil
		}
		if g.err != nil || g.missing || !g.needAddrs {
			return
		}
		g.addrs, g.addrsErr = d.d.Addresses.Addresses(ctx, g.group)
	})
	for i := range b.tasks {
		bt := &b.tasks[i]
		if bt.done {
			continue
		}
		t := bt.t
		g := groups[t.job.GroupID]
		switch {
		case g.missing:
			t.fail = "executor group " + strconv.FormatInt(t.job.GroupID, 10) + " does not exist"
		case g.err != nil:
			*bt = batchTask{done: true, err: fmt.Errorf("dispatch job %d: group: %w", t.job.ID, g.err)}
		default:
			t.group = g.group
			t.addrs = t.task.AddressList
			if len(t.addrs) == 0 {
				if g.addrsErr != nil {
					*bt = batchTask{done: true, err: fmt.Errorf("dispatch job %d: addresses: %w", t.job.ID, g.addrsErr)}
					continue
				}
				t.addrs = g.addrs
			}
		}
	}
	return b
}

// loadJobs reads the jobs among ids that exist: one JobGetMany, or one
// JobGet for a single job (a plain Dispatch reads exactly as it always
// did, which on DynamoDB is a GetItem rather than a BatchGetItem).
func (d *Dispatcher) loadJobs(ctx context.Context, ids []int64) ([]xjob.Job, error) {
	if len(ids) > 1 {
		return d.d.Store.JobGetMany(ctx, ids)
	}
	job, err := d.d.Store.JobGet(ctx, ids[0])
	switch {
	case errors.Is(err, xjob.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return []xjob.Job{job}, nil
}

// Trigger triggers task i of b, once: what Dispatch does after its reads.
// Triggers of different tasks may run concurrently.
func (b *Batch) Trigger(ctx context.Context, i int) (Outcome, error) {
	bt := &b.tasks[i]
	if bt.done {
		if bt.out.Dropped {
			// Counted here, not in Load: a task Load decided but its
			// caller never triggers (the local sink's spill) is not dropped.
			b.d.d.Metrics.Drop()
		}
		return bt.out, bt.err
	}
	d, t, task := b.d, bt.t, bt.t.task
	var (
		out Outcome
		err error
	)
	switch {
	case t.job.RouteStrategy == xjob.RouteShardingBroadcast && task.ShardTotal > 0:
		// A retried shard re-runs only itself.
		err = d.triggerShard(ctx, t, task.ShardIndex, task.ShardTotal, &out)
	case t.job.RouteStrategy == xjob.RouteShardingBroadcast && t.fail == "" && len(t.addrs) > 0:
		n := len(t.addrs)
		for i := range n {
			if e := d.triggerShard(ctx, t, i, n, &out); e != nil {
				err = errors.Join(err, e)
			}
		}
	default:
		err = d.triggerShard(ctx, t, 0, 1, &out)
	}
	return out, err
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

// trigger is what one task knows before it routes.
type trigger struct {
	job       xjob.Job
	task      xjob.DispatchTask
	group     xjob.Group
	addrs     []string
	param     string
	retry     int
	broadcast bool
	fail      string // set when no executor can be called
}

func (d *Dispatcher) newTrigger(job xjob.Job, task xjob.DispatchTask) *trigger {
	t := &trigger{job: job, task: task, param: job.Param, retry: job.FailRetryCount,
		broadcast: job.RouteStrategy == xjob.RouteShardingBroadcast}
	if task.Param != nil {
		t.param = *task.Param
	}
	if task.FailRetryCount != nil {
		t.retry = *task.FailRetryCount
	}
	return t
}

// triggerShard creates (or takes over) the log of shard i of n and calls the executor.
func (d *Dispatcher) triggerShard(ctx context.Context, t *trigger, i, n int, out *Outcome) error {
	// Every executor call below (route probes, /run, the take-over probe)
	// names the group: xxl-job 3.5 executors require XXL-JOB-APPNAME.
	ctx = protocol.WithAppName(ctx, t.group.AppName)
	now := clock.Millis(d.d.Clock)
	occ := t.task.Occurrence
	address, trail, fail := "", "", t.fail
	var recovered *protocol.ReturnT // set when a taken-over log already reached its executor
	if fail == "" {
		switch {
		case len(t.addrs) == 0:
			fail = "no executor address available"
		case t.broadcast:
			address = t.addrs[0]
			if i < len(t.addrs) {
				address = t.addrs[i]
			}
		default:
			res, err := d.d.Router.Route(ctx, t.job.RouteStrategy, t.job.ID, t.addrs)
			address, trail = res.Address, res.Trail
			if err != nil {
				address, fail = "", err.Error()
			}
		}
	}
	sharding := ""
	if t.broadcast {
		sharding = xjob.ShardingParam(i, n)
	}
	l := xjob.Log{
		OccurrenceID:           occ.ID(i),
		JobID:                  t.job.ID,
		GroupID:                t.job.GroupID,
		TriggerType:            occ.Type,
		ScheduledTime:          occ.FireTime,
		TriggerTime:            now,
		ExecutorAddress:        address,
		ExecutorHandler:        t.job.Handler,
		ExecutorParam:          t.param,
		ExecutorShardingParam:  sharding,
		ExecutorFailRetryCount: t.retry,
		ClaimUntil:             now + d.cfg.ClaimTTL.Milliseconds(),
	}
	created, err := d.d.Store.LogCreate(ctx, l)
	if errors.Is(err, xjob.ErrConflict) {
		switch {
		case created.Triggered():
			out.Duplicates++
			d.d.Metrics.Duplicate()
			return nil
		case now < created.ClaimUntil:
			return fmt.Errorf("dispatch %s: %w", l.OccurrenceID, ErrInFlight)
		}
		prev := created
		created, err = d.d.Store.LogClaim(ctx, driver.LogClaimParams{
			ID: created.ID, ExpectVersion: created.Version, ClaimUntil: l.ClaimUntil, TriggerTime: now,
		})
		if errors.Is(err, xjob.ErrConflict) {
			return fmt.Errorf("dispatch %s: %w", l.OccurrenceID, ErrInFlight)
		}
		// Keep what this attempt routed; the stored log keeps its id.
		created.ExecutorAddress = address
		if err == nil && prev.ExecutorAddress != "" {
			if rt, ok := d.probe(ctx, prev); ok {
				recovered, address, fail = &rt, prev.ExecutorAddress, ""
			}
		}
	}
	if err != nil {
		return fmt.Errorf("dispatch %s: create log: %w", l.OccurrenceID, err)
	}

	var ret protocol.ReturnT
	started := d.d.Clock.Now()
	switch {
	case recovered != nil:
		ret = *recovered
	case fail != "":
		ret = protocol.Fail(fail)
	default:
		ret = d.d.Executors.Run(ctx, address, protocol.TriggerParam{
			JobID:                 t.job.ID,
			ExecutorHandler:       t.job.Handler,
			ExecutorParams:        t.param,
			ExecutorBlockStrategy: string(t.job.BlockStrategy),
			ExecutorTimeout:       t.job.TimeoutSeconds,
			LogID:                 created.ID,
			LogDateTime:           created.TriggerTime,
			GlueType:              string(t.job.GlueType),
			GlueSource:            t.job.GlueSource,
			GlueUpdatetime:        t.job.GlueUpdatedAt,
			BroadcastIndex:        i,
			BroadcastTotal:        n,
		})
		if ret.Code != xjob.CodeSuccess && strings.HasPrefix(ret.Msg, msgRepeatTrigger) {
			// A taken-over log the executor still holds in its queue.
			ret = protocol.ReturnT{Code: xjob.CodeSuccess, Msg: "recovered: " + ret.Msg}
		}
	}
	took := d.d.Clock.Now().Sub(started)
	code := ret.Code
	if code != xjob.CodeSuccess {
		code = xjob.CodeFail
	}
	msg := d.triggerMsg(t, address, trail, ret)
	if err := d.d.Store.LogTriggered(ctx, driver.LogTriggeredParams{
		ID: created.ID, ExecutorAddress: address, TriggerCode: code, TriggerMsg: msg,
	}); err != nil && !errors.Is(err, xjob.ErrConflict) {
		return fmt.Errorf("dispatch %s: record trigger: %w", l.OccurrenceID, err)
	}
	created.TriggerCode, created.TriggerMsg, created.ExecutorAddress = code, msg, address
	out.Logs = append(out.Logs, created)
	var delay time.Duration
	if occ.Scheduled() {
		delay = time.Duration(created.TriggerTime-occ.FireTime) * time.Millisecond
	}
	d.d.Metrics.Trigger(code == xjob.CodeSuccess, delay)

	delta := xjob.ReportDay{Day: time.UnixMilli(created.TriggerTime).UTC().Format(time.DateOnly)}
	if code == xjob.CodeSuccess {
		delta.RunningCount = 1
	} else {
		delta.FailCount = 1
	}
	if err := d.d.Store.ReportAdd(ctx, delta); err != nil {
		d.d.Logger.WarnContext(ctx, "dispatch report", "err", err)
	}
	if took > xjob.SlowDispatch*time.Millisecond {
		if err := d.d.Store.JobRecordSlow(ctx, t.job.ID, now/60000); err != nil {
			d.d.Logger.WarnContext(ctx, "dispatch record slow", "job", t.job.ID, "err", err)
		}
	}
	if code != xjob.CodeSuccess {
		if err := d.d.Completer.Complete(ctx, created); err != nil {
			// The fail monitor's sweep will pick it up again.
			d.d.Logger.WarnContext(ctx, "dispatch complete failed trigger", "log", created.ID, "err", err)
		}
	}
	return nil
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
	res, rt := d.d.Executors.Log(ctx, prev.ExecutorAddress, protocol.LogParam{
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
	var b strings.Builder
	reg := "automatic"
	if t.group.AddressType == xjob.AddressManual || len(t.task.AddressList) > 0 {
		reg = "manual"
	}
	fmt.Fprintf(&b, "Trigger type: %s<br>", t.task.Occurrence.Type)
	if d.cfg.AdminAddress != "" {
		fmt.Fprintf(&b, "Admin address: %s<br>", d.cfg.AdminAddress)
	}
	fmt.Fprintf(&b, "Executor registry type: %s<br>", reg)
	fmt.Fprintf(&b, "Executor address list: %s<br>", strings.Join(t.addrs, ","))
	fmt.Fprintf(&b, "Route strategy: %s<br>", t.job.RouteStrategy)
	fmt.Fprintf(&b, "Block strategy: %s<br>", t.job.BlockStrategy)
	fmt.Fprintf(&b, "Timeout: %d<br>", t.job.TimeoutSeconds)
	fmt.Fprintf(&b, "Fail retry count: %d<br>", t.retry)
	b.WriteString("<br><span style=\"color:#00c0ef;\" > >>>>>>>>>>>Trigger<<<<<<<<<<< </span><br>")
	if trail != "" {
		b.WriteString(trail)
		b.WriteString("<br><br>")
	}
	fmt.Fprintf(&b, "Trigger result: %s<br>address: %s<br>code: %d<br>msg: %s", codeTitle(ret.Code), address, ret.Code, ret.Msg)
	return xjob.Truncate(b.String(), 15000)
}

func codeTitle(code int) string {
	if code == xjob.CodeSuccess {
		return "success"
	}
	return "fail"
}
