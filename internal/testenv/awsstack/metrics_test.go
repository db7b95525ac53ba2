package awsstack_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/internal/testenv/tool"
)

// TestCustomMetricsMetered: the meter prices the custom metrics the
// functions really write. Deployed as the templates' default, a run and
// its result write their counters as plain log lines (log bytes, no
// custom metric); with CustomMetrics, the same records define the
// Triggers and Results metrics, each priced per month.
func TestCustomMetricsMetered(t *testing.T) {
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	t.Parallel()
	if _, err := emulator.Dir(""); err != nil {
		if errors.Is(err, emulator.ErrNotInstalled) {
			tool.Missing(t, err)
		}
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		metrics bool
	}{{"default", false}, {"custom metrics", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d, err := awsstack.Start(ctx, awsstack.Options{Shards: 2, RingPollers: 1, PollWait: time.Second,
				NoMaintenance: true, Logger: slog.New(slog.DiscardHandler), CustomMetrics: tt.metrics})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			j, stop := manualJob(ctx, t, d, "metrics")
			defer stop()
			before := d.Meter().Snapshot()
			runByHand(ctx, t, d, j.ID)
			d.Shutdown() // the environments write the counters they hold
			u := d.Meter().Snapshot().Sub(before)
			series := u.MetricSeries("")
			c := u.Cost(1, awsstack.ListPrices())
			var priced float64
			for _, f := range c.Functions {
				priced += f.MetricsPerM
			}
			if !tt.metrics {
				if len(series) != 0 || priced != 0 {
					t.Errorf("default deployment: custom metrics %v priced $%v, want none", series, priced)
				}
				if u.LogBytes["dispatch"] == 0 {
					t.Errorf("default deployment: dispatch logged nothing, want its counters as log lines")
				}
				return
			}
			var triggers, results bool
			for _, s := range series {
				triggers = triggers || strings.HasPrefix(s, "xjob/Triggers ")
				results = results || strings.HasPrefix(s, "xjob/Results ")
			}
			if !triggers || !results || priced <= 0 {
				t.Errorf("custom metrics: %v priced $%v, want Triggers and Results priced", series, priced)
			}
		})
	}
}
