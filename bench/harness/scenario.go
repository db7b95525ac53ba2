package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/adminclient"
)

// Env is what every scenario shares: the binaries, where to put temporary
// files and results, and where progress goes.
type Env struct {
	Bin     string // cmd/xjob
	ProfBin string // bench/cmd/xjobprof (cmd/xjob + CPU profile)
	Work    string // temporary directory, one sub-directory per run
	Results string // bench/results
	Shards  int
	Log     io.Writer
	Stamp   string // timestamp shared by the run's result files
	// Root is the module root (test/emulators for the AWS runs).
	Root string
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
	Usage       Usage      `json:"xjob"`
	ScanTick    Durations  `json:"scanTick"` // "took" of the scan ticks in the window
	Restarts    int        `json:"restarts,omitempty"`
	Outages     []Interval `json:"outages,omitempty"`
	CallbacksOK int64      `json:"callbacksDelivered"`
	CallbacksKO int64      `json:"callbacksGivenUp"`
	XjobErrors  int        `json:"xjobErrorLines"`
	// BurstAllFiredMs is, for burst, the time from the common fire second
	// to the last receipt.
	BurstAllFiredMs float64  `json:"burstAllFiredMs,omitempty"`
	Profile         string   `json:"cpuProfile,omitempty"`
	ProfileTop      []string `json:"cpuProfileTop,omitempty"`
	Notes           []string `json:"notes,omitempty"`
	// AWS is set by runs on the emulated AWS stack (SteadyAWS).
	AWS *AWSResult `json:"aws,omitempty"`
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
	// Profile runs xjob under a CPU profile.
	Profile bool
	// MinSettle is how long after the window receipts are awaited at least
	// (chaos: a dispatch claimed by a killed process returns after the 30 s
	// dispatch visibility timeout).
	MinSettle time.Duration
}

// warmup separates job creation from the measured window: a job created
// (or started) now gets its first fire after now + 5 s (xxl-job computes
// it from now + the pre-read window), so the window starts later than that.
const warmup = 7 * time.Second

// Steady creates Jobs every-second CRON jobs through the API and measures
// one window of their fires, optionally killing xjob or racing three of them.
func Steady(ctx context.Context, env *Env, s SteadySpec) (*Result, error) {
	res := &Result{Scenario: s.Name, Jobs: s.Jobs, Stored: s.Jobs, Started: time.Now().UTC()}
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

	procs := max(1, s.Procs)
	xs := make([]*Xjob, procs)
	var extra []string
	bin := env.Bin
	if s.Profile {
		bin = env.ProfBin
		res.Profile = filepath.Join(env.Results, s.Name+"-"+env.Stamp+".cpu.pprof")
		extra = append(extra, "XJOBBENCH_CPUPROFILE="+res.Profile)
	}
	for i := range xs {
		addr, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		xs[i] = NewXjob(XjobSpec{Bin: bin, DB: db, Listen: addr, Token: "bench-admin-token", Shards: env.Shards,
			LogPath: filepath.Join(dir, fmt.Sprintf("xjob-%d.log", i)), Env: extra})
		if err := xs[i].Start(ctx, 30*time.Second); err != nil {
			stopAll(xs)
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	defer stopAll(xs)
	exe.SetAdmin(xs[0].URL())

	api, err := adminclient.New(xs[0].URL(), "bench-admin-token")
	if err != nil {
		return nil, err
	}
	t := time.Now()
	jobs, err := createJobs(ctx, api, exe.Address(), s.Jobs, func(int) string { return "* * * * * ?" })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	env.logf("%s: created %d jobs through the API in %s", s.Name, len(jobs), time.Since(t).Round(time.Millisecond))

	from := time.Now().Add(warmup).Truncate(time.Second).Add(time.Second)
	win := Interval{From: from.UnixMilli(), To: from.Add(s.Window).UnixMilli()}
	env.logf("%s: measuring %s from %s", s.Name, s.Window, from.Format("15:04:05"))

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
	// The jobs keep firing after the window, so the wait is fixed: long
	// enough for the window's last fires, however late.
	if err := sleepUntil(ctx, time.Now().Add(max(s.MinSettle, 5*time.Second))); err != nil {
		return nil, err
	}
	stopAll(xs)
	cbOK, cbKO := exe.CallbackStats()
	res.CallbacksOK, res.CallbacksKO = cbOK, cbKO

	logs, err := ReadLogs(ctx, db, win)
	if err != nil {
		return nil, err
	}
	res.Window = win
	res.Outcome = Analyze(Expectation{Jobs: jobs, Window: win, Period: 1000, Outages: res.Outages}, logs, exe.Receipts())
	var us []Usage
	for i, x := range xs {
		us = append(us, x.Usage())
		res.XjobErrors += CountLines(filepath.Join(dir, fmt.Sprintf("xjob-%d.log", i)), "ERROR")
	}
	res.Usage = merge(us...)
	res.ScanTick = scanTicks(dir, procs, win)
	if s.Profile {
		res.ProfileTop = pprofTop(ctx, bin, res.Profile)
	}
	cleanup(env, dir)
	return res, nil
}

// BurstSpec: Jobs jobs whose only fire is the same second.
type BurstSpec struct {
	Jobs int
	// Lead is how far ahead the common second is chosen; creation through
	// the API must finish before it.
	Lead time.Duration
}

// Burst creates Jobs jobs through the API, all with a one-shot cron on the
// same second, and measures how long until every one has reached the
// executor.
func Burst(ctx context.Context, env *Env, s BurstSpec) (*Result, error) {
	name := "burst"
	res := &Result{Scenario: name, Jobs: s.Jobs, Stored: s.Jobs, Started: time.Now().UTC()}
	dir, err := os.MkdirTemp(env.Work, name+"-")
	if err != nil {
		return nil, err
	}
	db := filepath.Join(dir, "xjob.db")
	exe, err := StartExecutor()
	if err != nil {
		return nil, err
	}
	defer exe.Close()
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	x := NewXjob(XjobSpec{Bin: env.Bin, DB: db, Listen: addr, Token: "bench-admin-token", Shards: env.Shards,
		LogPath: filepath.Join(dir, "xjob-0.log")})
	if err := x.Start(ctx, 30*time.Second); err != nil {
		return nil, fmt.Errorf("burst: %w", err)
	}
	defer x.Stop()
	exe.SetAdmin(x.URL())
	api, err := adminclient.New(x.URL(), "bench-admin-token")
	if err != nil {
		return nil, err
	}
	at := time.Now().Add(s.Lead).Truncate(time.Second).UTC()
	// A daily cron, not a one-shot one: the scan stops a job whose schedule
	// has no further time while its last fire still waits on the ring, and
	// the ring then drops that fire as "job stopped" (see the report).
	cron := at.Format("5 4 15 * * ?")
	t := time.Now()
	jobs, err := createJobs(ctx, api, exe.Address(), s.Jobs, func(int) string { return cron })
	if err != nil {
		return nil, fmt.Errorf("burst: %w", err)
	}
	env.logf("burst: created %d jobs due at %s in %s", len(jobs), at.Format("15:04:05"), time.Since(t).Round(time.Millisecond))
	if left := time.Until(at); left < 5*time.Second {
		res.Notes = append(res.Notes, fmt.Sprintf("creation ended only %s before the burst second: not every job was pre-read on the same tick", left.Round(time.Millisecond)))
	}
	if err := sleepUntil(ctx, at.Add(time.Second)); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for exe.Count() < s.Jobs && time.Now().Before(deadline) {
		if err := sleepUntil(ctx, time.Now().Add(100*time.Millisecond)); err != nil {
			return nil, err
		}
	}
	settle(ctx, exe, time.Second, 10*time.Second)
	x.Stop()
	win := Interval{From: at.UnixMilli(), To: at.UnixMilli() + 1000}
	logs, err := ReadLogs(ctx, db, win)
	if err != nil {
		return nil, err
	}
	res.Window = win
	res.Outcome = Analyze(Expectation{Jobs: jobs, Window: win, Period: 1000}, logs, exe.Receipts())
	res.Rate = 0 // one second of schedule: a rate would say nothing
	res.BurstAllFiredMs = res.LatenessMax
	if res.LatenessMax > 0 {
		res.Rate = round1(float64(res.Fired) / (res.LatenessMax / 1000))
		res.Notes = append(res.Notes, "triggersPerSecond = jobs fired / time from the burst second to the last receipt")
	}
	res.Usage = x.Usage()
	res.CallbacksOK, res.CallbacksKO = exe.CallbackStats()
	res.XjobErrors = CountLines(filepath.Join(dir, "xjob-0.log"), "ERROR")
	ticks, _ := ReadScanTicks(filepath.Join(dir, "xjob-0.log"))
	var ms []float64
	for _, tk := range ticks {
		ms = append(ms, float64(tk.Took.Microseconds())/1000)
	}
	res.ScanTick = Summarise(ms)
	cleanup(env, dir)
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
	res := &Result{Scenario: name, Jobs: s.Due, Stored: s.Stored, Started: time.Now().UTC()}
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
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	x := NewXjob(XjobSpec{Bin: env.Bin, DB: db, Listen: addr, Token: "bench-admin-token", Shards: env.Shards,
		LogPath: filepath.Join(dir, "xjob-0.log")})
	if err := x.Start(ctx, 60*time.Second); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer x.Stop()
	exe.SetAdmin(x.URL())
	from := time.Now().Add(warmup).Truncate(time.Second).Add(time.Second)
	win := Interval{From: from.UnixMilli(), To: from.Add(s.Window).UnixMilli()}
	if err := sleepUntil(ctx, from.Add(s.Window)); err != nil {
		return nil, err
	}
	if err := sleepUntil(ctx, time.Now().Add(5*time.Second)); err != nil {
		return nil, err
	}
	x.Stop()
	logs, err := ReadLogs(ctx, db, win)
	if err != nil {
		return nil, err
	}
	res.Window = win
	res.Outcome = Analyze(Expectation{Jobs: jobs, Window: win, Period: 1000}, logs, exe.Receipts())
	res.Usage = x.Usage()
	res.CallbacksOK, res.CallbacksKO = exe.CallbackStats()
	res.XjobErrors = CountLines(filepath.Join(dir, "xjob-0.log"), "ERROR")
	res.ScanTick = scanTicks(dir, 1, win)
	res.Notes = append(res.Notes, "scanTick is the scan's own 'took' (query + plan + ring send + advance of every shard, 4 in parallel), from xjob's debug log")
	cleanup(env, dir)
	return res, nil
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
// through the admin API, 16 requests at a time.
func createJobs(ctx context.Context, api *adminclient.Client, executor string, n int, cron func(int) string) ([]int64, error) {
	g, err := api.GroupCreate(ctx, xjob.Group{AppName: "xjob-bench", Title: "bench", AddressType: xjob.AddressManual,
		AddressList: []string{executor}})
	if err != nil {
		return nil, fmt.Errorf("create group: %w", err)
	}
	ids := make([]int64, n)
	var next atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || firstErr.Load() != nil {
					return
				}
				j, err := api.JobCreate(ctx, benchJob(g.ID, cron(i)))
				if err != nil {
					err = fmt.Errorf("create job %d: %w", i, err)
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				ids[i] = j.ID
			}
		})
	}
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		return nil, *p
	}
	return ids, nil
}

func scanTicks(dir string, procs int, win Interval) Durations {
	var ms []float64
	for i := range procs {
		ticks, err := ReadScanTicks(filepath.Join(dir, fmt.Sprintf("xjob-%d.log", i)))
		if err != nil {
			continue
		}
		for _, t := range ticks {
			if win.contains(t.At.UnixMilli()) {
				ms = append(ms, float64(t.Took.Microseconds())/1000)
			}
		}
	}
	return Summarise(ms)
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
