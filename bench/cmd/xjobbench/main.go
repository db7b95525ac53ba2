// Command xjobbench is the load and fault harness behind `make bench`: it
// builds cmd/xjob, runs `xjob local` on temporary files against a fast
// loopback executor, and reports throughput, fire lateness, lost and
// duplicate fires, CPU and memory per scenario (table on stdout, JSON under
// bench/results/). See bench/README.md.
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
	scenarios := fs.String("scenarios", "steady,burst,scale,chaos,race", "comma-separated: steady, burst, scale, chaos, race")
	steadyJobs := fs.String("steady-jobs", "1000,10000", "job counts of the steady runs")
	steadyWindow := fs.Duration("steady-window", time.Minute, "measured window of each steady run")
	burstJobs := fs.Int("burst-jobs", 10000, "jobs due at the same second")
	scaleStored := fs.Int("scale-stored", 1000000, "stored jobs of the large scale run")
	scaleDue := fs.Int("scale-due", 1000, "jobs due every second in the scale runs")
	scaleWindow := fs.Duration("scale-window", 20*time.Second, "measured window of each scale run")
	chaosJobs := fs.Int("chaos-jobs", 1000, "jobs of the chaos run")
	chaosWindow := fs.Duration("chaos-window", 40*time.Second, "measured window of the chaos run")
	killEvery := fs.Duration("kill-every", 5*time.Second, "SIGKILL period in the chaos run")
	raceJobs := fs.Int("race-jobs", 1000, "jobs of the race run")
	raceWindow := fs.Duration("race-window", 30*time.Second, "measured window of the race run")
	profile := fs.Int("profile-jobs", 10000, "CPU-profile the steady run with this many jobs (0: none)")
	shards := fs.Int("shards", 16, "scan shards")
	out := fs.String("out", "bench/results", "directory of the JSON results and profiles")
	root := fs.String("root", ".", "module root (where cmd/xjob is)")
	onAWS := fs.Bool("aws", false, "run the steady scenario on the emulated AWS stack (dynalite + fauxqs, the five Lambda handlers) instead of xjob local, adding AWS requests and $ per trigger; other scenarios are skipped")
	ringPollers := fs.Int("aws-ring-pollers", 10, "with --aws: concurrent batches of the ring event source mapping")
	fastPollers := fs.Int("aws-fast-pollers", 20, "with --aws: concurrent batches of the fast-lane mapping")
	slowPollers := fs.Int("aws-slow-pollers", 5, "with --aws: concurrent batches of the slow-lane mapping")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
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
			harness.AWSOptions{RingPollers: *ringPollers, FastPollers: *fastPollers, SlowPollers: *slowPollers})
	}
	env.Bin, err = harness.Build(ctx, *root, "./cmd/xjob", work, "xjob")
	if err == nil {
		env.ProfBin, err = harness.Build(ctx, *root, "./bench/cmd/xjobprof", work, "xjobprof")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "xjobbench:", err)
		return 1
	}

	var rs []*harness.Result
	failed := false
	record := func(r *harness.Result, err error) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "xjobbench:", err)
			failed = true
			return
		}
		path, err := harness.WriteJSON(results, env.Stamp, r)
		if err != nil {
			fmt.Fprintln(os.Stderr, "xjobbench:", err)
			failed = true
		}
		fmt.Fprintf(os.Stderr, "xjobbench: %s → %s\n", r.Scenario, path)
		rs = append(rs, r)
	}
	if slices.Contains(want, "steady") {
		for _, s := range strings.Split(*steadyJobs, ",") {
			var n int
			if _, err := fmt.Sscan(strings.TrimSpace(s), &n); err != nil || n < 1 {
				fmt.Fprintf(os.Stderr, "xjobbench: --steady-jobs: %q is not a job count\n", s)
				return 2
			}
			record(harness.Steady(ctx, env, harness.SteadySpec{Name: fmt.Sprintf("steady-%d", n), Jobs: n,
				Window: *steadyWindow, Profile: n == *profile}))
		}
	}
	if slices.Contains(want, "burst") {
		record(harness.Burst(ctx, env, harness.BurstSpec{Jobs: *burstJobs, Lead: 15*time.Second + time.Duration(*burstJobs)*2*time.Millisecond}))
	}
	if slices.Contains(want, "scale") {
		record(harness.Scale(ctx, env, harness.ScaleSpec{Due: *scaleDue, Stored: *scaleDue, Window: *scaleWindow}))
		record(harness.Scale(ctx, env, harness.ScaleSpec{Due: *scaleDue, Stored: *scaleStored, Window: *scaleWindow}))
	}
	if slices.Contains(want, "chaos") {
		record(harness.Steady(ctx, env, harness.SteadySpec{Name: "chaos", Jobs: *chaosJobs, Window: *chaosWindow,
			KillEvery: *killEvery, MinSettle: 35 * time.Second}))
	}
	if slices.Contains(want, "race") {
		record(harness.Steady(ctx, env, harness.SteadySpec{Name: "race", Jobs: *raceJobs, Window: *raceWindow, Procs: 3}))
	}
	harness.PrintTable(os.Stdout, rs)
	for _, r := range rs {
		for _, n := range r.Notes {
			fmt.Printf("note (%s): %s\n", r.Scenario, n)
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
