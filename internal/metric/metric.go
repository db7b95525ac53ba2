// Package metric counts what the scheduler does — triggers, results, fire
// delay, scan ticks, and the fire times it passed over because it fell
// behind (misfired per strategy, collapsed) — so that an operator (and the
// benchmarks) can see it without reading logs. Counters are lock-free and
// the latency histograms are client_golang's; a Snapshot is cheap enough to
// serve on every scrape, and Handler serves the same figures in the
// Prometheus text format (prometheus.go).
//
// Counters are per process and start at zero, as Prometheus expects of a
// counter (rate() and increase() handle the reset; process_start_time_seconds
// dates it). The fire-delay histogram holds scheduled CRON fires only:
// manual triggers have no schedule to be late against, and misfire
// catch-ups, minutes late after a restart, have their own counter. Snapshot
// percentiles are interpolated within a bucket, as Prometheus'
// histogram_quantile does, so a few late fires do not read as the bucket's
// upper bound.
package metric

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/xjobdev/xjob"
)

// delayBounds are the upper bounds (inclusive) of the fire-delay buckets.
var delayBounds = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond,
	20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, time.Minute,
}

// callbackBounds are the upper bounds of the callback-latency buckets:
// from a trigger to its result, so up to the longest runs.
var callbackBounds = []time.Duration{
	10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute,
	15 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour,
}

// TriggerTypes are the trigger types counted apart (the xjob.TriggerType
// values, as the strings the Prometheus labels carry). Any other counts as "".
var TriggerTypes = []string{"CRON", "MISFIRE", "MANUAL", "API", "RETRY", "PARENT"}

// histograms are the latency histograms of one Metrics, built on first
// use so that the zero Metrics is ready to use.
type histograms struct {
	delay, scanTick, callback prometheus.Histogram
}

func newHistograms() histograms {
	h := func(name, help string, bounds []time.Duration) prometheus.Histogram {
		buckets := make([]float64, len(bounds))
		for i, b := range bounds {
			buckets[i] = b.Seconds()
		}
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	}
	return histograms{
		delay: h("xjob_fire_delay_seconds",
			"How late scheduled (CRON) triggers reached the executor against their fire time.", delayBounds),
		scanTick: h("xjob_scan_tick_duration_seconds",
			"Duration of one scan tick over every shard this process holds.", delayBounds),
		callback: h("xjob_callback_latency_seconds",
			"Time from a trigger to its recorded result (the run plus its callback).", callbackBounds),
	}
}

// observe records d, in seconds; a negative duration (a clock step)
// counts as 0.
func observe(h prometheus.Histogram, d time.Duration) {
	h.Observe(max(d, 0).Seconds())
}

// load reads h back as per-bucket (not cumulative) counts over bounds,
// plus one for above the last bound, their total and the sum in seconds.
func load(h prometheus.Histogram, bounds []time.Duration) (counts []int64, total int64, sum float64) {
	var pb dto.Metric
	if err := h.Write(&pb); err != nil {
		return make([]int64, len(bounds)+1), 0, 0 // a plain histogram's Write never fails
	}
	ph := pb.GetHistogram()
	counts = make([]int64, len(bounds)+1)
	var below uint64
	for i, b := range ph.GetBucket() {
		if i < len(bounds) {
			counts[i] = int64(b.GetCumulativeCount() - below)
			below = b.GetCumulativeCount()
		}
	}
	total = int64(ph.GetSampleCount())
	counts[len(bounds)] = total - int64(below)
	return counts, total, ph.GetSampleSum()
}

// Metrics is one process's counters. The zero value is ready to use; a nil
// *Metrics ignores every call, so services need not check for one.
type Metrics struct {
	Triggers        atomic.Int64       // executor /run calls answered 200
	TriggerFailures atomic.Int64       // triggers that failed (no address, executor refused, transport)
	Duplicates      atomic.Int64       // occurrences dropped as already triggered
	Dropped         atomic.Int64       // occurrences dropped as stale (job stopped, edited, deleted)
	Successes       atomic.Int64       // results with handle code 200
	Failures        atomic.Int64       // results with any other handle code
	byType          [7][2]atomic.Int64 // TriggerTypes (+ other) × failed, ok
	scanTicks       atomic.Int64
	scanJobs        atomic.Int64
	misfiredNothing atomic.Int64
	misfiredOnce    atomic.Int64
	collapsed       atomic.Int64
	lost            atomic.Int64

	// PerJob, when above 0, counts results per job for at most that many
	// jobs (the first seen), the others together as job "other": the
	// label's cardinality stays bounded whatever the number of jobs.
	// Set before use.
	PerJob int
	// DrainJobs, set instead of PerJob, counts every job's results until
	// DrainJobResults takes them: for an owner that bounds the label
	// itself, across processes (the Lambda functions, whose environments
	// share one bound). Set before use.
	DrainJobs bool
	jobMu     sync.Mutex
	jobs      map[int64]*[2]atomic.Int64 // failed, ok
	jobRest   [2]atomic.Int64

	histOnce sync.Once
	hist     histograms // through hists
}

// hists returns m's histograms, building them on first use.
func (m *Metrics) hists() *histograms {
	m.histOnce.Do(func() { m.hist = newHistograms() })
	return &m.hist
}

// JobResult records one result of job (handle code) when PerJob is set.
func (m *Metrics) JobResult(job int64, code int) {
	if m == nil || m.PerJob <= 0 && !m.DrainJobs {
		return
	}
	ok := 0
	if code == 200 {
		ok = 1
	}
	m.jobMu.Lock()
	c, tracked := m.jobs[job]
	if !tracked && (len(m.jobs) < m.PerJob || m.DrainJobs) {
		if m.jobs == nil {
			m.jobs = map[int64]*[2]atomic.Int64{}
		}
		c = &[2]atomic.Int64{}
		m.jobs[job] = c
	}
	if c == nil {
		c = &m.jobRest
	}
	c[ok].Add(1) // under the lock: DrainJobResults takes the map whole
	m.jobMu.Unlock()
}

// jobResults returns the per-job counts: job id (or "other") → failed, ok.
func (m *Metrics) jobResults() map[string][2]int64 {
	m.jobMu.Lock()
	defer m.jobMu.Unlock()
	if m.PerJob <= 0 {
		return nil
	}
	out := make(map[string][2]int64, len(m.jobs)+1)
	for id, c := range m.jobs {
		out[strconv.FormatInt(id, 10)] = [2]int64{c[0].Load(), c[1].Load()}
	}
	out["other"] = [2]int64{m.jobRest[0].Load(), m.jobRest[1].Load()}
	return out
}

// DrainJobResults returns the results counted per job since the last call
// (job id → failed, ok) and forgets them (DrainJobs).
func (m *Metrics) DrainJobResults() map[int64][2]int64 {
	if m == nil {
		return nil
	}
	m.jobMu.Lock()
	jobs := m.jobs
	m.jobs = nil
	m.jobMu.Unlock()
	out := make(map[int64][2]int64, len(jobs))
	for id, c := range jobs {
		out[id] = [2]int64{c[0].Load(), c[1].Load()}
	}
	return out
}

// Lost records a run marked failed because its executor went away before
// its result arrived (the callback was lost).
func (m *Metrics) Lost() {
	if m != nil {
		m.lost.Add(1)
	}
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

// Trigger records one trigger attempt of a scheduled fire on time or late
// within the threshold (a CRON trigger); delay is how late it was against
// its scheduled fire time.
func (m *Metrics) Trigger(ok bool, delay time.Duration) { m.TriggerOf("CRON", ok, delay) }

// TriggerOf records one trigger attempt of trigger type typ. Only a
// successful CRON trigger feeds the fire-delay histogram: other types have
// no schedule to be late against, and a MISFIRE trigger is counted by
// Misfire instead.
func (m *Metrics) TriggerOf(typ string, ok bool, delay time.Duration) {
	if m == nil {
		return
	}
	i := slices.Index(TriggerTypes, typ)
	if i < 0 {
		i = len(TriggerTypes)
	}
	if !ok {
		m.TriggerFailures.Add(1)
		m.byType[i][0].Add(1)
		return
	}
	m.Triggers.Add(1)
	m.byType[i][1].Add(1)
	if typ == "CRON" {
		observe(m.hists().delay, delay)
	}
}

// CallbackLatency records how long a run took from its trigger to its
// recorded result.
func (m *Metrics) CallbackLatency(d time.Duration) {
	if m == nil {
		return
	}
	observe(m.hists().callback, d)
}

// ScanTick records one scan tick: how long it took and how many due jobs
// it read. A tick must stay well under a second for fires to be on time.
func (m *Metrics) ScanTick(took time.Duration, jobs int) {
	if m == nil {
		return
	}
	m.scanTicks.Add(1)
	m.scanJobs.Add(int64(jobs))
	observe(m.hists().scanTick, took)
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

// Snapshot copies the counters, in the shape GET /v1/metrics serves.
func (m *Metrics) Snapshot() xjob.MetricsSnapshot {
	if m == nil {
		return xjob.MetricsSnapshot{}
	}
	s := xjob.MetricsSnapshot{
		Triggers: m.Triggers.Load(), TriggerFailures: m.TriggerFailures.Load(), Duplicates: m.Duplicates.Load(),
		Dropped: m.Dropped.Load(), Successes: m.Successes.Load(), Failures: m.Failures.Load(),
	}
	h := m.hists()
	counts, total, sum := load(h.delay, delayBounds)
	if total > 0 {
		s.FireDelayAvg = int64(sum * 1000 / float64(total))
	}
	s.FireDelayP50 = quantile(delayBounds, counts, total, 0.50)
	s.FireDelayP99 = quantile(delayBounds, counts, total, 0.99)
	ticks, nTicks, _ := load(h.scanTick, delayBounds)
	s.ScanTicks, s.ScanJobs = m.scanTicks.Load(), m.scanJobs.Load()
	s.ScanTickP50 = quantile(delayBounds, ticks, nTicks, 0.50)
	s.ScanTickP99 = quantile(delayBounds, ticks, nTicks, 0.99)
	s.Misfired = xjob.MisfireCounts{DoNothing: m.misfiredNothing.Load(), FireOnceNow: m.misfiredOnce.Load()}
	s.Collapsed = m.collapsed.Load()
	return s
}

// quantile estimates quantile q in milliseconds from bucket counts by
// linear interpolation within the bucket holding it (Prometheus'
// histogram_quantile); a quantile above the last bound is that bound.
func quantile(bounds []time.Duration, counts []int64, total int64, q float64) int64 {
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var seen int64
	for i, c := range counts {
		if c == 0 || float64(seen+c) < rank {
			seen += c
			continue
		}
		if i == len(bounds) {
			return bounds[len(bounds)-1].Milliseconds()
		}
		var lower time.Duration
		if i > 0 {
			lower = bounds[i-1]
		}
		frac := (rank - float64(seen)) / float64(c)
		return (lower + time.Duration(frac*float64(bounds[i]-lower))).Milliseconds()
	}
	return bounds[len(bounds)-1].Milliseconds()
}
