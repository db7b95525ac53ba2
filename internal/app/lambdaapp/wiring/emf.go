package wiring

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/pkg/clock"
)

// MetricNamespace is the CloudWatch namespace of xjob's pipeline metrics;
// every metric has one dimension, FunctionName (the Lambda function's
// name, as AWS/Lambda's own metrics), so alarms address them per stack.
// With XJOB_CUSTOM_METRICS each one is a custom metric CloudWatch bills
// monthly ($0.30): what AWS/Lambda's own metrics say (a scan tick
// completed: an invocation without an error) is not written again.
const MetricNamespace = "xjob"

// Pipeline metric names (CloudWatch, through the embedded metric format).
const (
	MetricScanJobs        = "ScanJobs"        // due jobs read
	MetricFires           = "Fires"           // occurrences planned (scan)
	MetricMisfires        = "Misfires"        // scheduled times found past the misfire threshold
	MetricLatenessMax     = "LatenessMaxMs"   // largest delay between an occurrence's time and its hand-off, per ring invocation
	MetricTriggers        = "Triggers"        // executor /run calls answered 200
	MetricTriggerFailures = "TriggerFailures" // triggers that failed
	MetricResults         = "Results"         // results recorded, success or not
	MetricResultFailures  = "ResultFailures"  // results with a failure code
	MetricLost            = "Lost"            // runs the lost-job check gave up on
)

// Per-job metric names, opt-in (XJOB_METRICS_PER_JOB): dimensions
// FunctionName and JobId, a job id for the first jobs of the deployment
// to report results (at most XJOB_METRICS_PER_JOB of them, the same for
// every environment: JobSlots), "other" for the rest together, as local
// mode's xjob_job_results_total{job}.
const (
	MetricJobResults        = "JobResults"        // results recorded for the job
	MetricJobResultFailures = "JobResultFailures" // of them, with a failure code
	// JobOther is the JobId of the jobs without their own metric.
	JobOther = "other"
)

// JobSlots says which jobs have their own per-job metric, one answer for
// the whole deployment (dynamostore.DB.MetricJobs): the first max jobs to
// ask get one, for good.
type JobSlots interface {
	MetricJobs(ctx context.Context, jobs []int64, max int) (map[int64]bool, error)
}

// EMF writes the pipeline's metric records, one JSON line each, to the
// function's log (stdout on Lambda). With CustomMetrics on, each carries
// the embedded-metric-format directive (_aws), and CloudWatch Logs turns
// it into metrics with no PutMetricData call, nothing to batch or retry,
// and no client in the function — each metric billed $0.30 a month. Off,
// the default, the records are the same values as plain log lines
// (stamped with a top-level Timestamp): CloudWatch creates no metric and
// bills none, and Logs Insights still sums them
// (stats sum(Triggers) by bin(1m)). No template alarm reads an xjob
// metric, so the default loses no alarm; the per-job metrics (PerJob)
// are an opt-in of their own and always carry the directive.
//
// The pipeline counters and per-job results are written in two steps:
// Collect, at the end of every invocation, adds what the invocation
// counted to the bucket of the current minute (memory only); Flush writes
// one record per minute bucket (and per job), stamped within its minute.
// A Lambda environment collects after each invocation and flushes on the
// run report's cadence (Base.FlushReports: once its oldest bucket is a
// minute old, and at shutdown), so a sparse schedule logs a record per
// environment and minute rather than one per invocation, and CloudWatch
// still sums every count into the minute it happened in — the metrics
// arrive up to a flush later, their values are the same.
type EMF struct {
	w     io.Writer
	fn    string
	clock clock.Clock
	// metrics says the pipeline records carry the metric directive
	// (CustomMetrics).
	metrics bool
	mu      sync.Mutex
	last    xjob.MetricsSnapshot // counters already collected (Collect)

	// Collected and not yet written (Flush), per minute (Unix minutes).
	counters map[int64]*counterBucket
	jobs     map[int64]map[int64][2]int64 // minute → job → (failed, ok)
	oldest   time.Time                    // when the oldest pending count was collected; zero with none

	// Per-job metrics (PerJob): the deployment's slots, their bound, and
	// the answers this environment already has (they never change).
	slots   JobSlots
	maxJobs int
	known   map[int64]bool
}

// counterBucket is one minute's growth of the pipeline counters, and the
// last time a count joined it (its records' timestamp).
type counterBucket struct {
	values map[string]float64
	at     time.Time
}

// PerJob turns on the per-job metrics (Jobs) for at most max jobs of the
// deployment, as slots decides.
func (e *EMF) PerJob(slots JobSlots, max int) {
	e.slots, e.maxJobs = slots, max
}

// NewEMF writes records for function fn (its FunctionName dimension) to
// w, as plain log lines until CustomMetrics turns the directives on.
func NewEMF(w io.Writer, fn string, clk clock.Clock) *EMF {
	return &EMF{w: w, fn: fn, clock: clk}
}

// CustomMetrics turns the pipeline records' metric directive on (or off):
// the deployment's XJOB_CUSTOM_METRICS. Call it before the first record.
func (e *EMF) CustomMetrics(on bool) {
	e.metrics = on
}

// Put writes one record of values (metric name → value); units are
// Milliseconds for names ending in Ms, Count otherwise. Zero values are
// left out, and a record with none is not written: CloudWatch bills each
// custom metric for every hour it receives a value ($0.30 a metric and
// month), so an idle deployment that wrote its zeros paid for metrics
// that say nothing (and, as plain lines, log ingestion for them). An alarm on a count treats the missing data as zero
// (TreatMissingData notBreaching, or FILL(m, 0) in metric math); the
// alarm that needs a value every minute (ScanStalledAlarm) reads
// AWS/Lambda's metrics, not these.
func (e *EMF) Put(values map[string]float64) {
	if e == nil {
		return
	}
	e.putAt(values, nil, e.clock.Now(), e.metrics)
}

// putAt writes one record of values, stamped at, with the dimensions
// FunctionName and, in this order, the names of dims; with directive, as
// an embedded-metric-format record, else as a plain log line with the
// same values.
func (e *EMF) putAt(values map[string]float64, dims [][2]string, at time.Time, directive bool) {
	if e == nil {
		return
	}
	values = nonZero(values)
	if len(values) == 0 {
		return
	}
	type metricDef struct{ Name, Unit string }
	var defs []metricDef
	rec := map[string]any{"FunctionName": e.fn}
	names := []string{"FunctionName"}
	for _, d := range dims {
		rec[d[0]] = d[1]
		names = append(names, d[0])
	}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		unit := "Count"
		if len(name) > 2 && name[len(name)-2:] == "Ms" {
			unit = "Milliseconds"
		}
		defs = append(defs, metricDef{name, unit})
		rec[name] = values[name]
	}
	if directive {
		rec["_aws"] = map[string]any{
			"Timestamp": at.UnixMilli(),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace": MetricNamespace, "Dimensions": [][]string{names}, "Metrics": defs,
			}},
		}
	} else {
		rec["Timestamp"] = at.UnixMilli()
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return // values are numbers and names strings: it always marshals
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.w.Write(append(b, '\n'))
}

// Collect adds the growth of m's pipeline counters since the last call
// (triggers, results, misfires) and, with PerJob, the results m counted
// per job (metric.Metrics.DrainJobs) to the current minute's buckets. It
// writes nothing (Flush does).
func (e *EMF) Collect(m *metric.Metrics) {
	if e == nil || m == nil {
		return
	}
	now := e.clock.Now()
	minute := now.Unix() / 60
	// Read under the lock: two collections at once (a shutdown during an
	// invocation) must not take their snapshots in one order and their
	// differences in the other.
	e.mu.Lock()
	defer e.mu.Unlock()
	s := m.Snapshot()
	var jobs map[int64][2]int64
	if e.slots != nil {
		jobs = m.DrainJobResults()
	}
	prev := e.last
	e.last = s
	d := map[string]float64{
		MetricTriggers:        float64(s.Triggers - prev.Triggers),
		MetricTriggerFailures: float64(s.TriggerFailures - prev.TriggerFailures),
		MetricResults:         float64(s.Successes + s.Failures - prev.Successes - prev.Failures),
		MetricResultFailures:  float64(s.Failures - prev.Failures),
		MetricMisfires:        float64(s.Misfired.Total() - prev.Misfired.Total()),
	}
	grew := false
	for _, v := range d {
		grew = grew || v != 0
	}
	if grew {
		if e.counters == nil {
			e.counters = map[int64]*counterBucket{}
		}
		b := e.counters[minute]
		if b == nil {
			b = &counterBucket{values: map[string]float64{}}
			e.counters[minute] = b
		}
		for k, v := range d {
			b.values[k] += v // zeros are dropped when written (putAt)
		}
		b.at = now
	}
	if len(jobs) > 0 {
		if e.jobs == nil {
			e.jobs = map[int64]map[int64][2]int64{}
		}
		bucket := e.jobs[minute]
		if bucket == nil {
			bucket = map[int64][2]int64{}
			e.jobs[minute] = bucket
		}
		for job, c := range jobs {
			p := bucket[job]
			bucket[job] = [2]int64{p[0] + c[0], p[1] + c[1]}
		}
	}
	if (grew || len(jobs) > 0) && e.oldest.IsZero() {
		e.oldest = now
	}
}

// Oldest is when the oldest count waiting for Flush was collected (zero
// when none waits).
func (e *EMF) Oldest() time.Time {
	if e == nil {
		return time.Time{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.oldest
}

// Flush writes what Collect gathered: per minute, one record of the
// pipeline counters and, with PerJob, a record per job with its own
// metric and one for the others together (JobId "other"), each stamped
// with the minute's last collection. A job this environment has not asked
// about yet is asked about (JobSlots, one conditional write each); if
// that fails, its results count as "other" this time and the error is
// returned.
func (e *EMF) Flush(ctx context.Context) error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	counters, jobs := e.counters, e.jobs
	e.counters, e.jobs, e.oldest = nil, nil, time.Time{}
	var ask []int64
	for _, bucket := range jobs {
		for job := range bucket {
			if _, ok := e.known[job]; !ok && !slices.Contains(ask, job) {
				ask = append(ask, job)
			}
		}
	}
	e.mu.Unlock()
	for _, minute := range slices.Sorted(maps.Keys(counters)) {
		b := counters[minute]
		e.putAt(b.values, nil, b.at, e.metrics)
	}
	var err error
	if len(ask) > 0 {
		slices.Sort(ask)
		var got map[int64]bool
		if got, err = e.slots.MetricJobs(ctx, ask, e.maxJobs); err == nil {
			e.mu.Lock()
			if e.known == nil {
				e.known = map[int64]bool{}
			}
			maps.Copy(e.known, got)
			e.mu.Unlock()
		}
	}
	for _, minute := range slices.Sorted(maps.Keys(jobs)) {
		// Stamped at the minute's last second: its counters' bucket time
		// when it has one, else the minute's end.
		at := time.Unix(minute*60+59, 0)
		if b := counters[minute]; b != nil {
			at = b.at
		}
		var other [2]int64
		for _, job := range slices.Sorted(maps.Keys(jobs[minute])) {
			c := jobs[minute][job]
			e.mu.Lock()
			own := e.known[job]
			e.mu.Unlock()
			if !own {
				other[0], other[1] = other[0]+c[0], other[1]+c[1]
				continue
			}
			e.putAt(jobValues(c), [][2]string{{"JobId", strconv.FormatInt(job, 10)}}, at, true)
		}
		if other != [2]int64{} {
			e.putAt(jobValues(other), [][2]string{{"JobId", JobOther}}, at, true)
		}
	}
	return err
}

// nonZero returns values without its zero entries (values itself when it
// has none).
func nonZero(values map[string]float64) map[string]float64 {
	for _, v := range values {
		if v == 0 {
			out := maps.Clone(values)
			maps.DeleteFunc(out, func(_ string, v float64) bool { return v == 0 })
			return out
		}
	}
	return values
}

// jobValues are the per-job metrics of counts (failed, ok).
func jobValues(c [2]int64) map[string]float64 {
	return map[string]float64{MetricJobResults: float64(c[0] + c[1]), MetricJobResultFailures: float64(c[0])}
}
