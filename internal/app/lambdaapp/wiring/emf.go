package wiring

import (
	"encoding/json"
	"io"
	"maps"
	"slices"
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
}

// NewEMF writes records for function fn (its FunctionName dimension) to w.
func NewEMF(w io.Writer, fn string, clk clock.Clock) *EMF {
	return &EMF{w: w, fn: fn, clock: clk}
}

// Put writes one record of values (metric name → value); units are
// Milliseconds for names ending in Ms, Count otherwise. Zero values are
// written too: an alarm on a count wants the zeros.
func (e *EMF) Put(values map[string]float64) {
	if e == nil || len(values) == 0 {
		return
	}
	type metricDef struct{ Name, Unit string }
	var defs []metricDef
	rec := map[string]any{"FunctionName": e.fn}
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
			"Namespace": MetricNamespace, "Dimensions": [][]string{{"FunctionName"}}, "Metrics": defs,
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
