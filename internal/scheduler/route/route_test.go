package route

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// The executor client is a Prober.
var _ Prober = driver.ExecutorClient(nil)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// scriptedRand returns the scripted values in turn and records each bound.
type scriptedRand struct {
	t      *testing.T
	vals   []int
	bounds []int
}

func (s *scriptedRand) IntN(n int) int {
	s.t.Helper()
	s.bounds = append(s.bounds, n)
	if len(s.vals) == 0 {
		s.t.Fatalf("unexpected IntN(%d): script exhausted", n)
		return 0
	}
	v := s.vals[0]
	s.vals = s.vals[1:]
	if v < 0 || v >= n {
		s.t.Fatalf("scripted value %d out of [0,%d)", v, n)
	}
	return v
}

func setup(t *testing.T, vals ...int) (*Router, *clock.Fake, *scriptedRand) {
	t.Helper()
	clk := clock.NewFake(t0)
	rnd := &scriptedRand{t: t, vals: vals}
	return New(Options{Clock: clk, Rand: rnd}), clk, rnd
}

func route(t *testing.T, r *Router, s xjob.RouteStrategy, jobID int64, addrs []string) string {
	t.Helper()
	res, err := r.Route(context.Background(), s, jobID, addrs)
	if err != nil {
		t.Fatalf("Route(%s, %d, %v): %v", s, jobID, addrs, err)
	}
	return res.Address
}

var abc = []string{"http://a:9999/", "http://b:9999/", "http://c:9999/"}

func TestSimpleStrategies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		strategy xjob.RouteStrategy
		addrs    []string
		rand     []int
		want     string
	}{
		{xjob.RouteFirst, abc, nil, abc[0]},
		{xjob.RouteFirst, abc[2:], nil, abc[2]},
		{xjob.RouteLast, abc, nil, abc[2]},
		{xjob.RouteLast, abc[:1], nil, abc[0]},
		{xjob.RouteRandom, abc, []int{0}, abc[0]},
		{xjob.RouteRandom, abc, []int{2}, abc[2]},
		{xjob.RouteRandom, abc[:1], []int{0}, abc[0]},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d/%v", tt.strategy, len(tt.addrs), tt.rand), func(t *testing.T) {
			t.Parallel()
			r, _, rnd := setup(t, tt.rand...)
			if got := route(t, r, tt.strategy, 1, tt.addrs); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if tt.strategy == xjob.RouteRandom && (len(rnd.bounds) != 1 || rnd.bounds[0] != len(tt.addrs)) {
				t.Errorf("RANDOM drew with bounds %v, want [%d]", rnd.bounds, len(tt.addrs))
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	r, _, _ := setup(t)
	tests := []struct {
		strategy xjob.RouteStrategy
		addrs    []string
		want     error
	}{
		{xjob.RouteShardingBroadcast, abc, ErrBroadcast},
		{xjob.RouteShardingBroadcast, nil, ErrBroadcast},
		{"NEAREST", abc, ErrUnknownStrategy},
		{"", abc, ErrUnknownStrategy},
		{xjob.RouteFailover, abc, ErrNoProber},
		{xjob.RouteBusyover, abc, ErrNoProber},
	}
	for _, s := range xjob.RouteStrategies {
		if s != xjob.RouteShardingBroadcast {
			tests = append(tests, struct {
				strategy xjob.RouteStrategy
				addrs    []string
				want     error
			}{s, nil, ErrNoAddress})
		}
	}
	for _, tt := range tests {
		res, err := r.Route(context.Background(), tt.strategy, 1, tt.addrs)
		if !errors.Is(err, tt.want) {
			t.Errorf("Route(%q, %v) error = %v, want %v", tt.strategy, tt.addrs, err, tt.want)
		}
		if res.Address != "" {
			t.Errorf("Route(%q, %v) address = %q on error", tt.strategy, tt.addrs, res.Address)
		}
	}
}

func TestRound(t *testing.T) {
	t.Parallel()
	r, clk, rnd := setup(t, 98, 5, 0)
	// Job 1 starts at 98: 98%3=2, then 99%3=0, 100%3=1, 101%3=2.
	for i, want := range []string{abc[2], abc[0], abc[1], abc[2]} {
		if got := route(t, r, xjob.RouteRound, 1, abc); got != want {
			t.Errorf("job 1 call %d: got %s, want %s", i, got, want)
		}
	}
	// Job 2 has its own counter: 5%2=1, 6%2=0. The list may change size.
	if got := route(t, r, xjob.RouteRound, 2, abc[:2]); got != abc[1] {
		t.Errorf("job 2: got %s, want %s", got, abc[1])
	}
	if got := route(t, r, xjob.RouteRound, 2, abc[:2]); got != abc[0] {
		t.Errorf("job 2: got %s, want %s", got, abc[0])
	}
	if want := []int{100, 100}; fmt.Sprint(rnd.bounds) != fmt.Sprint(want) {
		t.Errorf("bounds = %v, want %v", rnd.bounds, want)
	}
	// Job 1 counter is 101 → 102%3=0; past 1,000,000 it restarts at random (0).
	if got := route(t, r, xjob.RouteRound, 1, abc); got != abc[0] {
		t.Errorf("job 1: got %s, want %s", got, abc[0])
	}
	r.round.m[1] = 1_000_000 // not yet past: +1
	if got := route(t, r, xjob.RouteRound, 1, abc); got != abc[1_000_001%3] {
		t.Errorf("at 1,000,000: got %s", got)
	}
	if got := route(t, r, xjob.RouteRound, 1, abc); got != abc[0] || r.round.m[1] != 0 {
		t.Errorf("past 1,000,000: got %s counter %d, want restart at 0", got, r.round.m[1])
	}
	// The state lives 24 h: at exactly 24 h it is kept, just after it is dropped.
	clk.Advance(24 * time.Hour)
	if got := route(t, r, xjob.RouteRound, 1, abc); got != abc[1] {
		t.Errorf("at 24h: got %s, want %s (counter kept)", got, abc[1])
	}
	clk.Advance(time.Millisecond)
	rnd.vals = []int{42}
	if got := route(t, r, xjob.RouteRound, 1, abc); got != abc[0] {
		t.Errorf("after 24h: got %s, want %s (counter restarted at 42)", got, abc[0])
	}
	if len(r.round.m) != 1 {
		t.Errorf("after reset %d counters kept, want only job 1's", len(r.round.m))
	}
}

func TestLeastFrequentlyUsed(t *testing.T) {
	t.Parallel()
	r, clk, rnd := setup(t, 2, 0, 1)
	// Initial counts a=2 b=0 c=1 → b, then b=1,c=1 tie → b (first in list), then c.
	want := []string{abc[1], abc[1], abc[2], abc[0], abc[1], abc[2]}
	for i, w := range want {
		if got := route(t, r, xjob.RouteLeastFrequentlyUsed, 1, abc); got != w {
			t.Errorf("call %d: got %s, want %s (counts %v)", i, got, w, r.lfu.m[1])
		}
	}
	if fmt.Sprint(rnd.bounds) != "[3 3 3]" {
		t.Errorf("bounds = %v, want [3 3 3]", rnd.bounds)
	}
	// Counts are now a=3 b=3 c=3. A new address d starts at random in
	// [0,3), the size of the new list; c vanishes.
	d := "http://d:9999/"
	rnd.vals = []int{2}
	list := []string{abc[0], abc[1], d}
	if got := route(t, r, xjob.RouteLeastFrequentlyUsed, 1, list); got != d {
		t.Errorf("new address: got %s, want %s", got, d)
	}
	if _, ok := r.lfu.m[1][abc[2]]; ok || len(r.lfu.m[1]) != 3 {
		t.Errorf("vanished address kept: %v", r.lfu.m[1])
	}
	// A count past 1,000,000 is re-randomised.
	r.lfu.m[1][abc[0]] = 1_000_001
	rnd.vals = []int{0}
	if got := route(t, r, xjob.RouteLeastFrequentlyUsed, 1, list); got != abc[0] {
		t.Errorf("restarted count: got %s, want %s", got, abc[0])
	}
	// Another job has its own counts.
	rnd.vals = []int{1, 0}
	if got := route(t, r, xjob.RouteLeastFrequentlyUsed, 2, abc[:2]); got != abc[1] {
		t.Errorf("job 2: got %s, want %s", got, abc[1])
	}
	// Dropped after 24 h.
	clk.Advance(24*time.Hour + time.Second)
	rnd.vals = []int{0, 0, 0}
	if got := route(t, r, xjob.RouteLeastFrequentlyUsed, 1, abc); got != abc[0] {
		t.Errorf("after reset: got %s, want %s", got, abc[0])
	}
	if len(r.lfu.m) != 1 {
		t.Errorf("after reset %d jobs kept", len(r.lfu.m))
	}
}

func TestLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	r, clk, rnd := setup(t)
	d := "http://d:9999/"
	steps := []struct {
		addrs []string
		want  string
	}{
		{abc, abc[0]},
		{abc, abc[1]},
		{abc, abc[2]},
		{abc, abc[0]},
		// d is new: appended after the current order b, c, a.
		{append(abc[:3:3], d), abc[1]},
		{append(abc[:3:3], d), abc[2]},
		{append(abc[:3:3], d), abc[0]},
		// a vanishes (order was d, b, c, a) → d.
		{[]string{abc[1], abc[2], d}, d},
		{[]string{abc[1], abc[2], d}, abc[1]},
		// list order does not matter for known addresses (order c, d, b).
		{[]string{d, abc[2], abc[1]}, abc[2]},
		// a returns: appended at the newest end (order d, b, c, a).
		{[]string{abc[0], abc[1], abc[2], d}, d},
		{[]string{abc[0], abc[1], abc[2], d}, abc[1]},
		{[]string{abc[0], abc[1], abc[2], d}, abc[2]},
		{[]string{abc[0], abc[1], abc[2], d}, abc[0]},
	}
	for i, s := range steps {
		if got := route(t, r, xjob.RouteLeastRecentlyUsed, 1, s.addrs); got != s.want {
			t.Fatalf("step %d: got %s, want %s (order %v)", i, got, s.want, r.lru.m[1])
		}
	}
	if got := route(t, r, xjob.RouteLeastRecentlyUsed, 2, abc); got != abc[0] {
		t.Errorf("job 2: got %s, want %s", got, abc[0])
	}
	clk.Advance(25 * time.Hour)
	if got := route(t, r, xjob.RouteLeastRecentlyUsed, 1, abc); got != abc[0] {
		t.Errorf("after reset: got %s, want %s", got, abc[0])
	}
	if len(r.lru.m) != 1 {
		t.Errorf("after reset %d jobs kept", len(r.lru.m))
	}
	if len(rnd.bounds) != 0 {
		t.Errorf("LRU drew random numbers: %v", rnd.bounds)
	}
}

// prober is a scripted executor fleet: each address answers with its ReturnT.
type prober struct {
	mu      sync.Mutex
	replies map[string]protocol.ReturnT
	calls   []string
	cancel  context.CancelFunc // called on the first probe, when set
}

func (p *prober) answer(kind, addr string) protocol.ReturnT {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, kind+" "+addr)
	if p.cancel != nil {
		p.cancel()
	}
	if r, ok := p.replies[addr]; ok {
		return r
	}
	return protocol.Fail("xxl-job remoting error(connection refused), for url : " + addr + "beat")
}

func (p *prober) Beat(_ context.Context, addr string) protocol.ReturnT { return p.answer("beat", addr) }

func (p *prober) IdleBeat(_ context.Context, addr string, jobID int64) protocol.ReturnT {
	return p.answer(fmt.Sprintf("idleBeat(%d)", jobID), addr)
}

func TestFailoverBusyover(t *testing.T) {
	t.Parallel()
	busy := protocol.Fail(protocol.MsgJobBusy)
	tests := []struct {
		name      string
		strategy  xjob.RouteStrategy
		replies   map[string]protocol.ReturnT
		want      string
		wantErr   error
		wantCalls []string
		wantTrail string
	}{
		{
			name: "failover first alive", strategy: xjob.RouteFailover,
			replies:   map[string]protocol.ReturnT{abc[0]: protocol.OK(), abc[1]: protocol.OK()},
			want:      abc[0],
			wantCalls: []string{"beat " + abc[0]},
			wantTrail: "Heartbeats：<br>address：http://a:9999/<br>code：200<br>msg：null",
		},
		{
			name: "failover skips dead", strategy: xjob.RouteFailover,
			replies:   map[string]protocol.ReturnT{abc[2]: protocol.OK()},
			want:      abc[2],
			wantCalls: []string{"beat " + abc[0], "beat " + abc[1], "beat " + abc[2]},
			wantTrail: "Heartbeats：<br>address：http://a:9999/<br>code：500<br>msg：xxl-job remoting error(connection refused), for url : http://a:9999/beat" +
				"<br><br>Heartbeats：<br>address：http://b:9999/<br>code：500<br>msg：xxl-job remoting error(connection refused), for url : http://b:9999/beat" +
				"<br><br>Heartbeats：<br>address：http://c:9999/<br>code：200<br>msg：null",
		},
		{
			name: "failover all dead", strategy: xjob.RouteFailover,
			wantErr:   ErrProbeFailed,
			wantCalls: []string{"beat " + abc[0], "beat " + abc[1], "beat " + abc[2]},
			wantTrail: "Heartbeats：<br>address：http://a:9999/<br>code：500<br>msg：xxl-job remoting error(connection refused), for url : http://a:9999/beat" +
				"<br><br>Heartbeats：<br>address：http://b:9999/<br>code：500<br>msg：xxl-job remoting error(connection refused), for url : http://b:9999/beat" +
				"<br><br>Heartbeats：<br>address：http://c:9999/<br>code：500<br>msg：xxl-job remoting error(connection refused), for url : http://c:9999/beat",
		},
		{
			name: "busyover skips busy", strategy: xjob.RouteBusyover,
			replies:   map[string]protocol.ReturnT{abc[0]: busy, abc[1]: protocol.OK(), abc[2]: protocol.OK()},
			want:      abc[1],
			wantCalls: []string{"idleBeat(7) " + abc[0], "idleBeat(7) " + abc[1]},
			wantTrail: "Idle check：<br>address：http://a:9999/<br>code：500<br>msg：job thread is running or has trigger queue." +
				"<br><br>Idle check：<br>address：http://b:9999/<br>code：200<br>msg：null",
		},
		{
			name: "busyover all busy", strategy: xjob.RouteBusyover,
			replies:   map[string]protocol.ReturnT{abc[0]: busy, abc[1]: busy, abc[2]: busy},
			wantErr:   ErrProbeFailed,
			wantCalls: []string{"idleBeat(7) " + abc[0], "idleBeat(7) " + abc[1], "idleBeat(7) " + abc[2]},
			wantTrail: "Idle check：<br>address：http://a:9999/<br>code：500<br>msg：job thread is running or has trigger queue." +
				"<br><br>Idle check：<br>address：http://b:9999/<br>code：500<br>msg：job thread is running or has trigger queue." +
				"<br><br>Idle check：<br>address：http://c:9999/<br>code：500<br>msg：job thread is running or has trigger queue.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := &prober{replies: tt.replies}
			r := New(Options{Clock: clock.NewFake(t0), Prober: p})
			res, err := r.Route(context.Background(), tt.strategy, 7, abc)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if res.Address != tt.want {
				t.Errorf("address = %q, want %q", res.Address, tt.want)
			}
			if res.Trail != tt.wantTrail {
				t.Errorf("trail =\n%s\nwant\n%s", res.Trail, tt.wantTrail)
			}
			if strings.Join(p.calls, ",") != strings.Join(tt.wantCalls, ",") {
				t.Errorf("calls = %v, want %v", p.calls, tt.wantCalls)
			}
		})
	}
}

func TestTrailIsEscaped(t *testing.T) {
	t.Parallel()
	p := &prober{replies: map[string]protocol.ReturnT{"http://x/": protocol.Fail("<script>alert(1)</script>")}}
	r := New(Options{Prober: p})
	res, err := r.Route(context.Background(), xjob.RouteBusyover, 1, []string{"http://x/"})
	if !errors.Is(err, ErrProbeFailed) {
		t.Fatalf("error = %v", err)
	}
	if strings.Contains(res.Trail, "<script>") || !strings.Contains(res.Trail, "&lt;script&gt;") {
		t.Errorf("trail not escaped: %s", res.Trail)
	}
}

func TestFailoverStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	p := &prober{cancel: cancel}
	r := New(Options{Prober: p})
	res, err := r.Route(ctx, xjob.RouteFailover, 1, abc)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if len(p.calls) != 1 || !strings.HasPrefix(res.Trail, "Heartbeats：<br>address：http://a:9999/") {
		t.Errorf("calls %v, trail %q: want one probe recorded", p.calls, res.Trail)
	}
}

func TestBroadcast(t *testing.T) {
	t.Parallel()
	if got := Broadcast(nil); len(got) != 0 {
		t.Errorf("Broadcast(nil) = %v", got)
	}
	got := Broadcast(abc)
	want := []Shard{{0, 3, abc[0]}, {1, 3, abc[1]}, {2, 3, abc[2]}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Broadcast = %v, want %v", got, want)
	}
	for _, tt := range []struct {
		addrs []string
		index int
		want  string
	}{
		{abc, 0, abc[0]}, {abc, 2, abc[2]}, {abc, 3, abc[0]}, {abc[:1], 5, abc[0]}, {abc, -1, abc[0]},
	} {
		if got, err := ShardAddress(tt.addrs, tt.index); err != nil || got != tt.want {
			t.Errorf("ShardAddress(%v, %d) = %q, %v; want %q", tt.addrs, tt.index, got, err, tt.want)
		}
	}
	if _, err := ShardAddress(nil, 0); !errors.Is(err, ErrNoAddress) {
		t.Errorf("ShardAddress(nil) error = %v, want ErrNoAddress", err)
	}
}

// TestConcurrent hammers one Router from many goroutines (run with -race)
// and checks that ROUND, LFU and LRU still balance exactly: their state
// changes under one lock, so n calls spread over k addresses differ by at
// most one per address.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	p := &prober{replies: map[string]protocol.ReturnT{abc[1]: protocol.OK()}}
	r := New(Options{Clock: clock.NewFake(t0), Prober: p})
	const workers, calls = 8, 300
	balanced := []xjob.RouteStrategy{xjob.RouteRound, xjob.RouteLeastRecentlyUsed}
	var mu sync.Mutex
	counts := map[xjob.RouteStrategy]map[string]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				s := xjob.RouteStrategies[(w+i)%len(xjob.RouteStrategies)]
				if s == xjob.RouteShardingBroadcast {
					s = xjob.RouteLeastFrequentlyUsed
				}
				res, err := r.Route(context.Background(), s, 1, abc)
				if err != nil {
					t.Errorf("%s: %v", s, err)
					return
				}
				if !contains(abc, res.Address) {
					t.Errorf("%s picked %q", s, res.Address)
				}
				mu.Lock()
				if counts[s] == nil {
					counts[s] = map[string]int{}
				}
				counts[s][res.Address]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, s := range balanced {
		lo, hi := 1<<30, 0
		for _, a := range abc {
			lo, hi = min(lo, counts[s][a]), max(hi, counts[s][a])
		}
		if hi-lo > 1 {
			t.Errorf("%s unbalanced under concurrency: %v", s, counts[s])
		}
	}
}
