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

	"github.com/xjobdev/xjob/internal/adapter/sqsqueue"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
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

// ringLead is how long before its second a ring bucket is visible at the
// latest. The ring queue is paced (sqsqueue.Pacing): the scan waits for
// the millisecond phase at which SQS's whole-second delay makes a bucket
// visible between ringLead + wiring.RingWindow and ringLead before its
// second (so the ring function waits about that long for the instant,
// rather than anywhere up to a second), for at most ringPaceWait per page
// of due jobs; a page that sends more than fits in the phase sends the
// rest at once, visible up to a second earlier still — never later. The
// lead covers the mapping's delivery and the ring's preparation (the
// bucket's job reads and claims ahead), so that at the instant only the
// executor calls remain.
const ringLead = 250 * time.Millisecond

// ringPaceWait bounds the scan's waits for the ring's phase per page of
// due jobs (one ring send): one second holds the next phase whatever the
// clock.
const ringPaceWait = time.Second

// Tunables are the scanner's tunables on AWS: the function's shards and
// scan advance, the values above, and any overrides the Deps carry
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
		sc.RingLead = ringLead
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
}

// New builds the scan function on b.
func New(b *wiring.Base) (*Function, error) {
	b.Queues.PaceRing(sqsqueue.Pacing{Window: wiring.RingWindow, MaxWait: ringPaceWait})
	s, err := scan.New(scan.Config{Tunables: Tunables(b), Jobs: b.Store, Leases: b.Store, Queues: b.Queues,
		Clock: b.Clock, Logger: b.Log, Owner: b.Deps.Owner})
	if err != nil {
		return nil, fmt.Errorf("lambda scan: %w", err)
	}
	return &Function{b: b, scanner: s}, nil
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
	return nil
}
