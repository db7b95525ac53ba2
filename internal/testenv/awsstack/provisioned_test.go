package awsstack

import (
	"math"
	"testing"

	capkeeper "github.com/xjobdev/xjob/internal/scheduler/capacity"
)

// TestProvisionedPrice: capacity settles at the busiest minute's load
// over the target, between the bounds; it is billed per second whether
// used or not; a burst past it spends the 300 s credit before anything
// throttles; a table without load pays its minimum on the table and on
// each index.
func TestProvisionedPrice(t *testing.T) {
	t.Parallel()
	const prefix = "p"
	steady := func(n int, w float64) []TableLoad {
		out := make([]TableLoad, n)
		for i := range out {
			out[i] = TableLoad{At: int64(1000 + i), WCU: w}
		}
		return out
	}
	cp := CapacityPrices{WCUHour: 3600, RCUHour: 3600} // $1 a unit-second
	on := Prices{WRU: 1, RRU: 1}
	tests := []struct {
		name      string
		p         Provisioned
		load      map[string][]TableLoad
		seconds   float64
		capacity  float64 // the logs table's write capacity
		dollars   float64
		onDemand  float64
		throttled float64
	}{
		{"steady 7 WCU/s at 70%: 10 units", Provisioned{Tables: []string{"groups"}, Min: 1, Max: 100, Target: 0.7},
			map[string][]TableLoad{"p-groups": steady(60, 7)}, 60, 10, 60*10 + 60*1, 60 * 7, 0},
		{"bounded by Max, the rest from the credit, then throttled", Provisioned{Tables: []string{"groups"}, Min: 1, Max: 5, Target: 0.5},
			map[string][]TableLoad{"p-groups": steady(400, 11)}, 400, 5, 400*5 + 400*1, 400 * 11, 400*6 - 5*BurstSeconds},
		{"a burst within the credit does not throttle", Provisioned{Tables: []string{"groups"}, Min: 1, Max: 5, Target: 0.5},
			map[string][]TableLoad{"p-groups": steady(60, 11)}, 60, 5, 60*5 + 60*1, 60 * 11, 0},
		{"no load: the minimum", Provisioned{Tables: []string{"groups"}, Min: 2, Max: 10, Target: 0.7},
			nil, 30, 2, 30*2 + 30*2, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := tt.p.Price(tt.load, tt.seconds, prefix, on, cp)
			if got := c.Capacity["p-groups w"]; got != tt.capacity {
				t.Errorf("capacity %v, want %v", got, tt.capacity)
			}
			if math.Abs(c.Dollars-tt.dollars) > 1e-6 || c.OnDemand != tt.onDemand || math.Abs(c.Throttled-tt.throttled) > 1e-6 {
				t.Errorf("dollars %v on demand %v throttled %v, want %v %v %v", c.Dollars, c.OnDemand, c.Throttled, tt.dollars, tt.onDemand, tt.throttled)
			}
		})
	}
	// The jobs table has three indexes: with no load, four times the
	// minimum of each kind.
	c := Provisioned{Tables: []string{"jobs"}, Min: 1, Max: 10, Target: 0.7}.Price(nil, 1, prefix, on, cp)
	if n := (Provisioned{Tables: []string{"jobs", "logpages"}}).Parts(); n != 6 {
		t.Errorf("jobs and logpages: %d parts, want 6 (two tables, four indexes)", n)
	}
	if len(c.Capacity) != 8 || math.Abs(c.Dollars-8) > 1e-6 {
		t.Errorf("jobs with no load: capacity %v, $%v; want 8 parts at 1 unit, $8", c.Capacity, c.Dollars)
	}
}

// TestProvisionedKeeper: with the capacity keeper modelled, a table whose
// rate costs less on demand than on its capacity (idle) is priced on
// demand — no capacity-hours, its request units as they are — and a
// steady load keeps its capacity.
func TestProvisionedKeeper(t *testing.T) {
	t.Parallel()
	const prefix = "p"
	cp := ListCapacityPrices()
	on := ListPrices()
	kp := capkeeper.DefaultPolicy()
	perFire := map[string][]capkeeper.Part{"groups": {{WritePerFire: 3, ReadPerFire: 1}}}
	load := map[string][]TableLoad{"p-groups": {{At: 1000, WCU: 0.3, RCU: 0.1}}}
	tests := []struct {
		name     string
		rate     float64
		onDemand bool
	}{
		{"idle: on demand", 0, true},
		{"one fire a minute: on demand", 1.0 / 60, true},
		{"W5's 1.7 fires a second: provisioned", 100.0 / 60, false},
		{"W1's 1,000 a second: provisioned", 1000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := Provisioned{Tables: []string{"groups"}, Min: 1, Max: 4000, Target: 0.7, Keeper: &kp, PerFire: perFire, Rate: tt.rate}
			c := p.Price(load, 60, prefix, on, cp)
			if got := len(c.OnDemandTables) == 1; got != tt.onDemand {
				t.Fatalf("kept on demand %v, want %v", got, tt.onDemand)
			}
			if tt.onDemand && (c.Dollars != c.OnDemand || len(c.Capacity) != 0) {
				t.Errorf("on demand: $%v against $%v on demand, capacity %v", c.Dollars, c.OnDemand, c.Capacity)
			}
			if !tt.onDemand && len(c.Capacity) != 2 {
				t.Errorf("provisioned: capacity %v, want read and write", c.Capacity)
			}
		})
	}
	if h := (Provisioned{Tables: []string{"logpages"}, Min: 1}).KeeperQuietHour(cp); math.Abs(h-2*(cp.WCUHour+cp.RCUHour)) > 1e-12 {
		t.Errorf("the quiet hour of the log pages and their index: $%v", h)
	}
}
