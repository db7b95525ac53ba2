// Package tally takes the run report's counters off the trigger path.
//
// Every trigger and every result adjusts one day's counters (dispatch adds
// running or fail, the callback moves running to success or fail). Written
// through, that is one store write per trigger and one per result: on
// DynamoDB two of the ~9 write units a trigger costs, on SQLite two of its
// ~9 small write transactions. The counters are best effort already (a
// failed ReportAdd is logged, not retried; the trigger logs are the
// record), so a Batcher adds the deltas up per day and group in memory
// and writes one ReportAdd per day and group:
//
//	ReportAdd(delta) ──▶ pending[day, group] += delta        (memory, no I/O)
//	every Interval (Run) ─────────────────┐
//	FlushDue(ctx): oldest delta ≥ MaxAge, │
//	  or ≥ MaxPending counters ───────────┤
//	Flush(ctx) ───────────────────────────┴──▶ one ReportAdd per (day, group) ──▶ store
//	                                              │failed
//	                                              └──▶ added back to pending (keeping
//	                                                   its age), written next time
//
// Local mode runs Run (a flush a second). A Lambda environment is frozen
// between invocations, so it runs no loop: its handlers call FlushDue at
// the end of each invocation, which writes only once the oldest pending
// delta is MaxAge old (a minute on Lambda) or MaxPending counters wait,
// and the environment flushes whatever is pending when Lambda shuts it
// down (SIGTERM). A sparse schedule thus costs one write per environment
// and minute instead of one per invocation; the report read elsewhere lags
// an environment's counts by up to MaxAge while it is busy, and until its
// next invocation or its shutdown while it is idle.
//
// What a crash loses: the deltas added since the last flush, i.e. at most
// one Interval of counts in local mode (1 s by default) and, on Lambda,
// the counts an environment held when it ended without the shutdown
// flush — killed by a timeout or a crash (Lambda sends no SIGTERM then),
// or a shutdown flush that failed: at most MaxAge of that environment's
// counts, plus those of flushes that failed before. The report can
// therefore undercount a little after a crash; it never counts a trigger
// twice.
package tally

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// DefaultInterval is how often Run flushes: long enough to fold a
// second's thousands of triggers into one write per day, short enough that
// a crash loses at most a second of counts.
const DefaultInterval = time.Second

// DefaultMaxPending is FlushDue's bound on waiting counters (distinct day
// and group pairs). Flush writes them one by one, and the shutdown flush
// of a Lambda environment has under half a second before SIGKILL: 16
// writes at DynamoDB's ~10 ms tail latency fit with room to spare. An
// environment that touches more groups than that within MaxAge flushes
// more often, as often as once per invocation, which is never worse than
// writing through.
const DefaultMaxPending = 16

// Options tune a Batcher. Zero values take the documented defaults.
type Options struct {
	// Interval is Run's flush period (default DefaultInterval).
	Interval time.Duration
	// MaxAge is how old the oldest pending delta gets before FlushDue
	// writes (default Interval).
	MaxAge time.Duration
	// MaxPending is how many counters may wait before FlushDue writes
	// whatever their age (default DefaultMaxPending).
	MaxPending int
	// Clock paces Run and ages the deltas (default the wall clock); tests
	// pass a clock.Fake.
	Clock clock.Clock
	// Logger reports failed flushes in Run (default slog.Default()).
	Logger *slog.Logger
}

// Batcher is a driver.ReportStore that accumulates ReportAdd deltas per
// day and group in memory and writes them to the underlying store on Flush. It is
// safe for concurrent use.
type Batcher struct {
	next driver.ReportStore
	o    Options

	mu      sync.Mutex
	pending map[reportKey]xjob.ReportDay
	oldest  time.Time // when the oldest pending delta was added; zero with none pending

	flushMu sync.Mutex // one flush at a time, so a counter's writes never overlap
}

// reportKey names one counter of the report.
type reportKey struct {
	day   string
	group int64
}

var _ driver.ReportStore = (*Batcher)(nil)

// New builds a Batcher in front of next.
func New(next driver.ReportStore, o Options) (*Batcher, error) {
	if next == nil {
		return nil, errors.New("report: the underlying ReportStore is required")
	}
	if o.Interval < 0 || o.MaxAge < 0 || o.MaxPending < 0 {
		return nil, fmt.Errorf("report: Interval, MaxAge and MaxPending must not be negative, got %s, %s, %d", o.Interval, o.MaxAge, o.MaxPending)
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.MaxAge == 0 {
		o.MaxAge = o.Interval
	}
	if o.MaxPending == 0 {
		o.MaxPending = DefaultMaxPending
	}
	o.Clock = fallback.Clock(o.Clock)
	o.Logger = fallback.Logger(o.Logger)
	return &Batcher{next: next, o: o, pending: map[reportKey]xjob.ReportDay{}}, nil
}

// ReportAdd adds d to its day and group's pending deltas. It does no I/O and never
// fails for a well-formed day; the write happens at the next flush.
func (b *Batcher) ReportAdd(_ context.Context, d xjob.ReportDay) error {
	if d.Day == "" {
		return errors.New("report add: empty day")
	}
	if d.Empty() {
		return nil
	}
	now := b.o.Clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.addLocked(d, now)
	return nil
}

// addLocked adds d, a delta first pending at since, to the pending
// counters. b.mu is held.
func (b *Batcher) addLocked(d xjob.ReportDay, since time.Time) {
	k := reportKey{d.Day, d.GroupID}
	p := b.pending[k]
	p.Day, p.GroupID = d.Day, d.GroupID
	p.Add(d)
	if p.Empty() {
		delete(b.pending, k) // deltas that cancel out need no write
	} else {
		b.pending[k] = p
	}
	switch {
	case len(b.pending) == 0:
		b.oldest = time.Time{}
	case b.oldest.IsZero() || since.Before(b.oldest):
		b.oldest = since
	}
}

// Oldest is when the oldest pending delta was added (zero when none is
// pending).
func (b *Batcher) Oldest() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.oldest
}

// Due reports whether FlushDue would write now: the oldest pending delta
// is MaxAge old, or MaxPending counters wait.
func (b *Batcher) Due() bool {
	now := b.o.Clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending) > 0 && (len(b.pending) >= b.o.MaxPending || !now.Before(b.oldest.Add(b.o.MaxAge)))
}

// FlushDue flushes when Due, and reports whether it did: the end of a
// Lambda invocation, where a write per invocation would be most of what a
// sparse schedule's counters cost.
func (b *Batcher) FlushDue(ctx context.Context) (bool, error) {
	if !b.Due() {
		return false, nil
	}
	return true, b.Flush(ctx)
}

// ReportList flushes what is pending, so that a reader sees its own
// process's counts, and then reads the underlying store. A failed flush
// does not fail the read: the counts are written later.
func (b *Batcher) ReportList(ctx context.Context, p driver.ReportListParams) ([]xjob.ReportDay, error) {
	if err := b.Flush(ctx); err != nil {
		b.o.Logger.WarnContext(ctx, "report flush before list", "err", err)
	}
	return b.next.ReportList(ctx, p)
}

// Pending returns the counters with unwritten deltas, in day then group
// order (for tests and diagnostics).
func (b *Batcher) Pending() []xjob.ReportDay {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]xjob.ReportDay, 0, len(b.pending))
	for _, d := range b.pending {
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y xjob.ReportDay) int {
		switch {
		case x.Day < y.Day:
			return -1
		case x.Day > y.Day:
			return 1
		}
		return cmp.Compare(x.GroupID, y.GroupID)
	})
	return out
}

// Flush writes the pending deltas, one ReportAdd per day and group.
// Counters whose write fails are added back and written by a later flush; the errors are
// returned joined.
func (b *Batcher) Flush(ctx context.Context) error {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	b.mu.Lock()
	if len(b.pending) == 0 {
		b.mu.Unlock()
		return nil
	}
	days, since := b.pending, b.oldest
	b.pending, b.oldest = map[reportKey]xjob.ReportDay{}, time.Time{}
	b.mu.Unlock()

	var errs []error
	var failed []xjob.ReportDay
	for _, d := range days {
		if err := b.next.ReportAdd(ctx, d); err != nil {
			errs = append(errs, fmt.Errorf("report flush %s group %d: %w", d.Day, d.GroupID, err))
			failed = append(failed, d)
		}
	}
	if len(failed) > 0 {
		b.mu.Lock()
		for _, d := range failed {
			b.addLocked(d, since) // as old as it was: the next FlushDue retries it
		}
		b.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Run flushes every Interval until ctx ends, then flushes once more
// (outside ctx, so shutdown writes the last counts) and returns that
// flush's error. It is the local-mode flush loop; Lambda handlers call
// FlushDue before they return instead, since a frozen environment runs no
// background loop.
func (b *Batcher) Run(ctx context.Context) error {
	for {
		if err := b.o.Clock.SleepUntil(ctx, b.o.Clock.Now().Add(b.o.Interval)); err != nil {
			return b.Flush(context.WithoutCancel(ctx))
		}
		if err := b.Flush(ctx); err != nil && ctx.Err() == nil {
			b.o.Logger.WarnContext(ctx, "report flush", "err", err)
		}
	}
}

// Store returns s with its report counters going through b: the store a
// service on the trigger path (dispatch, callback) is given. Everything
// else goes straight to s. b must have been built on s (or on the same
// backend).
func (b *Batcher) Store(s driver.Store) driver.Store { return batchedStore{Store: s, b: b} }

// batchedStore is a driver.Store whose report counters are batched.
type batchedStore struct {
	driver.Store
	b *Batcher
}

// Unwrap returns the store s batches the counters of, so that a caller
// can find a method that store has beyond driver.Store (the callback's
// LogJobs): an embedded interface carries only the interface's methods.
func (s batchedStore) Unwrap() driver.Store { return s.Store }

func (s batchedStore) ReportAdd(ctx context.Context, d xjob.ReportDay) error {
	return s.b.ReportAdd(ctx, d)
}

// ReportAddNow writes d to the store at once, past the batch: for a write
// that others read back to take a difference (an import's report days:
// the next import may run on another node, or in another Lambda
// environment, before this batch's flush).
func (s batchedStore) ReportAddNow(ctx context.Context, d xjob.ReportDay) error {
	return s.Store.ReportAdd(ctx, d)
}

func (s batchedStore) ReportList(ctx context.Context, p driver.ReportListParams) ([]xjob.ReportDay, error) {
	return s.b.ReportList(ctx, p)
}
