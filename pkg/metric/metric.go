// Package metric counts what the scheduler does — triggers, results, fire
// delay, scan ticks, and the fire times it passed over because it fell
// behind (misfired per strategy, collapsed) — so that an operator (and the
// benchmarks) can see it without reading logs. Counters are lock-free; a Snapshot is cheap enough to serve
// on every scrape.
package metric

import (
	"sync/atomic"
	"time"
)

// delayBounds are the upper bounds (inclusive) of the fire-delay buckets.
var delayBounds = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond,
	20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, time.Minute,
}

// Metrics is one process's counters. The zero value is ready to use; a nil
// *Metrics ignores every call, so services need not check for one.
type Metrics struct {
	Triggers        atomic.Int64 // executor /run calls answered 200
	TriggerFailures atomic.Int64 // triggers that failed (no address, executor refused, transport)
	Duplicates      atomic.Int64 // occurrences dropped as already triggered
	Dropped         atomic.Int64 // occurrences dropped as stale (job stopped, edited, deleted)
	Successes       atomic.Int64 // results with handle code 200
	Failures        atomic.Int64 // results with any other handle code
	delay           [15]atomic.Int64
	delaySum        atomic.Int64 // ms
	scanTicks       atomic.Int64
	scanJobs        atomic.Int64
	scanTick        [15]atomic.Int64
	misfiredNothing atomic.Int64
	misfiredOnce    atomic.Int64
	collapsed       atomic.Int64
}

// Misfire strategies as xxl-job names them (the xjob.MisfireStrategy
// values; this package stays below the domain).
const (
	StrategyDoNothing   = "DO_NOTHING"
	StrategyFireOnceNow = "FIRE_ONCE_NOW"
)

// Misfire records fires: scheduled times found more than the misfire
// threshold late because the scheduler fell behind, under the job's misfire
// strategy: DO_NOTHING drops them all, FIRE_ONCE_NOW fires one of them once.
func (m *Metrics) Misfire(strategy string, fires int) {
	if m == nil || fires <= 0 {
		return
	}
	if strategy == StrategyFireOnceNow {
		m.misfiredOnce.Add(int64(fires))
	} else {
		m.misfiredNothing.Add(int64(fires))
	}
}

// Collapse records scheduled times that were late within the misfire
// threshold and were folded into the one late fire before them (xxl-job
// fires a late job once and recomputes from now).
func (m *Metrics) Collapse(fires int) {
	if m != nil && fires > 0 {
		m.collapsed.Add(int64(fires))
	}
}

// Trigger records one trigger attempt; delay is how late it was against
// its scheduled fire time (0 for unscheduled triggers).
func (m *Metrics) Trigger(ok bool, delay time.Duration) {
	if m == nil {
		return
	}
	if !ok {
		m.TriggerFailures.Add(1)
		return
	}
	m.Triggers.Add(1)
	if delay < 0 {
		delay = 0
	}
	m.delay[bucket(delay)].Add(1)
	m.delaySum.Add(delay.Milliseconds())
}

// ScanTick records one scan tick: how long it took and how many due jobs
// it read. A tick must stay well under a second for fires to be on time.
func (m *Metrics) ScanTick(took time.Duration, jobs int) {
	if m == nil {
		return
	}
	m.scanTicks.Add(1)
	m.scanJobs.Add(int64(jobs))
	m.scanTick[bucket(took)].Add(1)
}

// bucket returns the histogram bucket of d.
func bucket(d time.Duration) int {
	for j, b := range delayBounds {
		if d <= b {
			return j
		}
	}
	return len(delayBounds)
}

// Result records one executor result.
func (m *Metrics) Result(code int) {
	if m == nil {
		return
	}
	if code == 200 {
		m.Successes.Add(1)
	} else {
		m.Failures.Add(1)
	}
}

// Duplicate records an occurrence found already triggered.
func (m *Metrics) Duplicate() {
	if m != nil {
		m.Duplicates.Add(1)
	}
}

// Drop records a stale occurrence that was not triggered.
func (m *Metrics) Drop() {
	if m != nil {
		m.Dropped.Add(1)
	}
}

// Snapshot is a point-in-time copy of the counters, for JSON.
type Snapshot struct {
	Triggers        int64 `json:"triggers"`
	TriggerFailures int64 `json:"triggerFailures"`
	Duplicates      int64 `json:"duplicates"`
	Dropped         int64 `json:"dropped"`
	Successes       int64 `json:"successes"`
	Failures        int64 `json:"failures"`
	// FireDelayP50/P99 are upper bounds of the bucket holding that
	// quantile, in milliseconds (-1 when above the last bucket).
	FireDelayP50 int64 `json:"fireDelayP50Ms"`
	FireDelayP99 int64 `json:"fireDelayP99Ms"`
	FireDelayAvg int64 `json:"fireDelayAvgMs"`
	// ScanTicks counts scan ticks, ScanJobs the due jobs they read;
	// ScanTickP50/P99 bound the tick duration like the fire delay.
	ScanTicks   int64 `json:"scanTicks"`
	ScanJobs    int64 `json:"scanJobs"`
	ScanTickP50 int64 `json:"scanTickP50Ms"`
	ScanTickP99 int64 `json:"scanTickP99Ms"`
	// Misfired counts, per misfire strategy, the scheduled fire times that
	// were more than the misfire threshold late when the scan reached them
	// (xjob fell behind); Collapsed those late within the threshold that
	// were folded into one fire. Both are 0 on a scheduler that keeps up.
	Misfired  Misfired `json:"misfired"`
	Collapsed int64    `json:"collapsed"`
}

// Misfired is the misfired fire count per misfire strategy.
type Misfired struct {
	DoNothing   int64 `json:"DO_NOTHING"`
	FireOnceNow int64 `json:"FIRE_ONCE_NOW"`
}

// Total is the misfired fires of every strategy.
func (m Misfired) Total() int64 { return m.DoNothing + m.FireOnceNow }

// Snapshot copies the counters.
func (m *Metrics) Snapshot() Snapshot {
	if m == nil {
		return Snapshot{}
	}
	s := Snapshot{
		Triggers: m.Triggers.Load(), TriggerFailures: m.TriggerFailures.Load(), Duplicates: m.Duplicates.Load(),
		Dropped: m.Dropped.Load(), Successes: m.Successes.Load(), Failures: m.Failures.Load(),
	}
	var counts [15]int64
	var total int64
	for i := range counts {
		counts[i] = m.delay[i].Load()
		total += counts[i]
	}
	if total > 0 {
		s.FireDelayAvg = m.delaySum.Load() / total
	}
	s.FireDelayP50 = quantile(counts[:], total, 0.50)
	s.FireDelayP99 = quantile(counts[:], total, 0.99)
	var ticks [15]int64
	for i := range ticks {
		ticks[i] = m.scanTick[i].Load()
	}
	s.ScanTicks, s.ScanJobs = m.scanTicks.Load(), m.scanJobs.Load()
	s.ScanTickP50 = quantile(ticks[:], s.ScanTicks, 0.50)
	s.ScanTickP99 = quantile(ticks[:], s.ScanTicks, 0.99)
	s.Misfired = Misfired{DoNothing: m.misfiredNothing.Load(), FireOnceNow: m.misfiredOnce.Load()}
	s.Collapsed = m.collapsed.Load()
	return s
}

func quantile(counts []int64, total int64, q float64) int64 {
	if total == 0 {
		return 0
	}
	want := int64(float64(total)*q + 0.5)
	if want < 1 {
		want = 1
	}
	var seen int64
	for i, c := range counts {
		seen += c
		if seen >= want {
			if i < len(delayBounds) {
				return delayBounds[i].Milliseconds()
			}
			return -1
		}
	}
	return -1
}
