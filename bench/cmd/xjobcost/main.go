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
//	W4  W1 served by 10 xxl-job-like executors (route ROUND), each with
//	    one callback sender that drains what has queued per request
//	W5  100 jobs each every minute at random seconds, 2 such executors,
//	    priced per month, with its lateness, on the sparse deployment
//	    (Shards=1, LogPages=1, RingMemorySize=128: what docs/aws.md
//	    tells a deployment of that size to choose) and then on the
//	    stack's defaults (-w5-profiles)
//	W7  1,000 HTTP jobs each every second (no executor: the ring and
//	    dispatch functions call a loopback endpoint themselves)
//	W6  10,000 every-second jobs over 20 such executors, run at a rate
//	    the emulators hold: the busiest item's and partition key's units
//	    per second, projected to 10,000 triggers/s, and the requests
//	    throttled at DynamoDB's per-partition limits
//
// Each workload's runs also read a sample of their results through the
// admin API (GET /v1/logs/{id}, the console's view) until each shows, and
// print how long that took after the executor's callback returned, on a
// line of its own under the measured one (harness.ResultLag).
//
// A component's dollars are fitted as fixed per second + per trigger
// through the two rates (harness.ScaleCost), so per-bucket and batched
// per-request costs are not inflated by the reduced rate. It also prices an
// idle deployment (no jobs) per month. The last lines are
//
//	result visible: W1 p50 A ms p99 B ms (queued), …, W5 p50 E ms p99 F ms (direct), W6 …
//	cost: W1 $A/M, W2 $B/M, W3 $C/M, W4 $D/M, W7 $G/M, W5 $E/month, idle $F/month
//	provisioned: W1 $A/M, W5 $B/month, idle $C/month
//	limits: at 10000/s hottest item W WCU/s R RCU/s, hottest key K WCU/s Q RCU/s, throttled T
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/bench/harness"
	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/app/lambdaapp"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/scanfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/scheduler/capacity"
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
	w4 := fs.String("w4-jobs", "500,1000", "the two job counts of W4 (each job every second, 10 xxl-job-like executors, route ROUND)")
	w7 := fs.String("w7-jobs", "500,1000", "the two job counts of W7 (HTTP jobs each every second, called by the functions themselves)")
	w5Window := fs.Duration("w5-window", 2*time.Minute, "measured window of W5 (100 jobs every minute at random seconds, 2 executors): whole minutes")
	w5Profiles := fs.String("w5-profiles", "sparse,default", "the deployments W5 runs on, in order, the first one's figures in the cost and provisioned lines: sparse (Shards=1, LogPages=1, RingMemorySize=128: docs/aws.md's sparse deployment) and default (-shards, 16 log pages, the template's ring memory)")
	w5Lead := fs.Duration("w5-lead", 0, "W5's jobs are started without the admin's push of their first fires, a scan plans them at once, and the window opens 7 s after their first fires; a lead starts them with the admin's bulk start instead and opens the window this long after it (151 s: past the pushed fires, the scan horizon, 150 s)")
	w6 := fs.Int("w6-jobs", 1000, "W6's job count (each every second, 20 executors): the rate the emulators hold; its hottest item and key are projected to 10,000/s")
	w6Window := fs.Duration("w6-window", 20*time.Second, "measured window of W6")
	w6Rate := fs.Int("w6-advance-rate", 0, "W6's scan advances a second per shard (0: the scan function's default scaled by w6-jobs/10000, so the due index's projected rate is the default's; -1: unpaced)")
	w2Lead := fs.Duration("w2-lead", 0, "W2's jobs are started without the admin's push of their first fires, a scan plans them at once, and each window opens 7 s after their first fires; a lead starts them with the admin's bulk start instead and opens the window this long after it (151 s: past the pushed fires, the scan horizon, 150 s; 61 s measures that transient)")
	sync := fs.Bool("sync-callbacks", false, "deploy without the results queue: the callback function applies each request itself (the design before it), to compare")
	reserved := fs.Bool("reserved", false, "deploy as ReservedConcurrency=true does (callback, web, scan and registry capped at their reservations), to compare; the templates' default is off")
	provTables := fs.String("provisioned-tables", strings.Join(awsconfig.SteadyTables, ","), "the tables the provisioned line puts on provisioned capacity with auto scaling (the stacks' TableBillingMode PROVISIONED: awsconfig.SteadyTables), the others on demand")
	noKeeper := fs.Bool("no-keeper", false, "provisioned line: leave out the scan's capacity keeper (which keeps a table on demand while its load costs less so), to compare")
	provMin := fs.Float64("provisioned-min", 1, "provisioned line: minimum capacity units, each of read and write, per table and index")
	provMax := fs.Float64("provisioned-max", 4000, "provisioned line: maximum capacity units per table and index")
	provTarget := fs.Float64("provisioned-target", 0.7, "provisioned line: auto scaling's target utilisation")
	customMetrics := fs.Bool("custom-metrics", false, "deploy as CustomMetrics=true does: the pipeline's counters as CloudWatch custom metrics (EMF directives), each priced; the templates' default is off (plain log lines)")
	noInit := fs.Bool("no-init", false, "do not measure the functions' init durations with the real bootstraps (cold starts are then not priced)")
	ringLead := fs.Duration("ring-lead", 0, "override the scan's ring lead (how long before its second a ring bucket is visible at the latest), to compare leads")
	noLag := fs.Bool("no-result-lag", false, "do not read a sample of each window's results through the admin API (the result lag)")
	cpuShare := fs.Bool("cpu-share", true, "price Lambda time at the function's CPU share (memory/1,769 MB of a vCPU): each invocation's CPU-bound part stretched by CPU x (1769/MB - 1); false prices the time as measured on this machine's core, as before the model")
	onBootstraps := fs.Bool("bootstraps", false, "run the workloads on the functions' real bootstraps (lambdarun), which measures each invocation's CPU; their AWS requests are not metered, so only the lambda lines of such a run count; with -cpu-file it writes each workload's CPU an invocation there")
	cpuQuota := fs.Bool("cpu-quota", false, "with -bootstraps: run each bootstrap at its memory's share of a core (a cgroup CPU quota, as Lambda limits a function), at the template's memory or -bootstrap-memory, so that lateness and durations are measured at Lambda's CPU, not at a whole core here")
	bootMemory := fs.String("bootstrap-memory", "", "with -bootstraps: memory in MB for some functions instead of the template's, e.g. ring=1024")
	cpuFile := fs.String("cpu-file", "", "each workload's mean CPU ms an invocation per function (JSON): written by a -bootstraps run, read by an in-process run (whose handlers share one process, so their CPU is not measured) to price the CPU share")
	only := fs.String("only", "", "run only these workloads (comma-separated: W1,W2,W3,W4,W7,W5,W6,idle); the last lines then print only theirs")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &harness.Env{Work: os.TempDir(), Shards: *shards, Log: os.Stderr, Root: *root, SyncCallbacks: *sync, RingLead: *ringLead, ReservedConcurrency: *reserved, NoResultLag: *noLag, CustomMetrics: *customMetrics}
	p := awsstack.ListPrices()
	p.CPUShare = *cpuShare
	// Each function at the memory the template deploys (the ring's is
	// RingMemorySize, at its default), not at a copy of it.
	mem, err := awsstack.TemplateMemory(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "xjobcost:", err)
		return 1
	}
	p.Memory = mem
	var bin string
	if !*noInit || *onBootstraps {
		dir, err := buildBootstraps(ctx, *root)
		if err != nil {
			fmt.Fprintln(os.Stderr, "xjobcost: bootstraps:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		bin = dir
	}
	if *onBootstraps {
		env.Bootstraps = bin
		env.BootstrapCPUShare = *cpuQuota
		env.BootstrapMemory = maps.Clone(mem)
		if *bootMemory != "" {
			over, err := parseMemoryFlag(*bootMemory)
			if err != nil {
				fmt.Fprintln(os.Stderr, "xjobcost: -bootstrap-memory:", err)
				return 2
			}
			for fn := range over {
				if _, ok := mem[fn]; !ok {
					fmt.Fprintf(os.Stderr, "xjobcost: -bootstrap-memory: the template has no function %q\n", fn)
					return 2
				}
			}
			maps.Copy(env.BootstrapMemory, over)
		}
	} else if *cpuQuota || *bootMemory != "" {
		fmt.Fprintln(os.Stderr, "xjobcost: -cpu-quota and -bootstrap-memory need -bootstraps")
		return 2
	}
	cpus := cpuTable{}
	if *cpuFile != "" && !*onBootstraps {
		var err error
		if cpus, err = readCPU(*cpuFile); err != nil {
			fmt.Fprintln(os.Stderr, "xjobcost:", err)
			return 1
		}
	}
	if !*noInit {
		init, initCPU, err := awsstack.MeasureInit(ctx, awsstack.Options{Root: *root, Shards: 4, Bootstraps: bin})
		if err != nil {
			fmt.Fprintln(os.Stderr, "xjobcost: init durations:", err)
			return 1
		}
		p.Init, p.InitCPU = init, initCPU
		env.ColdStarts = init // a cold start's invocation waits for its Init: lateness includes it
		fmt.Printf("init: a cold start's Init, measured with the real bootstraps (one each, shared machine):")
		for _, f := range awsconfig.Functions {
			fmt.Printf("  %s %d ms (CPU %.1f ms)", f.Name, awsstack.BilledDuration(init[f.Name]).Milliseconds(), ms(initCPU[f.Name]))
		}
		fmt.Println()
	}
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
	n4, err := pair(*w4)
	if err != nil {
		fmt.Fprintln(os.Stderr, "xjobcost: -w4-jobs:", err)
		return 2
	}
	n7, err := pair(*w7)
	if err != nil {
		fmt.Fprintln(os.Stderr, "xjobcost: -w7-jobs:", err)
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
		{harness.Workload{Name: "W4", Cron: everySecond, PerJobPerSecond: 1, FullJobs: 1000, Executors: 10, Route: xjob.RouteRound}, n4},
		{harness.Workload{Name: "W7", Cron: everySecond, PerJobPerSecond: 1, FullJobs: 1000, HTTPTarget: true}, n7},
	}
	fmt.Printf("xjobcost: %d shards, window %s, list prices us-east-1, Lambda arm64 at the template's MemorySize (%s) (each invocation rounded up to 1 ms, cold starts' Init), DynamoDB storage and PITR for %d days, CloudWatch Logs ingestion (functions' output + %d B a invocation: system log level %s) and storage for %.0f month, custom metrics $%.2f each a month, retention deletes\n",
		*shards, *window, memoryLine(mem), 30, p.LambdaLogBytes, awsconfig.SystemLogLevel, p.LogsRetentionMonths, p.CustomMetricMonth)
	switch {
	case !*cpuShare:
		fmt.Println("cpu share: off (-cpu-share=false): Lambda time as measured on this machine's core")
	case *onBootstraps:
		fmt.Println("cpu share: on, each invocation's CPU measured on its bootstrap")
	case len(cpus) == 0:
		fmt.Println("cpu share: on, but no CPU an invocation (-cpu-file from a -bootstraps run): it adds nothing")
	default:
		fmt.Printf("cpu share: on, CPU an invocation from %s: billed time + CPU x (%d/MB - 1)\n", *cpuFile, awsstack.VCPUMemoryMB)
	}
	if *customMetrics {
		fmt.Println("custom metrics: on (CustomMetrics=true): the pipeline's EMF records carry their metric directive, each metric they define priced")
	} else {
		fmt.Println("custom metrics: off (CustomMetrics=false, the default): the pipeline's EMF records are plain log lines, priced as log ingestion; the functions' real output is metered either way")
	}
	fmt.Println("free tiers (never subtracted): Lambda 1 M requests and 400,000 GB-s a month; SQS 1 M requests; DynamoDB 25 GB storage; CloudWatch 10 custom metrics, 10 alarm metrics, 5 GB of logs ingested and stored")
	want := func(name string) bool {
		return *only == "" || slices.Contains(strings.Split(*only, ","), name)
	}
	lead := cmp.Or(*ringLead, wiring.DefaultRingLead)
	totals := map[string]float64{}
	var lags lagLine
	prov := awsstack.Provisioned{Tables: strings.Split(*provTables, ","), Min: *provMin, Max: *provMax, Target: *provTarget}
	cp := awsstack.ListCapacityPrices()
	if !*noKeeper {
		kp := capacity.DefaultPolicy()
		kp.Min, kp.Max, kp.Target = *provMin, *provMax, *provTarget
		kp.Prices = capacity.Prices{WRU: p.WRU, RRU: p.RRU, WCUHour: cp.WCUHour, RCUHour: cp.RCUHour}
		prov.Keeper, prov.PerFire = &kp, scanfn.PerFire
	}
	provLine := map[string]string{}
	printProv := func(name string, c awsstack.CapacityCost) {
		var caps []string
		for _, k := range slices.Sorted(maps.Keys(c.Capacity)) {
			caps = append(caps, fmt.Sprintf("%s %.0f", strings.TrimPrefix(k, awsstack.TablePrefix+"-"), c.Capacity[k]))
		}
		keeper := "no keeper"
		if prov.Keeper != nil {
			keeper = "keeper: on demand " + cmp.Or(strings.Join(c.OnDemandTables, ","), "none")
		}
		fmt.Printf("  provisioned %s (%s at %.0f%%, min %.0f; %s): capacity %s; throttled %.0f units\n", name, *provTables, *provTarget*100, *provMin, keeper, strings.Join(caps, ", "), c.Throttled)
		// Every table's mean load and what it costs on demand a month:
		// which tables carry a load worth capacity.
		var loads []string
		for _, k := range slices.Sorted(maps.Keys(c.Load)) {
			if c.Load[k] == 0 {
				continue
			}
			unit := p.WRU
			if strings.HasSuffix(k, " r") {
				unit = p.RRU
			}
			loads = append(loads, fmt.Sprintf("%s %.2f/s $%.2f", strings.TrimPrefix(k, awsstack.TablePrefix+"-"), c.Load[k], c.Load[k]*unit*awsstack.MonthSeconds))
		}
		fmt.Printf("  table load %s (units a second, on demand a month): %s\n", name, strings.Join(loads, ", "))
	}
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
			fmt.Printf("%s measured: %d jobs, %.1f triggers/s offered, %d triggers in %s, lost %d, duplicates %d, lateness p50 %.0f ms p99 %.0f ms%s\n",
				wl.w.Name, n, s.Rate, s.Triggers, *window, o.Lost, o.Duplicates+o.DuplicateLogs, o.LatenessP50, o.LatenessP99, sampleNotes(s))
			printLag(s)
		}
		lags.add(wl.w.Name, samples[1])
		printUnits(samples[1])
		p := cpus.prices(p, wl.w.Name)
		printInvokes(samples[1], p)
		cpus.record(wl.w.Name, samples[1])
		priceShare(wl.w.Name, "per million", p, func(p awsstack.Prices) float64 { return harness.ScaleCost(wl.w, samples[0], samples[1], p).TotalPerM },
			samples[1].Usage, lead)
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
		// Provisioned, every workload (W2's minute wave against the
		// capacity and its burst credit included); the line quotes W1.
		dl, _ := harness.ProvisionedDelta(samples[0], prov, p, cp)
		dh, c := harness.ProvisionedDelta(samples[1], prov, p, cp)
		printProv(wl.w.Name, c)
		pm := sc.TotalPerM + harness.FitPerM(wl.w, samples[0], samples[1], dl, dh)
		fmt.Printf("  provisioned: %s $%.2f per million\n", wl.w.Name, pm)
		if wl.w.Name == "W1" {
			provLine["W1"] = fmt.Sprintf("W1 $%.2f/M", pm)
		}
	}
	// FullJobs makes the run meter the jobs' first planning scan apart and
	// bear its share per planning cycle, as the steady state does (the
	// whole first planning inside a short window would be most of it).
	w5 := harness.Workload{Name: "W5", Cron: func(i int) string { return fmt.Sprintf("%d * * * * ?", w5Second(i)) },
		PerJobPerSecond: 1.0 / 60, MinuteSecond: w5Second, Executors: 2, FullJobs: 100, Lead: *w5Lead}
	var w5Month float64
	if want("W5") {
		profiles, err := parseW5Profiles(*w5Profiles, *shards, mem)
		if err != nil {
			fmt.Fprintln(os.Stderr, "xjobcost: -w5-profiles:", err)
			return 2
		}
		var others []string
		for i, prof := range profiles {
			w := prof.apply(w5)
			s, err := harness.CostRun(ctx, env, w, 100, *w5Window)
			if err != nil {
				fmt.Fprintln(os.Stderr, "xjobcost:", err)
				return 1
			}
			key := "W5"
			if i > 0 {
				key = "W5-" + prof.name
			}
			p := prof.prices(cpus.prices(p, key))
			cpus.record(key, s)
			m, by, bySvc := harness.IdleMonth(s, p)
			o := s.Outcome
			fmt.Printf("W5 (%s profile: %s): 100 jobs every minute at random seconds, 2 executors: $%.2f per month (%d triggers in %s, lost %d, duplicates %d, lateness p50 %.0f ms p99 %.0f ms%s)\n",
				prof.name, prof.label, m, s.Triggers, *w5Window, o.Lost, o.Duplicates+o.DuplicateLogs, o.LatenessP50, o.LatenessP99, sampleNotes(s))
			printLag(s)
			printMonth("by function:", by)
			printMonth("by service: ", bySvc)
			printUnits(s)
			printRequests(s)
			printInvokes(s, p)
			priceShare("W5", "a month", p, func(p awsstack.Prices) float64 { m, _, _ := harness.IdleMonth(s, p); return m }, s.Usage, lead)
			printMetrics(s)
			d, c := harness.ProvisionedDelta(s, prov, p, cp)
			printProv("W5", c)
			pm := m + d*awsstack.MonthSeconds/s.Seconds
			if i == 0 {
				lags.add("W5", s)
				w5Month = m
				provLine["W5"] = fmt.Sprintf("W5 $%.2f/month", pm)
				continue
			}
			others = append(others, fmt.Sprintf("%s profile $%.2f/month (provisioned $%.2f/month)", prof.name, m, pm))
		}
		if len(others) > 0 {
			fmt.Printf("W5 also at the %s (%d executors, the same jobs); the cost line's W5 is the %s profile's\n",
				strings.Join(others, ", "), w5.Executors, profiles[0].name)
		}
	}
	var idleMonth float64
	if want("idle") {
		idle := harness.Workload{Name: "idle", Cron: func(i int) string { return fmt.Sprintf("%d * * * * ?", i%60) }, PerJobPerSecond: 1.0 / 60}
		s, err := harness.CostRun(ctx, env, idle, 0, *idleWindow)
		if err != nil {
			fmt.Fprintln(os.Stderr, "xjobcost:", err)
			return 1
		}
		p := cpus.prices(p, "idle")
		cpus.record("idle", s)
		m, by, bySvc := harness.IdleMonth(s, p)
		fmt.Printf("idle (no jobs): $%.2f per month over %s\n", m, *idleWindow)
		printMonth("by function:", by)
		printMonth("by service: ", bySvc)
		printInvokes(s, p)
		priceShare("idle", "a month", p, func(p awsstack.Prices) float64 { m, _, _ := harness.IdleMonth(s, p); return m }, s.Usage, lead)
		printMetrics(s)
		idleMonth = m
		d, c := harness.ProvisionedDelta(s, prov, p, cp)
		printProv("idle", c)
		provLine["idle"] = fmt.Sprintf("idle $%.2f/month", m+d*awsstack.MonthSeconds/s.Seconds)
	}
	if n, metrics := alarmCount(*root); n > 0 {
		fmt.Printf("alarms: %d CloudWatch alarms reading %d metrics in infra/sam/template.yaml: $%.2f per month ($%.2f a metric), not in the figures above\n",
			n, metrics, float64(metrics)*p.AlarmMonth, p.AlarmMonth)
		if parts := prov.Parts(); parts > 0 {
			fmt.Printf("alarms, provisioned: auto scaling's target tracking adds 2 alarms per table or index and dimension, %d: $%.2f per month, not in the provisioned line\n",
				4*parts, float64(4*parts)*p.AlarmMonth)
			if prov.Keeper != nil {
				fmt.Printf("keeper: the hour before a switch to on demand costs $%.4f at the minimum capacity, once each time a load stops; its DescribeTable and UpdateTable are control-plane requests DynamoDB does not bill\n",
					prov.KeeperQuietHour(cp))
			}
		}
	}
	var limits string
	if want("W6") {
		w6w := harness.Workload{Name: "W6", Cron: everySecond, PerJobPerSecond: 1, FullJobs: 10000, Executors: 20, Route: xjob.RouteRound,
			AdvanceRate: *w6Rate}
		if w6w.AdvanceRate == 0 {
			w6w.AdvanceRate = max(1, int(math.Round(float64(lambdaapp.DefaultScanAdvanceRate)*float64(*w6)/10000)))
		}
		s, err := harness.CostRun(ctx, env, w6w, *w6, *w6Window)
		if err != nil {
			fmt.Fprintln(os.Stderr, "xjobcost:", err)
			return 1
		}
		o, h := s.Outcome, s.Hottest
		rate := float64(s.Triggers) / s.Seconds
		f := 0.0
		if rate > 0 {
			f = 10000 / rate
		}
		fmt.Printf("W6 measured: %d jobs, 20 executors, %.1f triggers/s, %d triggers in %s, lost %d, duplicates %d, lateness p50 %.0f ms p99 %.0f ms, throttled %d%s\n",
			*w6, rate, s.Triggers, *w6Window, o.Lost, o.Duplicates+o.DuplicateLogs, o.LatenessP50, o.LatenessP99, h.Throttled, sampleNotes(s))
		printLag(s)
		lags.add("W6", s)
		for _, x := range []struct {
			what string
			h    awsstack.Hot
		}{{"item by WCU", h.ItemW}, {"item by RCU", h.ItemR}, {"key by WCU", h.KeyW}, {"key by RCU", h.KeyR}} {
			fmt.Printf("  hottest %s: %s  %.0f WCU/s %.0f RCU/s measured, ×%.1f → %.0f WCU/s %.0f RCU/s at 10000/s\n",
				x.what, x.h.Key, x.h.WCU, x.h.RCU, f, x.h.WCU*f, x.h.RCU*f)
		}
		// The scan before the window advanced every job at once (a bulk
		// start's burst on the due index, which the steady state repeats
		// per plan grid): its hottest key counts too.
		ph := s.PlanningHottest
		pace := "unpaced"
		if w6w.AdvanceRate > 0 {
			pace = fmt.Sprintf("%d advances/s per shard", w6w.AdvanceRate)
		}
		fmt.Printf("  hottest key by WCU in the planning scan (%s): %s  %.0f WCU/s measured, ×%.1f → %.0f WCU/s at 10000/s, throttled %d\n",
			pace, ph.KeyW.Key, ph.KeyW.WCU, f, ph.KeyW.WCU*f, ph.Throttled)
		keyW := max(h.KeyW.WCU, ph.KeyW.WCU)
		limits = fmt.Sprintf("limits: at 10000/s hottest item %.0f WCU/s %.0f RCU/s, hottest key %.0f WCU/s %.0f RCU/s, throttled %d",
			max(h.ItemW.WCU, ph.ItemW.WCU)*f, h.ItemR.RCU*f, keyW*f, h.KeyR.RCU*f, h.Throttled+ph.Throttled)
	}
	if l := lags.String(); l != "" {
		fmt.Println(l)
	}
	if *onBootstraps {
		fmt.Println("bootstraps: the functions ran as their real bootstraps, whose AWS requests are not metered: only the lambda lines and the CPU measured count, not the dollars")
		if *cpuFile != "" {
			if err := writeCPU(*cpuFile, cpus); err != nil {
				fmt.Fprintln(os.Stderr, "xjobcost:", err)
				return 1
			}
		}
	}
	if *only != "" {
		var parts []string
		for _, name := range []string{"W1", "W2", "W3", "W4", "W7"} {
			if v, ok := totals[name]; ok {
				parts = append(parts, fmt.Sprintf("%s $%.2f/M", name, v))
			}
		}
		if want("W5") {
			parts = append(parts, fmt.Sprintf("W5 $%.2f/month", w5Month))
		}
		if want("idle") {
			parts = append(parts, fmt.Sprintf("idle $%.2f/month", idleMonth))
		}
		fmt.Printf("cost (only %s): %s\n", *only, strings.Join(parts, ", "))
		if pl := provisionedLine(provLine); pl != "" {
			fmt.Println(pl)
		}
		if limits != "" {
			fmt.Println(limits)
		}
		return 0
	}
	fmt.Printf("cost: W1 $%.2f/M, W2 $%.2f/M, W3 $%.2f/M, W4 $%.2f/M, W7 $%.2f/M, W5 $%.2f/month, idle $%.2f/month\n",
		totals["W1"], totals["W2"], totals["W3"], totals["W4"], totals["W7"], w5Month, idleMonth)
	fmt.Println(provisionedLine(provLine))
	fmt.Println(limits)
	return 0
}

// provisionedLine is "provisioned: W1 $A/M, W5 $B/month, idle $C/month",
// with the workloads that ran.
func provisionedLine(by map[string]string) string {
	var parts []string
	for _, w := range []string{"W1", "W5", "idle"} {
		if v, ok := by[w]; ok {
			parts = append(parts, v)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "provisioned: " + strings.Join(parts, ", ")
}

// printLag prints a sample's result lag on a line of its own.
func printLag(s *harness.CostSample) {
	if s.ResultLag != nil {
		fmt.Printf("  %s\n", s.ResultLag)
	}
}

// lagLine gathers each workload's result lag (its higher rate's) for the
// line "result visible: W1 p50 A ms p99 B ms (queued), …".
type lagLine []string

func (l *lagLine) add(name string, s *harness.CostSample) {
	if r := s.ResultLag; r != nil && r.Sampled > 0 {
		part := fmt.Sprintf("%s p50 %.0f ms p99 %.0f ms", name, r.Visible.P50, r.Visible.P99)
		var notes []string
		if p := r.Path(); p != "" {
			notes = append(notes, p)
		}
		if r.Missed > 0 {
			notes = append(notes, fmt.Sprintf("%d of %d not visible in %s", r.Missed, r.Sampled, r.Deadline))
		}
		if len(notes) > 0 {
			part += " (" + strings.Join(notes, ", ") + ")"
		}
		*l = append(*l, part)
	}
}

func (l lagLine) String() string {
	if len(l) == 0 {
		return ""
	}
	return "result visible: " + strings.Join(l, ", ")
}

// w5Second is the second of the minute W5's job i fires at: random, but
// the same in every run (a fixed seed), so runs compare.
func w5Second(i int) int {
	return int(rand.New(rand.NewPCG(uint64(i), 0x5eed)).IntN(60))
}

// sampleNotes adds the conditional writes that lost and the execution
// environments the functions had, to a measured line.
func sampleNotes(s *harness.CostSample) string {
	lost := 0
	var byOp []string
	for fn, ops := range s.Usage.Ops {
		for op, st := range ops {
			lost += st.Lost
			if st.Lost > 0 {
				byOp = append(byOp, fmt.Sprintf("%s %s %d", fn, strings.TrimPrefix(op, "dynamodb:"), st.Lost))
			}
		}
	}
	slices.Sort(byOp)
	lostBy := ""
	if len(byOp) > 0 {
		lostBy = " (" + strings.Join(byOp, ", ") + ")"
	}
	// The ring messages acknowledged in the window: more than one per
	// shard and second means a bucket's second came in several messages.
	acked := s.Usage.Ops["esm:ring"]["sqs:DeleteMessageBatch"].Entries
	// The ring's cold starts in the window: each delays its first bucket
	// by the function's Init when the run measured it (not -no-init), so
	// the lateness beside them includes them.
	out := fmt.Sprintf(", lost conditional writes %d%s, ring messages %d, environments ring %d dispatch %d callback %d, ring cold starts in the window %d",
		lost, lostBy, acked, s.Environments["ring"], s.Environments["dispatch"], s.Environments["callback"], s.Usage.Invokes["ring"].ColdStarts)
	if a := s.Advances; a.Planned > 0 {
		out += fmt.Sprintf(", scan advances %d in the window priced as the steady state's %.1f (cost per advance from %d planned before it)",
			a.InWindow, a.Steady, a.Planned)
	}
	if o := s.Outcome; o.Lost > 0 {
		out += fmt.Sprintf(" (lost fires by second %v, receipts without a log %d, trigger failures %d %q, logs read %d)",
			o.LostAt, o.Unmatched, o.TriggerFailures, o.FailedTriggerMsgs, s.Triggers)
	}
	return out
}

// printMonth prints a monthly figure's split by function (and service
// lines that are not a function's: http api).
func printMonth(label string, by map[string]float64) {
	fmt.Printf("  %s", label)
	for _, fn := range slices.Sorted(maps.Keys(by)) {
		if v := by[fn]; v > 0.005 {
			fmt.Printf("  %s $%.2f", fn, v)
		}
	}
	fmt.Println()
}

// alarmCount counts the CloudWatch alarms the SAM template declares and
// the metrics they read: CloudWatch bills an alarm per metric, so one
// over metric math (a table's read + write throttles) costs two.
func alarmCount(root string) (alarms, metrics int) {
	b, err := os.ReadFile(filepath.Join(root, "infra", "sam", "template.yaml"))
	if err != nil {
		return 0, 0
	}
	parts := strings.Split(string(b), "Type: AWS::CloudWatch::Alarm")
	for _, part := range parts[1:] {
		// The alarm's body runs to the next resource (a two-space indent).
		n := 0
		for _, l := range strings.Split(part, "\n")[1:] {
			if strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "   ") {
				break
			}
			n += strings.Count(l, "MetricName:")
		}
		alarms++
		metrics += max(1, n)
	}
	return alarms, metrics
}

// buildBootstraps builds the functions' bootstraps for this host into a
// new temporary directory, which the caller removes.
func buildBootstraps(ctx context.Context, root string) (string, error) {
	dir, err := os.MkdirTemp("", "xjobcost-bootstraps-")
	if err != nil {
		return "", err
	}
	if err := awsstack.BuildBootstraps(ctx, root, dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// printMetrics prints the custom metrics each function wrote in the
// sample: each is billed for the month (CloudWatch bills a metric for
// every hour it receives a value).
func printMetrics(s *harness.CostSample) {
	fmt.Printf("  custom metrics:")
	if len(s.Usage.Metrics) == 0 {
		fmt.Printf(" none written")
	}
	for _, fn := range slices.Sorted(maps.Keys(s.Usage.Metrics)) {
		var names []string
		for _, k := range s.Usage.MetricSeries(fn) {
			name, _, _ := strings.Cut(strings.TrimPrefix(k, "xjob/"), " ")
			names = append(names, name)
		}
		if len(names) > 0 {
			fmt.Printf("  %s %d (%s)", fn, len(names), strings.Join(names, ", "))
		}
	}
	fmt.Println()
}

// printInvokes prints each function's invocations per minute, mean
// billed time (as measured) and mean CPU time per invocation — measured
// with the invocations on the real bootstraps, else from -cpu-file
// ("probe"), else none: where Lambda's share of a sparse workload comes
// from, and what the CPU share stretches.
func printInvokes(s *harness.CostSample, p awsstack.Prices) {
	fmt.Printf("  lambda:")
	for _, fn := range slices.Sorted(maps.Keys(s.Usage.Invokes)) {
		in := s.Usage.Invokes[fn]
		if in.Invocations == 0 {
			continue
		}
		cpu := "CPU not measured"
		if c, ok := in.CPUPerInvoke(); ok {
			cpu = fmt.Sprintf("CPU %.1f ms", ms(c))
		} else if c, ok := p.CPU[fn]; ok {
			cpu = fmt.Sprintf("CPU %.1f ms (probe)", ms(c))
		}
		fmt.Printf("  %s %.1f/min %.0f ms %s, %d cold starts", fn, float64(in.Invocations)*60/s.Seconds,
			float64(in.Billed.Milliseconds())/float64(in.Invocations), cpu, in.ColdStarts)
	}
	fmt.Println()
}

// printRequests prints each function's billed requests per trigger, by
// service and operation (DynamoDB, SQS, SNS, Lambda invocations): the
// trace of what one fire costs request by request, beside printUnits'
// units.
func printRequests(s *harness.CostSample) {
	if s.Triggers == 0 {
		return
	}
	fmt.Printf("  requests/trigger:")
	for _, fn := range slices.Sorted(maps.Keys(s.Usage.Ops)) {
		ops := s.Usage.Ops[fn]
		for _, op := range slices.Sorted(maps.Keys(ops)) {
			r := float64(ops[op].Requests) / float64(s.Triggers)
			if r < 0.005 {
				continue
			}
			fmt.Printf("  %s %s %.2f", fn, op, r)
		}
	}
	fmt.Println()
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

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cpuTable is each workload's mean CPU time an invocation per function,
// in ms: measured on the real bootstraps by a -bootstraps run (record)
// and written to -cpu-file, then read by an in-process run (prices),
// whose handlers share one process and cannot be told apart.
type cpuTable map[string]map[string]float64

// record keeps workload w's measured CPU an invocation per function.
func (t cpuTable) record(w string, s *harness.CostSample) {
	for fn, in := range s.Usage.Invokes {
		if c, ok := in.CPUPerInvoke(); ok {
			if t[w] == nil {
				t[w] = map[string]float64{}
			}
			t[w][fn] = ms(c)
		}
	}
}

// prices is p with workload w's CPU an invocation from the table.
func (t cpuTable) prices(p awsstack.Prices, w string) awsstack.Prices {
	if len(t[w]) == 0 {
		return p
	}
	p.CPU = map[string]time.Duration{}
	for fn, v := range t[w] {
		p.CPU[fn] = time.Duration(v * float64(time.Millisecond))
	}
	return p
}

func readCPU(path string) (cpuTable, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cpu file: %w", err)
	}
	t, err := parseCPU(b)
	if err != nil {
		return nil, fmt.Errorf("cpu file %s: %w", path, err)
	}
	return t, nil
}

// parseCPU decodes a -cpu-file: workload → function → ms, each a CPU
// time an invocation can have.
func parseCPU(b []byte) (cpuTable, error) {
	t := cpuTable{}
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	for w, fns := range t {
		for fn, v := range fns {
			if v < 0 || v > 15*60*1000 { // a negative time, or past Lambda's 15-minute limit
				return nil, fmt.Errorf("%s %s: %v ms an invocation is not a CPU time", w, fn, v)
			}
		}
	}
	return t, nil
}

func writeCPU(path string, t cpuTable) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return fmt.Errorf("cpu file: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("cpu file: %w", err)
	}
	return nil
}

// memoryLine is each function's memory for the header: "ring 256 MB,
// scan 256 MB, …".
func memoryLine(mem map[string]int) string {
	var parts []string
	for _, fn := range slices.Sorted(maps.Keys(mem)) {
		parts = append(parts, fmt.Sprintf("%s %d MB", fn, mem[fn]))
	}
	return strings.Join(parts, ", ")
}

// memorySizes are the sizes the memory table prices each function at.
var memorySizes = []int{128, 256, 512, 1024}

// priceShare prints what the CPU share adds to workload w's figure
// (total(p) with the model, against the model off), the ring's modeled
// start lateness, and each function's figure at memorySizes with the
// model: which size is cheapest, from the same measured invocations.
func priceShare(w, per string, p awsstack.Prices, total func(awsstack.Prices) float64, u awsstack.Usage, lead time.Duration) {
	off := p
	off.CPUShare = false
	on := p
	on.CPUShare = true
	a, b := total(on), total(off)
	// Per million figures are cents: three decimals.
	d := 2
	if per == "per million" {
		d = 3
	}
	fmt.Printf("  cpu share %s: $%.*f %s with it, $%.*f without (+$%.*f, %+.0f%%)", w, d, a, per, d, b, d, a-b, 100*(a-b)/max(b, 1e-12))
	ringCPU := p.CPUPerInvoke("ring", u.Invokes["ring"])
	if u.Invokes["ring"].Invocations > 0 {
		fmt.Printf("; ring CPU %.1f ms an invocation: its calls start %.0f ms later at %d MB (lead %d ms)", ms(ringCPU),
			ms(awsstack.CPUStretch(ringCPU, p.MemoryMBOf("ring"))), p.MemoryMBOf("ring"), lead.Milliseconds())
		fmt.Printf(" (its CPU is spread over its calls: the last starts that much later, the first less)")
	}
	fmt.Println()
	fmt.Printf("  memory %s (the workload's figure with one function at each size, the CPU share on):", w)
	for _, fn := range slices.Sorted(maps.Keys(u.Invokes)) {
		if u.Invokes[fn].Invocations == 0 {
			continue
		}
		var parts []string
		for _, mb := range memorySizes {
			q := on
			q.Memory = maps.Clone(on.Memory) // the others as deployed
			if q.Memory == nil {
				q.Memory = map[string]int{}
			}
			q.Memory[fn] = mb
			part := fmt.Sprintf("%d $%.*f", mb, d, total(q))
			if fn == "ring" {
				st := awsstack.CPUStretch(ringCPU, mb)
				part += fmt.Sprintf(" (start +%.0f ms", ms(st))
				if st > lead {
					part += ", past the lead"
				}
				part += ")"
			}
			parts = append(parts, part)
		}
		fmt.Printf("  %s: %s", fn, strings.Join(parts, ", "))
	}
	fmt.Println()
}

// parseMemoryFlag reads "fn=MB,fn=MB": each a function the template
// names and a size Lambda accepts (128 to 10,240 MB).
func parseMemoryFlag(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, part := range strings.Split(v, ",") {
		name, mb, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(mb)
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("%q is not fn=MB", part)
		case err != nil || n < 128 || n > 10240:
			return nil, fmt.Errorf("%q: memory must be whole MB from 128 to 10240", part)
		}
		out[name] = n
	}
	return out, nil
}
