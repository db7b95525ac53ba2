package wiring_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/pkg/clock"
)

// TestEMF checks the records CloudWatch Logs turns into metrics: one JSON
// line each, the _aws directive naming the namespace, the FunctionName
// dimension and every metric with its unit, the values at the top level;
// Collect gathers the counters' growth since its last call and Flush
// writes it, nothing when none grew.
func TestEMF(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	e := wiring.NewEMF(&out, "stack-ring", clock.NewFake(time.UnixMilli(1_700_000_000_123)))
	e.CustomMetrics(true)
	e.Put(map[string]float64{wiring.MetricFires: 3, wiring.MetricLatenessMax: 42})
	var rec struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		FunctionName  string
		Fires         float64
		LatenessMaxMs float64
	}
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil || !strings.HasSuffix(out.String(), "}\n") {
		t.Fatalf("record %q: %v", out.String(), err)
	}
	cw := rec.AWS.CloudWatchMetrics
	if rec.AWS.Timestamp != 1_700_000_000_123 || len(cw) != 1 || cw[0].Namespace != wiring.MetricNamespace ||
		len(cw[0].Dimensions) != 1 || cw[0].Dimensions[0][0] != "FunctionName" || rec.FunctionName != "stack-ring" ||
		rec.Fires != 3 || rec.LatenessMaxMs != 42 || len(cw[0].Metrics) != 2 ||
		cw[0].Metrics[0].Name != "Fires" || cw[0].Metrics[0].Unit != "Count" || cw[0].Metrics[1].Unit != "Milliseconds" {
		t.Errorf("record %s", out.String())
	}

	out.Reset()
	var m metric.Metrics
	flush := func() {
		t.Helper()
		e.Collect(&m)
		if err := e.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	flush()
	if out.Len() != 0 {
		t.Errorf("no counter grew, but a record was written: %s", out.String())
	}
	m.Trigger(true, time.Millisecond)
	m.Trigger(true, time.Millisecond)
	m.Result(500)
	flush()
	var c map[string]any
	if err := json.Unmarshal(out.Bytes(), &c); err != nil || c["Triggers"] != 2.0 || c["Results"] != 1.0 || c["ResultFailures"] != 1.0 {
		t.Errorf("counters record %s (%v)", out.String(), err)
	}
	out.Reset()
	m.Trigger(true, time.Millisecond)
	flush()
	c = nil
	if err := json.Unmarshal(out.Bytes(), &c); err != nil || c["Triggers"] != 1.0 {
		t.Errorf("second counters record %s, want the growth since the first (%v)", out.String(), err)
	}
	if _, ok := c["Results"]; ok {
		t.Errorf("second counters record %s names Results, which did not grow", out.String())
	}
}

// TestEMFLeavesZerosOut: a metric whose value is zero is not written (each
// custom metric is billed for every hour it receives a value), and a
// record whose values are all zero is not written at all, so an idle
// scan that found jobs but planned no fire writes ScanJobs alone, and an
// idle one nothing.
func TestEMFLeavesZerosOut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values map[string]float64
		want   []string // metric names written, sorted; none: no record
	}{
		{"scan without fires", map[string]float64{wiring.MetricScanJobs: 3, wiring.MetricFires: 0, wiring.MetricMisfires: 0},
			[]string{wiring.MetricScanJobs}},
		{"idle scan", map[string]float64{wiring.MetricScanJobs: 0, wiring.MetricFires: 0, wiring.MetricMisfires: 0}, nil},
		{"all zero", map[string]float64{wiring.MetricLost: 0}, nil},
		{"none zero", map[string]float64{wiring.MetricFires: 2, wiring.MetricLatenessMax: 5}, []string{wiring.MetricFires, wiring.MetricLatenessMax}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			e := wiring.NewEMF(&out, "stack-scan", clock.NewFake(time.UnixMilli(1_700_000_000_000)))
			e.CustomMetrics(true)
			e.Put(tt.values)
			if tt.want == nil {
				if out.Len() != 0 {
					t.Fatalf("wrote %s, want nothing", out.String())
				}
				return
			}
			var rec struct {
				AWS struct {
					CloudWatchMetrics []struct{ Metrics []struct{ Name string } }
				} `json:"_aws"`
			}
			if err := json.Unmarshal(out.Bytes(), &rec); err != nil || len(rec.AWS.CloudWatchMetrics) != 1 {
				t.Fatalf("record %q: %v", out.String(), err)
			}
			var got []string
			for _, m := range rec.AWS.CloudWatchMetrics[0].Metrics {
				got = append(got, m.Name)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("metrics %v, want %v", got, tt.want)
			}
		})
	}
}

// TestEMFCountersByMinute: counts collected over several invocations are
// written by one Flush as one record per minute they were collected in,
// each stamped at its minute's last collection, so that CloudWatch sums
// them into the minutes they happened in however late the flush.
func TestEMFCountersByMinute(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	start := time.UnixMilli(1_700_000_020_000) // 40 s into a minute
	clk := clock.NewFake(start)
	e := wiring.NewEMF(&out, "stack-dispatch", clk)
	e.CustomMetrics(true)
	var m metric.Metrics
	step := func(d time.Duration, triggers int) {
		clk.Advance(d)
		for range triggers {
			m.Trigger(true, time.Millisecond)
		}
		e.Collect(&m)
	}
	step(0, 1)
	if !e.Oldest().Equal(start) {
		t.Fatalf("oldest %v, want %v", e.Oldest(), start)
	}
	step(10*time.Second, 2) // :50, same minute
	step(5*time.Second, 0)  // nothing grew
	step(15*time.Second, 4) // :10 of the next minute
	if out.Len() != 0 {
		t.Fatalf("Collect wrote: %s", out.String())
	}
	if err := e.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("record %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	want := []struct {
		at       time.Time
		triggers float64
	}{{start.Add(10 * time.Second), 3}, {start.Add(30 * time.Second), 4}}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(recs), len(want), out.String())
	}
	for i, w := range want {
		ts := int64(recs[i]["_aws"].(map[string]any)["Timestamp"].(float64))
		if _, zero := recs[i]["Results"]; ts != w.at.UnixMilli() || recs[i]["Triggers"] != w.triggers || zero {
			t.Errorf("record %d: %v, want %v triggers at %d", i, recs[i], w.triggers, w.at.UnixMilli())
		}
	}
	if !e.Oldest().IsZero() {
		t.Errorf("oldest %v after Flush, want none", e.Oldest())
	}
}

// TestEMFCustomMetricsOptIn: by default the records are plain log lines —
// the same values, dimensions and minute stamp, but no _aws directive, so
// CloudWatch creates no custom metric and bills none — and CustomMetrics
// turns the directive back on, for what a function puts at once and for
// the counters Flush writes alike.
func TestEMFCustomMetricsOptIn(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1_700_000_000_123)
	tests := []struct {
		name      string
		on        bool
		directive bool
	}{{"default", false, false}, {"off", false, false}, {"on", true, true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			e := wiring.NewEMF(&out, "stack-ring", clock.NewFake(at))
			if tt.name != "default" {
				e.CustomMetrics(tt.on)
			}
			e.Put(map[string]float64{wiring.MetricLatenessMax: 7})
			var m metric.Metrics
			m.Trigger(true, time.Millisecond)
			m.Result(200)
			e.Collect(&m)
			if err := e.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 2 {
				t.Fatalf("%d records, want 2:\n%s", len(lines), out.String())
			}
			want := []map[string]float64{{wiring.MetricLatenessMax: 7}, {wiring.MetricTriggers: 1, wiring.MetricResults: 1}}
			for i, line := range lines {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("record %q: %v", line, err)
				}
				aws, directive := rec["_aws"].(map[string]any)
				if directive != tt.directive {
					t.Errorf("record %s: directive %v, want %v", line, directive, tt.directive)
				}
				ts, _ := rec["Timestamp"].(float64)
				if directive {
					ts, _ = aws["Timestamp"].(float64)
				}
				if int64(ts) != at.UnixMilli() || rec["FunctionName"] != "stack-ring" {
					t.Errorf("record %s: stamp %v, want %d, FunctionName stack-ring", line, ts, at.UnixMilli())
				}
				for name, v := range want[i] {
					if rec[name] != v {
						t.Errorf("record %s: %s = %v, want %v", line, name, rec[name], v)
					}
				}
			}
		})
	}
}
