package harness

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/adminclient"
)

// Env is what every scenario shares: the binaries, where to put temporary
// files and results, and where progress goes.
type Env struct {
	Bin string // the xjob binary the scenarios run
	// Target names Bin in results: "candidate" (the tree the harness
	// runs from) or "baseline" (--baseline-bin / --baseline-rev).
	Target string
	// Label says which code Bin was built from (a git revision or a path).
	Label   string
	Work    string // temporary directory, one sub-directory per run
	Results string // bench/results
	Shards  int
	Log     io.Writer
	Stamp   string // timestamp shared by the run's result files
	// Root is the module root (test/emulators for the AWS runs).
	Root string
	// SyncCallbacks runs the AWS cost runs without the results queue (the
	// callback function applies each request itself), to compare.
	SyncCallbacks bool
	// ReservedConcurrency deploys the AWS cost runs as the templates'
	// ReservedConcurrency=true does (default off, as the templates).
	ReservedConcurrency bool
	// ColdStarts delays each new execution environment's first invocation
	// by its function's Init in the AWS cost runs (awsstack.Options).
	ColdStarts map[string]time.Duration
	// RingLead, when set, overrides the scan's ring lead in the AWS cost
	// runs (how long before its second a ring bucket is visible), to
	// compare leads.
	RingLead time.Duration
	// CustomMetrics deploys the AWS cost runs with the templates'
	// CustomMetrics=true (default off, as the templates): the pipeline's
	// counters as billed CloudWatch custom metrics.
	CustomMetrics bool
	// Bootstraps, when set, runs the AWS cost runs on the functions' real
	// bootstraps in that directory (awsstack.Options.Bootstraps): each
	// invocation's CPU is measured, but the processes' AWS requests are
	// not metered, so only the Lambda figures of such a run count.
	Bootstraps string
	// BootstrapMemory and BootstrapCPUShare run those bootstraps at each
	// function's memory (MB, by name) and at that memory's share of a
	// core (awsstack.Options.BootstrapMemory, CPUShare): the lateness a
	// deployment of those sizes would show.
	BootstrapMemory   map[string]int
	BootstrapCPUShare bool
	// NoResultLag leaves out the AWS cost runs' result lag (ResultLag:
	// the admin API's reads of a sample of results while the window runs).
	NoResultLag bool
	// ChildEnv is added to the environment of every `xjob local` the
	// local scenarios start (a variant target: the candidate binary under
	// another GOGC, say).
	ChildEnv []string
}

func (e *Env) logf(format string, args ...any) {
	fmt.Fprintf(e.Log, "[%s] "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// Result is one scenario's figures, written as JSON and printed as a row.
type Result struct {
	Scenario string    `json:"scenario"`
	Jobs     int       `json:"jobs"`   // jobs in the measured workload
	Stored   int       `json:"stored"` // jobs in the file (scale)
	Started  time.Time `json:"started"`
	Window   Interval  `json:"window"`
	Outcome
	Target string `json:"target"`
	Label  string `json:"label"`
	Usage  Usage  `json:"xjob"`
	// WindowCPUSeconds is xjob's CPU time (/proc) over the measured span:
	// the window (steady) or from just before the scan pre-reads the
	// burst until its last receipt settled (burst, spread).
	// CPUPerTriggerUs divides it by the fires received in it.
	WindowCPUSeconds float64 `json:"windowCpuSeconds"`
	CPUPerTriggerUs  float64 `json:"cpuPerTriggerUs"`
	// HarnessCPUSeconds is the bench process's own CPU (the in-repo
	// executor, the log counter, the HTTP client) over the same span: it
	// shares the cores with xjob, so readers see the split.
	HarnessCPUSeconds float64 `json:"harnessCpuSeconds"`
	// Sustained (steady runs) is true only when every fire of the window
	// was received by its end + steadyGrace: then trig/s is a rate xjob
	// kept up. A run that needed a longer drain (drainSeconds) fell behind,
	// whatever it fired eventually.
	Sustained bool `json:"sustained"`
	// GraceSeconds is the grace Sustained allowed (steady runs only).
	GraceSeconds float64 `json:"graceSeconds,omitempty"`
	// Scan is read from xjob's /v1/metrics at the end of the window
	// (ticks: those in the window; p50/p99: bucket bounds over the
	// process's life). ScanTick is the emulated AWS run's figure, from the
	// scan's "scan tick" log lines.
	Scan     ScanMetrics `json:"scanMetrics"`
	ScanTick Durations   `json:"scanTick,omitempty"`
	// MisfiredByXjob is the misfired + collapsed fire times xjob counted
	// itself (/v1/metrics, over the processes' lives); XjobMetrics are the
	// snapshots it came from.
	MisfiredByXjob int64                  `json:"misfiredByXjob"`
	XjobMetrics    []xjob.MetricsSnapshot `json:"xjobMetrics,omitempty"`
	Restarts       int                    `json:"restarts,omitempty"`
	// SettleSeconds is how long after the window the run waited for the
	// window's late fires (steady runs; see settleWindow).
	SettleSeconds float64    `json:"settleSeconds,omitempty"`
	Outages       []Interval `json:"outages,omitempty"`
	CallbacksOK   int64      `json:"callbacksDelivered"`
	CallbacksKO   int64      `json:"callbacksGivenUp"`
	XjobErrors    int        `json:"xjobErrorLines"`
	// BurstAllFiredMs is, for burst, the time from the common fire second
	// to the last receipt.
	BurstAllFiredMs float64  `json:"burstAllFiredMs,omitempty"`
	Profile         string   `json:"cpuProfile,omitempty"`
	ProfileTop      []string `json:"cpuProfileTop,omitempty"`
	// AllocProfile is the window's allocation profile (SteadySpec.
	// AllocProfile); AllocTop its `go tool pprof -top` tables by bytes
	// and by objects.
	AllocProfile string   `json:"allocProfile,omitempty"`
	AllocTop     []string `json:"allocProfileTop,omitempty"`
	Notes        []string `json:"notes,omitempty"`
	// AWS is set by runs on the emulated AWS stack (SteadyAWS).
	AWS *AWSResult `json:"aws,omitempty"`
	// Memory is set by steady runs with HeapProfile.
	Memory *MemoryFigures `json:"memory,omitempty"`
	// Cluster is set by the cluster runs (RunCluster).
	Cluster *ClusterFigures `json:"cluster,omitempty"`
}

// ScanMetrics are the scan tick figures of /v1/metrics.
type ScanMetrics struct {
	Ticks int64 `json:"ticks"`
	P50Ms int64 `json:"p50Ms"`
	P99Ms int64 `json:"p99Ms"`
}

// SteadySpec describes a steady run and its fault variants.
type SteadySpec struct {
	Name   string
	Jobs   int
	Window time.Duration
	// KillEvery, when set, SIGKILLs xjob this often during the window and
	// restarts it at once (chaos).
	KillEvery time.Duration
	// Procs runs this many `xjob local` processes on the one file (race).
	Procs int
	// Profile takes a CPU profile of the window through --pprof-listen.
	Profile bool
	// HeapProfile samples xjob's memory (RSS, runtime.MemStats,
	// goroutines) every memSampleEvery from the window's start until the
	// run stops, and keeps heap profiles of the window's middle and of the
	// largest RSS (Result.Memory).
	HeapProfile bool
	// AllocProfile takes an allocation profile of the window (the
	// difference of /debug/pprof/allocs at its start and end).
	AllocProfile bool
	// MinSettle is how long after the window receipts are awaited at least
	// (chaos: a dispatch claimed by a killed process returns after the 30 s
	// dispatch visibility timeout).
	MinSettle time.Duration
}

// warmup separates job creation from the measured window: a job created
// (or started) now gets its first fire after now + 5 s (xxl-job computes
// it from now + the pre-read window), so the window starts later than that.
const warmup = 7 * time.Second

// steadyGrace is how long after a steady window its fires may still arrive
// and count as fired in time (dispatch + the executor call of the last
// second's fires): anything later came from a backlog.
const steadyGrace = 2 * time.Second

// harnessCPU is this process's CPU time so far (user + system).
func harnessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Steady creates Jobs every-second CRON jobs through the API and measures
// one window of their fires, optionally killing xjob or racing three of them.
func Steady(ctx context.Context, env *Env, s SteadySpec) (*Result, error) {
	res := env.newResult(s.Name, s.Jobs, s.Jobs)
	dir, err := os.MkdirTemp(env.Work, s.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	db := filepath.Join(dir, "xjob.db")
	exe, err := StartExecutor()
	if err != nil {
		return nil, err
	}
	defer exe.Close()

	xs, err := startXjobs(ctx, env, dir, db, max(1, s.Procs), 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	defer stopAll(xs)
	exe.SetAdmin(xs[0].URL())
	var (
		memStop = make(chan struct{})
		memDone = make(chan *MemoryFigures, 1)
		memWin  = make(chan Interval, 1)
		memOnce sync.Once
		memEnd  = func() { memOnce.Do(func() { close(memStop) }) }
	)
	defer memEnd() // an early return stops the sampler too
	if s.HeapProfile {
		prefix := filepath.Join(env.Results, s.Name+"-"+env.fileTag()+env.Stamp)
		go func() { memDone <- sampleMemory(ctx, xs[0], memWin, prefix, memStop) }()
	} else {
		memDone <- nil
	}

	api, err := adminclient.New(xs[0].URL(), "bench-admin-token")
	if err != nil {
		return nil, err
	}
	t := time.Now()
	jobs, err := createJobs(ctx, api, "bench-admin-token", exe.Address(), s.Jobs, func(int) string { return "* * * * * ?" })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	env.logf("%s: created %d jobs through the API in %s", s.Name, len(jobs), time.Since(t).Round(time.Millisecond))

	from := time.Now().Add(warmup).Truncate(time.Second).Add(time.Second)
	win := Interval{From: from.UnixMilli(), To: from.Add(s.Window).UnixMilli()}
	env.logf("%s: measuring %s from %s", s.Name, s.Window, from.Format("15:04:05"))
	memWin <- win
	counter, err := NewLogCounter(ctx, db, win)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	defer counter.Close()

	// The window's start is sampled beside the kill loop (chaos).
	var (
		cpu0     time.Duration
		hcpu0    time.Duration
		m0       []xjob.MetricsSnapshot
		sampled  = make(chan struct{})
		profErr  = make(chan error, 1)
		allocErr = make(chan error, 1)
	)
	go func() {
		defer close(sampled)
		if sleepUntil(ctx, from) != nil {
			return
		}
		cpu0, hcpu0 = cpuOf(xs), harnessCPU()
		m0, _ = metricsOf(ctx, xs)
		if s.Profile {
			res.Profile = filepath.Join(env.Results, s.Name+"-"+env.fileTag()+env.Stamp+".cpu.pprof")
			go func() { profErr <- xs[0].Profile(ctx, s.Window, res.Profile) }()
		}
		if s.AllocProfile {
			res.AllocProfile = filepath.Join(env.Results, s.Name+"-"+env.fileTag()+env.Stamp+".allocs.pprof")
			go func() { allocErr <- xs[0].AllocProfile(ctx, s.Window, res.AllocProfile) }()
		}
	}()
	if s.KillEvery > 0 {
		for {
			next := time.Now().Add(s.KillEvery)
			if !next.Before(from.Add(s.Window - time.Second)) {
				break
			}
			if err := sleepUntil(ctx, next); err != nil {
				return nil, err
			}
			killed := time.Now()
			xs[0].Kill()
			if err := xs[0].Start(ctx, 30*time.Second); err != nil {
				return nil, fmt.Errorf("%s: restart: %w", s.Name, err)
			}
			// The restarted scanner ticks at the next whole second; a fire
			// planned before that tick may be collapsed or misfired by design.
			ready := time.Now().Truncate(time.Second).Add(time.Second)
			res.Outages = append(res.Outages, Interval{From: killed.UnixMilli(), To: ready.UnixMilli() + 1})
			res.Restarts++
			env.logf("%s: SIGKILL + restart #%d: down %s", s.Name, res.Restarts, time.Since(killed).Round(time.Millisecond))
		}
	}
	if err := sleepUntil(ctx, from.Add(s.Window)); err != nil {
		return nil, err
	}
	<-sampled
	cpu1, hcpu1 := cpuOf(xs), harnessCPU()
	res.scrape(ctx, xs, m0)
	// The jobs keep firing after the window, so receipts never stop: wait
	// until every fire of the window has its trigger log, or they stopped
	// coming (xjob overloaded or, in chaos, fires skipped by design).
	settled, err := settleWindow(ctx, counter, len(jobs)*int(s.Window/time.Second), max(s.MinSettle, 5*time.Second), settleLimit)
	if err != nil {
		return nil, err
	}
	res.SettleSeconds = math.Round(settled.Seconds()*10) / 10
	memEnd()
	if res.Memory = <-memDone; res.Memory != nil {
		res.Memory.topTables(ctx, env.Bin)
	}
	stopAll(xs)
	if s.Profile {
		if err := <-profErr; err != nil {
			res.Notes = append(res.Notes, "cpu profile: "+err.Error())
		} else {
			res.ProfileTop = pprofTop(ctx, env.Bin, res.Profile)
		}
	}
	if s.AllocProfile {
		if err := <-allocErr; err != nil {
			res.Notes = append(res.Notes, "alloc profile: "+err.Error())
		} else {
			res.AllocTop = append(heapTop(ctx, env.Bin, res.AllocProfile, "alloc_space"),
				heapTop(ctx, env.Bin, res.AllocProfile, "alloc_objects")...)
		}
	}
	exp := Expectation{Jobs: jobs, Window: win, Period: 1000, Outages: res.Outages, Grace: steadyGrace.Milliseconds()}
	if err := res.finish(ctx, env, dir, db, xs, exp, exe); err != nil {
		return nil, err
	}
	// The window's CPU did the work received in the window, whatever its
	// scheduled second (an overloaded xjob drains older fires then).
	res.setCPU(cpu1-cpu0, res.ReceivedInWindow)
	res.HarnessCPUSeconds = math.Round((hcpu1-hcpu0).Seconds()*100) / 100
	res.GraceSeconds = steadyGrace.Seconds()
	res.Sustained = res.FiredLate == 0 && res.Fired+res.Skipped == res.Expected
	if !res.Sustained {
		res.Notes = append(res.Notes, fmt.Sprintf("NOT sustained: %d of %d fires came only after the window + %s grace (last %.1f s after the window; settle %.1f s); trig/s counts the %d in time",
			res.FiredLate, res.Expected, steadyGrace, res.DrainSeconds, res.SettleSeconds, res.Fired))
	}
	if n := misfireNote(res.Outcome); n != "" {
		res.Notes = append(res.Notes, n)
	}
	cleanup(env, dir)
	return res, nil
}

// misfireNote says, for a steady run, how many expected fires xjob passed
// over by its misfire rules: they are counted as misfired, not lost, and
// mean xjob fell behind (a sustained load misfires nothing).
func misfireNote(o Outcome) string {
	if o.Misfired == 0 {
		return ""
	}
	return fmt.Sprintf("MISFIRED: xjob fell behind and passed %d of %d expected fires over by its misfire rule (DO_NOTHING, or collapsed into a late fire); counted as misfired, not lost",
		o.Misfired, o.Expected)
}

// BurstSpec: Jobs jobs whose only fire is the same second, or (Spread > 1)
// spread round-robin over that many consecutive seconds.
type BurstSpec struct {
	Name string // "burst" unless set
	Jobs int
	// Lead is how far ahead the (first) common second is chosen; creation
	// through the API must finish before it.
	Lead time.Duration
	// Spread is the number of consecutive seconds the fires are spread over
	// (0 or 1: all on one second).
	Spread int
	// Profile takes a CPU profile of the burst through --pprof-listen.
	Profile bool
}

// preRead is xjob's default pre-read window: the scan plans a fire this
// long before it is due, so the CPU a burst costs starts then.
const preRead = 5 * time.Second

// Burst creates Jobs jobs through the API, each with one fire (a daily cron
// on its second), all on the same second or spread over Spread seconds, and
// measures how late each reached the executor and what xjob's CPU cost per
// trigger was, from just before the scan pre-read the first fire until the
// last receipt settled.
func Burst(ctx context.Context, env *Env, s BurstSpec) (*Result, error) {
	b, stop, err := startBurst(ctx, env, cmp.Or(s.Name, "burst"), s.Jobs)
	if err != nil {
		return nil, err
	}
	defer stop()
	b.rec.SetAdmin(b.xs[0].URL())
	spread := max(1, s.Spread)
	at := time.Now().Add(s.Lead).Truncate(time.Second).UTC()
	// A daily cron, not a one-shot one: the scan stops a job whose schedule
	// has no further time while its last fire still waits on the ring, and
	// the ring then drops that fire as "job stopped" (see the report).
	second := func(i int) time.Time { return at.Add(time.Duration(i%spread) * time.Second) }
	t := time.Now()
	jobs, err := createJobs(ctx, b.api, "bench-admin-token", b.rec.Address(), s.Jobs, func(i int) string { return second(i).Format("5 4 15 * * ?") })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.res.Scenario, err)
	}
	env.logf("%s: created %d jobs due from %s over %d s in %s", b.res.Scenario, len(jobs), at.Format("15:04:05"), spread, time.Since(t).Round(time.Millisecond))
	b.jobs, b.at, b.spread, b.second, b.profile, b.received = jobs, at, spread, second, s.Profile, "jobs fired"
	return fireBurst(ctx, env, b)
}

// startBurst starts what both bursts measure on: a fresh directory and
// database, the executor that records receipts, one xjob on them and its
// admin client. stop stops xjob and the executor.
func startBurst(ctx context.Context, env *Env, name string, jobs int) (b burstRun, stop func(), err error) {
	b.res = env.newResult(name, jobs, jobs)
	if b.dir, err = os.MkdirTemp(env.Work, name+"-"); err != nil {
		return b, nil, err
	}
	b.db = filepath.Join(b.dir, "xjob.db")
	if b.rec, err = StartExecutor(); err != nil {
		return b, nil, err
	}
	if b.xs, err = startXjobs(ctx, env, b.dir, b.db, 1, 30*time.Second); err != nil {
		b.rec.Close()
		return b, nil, fmt.Errorf("%s: %w", name, err)
	}
	stop = func() { stopAll(b.xs); b.rec.Close() }
	if b.api, err = adminclient.New(b.xs[0].URL(), "bench-admin-token"); err != nil {
		stop()
		return b, nil, err
	}
	return b, stop, nil
}

// burstRun is a burst whose jobs exist: what Burst and HTTPBurst hand
// fireBurst to measure.
type burstRun struct {
	res     *Result
	dir, db string
	xs      []*Xjob
	api     *adminclient.Client
	rec     *Executor // where the receipts land
	jobs    []int64
	at      time.Time // the first fire second
	spread  int
	second  func(i int) time.Time // jobs[i]'s fire second
	profile bool
	// received names what a receipt counts in the rate's note.
	received string
}

// fireBurst waits for b's fires, measures how late each reached b.rec and
// what xjob's CPU cost per trigger was, from just before the scan pre-read
// the first fire until the last receipt settled, and finishes b.res.
func fireBurst(ctx context.Context, env *Env, b burstRun) (*Result, error) {
	res, x, name := b.res, b.xs[0], b.res.Scenario
	start := b.at.Add(-preRead - time.Second)
	if left := time.Until(start); left < 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("creation ended only %s before the first fire second: not every job was pre-read on the same tick, and the CPU figure includes some creation", time.Until(b.at).Round(time.Millisecond)))
	}
	if err := sleepUntil(ctx, start); err != nil {
		return nil, err
	}
	cpu0, hcpu0 := cpuOf(b.xs), harnessCPU()
	m0, _ := metricsOf(ctx, b.xs)
	profErr := make(chan error, 1)
	if b.profile {
		res.Profile = filepath.Join(env.Results, name+"-"+env.fileTag()+env.Stamp+".cpu.pprof")
		// Long enough for a slow burst to drain; idle time adds no samples.
		d := time.Until(b.at) + time.Duration(b.spread)*time.Second + 15*time.Second
		go func() { profErr <- x.Profile(ctx, d, res.Profile) }()
	}
	if err := sleepUntil(ctx, b.at.Add(time.Duration(b.spread)*time.Second)); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for b.rec.Count() < len(b.jobs) && time.Now().Before(deadline) {
		if err := sleepUntil(ctx, time.Now().Add(100*time.Millisecond)); err != nil {
			return nil, err
		}
	}
	settle(ctx, b.rec, time.Second, 10*time.Second)
	cpu1, hcpu1 := cpuOf(b.xs), harnessCPU()
	win := Interval{From: b.at.UnixMilli(), To: b.at.Add(time.Duration(b.spread) * time.Second).UnixMilli()}
	res.scrape(ctx, b.xs, m0)
	if b.profile {
		if err := <-profErr; err != nil {
			res.Notes = append(res.Notes, "cpu profile: "+err.Error())
		} else {
			res.ProfileTop = pprofTop(ctx, env.Bin, res.Profile)
		}
	}
	x.Stop()
	each := make(map[int64][]int64, len(b.jobs))
	for i, id := range b.jobs {
		each[id] = []int64{b.second(i).UnixMilli()}
	}
	if err := res.finish(ctx, env, b.dir, b.db, b.xs, Expectation{Jobs: b.jobs, Window: win, Each: each}, b.rec); err != nil {
		return nil, err
	}
	res.Rate = 0 // one second of schedule: a rate would say nothing
	if b.spread == 1 {
		res.BurstAllFiredMs = res.LatenessMax
		if res.LatenessMax > 0 {
			res.Rate = round1(float64(res.Fired) / (res.LatenessMax / 1000))
			res.Notes = append(res.Notes, "triggersPerSecond = "+b.received+" / time from the burst second to the last receipt")
		}
	} else if res.WindowSeconds > 0 {
		res.Rate = round1(float64(res.Fired) / res.WindowSeconds)
	}
	res.setCPU(cpu1-cpu0, res.Fired)
	res.HarnessCPUSeconds = math.Round((hcpu1-hcpu0).Seconds()*100) / 100
	cleanup(env, b.dir)
	return res, nil
}

// ScaleSpec: Due every-second jobs among Stored jobs in the file.
type ScaleSpec struct {
	Due, Stored int
	Window      time.Duration
}

// Scale seeds the file (Stored−Due idle running jobs whose next fire is in
// 2099) and measures the scan tick time of Due every-second jobs.
func Scale(ctx context.Context, env *Env, s ScaleSpec) (*Result, error) {
	name := fmt.Sprintf("scale-%d", s.Stored)
	res := env.newResult(name, s.Due, s.Stored)
	dir, err := os.MkdirTemp(env.Work, "scale-")
	if err != nil {
		return nil, err
	}
	db := filepath.Join(dir, "xjob.db")
	exe, err := StartExecutor()
	if err != nil {
		return nil, err
	}
	defer exe.Close()
	t := time.Now()
	jobs, err := Seed(ctx, SeedSpec{Path: db, Shards: env.Shards, Executor: exe.Address(), Due: s.Due,
		Idle: s.Stored - s.Due, FirstFire: time.Now().Truncate(time.Second).UnixMilli()})
	if err != nil {
		return nil, err
	}
	env.logf("%s: seeded %d jobs (%d due every second) in %s", name, s.Stored, s.Due, time.Since(t).Round(time.Millisecond))
	xs, err := startXjobs(ctx, env, dir, db, 1, 60*time.Second)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer stopAll(xs)
	exe.SetAdmin(xs[0].URL())
	from := time.Now().Add(warmup).Truncate(time.Second).Add(time.Second)
	win := Interval{From: from.UnixMilli(), To: from.Add(s.Window).UnixMilli()}
	if err := sleepUntil(ctx, from); err != nil {
		return nil, err
	}
	cpu0, hcpu0 := cpuOf(xs), harnessCPU()
	m0, _ := metricsOf(ctx, xs)
	if err := sleepUntil(ctx, from.Add(s.Window)); err != nil {
		return nil, err
	}
	cpu1, hcpu1 := cpuOf(xs), harnessCPU()
	res.scrape(ctx, xs, m0)
	if err := sleepUntil(ctx, time.Now().Add(5*time.Second)); err != nil {
		return nil, err
	}
	stopAll(xs)
	if err := res.finish(ctx, env, dir, db, xs, Expectation{Jobs: jobs, Window: win, Period: 1000}, exe); err != nil {
		return nil, err
	}
	res.setCPU(cpu1-cpu0, res.Fired)
	res.HarnessCPUSeconds = math.Round((hcpu1-hcpu0).Seconds()*100) / 100
	res.Notes = append(res.Notes, "scan p50/p99 are /v1/metrics bucket bounds (query + plan + ring send + advance of every shard, 4 in parallel)")
	cleanup(env, dir)
	return res, nil
}

// settleLimit bounds the wait for a window's late fires after it ends.
const settleLimit = 90 * time.Second

// settleWindow waits at least minWait, then until the window's trigger
// logs reach want or, once some exist, have not grown for 3 s (at most
// limit in all), plus
// a second for the last receipts. It returns how long it waited.
func settleWindow(ctx context.Context, c interface {
	Poll(context.Context) (int, error)
}, want int, minWait, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	last, lastChange := -1, time.Now()
	for time.Since(start) < limit {
		n, err := c.Poll(ctx)
		if err != nil {
			return time.Since(start), err
		}
		if n != last {
			last, lastChange = n, time.Now()
		}
		// Stalled only once the window's fires have begun: an xjob still
		// working through older fires has not reached them yet.
		stalled := n > 0 && time.Since(lastChange) >= 3*time.Second
		if time.Since(start) >= minWait && (n >= want || stalled) {
			break
		}
		if err := sleepUntil(ctx, time.Now().Add(500*time.Millisecond)); err != nil {
			return time.Since(start), err
		}
	}
	return time.Since(start), sleepUntil(ctx, time.Now().Add(time.Second))
}

// newResult starts a scenario's result, labelled with the binary it runs.
func (e *Env) newResult(name string, jobs, stored int) *Result {
	return &Result{Scenario: name, Jobs: jobs, Stored: stored, Started: time.Now().UTC(), Target: e.Target, Label: e.Label}
}

// fileTag is put in result file names of the baseline runs.
func (e *Env) fileTag() string {
	if e.Target == "" || e.Target == TargetCandidate {
		return ""
	}
	return e.Target + "-"
}

// Targets: which binary a run measured.
const (
	TargetCandidate = "candidate"
	TargetBaseline  = "baseline"
	// TargetVariant is the candidate binary run with Env.ChildEnv.
	TargetVariant = "variant"
)

// startXjobs starts n `xjob local` processes on one file, each with its
// own API and pprof port.
func startXjobs(ctx context.Context, env *Env, dir, db string, n int, timeout time.Duration) ([]*Xjob, error) {
	xs := make([]*Xjob, n)
	for i := range xs {
		addr, err := FreeAddr()
		if err != nil {
			stopAll(xs)
			return nil, err
		}
		pp, err := FreeAddr()
		if err != nil {
			stopAll(xs)
			return nil, err
		}
		xs[i] = NewXjob(XjobSpec{Bin: env.Bin, DB: db, Listen: addr, Token: "bench-admin-token", Shards: env.Shards,
			LogPath: filepath.Join(dir, fmt.Sprintf("xjob-%d.log", i)), Pprof: pp, Env: env.ChildEnv})
		if err := xs[i].Start(ctx, timeout); err != nil {
			stopAll(xs)
			return nil, err
		}
	}
	return xs, nil
}

// cpuOf sums the CPU time of every supervisor's children so far.
func cpuOf(xs []*Xjob) time.Duration {
	var d time.Duration
	for _, x := range xs {
		if c, err := x.CPU(); err == nil {
			d += c
		}
	}
	return d
}

// metricsOf reads /v1/metrics of every running process.
func metricsOf(ctx context.Context, xs []*Xjob) ([]xjob.MetricsSnapshot, error) {
	var out []xjob.MetricsSnapshot
	for _, x := range xs {
		api, err := adminclient.New(x.URL(), "bench-admin-token")
		if err != nil {
			return out, err
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := api.Metrics(sctx)
		cancel()
		if err != nil {
			return out, fmt.Errorf("metrics: %w", err)
		}
		out = append(out, m)
	}
	return out, nil
}

func ticksOf(ms []xjob.MetricsSnapshot) int64 {
	var n int64
	for _, m := range ms {
		n += m.ScanTicks
	}
	return n
}

// scrape reads /v1/metrics of every running process at the end of a
// window: the scan ticks since `before` (taken at the window's start; a
// restarted process counts from its start) and xjob's own misfire counters.
func (r *Result) scrape(ctx context.Context, xs []*Xjob, before []xjob.MetricsSnapshot) {
	ms, err := metricsOf(ctx, xs)
	if err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	for _, m := range ms {
		r.MisfiredByXjob += m.Misfired.Total() + m.Collapsed
		r.Scan.P50Ms = max(r.Scan.P50Ms, m.ScanTickP50)
		r.Scan.P99Ms = max(r.Scan.P99Ms, m.ScanTickP99)
	}
	r.XjobMetrics = ms
	r.Scan.Ticks = ticksOf(ms)
	if d := r.Scan.Ticks - ticksOf(before); d >= 0 {
		r.Scan.Ticks = d
	}
}

// finish reads what the run left (trigger logs, passed-over spans, process
// logs) and fills the outcome and usage.
func (r *Result) finish(ctx context.Context, env *Env, dir, db string, xs []*Xjob, exp Expectation, exe *Executor) error {
	r.CallbacksOK, r.CallbacksKO = exe.CallbackStats()
	logs, err := ReadLogs(ctx, db, exp.Window)
	if err != nil {
		return err
	}
	exp.Passed = map[int64][]Interval{}
	if exp.Pending, err = ReadPending(ctx, db, exp.Window); err != nil {
		env.logf("%s: %v", r.Scenario, err)
	}
	var us []Usage
	for i, x := range xs {
		path := filepath.Join(dir, fmt.Sprintf("xjob-%d.log", i))
		if err := ReadPassed(path, exp.Passed); err != nil {
			env.logf("%s: %v", r.Scenario, err)
		}
		r.XjobErrors += CountLines(path, "ERROR")
		us = append(us, x.Usage())
	}
	r.Window = exp.Window
	r.Outcome = Analyze(exp, logs, exe.Receipts())
	r.Usage = merge(us...)
	return nil
}

// setCPU records the measured span's CPU and its cost per trigger, over
// the n triggers received in that span.
func (r *Result) setCPU(d time.Duration, n int) {
	r.WindowCPUSeconds = math.Round(d.Seconds()*100) / 100
	if n > 0 {
		r.CPUPerTriggerUs = math.Round(float64(d.Microseconds()) / float64(n))
	}
}

func stopAll(xs []*Xjob) {
	var wg sync.WaitGroup
	for _, x := range xs {
		if x != nil {
			wg.Go(x.Stop)
		}
	}
	wg.Wait()
}

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

// settle waits at least min, then until no receipt arrived for 2 s, at most
// limit in all.
func settle(ctx context.Context, exe *Executor, minWait, limit time.Duration) {
	start := time.Now()
	last, lastChange := exe.Count(), time.Now()
	for time.Since(start) < limit {
		if sleepUntil(ctx, time.Now().Add(250*time.Millisecond)) != nil {
			return
		}
		if n := exe.Count(); n != last {
			last, lastChange = n, time.Now()
		}
		if time.Since(start) >= minWait && time.Since(lastChange) >= 2*time.Second {
			return
		}
	}
}

// createJobs creates a manual group for the executor and n running CRON jobs
// through the admin API, 16 requests at a time. The jobs are posted as
// benchJobSpec with their zero members left out (see compatJSON), so that an
// older xjob (a --baseline binary) whose API predates a newer field accepts
// them too. They are created stopped and then started by POST
// /v1/bulk/jobs, 1,000 at a time, as an operator starting a workload would:
// the admin then pushes their first fires together, in shared ring
// buckets, instead of one job's fires per message while the rest are still
// being created — which would make the measured window the start-up
// transient, not the steady state. A build without the bulk endpoint (an
// old --baseline) gets one start request per job instead.
func createJobs(ctx context.Context, api *adminclient.Client, token, executor string, n int, cron func(int) string) ([]int64, error) {
	return createJobsOn(ctx, api, token, []string{executor}, "", n, cron)
}

// createJobsOn is createJobs for a group of executors, with the jobs'
// route strategy (default: the server's).
func createJobsOn(ctx context.Context, api *adminclient.Client, token string, executors []string, route xjob.RouteStrategy, n int, cron func(int) string) ([]int64, error) {
	ids, err := createStoppedJobs(ctx, api, token, executors, route, n, cron)
	if err != nil {
		return nil, err
	}
	return ids, startJobs(ctx, api, token, ids)
}

// startJobs starts stopped jobs by POST /v1/bulk/jobs, 1,000 at a time,
// or one request each on a build without that endpoint.
func startJobs(ctx context.Context, api *adminclient.Client, token string, ids []int64) error {
	hc := &http.Client{Timeout: 5 * time.Minute}
	for lo := 0; lo < len(ids); lo += 1000 {
		chunk := ids[lo:min(lo+1000, len(ids))]
		var out struct {
			Items []struct {
				ID     int64  `json:"id"`
				Status int    `json:"status"`
				Error  string `json:"error"`
			} `json:"items"`
		}
		err := postCompat(ctx, hc, api.BaseURL()+"/v1/bulk/jobs", token, map[string]any{"action": "start", "ids": chunk}, &out)
		if err != nil && strings.HasPrefix(err.Error(), "HTTP 404") {
			return startEach(ctx, hc, api.BaseURL(), token, ids)
		}
		if err != nil {
			return fmt.Errorf("bulk start: %w", err)
		}
		for _, it := range out.Items {
			if it.Status/100 != 2 {
				return fmt.Errorf("bulk start of job %d: HTTP %d %s", it.ID, it.Status, it.Error)
			}
		}
		if len(out.Items) != len(chunk) {
			return fmt.Errorf("bulk start: %d results for %d jobs", len(out.Items), len(chunk))
		}
	}
	return nil
}

// startEach starts jobs one request each, 16 at a time (a build without
// /v1/bulk/jobs).
func startEach(ctx context.Context, hc *http.Client, base, token string, ids []int64) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, id := range ids {
		g.Go(func() error {
			var j xjob.Job
			if err := postCompat(ctx, hc, fmt.Sprintf("%s/v1/jobs/%d/start", base, id), token, struct{}{}, &j); err != nil {
				return fmt.Errorf("start job %d: %w", id, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// createStoppedJobs creates the group and n stopped CRON jobs, 16 requests
// at a time.
func createStoppedJobs(ctx context.Context, api *adminclient.Client, token string, executors []string, route xjob.RouteStrategy, n int, cron func(int) string) ([]int64, error) {
	grp, err := api.GroupCreate(ctx, xjob.Group{AppName: "xjob-bench", Title: "bench", AddressType: xjob.AddressManual,
		AddressList: executors})
	if err != nil {
		return nil, fmt.Errorf("create group: %w", err)
	}
	return createStoppedIn(ctx, api, token, grp.ID, route, n, cron)
}

// createStoppedIn creates n stopped CRON jobs in group, 16 requests at a
// time.
func createStoppedIn(ctx context.Context, api *adminclient.Client, token string, group int64, route xjob.RouteStrategy, n int, cron func(int) string) ([]int64, error) {
	return postJobs(ctx, api, token, n, "job", func(i int) xjob.Job {
		spec := benchJobSpec(group, cron(i))
		spec.TriggerStatus = xjob.StatusStopped
		if route != "" {
			spec.RouteStrategy = route
		}
		return spec
	})
}

// postJobs creates the n jobs spec(i) describes through /v1/jobs, 16
// requests at a time, and returns their ids in order; what names them in
// an error.
func postJobs(ctx context.Context, api *adminclient.Client, token string, n int, what string, spec func(i int) xjob.Job) ([]int64, error) {
	hc := &http.Client{Timeout: 30 * time.Second}
	ids := make([]int64, n)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			var j xjob.Job
			if err := postCompat(ctx, hc, api.BaseURL()+"/v1/jobs", token, spec(i), &j); err != nil {
				return fmt.Errorf("create %s %d: %w", what, i, err)
			}
			ids[i] = j.ID
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return ids, nil
}

// postCompat POSTs in as compatJSON to url with the admin token and decodes
// the reply into out.
func postCompat(ctx context.Context, hc *http.Client, url, token string, in, out any) error {
	body, err := compatJSON(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(data))
	}
	return json.Unmarshal(data, out)
}

// compatJSON encodes v as a JSON object without its zero-valued members
// ("", 0, false, null, [], {}): the API applies the same defaults to a
// member left out, and an older server that does not know a newer member
// is not asked to.
func compatJSON(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	for k, raw := range m {
		switch string(raw) {
		case `""`, "0", "false", "null", "[]", "{}":
			delete(m, k)
		}
	}
	return json.Marshal(m)
}

// pprofTop runs `go tool pprof -top` on a CPU profile and keeps its table.
func pprofTop(ctx context.Context, bin, profile string) []string {
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=25", bin, profile).CombinedOutput()
	if err != nil {
		return []string{"pprof: " + err.Error()}
	}
	txt := filepath.Join(strings.TrimSuffix(profile, ".cpu.pprof") + ".cpu-top.txt")
	_ = os.WriteFile(txt, out, 0o644)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// cleanup removes a run's directory unless XJOBBENCH_KEEP is set.
func cleanup(env *Env, dir string) {
	if os.Getenv("XJOBBENCH_KEEP") != "" {
		env.logf("kept %s", dir)
		return
	}
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		env.logf("cleanup %s: %v", dir, err)
	}
}
