package scan_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/scan"
	"github.com/xjobdev/xjob/pkg/driver"
)

// advanceLog is a job store that records, per shard and clock second,
// how many advances each JobAdvanceMany call started.
type advanceLog struct {
	driver.JobStore
	e      env
	mu     sync.Mutex
	counts map[[2]int64]int // {shard, second} → advances
	jobs   map[int64]int    // job → advances
}

func newAdvanceLog(e env) *advanceLog {
	return &advanceLog{JobStore: e.db, e: e, counts: map[[2]int64]int{}, jobs: map[int64]int{}}
}

func (a *advanceLog) JobAdvanceMany(ctx context.Context, ps []driver.JobAdvanceParams) ([]error, error) {
	sec := a.e.clk.Now().Unix()
	a.mu.Lock()
	for _, p := range ps {
		a.counts[[2]int64{int64(fire.ShardOf(p.ID, shards)), sec}]++
		a.jobs[p.ID]++
	}
	a.mu.Unlock()
	return a.JobStore.JobAdvanceMany(ctx, ps)
}

// busiest is the most advances one shard started in one second.
func (a *advanceLog) busiest() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.counts {
		n = max(n, c)
	}
	return n
}

func (a *advanceLog) jobsAdvanced() []int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ids []int64
	for id := range a.jobs {
		ids = append(ids, id)
	}
	return ids
}

func (a *advanceLog) advanced() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.jobs)
}

// tickOnFakeClock runs one tick while moving the fake clock on whenever
// the tick waits for it (the pacer's chunks), and returns its stats.
func tickOnFakeClock(t *testing.T, e env, s *scan.Scanner) scan.Stats {
	t.Helper()
	ctx := context.Background()
	type result struct {
		st  scan.Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := s.Tick(ctx)
		done <- result{st, err}
	}()
	for {
		wctx, cancel := context.WithCancel(ctx)
		waiting := make(chan error, 1)
		go func() { waiting <- e.clk.WaitForSleepers(wctx, 1) }()
		select {
		case r := <-done:
			cancel()
			<-waiting
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.st
		case err := <-waiting:
			cancel()
			if err == nil {
				e.clk.Advance(10 * time.Millisecond)
			}
		}
	}
}

// The scan paces each shard's advances (Tunables.AdvanceRate): a tick that
// finds 300 jobs due at once advances every one of them, but no shard
// starts more than the rate plus one chunk in any second of the clock.
func TestAdvancesPacedPerShard(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const rate, n = 20, 300
	for range n {
		e.addJob(t, "1", t0.Add(time.Second), xjob.MisfireDoNothing)
	}
	rec := newAdvanceLog(e)
	s, err := scan.New(scan.Config{Jobs: rec, Leases: e.db, Queues: e.db, Clock: e.clk, Owner: "a",
		Tunables: scan.Tunables{Shards: shards, RingLead: 0, AdvanceRate: rate, TickBudget: 20 * time.Second, LeaseTTL: 45 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	st := tickOnFakeClock(t, e, s)
	if st.Jobs != n || st.Truncated || rec.advanced() != n {
		t.Fatalf("tick %+v advanced %d jobs, want all %d, not truncated", st, rec.advanced(), n)
	}
	if got, limit := rec.busiest(), rate+rate/10; got > limit {
		t.Fatalf("a shard started %d advances in one second, want ≤ %d", got, limit)
	}
	// The busier shard's jobs at 20 a second (the clock moves on only while
	// a shard waits, so shards working side by side may take longer on it),
	// within the budget.
	perShard := map[int]int{}
	for _, j := range rec.jobsAdvanced() {
		perShard[fire.ShardOf(j, shards)]++
	}
	least := time.Duration(max(perShard[0], perShard[1])-rate) * time.Second / rate
	if st.Duration < least || st.Duration > 20*time.Second {
		t.Fatalf("tick took %s on the clock, want %s to the 20 s budget (shards %v)", st.Duration, least, perShard)
	}
}

// A paced tick reads no more due jobs than it can advance within its
// budget (and so within its lease): the rest, due latest, wait for the
// next tick, which goes on from there; no job is left behind.
func TestPacedTickLeavesRestToNextTick(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const rate, n = 5, 150
	// All in shard 0: on the fake clock, which moves on only while a shard
	// waits, two shards working side by side could push each other's
	// chunks later than real time would.
	for i := 0; i < n; {
		j := e.addJob(t, "3600", t0.Add(100*time.Second+time.Duration(i)*time.Millisecond), xjob.MisfireDoNothing)
		if j.Shard == 0 {
			i++
		} else if err := e.db.JobDelete(context.Background(), j.ID); err != nil {
			t.Fatal(err)
		}
	}
	rec := newAdvanceLog(e)
	s, err := scan.New(scan.Config{Jobs: rec, Leases: e.db, Queues: e.db, Clock: e.clk, Owner: "a",
		Tunables: scan.Tunables{Shards: shards, RingLead: 0, PreRead: 120 * time.Second, AdvanceRate: rate,
			TickBudget: 10 * time.Second, LeaseTTL: 45 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	st := tickOnFakeClock(t, e, s)
	// The budget's worth, 5 × 10 s, and the one the last chunk's slot
	// leaves room for.
	if !st.Truncated || st.Jobs != rate*10+1 || rec.advanced() != st.Jobs {
		t.Fatalf("first tick %+v advanced %d, want %d jobs read and advanced (the budget's worth), truncated",
			st, rec.advanced(), rate*10+1)
	}
	if st.Duration > 10*time.Second {
		t.Fatalf("first tick took %s, past its 10 s budget", st.Duration)
	}
	if got := rec.busiest(); got > rate+1 {
		t.Fatalf("a shard started %d advances in one second, want ≤ %d", got, rate+1)
	}
	for tick := 2; rec.advanced() < n && tick < 10; tick++ {
		e.clk.Advance(time.Second)
		tickOnFakeClock(t, e, s)
	}
	if rec.advanced() != n {
		t.Fatalf("advanced %d of %d jobs after the following ticks", rec.advanced(), n)
	}
	e.clk.Set(t0.Add(time.Hour))
	items := e.drainRing(t)
	perJob := map[int64]int{}
	for _, it := range items {
		perJob[it.JobID]++
	}
	if len(perJob) != n {
		t.Fatalf("%d jobs had their fire pushed, want %d", len(perJob), n)
	}
	for id, c := range perJob {
		if c != 1 {
			t.Fatalf("job %d's fire pushed %d times", id, c)
		}
	}
}
