// Package scan is the scheduler's pre-read loop: once a second, for each scan
// shard it holds a lease on, it reads the running jobs due within the
// pre-read window, plans each one's fire times (see PlanJob), pushes the
// upcoming fires onto the ring and the late ones onto a dispatch lane, and
// only then advances the jobs' next fire times, each with a write
// conditional on its job's version (one JobAdvanceMany call per page).
//
// Order of effects per page of due jobs:
//
//	JobsDue ──▶ PlanJob ──▶ JobAdvanceMany of FIX_DELAY jobs with a fire (each if version unchanged)
//	        ──▶ Ring.Send + Dispatch.Send (but the FIX_DELAY fires whose advance lost)
//	        ──▶ JobAdvanceMany of the rest (each if version unchanged)
//
// A crash after the sends and before the advance re-reads the same jobs on
// the next tick and sends the same occurrences again; their ids are
// deterministic, so dispatch drops the repeats (no lost fire, no duplicate).
// A lost advance (version conflict: a person edited the job, or a stale
// scanner raced us) leaves the job to the next tick. FIX_DELAY jobs go the
// other way round because a run's result moves them to another time (end
// + delay), which the same ids would not deduplicate: advanced first,
// exactly one of the scan and the result plans the next fire, and a crash
// between that advance and the send leaves the job parked at its next
// fallback — a late fire, never a lost or a second one (Pusher.advanceFirst).
//
// Falling behind is never silent: fire times a tick finds past (beyond the
// misfire threshold, or collapsed into one late fire) are counted per
// misfire strategy in the metrics, summarised in one warning per tick and
// listed per job at debug level (see Plan.Late). Schedules are parsed once
// per distinct (type, expression, zone), not once per due job per tick.
package scan

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
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/scheduler/lease"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Tunables are the scan's numbers, shared with the admin's Pusher, which
// plans a job's fires the way the scan would. Zero values take the
// documented defaults.
type Tunables struct {
	// Shards is the number of scan shards; it must equal the store's.
	Shards int
	// PreRead is how far ahead jobs are read (xxl-job: 5 s).
	PreRead time.Duration
	// Advance is how far ahead of the tick a due job's fires are planned
	// and pushed (default PreRead, xxl-job's rule). A longer advance moves
	// the job's next fire time past it, so an every-second job is read and
	// advanced about once per Advance−PreRead instead of on every tick
	// (jobs on 16 grids by their shard among 16, so jobs started together do not
	// all come due in the same tick again, and the fires of one DynamoDB
	// log page are planned together: see planEnd):
	// xjob local uses 2×PreRead. Edits stay correct because every stop or
	// schedule edit bumps the job's revision (the ring drops the pushed
	// fires) and the admin pushes the edited job's fires itself.
	Advance time.Duration
	// PushWithin is how soon a job's next fire must be, when a person
	// creates, starts or reschedules it, for the admin to push its fires
	// at once (Pusher) instead of leaving them to the scan's next tick;
	// the push covers only the fires within it. Default PreRead (a scan
	// that runs once per horizon, like the Lambda scan, needs the admin
	// to push its whole horizon); xjob local, whose scan ticks every
	// second, uses 2 s. Pushing more than needed is not free: each push
	// is its own ring message per second, so 10,000 every-second jobs
	// created at once would otherwise add 100,000 one-item buckets.
	PushWithin time.Duration
	// MisfireThreshold is how late a fire may be and still fire (xxl-job: 5 s).
	MisfireThreshold time.Duration
	// PageSize is how many due jobs one query returns (xxl-job's preReadCount: 6000).
	PageSize int
	// TickBudget is how long one tick may keep paging (default 800 ms).
	TickBudget time.Duration
	// RingLead makes ring buckets visible this much before their second,
	// so the ring can be waiting when the second starts (default 500 ms).
	RingLead time.Duration
	// LeaseTTL is the lifetime of a shard lease (default 10 s).
	LeaseTTL time.Duration
	// MaxBucketItems caps the occurrences in one ring message, keeping it
	// well under SQS's 256 KB (default 2000).
	MaxBucketItems int
	// Parallel is how many shards are scanned at once (default 4).
	Parallel int
	// AdvanceRate, when positive, caps each shard's advances a second
	// (pace.go): every advance rewrites the job's due index entry, and a
	// shard's entries share one key, which a store such as DynamoDB
	// throttles past a rate. A tick then reads no more due jobs than it
	// can advance at that rate within TickBudget; the rest wait for the
	// next tick. Zero: as fast as the store goes (xjob local).
	AdvanceRate int
}

func (c *Tunables) applyDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Shards == 0 {
		c.Shards = 16
	}
	def(&c.PreRead, 5*time.Second)
	def(&c.Advance, c.PreRead)
	def(&c.PushWithin, c.PreRead)
	def(&c.MisfireThreshold, 5*time.Second)
	def(&c.TickBudget, 800*time.Millisecond)
	def(&c.RingLead, 500*time.Millisecond)
	def(&c.LeaseTTL, 10*time.Second)
	if c.PageSize == 0 {
		c.PageSize = 6000
	}
	if c.MaxBucketItems == 0 {
		c.MaxBucketItems = 2000
	}
	if c.Parallel == 0 {
		c.Parallel = 4
	}
}

// Validate reports tunables that cannot work.
func (c Tunables) Validate() error {
	switch {
	case c.Shards < 1:
		return errors.New("scan: Shards must be ≥ 1")
	case c.PreRead < time.Second:
		return errors.New("scan: PreRead must be ≥ 1s")
	case c.Advance < c.PreRead:
		return errors.New("scan: Advance must be ≥ PreRead")
	case c.PushWithin < 0 || c.PushWithin > c.PreRead:
		return errors.New("scan: PushWithin must be in [0, PreRead]")
	case c.MisfireThreshold < 0:
		return errors.New("scan: MisfireThreshold must be ≥ 0")
	case c.PageSize < 1:
		return errors.New("scan: PageSize must be ≥ 1")
	case c.LeaseTTL < 2*time.Second:
		return errors.New("scan: LeaseTTL must be ≥ 2s")
	case c.RingLead < 0 || c.RingLead >= c.PreRead:
		return errors.New("scan: RingLead must be in [0, PreRead)")
	case c.AdvanceRate < 0:
		return errors.New("scan: AdvanceRate must be ≥ 0")
	}
	return nil
}

// Config wires a Scanner: its ports (Jobs, Leases, Queues and Owner are
// required; Clock defaults to the wall clock, Logger to slog.Default())
// and its tunables.
type Config struct {
	Tunables
	Jobs   driver.JobStore
	Leases driver.LeaseStore
	Queues driver.Queues
	Clock  clock.Clock
	Logger *slog.Logger
	// Owner identifies this scanner in leases (host/pid/instance).
	Owner string
	// Metrics, if set, records each tick's duration and due jobs.
	Metrics *metric.Metrics
	// Owns, if set, says which shards this scanner should hold: in a
	// cluster each node scans its share (package cluster), so it neither
	// probes nor leases the others, and it gives up a lease it holds once
	// the shard is another node's. Nil: every shard, whoever leases it
	// first (xjob local, the Lambda scan).
	Owns func(shard int) bool
}

// Scanner runs scan ticks over the shards it can lease.
type Scanner struct {
	cfg     Config
	jobs    driver.JobStore
	clock   clock.Clock
	log     *slog.Logger
	keeper  *lease.Keeper
	metrics *metric.Metrics
	owns    func(shard int) bool
	// push plans, pushes and advances each page of due jobs.
	push *Pusher

	mu     sync.Mutex
	leases map[int]driver.Lease
}

// New builds a Scanner.
func New(cfg Config) (*Scanner, error) {
	if cfg.Jobs == nil || cfg.Leases == nil || cfg.Queues == nil || cfg.Owner == "" {
		return nil, errors.New("scan: Jobs, Leases, Queues and Owner are required")
	}
	cfg.Clock, cfg.Logger = fallback.Clock(cfg.Clock), fallback.Logger(cfg.Logger)
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var advancer driver.JobStore = cfg.Jobs
	if cfg.AdvanceRate > 0 {
		advancer = newPacedJobs(cfg.Jobs, cfg.Clock, cfg.Shards, cfg.AdvanceRate)
	}
	push := newPusher(cfg.Tunables, advancer, cfg.Queues, cfg.Logger, cfg.Metrics)
	// The scan's MISFIRE fires join the ring's misfire episodes (misfire.go).
	push.leases = cfg.Leases
	return &Scanner{
		cfg: cfg, jobs: cfg.Jobs, clock: cfg.Clock, log: cfg.Logger,
		keeper: lease.NewKeeper(cfg.Leases, cfg.Clock, cfg.Owner, cfg.LeaseTTL), metrics: cfg.Metrics,
		leases: make(map[int]driver.Lease),
		push:   push,
		owns:   cfg.Owns,
	}, nil
}

// Stats counts what a tick did.
type Stats struct {
	Shards    int // shards scanned (lease held)
	Pages     int
	Jobs      int // due jobs read
	RingFires int // occurrences pushed to the ring
	NowFires  int // occurrences sent straight to dispatch (late or misfire)
	Misfires  int // jobs found more than the misfire threshold late
	// MisfiredDoNothing and MisfiredFireOnceNow count the scheduled times
	// of those jobs that were past the threshold, per misfire strategy;
	// Collapsed the late times within the threshold folded into one fire
	// (see Plan.Late). Oldest is the earliest such time (Unix ms).
	MisfiredDoNothing   int
	MisfiredFireOnceNow int
	Collapsed           int
	Oldest              int64
	Stopped             int // jobs stopped because no next time exists
	Conflicts           int // advances lost to a concurrent writer
	Truncated           bool
	Duration            time.Duration
}

func (s *Stats) add(o Stats) {
	s.Shards += o.Shards
	s.Pages += o.Pages
	s.Jobs += o.Jobs
	s.RingFires += o.RingFires
	s.NowFires += o.NowFires
	s.Misfires += o.Misfires
	s.MisfiredDoNothing += o.MisfiredDoNothing
	s.MisfiredFireOnceNow += o.MisfiredFireOnceNow
	s.Collapsed += o.Collapsed
	if o.Oldest != 0 && (s.Oldest == 0 || o.Oldest < s.Oldest) {
		s.Oldest = o.Oldest
	}
	s.Stopped += o.Stopped
	s.Conflicts += o.Conflicts
	s.Truncated = s.Truncated || o.Truncated
}

// Run ticks at the start of every second until ctx ends or until passes
// (zero: forever), then releases its leases so the next scanner can take
// over at once.
func (s *Scanner) Run(ctx context.Context, until time.Time) error {
	defer s.ReleaseAll(context.WithoutCancel(ctx))
	for {
		next := s.clock.Now().Truncate(time.Second).Add(time.Second)
		if !until.IsZero() && !next.Before(until) {
			return nil
		}
		if err := s.clock.SleepUntil(ctx, next); err != nil {
			return nil // ctx ended
		}
		st, err := s.Tick(ctx)
		s.metrics.ScanTick(st.Duration, st.Jobs)
		if late := st.MisfiredDoNothing + st.MisfiredFireOnceNow + st.Collapsed; late > 0 {
			// One line per tick, whatever the number of jobs: overload must
			// be visible without flooding the log.
			s.log.WarnContext(ctx, "scan: behind schedule, late fire times passed over",
				"misfiredDoNothing", st.MisfiredDoNothing, "misfiredFireOnceNow", st.MisfiredFireOnceNow,
				"misfiredJobs", st.Misfires, "collapsed", st.Collapsed,
				"oldest", time.UnixMilli(st.Oldest).UTC(), "misfireThreshold", s.cfg.MisfireThreshold)
		}
		if err != nil {
			s.log.ErrorContext(ctx, "scan tick", "err", err)
		} else if st.Jobs > 0 || st.Truncated {
			s.log.DebugContext(ctx, "scan tick", "jobs", st.Jobs, "ring", st.RingFires, "now", st.NowFires,
				"misfires", st.Misfires, "conflicts", st.Conflicts, "took", st.Duration)
		}
	}
}

// Tick scans every shard it holds or can acquire, several at once, using
// the current second as the planning time.
func (s *Scanner) Tick(ctx context.Context) (Stats, error) {
	start := s.clock.Now()
	now := start.Truncate(time.Second).UnixMilli()
	var (
		mu    sync.Mutex
		total Stats
		errs  []error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, s.parallel())
	)
	for shard := range s.cfg.Shards {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			st, err := s.tickLeased(ctx, shard, now)
			mu.Lock()
			defer mu.Unlock()
			total.add(st)
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	total.Duration = s.clock.Now().Sub(start)
	return total, errors.Join(errs...)
}

// parallel is how many shards a tick scans at once: Parallel, or with an
// AdvanceRate every shard, since a paced shard spends most of its budget
// waiting for its next chunk, and a shard started after another's budget
// would end the tick past its own.
func (s *Scanner) parallel() int {
	if s.cfg.AdvanceRate > 0 {
		return max(s.cfg.Parallel, s.cfg.Shards)
	}
	return s.cfg.Parallel
}

// tickLeased makes sure this scanner holds shard's lease, then scans it.
// A shard it does not hold is first read without the lease (one due job
// at most): a shard with nothing due is not leased. The Lambda scan starts
// every invocation without leases and releases them at its end, so on an
// idle deployment that is two conditional writes per shard a minute saved
// (a quarter of its monthly cost); the read is half a read unit.
func (s *Scanner) tickLeased(ctx context.Context, shard int, now int64) (Stats, error) {
	s.mu.Lock()
	l, held := s.leases[shard]
	s.mu.Unlock()
	if s.owns != nil && !s.owns(shard) {
		if held {
			s.release(ctx, shard, l) // hand it over: its new owner need not wait for expiry
		}
		return Stats{}, nil
	}
	// In a cluster (owns set) a node holds every shard it owns, due jobs
	// or not: the probe saves writes that Lambda bills, while a node's
	// lease renewals cost its database next to nothing, and a shard
	// always held is what tells a node's share, and a shard nobody scans,
	// from /metrics.
	if !held && s.owns == nil {
		due, err := s.jobs.JobsDue(ctx, driver.JobsDueParams{Shard: shard, Before: now + s.cfg.PreRead.Milliseconds(), Limit: 1})
		if err != nil {
			return Stats{}, fmt.Errorf("scan shard %d: %w", shard, err)
		}
		if len(due) == 0 {
			return Stats{Pages: 1}, nil
		}
	}
	var err error
	if held {
		l, err = s.keeper.Ensure(ctx, l)
	}
	if !held || errors.Is(err, xjob.ErrLeaseLost) {
		l, err = s.keeper.Acquire(ctx, lease.Name(shard))
	}
	if err != nil {
		s.mu.Lock()
		delete(s.leases, shard)
		s.mu.Unlock()
		if errors.Is(err, xjob.ErrLeaseHeld) {
			return Stats{}, nil // another scanner has it
		}
		return Stats{}, err
	}
	s.mu.Lock()
	s.leases[shard] = l
	s.mu.Unlock()
	st, err := s.TickShard(ctx, shard, now, l)
	st.Shards = 1
	return st, err
}

// release gives up shard's lease l between two of its ticks.
func (s *Scanner) release(ctx context.Context, shard int, l driver.Lease) {
	s.mu.Lock()
	delete(s.leases, shard)
	s.mu.Unlock()
	if err := s.keeper.Release(ctx, l); err != nil && !errors.Is(err, xjob.ErrLeaseLost) {
		s.log.WarnContext(ctx, "scan release lease", "lease", l.Name, "err", err)
	}
}

// Held returns the shards whose leases this scanner holds, in order.
func (s *Scanner) Held() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, 0, len(s.leases))
	for shard := range s.leases {
		out = append(out, shard)
	}
	slices.Sort(out)
	return out
}

// ReleaseAll gives up every lease this scanner holds.
func (s *Scanner) ReleaseAll(ctx context.Context) {
	s.mu.Lock()
	leases := s.leases
	s.leases = make(map[int]driver.Lease)
	s.mu.Unlock()
	for _, l := range leases {
		if err := s.keeper.Release(ctx, l); err != nil && !errors.Is(err, xjob.ErrLeaseLost) {
			s.log.WarnContext(ctx, "scan release lease", "lease", l.Name, "err", err)
		}
	}
}

// TickShard runs one tick on one shard at planning time now (Unix ms, the
// tick's second) under lease l: page through due jobs, push, advance.
func (s *Scanner) TickShard(ctx context.Context, shard int, now int64, l driver.Lease) (Stats, error) {
	var st Stats
	pol := s.push.policy()
	deadline := s.clock.Now().Add(s.cfg.TickBudget)
	var cursor driver.DueCursor
	for {
		limit := s.pageLimit(deadline)
		if limit == 0 {
			st.Truncated = true
			return st, nil
		}
		jobs, err := s.jobs.JobsDue(ctx, driver.JobsDueParams{
			Shard: shard, Before: now + s.cfg.PreRead.Milliseconds(), After: cursor, Limit: limit,
		})
		if err != nil {
			return st, fmt.Errorf("scan shard %d: %w", shard, err)
		}
		st.Pages++
		st.Jobs += len(jobs)
		if len(jobs) == 0 {
			return st, nil
		}
		last := jobs[len(jobs)-1]
		cursor = driver.DueCursor{NextTime: last.TriggerNextTime, ID: last.ID}

		if !s.keeper.Valid(l, s.cfg.TickBudget) {
			return st, fmt.Errorf("scan shard %d: %w", shard, xjob.ErrLeaseLost)
		}
		if err := s.push.processPage(ctx, jobs, now, pol, &st); err != nil {
			return st, fmt.Errorf("scan shard %d: %w", shard, err)
		}
		if len(jobs) < limit {
			return st, nil
		}
		if !s.clock.Now().Before(deadline) {
			st.Truncated = true
			return st, nil
		}
	}
}

// pageLimit is how many due jobs the next page may read: PageSize, or
// with an AdvanceRate no more than the shard can advance at that rate
// before the tick's deadline, so a paced tick ends within its budget (and
// its lease, which outlives the budget) and leaves the rest, the jobs due
// latest, to the next tick. Zero when the budget is spent.
func (s *Scanner) pageLimit(deadline time.Time) int {
	if s.cfg.AdvanceRate == 0 {
		return s.cfg.PageSize
	}
	left := deadline.Sub(s.clock.Now())
	if left <= 0 {
		return 0
	}
	return max(1, min(s.cfg.PageSize, int(left.Seconds()*float64(s.cfg.AdvanceRate))))
}
