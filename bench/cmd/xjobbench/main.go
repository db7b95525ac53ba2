// Command xjobbench is the load and fault harness behind `make bench`: it
// builds cmd/xjob (and optionally a baseline binary or git revision), runs
// `xjob local` on temporary files against a fast loopback executor, and
// reports throughput, fire lateness, lost, misfired and duplicate fires, CPU
// per trigger and memory per scenario (table on stdout, baseline → candidate
// ratios, JSON under bench/results/). See bench/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/xjobdev/xjob/bench/harness"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("xjobbench", flag.ContinueOnError)
	scenarios := fs.String("scenarios", "steady,burst,http-burst,spread,scale,chaos,race", "comma-separated: steady, burst, http-burst, spread, scale, chaos, race")
	quick := fs.Bool("quick", false, "a quick subset (~3 min, ~6 with a baseline): steady 10,000 jobs for 20 s, burst, http-burst, spread; flags given explicitly still win")
	steadyJobs := fs.String("steady-jobs", "1000,10000", "job counts of the steady runs")
	steadyWindow := fs.Duration("steady-window", time.Minute, "measured window of each steady run")
	burstJobs := fs.Int("burst-jobs", 10000, "jobs due at the same second")
	httpBurstJobs := fs.Int("http-burst-jobs", 5000, "HTTP jobs (no executor) due at the same second, calling a loopback endpoint")
	spreadJobs := fs.Int("spread-jobs", 2000, "one-shot jobs of the spread run")
	spreadSeconds := fs.Int("spread-seconds", 30, "seconds the spread run's fires are spread over")
	scaleStored := fs.Int("scale-stored", 1000000, "stored jobs of the large scale run")
	scaleDue := fs.Int("scale-due", 1000, "jobs due every second in the scale runs")
	scaleWindow := fs.Duration("scale-window", 20*time.Second, "measured window of each scale run")
	chaosJobs := fs.Int("chaos-jobs", 1000, "jobs of the chaos run")
	chaosWindow := fs.Duration("chaos-window", 40*time.Second, "measured window of the chaos run")
	killEvery := fs.Duration("kill-every", 5*time.Second, "SIGKILL period in the chaos run")
	raceJobs := fs.Int("race-jobs", 1000, "jobs of the race run")
	raceWindow := fs.Duration("race-window", 30*time.Second, "measured window of the race run")
	profile := fs.Int("profile-jobs", 10000, "CPU-profile the window of the steady run with this many jobs (0: none)")
	heapProfile := fs.Int("heap-profile-jobs", 0, "sample memory (RSS, runtime.MemStats, goroutines) every 2 s of the steady run with this many jobs and keep heap profiles of its window's middle and its largest RSS (0: none)")
	allocProfile := fs.Int("alloc-profile-jobs", 0, "take an allocation profile (/debug/pprof/allocs, bytes and objects) of the window of the steady run with this many jobs (0: none)")
	profileBurst := fs.Bool("profile-burst", true, "CPU-profile the burst (through xjob's --pprof-listen)")
	baselineBin := fs.String("baseline-bin", "", "also run every scenario against this xjob binary, before the candidate, and print both side by side")
	baselineRev := fs.String("baseline-rev", "auto", "like --baseline-bin, building cmd/xjob at this git revision (git archive into a temporary directory); auto: the merge base of HEAD with the last release tag v*, or with main before the first; none: no baseline")
	variant := fs.String("variant", "", "also run every local scenario against the candidate binary with these KEY=VALUE environment settings (comma-separated, e.g. GOGC=200), after the candidate: a third target, compared to the baseline as the candidate is")
	shards := fs.Int("shards", 16, "scan shards")
	out := fs.String("out", "bench/results", "directory of the JSON results and profiles")
	root := fs.String("root", ".", "module root (where cmd/xjob is)")
	onAWS := fs.Bool("aws", false, "run the steady scenario on the emulated AWS stack (dynalite + fauxqs, the five Lambda handlers) instead of xjob local, adding AWS requests and $ per trigger; other scenarios are skipped")
	ringPollers := fs.Int("aws-ring-pollers", 10, "with --aws: concurrent batches of the ring event source mapping")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quickDefault := func(name, v string) {
			if !set[name] {
				_ = fs.Set(name, v)
			}
		}
		quickDefault("scenarios", "steady,burst,http-burst,spread")
		quickDefault("steady-jobs", "10000")
		quickDefault("steady-window", "20s")
	}
	revSet := false
	fs.Visit(func(f *flag.Flag) { revSet = revSet || f.Name == "baseline-rev" })
	switch {
	case *baselineBin != "" && revSet:
		fmt.Fprintln(os.Stderr, "xjobbench: --baseline-bin and --baseline-rev exclude each other")
		return 2
	case *baselineBin != "", *baselineRev == "none", *baselineRev == "":
		*baselineRev = ""
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	work, err := os.MkdirTemp("", "xjobbench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "xjobbench:", err)
		return 1
	}
	if os.Getenv("XJOBBENCH_KEEP") == "" {
		defer os.RemoveAll(work)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "xjobbench:", err)
		return 1
	}
	results, _ := filepath.Abs(*out)
	absRoot, _ := filepath.Abs(*root)
	env := &harness.Env{Work: work, Results: results, Shards: *shards, Log: os.Stderr, Root: absRoot,
		Stamp: time.Now().UTC().Format("20060102T150405Z")}
	want := strings.Split(*scenarios, ",")
	if *onAWS {
		return runAWS(ctx, env, want, *steadyJobs, *steadyWindow,
			harness.AWSOptions{RingPollers: *ringPollers})
	}

	// The binaries: the candidate (this tree) and, optionally, a baseline.
	targets := []harness.Env{}
	if *baselineRev == "auto" {
		rev, why, err := harness.DefaultBaseline(ctx, absRoot)
		if err != nil {
			fmt.Fprintln(os.Stderr, "xjobbench:", err)
			return 1
		}
		fmt.Fprintf(env.Log, "xjobbench: baseline %s, %s (--baseline-rev REV to choose, none to skip)\n", rev, why)
		*baselineRev = rev
	}
	if *baselineBin != "" || *baselineRev != "" {
		b := *env
		b.Target, b.Label, b.Bin = harness.TargetBaseline, *baselineBin, *baselineBin
		if *baselineRev != "" {
			env.Log.Write([]byte("xjobbench: building the baseline " + *baselineRev + "\n"))
			b.Bin, b.Label, err = harness.BuildRev(ctx, absRoot, *baselineRev, work)
			if err != nil {
				fmt.Fprintln(os.Stderr, "xjobbench:", err)
				return 1
			}
		} else if b.Bin, err = filepath.Abs(b.Bin); err != nil {
			fmt.Fprintln(os.Stderr, "xjobbench:", err)
			return 1
		}
		targets = append(targets, b)
	}
	c := *env
	c.Target, c.Label = harness.TargetCandidate, harness.Describe(ctx, absRoot)
	c.Bin, err = harness.Build(ctx, *root, "./cmd/xjob", work, "xjob")
	if err != nil {
		fmt.Fprintln(os.Stderr, "xjobbench:", err)
		return 1
	}
	targets = append(targets, c)
	if *variant != "" {
		v := c
		v.Target, v.Label = harness.TargetVariant, c.Label+" "+*variant
		v.ChildEnv = strings.Split(*variant, ",")
		for _, kv := range v.ChildEnv {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				fmt.Fprintf(os.Stderr, "xjobbench: --variant: %q is not KEY=VALUE\n", kv)
				return 2
			}
		}
		targets = append(targets, v)
	}

	var rs []*harness.Result
	failed := false
	// each runs one scenario against every binary, the baseline first, so
	// both see the machine in the same state.
	each := func(fn func(env *harness.Env) (*harness.Result, error)) {
		for i := range targets {
			r, err := fn(&targets[i])
			if err != nil {
				fmt.Fprintf(os.Stderr, "xjobbench: %s: %v\n", targets[i].Target, err)
				failed = true
				continue
			}
			path, err := harness.WriteJSON(results, env.Stamp, r)
			if err != nil {
				fmt.Fprintln(os.Stderr, "xjobbench:", err)
				failed = true
			}
			fmt.Fprintf(os.Stderr, "xjobbench: %s (%s) → %s\n", r.Scenario, r.Target, path)
			rs = append(rs, r)
		}
	}
	if slices.Contains(want, "steady") {
		for _, s := range strings.Split(*steadyJobs, ",") {
			var n int
			if _, err := fmt.Sscan(strings.TrimSpace(s), &n); err != nil || n < 1 {
				fmt.Fprintf(os.Stderr, "xjobbench: --steady-jobs: %q is not a job count\n", s)
				return 2
			}
			each(func(e *harness.Env) (*harness.Result, error) {
				return harness.Steady(ctx, e, harness.SteadySpec{Name: fmt.Sprintf("steady-%d", n), Jobs: n,
					Window: *steadyWindow, Profile: n == *profile, HeapProfile: n == *heapProfile, AllocProfile: n == *allocProfile})
			})
		}
	}
	if slices.Contains(want, "burst") {
		each(func(e *harness.Env) (*harness.Result, error) {
			return harness.Burst(ctx, e, harness.BurstSpec{Jobs: *burstJobs, Profile: *profileBurst,
				Lead: 15*time.Second + time.Duration(*burstJobs)*2*time.Millisecond})
		})
	}
	if slices.Contains(want, "http-burst") {
		each(func(e *harness.Env) (*harness.Result, error) {
			return harness.HTTPBurst(ctx, e, harness.HTTPBurstSpec{Jobs: *httpBurstJobs,
				Lead: 15*time.Second + time.Duration(*httpBurstJobs)*2*time.Millisecond})
		})
	}
	if slices.Contains(want, "spread") {
		each(func(e *harness.Env) (*harness.Result, error) {
			return harness.Burst(ctx, e, harness.BurstSpec{Name: "spread", Jobs: *spreadJobs, Spread: *spreadSeconds,
				Lead: 15*time.Second + time.Duration(*spreadJobs)*2*time.Millisecond})
		})
	}
	if slices.Contains(want, "scale") {
		each(func(e *harness.Env) (*harness.Result, error) {
			return harness.Scale(ctx, e, harness.ScaleSpec{Due: *scaleDue, Stored: *scaleDue, Window: *scaleWindow})
		})
		each(func(e *harness.Env) (*harness.Result, error) {
			return harness.Scale(ctx, e, harness.ScaleSpec{Due: *scaleDue, Stored: *scaleStored, Window: *scaleWindow})
		})
	}
	if slices.Contains(want, "chaos") {
		each(func(e *harness.Env) (*harness.Result, error) {
			return harness.Steady(ctx, e, harness.SteadySpec{Name: "chaos", Jobs: *chaosJobs, Window: *chaosWindow,
				KillEvery: *killEvery, MinSettle: 35 * time.Second})
		})
	}
	if slices.Contains(want, "race") {
		each(func(e *harness.Env) (*harness.Result, error) {
			return harness.Steady(ctx, e, harness.SteadySpec{Name: "race", Jobs: *raceJobs, Window: *raceWindow, Procs: 3})
		})
	}
	harness.PrintTable(os.Stdout, rs)
	harness.PrintComparison(os.Stdout, rs)
	for _, r := range rs {
		for _, n := range r.Notes {
			fmt.Printf("note (%s, %s): %s\n", r.Scenario, r.Target, n)
		}
	}
	for _, r := range rs {
		if len(r.ProfileTop) > 0 {
			fmt.Printf("\nCPU profile, %s (%s): %s\n", r.Scenario, r.Target, r.Profile)
			for _, l := range r.ProfileTop[:min(len(r.ProfileTop), 18)] {
				fmt.Println("  " + l)
			}
		}
	}
	for _, r := range rs {
		if len(r.AllocTop) > 0 {
			fmt.Printf("\nAllocation profile, %s (%s): %s\n", r.Scenario, r.Target, r.AllocProfile)
			for _, l := range r.AllocTop {
				fmt.Println("  " + l)
			}
		}
	}
	for _, r := range rs {
		if r.Memory != nil {
			harness.PrintMemory(os.Stdout, r)
		}
	}
	if failed {
		return 1
	}
	return 0
}

// runAWS runs the steady scenario on the emulated AWS stack (--aws). The
// other scenarios have no AWS form yet and are skipped with a message.
func runAWS(ctx context.Context, env *harness.Env, want []string, steadyJobs string, window time.Duration, o harness.AWSOptions) int {
	for _, s := range want {
		if s != "steady" {
			fmt.Fprintf(os.Stderr, "xjobbench: --aws: scenario %q has no AWS form, skipped\n", s)
		}
	}
	if !slices.Contains(want, "steady") {
		fmt.Fprintln(os.Stderr, "xjobbench: --aws runs the steady scenario only (--scenarios steady)")
		return 2
	}
	var rs []*harness.Result
	failed := false
	for _, s := range strings.Split(steadyJobs, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(s), &n); err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "xjobbench: --steady-jobs: %q is not a job count\n", s)
			return 2
		}
		r, err := harness.SteadyAWS(ctx, env, harness.SteadySpec{Name: fmt.Sprintf("steady-aws-%d", n), Jobs: n, Window: window}, o)
		if err != nil {
			fmt.Fprintln(os.Stderr, "xjobbench:", err)
			failed = true
			continue
		}
		path, err := harness.WriteJSON(env.Results, env.Stamp, r)
		if err != nil {
			fmt.Fprintln(os.Stderr, "xjobbench:", err)
			failed = true
		}
		fmt.Fprintf(os.Stderr, "xjobbench: %s → %s\n", r.Scenario, path)
		rs = append(rs, r)
	}
	harness.PrintTable(os.Stdout, rs)
	for _, r := range rs {
		harness.PrintCost(os.Stdout, r)
		for _, n := range r.Notes {
			fmt.Printf("note (%s): %s\n", r.Scenario, n)
		}
	}
	if failed {
		return 1
	}
	return 0
}
