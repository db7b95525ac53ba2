package harness

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/clock"
)

// Defaults of ResultLagOptions.
const (
	// DefaultLagSamples bounds the results sampled per window: each one
	// is polled until it shows, so the polls' load on the stack (the web
	// function and the log table) stays a small share of the workload's.
	DefaultLagSamples = 150
	// DefaultLagInterval is the time between two reads of a sampled log:
	// the figure's resolution.
	DefaultLagInterval = 50 * time.Millisecond
	// DefaultLagDeadline is how long after its callback a sampled result
	// may take to show before it is counted as not visible. The emulated
	// results queue gathers a batch for 1 s (the templates' batching
	// window), so a result still hidden after 15 s is reported, not
	// waited for.
	DefaultLagDeadline = 15 * time.Second
	// DefaultLagReaders is how many reads are in flight at once: as many
	// web function environments as a few console users keep busy, so
	// that the polls do not scale the function out (each new environment
	// a cold start the figure would include).
	DefaultLagReaders = 4
)

// ResultLagOptions tune a ResultLag. Zero values take the defaults.
type ResultLagOptions struct {
	// From and To bound the callbacks sampled: those that returned in
	// [From, To).
	From, To time.Time
	// Every samples every Every-th result offered in the window (≤ 1:
	// each); Limit stops sampling after that many (DefaultLagSamples).
	Every, Limit       int
	Interval, Deadline time.Duration
	Readers            int
	// Clock times the polls (default the wall clock).
	Clock clock.Clock
}

// LagEvery is the sampling step that spreads limit samples over a
// window of expected results (rate a second for window).
func LagEvery(rate float64, window time.Duration, limit int) int {
	if limit <= 0 {
		limit = DefaultLagSamples
	}
	n := rate * window.Seconds()
	return max(1, int((n+float64(limit)-1)/float64(limit)))
}

// ResultLag measures how long a result takes from the moment the
// executor's callback request returned to the moment its log shows it
// through the admin API (the view an operator has: GET /v1/logs/{id}).
// The executor offers every result it called back (Offer); a sample of
// them is read every Interval until its log shows the result or its
// Deadline passes, which is counted (Missed), never dropped. The lag of
// a result is the time of the read that showed it: it includes the
// read's own latency and is at most Interval later than the write.
type ResultLag struct {
	o ResultLagOptions

	mu      sync.Mutex
	offered int // results offered within the window
	pending []lagSample
	lags    []float64 // milliseconds
	missed  int
	errs    int   // reads that failed (retried until the deadline)
	lastErr error // the last of them
	wake    chan struct{}
}

type lagSample struct {
	id       int64
	returned time.Time
}

// NewResultLag returns a ResultLag over o.
func NewResultLag(o ResultLagOptions) *ResultLag {
	if o.Every < 1 {
		o.Every = 1
	}
	if o.Limit <= 0 {
		o.Limit = DefaultLagSamples
	}
	if o.Interval <= 0 {
		o.Interval = DefaultLagInterval
	}
	if o.Deadline <= 0 {
		o.Deadline = DefaultLagDeadline
	}
	if o.Readers <= 0 {
		o.Readers = DefaultLagReaders
	}
	o.Clock = fallback.Clock(o.Clock)
	return &ResultLag{o: o, wake: make(chan struct{}, 1)}
}

// Offer takes the log ids of one callback request that returned at
// returned, and samples every Every-th result of the window up to Limit.
func (r *ResultLag) Offer(ids []int64, returned time.Time) {
	if returned.Before(r.o.From) || !returned.Before(r.o.To) {
		return
	}
	r.mu.Lock()
	took := false
	for _, id := range ids {
		if r.offered%r.o.Every == 0 && r.taken() < r.o.Limit {
			r.pending = append(r.pending, lagSample{id: id, returned: returned})
			took = true
		}
		r.offered++
	}
	r.mu.Unlock()
	if took {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// taken counts the samples taken so far; r.mu is held.
func (r *ResultLag) taken() int { return len(r.pending) + len(r.lags) + r.missed }

// Run reads the pending samples' logs every Interval with visible (true
// once the log shows the result) until ctx ends or, once the window has
// closed (To), no sample is pending.
func (r *ResultLag) Run(ctx context.Context, visible func(ctx context.Context, id int64) (bool, error)) error {
	sem := make(chan struct{}, r.o.Readers)
	for {
		r.mu.Lock()
		batch := append([]lagSample(nil), r.pending...)
		r.mu.Unlock()
		now := r.o.Clock.Now()
		if len(batch) == 0 {
			if !now.Before(r.o.To) {
				return nil
			}
			// Nothing to read: wait for a sample or the window's end.
			wctx, cancel := context.WithCancel(ctx)
			go func() {
				select {
				case <-r.wake:
					cancel()
				case <-wctx.Done():
				}
			}()
			err := r.o.Clock.SleepUntil(wctx, r.o.To)
			cancel()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil && wctx.Err() == nil {
				return err
			}
			continue
		}
		next := now.Add(r.o.Interval)
		var wg sync.WaitGroup
		for _, s := range batch {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				ok, err := visible(ctx, s.id)
				r.settle(s, ok, err, r.o.Clock.Now())
			})
		}
		wg.Wait()
		if err := r.o.Clock.SleepUntil(ctx, next); err != nil {
			return err
		}
	}
}

// settle records one read of sample s that answered at at.
func (r *ResultLag) settle(s lagSample, ok bool, err error, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errs++
		r.lastErr = err
		ok = false
	}
	switch {
	case ok:
		r.lags = append(r.lags, float64(at.Sub(s.returned))/float64(time.Millisecond))
	case !at.Before(s.returned.Add(r.o.Deadline)):
		r.missed++
	default:
		return
	}
	for i, p := range r.pending {
		if p == s {
			r.pending = append(r.pending[:i], r.pending[i+1:]...)
			break
		}
	}
}

// LagReport is what a ResultLag measured.
type LagReport struct {
	Visible  Durations // the sampled results that showed, in ms
	Sampled  int       // results sampled: Visible.N + Missed + Pending
	Missed   int       // sampled results not visible by the deadline
	Pending  int       // sampled results still being read when it stopped
	Offered  int       // results called back in the window
	Deadline time.Duration
	Errors   int // reads that failed (retried)
	LastErr  error
	// Queued and Requests are the window's callback requests recorded on
	// the results queue and all callback requests, from the meter (see
	// ResultPaths): which path the sampled results took.
	Queued, Requests int
}

// Report summarises what r measured so far.
func (r *ResultLag) Report() LagReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return LagReport{Visible: Summarise(r.lags), Sampled: r.taken(), Missed: r.missed, Pending: len(r.pending),
		Offered: r.offered, Deadline: r.o.Deadline, Errors: r.errs, LastErr: r.lastErr}
}

// Path names the path the window's results took: "direct" when no
// callback request was recorded on the results queue, "queued" when
// every one was, "mixed" otherwise ("" without requests).
func (l LagReport) Path() string {
	switch {
	case l.Requests == 0:
		return ""
	case l.Queued == 0:
		return "direct"
	case l.Queued >= l.Requests:
		return "queued"
	}
	return "mixed"
}

// String is the report's line: "result visible p50 X ms p99 Y ms max Z ms
// (n sampled, k not visible in D; path)".
func (l LagReport) String() string {
	if l.Sampled == 0 {
		return fmt.Sprintf("result visible: no result sampled (%d called back in the window)", l.Offered)
	}
	s := fmt.Sprintf("result visible p50 %.0f ms p99 %.0f ms max %.0f ms (%d sampled of %d, %d not visible in %s",
		l.Visible.P50, l.Visible.P99, l.Visible.Max, l.Sampled, l.Offered, l.Missed, l.Deadline)
	if l.Pending > 0 {
		s += fmt.Sprintf(", %d still read at the end", l.Pending)
	}
	if l.Errors > 0 {
		s += fmt.Sprintf(", %d reads failed (last: %v)", l.Errors, l.LastErr)
	}
	switch p := l.Path(); p {
	case "direct", "queued":
		s += fmt.Sprintf("; all %s: %d of %d callback requests queued", p, l.Queued, l.Requests)
	case "mixed":
		s += fmt.Sprintf("; paths mixed: %d of %d callback requests queued", l.Queued, l.Requests)
	}
	return s + ")"
}

// lagFunction is the function that serves the admin API's reads: the
// meter leaves it out while the lag is measured.
const lagFunction = "web"

// ResultPaths counts, in a window's usage, the callback requests the
// callback function recorded on the results queue (its sends: one per
// request of up to ten messages, ~2,000 results) and all the callback
// requests it served. The executors of the cost runs send no heartbeats,
// so every invocation of the function is a callback request.
func ResultPaths(u awsstack.Usage) (queued, requests int) {
	return u.Ops["callback"]["sqs:SendMessageBatch"].Requests, u.Invokes["callback"].Invocations
}

// resultShown reads a log through the admin API and says whether it
// shows a result (any handle code).
func resultShown(api *adminclient.Client) func(ctx context.Context, id int64) (bool, error) {
	return func(ctx context.Context, id int64) (bool, error) {
		l, err := api.LogGet(ctx, id)
		if err != nil {
			return false, err
		}
		return l.Handled(), nil
	}
}

// warmReaders starts the web function's environments the lag's readers
// use before the window, so that their cold starts (the functions' Init,
// when the run delays for it) are not in the figure: a console's
// environments are warm once it is in use. The reads' answers do not
// matter (log 0 does not exist).
func warmReaders(ctx context.Context, api *adminclient.Client) {
	var wg sync.WaitGroup
	for range DefaultLagReaders {
		wg.Go(func() { _, _ = api.LogGet(ctx, 0) })
	}
	wg.Wait()
}
