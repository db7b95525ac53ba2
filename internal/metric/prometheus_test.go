package metric

import (
	"context"
	"io"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/testenv/promtext"
)

func TestPrometheusExposition(t *testing.T) {
	t.Parallel()
	var m Metrics
	m.Trigger(true, 3*time.Millisecond)
	m.Trigger(true, 700*time.Millisecond)
	m.TriggerOf("MANUAL", true, 0)
	m.TriggerOf("RETRY", false, 0)
	m.Result(200)
	m.Misfire(StrategyDoNothing, 4)
	m.ScanTick(30*time.Millisecond, 12)
	m.CallbackLatency(2 * time.Second)
	g := Gauges{
		LaneDepth:       func(context.Context) (map[string]int64, error) { return map[string]int64{"fast": 3, "ring": 7}, nil },
		ExecutorsOnline: func(context.Context) (map[string]int, error) { return map[string]int{"billing": 2}, nil },
		RunsToday:       func(context.Context) (RunCounts, error) { return RunCounts{Running: 1, Success: 5, Failure: 2}, nil },
	}
	rec := httptest.NewRecorder()
	Handler(&m, g).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	got := promtext.Samples(t, string(body))
	for series, want := range map[string]float64{
		`xjob_triggers_total{result="success",type="CRON"}`:   2,
		`xjob_triggers_total{result="success",type="MANUAL"}`: 1,
		`xjob_triggers_total{result="failure",type="RETRY"}`:  1,
		`xjob_triggers_total{result="failure",type="CRON"}`:   0,
		`xjob_results_total{result="success"}`:                1,
		`xjob_misfired_fires_total{strategy="DO_NOTHING"}`:    4,
		`xjob_fire_delay_seconds_bucket{le="0.001"}`:          0,
		`xjob_fire_delay_seconds_bucket{le="0.005"}`:          1,
		`xjob_fire_delay_seconds_bucket{le="0.5"}`:            1,
		`xjob_fire_delay_seconds_bucket{le="1"}`:              2,
		`xjob_fire_delay_seconds_bucket{le="60"}`:             2,
		`xjob_fire_delay_seconds_bucket{le="+Inf"}`:           2,
		`xjob_fire_delay_seconds_count`:                       2,
		`xjob_scan_tick_duration_seconds_count`:               1,
		`xjob_scan_tick_duration_seconds_bucket{le="0.05"}`:   1,
		`xjob_scan_due_jobs_total`:                            12,
		`xjob_callback_latency_seconds_bucket{le="1"}`:        0,
		`xjob_callback_latency_seconds_bucket{le="5"}`:        1,
		`xjob_callback_latency_seconds_bucket{le="86400"}`:    1,
		`xjob_callback_latency_seconds_sum`:                   2,
		`xjob_queue_depth{queue="fast"}`:                      3,
		`xjob_queue_depth{queue="ring"}`:                      7,
		`xjob_executors_online{app="billing"}`:                2,
		`xjob_runs_today{result="running"}`:                   1,
		`xjob_runs_today{result="success"}`:                   5,
		`xjob_runs_today{result="failure"}`:                   2,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present %t), want %v", series, v, ok, want)
		}
	}
	if sum := got["xjob_fire_delay_seconds_sum"]; math.Abs(sum-0.703) > 1e-9 {
		t.Errorf("xjob_fire_delay_seconds_sum = %v, want 0.703", sum)
	}
	if _, ok := got["go_goroutines"]; !ok {
		t.Error("exposition lacks the Go runtime's go_goroutines")
	}
	if t.Failed() {
		t.Log(string(body))
	}
	// A nil *Metrics still serves zeros.
	rec = httptest.NewRecorder()
	Handler(nil, Gauges{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("nil metrics: HTTP %d", rec.Code)
	}
	if v, ok := promtext.Samples(t, rec.Body.String())["xjob_fire_delay_seconds_count"]; !ok || v != 0 {
		t.Errorf("nil metrics: xjob_fire_delay_seconds_count = %v (present %t), want 0", v, ok)
	}
}

func TestQuantileInterpolates(t *testing.T) {
	t.Parallel()
	bounds := []time.Duration{time.Second, 2 * time.Second, 5 * time.Second}
	tests := []struct {
		counts []int64
		q      float64
		want   int64
	}{
		{[]int64{0, 0, 0, 0}, 0.99, 0},
		{[]int64{0, 4, 0, 0}, 0.5, 1500},   // half-way through (1 s, 2 s]
		{[]int64{0, 0, 1, 0}, 0.99, 4970},  // one late fire: not "5000"
		{[]int64{10, 0, 0, 1}, 0.99, 5000}, // above the last bound: that bound
		{[]int64{100, 0, 0, 0}, 0.5, 500},  // (0, 1 s]
	}
	for _, tt := range tests {
		var total int64
		for _, c := range tt.counts {
			total += c
		}
		if got := quantile(bounds, tt.counts, total, tt.q); got != tt.want {
			t.Errorf("quantile(%v, %v) = %d, want %d", tt.counts, tt.q, got, tt.want)
		}
	}
}
