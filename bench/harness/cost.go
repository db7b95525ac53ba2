package harness

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/app/lambdaapp"
	"github.com/xjobdev/xjob/internal/scheduler/scan"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Workload is one `make cost` workload, run at a reduced rate on the
// emulated stack.
type Workload struct {
	Name string
	// Cron returns job i's schedule; PerJobPerSecond is each job's fire
	// rate, so Jobs×PerJobPerSecond is the workload's trigger rate.
	Cron            func(i int) string
	PerJobPerSecond float64
	// FullJobs is the real workload's job count (the rate it is priced at).
	FullJobs int
	// MinuteSecond, for a workload of jobs firing once a minute, returns
	// the second of the minute job i fires at; the outcome (lost,
	// duplicates, lateness) is then matched per job against those fires.
	MinuteSecond func(i int) int
	// Lead, when set, is how long after the jobs' start the window opens
	// (default: a warm-up). A workload of once-a-minute jobs with FullJobs
	// set and no Lead is started without the admin's push of its first
	// fires (startUnpushed) and its window opens once a scan has planned
	// every job; with a Lead it is started by the admin's bulk start, as
	// the others are, and a Lead past the pushed fires (151 s: the scan
	// horizon) makes the window hold fires the scan planned.
	Lead time.Duration
	// AdvanceRate is the scan's advances a second per shard
	// (scan.Config.AdvanceRate): 0 the scan function's default, −1 none.
	// A run at a fraction of FullJobs that projects its hottest keys to
	// the full rate scales the rate by the same fraction.
	AdvanceRate int
	// CallbackBatch is the executor's callback batch limit (0: 1000, as
	// xxl-job's callback thread drains its queue; 1: one result per request).
	CallbackBatch int
	// Executors, when set, serves the jobs with a fleet of that many
	// xxl-job-like executors (StartXXLExecutor: one callback sender each,
	// draining what has queued per request) in one group, with the jobs'
	// route Route.
	Executors int
	Route     xjob.RouteStrategy
	// HTTPTarget makes the jobs HTTP jobs (glue type HTTP, no executor):
	// the deployment's ring and dispatch functions call a loopback
	// endpoint themselves (startHitEndpoint, answering 200 at once), whose
	// receipts are the outcome's.
	HTTPTarget bool
	// Shards and LogPages, when set, deploy the workload with that many
	// scan shards and log pages a second instead of the Env's shards and
	// the stack's 16 pages (docs/aws.md's sparse deployment: 1 and 1).
	Shards, LogPages int
	// Memory, when set, runs these functions' bootstraps (Env.Bootstraps)
	// at that memory in MB instead of the Env's; the caller prices the
	// run at the same memory (awsstack.Prices.Memory).
	Memory map[string]int
}

// shards is the workload's scan shard count: its own, else env's.
func (w Workload) shards(env *Env) int { return cmp.Or(w.Shards, env.Shards) }

// bootstrapMemory is env's bootstrap memory with w's overrides.
func (w Workload) bootstrapMemory(env *Env) map[string]int {
	if len(w.Memory) == 0 || env.Bootstraps == "" {
		return env.BootstrapMemory
	}
	m := maps.Clone(env.BootstrapMemory)
	if m == nil {
		m = map[string]int{}
	}
	maps.Copy(m, w.Memory)
	return m
}

// CostSample is one metered window of a workload at one rate.
type CostSample struct {
	Jobs     int
	Rate     float64 // triggers per second offered
	Seconds  float64
	Triggers int // trigger logs scheduled in the window
	Usage    awsstack.Usage
	Outcome  Outcome
	// Hottest is the window's busiest item and partition key (one-second
	// peaks) and the requests throttled at DynamoDB's per-partition limits.
	Hottest awsstack.Hottest
	// PlanningHottest is the same for the scan before the window, which
	// advances every job (the due index's burst).
	PlanningHottest awsstack.Hottest
	// Environments counts the execution environments each function had.
	Environments map[string]int
	// Advances is how the window's scan advances were priced.
	Advances SteadyAdvances
	// Tables is each table's and index's load per second in the window
	// (what provisioned capacity would serve: ProvisionedDelta).
	Tables map[string][]awsstack.TableLoad
	// ResultLag is how long a sample of the window's results took from
	// the executor's callback to their logs showing them through the
	// admin API (nil: not measured, Env.NoResultLag or no jobs).
	ResultLag *LagReport
}

// ProvisionedDelta is what the window costs more (less, when negative)
// with p's tables on provisioned capacity than on demand: capacity-hours
// in place of their request units.
//
// The capacity keeper, when p models it, judges the window's trigger rate.
func ProvisionedDelta(s *CostSample, p awsstack.Provisioned, on awsstack.Prices, cp awsstack.CapacityPrices) (delta float64, c awsstack.CapacityCost) {
	if s.Seconds > 0 {
		p.Rate = float64(s.Triggers) / s.Seconds
	}
	c = p.Price(s.Tables, s.Seconds, awsstack.TablePrefix, on, cp)
	return c.Dollars - c.OnDemand, c
}

// FitPerM prices a window-dollar figure of two samples at w's full rate,
// per million triggers, as ScaleCost fits each component (fixed per
// second + per trigger through the two points), without clamping: a
// delta may be negative.
func FitPerM(w Workload, lo, hi *CostSample, dl, dh float64) float64 {
	full := float64(w.FullJobs) * w.PerJobPerSecond
	tl, th := float64(lo.Triggers), float64(hi.Triggers)
	var b float64
	if th/hi.Seconds != tl/lo.Seconds {
		b = (dh/hi.Seconds - dl/lo.Seconds) / (th/hi.Seconds - tl/lo.Seconds)
	}
	a := (dh - b*th) / hi.Seconds
	return (a/full + b) * 1e6
}

// SteadyAdvances prices a window's scan advances at the steady state's
// rate: Planned advances were metered outside the window (the jobs' first
// planning), InWindow happened inside it, and Steady is how many the
// steady state makes in a window (jobs × window ÷ planning cycle).
type SteadyAdvances struct {
	Planned, InWindow int
	Steady            float64
}

// Apply returns the window's usage with its InWindow advances replaced by
// Steady ones, each priced at planning's requests per advance (planning
// is the scan function's usage over the Planned advances: its updates,
// index entries and ring sends). The scan's invocations and their time
// are the window's as measured: they are per invocation (the due-index
// reads, the wait for the ring's phase), not per advance.
func (a SteadyAdvances) Apply(window, planning awsstack.Usage) awsstack.Usage {
	if a.Planned == 0 {
		return window
	}
	requests := awsstack.Usage{Ops: planning.Ops}
	return window.Add(requests.Scale((a.Steady - float64(a.InWindow)) / float64(a.Planned)))
}

// jobVersions sums the versions of jobs ids and returns each: the scan's
// advances are the only writes that change them while a workload runs.
func jobVersions(ctx context.Context, d *awsstack.Deployment, ids []int64) (int, map[int64]int64, error) {
	sum, each := 0, make(map[int64]int64, len(ids))
	for i := 0; i < len(ids); i += 100 {
		js, err := d.Store().JobGetMany(ctx, ids[i:min(i+100, len(ids))])
		if err != nil {
			return 0, nil, fmt.Errorf("read job versions: %w", err)
		}
		for _, j := range js {
			sum += int(j.Version)
			each[j.ID] = j.Version
		}
	}
	return sum, each, nil
}

// startUnpushed starts stopped jobs as the admin's start writes them —
// running, last fire 0, next fire the schedule's first after at (the
// admin's: after now), revision bumped — through the deployment's
// un-metered store, but without the admin's push of the fires within the
// scan's horizon. The admin pushes those itself because a scan that ran
// before the start may have planned past them; here the planning scan
// runs after the start and plans each job from its first fire, as it
// plans every job in the steady state. A bulk start's push would put the
// first 150 s of fires on the ring in one message per bulk request of
// 1,000 jobs and second, a transient the window would have to wait out.
// at leaves the planning scan time to send the jobs' buckets before their
// first fires (planningTime, counted from before the start, bounds the
// whole scan; it sends a page's buckets before it advances the page's
// jobs at its paced rate): fires the scan finds already past would go to
// a dispatch lane at once, a burst the steady state does not have.
// Writes that go nowhere near the window are not metered, as the API's
// are not.
func startUnpushed(ctx context.Context, st driver.JobStore, ids []int64, at time.Time) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for lo := 0; lo < len(ids); lo += 100 {
		chunk := ids[lo:min(lo+100, len(ids))]
		g.Go(func() error {
			js, err := st.JobGetMany(ctx, chunk)
			if err != nil {
				return fmt.Errorf("start jobs: %w", err)
			}
			for _, j := range js {
				now := time.Now()
				sched, err := j.Schedule()
				if err != nil {
					return fmt.Errorf("start job %d: %w", j.ID, err)
				}
				from := now
				if at.After(now) {
					from = at
				}
				next, ok := sched.Next(from)
				if !ok {
					return fmt.Errorf("start job %d: no fire time after now", j.ID)
				}
				j.TriggerStatus, j.TriggerLastTime, j.TriggerNextTime = xjob.StatusRunning, 0, next.UnixMilli()
				j.Revision, j.UpdatedAt = j.Revision+1, now.UnixMilli()
				if _, err := st.JobUpdate(ctx, driver.JobUpdateParams{Job: j, ExpectVersion: j.Version}); err != nil {
					return fmt.Errorf("start job %d: %w", j.ID, err)
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// planningTime bounds how long the scan takes to plan jobs just started
// on shards shards at rate advances a second per shard (0: the scan
// function's default, −1 unpaced), with room for its ring sends.
func planningTime(jobs, shards, rate int) time.Duration {
	if rate == 0 {
		rate = lambdaapp.DefaultScanAdvanceRate
	}
	d := 5 * time.Second
	if rate > 0 && shards > 0 {
		d += time.Duration(1.2 * float64(jobs) / float64(shards*rate) * float64(time.Second))
	}
	// A job whose first fire lies beyond the scan horizon (150 s) would
	// not be due for the planning scan.
	return min(d, time.Minute)
}

// CostRun measures workload w at jobs jobs for window on a fresh emulated
// deployment (shards scan shards; pollers as in the templates' defaults).
func CostRun(ctx context.Context, env *Env, w Workload, jobs int, window time.Duration) (*CostSample, error) {
	t0 := time.Now()
	exe, err := StartFleet(w.Executors, w.Executors > 0)
	if err != nil {
		return nil, err
	}
	defer exe.Close()
	if w.CallbackBatch > 0 {
		exe.SetCallbackBatch(w.CallbackBatch)
	}
	d, err := awsstack.Start(ctx, awsstack.Options{Root: env.Root, Shards: w.shards(env), LogPages: w.LogPages, Logger: slog.New(slog.DiscardHandler),
		RingPollers: 5, SyncCallbacks: env.SyncCallbacks, ReservedConcurrency: env.ReservedConcurrency, ColdStarts: env.ColdStarts,
		CustomMetrics: env.CustomMetrics, Bootstraps: env.Bootstraps, BootstrapMemory: w.bootstrapMemory(env), CPUShare: env.BootstrapCPUShare, Scan: scan.Tunables{AdvanceRate: w.AdvanceRate, RingLead: env.RingLead}})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.Name, err)
	}
	defer d.Close()
	env.logf("%s: stack up in %s", w.Name, time.Since(t0).Round(time.Millisecond))
	exe.SetAdmin(d.ExecutorURL())
	exe.SetAccessToken(d.AccessToken())
	hit := ""
	if w.HTTPTarget {
		// The endpoint records into the first executor's receipts (it has
		// no job of its own): the outcome is analysed as for executors.
		var stopHit func()
		if hit, stopHit, err = startHitEndpoint(exe[0]); err != nil {
			return nil, fmt.Errorf("%s: %w", w.Name, err)
		}
		defer stopHit()
	}
	api, err := adminclient.New(d.URL(), d.AdminToken())
	if err != nil {
		return nil, err
	}
	// A workload of jobs that fire once a minute is started without the
	// admin's push (see startUnpushed) unless a Lead is asked for: the
	// planning scan then plans every job at once and the window opens
	// when it is done, on fires the scan planned.
	unpushed := w.FullJobs > 0 && w.PerJobPerSecond < 1 && w.Lead == 0
	t := time.Now()
	var ids []int64
	firstFires := time.Now() // unpushed: the jobs fire from then on
	if jobs > 0 {
		if unpushed {
			ids, err = createStoppedJobs(ctx, api, d.AdminToken(), exe.Addresses(), w.Route, jobs, w.Cron)
			if err == nil {
				env.logf("%s: %d jobs created stopped in %s", w.Name, jobs, time.Since(t).Round(time.Millisecond))
				firstFires = time.Now().Add(planningTime(jobs, w.shards(env), w.AdvanceRate))
				err = startUnpushed(ctx, d.Store(), ids, firstFires)
			}
		} else if w.HTTPTarget {
			// Created stopped and started in bulk, as W1's jobs are.
			ids, err = createHTTPJobsAs(ctx, api, d.AdminToken(), hit, jobs, w.Cron(0), xjob.StatusStopped)
			if err == nil {
				err = startJobs(ctx, api, d.AdminToken(), ids)
			}
		} else {
			ids, err = createJobsOn(ctx, api, d.AdminToken(), exe.Addresses(), w.Route, jobs, w.Cron)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.Name, err)
		}
	}
	env.logf("%s: %d jobs created in %s", w.Name, jobs, time.Since(t).Round(time.Millisecond))
	created := d.Meter().Snapshot()
	// The jobs' versions when they were started (v0) and at the window's
	// start (v1): the advances the scans made in between.
	var v0, v1 int
	var startVersions map[int64]int64
	if w.FullJobs > 0 {
		if v0, startVersions, err = jobVersions(ctx, d, ids); err != nil {
			return nil, fmt.Errorf("%s: %w", w.Name, err)
		}
	}
	lead := warmup
	if w.Lead > 0 {
		lead = w.Lead
	}
	at := time.Now()
	if unpushed {
		// The pipeline warms on the jobs' first fires, as W1's does.
		at = firstFires
	}
	from := at.Add(lead).Truncate(time.Second).Add(time.Second)
	win := Interval{From: from.UnixMilli(), To: from.Add(window).UnixMilli()}
	// The scan runs once a minute and advances a due job once per
	// planning cycle (lambdaapp.DefaultScanAdvance − ScanHorizon, ~11.5
	// minutes), far longer than a window, so the window is priced at the
	// steady state's advances rather than at those it happens to hold.
	// The scans from the jobs' start to the window's start (the first
	// planning, which advances every job once) are metered on their own:
	// their requests per advance are what an advance costs (its update,
	// index entries and ring sends). The window's own scans are kept (the
	// once-a-minute due-index reads, leases, invocations and their time)
	// with their advances replaced by the steady state's,
	// jobs × window ÷ cycle, at those requests per advance. Advances are
	// counted from the jobs' versions, which only an advance changes
	// during the run.
	var (
		planning awsstack.Usage
		planHot  awsstack.Hottest
	)
	if w.FullJobs > 0 {
		if !unpushed {
			if err := sleepUntil(ctx, from); err != nil {
				return nil, err
			}
		}
		d.Meter().ResetHot()
		tp := time.Now()
		// Unpushed jobs are all due: the scan plans them now, in as many
		// invocations as its pace needs (a once-a-minute invocation of the
		// schedule may hold some shards' leases meanwhile).
		for try := 0; ; try++ {
			if err := d.Scan(ctx); err != nil {
				return nil, fmt.Errorf("%s: scan at the window start: %w", w.Name, err)
			}
			var vs map[int64]int64
			if v1, vs, err = jobVersions(ctx, d, ids); err != nil {
				return nil, fmt.Errorf("%s: %w", w.Name, err)
			}
			left := 0
			for id, v := range vs {
				if v == startVersions[id] {
					left++
				}
			}
			if !unpushed || left == 0 {
				break
			}
			if try == 20 {
				return nil, fmt.Errorf("%s: %d of %d jobs still unplanned after %d scans", w.Name, left, len(ids), try+1)
			}
			env.logf("%s: %d jobs left to plan", w.Name, left)
			if err := sleepUntil(ctx, time.Now().Add(time.Second)); err != nil {
				return nil, err
			}
		}
		planning = d.Meter().Snapshot().Sub(created).Only("scan")
		env.logf("%s: planning scan took %s", w.Name, time.Since(tp).Round(time.Millisecond))
		// The scan's advances burst on the due index (every job of a
		// shard comes due at once after a bulk start); a paced scan takes
		// its time over them, and the window opens once it is done.
		planHot = d.Meter().Hottest()
		if now := time.Now(); now.After(from) {
			from = now.Truncate(time.Second).Add(time.Second)
			win = Interval{From: from.UnixMilli(), To: from.Add(window).UnixMilli()}
		}
	}
	// The result lag: a sample of the window's results, each read through
	// the admin API until its log shows it. The reads go to the web
	// function, which nothing else invokes in the window; the meter leaves
	// it out, so that they are not priced as the workload's.
	var lag *ResultLag
	lagDone := make(chan error, 1)
	if jobs > 0 && !env.NoResultLag {
		d.Meter().Exclude(lagFunction)
		warmReaders(ctx, api)
		lag = NewResultLag(ResultLagOptions{From: from, To: from.Add(window),
			Every: LagEvery(float64(jobs)*w.PerJobPerSecond, window, DefaultLagSamples)})
		exe.OnCallback(lag.Offer)
		lagCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { lagDone <- lag.Run(lagCtx, resultShown(api)) }()
	}
	if err := sleepUntil(ctx, from); err != nil {
		return nil, err
	}
	env.logf("%s: window opens (%s)", w.Name, window)
	before := d.Meter().Snapshot()
	d.Meter().ResetHot()
	if err := sleepUntil(ctx, from.Add(window)); err != nil {
		return nil, err
	}
	hot := d.Meter().Hottest()
	tables := d.Meter().TableSeconds()
	if w.FullJobs > 0 {
		if err := d.Scan(ctx); err != nil {
			return nil, fmt.Errorf("%s: scan at the window end: %w", w.Name, err)
		}
	}
	usage := d.Meter().Snapshot().Sub(before)
	// The window's length prices its custom metrics' share of a month
	// (the scan at its end is the window's, not more time).
	usage.Seconds = window.Seconds()
	var advances SteadyAdvances
	if w.FullJobs > 0 && v1 > v0 {
		v2, _, err := jobVersions(ctx, d, ids)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.Name, err)
		}
		cycle := lambdaapp.DefaultScanAdvance - lambdaapp.ScanHorizon
		advances = SteadyAdvances{Planned: v1 - v0, InWindow: v2 - v1,
			Steady: float64(jobs) * window.Seconds() / cycle.Seconds()}
		usage = advances.Apply(usage, planning)
	}
	// The window's last fires reach the executors and their logs; a run
	// without jobs has none to wait for.
	if jobs > 0 {
		if err := sleepUntil(ctx, time.Now().Add(10*time.Second)); err != nil {
			return nil, err
		}
	}
	var lagReport *LagReport
	if lag != nil {
		if err := <-lagDone; err != nil {
			return nil, fmt.Errorf("%s: result lag: %w", w.Name, err)
		}
		r := lag.Report()
		r.Queued, r.Requests = ResultPaths(usage)
		lagReport = &r
	}
	logs, err := readDynamoLogs(ctx, d.Store(), win)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.Name, err)
	}
	env.logf("%s: window closed; outcome read %s after it", w.Name, time.Since(from.Add(window)).Round(time.Millisecond))
	s := &CostSample{Jobs: jobs, Rate: float64(jobs) * w.PerJobPerSecond, Seconds: window.Seconds(), Triggers: len(logs), Usage: usage,
		Hottest: hot, PlanningHottest: planHot, Environments: map[string]int{}, Advances: advances, Tables: tables, ResultLag: lagReport}
	for _, fn := range []string{"ring", "dispatch", "callback", "registry"} {
		s.Environments[fn] = d.Environments(fn)
	}
	switch {
	case jobs > 0 && w.PerJobPerSecond >= 1:
		s.Outcome = Analyze(Expectation{Jobs: ids, Window: win, Period: 1000}, logs, exe.Receipts())
	case jobs > 0 && w.MinuteSecond != nil:
		s.Outcome = Analyze(Expectation{Jobs: ids, Window: win, Each: minuteFires(ids, w.MinuteSecond, win)}, logs, exe.Receipts())
	default:
		s.Outcome = Analyze(Expectation{Window: win, Period: 1000}, logs, exe.Receipts())
	}
	return s, nil
}

// minuteFires lists each job's fire times within win when job i fires
// once a minute at second sec(i) (ids[i] is job i's id).
func minuteFires(ids []int64, sec func(i int) int, win Interval) map[int64][]int64 {
	out := make(map[int64][]int64, len(ids))
	for i, id := range ids {
		for t := (win.From + 999) / 1000 * 1000; t < win.To; t += 1000 {
			if (t/1000)%60 == int64(sec(i)) {
				out[id] = append(out[id], t)
			}
		}
	}
	return out
}

// Component is one (function, service) share of a workload's cost.
type Component struct {
	Function, Service string
}

// componentDollars splits a sample's cost into (function, service)
// dollars: DynamoDB request units, DynamoDB storage, CloudWatch Logs
// ingestion and storage, custom metrics, SQS/SNS, Lambda requests,
// duration (billed per invocation) and cold starts' Init, HTTP API.
func componentDollars(u awsstack.Usage, p awsstack.Prices) map[Component]float64 {
	out := map[Component]float64{}
	c := u.Cost(1_000_000, p) // $/M at 1 M triggers = the window's dollars
	for _, f := range c.Functions {
		out[Component{f.Function, "dynamodb"}] += f.DynamoDBPerM
		out[Component{f.Function, "storage"}] += f.StoragePerM
		out[Component{f.Function, "retention"}] += f.RetentionPerM
		out[Component{f.Function, "logs"}] += f.LogsPerM
		out[Component{f.Function, "logs-storage"}] += f.LogsStoragePerM
		out[Component{f.Function, "metrics"}] += f.MetricsPerM
		out[Component{f.Function, "lambda-init"}] += f.LambdaInitPerM
		out[Component{f.Function, "sqs+sns"}] += f.SQSPerM
		out[Component{f.Function, "lambda-req"}] += f.LambdaRequestsPerM
		out[Component{f.Function, "lambda-gbs"}] += f.LambdaDurationPerM
	}
	out[Component{"http api", "apigw"}] += c.HTTPPerM
	return out
}

// Scaled is a workload priced at its full rate from two samples at
// different rates: per component, dollars = fixed per second + variable
// per trigger (least squares through the two points, each clamped at 0).
// Per-bucket costs (a ring bucket per shard-second) and per-request costs
// of batched callbacks are per second once every second has fires on
// every shard, so they land in the fixed part.
type Scaled struct {
	Workload   string
	FullRate   float64
	PerM       map[Component]float64 // $ per million triggers at the full rate
	TotalPerM  float64
	MeasuredAt float64 // the higher measured rate (triggers/s)
	Measured   float64 // $ per million triggers as measured at that rate
}

// ScaleCost prices w at its full rate from samples lo and hi.
func ScaleCost(w Workload, lo, hi *CostSample, p awsstack.Prices) Scaled {
	full := float64(w.FullJobs) * w.PerJobPerSecond
	dl, dh := componentDollars(lo.Usage, p), componentDollars(hi.Usage, p)
	keys := map[Component]bool{}
	for k := range dl {
		keys[k] = true
	}
	for k := range dh {
		keys[k] = true
	}
	s := Scaled{Workload: w.Name, FullRate: full, PerM: map[Component]float64{}, MeasuredAt: float64(hi.Triggers) / hi.Seconds}
	tl, th := float64(lo.Triggers), float64(hi.Triggers)
	for k := range keys {
		// dollars = a·seconds + b·triggers
		var a, b float64
		if th > tl {
			b = (dh[k]/hi.Seconds - dl[k]/lo.Seconds) / (th/hi.Seconds - tl/lo.Seconds)
		}
		b = max(b, 0)
		a = max((dh[k]-b*th)/hi.Seconds, 0)
		v := (a/full + b) * 1e6
		if v > 0 {
			s.PerM[k] = v
			s.TotalPerM += v
		}
	}
	if hi.Triggers > 0 {
		for _, v := range dh {
			s.Measured += v
		}
		s.Measured *= 1e6 / th
	}
	return s
}

// ByFunction and ByService sum a Scaled's components.
func (s Scaled) ByFunction() [][2]any {
	return sum(s.PerM, func(c Component) string { return c.Function })
}
func (s Scaled) ByService() [][2]any {
	return sum(s.PerM, func(c Component) string { return c.Service })
}

func sum(m map[Component]float64, key func(Component) string) [][2]any {
	t := map[string]float64{}
	for k, v := range m {
		t[key(k)] += v
	}
	names := make([]string, 0, len(t))
	for n := range t {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([][2]any, 0, len(names))
	for _, n := range names {
		out = append(out, [2]any{n, t[n]})
	}
	return out
}

// IdleMonth is the dollars per month of a deployment from a sample with
// no or few triggers: the window's dollars scaled to 30 days.
func IdleMonth(s *CostSample, p awsstack.Prices) (total float64, byFunction, byService map[string]float64) {
	byFunction, byService = map[string]float64{}, map[string]float64{}
	month := 30 * 24 * 3600 / s.Seconds
	for k, v := range componentDollars(s.Usage, p) { // v: the window's dollars
		byFunction[k.Function] += v * month
		byService[k.Service] += v * month
		total += v * month
	}
	return total, byFunction, byService
}
