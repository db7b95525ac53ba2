package wiring_test

import (
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/internal/testenv/syncbuf"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// flushBase is a registry function's Base on its own tables in dynalite, on clk,
// its EMF records in out; extra are variables set besides the required.
func flushBase(t *testing.T, clk clock.Clock, out *syncbuf.Buffer, extra ...string) *wiring.Base {
	t.Helper()
	env := map[string]string{awsconfig.EnvTablePrefix: emulator.UniqueName("flush"), awsconfig.EnvShards: "2",
		awsconfig.EnvDispatchFastURL: "http://q/fast", awsconfig.EnvDispatchSlowURL: "http://q/slow",
		awsconfig.EnvAlarmTopicARN: "arn:aws:sns:x"}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	cfg, err := wiring.LoadConfig("registry", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	b, err := wiring.NewBase(cfg, wiring.Deps{DynamoDB: emulator.DynamoDB(t), SQS: emulator.SQS(t), Clock: clk, MetricsOut: out})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Store.CreateTables(t.Context()); err != nil {
		t.Fatal(err)
	}
	return b
}

// stored is the report's day as the store holds it (not through the
// Base's counters, whose reads flush them).
func stored(t *testing.T, b *wiring.Base, day string) xjob.ReportDay {
	t.Helper()
	days, err := b.Store.ReportList(t.Context(), driver.ReportListParams{From: day, To: day})
	if err != nil {
		t.Fatal(err)
	}
	var sum xjob.ReportDay
	for _, d := range days {
		sum.Add(d)
	}
	return sum
}

// FlushReports, at the end of each invocation, keeps the environment's
// run-report counts and EMF counters until the oldest is
// wiring.ReportFlushAge old, then writes them all at once: one report
// write per group and one EMF record per minute, instead of one each per
// invocation. Shutdown (SIGTERM) writes what is left, whatever its age.
func TestFlushReportsDefersByAge(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	start := time.UnixMilli(1_700_000_020_000) // 40 s into a minute
	clk := clock.NewFake(start)
	out := &syncbuf.Buffer{}
	b := flushBase(t, clk, out)
	day := start.UTC().Format(time.DateOnly)

	// An invocation every 10 s, each a trigger and its result.
	invoke := func() {
		t.Helper()
		if err := b.Counted.ReportAdd(ctx, xjob.ReportDay{Day: day, GroupID: 1, RunningCount: 1}); err != nil {
			t.Fatal(err)
		}
		if err := b.Counted.ReportAdd(ctx, xjob.ReportDay{Day: day, GroupID: 1, RunningCount: -1, SucCount: 1}); err != nil {
			t.Fatal(err)
		}
		b.Metrics.Trigger(true, time.Millisecond)
		b.Metrics.Result(200)
		b.FlushReports(ctx)
	}
	for i := range 6 { // +0 s … +50 s
		if i > 0 {
			clk.Advance(10 * time.Second)
		}
		invoke()
		if got := stored(t, b, day); got.SucCount != 0 || records(out) != 0 {
			t.Fatalf("invocation %d (+%s): report %+v and %d EMF records written before the oldest count is %s old",
				i, clk.Now().Sub(start), got, records(out), wiring.ReportFlushAge)
		}
	}
	clk.Advance(10 * time.Second) // +60 s: the first invocation's counts are a minute old
	invoke()
	if got := stored(t, b, day); got.SucCount != 7 || got.RunningCount != 0 {
		t.Fatalf("report after a minute %+v, want 7 successes", got)
	}
	// +0…+10 s fell in the first minute, +20…+60 s in the next.
	if n := records(out); n != 2 {
		t.Fatalf("%d EMF records after a minute, want 2 (one per minute):\n%s", n, out.String())
	}
	if len(b.Reports.Pending()) != 0 || !b.EMF.Oldest().IsZero() {
		t.Fatalf("pending after the flush: report %+v, EMF since %v", b.Reports.Pending(), b.EMF.Oldest())
	}

	// Counts younger than a minute wait; shutdown writes them.
	clk.Advance(10 * time.Second)
	invoke()
	if got := stored(t, b, day); got.SucCount != 7 || records(out) != 2 {
		t.Fatalf("report %+v and %d EMF records: a fresh count was written at once", got, records(out))
	}
	b.Shutdown(ctx)
	if got := stored(t, b, day); got.SucCount != 8 {
		t.Fatalf("report after shutdown %+v, want 8 successes", got)
	}
	if n := records(out); n != 3 {
		t.Fatalf("%d EMF records after shutdown, want 3", n)
	}
}

// Many groups' counters do not wait for the age: past
// tally.DefaultMaxPending of them the invocation's end writes them, so a
// shutdown flush never has more to write than fits in its half second.
func TestFlushReportsWritesManyCountersAtOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := clock.NewFake(time.UnixMilli(1_700_000_020_000))
	b := flushBase(t, clk, &syncbuf.Buffer{})
	day := clk.Now().UTC().Format(time.DateOnly)
	for g := range int64(16) {
		if err := b.Counted.ReportAdd(ctx, xjob.ReportDay{Day: day, GroupID: g + 1, FailCount: 1}); err != nil {
			t.Fatal(err)
		}
		if g < 15 {
			b.FlushReports(ctx)
			if got := stored(t, b, day); got.FailCount != 0 {
				t.Fatalf("%d groups pending: report written (%+v)", g+1, got)
			}
		}
	}
	b.FlushReports(ctx)
	if got := stored(t, b, day); got.FailCount != 16 {
		t.Fatalf("16 groups pending: report %+v after the invocation, want 16 failures", got)
	}
}

// records counts the lines written to out: the EMF records.
func records(out *syncbuf.Buffer) int { return strings.Count(out.String(), "\n") }

// TestBaseCustomMetrics: a function configured as the stack deploys it by
// default writes its counters with no metric directive (no custom metric
// for CloudWatch to bill), and with XJOB_CUSTOM_METRICS=true as
// embedded-metric-format records.
func TestBaseCustomMetrics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		extra     []string
		directive bool
	}{
		{"default", nil, false},
		{"false", []string{awsconfig.EnvCustomMetrics, "false"}, false},
		{"true", []string{awsconfig.EnvCustomMetrics, "true"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := &syncbuf.Buffer{}
			b := flushBase(t, clock.NewFake(time.UnixMilli(1_700_000_020_000)), out, tt.extra...)
			b.Metrics.Trigger(true, time.Millisecond)
			b.EMF.Put(map[string]float64{wiring.MetricLost: 1})
			b.Shutdown(t.Context())
			if n := records(out); n != 2 {
				t.Fatalf("%d records, want 2:\n%s", n, out.String())
			}
			if got := strings.Count(out.String(), `"_aws"`); got != map[bool]int{true: 2}[tt.directive] {
				t.Errorf("%d records with a metric directive, want them on %v:\n%s", got, tt.directive, out.String())
			}
			if !strings.Contains(out.String(), `"Triggers":1`) || !strings.Contains(out.String(), `"Lost":1`) {
				t.Errorf("records lack their values:\n%s", out.String())
			}
		})
	}
}
