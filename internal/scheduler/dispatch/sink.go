package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Defaults of LaneSinkOptions.
//
// DefaultSpillAfter is how long a ring hand-off waits for its lane to take
// the next chunk before it sends the rest of its tasks to the durable lane
// queue: a saturated lane must not hold ring buckets past their
// visibility. DefaultSpillBudget bounds the starting of a whole hand-off
// the same way.
//
// DefaultSinkChunk is how many tasks one chunk of a hand-off carries: one
// claim (LogCreateMany) and one record (LogTriggeredMany) per chunk. Large
// enough that a 10,000-fire second is a few dozen write batches, small
// enough that the first executor calls start within milliseconds.
// DefaultSinkChunks is how many chunks of one lane may be in flight at
// once (claimed, not yet recorded), so the claim of one overlaps the
// executor calls of another.
const (
	DefaultSpillAfter  = time.Second
	DefaultSpillBudget = 10 * time.Second
	DefaultSinkChunk   = 256
	DefaultSinkChunks  = 4
	// DefaultTimelineFires is the size of a prepared hand-off whose
	// timeline the sink logs at debug level (see LaneSinkOptions): a
	// burst's, as the ring's "ring burst" lines are.
	DefaultTimelineFires = 1000
)

// LaneSinkOptions configure a LaneSink. Zero values take the defaults.
type LaneSinkOptions struct {
	// Base is the context dispatches run on. Local mode passes the lanes'
	// context, which its shutdown cancels after the ring's, so stopping
	// the ring does not cut a dispatch short. Nil runs each Deliver's
	// dispatches on that Deliver's context without its cancellation: a
	// chunk once started is always claimed, called and recorded (cutting
	// it between the executor call and the record would leave a claim
	// whose take-over could run the executor twice), so the caller's
	// deadline must leave room for one chunk (see the ring function's
	// timeout in internal/app/lambdaapp).
	Base context.Context
	// Queues are the durable lane queues that take what cannot be
	// dispatched now (required).
	Queues driver.Queues
	// Calls bounds the executor calls in flight per lane (the lane's
	// worker pool: --fast-workers / --slow-workers locally). A lane
	// missing from the map is not served: Deliver refuses its tasks.
	Calls map[fire.Lane]int
	// SpillAfter, SpillBudget, Chunk and Chunks: see the Default*
	// constants.
	SpillAfter  time.Duration
	SpillBudget time.Duration
	Chunk       int
	Chunks      int
	// ClaimAhead is how many tasks of a prepared hand-off (Prepare), from
	// its first, have their logs claimed when it is prepared, ahead of
	// their instant, rather than at the instant; 0 claims nothing ahead,
	// and a larger hand-off claims the rest at the instant. On a store a
	// network away (the AWS ring function on DynamoDB) that takes the
	// claim's round trips off the path from the instant to the executor;
	// locally it takes the claim's write transactions off it, so that a
	// burst's second is only executor calls. The price: a hand-off
	// prepared but never delivered (its process died in between) keeps
	// its claims until they expire, and its fires are taken over then,
	// late by the claim TTL (on a cluster, at once: the nodes that see
	// its process leave release them). A dispatcher with a Fence marks
	// the claims as calling at the instant, one write a chunk, and calls
	// only what the mark kept (Config.Fence).
	ClaimAhead int
	// TimelineFires is the size from which a prepared hand-off logs, at
	// debug level, one "lane sink burst timeline" line once delivered:
	// when its claims ahead ended, and when its chunks' calls and records
	// ended, relative to its instant. It is what tells a burst's last
	// receipt waiting on the claims from waiting on the calls (see
	// docs/performance.md). 0 means DefaultTimelineFires.
	TimelineFires int
	Logger        *slog.Logger
}

// LaneSink is the ring's in-process hand-off (a ring.Sink): each lane
// runs the ring's tasks directly, in chunks, which saves the three queue
// writes per trigger (send, receive, delete) of a round trip through the
// lane queue and makes a chunk, not a trigger, the unit of durable work.
// Local mode uses it for both lanes; the AWS ring function for the fast
// lane (the slow lane keeps its queue and its own concurrency there).
//
//	ring ──Deliver(lane, tasks)──▶ Load (shared reads) ──▶ chunk slot free? ──yes──▶ Batch.Run(chunk):
//	                                                       │no, for SpillAfter         claim all, call executors
//	                                                       ▼                           (lane's call slots), record all
//	                                       durable lane queue ◀──────────────────── ErrInFlight, store error
//	                                       (the lane consumers: retries, child and manual tasks)   (after Dispose's delay)
//
// The ring's prepared hand-offs (Prepare, at receipt, about a second
// early) do the left part ahead: Load, given the jobs the ring read, and
// with ClaimAhead the claims too (Batch.Claim per chunk), so that at the
// instant a claimed hand-off only calls and records (Claimed.Run):
//
//	ring ──Prepare──▶ LoadKnown ──▶ first ClaimAhead tasks ──▶ Claim each chunk ··· instant ··▶ Claimed.Run
//	                                     │the rest                                 (call slots only, never spilled)
//	                                     ▼
//	                     at the instant, the chunks as Deliver runs them
//
// The tasks of one Deliver are one batch (Dispatcher.Load): their jobs,
// groups and executor addresses are read once for all of them. Executor
// calls of every chunk of a lane share the lane's call slots.
//
// Deliver returns once every task is dispatched or durably queued, so the
// ring acknowledges a bucket only after its fires were triggered. A crash
// before that brings the bucket back and dispatch drops the repeats by
// occurrence id (and takes over the claims of the dead process once they
// expire): no fire is lost, none runs twice.
type LaneSink struct {
	disp     *Dispatcher
	base     context.Context
	queues   driver.Queues
	log      *slog.Logger
	lanes    map[fire.Lane]*sinkLane
	spill    time.Duration
	budget   time.Duration
	chunk    int
	ahead    int
	timeline int
}

// sinkLane is one lane's capacity: chunks in flight and executor calls.
type sinkLane struct {
	chunks chan struct{}
	calls  chan struct{}
}

// NewLaneSink builds a LaneSink dispatching with d.
func NewLaneSink(d *Dispatcher, o LaneSinkOptions) (*LaneSink, error) {
	if d == nil || o.Queues == nil || len(o.Calls) == 0 {
		return nil, errors.New("dispatch: lane sink needs a Dispatcher, Queues and at least one lane in Calls")
	}
	if o.SpillAfter <= 0 {
		o.SpillAfter = DefaultSpillAfter
	}
	if o.SpillBudget <= 0 {
		o.SpillBudget = DefaultSpillBudget
	}
	if o.Chunk <= 0 {
		o.Chunk = DefaultSinkChunk
	}
	if o.Chunks <= 0 {
		o.Chunks = DefaultSinkChunks
	}
	if o.TimelineFires <= 0 {
		o.TimelineFires = DefaultTimelineFires
	}
	if o.Logger == nil {
		o.Logger = d.cfg.Logger
	}
	s := &LaneSink{disp: d, base: o.Base, queues: o.Queues, log: o.Logger, spill: o.SpillAfter, budget: o.SpillBudget,
		chunk: o.Chunk, ahead: o.ClaimAhead, timeline: o.TimelineFires, lanes: map[fire.Lane]*sinkLane{}}
	for lane, calls := range o.Calls {
		s.lanes[lane] = &sinkLane{chunks: make(chan struct{}, o.Chunks), calls: make(chan struct{}, max(calls, 1))}
	}
	return s, nil
}

// Deliver dispatches tasks as one batch on lane, chunk by chunk, and waits
// for them. Tasks of chunks it could not start in time (no chunk finished
// for the spill time, or the hand-off's budget spent), and tasks whose
// dispatch must be retried (Dispose: in flight elsewhere, store errors),
// go to the durable lane queue, visible after their retry delay; an error
// means that send failed (or ctx ended before every task was started), and
// the ring delivers the bucket again.
func (s *LaneSink) Deliver(ctx context.Context, lane fire.Lane, tasks []fire.DispatchTask) error {
	return s.deliver(ctx, lane, tasks, nil, nil, nil)
}

// Prepare does now, ahead of the tasks' instant, what dispatching them
// needs before the executor calls (the ring's Preparer): their reads
// (Dispatcher.LoadKnown, given the jobs the ring read) and the claims of
// its first ClaimAhead tasks, chunk by chunk, until the instant comes
// (a large hand-off prepared late must not hold its calls back for its
// claims). The returned hand-off dispatches them as Deliver does, without
// doing that again, and the rest as Deliver would; claimed chunks are
// never spilled (they are this process's to run). A job stopped between
// the two is caught by the ring's own check at receipt, not at the
// instant.
func (s *LaneSink) Prepare(ctx context.Context, lane fire.Lane, tasks []fire.DispatchTask, jobs map[int64]*xjob.Job) func(context.Context) error {
	if _, ok := s.lanes[lane]; !ok {
		return func(ctx context.Context) error { return s.deliver(ctx, lane, tasks, nil, nil, nil) }
	}
	base := s.baseOf(ctx)
	batch := s.disp.LoadKnown(base, tasks, jobs)
	batch.noLogs = true // settle reads errors and drops only
	// Claims ahead stop when the instant comes: from then on the claimed
	// chunks' calls must start, and the rest is claimed as Deliver claims,
	// chunk by chunk beside the calls. A hand-off whose instant is past
	// (a late bucket) claims nothing ahead.
	var (
		claimed []claimedChunk
		instant int64
	)
	for _, t := range tasks {
		instant = max(instant, t.Occurrence.FireTime)
	}
	clk := s.disp.cfg.Clock
	var tl *timeline
	if len(tasks) >= s.timeline {
		tl = &timeline{instant: instant, prepared: clock.Millis(clk)}
	}
	for start, ahead := 0, min(len(tasks), s.ahead); start < ahead && clock.Millis(clk) < instant; start += s.chunk {
		idx := span(start, min(start+s.chunk, ahead))
		claimed = append(claimed, claimedChunk{idx: idx, c: batch.Claim(base, idx)})
	}
	if tl != nil {
		tl.claimed = clock.Millis(clk)
	}
	return func(ctx context.Context) error { return s.deliver(ctx, lane, tasks, batch, claimed, tl) }
}

// timeline is what a large prepared hand-off logs once delivered: Unix ms
// on the dispatcher's clock, and per chunk claimed ahead when its calls
// and its record ended.
type timeline struct {
	instant, prepared, claimed int64
	mu                         sync.Mutex
	called, recorded           []int64
}

// chunk notes that a chunk claimed ahead ended its calls at called and
// its record at recorded (called is 0 when it had nothing to call).
func (tl *timeline) chunk(called, recorded int64) {
	if tl == nil {
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if called > 0 {
		tl.called = append(tl.called, called)
	}
	tl.recorded = append(tl.recorded, recorded)
}

// log writes the timeline of a hand-off of fires on lane, of which ahead
// were claimed ahead, delivered at delivered: every figure in ms after
// the instant (negative: before it).
func (tl *timeline) log(ctx context.Context, log *slog.Logger, lane fire.Lane, fires, ahead int, delivered int64) {
	if tl == nil {
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	rel := func(ms []int64) (first, median, last int64) {
		if len(ms) == 0 {
			return 0, 0, 0
		}
		slices.Sort(ms)
		return ms[0] - tl.instant, ms[len(ms)/2] - tl.instant, ms[len(ms)-1] - tl.instant
	}
	cf, cm, cl := rel(tl.called)
	rf, rm, rl := rel(tl.recorded)
	log.DebugContext(ctx, "lane sink burst timeline", "lane", lane, "fires", fires, "claimedAhead", ahead,
		"chunksAhead", len(tl.recorded), "preparedMs", tl.prepared-tl.instant, "claimsEndedMs", tl.claimed-tl.instant,
		"callsEndedFirstMs", cf, "callsEndedMedianMs", cm, "callsEndedLastMs", cl,
		"recordedFirstMs", rf, "recordedMedianMs", rm, "recordedLastMs", rl, "deliveredMs", delivered-tl.instant)
}

// claimedChunk is a chunk of a prepared hand-off claimed ahead.
type claimedChunk struct {
	idx []int
	c   *Claimed
}

// span is the indexes [start, end).
func span(start, end int) []int {
	idx := make([]int, 0, end-start)
	for i := start; i < end; i++ {
		idx = append(idx, i)
	}
	return idx
}

// baseOf is the context dispatches run on: Base, or ctx without its
// cancellation.
func (s *LaneSink) baseOf(ctx context.Context) context.Context {
	if s.base != nil {
		return s.base
	}
	return context.WithoutCancel(ctx)
}

// deliver dispatches tasks on lane, with their reads done already when
// batch is not nil, and the whole hand-off claimed already when claimed is
// not nil; tl, when not nil, notes the chunks claimed ahead and is logged.
func (s *LaneSink) deliver(ctx context.Context, lane fire.Lane, tasks []fire.DispatchTask, batch *Batch, claimed []claimedChunk, tl *timeline) error {
	l, ok := s.lanes[lane]
	if !ok {
		return fmt.Errorf("lane sink: lane %q is not served in process", lane)
	}
	base := s.baseOf(ctx)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		back []driver.Outgoing[fire.DispatchTask]
	)
	clk := s.disp.cfg.Clock
	requeue := func(t fire.DispatchTask, after time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		back = append(back, driver.Outgoing[fire.DispatchTask]{Msg: t, VisibleAt: clk.Now().Add(after).UnixMilli()})
	}
	if batch == nil {
		batch = s.disp.Load(base, tasks)
		batch.noLogs = true
	}
	start := 0
	if claimed != nil {
		// Claimed ahead: only the calls and the records remain, bounded by
		// the lane's call slots, not its chunk slots.
		for _, cc := range claimed {
			wg.Go(func() {
				outs, errs := cc.c.Run(base, l.calls)
				tl.chunk(cc.c.called, clock.Millis(clk))
				s.settleAll(tasks, cc.idx, outs, errs, requeue)
			})
			start += len(cc.idx)
		}
	}
	ahead := start
	spill := time.NewTimer(s.spill)
	defer spill.Stop()
	budget := time.NewTimer(s.budget)
	defer budget.Stop()
	spilling := false
	for start < len(tasks) {
		end := min(start+s.chunk, len(tasks))
		if !spilling {
			select {
			case l.chunks <- struct{}{}:
				idx := span(start, end)
				wg.Go(func() {
					defer func() { <-l.chunks }()
					outs, errs := batch.Run(base, idx, l.calls)
					s.settleAll(tasks, idx, outs, errs, requeue)
				})
				spill.Reset(s.spill)
				start = end
				continue
			case <-spill.C:
				spilling = true
			case <-budget.C:
				spilling = true
			case <-ctx.Done():
				wg.Wait()
				return fmt.Errorf("lane sink %s: %d of %d tasks not started: %w", lane, len(tasks)-start, len(tasks), ctx.Err())
			}
			s.log.WarnContext(ctx, "dispatch lane saturated; queueing", "lane", lane, "tasks", len(tasks)-start)
		}
		for i := start; i < end; i++ {
			requeue(tasks[i], 0)
		}
		start = end
	}
	wg.Wait()
	tl.log(ctx, s.log, lane, len(tasks), ahead, clock.Millis(clk))
	if len(back) == 0 {
		return nil
	}
	if err := s.queues.Dispatch(lane).Send(context.WithoutCancel(ctx), back); err != nil {
		return fmt.Errorf("lane sink %s: queue %d tasks: %w", lane, len(back), err)
	}
	return nil
}

// settleAll settles tasks[idx[k]] with outs[k] and errs[k]: the results of
// one chunk's Run.
func (s *LaneSink) settleAll(tasks []fire.DispatchTask, idx []int, outs []Outcome, errs []error, requeue func(fire.DispatchTask, time.Duration)) {
	for k, i := range idx {
		s.settle(tasks[i], outs[k], errs[k], requeue)
	}
}

// settle hands a dispatched task to requeue when Dispose says to try
// again later; malformed tasks and tasks that no longer apply end here.
func (s *LaneSink) settle(t fire.DispatchTask, out Outcome, err error, requeue func(fire.DispatchTask, time.Duration)) {
	if err == nil {
		if out.Dropped {
			s.log.Debug("dispatch dropped", "job", t.Occurrence.JobID, "reason", out.Reason)
		}
		return
	}
	d := s.disp.Dispose(err, 1)
	if d.Ack {
		s.log.Warn("dispatch: task dropped", "job", t.Occurrence.JobID, "err", err)
		return
	}
	s.log.Warn("dispatch: task queued for retry", "job", t.Occurrence.JobID, "retryAfter", d.RetryAfter, "err", err)
	requeue(t, d.RetryAfter)
}
