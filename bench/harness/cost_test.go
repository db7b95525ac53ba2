package harness

import (
	"math"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/testenv/awsstack"
)

// TestSteadyAdvancesApply prices a window's advances at the steady rate:
// the window's own scan work (reads, invocations) stays, its advances are
// swapped for the steady state's count at the planning's requests per
// advance.
func TestSteadyAdvancesApply(t *testing.T) {
	t.Parallel()
	// The first planning: 100 advances, 300 write units, 2 invocations.
	planning := awsstack.Usage{
		Ops:     map[string]map[string]awsstack.OpStat{"scan": {"dynamodb:UpdateItem": {Requests: 100, Reported: 300}}},
		Invokes: map[string]awsstack.InvokeStat{"scan": {Invocations: 2, Duration: 2 * time.Second}},
	}
	// The window: 20 advances (60 units) and a due-index read, and a ring
	// function that the pricing leaves alone.
	window := awsstack.Usage{
		Ops: map[string]map[string]awsstack.OpStat{
			"scan": {"dynamodb:UpdateItem": {Requests: 20, Reported: 60}, "dynamodb:Query": {Requests: 4, Reported: 2}},
			"ring": {"dynamodb:PutItem": {Requests: 10, Reported: 10}},
		},
		Invokes: map[string]awsstack.InvokeStat{"scan": {Invocations: 2, Duration: time.Second}},
	}
	cases := []struct {
		name     string
		a        SteadyAdvances
		wantUnit float64
	}{
		{"more in the window than steady", SteadyAdvances{Planned: 100, InWindow: 20, Steady: 10}, 30},
		{"fewer in the window than steady", SteadyAdvances{Planned: 100, InWindow: 0, Steady: 10}, 90},
		{"as steady", SteadyAdvances{Planned: 100, InWindow: 20, Steady: 20}, 60},
		{"nothing planned: the window as measured", SteadyAdvances{}, 60},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.a.Apply(window, planning)
			if u := got.Ops["scan"]["dynamodb:UpdateItem"].Reported; math.Abs(u-c.wantUnit) > 1e-9 {
				t.Errorf("scan update units = %v, want %v", u, c.wantUnit)
			}
			if q := got.Ops["scan"]["dynamodb:Query"].Reported; q != 2 {
				t.Errorf("due-index reads = %v, want the window's 2", q)
			}
			if r := got.Ops["ring"]["dynamodb:PutItem"].Reported; r != 10 {
				t.Errorf("ring units = %v, want 10 (untouched)", r)
			}
			if inv := got.Invokes["scan"]; inv.Invocations != 2 || inv.Duration != time.Second {
				t.Errorf("scan invocations = %+v, want the window's (2, 1s)", inv)
			}
		})
	}
}
