package callback

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// Callbacker takes the items of one callback request and returns one
// error per item: *Service writes them (Callback), *Recorder records
// them for a later Apply.
type Callbacker interface {
	Callback(ctx context.Context, items []protocol.HandleCallbackParam) []error
}

var (
	_ Callbacker = (*Service)(nil)
	_ Callbacker = (*Recorder)(nil)
	_ Callbacker = (*Sparse)(nil)
)

// Defaults of SparseOptions.
const (
	// DefaultSparseWindow is how far back Sparse counts what it took.
	DefaultSparseWindow = 10 * time.Second
	// DefaultSparseItems is how many results per window a process still
	// writes itself: 3 a second. A page that takes at most a few results a
	// second holds a few logs, so writing it costs one unit; a record costs
	// a send, a receive and a delete on the queue and a share of an apply
	// invocation, which only pay off once an apply merges many results
	// into each page write.
	DefaultSparseItems = 30
	// DefaultSparseRequestItems is the most items a request may carry and
	// still be written at once: a request with more is a batching
	// executor's, whose items the apply shares page writes for.
	DefaultSparseRequestItems = 4
)

// SparseOptions tune Sparse. Zero values take the defaults above.
type SparseOptions struct {
	Window       time.Duration
	Items        int
	RequestItems int
	// Clock times the window (default the wall clock).
	Clock clock.Clock
}

// Sparse chooses, per callback request, between writing the results at
// once (Direct, a *Service) and recording them for a batched apply
// (Queued, a *Recorder), by what this process has taken lately:
//
//	request of n items ─▶ n ≤ RequestItems and taken in Window + n ≤ Items?
//	    yes ─▶ Direct ── items whose page lost its round ─▶ Direct once more
//	                  ── items that failed for a retryable reason ─▶ Queued
//	    no  ─▶ Queued
//
// The queue exists so that a page write is shared by many results when
// results are many; when they are few, every record is applied alone and
// costs more than the write it defers. Both paths end in the same
// conditional LogFinish (first result wins), so which one a request takes
// changes its cost and when its log shows the result, never the outcome.
// An item Direct could not write (a store error, throttling, or a log
// page that another writer changed between Direct's read and its write
// twice: Direct writes each page in one round, driver.OneRound, and a
// page that lost it once more) is recorded on the queue instead of failed
// back to the executor or retried with backoff, so the durable path stays
// the fallback and concurrent environments never wait out one another on
// a hot page. The count is per process (on Lambda, per execution
// environment), which is what the choice needs: an environment that takes
// few results serves a deployment whose pages are small.
type Sparse struct {
	direct, queued Callbacker
	o              SparseOptions

	mu    sync.Mutex
	slots []sparseSlot // one per second of the window, by second mod len
}

type sparseSlot struct {
	sec int64
	n   int
}

// NewSparse returns a Sparse over direct and queued.
func NewSparse(direct, queued Callbacker, o SparseOptions) *Sparse {
	if o.Window <= 0 {
		o.Window = DefaultSparseWindow
	}
	if o.Items <= 0 {
		o.Items = DefaultSparseItems
	}
	if o.RequestItems <= 0 {
		o.RequestItems = DefaultSparseRequestItems
	}
	o.Clock = fallback.Clock(o.Clock)
	secs := max(int(o.Window/time.Second), 1)
	return &Sparse{direct: direct, queued: queued, o: o, slots: make([]sparseSlot, secs)}
}

// Callback writes or records items (see Sparse).
func (s *Sparse) Callback(ctx context.Context, items []protocol.HandleCallbackParam) []error {
	if len(items) == 0 {
		return nil
	}
	if !s.take(len(items)) {
		return s.queued.Callback(ctx, items)
	}
	// One conditional round per log page (driver.OneRound): a page that
	// another writer changed first answers driver.ErrContended. Without
	// it, every environment of a callback function that scaled out
	// retried its few results on the same hot pages with backoff, up to a
	// minute's worth of rounds, while the others did the same. A page that
	// lost its round lost it most often to one other writer (the ring
	// adding the next fires' logs to the newest page, or one other
	// environment) and is free on a second read, so contended items get
	// one more round; what still fails for a retryable reason is recorded
	// on the queue, which for a lone result costs a send, a receive and an
	// applying invocation.
	quiet := driver.OneRound(ctx)
	errs := s.direct.Callback(quiet, items)
	redo(quiet, s.direct, items, errs, func(err error) bool { return errors.Is(err, driver.ErrContended) })
	redo(ctx, s.queued, items, errs, func(err error) bool { return err != nil && !Final(err) })
	return errs
}

// redo sends the items whose outcome in errs matches again to cb and puts
// cb's outcomes in their place.
func redo(ctx context.Context, cb Callbacker, items []protocol.HandleCallbackParam, errs []error, again func(error) bool) {
	var sub []protocol.HandleCallbackParam
	var at []int
	for i, err := range errs {
		if again(err) {
			sub, at = append(sub, items[i]), append(at, i)
		}
	}
	if len(sub) == 0 {
		return
	}
	for k, err := range cb.Callback(ctx, sub) {
		errs[at[k]] = err
	}
}

// take counts n items taken now and says whether they go Direct.
func (s *Sparse) take(n int) bool {
	now := s.o.Clock.Now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := 0
	for _, sl := range s.slots {
		if sl.sec > now-int64(len(s.slots)) && sl.sec <= now {
			seen += sl.n
		}
	}
	sl := &s.slots[int(now%int64(len(s.slots)))]
	if sl.sec != now {
		*sl = sparseSlot{sec: now}
	}
	sl.n += n
	return n <= s.o.RequestItems && seen+n <= s.o.Items
}
