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

// spillAfter is how long a ring hand-off waits for a free dispatch worker
// before it sends the rest of its tasks to the durable lane queue: a
// saturated lane must not hold ring buckets past their visibility.
const spillAfter = time.Second

// sinkWorkers caps each lane's direct dispatch pool. Every dispatch
// writes to the one SQLite writer twice; more concurrent dispatches than
// this only queue on that writer, ahead of the scan's writes, and make the
// scan tick late. Executors slower than the pool can absorb overflow to
// the lane queue (spillAfter), whose consumers have the full
// --fast-workers/--slow-workers.
const sinkWorkers = 16

// laneSink is the ring's hand-off in local mode: the fast and slow lanes
// are bounded in-process worker pools that the ring feeds directly, which
// saves the three queue writes per trigger (send, claim, ack) of a round
// trip through the SQLite lane queue.
//
//	ring ──Deliver(lane, tasks)──▶ Load (shared reads) ──▶ free worker of lane? ──yes──▶ Trigger
//	                                                       │no, for spillAfter           │ErrInFlight, store error
//	                                                       ▼                             ▼
//	                                       durable lane queue ◀───────────────────────── (after Dispose's delay)
//	                                       (the lane consumers: retries, child and manual tasks)
//
// The tasks of one Deliver are one batch (dispatch.Dispatcher.Load): their
// jobs, groups and executor addresses are read once for all of them, and
// each task is then triggered when a worker of the lane is free, exactly
// as DispatchMany would but on the lane's pool.
//
// Deliver returns once every task is dispatched or durably queued, so the
// ring acknowledges a bucket only after its fires were triggered. A crash
// before that brings the bucket back and dispatch drops the repeats by
// occurrence id: no fire is lost, none runs twice.
type laneSink struct {
	disp *dispatch.Dispatcher
	// base is the context dispatches run on: the lanes' context, which
	// shutdown cancels after the ring's, so stopping the ring does not cut
	// a dispatch short.
	base   context.Context
	queues driver.Queues // the durable lane queues
	clk    clock.Clock
	log    *slog.Logger
	slots  map[xjob.Lane]chan struct{}
	spill  time.Duration
}

var _ ring.Sink = (*laneSink)(nil)

func newLaneSink(base context.Context, disp *dispatch.Dispatcher, queues driver.Queues, clk clock.Clock, log *slog.Logger, fast, slow int) *laneSink {
	return &laneSink{disp: disp, base: base, queues: queues, clk: clk, log: log, spill: spillAfter,
		slots: map[xjob.Lane]chan struct{}{
			xjob.LaneFast: make(chan struct{}, fast),
			xjob.LaneSlow: make(chan struct{}, slow),
		}}
}

// Deliver dispatches tasks as one batch on lane's workers and waits for
// them. Tasks it could not start within the spill time, and tasks whose
// dispatch must be retried, go to the durable lane queue; an error means
// that send failed (or ctx ended before every task was started), and the
// ring delivers the bucket again.
func (s *laneSink) Deliver(ctx context.Context, lane xjob.Lane, tasks []xjob.DispatchTask) error {
	slots, ok := s.slots[lane]
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
	spilling := false
	for i, t := range tasks {
		if !spilling {
			select {
			case slots <- struct{}{}:
				wg.Go(func() {
					defer func() { <-slots }()
					out, err := batch.Trigger(s.base, i)
					s.settle(t, out, err, requeue)
				})
				continue
			case <-spill.C:
				spilling = true
				s.log.DebugContext(ctx, "dispatch lane saturated; queueing", "lane", lane, "tasks", len(tasks)-i)
			case <-ctx.Done():
				wg.Wait()
				return fmt.Errorf("local sink %s: %d of %d tasks not started: %w", lane, len(tasks)-i, len(tasks), ctx.Err())
			}
		}
		requeue(t, 0)
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
