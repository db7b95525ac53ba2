// Package capacity is the capacity keeper: it decides when a DynamoDB table
// deployed on provisioned capacity should run on demand instead, and when it
// should go back, so that a quiet deployment pays for requests only and a
// busy one pays for capacity, which costs about 40% of the same load on
// demand at auto scaling's 70% target.
//
// Why a keeper and not a template choice: provisioned capacity is billed by
// the hour whether used or not (1 write unit and 1 read unit are about $0.57
// a month, per table and per index), so a stack that is idle most of the
// time pays more provisioned than on demand; but on demand is the dearest
// way to buy a steady load. DynamoDB lets a table switch provisioned → on
// demand up to four times in a rolling 24 hours, and on demand →
// provisioned at any time, so a table can follow its load if the switches
// are rationed.
//
// The keeper is pure logic on an injected clock. Its load signal is what
// the scan function already counts every minute — the fires it planned —
// times a per-fire estimate of the units each table and index consumes
// (Part), so it adds no metered request and no CloudWatch read: Observe
// records a minute's fires, Decide compares what the last window would have
// cost each way and returns a Switch when one mode has been cheaper for the
// whole of its window. The table itself (its mode, when it last switched to
// on demand) comes through the Table port, whose DynamoDB adapter is
// internal/adapter/dynamocapacity.
//
// Rationing: a switch to on demand needs Policy.Quiet (an hour) of loads
// under the break-even, and at least Policy.Spacing (12 h) since the
// table's last switch to on demand as DynamoDB reports it — so the keeper
// makes at most two a day whoever made the others (a redeploy, an
// operator), leaving two of the quota's four. A switch back needs
// Policy.Busy of loads that cost Policy.Margin times more on demand than
// provisioned. Every switch restarts the window, so one minute's burst
// never flips a table, and the margin keeps a load near the break-even
// where it is.
package capacity

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/xjobdev/xjob/pkg/clock"
)

// Mode is a table's billing mode.
type Mode int

const (
	// Provisioned is DynamoDB's PROVISIONED billing mode: capacity units
	// billed by the hour.
	Provisioned Mode = iota
	// OnDemand is PAY_PER_REQUEST: request units billed per request.
	OnDemand
)

func (m Mode) String() string {
	if m == OnDemand {
		return "PAY_PER_REQUEST"
	}
	return "PROVISIONED"
}

// Part is a table ("" Index) or one of its global secondary indexes, with
// the units a fire consumes on it: each has capacity of its own when the
// table is provisioned, and pays at least Policy.Min of each kind.
type Part struct {
	Index                     string
	WritePerFire, ReadPerFire float64
}

// Units are a part's provisioned capacity.
type Units struct {
	Read, Write int64
}

// Prices are the list prices the keeper compares: on-demand request units
// (dollars a unit) and provisioned capacity (dollars a unit-hour).
type Prices struct {
	WRU, RRU         float64
	WCUHour, RCUHour float64
}

// ListPrices are us-east-1's for the standard table class.
func ListPrices() Prices {
	return Prices{WRU: 0.625e-6, RRU: 0.125e-6, WCUHour: 0.00065, RCUHour: 0.00013}
}

// Policy is when the keeper switches and how it sizes capacity.
type Policy struct {
	// Quiet is how long every observed minute must cost less on demand
	// before the table switches to on demand.
	Quiet time.Duration
	// Busy is how long every observed minute must cost Margin times more
	// on demand before the table switches back to provisioned.
	Busy time.Duration
	// Spacing is the least time between two switches to on demand
	// (DynamoDB's LastUpdateToPayPerRequestDateTime): 12 h keeps the
	// keeper to two a day of the quota's four.
	Spacing time.Duration
	// Margin (> 1) is the hysteresis of the switch back.
	Margin float64
	// Smooth is the span each minute's rate is averaged over: the scan
	// plans a job's fires up to its advance ahead (14 minutes) once per
	// about 11.5 minutes, so one minute's planned fires say little, and
	// its mean over Smooth is the rate the fires run at.
	Smooth time.Duration
	// Min and Max bound each part's capacity units of each kind, as the
	// stack's auto scaling does (TableCapacityMin, TableCapacityMax).
	Min, Max float64
	// Target is auto scaling's target utilisation (0.2–0.9): capacity is
	// sized at the load over it.
	Target float64
	Prices Prices
}

// DefaultPolicy is an hour quiet, ten minutes busy, 12 h between switches
// to on demand, a margin of 1.25, and the stacks' default auto scaling
// (1–4,000 units, 70%).
func DefaultPolicy() Policy {
	return Policy{Quiet: time.Hour, Busy: 10 * time.Minute, Spacing: 12 * time.Hour, Margin: 1.25, Smooth: 15 * time.Minute,
		Min: 1, Max: 4000, Target: 0.7, Prices: ListPrices()}
}

// State is what the Table port reports of the table.
type State struct {
	Mode Mode
	// LastToOnDemand is the table's last switch to on demand (zero:
	// never), whoever made it.
	LastToOnDemand time.Time
	// Active is false while the table or an index is being updated: no
	// switch is attempted then.
	Active bool
}

// Switch is a decided change: To on demand, or to provisioned with
// Capacity for each part (keyed by Part.Index, "" the table).
type Switch struct {
	To       Mode
	Capacity map[string]Units
}

// Table is the port to the table: its state, and the switch.
type Table interface {
	State(ctx context.Context) (State, error)
	Apply(ctx context.Context, s Switch) error
}

// sample is one observation: the fires planned since the one before, and
// the rate (fires per second) over Policy.Smooth up to it.
type sample struct {
	at    time.Time
	fires int
	rate  float64
}

// Keeper decides one table's billing mode from the fires observed.
// Observe and Decide are not safe for concurrent use: the scan function
// calls them from its one handler.
type Keeper struct {
	policy Policy
	parts  []Part
	clock  clock.Clock
	since  time.Time // the window's start: a minute before the first observation, or the last switch
	hist   []sample
	// known is the table's state as last read (at knownAt), reused for
	// StateTTL: a quiet table on demand is not described every minute.
	known   *State
	knownAt time.Time
}

// StateTTL is how long Tick trusts a state it read: a switch someone
// else made (a redeploy) is seen within it.
const StateTTL = 15 * time.Minute

// New returns a keeper of a table made of parts.
func New(p Policy, parts []Part, c clock.Clock) *Keeper {
	return &Keeper{policy: p, parts: parts, clock: c}
}

// Observe records that fires were planned since the last observation.
func (k *Keeper) Observe(fires int) {
	now := k.clock.Now()
	if k.since.IsZero() {
		k.since = now.Add(-time.Minute)
	}
	k.hist = append(k.hist, sample{at: now, fires: fires})
	// The rate over Smooth (or over what was observed, when less).
	from := now.Add(-max(k.policy.Smooth, time.Minute))
	if from.Before(k.since) {
		from = k.since
	}
	n := 0
	for _, s := range k.hist {
		if s.at.After(from) {
			n += s.fires
		}
	}
	k.hist[len(k.hist)-1].rate = float64(n) / now.Sub(from).Seconds()
	// Keep the longer window only.
	keep := max(k.policy.Quiet, k.policy.Busy, k.policy.Smooth)
	i := 0
	for i < len(k.hist) && now.Sub(k.hist[i].at) > keep {
		i++
	}
	k.hist = k.hist[i:]
}

// Costs returns what a load of rate fires per second costs an hour on
// demand and on provisioned capacity sized for it.
func (k *Keeper) Costs(rate float64) (onDemand, provisioned float64) {
	p := k.policy.Prices
	for _, part := range k.parts {
		w, r := part.WritePerFire*rate, part.ReadPerFire*rate
		onDemand += 3600 * (w*p.WRU + r*p.RRU)
		u := k.size(part, rate)
		provisioned += float64(u.Write)*p.WCUHour + float64(u.Read)*p.RCUHour
	}
	return onDemand, provisioned
}

// size is a part's capacity for rate: the load over the target, rounded
// up, between Min and Max.
func (k *Keeper) size(part Part, rate float64) Units {
	units := func(load float64) int64 {
		c := math.Ceil(load / k.policy.Target)
		return int64(min(max(c, k.policy.Min, 1), max(k.policy.Max, k.policy.Min, 1)))
	}
	return Units{Read: units(part.ReadPerFire * rate), Write: units(part.WritePerFire * rate)}
}

// window returns the samples of the last d, and whether the observations
// cover all of it.
func (k *Keeper) window(now time.Time, d time.Duration) ([]sample, bool) {
	if k.since.IsZero() || now.Sub(k.since) < d {
		return nil, false
	}
	i := slices.IndexFunc(k.hist, func(s sample) bool { return now.Sub(s.at) < d })
	if i < 0 {
		return nil, false
	}
	return k.hist[i:], true
}

// Decide returns the switch the table needs now, if any: to on demand
// after Quiet of loads cheaper on demand (and Spacing since the last
// such switch), to provisioned after Busy of loads dearer on demand by
// Margin, sized for the window's busiest minute.
func (k *Keeper) Decide(st State) (Switch, bool) {
	if !st.Active {
		return Switch{}, false
	}
	now := k.clock.Now()
	switch st.Mode {
	case Provisioned:
		if !st.LastToOnDemand.IsZero() && now.Sub(st.LastToOnDemand) < k.policy.Spacing {
			return Switch{}, false
		}
		w, ok := k.window(now, k.policy.Quiet)
		if !ok {
			return Switch{}, false
		}
		for _, s := range w {
			if od, pr := k.Costs(s.rate); od >= pr {
				return Switch{}, false
			}
		}
		return Switch{To: OnDemand}, true
	default:
		w, ok := k.window(now, k.policy.Busy)
		if !ok {
			return Switch{}, false
		}
		var peak float64
		for _, s := range w {
			od, pr := k.Costs(s.rate)
			if od <= k.policy.Margin*pr {
				return Switch{}, false
			}
			peak = max(peak, s.rate)
		}
		caps := map[string]Units{}
		for _, part := range k.parts {
			caps[part.Index] = k.size(part, peak)
		}
		return Switch{To: Provisioned, Capacity: caps}, true
	}
}

// Switched restarts the window after a switch was applied: the next one
// needs a whole window of its own.
func (k *Keeper) Switched() {
	k.since = k.clock.Now()
	k.hist = k.hist[:0]
}

// Tick is the periodic step: it records fires and, when a window holds
// a switch either way (so not in a minute that rules both out, the usual
// case), reads the table's state and applies the switch Decide returns.
// It reports the switch made, if any. A failed read or switch is returned
// and retried at the next tick.
func (k *Keeper) Tick(ctx context.Context, t Table, fires int) (Switch, bool, error) {
	k.Observe(fires)
	if !k.possible() {
		return Switch{}, false, nil
	}
	now := k.clock.Now()
	if k.known == nil || now.Sub(k.knownAt) >= StateTTL {
		st, err := t.State(ctx)
		if err != nil {
			return Switch{}, false, err
		}
		k.known, k.knownAt = &st, now
	}
	s, ok := k.Decide(*k.known)
	if !ok {
		return Switch{}, false, nil
	}
	if err := t.Apply(ctx, s); err != nil {
		return Switch{}, false, err
	}
	k.Switched()
	k.known = nil
	return s, true, nil
}

// possible reports whether either window is complete and uniform (every
// minute cheaper on demand for Quiet, or dearer by Margin for Busy):
// otherwise no state could make Decide switch, and the table is not read.
func (k *Keeper) possible() bool {
	now := k.clock.Now()
	if w, ok := k.window(now, k.policy.Quiet); ok && !slices.ContainsFunc(w, func(s sample) bool {
		od, pr := k.Costs(s.rate)
		return od >= pr
	}) {
		return true
	}
	if w, ok := k.window(now, k.policy.Busy); ok && !slices.ContainsFunc(w, func(s sample) bool {
		od, pr := k.Costs(s.rate)
		return od <= k.policy.Margin*pr
	}) {
		return true
	}
	return false
}
