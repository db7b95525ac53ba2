package harness

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/pkg/clock"
)

var lagT0 = time.Date(2026, 11, 28, 22, 0, 0, 0, time.UTC)

func TestLagEvery(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		rate   float64
		window time.Duration
		limit  int
		want   int
	}{
		{"W1 at 1000/s for 20 s: 150 samples", 1000, 20 * time.Second, 150, 134},
		{"W5 at 100/min for 2 min", 100.0 / 60, 2 * time.Minute, 150, 2},
		{"fewer results than samples: each", 2, 10 * time.Second, 150, 1},
		{"no results", 0, time.Minute, 150, 1},
		{"default limit", 1000, 20 * time.Second, 0, 134},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := LagEvery(c.rate, c.window, c.limit); got != c.want {
				t.Errorf("LagEvery(%v, %s, %d) = %d, want %d", c.rate, c.window, c.limit, got, c.want)
			}
		})
	}
}

// TestResultLagOffer samples every Every-th result of the callbacks that
// returned in the window, up to Limit, across requests.
func TestResultLagOffer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		every     int
		limit     int
		requests  [][]int64
		at        []time.Duration // each request's return, after lagT0
		want      []int64
		wantOffer int
	}{
		{"every 3rd across requests", 3, 10, [][]int64{{1, 2}, {3, 4, 5, 6, 7}}, []time.Duration{time.Second, 2 * time.Second},
			[]int64{1, 4, 7}, 7},
		{"limit", 1, 2, [][]int64{{1, 2, 3}}, []time.Duration{time.Second}, []int64{1, 2}, 3},
		{"before and after the window are not offered", 1, 10, [][]int64{{1}, {2}, {3}, {4}},
			[]time.Duration{-time.Millisecond, 0, 10*time.Second - time.Millisecond, 10 * time.Second}, []int64{2, 3}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := NewResultLag(ResultLagOptions{From: lagT0, To: lagT0.Add(10 * time.Second), Every: c.every, Limit: c.limit,
				Clock: clock.NewFake(lagT0)})
			for i, ids := range c.requests {
				r.Offer(ids, lagT0.Add(c.at[i]))
			}
			var got []int64
			for _, s := range r.pending {
				got = append(got, s.id)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("sampled %v, want %v", got, c.want)
			}
			if rep := r.Report(); rep.Offered != c.wantOffer || rep.Sampled != len(c.want) {
				t.Errorf("report offered %d sampled %d, want %d and %d", rep.Offered, rep.Sampled, c.wantOffer, len(c.want))
			}
		})
	}
}

// fakeLogs is the admin API's view for TestResultLagRun: a log shows its
// result from a time on (never when absent); reads fail while failing.
type fakeLogs struct {
	clk     *clock.Fake
	mu      sync.Mutex
	shownAt map[int64]time.Time
	failing bool
	reads   int
	read    chan int64 // when set, hears each read's id
}

func (f *fakeLogs) visible(_ context.Context, id int64) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.read != nil {
		f.read <- id
	}
	if f.failing {
		return false, errors.New("HTTP 500")
	}
	at, ok := f.shownAt[id]
	return ok && !f.clk.Now().Before(at), nil
}

// TestResultLagRun polls sampled logs on a fake clock: a result's lag is
// the time of the read that showed it after its callback returned; one
// that never shows is counted missed at its deadline, not dropped; Run
// ends once the window has closed and nothing is pending.
func TestResultLagRun(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(lagT0)
	logs := &fakeLogs{clk: clk, shownAt: map[int64]time.Time{
		1: lagT0,                              // shown when first read
		2: lagT0.Add(120 * time.Millisecond),  // shown on the 4th read, at 150 ms
		3: lagT0.Add(1000 * time.Millisecond), // shown at 1 s
		// 4 never shows
	}}
	r := NewResultLag(ResultLagOptions{From: lagT0, To: lagT0.Add(time.Second), Interval: 50 * time.Millisecond,
		Deadline: 2 * time.Second, Clock: clk})
	r.Offer([]int64{1, 2, 3, 4}, lagT0)
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background(), logs.visible) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := driveLag(ctx, clk, done, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	rep := r.Report()
	if rep.Sampled != 4 || rep.Missed != 1 || rep.Pending != 0 || rep.Visible.N != 3 {
		t.Fatalf("report %+v, want 4 sampled, 3 visible, 1 missed", rep)
	}
	if rep.Visible.P50 != 150 || rep.Visible.Max != 1000 {
		t.Errorf("visible p50 %v max %v ms, want 150 and 1000", rep.Visible.P50, rep.Visible.Max)
	}
	// One read per pending sample and interval: 4 at 0 ms, 3 at 50–150,
	// 2 at 200–1000, 1 at 1050–2000.
	if want := 4 + 3*3 + 2*17 + 1*20; logs.reads != want {
		t.Errorf("%d reads, want %d", logs.reads, want)
	}
}

// TestResultLagWaitsForSamples: Run reads nothing while nothing is
// sampled, takes a sample offered while it waits, and ends at the
// window's close once nothing is pending.
func TestResultLagWaitsForSamples(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(lagT0)
	logs := &fakeLogs{clk: clk, shownAt: map[int64]time.Time{1: lagT0}, read: make(chan int64, 1)}
	r := NewResultLag(ResultLagOptions{From: lagT0, To: lagT0.Add(time.Second), Clock: clk})
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background(), logs.visible) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.WaitForSleepers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.Offer([]int64{1}, lagT0)
	// Shown at the first read: Run then waits for the window's end again.
	select {
	case <-logs.read:
	case <-ctx.Done():
		t.Fatal("the offered sample was never read")
	}
	if err := clk.WaitForSleepers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not end at the window's close")
	}
	if rep := r.Report(); rep.Visible.N != 1 || rep.Visible.Max != 0 || logs.reads != 1 {
		t.Errorf("report %+v after %d reads, want one sample shown at its first read", rep, logs.reads)
	}
}

// TestResultLagReadErrors keeps reading a sample whose reads fail until
// its deadline, and reports the failures.
func TestResultLagReadErrors(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(lagT0)
	logs := &fakeLogs{clk: clk, shownAt: map[int64]time.Time{1: lagT0}, failing: true}
	r := NewResultLag(ResultLagOptions{From: lagT0, To: lagT0.Add(time.Second), Interval: 100 * time.Millisecond,
		Deadline: time.Second, Clock: clk})
	r.Offer([]int64{1}, lagT0)
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background(), logs.visible) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := driveLag(ctx, clk, done, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	rep := r.Report()
	if rep.Missed != 1 || rep.Errors == 0 || rep.LastErr == nil {
		t.Fatalf("report %+v, want the sample missed and its failed reads counted", rep)
	}
	if !strings.Contains(rep.String(), "reads failed (last: HTTP 500)") {
		t.Errorf("line %q does not report the failed reads", rep)
	}
}

func TestLagReportString(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		r    LagReport
		want string
	}{
		{"queued", LagReport{Visible: Durations{N: 150, P50: 1234, P99: 2100, Max: 2400}, Sampled: 150, Offered: 20000,
			Deadline: 15 * time.Second, Queued: 400, Requests: 400},
			"result visible p50 1234 ms p99 2100 ms max 2400 ms (150 sampled of 20000, 0 not visible in 15s; all queued: 400 of 400 callback requests queued)"},
		{"direct with a miss", LagReport{Visible: Durations{N: 99, P50: 40, P99: 90, Max: 95}, Sampled: 100, Missed: 1, Offered: 200,
			Deadline: 15 * time.Second, Requests: 180},
			"result visible p50 40 ms p99 90 ms max 95 ms (100 sampled of 200, 1 not visible in 15s; all direct: 0 of 180 callback requests queued)"},
		{"mixed, still read", LagReport{Visible: Durations{N: 9, P50: 40, P99: 900, Max: 900}, Sampled: 10, Pending: 1, Offered: 10,
			Deadline: time.Second, Queued: 3, Requests: 10},
			"result visible p50 40 ms p99 900 ms max 900 ms (10 sampled of 10, 0 not visible in 1s, 1 still read at the end; paths mixed: 3 of 10 callback requests queued)"},
		{"nothing sampled", LagReport{Offered: 0}, "result visible: no result sampled (0 called back in the window)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := c.r.String(); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestResultPaths(t *testing.T) {
	t.Parallel()
	u := awsstack.Usage{
		Ops: map[string]map[string]awsstack.OpStat{
			"callback": {"sqs:SendMessageBatch": {Requests: 7, Entries: 9}, "dynamodb:UpdateItem": {Requests: 3}},
			"dispatch": {"sqs:SendMessageBatch": {Requests: 50}},
		},
		Invokes: map[string]awsstack.InvokeStat{"callback": {Invocations: 10}, "dispatch": {Invocations: 99}},
	}
	if q, n := ResultPaths(u); q != 7 || n != 10 {
		t.Errorf("ResultPaths = %d queued of %d, want 7 of 10", q, n)
	}
}

// driveLag advances clk by step each time Run sleeps on it, until Run
// (done) returns.
func driveLag(ctx context.Context, clk *clock.Fake, done <-chan error, step time.Duration) error {
	for {
		wctx, cancel := context.WithCancel(ctx)
		slept := make(chan error, 1)
		go func() { slept <- clk.WaitForSleepers(wctx, 1) }()
		select {
		case err := <-done:
			cancel()
			return err
		case err := <-slept:
			cancel()
			if err != nil {
				return err
			}
			clk.Advance(step)
		}
	}
}
