// Package scanfn is the scan Lambda function: one EventBridge scheduled
// event per minute runs one scan.Scanner tick over every shard that has a
// job due within wiring.ScanHorizon, planning each due job's fires up to
// the scan advance ahead and sending them to the ring queue.
package scanfn

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/adapter/dynamocapacity"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/adapter/sqsqueue"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/scheduler/capacity"
	"github.com/xjobdev/xjob/internal/scheduler/scan"
)

// scanBudget bounds the paging of one scan invocation: the due jobs of a
// shard are read and advanced within it (well inside the function's
// timeout), at most wiring.DefaultScanAdvanceRate a second, so a tick
// reads no more than 3,600 per shard; the rest waits for the next minute,
// which is still ahead of its fires thanks to the horizon. scanLease outlives the budget (a page
// is only processed while the lease covers the budget) and expires before
// the next minute, so a scan that died holding it delays nobody.
const (
	scanBudget = 20 * time.Second
	scanLease  = 45 * time.Second
)

// ringPaceWait bounds the scan's waits for the ring's phase per page of
// due jobs (one ring send): one second holds the next phase whatever the
// clock.
const ringPaceWait = time.Second

// Tunables are the scanner's tunables on AWS: the function's shards, scan
// advance and ring lead (wiring.DefaultRingLead when the stack sets
// none), the values above, and any overrides the Deps carry
// (tests). The web function's admin pushes the fires of jobs it creates
// or edits within the horizon with the same tunables.
func Tunables(b *wiring.Base) scan.Tunables {
	o := b.Deps.Scan
	sc := scan.Tunables{Shards: b.Config.Shards, PreRead: o.PreRead, Advance: o.Advance, TickBudget: o.TickBudget,
		LeaseTTL: o.LeaseTTL, RingLead: o.RingLead, AdvanceRate: max(0, o.AdvanceRate)}
	if sc.PreRead == 0 {
		sc.PreRead = wiring.ScanHorizon
	}
	if sc.Advance == 0 {
		sc.Advance = cmp.Or(b.Config.ScanAdvance, wiring.DefaultScanAdvance)
	}
	if sc.TickBudget == 0 {
		sc.TickBudget = scanBudget
	}
	if sc.LeaseTTL == 0 {
		sc.LeaseTTL = scanLease
	}
	if sc.RingLead == 0 {
		sc.RingLead = cmp.Or(b.Config.RingLead, wiring.DefaultRingLead)
	}
	if o.AdvanceRate == 0 {
		sc.AdvanceRate = wiring.DefaultScanAdvanceRate
	}
	return sc
}

// Function is the scan function.
type Function struct {
	b       *wiring.Base
	scanner *scan.Scanner
	keepers []keeper
}

// keeper is the capacity keeper of one steady table (Config.Provisioned).
type keeper struct {
	name  string
	k     *capacity.Keeper
	table capacity.Table
}

// PerFire is what a fire costs each steady table and index in units, for
// the keeper's break-even: a sparse fire's, alone in its log page (three
// page writes and an index entry, the callback's reads: W5's units a
// trigger in `make cost`), where the choice between the modes is close; a
// dense load is far past the break-even either way, and auto scaling
// sizes its capacity from what it really consumes.
var PerFire = map[string][]capacity.Part{
	dynamostore.TableLogs: {{Index: "", WritePerFire: 2.95, ReadPerFire: 1.5}, {Index: "byTime", WritePerFire: 0.93}},
	// The scan's advance and the dispatch's reads of the job; byGroup and
	// byShard change only when jobs are created or edited.
	dynamostore.TableJobs: {{Index: "", WritePerFire: 0.084, ReadPerFire: 1.02}, {Index: "due", WritePerFire: 0.17, ReadPerFire: 0.03},
		{Index: "byGroup"}, {Index: "byShard"}},
}

// keepers builds the capacity keepers of awsconfig.SteadyTables when the
// stack deploys them provisioned.
func keepers(b *wiring.Base) ([]keeper, error) {
	if !b.Config.Provisioned {
		return nil, nil
	}
	api, ok := b.Deps.DynamoDB.(dynamocapacity.API)
	if !ok {
		return nil, fmt.Errorf("lambda scan: the DynamoDB client cannot describe or update tables (capacity keeper)")
	}
	p := capacity.DefaultPolicy()
	p.Min = cmp.Or(b.Config.CapacityMin, p.Min)
	p.Max = cmp.Or(b.Config.CapacityMax, p.Max)
	if u := b.Config.TargetUtilization; u > 0 {
		p.Target = u / 100
	}
	var out []keeper
	for _, t := range awsconfig.SteadyTables {
		parts, ok := PerFire[t]
		if !ok {
			return nil, fmt.Errorf("lambda scan: no per-fire units for steady table %s", t)
		}
		name := b.Config.TablePrefix + "-" + t
		out = append(out, keeper{name: name, k: capacity.New(p, parts, b.Clock), table: dynamocapacity.New(api, name)})
	}
	return out, nil
}

// New builds the scan function on b.
func New(b *wiring.Base) (*Function, error) {
	b.Queues.PaceRing(sqsqueue.Pacing{Window: wiring.RingWindow, MaxWait: ringPaceWait})
	s, err := scan.New(scan.Config{Tunables: Tunables(b), Jobs: b.Store, Leases: b.Store, Queues: b.Queues,
		Clock: b.Clock, Logger: b.Log, Owner: b.Deps.Owner})
	if err != nil {
		return nil, fmt.Errorf("lambda scan: %w", err)
	}
	ks, err := keepers(b)
	if err != nil {
		return nil, err
	}
	return &Function{b: b, scanner: s, keepers: ks}, nil
}

// Build is New as a wiring.Builder: the scan main's whole wiring.
func Build(b *wiring.Base) (any, error) {
	f, err := New(b)
	if err != nil {
		return nil, err
	}
	return f.Handle, nil
}

// Handle runs one tick over every shard that has a job due within
// ScanHorizon and whose lease it can take (several concurrently), then
// releases the leases for the next minute's invocation. A tick that
// failed returns an error: the scan-stalled alarm counts invocations
// without one (AWS/Lambda Invocations − Errors), so no custom metric is
// paid for to say that a tick completed.
func (f *Function) Handle(ctx context.Context, _ events.EventBridgeEvent) error {
	defer f.scanner.ReleaseAll(context.WithoutCancel(ctx))
	st, err := f.scanner.Tick(ctx)
	if err != nil {
		return fmt.Errorf("scan: %w", err)
	}
	// Zeros are left out (EMF.Put): an idle scan writes no metric.
	f.b.EMF.Put(map[string]float64{wiring.MetricScanJobs: float64(st.Jobs),
		wiring.MetricFires: float64(st.RingFires + st.NowFires), wiring.MetricMisfires: float64(st.MisfiredDoNothing + st.MisfiredFireOnceNow)})
	f.b.Log.DebugContext(ctx, "scan tick", "shards", st.Shards, "jobs", st.Jobs, "ring", st.RingFires, "now", st.NowFires,
		"misfires", st.Misfires, "conflicts", st.Conflicts, "truncated", st.Truncated, "took", st.Duration)
	// The keepers count this tick's fires; a failed read or switch is
	// tried again next minute and never fails the tick.
	for _, k := range f.keepers {
		sw, ok, err := k.k.Tick(ctx, k.table, st.RingFires+st.NowFires)
		if err != nil {
			f.b.Log.WarnContext(ctx, "capacity keeper", "table", k.name, "err", err)
		} else if ok {
			f.b.Log.InfoContext(ctx, "capacity keeper switched", "table", k.name, "to", sw.To.String(), "capacity", sw.Capacity)
		}
	}
	return nil
}
