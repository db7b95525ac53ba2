package harness

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/driver"
)

// AWSResult is what a run on the emulated AWS stack adds to a Result: the
// AWS requests the window's triggers cost and their price.
type AWSResult struct {
	// Cost prices the window's metered requests per trigger (triggers =
	// trigger logs scheduled in the window).
	Cost awsstack.Cost `json:"cost"`
	// Usage is the raw metered window: requests per function and
	// operation, invocations, HTTP API requests.
	Usage awsstack.Usage `json:"usage"`
	// Emulators is the kernel's accounting of dynalite and fauxqs;
	// HarnessCPUSeconds the bench process's own CPU over the run, which
	// holds the five functions, the pollers, the executor and the harness.
	Emulators         []awsstack.ProcessUsage `json:"emulators"`
	HarnessCPUSeconds float64                 `json:"harnessCpuSeconds"`
	RingPollers       int                     `json:"ringPollers"` // the ring mapping's; the lanes are asynchronous invocations
	InvocationErrors  []string                `json:"invocationErrors,omitempty"`
}

// AWSOptions tune the emulated deployment of an AWS run.
type AWSOptions struct {
	// RingPollers is the ring mapping's concurrent batches (the lanes
	// have no mapping: they are asynchronous invocations).
	RingPollers int
}

// SteadyAWS is Steady on the emulated AWS stack (internal/testenv/awsstack) instead
// of `xjob local`: the same executor and workload through the same admin
// API, the same analysis, plus the AWS requests per trigger and $ per
// million triggers. Fault variants (KillEvery, Procs) do not apply.
func SteadyAWS(ctx context.Context, env *Env, s SteadySpec, o AWSOptions) (*Result, error) {
	res := &Result{Scenario: s.Name, Jobs: s.Jobs, Stored: s.Jobs, Started: time.Now().UTC()}
	if s.KillEvery > 0 || s.Procs > 1 || s.Profile {
		return nil, fmt.Errorf("%s: the AWS run has no kill, race or profile variant", s.Name)
	}
	dir, err := os.MkdirTemp(env.Work, s.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	logPath := filepath.Join(dir, "functions.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	defer logf.Close()
	exe, err := StartExecutor()
	if err != nil {
		return nil, err
	}
	defer exe.Close()

	cpu0 := selfCPU()
	d, err := awsstack.Start(ctx, awsstack.Options{Root: env.Root, Shards: env.Shards, Logger: slog.New(scanTickFilter{
		slog.NewJSONHandler(logf, &slog.HandlerOptions{Level: slog.LevelDebug})}),
		RingPollers: o.RingPollers})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	defer d.Close()
	exe.SetAdmin(d.ExecutorURL())
	exe.SetAccessToken(d.AccessToken())
	env.logf("%s: emulated AWS deployment up, HTTP API at %s", s.Name, d.URL())

	api, err := adminclient.New(d.URL(), d.AdminToken())
	if err != nil {
		return nil, err
	}
	t := time.Now()
	jobs, err := createJobs(ctx, api, d.AdminToken(), exe.Address(), s.Jobs, func(int) string { return "* * * * * ?" })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	env.logf("%s: created %d jobs through the API in %s", s.Name, len(jobs), time.Since(t).Round(time.Millisecond))

	from := time.Now().Add(warmup).Truncate(time.Second).Add(time.Second)
	win := Interval{From: from.UnixMilli(), To: from.Add(s.Window).UnixMilli()}
	env.logf("%s: measuring %s from %s", s.Name, s.Window, from.Format("15:04:05"))
	if err := sleepUntil(ctx, from); err != nil {
		return nil, err
	}
	before := d.Meter().Snapshot()
	if err := sleepUntil(ctx, from.Add(s.Window)); err != nil {
		return nil, err
	}
	window := d.Meter().Snapshot().Sub(before)
	// Lambda's pipeline has more hops than local mode: give the window's
	// last fires longer to arrive.
	if err := sleepUntil(ctx, time.Now().Add(max(s.MinSettle, 10*time.Second))); err != nil {
		return nil, err
	}
	logs, err := readDynamoLogs(ctx, d.Store(), win)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	d.Close()
	var invErrs []string
	for _, e := range d.Errors() {
		invErrs = append(invErrs, e.Error())
	}
	cbOK, cbKO := exe.CallbackStats()
	res.CallbacksOK, res.CallbacksKO = cbOK, cbKO

	res.Window = win
	_ = logf.Sync()
	passed := map[int64][]Interval{}
	_ = ReadPassed(logPath, passed)
	res.Outcome = Analyze(Expectation{Jobs: jobs, Window: win, Period: 1000, Passed: passed}, logs, exe.Receipts())
	aws := &AWSResult{Usage: window, Cost: window.Cost(len(logs), awsstack.ListPrices()), Emulators: d.EmulatorUsage(),
		HarnessCPUSeconds: selfCPU() - cpu0, RingPollers: o.RingPollers, InvocationErrors: invErrs}
	res.AWS = aws
	res.Usage = Usage{CPUSeconds: aws.HarnessCPUSeconds, PeakRSSMB: selfRSSMB(), Processes: 1}
	for _, e := range aws.Emulators {
		res.Usage.CPUSeconds += e.CPUSeconds
		res.Usage.PeakRSSMB = max(res.Usage.PeakRSSMB, e.PeakRSSMB)
		res.Usage.Processes++
	}
	_ = logf.Sync()
	res.XjobErrors = CountLines(logPath, "ERROR")
	ticks, _ := ReadScanTicks(logPath)
	var ms []float64
	for _, tk := range ticks {
		if win.contains(tk.At.UnixMilli()) {
			ms = append(ms, float64(tk.Took.Microseconds())/1000)
		}
	}
	res.ScanTick = Summarise(ms)
	res.Notes = append(res.Notes,
		"emulated AWS (dynalite + fauxqs): cpu s = the bench process (functions, pollers, executor, harness) + both emulators; rss = the largest of them",
		fmt.Sprintf("aws: %.2f AWS requests/trigger (DynamoDB %.2f, SQS+SNS %.2f incl. event-source polling), %.3f Lambda invocations/trigger, $%.2f per million triggers at list prices (128 MB, measured handler time; DynamoDB units %s)",
			aws.Cost.AWSRequestsPerTrigger, aws.Cost.DynamoDBPerTrigger, aws.Cost.SQSPerTrigger, aws.Cost.InvocationsPerTrigger,
			aws.Cost.TotalPerM, capacitySource(aws.Cost.CapacityReported)))
	cleanup(env, dir)
	return res, nil
}

func capacitySource(reported bool) string {
	if reported {
		return "as dynalite reports them, base table only (GSI writes not included)"
	}
	return "derived from request shapes"
}

// readDynamoLogs reads the trigger logs scheduled in iv from the
// deployment's (un-metered) store: every log triggered from iv.From − 10 s
// to iv.To + 10 min, newest first, filtered by scheduled time.
func readDynamoLogs(ctx context.Context, st driver.LogStore, iv Interval) ([]LogRow, error) {
	var out []LogRow
	p := driver.LogListParams{From: iv.From - 10_000, To: iv.To + 600_000, Limit: 1000}
	for {
		page, err := st.LogList(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("read logs: %w", err)
		}
		for _, l := range page.Logs {
			if iv.contains(l.ScheduledTime) {
				out = append(out, LogRow{ID: l.ID, JobID: l.JobID, Scheduled: l.ScheduledTime,
					TriggerType: string(l.TriggerType), TriggerCode: l.TriggerCode, TriggerMsg: l.TriggerMsg})
			}
		}
		if page.Next == "" {
			return out, nil
		}
		p.Cursor = page.Next
	}
}

func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func selfRSSMB() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // Linux: KiB
}

// scanTickFilter keeps the functions' log at info and above, plus the
// scan's "scan tick" debug lines the report reads tick times from (the
// per-trigger debug lines would cost more than they tell).
type scanTickFilter struct{ slog.Handler }

func (f scanTickFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return f.Handler.Enabled(ctx, l)
}

func (f scanTickFilter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelInfo && r.Message != "scan tick" && r.Message != "scan: fires passed over" {
		return nil
	}
	return f.Handler.Handle(ctx, r)
}

func (f scanTickFilter) WithAttrs(as []slog.Attr) slog.Handler {
	return scanTickFilter{f.Handler.WithAttrs(as)}
}

func (f scanTickFilter) WithGroup(name string) slog.Handler {
	return scanTickFilter{f.Handler.WithGroup(name)}
}
