package capacity

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xjobdev/xjob/pkg/clock"
)

// logPages is the log pages table as the scan wiring describes it: a
// sparse fire's units on the table and its time index.
var logPages = []Part{{Index: "", WritePerFire: 2.95, ReadPerFire: 1.5}, {Index: "byTime", WritePerFire: 0.93}}

var t0 = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// fakeTable is the Table port in memory: it applies switches as DynamoDB
// does (a switch to on demand stamps LastToOnDemand) and counts reads.
type fakeTable struct {
	c        clock.Clock
	st       State
	reads    int
	switches []time.Time // switches to on demand
	applied  []Switch
	fail     error
}

func (f *fakeTable) State(context.Context) (State, error) {
	f.reads++
	return f.st, f.fail
}

func (f *fakeTable) Apply(_ context.Context, s Switch) error {
	if f.fail != nil {
		return f.fail
	}
	f.applied = append(f.applied, s)
	f.st.Mode = s.To
	if s.To == OnDemand {
		f.st.LastToOnDemand = f.c.Now()
		f.switches = append(f.switches, f.c.Now())
	}
	return nil
}

// TestDecide: a table switches to on demand after an hour of quiet and
// back after ten busy minutes, sized for the busiest; the 12 h spacing
// holds a second switch to on demand; a load near the break-even leaves
// the table in whichever mode it is; a busy minute restarts the quiet hour.
func TestDecide(t *testing.T) {
	t.Parallel()
	flat := func(n, fires int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = fires
		}
		return out
	}
	tests := []struct {
		name  string
		state State
		fires []int // one per minute
		want  bool
		to    Mode
		sized map[string]Units
	}{
		{"quiet 59 minutes: not yet", State{Mode: Provisioned, Active: true}, flat(59, 0), false, 0, nil},
		{"quiet an hour: on demand", State{Mode: Provisioned, Active: true}, flat(60, 0), true, OnDemand, nil},
		{"quiet an hour, a table being updated: wait", State{Mode: Provisioned, Active: false}, flat(60, 0), false, 0, nil},
		{"quiet an hour, 2 h after a switch to on demand: the spacing holds it",
			State{Mode: Provisioned, Active: true, LastToOnDemand: t0.Add(-2 * time.Hour)}, flat(60, 0), false, 0, nil},
		{"quiet an hour, 12 h after the last switch: on demand",
			State{Mode: Provisioned, Active: true, LastToOnDemand: t0.Add(-12 * time.Hour)}, flat(60, 0), true, OnDemand, nil},
		{"100 fires in one minute of the hour are a light load: on demand", State{Mode: Provisioned, Active: true},
			append(append(flat(30, 0), 100), flat(30, 0)...), true, OnDemand, nil},
		{"a burst in the hour restarts it", State{Mode: Provisioned, Active: true},
			append(append(flat(30, 0), 1000), flat(60, 0)...), false, 0, nil},
		{"an hour after the burst left the 15-minute mean: on demand", State{Mode: Provisioned, Active: true},
			append(append(flat(30, 0), 1000), flat(74, 0)...), true, OnDemand, nil},
		{"W5's 100 fires a minute, on demand, 9 minutes: not yet", State{Mode: OnDemand, Active: true}, flat(9, 100), false, 0, nil},
		{"W5's 100 fires a minute, on demand, 10 minutes: provisioned for it", State{Mode: OnDemand, Active: true}, flat(10, 100), true, Provisioned,
			// 1.67 fires/s: table 4.9 WCU/s, 2.5 RCU/s; index 1.6 WCU/s; at 70%.
			map[string]Units{"": {Read: 4, Write: 8}, "byTime": {Read: 1, Write: 3}}},
		{"sized for the busiest 15-minute mean", State{Mode: OnDemand, Active: true}, append(flat(9, 100), 1100), true, Provisioned,
			// 2,000 fires in 10 minutes: 3.33 fires/s.
			map[string]Units{"": {Read: 8, Write: 15}, "byTime": {Read: 1, Write: 5}}},
		{"near the break-even (15 a minute), on demand stays", State{Mode: OnDemand, Active: true}, flat(120, 15), false, 0, nil},
		{"near the break-even (15 a minute), provisioned stays", State{Mode: Provisioned, Active: true}, flat(120, 15), false, 0, nil},
		{"a minute without planned fires among busy ones does not hold it back (the scan plans in lumps)", State{Mode: OnDemand, Active: true},
			append(append(flat(5, 100), 0), flat(4, 100)...), true, Provisioned, nil},
		{"a light load after a busy one holds it back", State{Mode: OnDemand, Active: true},
			append(flat(5, 100), flat(20, 5)...), false, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := clock.NewFake(t0)
			k := New(DefaultPolicy(), logPages, c)
			for i, f := range tt.fires {
				if i > 0 {
					c.Advance(time.Minute)
				}
				k.Observe(f)
			}
			st := tt.state
			if !st.LastToOnDemand.IsZero() {
				// Relative to the last minute observed: now − LastToOnDemand
				// is what the case names.
				st.LastToOnDemand = st.LastToOnDemand.Add(c.Now().Sub(t0))
			}
			s, ok := k.Decide(st)
			if ok != tt.want {
				od, pr := k.Costs(float64(tt.fires[len(tt.fires)-1]) / 60)
				t.Fatalf("switch %v, want %v (last minute: on demand $%.5f/h, provisioned $%.5f/h)", ok, tt.want, od, pr)
			}
			if !ok {
				return
			}
			if s.To != tt.to {
				t.Errorf("to %v, want %v", s.To, tt.to)
			}
			if tt.sized != nil {
				for part, u := range tt.sized {
					if s.Capacity[part] != u {
						t.Errorf("%q capacity %+v, want %+v", part, s.Capacity[part], u)
					}
				}
			}
			if s.To == OnDemand && s.Capacity != nil {
				t.Errorf("a switch to on demand carries capacity %v", s.Capacity)
			}
		})
	}
}

// TestTickBudget: a load that comes and goes every 90 minutes for three
// days (the worst flapping a workload could ask for) switches the table to
// on demand at most twice in any 24 hours, and back each time the load
// returns and holds.
func TestTickBudget(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(t0)
	tbl := &fakeTable{c: c, st: State{Mode: Provisioned, Active: true}}
	k := New(DefaultPolicy(), logPages, c)
	ctx := context.Background()
	for m := range 3 * 24 * 60 {
		fires := 0
		if (m/90)%2 == 1 {
			fires = 100
		}
		if _, _, err := k.Tick(ctx, tbl, fires); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Minute)
	}
	if len(tbl.switches) < 4 {
		t.Errorf("%d switches to on demand in three days, want the budget used (≥ 4)", len(tbl.switches))
	}
	for i := range tbl.switches {
		n := 0
		for _, s := range tbl.switches[i:] {
			if s.Sub(tbl.switches[i]) < 24*time.Hour {
				n++
			}
		}
		if n > 2 {
			t.Fatalf("%d switches to on demand within 24 h of %v: %v", n, tbl.switches[i], tbl.switches)
		}
	}
	back := 0
	for _, s := range tbl.applied {
		if s.To == Provisioned {
			back++
		}
	}
	if back < len(tbl.switches)-1 {
		t.Errorf("%d switches back to provisioned after %d to on demand", back, len(tbl.switches))
	}
}

// TestTickReads: the table is not described while no window can switch,
// and a quiet table on demand is described once per StateTTL, not every
// minute; a failed read is returned and retried.
func TestTickReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clock.NewFake(t0)
	tbl := &fakeTable{c: c, st: State{Mode: OnDemand, Active: true}}
	k := New(DefaultPolicy(), logPages, c)
	for range 59 {
		if _, ok, err := k.Tick(ctx, tbl, 0); err != nil || ok {
			t.Fatalf("tick: %v %v", ok, err)
		}
		c.Advance(time.Minute)
	}
	if tbl.reads != 0 {
		t.Errorf("%d reads before a window completed, want 0", tbl.reads)
	}
	for range 61 {
		if _, ok, err := k.Tick(ctx, tbl, 0); err != nil || ok {
			t.Fatalf("tick: %v %v", ok, err)
		}
		c.Advance(time.Minute)
	}
	if want := int(61*time.Minute/StateTTL) + 1; tbl.reads != want {
		t.Errorf("%d reads in 61 quiet minutes on demand, want %d (one per %s)", tbl.reads, want, StateTTL)
	}
	// A load near the break-even rules both switches out: no read.
	k2 := New(DefaultPolicy(), logPages, c)
	tbl2 := &fakeTable{c: c, st: State{Mode: Provisioned, Active: true}, fail: errors.New("denied")}
	for m := range 120 {
		if _, _, err := k2.Tick(ctx, tbl2, 15); err != nil {
			t.Fatalf("minute %d: %v", m, err)
		}
		c.Advance(time.Minute)
	}
	if tbl2.reads != 0 {
		t.Errorf("%d reads under a load near the break-even, want 0", tbl2.reads)
	}
	// A failed read is the tick's error.
	k3 := New(DefaultPolicy(), logPages, c)
	for m := range 60 {
		_, _, err := k3.Tick(ctx, tbl2, 0)
		if m < 59 && err != nil {
			t.Fatalf("minute %d: %v", m, err)
		}
		if m == 59 && err == nil {
			t.Fatal("a failed state read was not returned")
		}
		c.Advance(time.Minute)
	}
}
