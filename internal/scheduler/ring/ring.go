// Package ring fires the occurrences the scan pushed: it takes a bucket (one
// shard, one second) off the ring queue, waits to each occurrence's exact
// millisecond, drops occurrences whose job was stopped, deleted or edited
// since they were pushed, and hands the rest to a dispatch lane.
//
//	ring queue ──▶ Fire(bucket): wait to t ──▶ job still there and
//	                                           revision unchanged? ──yes──▶ dispatch lane (fast|slow)
//	                                                     │no
//	                                                     ▼
//	                                                  dropped
//
// The hand-off is a Sink. Local mode hands both lanes straight to
// in-process dispatch workers (dispatch.LaneSink). The AWS ring function
// does the same for the fast lane, so a bucket's instant is one dispatch
// batch, and sends the slow lane to its queue (QueueSink), consumed by the
// dispatch function (Split); in both, what cannot be dispatched at once
// (in flight elsewhere, a store error, a saturated lane) goes to the
// lane's durable queue. Each instant's hand-off runs while the ring waits
// for the next instant, so a slow hand-off never makes a later occurrence
// late. A sink that can prepare (Preparer) gets each instant's hand-off as
// soon as the bucket's jobs are checked, in instant order, in the
// background, with the jobs the ring read:
//
//	receive ──▶ JobGetMany, revision check ──▶ (background) Prepare instant 1, 2, … ──▶ ready
//	                                        └─▶ sleep to instant 1 ──▶ wait ready ──▶ deliver ──▶ sleep to instant 2 …
//
// A bucket is acknowledged only after every hand-off of it has returned
// (tasks queued, or dispatched, as the sink defines it); if the process
// dies first, the bucket comes back after its visibility timeout and is
// handed off again, and dispatch drops the repeats by occurrence id.
// While its hand-offs run, Serve keeps it hidden (keepHidden), so a live
// receiver's slow hand-off is not received and claimed a second time:
//
//	received ──▶ firing ──every visibility/2──▶ hidden for another visibility
//	                │ done                     receiver dies ──▶ back after ≤ visibility
//	                ▼
//	             acked
//
// A bucket received more than the misfire threshold after an occurrence's
// fire time (the process was stopped, or the ring fell that far behind)
// is a misfire, decided by the job's misfire strategy (Late): DO_NOTHING
// drops the occurrence and counts it; FIRE_ONCE_NOW fires the job once, as
// a MISFIRE trigger, however many of its occurrences were missed and
// however many processes receive them: they all become the one occurrence
// of their misfire episode (misfire.go), which dispatch then triggers once.
// A bucket that comes back unacknowledged (its receiver died holding it)
// was hidden by the queue for up to its visibility timeout: Serve fires it
// with the threshold widened by that hold (FireAgain), so a killed node's
// pre-read fires are fired by whichever node receives them next.
package ring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Sink takes the still-valid fires of one instant for one dispatch lane.
// Deliver returns nil only once it is done with every task: the ring then
// counts them fired and, when the whole bucket is done, acknowledges it. An
// error leaves the bucket unacknowledged, so it comes back and every task
// is delivered again (dispatch drops the repeats by occurrence id).
// Deliver is called concurrently, for different instants and lanes.
type Sink interface {
	Deliver(ctx context.Context, lane fire.Lane, tasks []fire.DispatchTask) error
}

// QueueSink delivers tasks by sending them to their durable dispatch lane
// queue: the hand-off on AWS, where dispatch is another function.
type QueueSink struct {
	Queues driver.Queues
}

// Deliver sends tasks to lane's queue, visible at once. The tasks leave
// their ring message's name behind (DispatchTask.Delivery): the queue's
// message, not the ring's, carries them now, and a ring message delivered
// again would send a second task of the same name, which could then take
// over a claim whose call was made.
func (s QueueSink) Deliver(ctx context.Context, lane fire.Lane, tasks []fire.DispatchTask) error {
	out := make([]driver.Outgoing[fire.DispatchTask], len(tasks))
	for i, t := range tasks {
		t.Delivery = ""
		out[i] = driver.Outgoing[fire.DispatchTask]{Msg: t}
	}
	if err := s.Queues.Dispatch(lane).Send(ctx, out); err != nil {
		return fmt.Errorf("dispatch send %s: %w", lane, err)
	}
	return nil
}

var _ Sink = QueueSink{}

// Split hands each lane's tasks to that lane's own Sink: the AWS ring
// function dispatches the fast lane in process (dispatch.LaneSink) and
// sends the slow lane to its queue (QueueSink), where the dispatch
// function consumes it with its own concurrency. A lane without a Sink is
// an error, so the bucket comes back rather than losing its fires.
type Split map[fire.Lane]Sink

// Deliver passes tasks to lane's Sink.
func (s Split) Deliver(ctx context.Context, lane fire.Lane, tasks []fire.DispatchTask) error {
	sink, err := s.of(lane)
	if err != nil {
		return err
	}
	return sink.Deliver(ctx, lane, tasks)
}

// Prepare prepares tasks with lane's Sink when it is a Preparer.
func (s Split) Prepare(ctx context.Context, lane fire.Lane, tasks []fire.DispatchTask, jobs map[int64]*xjob.Job) func(context.Context) error {
	sink, err := s.of(lane)
	if err != nil {
		return func(context.Context) error { return err }
	}
	return prepare(ctx, sink, lane, tasks, jobs)
}

// of is lane's Sink, or an error when it has none.
func (s Split) of(lane fire.Lane) (Sink, error) {
	if sink := s[lane]; sink != nil {
		return sink, nil
	}
	return nil, fmt.Errorf("ring: no sink for lane %s", lane)
}

var (
	_ Sink     = Split{}
	_ Preparer = Split{}
)

// Preparer is a Sink that can do a hand-off's work before its instant.
// The ring has a bucket ahead of its second (the scan makes it visible
// RingLead early), so it prepares each instant's hand-offs, in instant
// order, as soon as it has checked the bucket's jobs: the sink's reads
// (and, if it claims ahead, its claims) leave the path from the instant to
// the executor. jobs are the bucket's jobs as the ring just read them,
// keyed by id (read only), so the sink need not read them again. Prepare
// returns the hand-off; calling it delivers the tasks as Sink.Deliver
// would, with the same error contract.
type Preparer interface {
	Sink
	Prepare(ctx context.Context, lane fire.Lane, tasks []fire.DispatchTask, jobs map[int64]*xjob.Job) func(context.Context) error
}

// prepare returns sink's prepared hand-off of tasks, or, for a Sink that
// cannot prepare, one that delivers them when called.
func prepare(ctx context.Context, sink Sink, lane fire.Lane, tasks []fire.DispatchTask, jobs map[int64]*xjob.Job) func(context.Context) error {
	if p, ok := sink.(Preparer); ok {
		return p.Prepare(ctx, lane, tasks, jobs)
	}
	return func(ctx context.Context) error { return sink.Deliver(ctx, lane, tasks) }
}

// Config wires a Ring: Jobs and Queues are required; Clock defaults to
// the wall clock and Logger to slog.Default().
type Config struct {
	Jobs driver.JobStore
	// Queues holds the ring queue Serve polls, and the lane queues of the
	// default Sink.
	Queues driver.Queues
	// Sink receives the fires (default QueueSink{Queues}).
	Sink   Sink
	Clock  clock.Clock
	Logger *slog.Logger
	// MisfireThreshold is how late an occurrence may be handed off and
	// still fire as scheduled (default 5 s, xxl-job's).
	MisfireThreshold time.Duration
	// Metrics counts misfires (optional).
	Metrics *metric.Metrics
	// Leases keeps FIRE_ONCE_NOW's misfire episodes (misfire.go), so that
	// processes receiving a job's late occurrences at once fire it once;
	// without it, once per process.
	Leases driver.LeaseStore
}

// Ring fires ring buckets.
type Ring struct {
	jobs      driver.JobStore
	queues    driver.Queues
	sink      Sink
	clock     clock.Clock
	log       *slog.Logger
	threshold time.Duration
	metrics   *metric.Metrics
	leases    driver.LeaseStore

	// missed caches the latest misfire episode of each FIRE_ONCE_NOW job.
	mu     sync.Mutex
	missed map[int64]episode
}

// LateAction is what the ring does with an occurrence (Late).
type LateAction int

// Late actions.
const (
	// FireAsScheduled: on time, or late within the misfire threshold.
	FireAsScheduled LateAction = iota
	// SkipMisfire: DO_NOTHING; dropped and counted as misfired.
	SkipMisfire
	// FireMisfire: FIRE_ONCE_NOW; fired once as a MISFIRE trigger.
	FireMisfire
)

// Late decides an occurrence handed off late after its fire time, as
// xxl-job's scheduler decides a fire it finds past: beyond threshold it is
// a misfire, handled by the job's strategy.
func Late(strategy xjob.MisfireStrategy, late, threshold time.Duration) LateAction {
	switch {
	case late <= threshold:
		return FireAsScheduled
	case strategy == xjob.MisfireFireOnceNow:
		return FireMisfire
	default:
		return SkipMisfire
	}
}

// New builds a Ring.
func New(d Config) (*Ring, error) {
	if d.Jobs == nil || d.Queues == nil {
		return nil, errors.New("ring: Jobs and Queues are required")
	}
	d.Clock, d.Logger = fallback.Clock(d.Clock), fallback.Logger(d.Logger)
	if d.Sink == nil {
		d.Sink = QueueSink{Queues: d.Queues}
	}
	if d.MisfireThreshold <= 0 {
		d.MisfireThreshold = 5 * time.Second
	}
	return &Ring{jobs: d.Jobs, queues: d.Queues, sink: d.Sink, clock: d.Clock, log: d.Logger,
		threshold: d.MisfireThreshold, metrics: d.Metrics, leases: d.Leases}, nil
}

// Stats counts what Fire did with a bucket.
type Stats struct {
	Fired   int
	Dropped int
	// Misfired counts occurrences handed off beyond the misfire
	// threshold: skipped (DO_NOTHING) or folded into one MISFIRE fire.
	Misfired int
	// MaxLate is the largest delay between an occurrence's fire time and
	// its hand-off to a lane.
	MaxLate time.Duration
}

// Fire waits for each occurrence of b in fire-time order and hands the
// still-valid ones to the sink, per lane. The hand-off of one instant runs
// while Fire waits for the next; Fire returns once every hand-off has
// returned, with their errors joined.
//
// Each instant's hand-offs are prepared from now on, a second or so ahead
// (Preparer), one after the other in instant order (the first instant's
// first, and a sink's claims of one page do not race each other), and
// delivered at the instant, once prepared.
func (r *Ring) Fire(ctx context.Context, b fire.RingBucket) (Stats, error) {
	return r.fire(ctx, b, r.threshold)
}

// FireAgain fires b as Fire does, for a bucket that was received before
// and not acknowledged: its receiver died (a killed node, a crashed
// process) or failed, and the queue hid the bucket from everyone else for
// up to held, its visibility timeout. Those fires were pre-read and
// pushed; their lateness is the hold the queue imposed, not a scheduler
// that was down, so FireAgain widens the misfire threshold by held: an
// occurrence up to threshold + held late fires as scheduled (a killed
// node's fires are fired by the node that takes them over, not passed
// over), and only beyond that is it a misfire (every node was down).
func (r *Ring) FireAgain(ctx context.Context, b fire.RingBucket, held time.Duration) (Stats, error) {
	return r.fire(ctx, b, r.threshold+max(held, 0))
}

// fire is Fire with the misfire threshold this bucket gets.
func (r *Ring) fire(ctx context.Context, b fire.RingBucket, threshold time.Duration) (Stats, error) {
	var st Stats
	if len(b.Items) == 0 {
		return st, nil
	}
	byID, err := r.loadJobs(ctx, b.Items)
	if err != nil {
		return st, fmt.Errorf("ring bucket %d/%d: load jobs: %w", b.Shard, b.Second, err)
	}
	received := clock.Millis(r.clock)
	keys, err := r.misfireKeys(ctx, b.Items, byID, received, threshold)
	if err != nil {
		return st, fmt.Errorf("ring bucket %d/%d: %w", b.Shard, b.Second, err)
	}
	instants, dropped, misfired, skipped := r.planInstants(b.Items, byID, keys, received, threshold)
	st.Dropped, st.Misfired = dropped, misfired
	// One line per fire a DO_NOTHING job drops, as the scan writes for
	// the fires it passes over: so that a dropped fire can be told from a
	// lost one (the cluster bench reads both, and so can an operator).
	for _, it := range skipped {
		r.log.DebugContext(ctx, "ring: fires passed over", "job", it.JobID, "misfired", true,
			"from", it.FireTime, "to", it.FireTime, "late", received-it.FireTime)
	}
	prepared, quit := r.prepareAll(ctx, instants, byID)
	defer func() { <-prepared }()
	if len(b.Items) >= burstLog && len(instants) > 0 {
		go r.logPrepared(ctx, b, instants[0].at, received, prepared)
	}
	fired, maxLate, err := r.deliverAll(ctx, b, instants, quit)
	st.Fired, st.MaxLate = fired, maxLate
	if len(b.Items) >= burstLog && len(instants) > 0 {
		r.log.DebugContext(ctx, "ring burst delivered", "second", b.Second, "fires", len(b.Items), "fired", fired,
			"afterFirstMs", clock.Millis(r.clock)-instants[0].at)
	}
	return st, err
}

// burstLog is the size of a bucket whose preparation and delivery the
// ring logs (at debug level): the timeline of a burst, when its
// preparation ended and when its last hand-off returned, relative to its
// first instant.
const burstLog = 1000

// logPrepared logs, once prepared is closed, how far ahead of first the
// bucket received at received (Unix ms) was prepared.
func (r *Ring) logPrepared(ctx context.Context, b fire.RingBucket, first, received int64, prepared <-chan struct{}) {
	<-prepared
	r.log.DebugContext(ctx, "ring burst prepared", "second", b.Second, "fires", len(b.Items),
		"receivedAheadMs", first-received, "preparedAheadMs", first-clock.Millis(r.clock))
}

// handOff is one lane's share of one instant: the tasks the sink gets,
// and the run that delivers them, set (and ready closed) once prepared.
type handOff struct {
	lane  fire.Lane
	tasks []fire.DispatchTask
	ready chan struct{} // closed once run is set
	run   func(context.Context) error
}

// instant is the hand-offs of one fire time, fast lane first.
type instant struct {
	at    int64
	hands []*handOff
}

// loadJobs reads the jobs of items, each once, keyed by id.
func (r *Ring) loadJobs(ctx context.Context, items []fire.RingItem) (map[int64]*xjob.Job, error) {
	ids := make([]int64, 0, len(items))
	for _, it := range items {
		ids = append(ids, it.JobID)
	}
	slices.Sort(ids)
	jobs, err := r.jobs.JobGetMany(ctx, slices.Compact(ids))
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*xjob.Job, len(jobs))
	for i := range jobs {
		byID[jobs[i].ID] = &jobs[i]
	}
	return byID, nil
}

// planInstants groups items by fire time, in fire-time order, and each
// instant's still-valid occurrences (fire.Superseded) by lane; it returns
// the instants, how many occurrences it dropped and how many were
// misfires (Late), a FIRE_ONCE_NOW one becoming the MISFIRE occurrence of
// its episode's key (misfireKeys), and the items a DO_NOTHING misfire
// skipped. received is when the bucket arrived (Unix ms): a task counts
// as enqueued at its instant, or then if later. threshold is the misfire
// threshold (FireAgain widens it).
func (r *Ring) planInstants(bucket []fire.RingItem, byID map[int64]*xjob.Job, keys map[misfire]int64, received int64, threshold time.Duration) ([]instant, int, int, []fire.RingItem) {
	items := slices.Clone(bucket)
	slices.SortStableFunc(items, func(a, b fire.RingItem) int { return int(a.FireTime - b.FireTime) })
	var (
		instants []instant
		dropped  int
		misfired int
		skipped  []fire.RingItem // DO_NOTHING misfires
	)
	for start := 0; start < len(items); {
		at := items[start].FireTime
		end := start
		for end < len(items) && items[end].FireTime == at {
			end++
		}
		// The instant's tasks share one array sized for all its items: the
		// fast lane's fill it from the front, the slow lane's from the back
		// (put back in order below). Appended to a slice a lane, they were
		// a third of the ring's allocations: 3.6 times their size in the
		// arrays outgrown on the way to 10,000.
		buf := make([]fire.DispatchTask, end-start)
		nFast, nSlow := 0, 0
		laneTasks := func(lane fire.Lane) []fire.DispatchTask {
			if lane == fire.LaneFast {
				return buf[:nFast]
			}
			return buf[len(buf)-nSlow:]
		}
		for _, it := range items[start:end] {
			job := byID[it.JobID]
			occ := fire.Occurrence{JobID: it.JobID, Type: xjob.TriggerCron, FireTime: it.FireTime}
			if fire.Superseded(job, occ, it.Revision) != "" {
				dropped++
				continue
			}
			switch Late(job.MisfireStrategy, time.Duration(received-at)*time.Millisecond, threshold) {
			case SkipMisfire:
				misfired++
				skipped = append(skipped, it)
				r.metrics.Misfire(metric.StrategyDoNothing, 1)
				continue
			case FireMisfire:
				misfired++
				r.metrics.Misfire(metric.StrategyFireOnceNow, 1)
				occ.Type, occ.FireTime = xjob.TriggerMisfire, keys[misfire{it.JobID, it.FireTime}]
				if slices.ContainsFunc(laneTasks(fire.LaneOf(job, at)), func(t fire.DispatchTask) bool { return t.Occurrence == occ }) {
					continue
				}
			}
			task := fire.DispatchTask{
				Occurrence: occ,
				Revision:   it.Revision,
				EnqueuedAt: max(at, received),
				Delivery:   it.Delivery,
			}
			if fire.LaneOf(job, at) == fire.LaneFast {
				buf[nFast] = task
				nFast++
			} else {
				nSlow++
				buf[len(buf)-nSlow] = task
			}
		}
		slow := buf[len(buf)-nSlow:]
		slices.Reverse(slow)
		in := instant{at: at}
		// The fast lane's slice is capped, so that a sink appending to its
		// tasks cannot write into the slow lane's.
		if nFast > 0 {
			in.hands = append(in.hands, &handOff{lane: fire.LaneFast, tasks: buf[:nFast:nFast], ready: make(chan struct{})})
		}
		if nSlow > 0 {
			in.hands = append(in.hands, &handOff{lane: fire.LaneSlow, tasks: slow, ready: make(chan struct{})})
		}
		instants = append(instants, in)
		start = end
	}
	return instants, dropped, misfired, skipped
}

// prepareAll prepares the hand-offs of instants in order, in the
// background, until quit is closed: a hand-off not prepared by then gets a
// run that fails. prepared is closed once every hand-off is ready.
func (r *Ring) prepareAll(ctx context.Context, instants []instant, byID map[int64]*xjob.Job) (prepared, quit chan struct{}) {
	prepared, quit = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(prepared)
		for _, in := range instants {
			for _, h := range in.hands {
				select {
				case <-quit:
					// Fire stopped waiting: prepare (and claim) no more.
					h.run = func(context.Context) error { return errors.New("ring stopped before the hand-off was prepared") }
				default:
					h.run = prepare(ctx, r.sink, h.lane, h.tasks, byID)
				}
				close(h.ready)
			}
		}
	}()
	return prepared, quit
}

// deliverAll sleeps to each instant and starts its hand-offs, each once
// prepared; it returns once every started hand-off has returned, with the
// occurrences they handed off, the largest delay between an instant and
// its hand-offs' start, and their errors joined. A sleep cut short (ctx
// ended) closes quit and starts no later instant.
func (r *Ring) deliverAll(ctx context.Context, b fire.RingBucket, instants []instant, quit chan struct{}) (int, time.Duration, error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex // guards fired and errs
		errs    []error
		fired   int
		maxLate time.Duration
	)
	deliver := func(h *handOff) {
		defer wg.Done()
		<-h.ready
		err := h.run(ctx)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("ring bucket %d/%d: %s: %w", b.Shard, b.Second, h.lane, err))
			return
		}
		fired += len(h.tasks)
	}
	var sleepErr error
	for _, in := range instants {
		if err := r.clock.SleepUntil(ctx, time.UnixMilli(in.at)); err != nil {
			sleepErr = fmt.Errorf("ring bucket %d/%d: %w", b.Shard, b.Second, err)
			close(quit)
			break
		}
		for _, h := range in.hands {
			wg.Add(1)
			go deliver(h)
		}
		if late := time.Duration(clock.Millis(r.clock)-in.at) * time.Millisecond; late > maxLate {
			maxLate = late
		}
	}
	wg.Wait()
	return fired, maxLate, errors.Join(append(errs, sleepErr)...)
}

// ServeOptions tune Serve. Zero values take the documented defaults.
type ServeOptions struct {
	// Workers is how many buckets fire at once (default 8): buckets of
	// different shards due in the same second must not wait on each other.
	Workers int
	// Visibility hides a received bucket while it fires (default 30 s).
	// A bucket still firing after half of it is hidden for another
	// Visibility, and so on until it is acknowledged (keepHidden), so
	// only a receiver that died (or stopped) gives its buckets back.
	Visibility time.Duration
	// Wait is the receive long-poll (default 1 s).
	Wait time.Duration
	// Batch is how many buckets one receive takes (default 100). Buckets
	// of the same second are fired as one (see mergeBySecond).
	Batch int
}

// merged is the buckets of one second received together, fired as one.
type merged struct {
	bucket fire.RingBucket
	tokens []string
	// again: one of the buckets was received before (FireAgain).
	again bool
}

// Merged is the buckets of one second received together, fired as one,
// with the records (deliveries, SQS messages) they came in.
type Merged[R any] struct {
	Bucket  fire.RingBucket
	Records []R
}

// MergeBySecond joins the received buckets of each second into one, in
// the order their seconds first appear; bucket gives a record's bucket.
// The scan sends one bucket per shard and second, but the admin's push
// sends one per job it creates or starts (one per bulk request): fired
// apart, 10,000 jobs created at once would cost 10,000 hand-offs, job
// reads and claims per second instead of a few. Merged, a second's
// occurrences share one hand-off (one dispatch batch, chunked), and its
// records are acknowledged (or retried) together once it has fired. Serve
// and the AWS ring function both merge this way.
//
// Each second's items are counted first and copied into one array of that
// size: appended bucket by bucket, a second of 10,000 items outgrew its
// array a dozen times.
func MergeBySecond[R any](recs []R, bucket func(R) fire.RingBucket) []Merged[R] {
	var out []Merged[R]
	at := map[int64]int{}
	size := map[int64]int{}
	for _, r := range recs {
		size[bucket(r).Second] += len(bucket(r).Items)
	}
	for _, r := range recs {
		b := bucket(r)
		i, ok := at[b.Second]
		if !ok {
			i = len(out)
			at[b.Second] = i
			out = append(out, Merged[R]{Bucket: fire.RingBucket{Shard: b.Shard, Second: b.Second,
				Items: make([]fire.RingItem, 0, size[b.Second])}})
		}
		m := &out[i]
		m.Bucket.Items = append(m.Bucket.Items, b.Items...)
		m.Records = append(m.Records, r)
	}
	return out
}

// mergeBySecond is MergeBySecond of queue deliveries, keeping their tokens.
func mergeBySecond(ds []driver.Delivery[fire.RingBucket]) []merged {
	var out []merged
	for _, m := range MergeBySecond(ds, func(d driver.Delivery[fire.RingBucket]) fire.RingBucket { return d.Msg }) {
		g := merged{bucket: m.Bucket}
		for _, d := range m.Records {
			g.tokens = append(g.tokens, d.Token)
			g.again = g.again || d.Receives > 1
		}
		out = append(out, g)
	}
	return out
}

// Serve polls the ring queue and fires buckets until ctx ends. It is the
// local-mode poller; on AWS the SQS event source does this.
func (r *Ring) Serve(ctx context.Context, o ServeOptions) error {
	if o.Workers == 0 {
		o.Workers = 8
	}
	if o.Visibility == 0 {
		o.Visibility = 30 * time.Second
	}
	if o.Wait == 0 {
		o.Wait = time.Second
	}
	if o.Batch == 0 {
		o.Batch = 100
	}
	q := r.queues.Ring()
	sem := make(chan struct{}, o.Workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		ds, err := q.Receive(ctx, driver.ReceiveParams{Max: o.Batch, Visibility: o.Visibility, Wait: o.Wait})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.log.ErrorContext(ctx, "ring receive", "err", err)
			_ = r.clock.SleepUntil(ctx, r.clock.Now().Add(time.Second))
			continue
		}
		for _, g := range mergeBySecond(ds) {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				var (
					st  Stats
					err error
				)
				stop := r.keepHidden(ctx, q, g.tokens, o.Visibility)
				if g.again {
					// Held by a receiver that did not finish it, for up
					// to the visibility timeout.
					st, err = r.FireAgain(ctx, g.bucket, o.Visibility)
				} else {
					st, err = r.Fire(ctx, g.bucket)
				}
				stop()
				if err != nil {
					if ctx.Err() == nil {
						r.log.ErrorContext(ctx, "ring fire", "err", err, "buckets", len(g.tokens))
					}
					return // not acked: the buckets come back after their visibility timeout
				}
				if err := q.Ack(context.WithoutCancel(ctx), g.tokens); err != nil {
					r.log.ErrorContext(ctx, "ring ack", "err", err)
				}
				if st.Dropped > 0 || st.MaxLate > 100*time.Millisecond {
					r.log.DebugContext(ctx, "ring fired", "second", g.bucket.Second, "buckets", len(g.tokens), "fired", st.Fired,
						"dropped", st.Dropped, "maxLate", st.MaxLate)
				}
			}()
		}
	}
	return nil
}

// Extender is a ring queue that can keep a delivery hidden for longer
// while its receiver still fires it, without handing it back: local
// mode's gate, which must go on counting the delivery in flight. Any
// other queue is extended by Retry with the visibility as its delay,
// which moves the delivery's hidden-until time and keeps its token.
type Extender interface {
	Extend(ctx context.Context, token string, visibility time.Duration) error
}

// keepHidden keeps the deliveries tokens hidden while their bucket fires:
// every half visibility it hides them for another visibility, until stop
// is called (stop returns once no extension is under way, so that none
// can follow the acknowledgement). A hand-off that outlasts the
// visibility (a ring far behind, a slow executor) would otherwise bring
// its bucket back to be received, read and claimed again while the first
// receiver still fires it: work repeated when there is least CPU for it.
// A receiver that dies stops extending, so its buckets come back within
// a visibility, as before; but within a visibility of its last
// extension, so a bucket whose hand-off had run for more than half a
// visibility comes back later than FireAgain's widening (one visibility)
// allows for, and its fires not yet dispatched are decided as misfires
// by their jobs' strategies rather than fired late: they were that late
// already on the receiver that died.
func (r *Ring) keepHidden(ctx context.Context, q driver.Queue[fire.RingBucket], tokens []string, visibility time.Duration) (stop func()) {
	kctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	ext, _ := q.(Extender)
	go func() {
		defer close(done)
		for {
			if r.clock.SleepUntil(kctx, r.clock.Now().Add(visibility/2)) != nil {
				return
			}
			for _, tok := range tokens {
				var err error
				if ext != nil {
					err = ext.Extend(kctx, tok, visibility)
				} else {
					err = q.Retry(kctx, tok, visibility)
				}
				if err != nil && kctx.Err() == nil {
					// Acknowledged or redelivered meanwhile, or a store
					// error: at worst the bucket comes back, as it did
					// without the extension.
					r.log.WarnContext(ctx, "ring: keep bucket hidden", "err", err)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
