// Command xjobcluster is the cluster bench behind `make bench-cluster`: it
// builds cmd/xjob, starts a private PostgreSQL and then a private MariaDB
// server on loopback, and on each runs `xjob server` nodes against the
// bench executor through the scenarios of harness.ClusterScenarios
// (steady ladder, scaling, failover, database restart, rolling restart).
// It prints a table per database, writes one JSON file per measured window
// under bench/results/, and ends with one summary line per database:
//
//	cluster: DB N nodes, R triggers/s for S s, in time P%, p99 L ms, lost X, dup Y, failover max F ms, us/trigger C
//
// See bench/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/xjobdev/xjob/bench/harness"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("xjobcluster", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "a short variant (~10 min): steady 500 and 1,000 jobs for 10 s, failover for 30 s, 300 jobs in the fault and scaling runs; flags given explicitly still win")
	dbs := fs.String("db", "postgres,mariadb", "comma-separated databases: postgres, mariadb")
	scenarios := fs.String("scenarios", strings.Join(harness.ClusterScenarios, ","), "comma-separated: "+strings.Join(harness.ClusterScenarios, ", "))
	nodes := fs.Int("nodes", 3, "xjob server nodes")
	leaseTTL := fs.Duration("lease-ttl", 0, "the nodes' --lease-ttl (0: xjob's default, 5s)")
	steadyJobs := fs.String("steady-jobs", "1000,2000,3000,4000,6000,8000", "the steady ladder: every-second jobs at each step (one cluster, jobs added); it stops after the first step that keeps fewer than 99.9% of its fires within 1 s")
	steadyWindow := fs.Duration("steady-window", 30*time.Second, "measured window of each steady step")
	faultJobs := fs.Int("fault-jobs", 1000, "every-second jobs of the failover, database restart and rolling restart runs")
	failoverFor := fs.Duration("failover-for", 2*time.Minute, "how long the failover run kills nodes")
	killEvery := fs.Duration("kill-every", 15*time.Second, "SIGKILL period of the failover run")
	killDown := fs.Duration("kill-down", 7*time.Second, "how long a killed node stays down (longer than the lease TTL: the others take its shards over)")
	dbDown := fs.Duration("db-down", 10*time.Second, "how long the database restart run keeps the server stopped")
	scaleJobs := fs.Int("scale-jobs", 1000, "every-second jobs of the scaling runs (1 node, then --nodes)")
	scaleWindow := fs.Duration("scale-window", 30*time.Second, "measured window of each scaling run")
	profile := fs.Bool("profile", false, "CPU-profile the first node over each steady step (its --pprof-listen), into --out")
	shards := fs.Int("shards", 16, "scan shards")
	out := fs.String("out", "bench/results", "directory of the JSON results")
	root := fs.String("root", ".", "module root (where cmd/xjob is)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range map[string]string{"steady-jobs": "500,1000", "steady-window": "10s", "failover-for": "30s",
			"fault-jobs": "300", "scale-jobs": "300", "scale-window": "10s"} {
			if !set[name] {
				_ = fs.Set(name, v)
			}
		}
	}
	var ladder []int
	for _, s := range strings.Split(*steadyJobs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || len(ladder) > 0 && n <= ladder[len(ladder)-1] {
			fmt.Fprintf(os.Stderr, "xjobcluster: --steady-jobs: %q is not an increasing list of job counts\n", *steadyJobs)
			return 2
		}
		ladder = append(ladder, n)
	}
	if *nodes < 1 || *nodes > 9 {
		fmt.Fprintln(os.Stderr, "xjobcluster: --nodes: between 1 and 9")
		return 2
	}
	if *leaseTTL > 0 && *killDown <= *leaseTTL || *leaseTTL == 0 && *killDown <= 5*time.Second {
		fmt.Fprintln(os.Stderr, "xjobcluster: --kill-down must be longer than the lease TTL (the others take a dead node's shards over when its lease expires)")
		return 2
	}
	spec := harness.ClusterSpec{Nodes: *nodes, LeaseTTL: *leaseTTL, SteadyJobs: ladder, SteadyWindow: *steadyWindow,
		FaultJobs: *faultJobs, FailoverFor: *failoverFor, KillEvery: *killEvery, KillDown: *killDown, DBDown: *dbDown,
		ScaleJobs: *scaleJobs, ScaleWindow: *scaleWindow, Scenarios: strings.Split(*scenarios, ","), Profile: *profile}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	work, err := os.MkdirTemp("", "xjobcluster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "xjobcluster:", err)
		return 1
	}
	if os.Getenv("XJOBBENCH_KEEP") == "" {
		defer os.RemoveAll(work)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "xjobcluster:", err)
		return 1
	}
	results, _ := filepath.Abs(*out)
	absRoot, _ := filepath.Abs(*root)
	env := &harness.Env{Work: work, Results: results, Shards: *shards, Log: os.Stderr, Root: absRoot,
		Stamp: time.Now().UTC().Format("20060102T150405Z"), Target: harness.TargetCandidate, Label: harness.Describe(ctx, absRoot)}
	if env.Bin, err = harness.Build(ctx, *root, "./cmd/xjob", work, "xjob"); err != nil {
		fmt.Fprintln(os.Stderr, "xjobcluster:", err)
		return 1
	}
	started := time.Now()
	load0 := loadavg()
	fmt.Printf("xjob %s, %d cores, load average at the start %s\n", env.Label, runtime.NumCPU(), load0)
	var reps []*harness.ClusterReport
	failed := false
	for _, db := range strings.Split(*dbs, ",") {
		db = strings.TrimSpace(db)
		rep, err := harness.RunCluster(ctx, env, db, spec)
		if err != nil {
			fmt.Fprintf(os.Stderr, "xjobcluster: %s: %v\n", db, err)
			failed = true
		}
		if rep == nil {
			continue
		}
		for _, r := range rep.Results {
			path, err := harness.WriteJSON(results, env.Stamp, r)
			if err != nil {
				fmt.Fprintln(os.Stderr, "xjobcluster:", err)
				failed = true
				continue
			}
			fmt.Fprintf(os.Stderr, "xjobcluster: %s → %s\n", r.Scenario, path)
		}
		if len(rep.Errors) > 0 {
			failed = true
		}
		reps = append(reps, rep)
	}
	for _, rep := range reps {
		report(os.Stdout, rep)
	}
	fmt.Printf("\nload average at the end %s (start %s); %s in all\n", loadavg(), load0, time.Since(started).Round(time.Second))
	for _, rep := range reps {
		fmt.Println(rep.Line())
	}
	if failed {
		return 1
	}
	return 0
}

// report prints one database's windows: the bench table, the cluster
// figures, notes and errors.
func report(w io.Writer, rep *harness.ClusterReport) {
	fmt.Fprintf(w, "\n## %s, %d nodes\n\n", rep.DB, rep.Nodes)
	harness.PrintTable(w, rep.Results)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, "| "+strings.Join(cells, "\t| ")+"\t|") }
	row("scenario", "nodes", "jobs", "in time %", "trig/s", "p99 ms", "max ms", "lost", "misfired", "dup",
		"node cpu µs/trg", "db cpu µs/trg", "failover max ms", "dead-node fires (missed)", "db back → first fire ms", "restarts",
		"db conns", "node rss MB")
	row("---", "---", "---", "---", "---", "---", "---", "---", "---", "---", "---", "---", "---", "---", "---", "---", "---", "---")
	for _, r := range rep.Results {
		c := r.Cluster
		fo, fires, resume := "–", "–", "–"
		if len(c.Kills) > 0 {
			fo, fires = fmt.Sprintf("%.0f", c.FailoverMaxMs), fmt.Sprintf("%d (%d)", c.FailoverFires, c.FailoverMissed)
		}
		if c.DBOutage != nil {
			resume = fmt.Sprintf("%.0f", c.ResumeMs)
		}
		dbcpu := "–"
		if c.DBCPUPerTriggerUs > 0 {
			dbcpu = fmt.Sprintf("%.0f", c.DBCPUPerTriggerUs)
		}
		row(r.Scenario, fmt.Sprint(c.Nodes), fmt.Sprint(r.Jobs), fmt.Sprintf("%.2f", c.InTimePct), fmt.Sprintf("%.0f", r.Rate),
			fmt.Sprintf("%.0f", r.LatenessP99), fmt.Sprintf("%.0f", r.LatenessMax), fmt.Sprint(r.Lost), fmt.Sprint(r.Misfired),
			fmt.Sprint(r.Duplicates), fmt.Sprintf("%.0f", r.CPUPerTriggerUs), dbcpu, fo, fires, resume, fmt.Sprint(r.Restarts),
			fmt.Sprint(c.DBConnections), fmt.Sprintf("%.0f", c.NodeRSSMB))
	}
	_ = tw.Flush()
	if s := rep.Steady; s != nil {
		verdict := "meets"
		if !rep.SteadyMet {
			verdict = "does NOT meet"
		}
		fmt.Fprintf(w, "steady (%s): R = %d jobs, the largest step of the ladder that %s %.1f%% in time within %d ms\n",
			rep.DB, s.Jobs, verdict, harness.InTimeGoal, harness.InTimeMs)
	}
	if rep.ScaleCPU1 > 0 && rep.ScaleCPU3 > 0 {
		fmt.Fprintf(w, "scaling (%s): %.0f µs/trigger on 1 node, %.0f on %d nodes: ×%.2f (goal ≤ ×1.3)\n",
			rep.DB, rep.ScaleCPU1, rep.ScaleCPU3, rep.Nodes, rep.ScaleCPU3/rep.ScaleCPU1)
	}
	fmt.Fprintf(w, "misfired (%s): %d fires passed over by a misfire or late-collapse rule (DO_NOTHING), not lost\n", rep.DB, rep.Misfired())
	for _, r := range rep.Results {
		for _, n := range r.Notes {
			fmt.Fprintf(w, "note (%s): %s\n", r.Scenario, n)
		}
		if r.Cluster.FailoverWorst != "" {
			fmt.Fprintf(w, "note (%s): the latest dead-node fire: %s\n", r.Scenario, r.Cluster.FailoverWorst)
		}
		if r.TriggerFailures > 0 {
			fmt.Fprintf(w, "note (%s): %d failed triggers, e.g. %q\n", r.Scenario, r.TriggerFailures, r.FailedTriggerMsgs)
		}
	}
	for _, r := range rep.Results {
		if len(r.ProfileTop) > 0 {
			fmt.Fprintf(w, "\nCPU profile of node-1, %s: %s\n", r.Scenario, filepath.Base(r.Profile))
			for _, l := range r.ProfileTop[:min(len(r.ProfileTop), 25)] {
				fmt.Fprintln(w, "  "+l)
			}
		}
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "ERROR (%s): %s\n", rep.DB, e)
	}
}

// loadavg is the 1, 5 and 15 minute load averages (Linux), "?" elsewhere.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
