// Package route picks the executor address for one trigger, with the ten
// route strategies of xxl-job reproduced exactly (admin
// core/route/strategy, 2.4.x): FIRST, LAST, ROUND, RANDOM,
// CONSISTENT_HASH, LEAST_FREQUENTLY_USED, LEAST_RECENTLY_USED, FAILOVER,
// BUSYOVER and SHARDING_BROADCAST.
//
// A Router is the functional core of the choice. It keeps the per-job
// memory some strategies need (ROUND counters, LFU counts, LRU order),
// dropped every 24 h as xxl-job does, and takes its clock and its random
// source from the caller so that tests are deterministic. FAILOVER and
// BUSYOVER probe executors through a Prober (an executor client) and return
// the probe trail that xxl-job keeps in the trigger message.
// SHARDING_BROADCAST is not a choice of one address: the dispatcher fans
// it out with Broadcast and ShardAddress.
//
// Like xxl-job, the memory lives in one process. On Lambda each
// dispatcher instance has its own, so ROUND, LFU and LRU balance per
// instance rather than globally; the choice stays valid, only the
// rotation is approximate.
package route

import (
	"context"
	"errors"
	"fmt"
	"html"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// Errors of Route. Callers record them in the trigger log as a failed
// trigger, as xxl-job does.
var (
	// ErrNoAddress means the group has no executor address to route to.
	ErrNoAddress = errors.New("route: executor address list is empty")
	// ErrBroadcast means SHARDING_BROADCAST was given to Route; the
	// dispatcher fans it out with Broadcast instead.
	ErrBroadcast = errors.New("route: SHARDING_BROADCAST is fanned out by the dispatcher, not routed")
	// ErrUnknownStrategy means the strategy is not one of xjob.RouteStrategies.
	ErrUnknownStrategy = errors.New("route: unknown route strategy")
	// ErrNoProber means FAILOVER or BUSYOVER was asked of a Router built
	// without a Prober.
	ErrNoProber = errors.New("route: no prober configured for FAILOVER/BUSYOVER")
	// ErrProbeFailed means every executor failed the FAILOVER beat or the
	// BUSYOVER idle beat; Result.Trail says how each one answered.
	ErrProbeFailed = errors.New("route: every executor failed the probe")
)

// Defaults of Options.
const (
	// DefaultResetEvery is how often xxl-job forgets ROUND, LFU and LRU state.
	DefaultResetEvery = 24 * time.Hour
	// DefaultRingCacheSize is how many consistent-hash rings are kept
	// (one per distinct address list, so roughly one per executor group).
	DefaultRingCacheSize = 256
)

// xxl-job's thresholds.
const (
	roundRestartAbove = 1_000_000 // ROUND counter re-randomised above this
	roundRandomBound  = 100       // ROUND counter starts in [0,100)
	lfuRestartAbove   = 1_000_000 // LFU count re-randomised above this
)

// Prober checks executors for FAILOVER (Beat) and BUSYOVER (IdleBeat).
// driver.ExecutorClient satisfies it.
type Prober interface {
	Beat(ctx context.Context, address string) protocol.ReturnT
	IdleBeat(ctx context.Context, address string, jobID int64) protocol.ReturnT
}

// Rand is the random source: IntN returns a uniform int in [0,n).
// *math/rand/v2.Rand satisfies it. The Router calls it with its lock held,
// so it need not be safe for concurrent use.
type Rand interface {
	IntN(n int) int
}

// Options configures a Router. The zero value is usable except for
// FAILOVER and BUSYOVER, which need a Prober.
type Options struct {
	// Clock decides when per-job state expires. Default clock.Real{}.
	Clock clock.Clock
	// Rand drives RANDOM and the random starting points of ROUND and LFU.
	// Default: math/rand/v2's global source.
	Rand Rand
	// Prober probes executors for FAILOVER and BUSYOVER.
	Prober Prober
	// ResetEvery is how long ROUND, LFU and LRU state lives before it is
	// dropped. Default DefaultResetEvery (24 h, as xxl-job).
	ResetEvery time.Duration
	// RingCacheSize bounds the cache of consistent-hash rings; when full
	// it is emptied. Zero means DefaultRingCacheSize, negative disables
	// the cache (a ring is built on every call, as xxl-job does).
	RingCacheSize int
}

// Result is a routing decision.
type Result struct {
	// Address is the chosen executor address, as given in the list.
	Address string
	// Trail is xxl-job's HTML probe log for FAILOVER and BUSYOVER, kept in
	// the trigger message; empty for the other strategies.
	Trail string
}

// Router routes triggers. It is safe for concurrent use; build one per
// process and share it, since ROUND, LFU and LRU only balance across the
// calls one Router sees.
type Router struct {
	clock      clock.Clock
	prober     Prober
	resetEvery time.Duration

	mu    sync.Mutex // guards rand and the state below
	rand  Rand
	round expiring[int64, int]
	lfu   expiring[int64, map[string]int]
	lru   expiring[int64, []string] // per job: addresses, least recently used first

	rings ringCache
}

// expiring is a per-job map dropped wholesale once it is older than the
// reset period, as xxl-job's CACHE_VALID_TIME does.
type expiring[K comparable, V any] struct {
	validUntil time.Time
	m          map[K]V
}

// get returns the map, cleared first when now is past its validity.
func (e *expiring[K, V]) get(now time.Time, every time.Duration) map[K]V {
	if e.m == nil || now.After(e.validUntil) {
		e.m = make(map[K]V)
		e.validUntil = now.Add(every)
	}
	return e.m
}

type globalRand struct{}

func (globalRand) IntN(n int) int { return rand.IntN(n) }

// New returns a Router with opts' defaults filled in.
func New(opts Options) *Router {
	r := &Router{
		clock:      opts.Clock,
		prober:     opts.Prober,
		resetEvery: opts.ResetEvery,
		rand:       opts.Rand,
	}
	r.clock = fallback.Clock(r.clock)
	if r.rand == nil {
		r.rand = globalRand{}
	}
	if r.resetEvery <= 0 {
		r.resetEvery = DefaultResetEvery
	}
	r.rings.limit = opts.RingCacheSize
	if r.rings.limit == 0 {
		r.rings.limit = DefaultRingCacheSize
	}
	return r
}

// Route picks the executor for one trigger of jobID among addrs, the
// group's address list in its stored order (auto groups: sorted).
// FAILOVER and BUSYOVER call the Prober and fail with ErrProbeFailed, and
// the trail in the Result, when no executor answers 200.
func (r *Router) Route(ctx context.Context, strategy xjob.RouteStrategy, jobID int64, addrs []string) (Result, error) {
	if strategy == xjob.RouteShardingBroadcast {
		return Result{}, ErrBroadcast
	}
	if len(addrs) == 0 {
		return Result{}, fmt.Errorf("route %s job %d: %w", strategy, jobID, ErrNoAddress)
	}
	switch strategy {
	case xjob.RouteFirst:
		return Result{Address: addrs[0]}, nil
	case xjob.RouteLast:
		return Result{Address: addrs[len(addrs)-1]}, nil
	case xjob.RouteRandom:
		r.mu.Lock()
		i := r.rand.IntN(len(addrs))
		r.mu.Unlock()
		return Result{Address: addrs[i]}, nil
	case xjob.RouteRound:
		return Result{Address: r.routeRound(jobID, addrs)}, nil
	case xjob.RouteConsistentHash:
		return Result{Address: r.rings.get(addrs).pick(jobID)}, nil
	case xjob.RouteLeastFrequentlyUsed:
		return Result{Address: r.routeLFU(jobID, addrs)}, nil
	case xjob.RouteLeastRecentlyUsed:
		return Result{Address: r.routeLRU(jobID, addrs)}, nil
	case xjob.RouteFailover, xjob.RouteBusyover:
		return r.probe(ctx, strategy, jobID, addrs)
	}
	return Result{}, fmt.Errorf("route %q: %w", strategy, ErrUnknownStrategy)
}

// routeRound is ExecutorRouteRound: a per-job counter that starts at a
// random value in [0,100) (so that many jobs do not all start on the
// first executor) and restarts there once past 1,000,000.
func (r *Router) routeRound(jobID int64, addrs []string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := r.round.get(r.clock.Now(), r.resetEvery)
	c, ok := counts[jobID]
	if !ok || c > roundRestartAbove {
		c = r.rand.IntN(roundRandomBound)
	} else {
		c++
	}
	counts[jobID] = c
	return addrs[c%len(addrs)]
}

// routeLFU is ExecutorRouteLFU: per job, a use count per address; new
// addresses (and counts past 1,000,000) start at a random value in
// [0,len(addrs)); addresses gone from the list are forgotten; the least
// used address is picked and its count incremented. xxl-job breaks ties
// in Java HashMap iteration order, which is no meaningful order (and its
// random starting counts make the pick unreproducible anyway); we break
// them by position in addrs, the first one wins.
func (r *Router) routeLFU(jobID int64, addrs []string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	jobs := r.lfu.get(r.clock.Now(), r.resetEvery)
	counts := jobs[jobID]
	if counts == nil {
		counts = make(map[string]int, len(addrs))
		jobs[jobID] = counts
	}
	for _, a := range addrs {
		if c, ok := counts[a]; !ok || c > lfuRestartAbove {
			counts[a] = r.rand.IntN(len(addrs))
		}
	}
	in := membership(addrs)
	for a := range counts {
		if !in(a) {
			delete(counts, a)
		}
	}
	best := addrs[0]
	for _, a := range addrs[1:] {
		if counts[a] < counts[best] {
			best = a
		}
	}
	counts[best]++
	return best
}

// routeLRU is ExecutorRouteLRU: per job, an access-ordered list; new
// addresses are appended in list order, addresses gone from the list are
// removed, the eldest is picked and moved to the newest end.
func (r *Router) routeLRU(jobID int64, addrs []string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	jobs := r.lru.get(r.clock.Now(), r.resetEvery)
	order := jobs[jobID]
	for _, a := range addrs {
		if !contains(order, a) {
			order = append(order, a)
		}
	}
	in := membership(addrs)
	kept := order[:0]
	for _, a := range order {
		if in(a) {
			kept = append(kept, a)
		}
	}
	order = kept
	eldest := order[0]
	copy(order, order[1:])
	order[len(order)-1] = eldest
	jobs[jobID] = order
	return eldest
}

// probe is ExecutorRouteFailover (/beat) and ExecutorRouteBusyover
// (/idleBeat): ask each address in order, the first 200 wins. The trail
// reproduces xxl-job's English trigger message, e.g.
// "Heartbeats：<br>address：http://a/<br>code：500<br>msg：…", entries joined
// by "<br><br>" (full-width colons and a missing msg printed as "null",
// as Java prints them). Unlike xxl-job, the address and the executor's
// msg are HTML-escaped: the trail is shown as HTML and both come from
// executors.
func (r *Router) probe(ctx context.Context, strategy xjob.RouteStrategy, jobID int64, addrs []string) (Result, error) {
	if r.prober == nil {
		return Result{}, fmt.Errorf("route %s job %d: %w", strategy, jobID, ErrNoProber)
	}
	title := "Heartbeats"
	if strategy == xjob.RouteBusyover {
		title = "Idle check"
	}
	var trail strings.Builder
	for _, a := range addrs {
		if err := ctx.Err(); err != nil {
			return Result{Trail: trail.String()}, fmt.Errorf("route %s job %d: %w", strategy, jobID, err)
		}
		var rt protocol.ReturnT
		if strategy == xjob.RouteFailover {
			rt = r.prober.Beat(ctx, a)
		} else {
			rt = r.prober.IdleBeat(ctx, a, jobID)
		}
		if trail.Len() > 0 {
			trail.WriteString("<br><br>")
		}
		msg := rt.Msg
		if msg == "" {
			msg = "null"
		}
		trail.WriteString(title + "：<br>address：" + html.EscapeString(a) +
			"<br>code：" + strconv.Itoa(rt.Code) + "<br>msg：" + html.EscapeString(msg))
		if rt.Code == protocol.SuccessCode {
			return Result{Address: a, Trail: trail.String()}, nil
		}
	}
	return Result{Trail: trail.String()}, fmt.Errorf("route %s job %d: %w", strategy, jobID, ErrProbeFailed)
}

// membership returns a test for "s is in list": a scan for the short
// lists that are the norm, a set for long ones.
func membership(list []string) func(string) bool {
	if len(list) <= 16 {
		return func(s string) bool { return contains(list, s) }
	}
	set := make(map[string]struct{}, len(list))
	for _, a := range list {
		set[a] = struct{}{}
	}
	return func(s string) bool { _, ok := set[s]; return ok }
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
