package wiring

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/clock"
	"github.com/xjobdev/xjob/internal/metric"
)

// MetricNamespace is the CloudWatch namespace of xjob's pipeline metrics;
// every metric has one dimension, FunctionName (the Lambda function's
// name, as AWS/Lambda's own metrics), so the templates' alarms address
// them per stack.
const MetricNamespace = "xjob"

// Pipeline metric names (CloudWatch, through the embedded metric format).
const (
	MetricScanCompleted   = "ScanCompleted"   // 1 per scan invocation that finished its tick: the "scan stalled" alarm's signal
	MetricScanJobs        = "ScanJobs"        // due jobs read
	MetricFires           = "Fires"           // occurrences planned (scan) or handed to a lane (ring)
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

// EMF writes CloudWatch embedded-metric-format records, one JSON line
// each, to the function's log (stdout on Lambda): CloudWatch Logs turns
// them into metrics with no PutMetricData call, nothing to batch or
// retry, and no client in the function.
type EMF struct {
	w     io.Writer
	fn    string
	clock clock.Clock
	mu    sync.Mutex
	last  xjob.MetricsSnapshot // counters already emitted (Counters)

	// Per-job metrics (PerJob): the deployment's slots, their bound, and
	// the answers this environment already has (they never change).
	slots   JobSlots
	maxJobs int
	known   map[int64]bool
}

// PerJob turns on the per-job metrics (Jobs) for at most max jobs of the
// deployment, as slots decides.
func (e *EMF) PerJob(slots JobSlots, max int) {
	e.slots, e.maxJobs = slots, max
}

// NewEMF writes records for function fn (its FunctionName dimension) to w.
func NewEMF(w io.Writer, fn string, clk clock.Clock) *EMF {
	return &EMF{w: w, fn: fn, clock: clk}
}

// Put writes one record of values (metric name → value); units are
// Milliseconds for names ending in Ms, Count otherwise. Zero values are
// written too: an alarm on a count wants the zeros.
func (e *EMF) Put(values map[string]float64) {
	e.put(values, nil)
}

// put writes one record of values with the dimensions FunctionName and,
// in this order, the names of dims.
func (e *EMF) put(values map[string]float64, dims [][2]string) {
	if e == nil || len(values) == 0 {
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
	rec["_aws"] = map[string]any{
		"Timestamp": e.clock.Now().UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace": MetricNamespace, "Dimensions": [][]string{names}, "Metrics": defs,
		}},
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return // values are numbers and names strings: it always marshals
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.w.Write(append(b, '\n'))
}

// Counters writes the growth of m's pipeline counters since the last call
// (triggers, results, misfires), when any grew.
func (e *EMF) Counters(m *metric.Metrics) {
	if e == nil || m == nil {
		return
	}
	s := m.Snapshot()
	e.mu.Lock()
	prev := e.last
	e.last = s
	e.mu.Unlock()
	d := map[string]float64{
		MetricTriggers:        float64(s.Triggers - prev.Triggers),
		MetricTriggerFailures: float64(s.TriggerFailures - prev.TriggerFailures),
		MetricResults:         float64(s.Successes + s.Failures - prev.Successes - prev.Failures),
		MetricResultFailures:  float64(s.Failures - prev.Failures),
		MetricMisfires:        float64(s.Misfired.Total() - prev.Misfired.Total()),
	}
	for _, v := range d {
		if v != 0 {
			e.Put(d)
			return
		}
	}
}

// Jobs writes the results m counted per job since the last call
// (metric.Metrics.DrainJobs): a record per job with its own metric, one
// for the others together (JobId "other"). A job this environment has not
// asked about yet is asked about (JobSlots, one conditional write each);
// if that fails, its results count as "other" this time and the error is
// returned.
func (e *EMF) Jobs(ctx context.Context, m *metric.Metrics) error {
	if e == nil || e.slots == nil || m == nil {
		return nil
	}
	counts := m.DrainJobResults()
	if len(counts) == 0 {
		return nil
	}
	e.mu.Lock()
	var ask []int64
	for job := range counts {
		if _, ok := e.known[job]; !ok {
			ask = append(ask, job)
		}
	}
	e.mu.Unlock()
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
	var other [2]int64
	for _, job := range slices.Sorted(maps.Keys(counts)) {
		c := counts[job]
		e.mu.Lock()
		own := e.known[job]
		e.mu.Unlock()
		if !own {
			other[0], other[1] = other[0]+c[0], other[1]+c[1]
			continue
		}
		e.put(jobValues(c), [][2]string{{"JobId", strconv.FormatInt(job, 10)}})
	}
	if other != [2]int64{} {
		e.put(jobValues(other), [][2]string{{"JobId", JobOther}})
	}
	return err
}

// jobValues are the per-job metrics of counts (failed, ok).
func jobValues(c [2]int64) map[string]float64 {
	return map[string]float64{MetricJobResults: float64(c[0] + c[1]), MetricJobResultFailures: float64(c[0])}
}
