package local

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/dispatch"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/ring"
)

// spillAfter is how long a ring hand-off waits for its lane to take the
// next chunk before it sends the rest of its tasks to the durable lane
// queue: a saturated lane must not hold ring buckets past their
// visibility. spillBudget bounds a whole hand-off the same way.
const (
	spillAfter  = time.Second
	spillBudget = 10 * time.Second
)

// sinkChunk is how many tasks one chunk of a hand-off carries: one claim
// (LogCreateMany) and one record (LogTriggeredMany) per chunk. Large
// enough that a 10,000-fire second is a few dozen write transactions,
// small enough that the first executor calls start within milliseconds.
// sinkChunks is how many chunks of one lane may be in flight at once
// (claimed, not yet recorded), so the claim of one overlaps the executor
// calls of another.
const (
	sinkChunk  = 256
	sinkChunks = 4
)

// laneSink is the ring's hand-off in local mode: each lane runs the ring's
// tasks directly, in chunks, which saves the three queue writes per
// trigger (send, claim, ack) of a round trip through the SQLite lane queue
// and makes a chunk, not a trigger, the unit of durable work.
//
//	ring ──Deliver(lane, tasks)──▶ Load (shared reads) ──▶ chunk slot free? ──yes──▶ Batch.Run(chunk):
//	                                                       │no, for spillAfter         claim all, call executors
//	                                                       ▼                           (lane's call slots), record all
//	                                       durable lane queue ◀──────────────────── ErrInFlight, store error
//	                                       (the lane consumers: retries, child and manual tasks)   (after Dispose's delay)
//
// The tasks of one Deliver are one batch (dispatch.Dispatcher.Load): their
// jobs, groups and executor addresses are read once for all of them.
// Executor calls of every chunk of a lane share the lane's call slots
// (--fast-workers / --slow-workers).
//
// Deliver returns once every task is dispatched or durably queued, so the
// ring acknowledges a bucket only after its fires were triggered. A crash
// before that brings the bucket back and dispatch drops the repeats by
// occurrence id (and takes over the claims of the dead process once they
// expire): no fire is lost, none runs twice.
type laneSink struct {
	disp *dispatch.Dispatcher
	// base is the context dispatches run on: the lanes' context, which
	// shutdown cancels after the ring's, so stopping the ring does not cut
	// a dispatch short.
	base   context.Context
	queues driver.Queues // the durable lane queues
	clk    clock.Clock
	log    *slog.Logger
	lanes  map[xjob.Lane]*sinkLane
	spill  time.Duration
	budget time.Duration
	chunk  int
}

// sinkLane is one lane's capacity: chunks in flight and executor calls.
type sinkLane struct {
	chunks chan struct{}
	calls  chan struct{}
}

var _ ring.Sink = (*laneSink)(nil)

func newLaneSink(base context.Context, disp *dispatch.Dispatcher, queues driver.Queues, clk clock.Clock, log *slog.Logger, fast, slow int) *laneSink {
	lane := func(calls int) *sinkLane {
		return &sinkLane{chunks: make(chan struct{}, sinkChunks), calls: make(chan struct{}, max(calls, 1))}
	}
	return &laneSink{disp: disp, base: base, queues: queues, clk: clk, log: log, spill: spillAfter, budget: spillBudget,
		chunk: sinkChunk, lanes: map[xjob.Lane]*sinkLane{xjob.LaneFast: lane(fast), xjob.LaneSlow: lane(slow)}}
}

// Deliver dispatches tasks as one batch on lane, chunk by chunk, and waits
// for them. Tasks of chunks it could not start in time (no chunk finished
// for the spill time, or the hand-off's budget spent), and tasks whose
// dispatch must be retried, go to the durable lane queue; an error means
// that send failed (or ctx ended before every task was started), and the
// ring delivers the bucket again.
func (s *laneSink) Deliver(ctx context.Context, lane xjob.Lane, tasks []xjob.DispatchTask) error {
	l, ok := s.lanes[lane]
	if !ok {
		return fmt.Errorf("local sink: unknown lane %q", lane)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		back []driver.Outgoing[xjob.DispatchTask]
	)
	requeue := func(t xjob.DispatchTask, after time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		back = append(back, driver.Outgoing[xjob.DispatchTask]{Msg: t, VisibleAt: s.clk.Now().Add(after).UnixMilli()})
	}
	batch := s.disp.Load(s.base, tasks)
	spill := time.NewTimer(s.spill)
	defer spill.Stop()
	budget := time.NewTimer(s.budget)
	defer budget.Stop()
	spilling := false
	for start := 0; start < len(tasks); {
		end := min(start+s.chunk, len(tasks))
		if !spilling {
			select {
			case l.chunks <- struct{}{}:
				idx := make([]int, 0, end-start)
				for i := start; i < end; i++ {
					idx = append(idx, i)
				}
				wg.Go(func() {
					defer func() { <-l.chunks }()
					outs, errs := batch.Run(s.base, idx, l.calls)
					for k, i := range idx {
						s.settle(tasks[i], outs[k], errs[k], requeue)
					}
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
				return fmt.Errorf("local sink %s: %d of %d tasks not started: %w", lane, len(tasks)-start, len(tasks), ctx.Err())
			}
			s.log.WarnContext(ctx, "dispatch lane saturated; queueing", "lane", lane, "tasks", len(tasks)-start)
		}
		for i := start; i < end; i++ {
			requeue(tasks[i], 0)
		}
		start = end
	}
	wg.Wait()
	if len(back) == 0 {
		return nil
	}
	if err := s.queues.Dispatch(lane).Send(context.WithoutCancel(ctx), back); err != nil {
		return fmt.Errorf("local sink %s: queue %d tasks: %w", lane, len(back), err)
	}
	return nil
}

// settle hands a dispatched task to requeue when Dispose says to try
// again later; malformed tasks and tasks that no longer apply end here.
func (s *laneSink) settle(t xjob.DispatchTask, out dispatch.Outcome, err error, requeue func(xjob.DispatchTask, time.Duration)) {
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
