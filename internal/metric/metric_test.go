package metric

import (
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
)

func TestSnapshot(t *testing.T) {
	t.Parallel()
	var m Metrics
	for range 98 {
		m.Trigger(true, 3*time.Millisecond)
	}
	m.Trigger(true, 40*time.Millisecond)
	m.Trigger(true, 2*time.Hour)
	m.Trigger(false, 0)
	// Unscheduled and misfire triggers count, but are not fire delays.
	m.TriggerOf("MANUAL", true, 0)
	m.TriggerOf("MISFIRE", true, 10*time.Minute)
	m.Result(200)
	m.Result(502)
	m.Duplicate()
	m.Drop()
	m.ScanTick(30*time.Millisecond, 1000)
	m.ScanTick(300*time.Millisecond, 1000)
	m.Misfire(StrategyDoNothing, 7)
	m.Misfire(StrategyFireOnceNow, 2)
	m.Misfire(StrategyDoNothing, 0)
	m.Collapse(3)
	s := m.Snapshot()
	// Quantiles interpolate within their bucket: p50 falls 50/98 into
	// (2 ms, 5 ms], p99 at the top of (20 ms, 50 ms].
	want := xjob.MetricsSnapshot{Triggers: 102, TriggerFailures: 1, Duplicates: 1, Dropped: 1, Successes: 1, Failures: 1,
		FireDelayP50: 3, FireDelayP99: 50, FireDelayAvg: 72003,
		ScanTicks: 2, ScanJobs: 2000, ScanTickP50: 50, ScanTickP99: 494,
		Misfired: xjob.MisfireCounts{DoNothing: 7, FireOnceNow: 2}, Collapsed: 3}
	if s != want {
		t.Fatalf("Snapshot = %+v, want %+v", s, want)
	}
	if s.Misfired.Total() != 9 {
		t.Errorf("Misfired.Total = %d, want 9", s.Misfired.Total())
	}
	var nilM *Metrics
	nilM.Trigger(true, time.Second) // must not panic
	nilM.Misfire(StrategyDoNothing, 1)
	nilM.Collapse(1)
	if nilM.Snapshot() != (xjob.MetricsSnapshot{}) {
		t.Fatal("nil metrics must snapshot to zero")
	}
}

// Per-job results are off by default and, on, bounded: jobs past the
// limit count together as "other".
func TestJobResultBounded(t *testing.T) {
	t.Parallel()
	var off Metrics
	off.JobResult(1, 200)
	if off.jobResults() != nil {
		t.Fatal("per-job results counted while off")
	}
	m := Metrics{PerJob: 2}
	for _, r := range []struct {
		job  int64
		code int
	}{{1, 200}, {2, 500}, {3, 200}, {4, 500}, {1, 500}} {
		m.JobResult(r.job, r.code)
	}
	got := m.jobResults()
	want := map[string][2]int64{"1": {1, 1}, "2": {1, 0}, "other": {1, 1}}
	if len(got) != len(want) {
		t.Fatalf("jobResults = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("job %s: %v, want %v", k, got[k], v)
		}
	}
}

// DrainJobs counts every job until DrainJobResults takes the counts, which
// start again from zero; nothing is lost to a concurrent result.
func TestDrainJobResults(t *testing.T) {
	t.Parallel()
	m := Metrics{DrainJobs: true}
	m.JobResult(1, 200)
	m.JobResult(1, 500)
	m.JobResult(9, 200)
	got := m.DrainJobResults()
	if len(got) != 2 || got[1] != [2]int64{1, 1} || got[9] != [2]int64{0, 1} {
		t.Fatalf("first drain %v", got)
	}
	if again := m.DrainJobResults(); len(again) != 0 {
		t.Fatalf("second drain %v, want nothing", again)
	}
	var wg sync.WaitGroup
	total := int64(0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			for _, c := range m.DrainJobResults() {
				total += c[0] + c[1]
			}
		}
	}()
	for i := range 1000 {
		wg.Go(func() { m.JobResult(int64(i%7), 200) })
	}
	wg.Wait()
	<-done
	for _, c := range m.DrainJobResults() {
		total += c[0] + c[1]
	}
	if total != 1000 {
		t.Fatalf("drained %d results, want 1000", total)
	}
}
