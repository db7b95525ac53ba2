// Command xjobcost is `make cost`: it runs the AWS deployment's handlers
// on the emulated stack (internal/testenv/awsstack: dynalite + fauxqs, every
// DynamoDB unit metered with its index writes, SQS per 64 KB chunk, Lambda
// requests and GB-s at the deployed memory, HTTP API requests, storage for
// the log retention) under three workloads, each at two reduced rates the
// emulators hold on a small machine, and prices each at its full rate:
//
//	W1  1,000 jobs each every second
//	W2  60,000 jobs each every minute, spread over the seconds of the minute
//	W3  W1 with an executor that sends one result per callback request
//
// A component's dollars are fitted as fixed per second + per trigger
// through the two rates (harness.ScaleCost), so per-bucket and batched
// per-request costs are not inflated by the reduced rate. It also prices an
// idle deployment (no jobs, and 100 jobs every minute) per month. The last
// line is
//
//	cost: W1 $A/M, W2 $B/M, W3 $C/M, idle $D/month
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/xjobdev/xjob/bench/harness"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
)

func main() { os.Exit(run()) }

func run() int {
	fs := flag.NewFlagSet("xjobcost", flag.ContinueOnError)
	w1 := fs.String("w1-jobs", "500,1000", "the two job counts of W1 (each job every second; 1000 is the full workload)")
	w2 := fs.String("w2-jobs", "6000,12000", "the two reduced job counts of W2 (each job every minute)")
	w3 := fs.String("w3-jobs", "250,500", "the two reduced job counts of W3 (each job every second, one result per callback request)")
	window := fs.Duration("window", 20*time.Second, "measured window of each run")
	idleWindow := fs.Duration("idle-window", time.Minute, "measured window of the idle runs: a whole number of minutes, so that it holds the once-a-minute scan and maintenance runs (a 30 s window held none, or one, by chance)")
	shards := fs.Int("shards", 4, "scan shards")
	root := fs.String("root", ".", "module root")
	w2Lead := fs.Duration("w2-lead", 0, "open W2's window this long after the start (default 151 s: past the bulk start's pushed fires; 61 s measures that transient)")
	only := fs.String("only", "", "run only these workloads (comma-separated: W1,W2,W3,idle); the last line then prints only theirs")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &harness.Env{Work: os.TempDir(), Shards: *shards, Log: os.Stderr, Root: *root}
	p := awsstack.ListPrices()
	pair := func(s string) ([2]int, error) {
		parts := strings.Split(s, ",")
		if len(parts) != 2 {
			return [2]int{}, fmt.Errorf("want two job counts, got %q", s)
		}
		var out [2]int
		for i, x := range parts {
			n, err := strconv.Atoi(strings.TrimSpace(x))
			if err != nil || n < 1 {
				return [2]int{}, fmt.Errorf("bad job count %q", x)
			}
			out[i] = n
		}
		if out[0] >= out[1] {
			return [2]int{}, fmt.Errorf("job counts %q must increase", s)
		}
		return out, nil
	}
	n1, err := pair(*w1)
	if err != nil {
		fmt.Fprintln(os.Stderr, "xjobcost: -w1-jobs:", err)
		return 2
	}
	n2, err := pair(*w2)
	if err != nil {
		fmt.Fprintln(os.Stderr, "xjobcost: -w2-jobs:", err)
		return 2
	}
	n3, err := pair(*w3)
	if err != nil {
		fmt.Fprintln(os.Stderr, "xjobcost: -w3-jobs:", err)
		return 2
	}
	everySecond := func(int) string { return "* * * * * ?" }
	spread := func(i int) string { return fmt.Sprintf("%d * * * * ?", i%60) }
	workloads := []struct {
		w    harness.Workload
		jobs [2]int
	}{
		{harness.Workload{Name: "W1", Cron: everySecond, PerJobPerSecond: 1, FullJobs: 1000}, n1},
		{harness.Workload{Name: "W2", Cron: spread, PerJobPerSecond: 1.0 / 60, FullJobs: 60000, MinuteSecond: func(i int) int { return i % 60 }, Lead: *w2Lead}, n2},
		{harness.Workload{Name: "W3", Cron: everySecond, PerJobPerSecond: 1, FullJobs: 1000, CallbackBatch: 1}, n3},
	}
	fmt.Printf("xjobcost: %d shards, window %s, list prices us-east-1, Lambda %d MB arm64, DynamoDB storage for %d days\n",
		*shards, *window, awsstack.MemoryMB, 30)
	want := func(name string) bool {
		return *only == "" || slices.Contains(strings.Split(*only, ","), name)
	}
	totals := map[string]float64{}
	for _, wl := range workloads {
		if !want(wl.w.Name) {
			continue
		}
		var samples [2]*harness.CostSample
		for i, n := range wl.jobs {
			s, err := harness.CostRun(ctx, env, wl.w, n, *window)
			if err != nil {
				fmt.Fprintln(os.Stderr, "xjobcost:", err)
				return 1
			}
			samples[i] = s
			o := s.Outcome
			fmt.Printf("%s measured: %d jobs, %.1f triggers/s offered, %d triggers in %s, lost %d, duplicates %d, lateness p50 %.0f ms p99 %.0f ms\n",
				wl.w.Name, n, s.Rate, s.Triggers, *window, o.Lost, o.Duplicates+o.DuplicateLogs, o.LatenessP50, o.LatenessP99)
		}
		printUnits(samples[1])
		sc := harness.ScaleCost(wl.w, samples[0], samples[1], p)
		fmt.Printf("%s: measured at %.1f triggers/s: $%.2f per million triggers; scaled to %.0f triggers/s: $%.2f per million\n",
			wl.w.Name, sc.MeasuredAt, sc.Measured, sc.FullRate, sc.TotalPerM)
		fmt.Printf("  by function:")
		for _, kv := range sc.ByFunction() {
			fmt.Printf("  %s $%.3f", kv[0], kv[1])
		}
		fmt.Printf("\n  by service: ")
		for _, kv := range sc.ByService() {
			fmt.Printf("  %s $%.3f", kv[0], kv[1])
		}
		fmt.Println()
		totals[wl.w.Name] = sc.TotalPerM
	}
	idle := harness.Workload{Name: "idle", Cron: func(i int) string { return fmt.Sprintf("%d * * * * ?", i%60) }, PerJobPerSecond: 1.0 / 60}
	var idleMonth float64
	idleRuns := []int{0, 100}
	if !want("idle") {
		idleRuns = nil
	}
	for _, n := range idleRuns {
		s, err := harness.CostRun(ctx, env, idle, n, *idleWindow)
		if err != nil {
			fmt.Fprintln(os.Stderr, "xjobcost:", err)
			return 1
		}
		m, by := harness.IdleMonth(s, p)
		fmt.Printf("idle with %d jobs every minute: $%.2f per month (%d triggers in %s):", n, m, s.Triggers, *idleWindow)
		for _, fn := range []string{"scan", "ring", "dispatch", "callback", "registry", "esm:ring", "esm:dispatch", "http api"} {
			if v := by[fn]; v > 0.005 {
				fmt.Printf("  %s $%.2f", fn, v)
			}
		}
		fmt.Println()
		if n == 0 {
			idleMonth = m
		}
	}
	if *only != "" {
		var parts []string
		for _, name := range []string{"W1", "W2", "W3"} {
			if v, ok := totals[name]; ok {
				parts = append(parts, fmt.Sprintf("%s $%.2f/M", name, v))
			}
		}
		if want("idle") {
			parts = append(parts, fmt.Sprintf("idle $%.2f/month", idleMonth))
		}
		fmt.Printf("cost (only %s): %s\n", *only, strings.Join(parts, ", "))
		return 0
	}
	fmt.Printf("cost: W1 $%.2f/M, W2 $%.2f/M, W3 $%.2f/M, idle $%.2f/month\n", totals["W1"], totals["W2"], totals["W3"], idleMonth)
	return 0
}

// printUnits prints the DynamoDB request units per trigger of each
// function and operation at the sample's rate (index writes counted in
// the units and shown apart): where a trigger's price comes from.
func printUnits(s *harness.CostSample) {
	if s.Triggers == 0 {
		return
	}
	fmt.Printf("  dynamodb units/trigger at %.0f/s:", s.Rate)
	fns := slices.Sorted(maps.Keys(s.Usage.Ops))
	for _, fn := range fns {
		ops := s.Usage.Ops[fn]
		for _, op := range slices.Sorted(maps.Keys(ops)) {
			st := ops[op]
			u := (st.Reported + st.Derived + st.IndexUnits) / float64(s.Triggers)
			if !strings.HasPrefix(op, "dynamodb:") || u < 0.005 {
				continue
			}
			fmt.Printf("  %s %s %.2f", fn, strings.TrimPrefix(op, "dynamodb:"), u)
			if st.IndexUnits > 0 {
				fmt.Printf(" (index %.2f)", st.IndexUnits/float64(s.Triggers))
			}
		}
	}
	fmt.Println()
}
