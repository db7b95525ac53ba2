package harness

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/cluster"
	"github.com/xjobdev/xjob/pkg/adminclient"
)

// Cluster scenarios (ClusterSpec.Scenarios).
const (
	ClusterSteady    = "steady"
	ClusterScaling   = "scaling"
	ClusterFailover  = "failover"
	ClusterDBRestart = "dbrestart"
	ClusterRolling   = "rolling"
)

// ClusterScenarios is every cluster scenario, in the order they run.
var ClusterScenarios = []string{ClusterSteady, ClusterScaling, ClusterFailover, ClusterDBRestart, ClusterRolling}

// ClusterSpec is one database's cluster bench (`make bench-cluster`):
// `xjob server` nodes built from this tree on a private database server,
// the bench executor, and the scenarios of ClusterScenarios, each on a
// fresh database of that server.
type ClusterSpec struct {
	Nodes    int           // nodes of the cluster (3)
	LeaseTTL time.Duration // the nodes' --lease-ttl (0: xjob's default, 5 s)
	// SteadyJobs is the steady ladder: every-second jobs added step by
	// step to one cluster, a window measured at each, until a step keeps
	// fewer than InTimeGoal % of its fires within a second. R is the
	// last step that did.
	SteadyJobs   []int
	SteadyWindow time.Duration
	// FaultJobs is the workload of failover, database restart and rolling
	// restart.
	FaultJobs int
	// Failover: a random node SIGKILLed every KillEvery for FailoverFor,
	// started again KillDown later (longer than the lease TTL, so the
	// others take its shards over first).
	FailoverFor, KillEvery, KillDown time.Duration
	// DBDown is how long the database server stays stopped.
	DBDown time.Duration
	// ScaleJobs every-second jobs on one node, then on Nodes, for
	// ScaleWindow each: CPU per trigger.
	ScaleJobs   int
	ScaleWindow time.Duration
	Scenarios   []string
	// Profile takes a CPU profile of the first node over each steady
	// step's window (through its --pprof-listen).
	Profile bool
}

// InTimeGoal is the share of a steady window's fires (in %) that must
// reach the executor within InTimeMs of their scheduled second.
const (
	InTimeGoal = 99.9
	InTimeMs   = 1000
)

// ClusterFigures are what a cluster run adds to a Result.
type ClusterFigures struct {
	DB    string `json:"db"`
	Nodes int    `json:"nodes"`
	// InTimePct is the share of the window's expected fires whose first
	// receipt came within InTimeMs of the scheduled second.
	InTimePct float64 `json:"inTimePct"`
	// DBCPUSeconds is the database server's CPU over the window (its
	// processes; 0 when it restarted in the window), DBCPUPerTriggerUs
	// that over the fires received in the window.
	DBCPUSeconds      float64 `json:"dbCpuSeconds,omitempty"`
	DBCPUPerTriggerUs float64 `json:"dbCpuPerTriggerUs,omitempty"`
	// Failover: each kill, and the max lateness of the received fires of
	// the shards the killed node owned, scheduled while it was down
	// (from 1 s before the kill to 1 s after it was back).
	Kills          []Kill  `json:"kills,omitempty"`
	FailoverMaxMs  float64 `json:"failoverMaxMs,omitempty"`
	FailoverFires  int     `json:"failoverFires,omitempty"`
	FailoverMissed int     `json:"failoverMissed,omitempty"` // those fires never received (misfired or lost)
	FailoverWorst  string  `json:"failoverWorst,omitempty"`  // the fire FailoverMaxMs comes from
	// Database restart: the outage, and how long after the database was
	// back the executor received its first fire.
	DBOutage *Interval `json:"dbOutage,omitempty"`
	ResumeMs float64   `json:"resumeMs,omitempty"`
	// Rolling restart: each node's SIGTERM → ready again.
	Restarts []Kill `json:"restarts,omitempty"`
	// At the window's end: the sessions open on the database (every
	// node's pool), and the largest node's resident set.
	DBConnections int     `json:"dbConnections"`
	NodeRSSMB     float64 `json:"nodeRssMB"`
}

// Kill is one node taken down and brought back.
type Kill struct {
	Node   string `json:"node"`
	Down   int64  `json:"down"`   // Unix ms of the signal
	Back   int64  `json:"back"`   // Unix ms it answered /readyz again
	Shards []int  `json:"shards"` // the shards it owned when it went down
}

// ClusterReport is one database's run: every window measured, and the
// figures of its summary line.
type ClusterReport struct {
	DB      string
	Nodes   int
	Results []*Result
	// Steady is the ladder step R comes from (nil without the steady
	// scenario); SteadyMet says whether it met InTimeGoal.
	Steady    *Result
	SteadyMet bool
	// ScaleCPU1, ScaleCPU3: xjob CPU µs per trigger on 1 node and on
	// Nodes, same workload, same run.
	ScaleCPU1, ScaleCPU3 float64
	Failover             *Result
	Errors               []string
}

// Lost, Dup and Misfired sum every window of the run.
func (r *ClusterReport) Lost() (n int) {
	for _, x := range r.Results {
		n += x.Lost
	}
	return n
}

// Dup sums the duplicates of every window.
func (r *ClusterReport) Dup() (n int) {
	for _, x := range r.Results {
		n += x.Duplicates
	}
	return n
}

// Misfired sums the fires passed over by a misfire rule in every window.
func (r *ClusterReport) Misfired() (n int) {
	for _, x := range r.Results {
		n += x.Misfired
	}
	return n
}

// Line is the run's summary line, the format `make bench-cluster` ends
// with (one per database).
func (r *ClusterReport) Line() string {
	var rate, secs, inTime, p99, cpu float64
	if s := r.Steady; s != nil {
		rate, secs, p99, cpu = s.Rate, s.WindowSeconds, s.LatenessP99, s.CPUPerTriggerUs
		if s.Cluster != nil {
			inTime = s.Cluster.InTimePct
		}
	}
	var f float64
	if r.Failover != nil && r.Failover.Cluster != nil {
		f = r.Failover.Cluster.FailoverMaxMs
	}
	return fmt.Sprintf("cluster: %s %d nodes, %.0f triggers/s for %.0f s, in time %s%%, p99 %.0f ms, lost %d, dup %d, failover max %.0f ms, us/trigger %.0f",
		r.DB, r.Nodes, rate, secs, pct(inTime), p99, r.Lost(), r.Dup(), f, cpu)
}

// pct prints a share with as many decimals as tell it from 100.
func pct(v float64) string {
	switch {
	case v >= 100:
		return "100"
	case v >= 99.9:
		return fmt.Sprintf("%.2f", math.Floor(v*100)/100)
	}
	return fmt.Sprintf("%.1f", math.Floor(v*10)/10)
}

// RunCluster runs spec's scenarios on a private server of db (DBPostgres
// or DBMariaDB), stopped and removed at the end. A scenario that fails is
// recorded in the report's Errors and the next one runs.
func RunCluster(ctx context.Context, env *Env, db string, spec ClusterSpec) (*ClusterReport, error) {
	rep := &ClusterReport{DB: db, Nodes: spec.Nodes}
	t := time.Now()
	srv, err := StartClusterDB(db)
	if err != nil {
		return rep, err
	}
	defer srv.Close()
	env.logf("cluster %s: server up in %s", db, time.Since(t).Round(time.Millisecond))
	c := &clusterBench{env: env, db: srv, spec: spec}
	fail := func(what string, err error) {
		env.logf("cluster %s: %s: %v", db, what, err)
		rep.Errors = append(rep.Errors, what+": "+err.Error())
	}
	for _, sc := range spec.Scenarios {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		switch sc {
		case ClusterSteady:
			rs, best, met, err := c.steady(ctx)
			rep.Results = append(rep.Results, rs...)
			rep.Steady, rep.SteadyMet = best, met
			if err != nil {
				fail("steady", err)
			}
		case ClusterScaling:
			for _, n := range []int{1, spec.Nodes} {
				r, err := c.scaling(ctx, n)
				if err != nil {
					fail(fmt.Sprintf("scaling on %d nodes", n), err)
					continue
				}
				rep.Results = append(rep.Results, r)
				if n == 1 {
					rep.ScaleCPU1 = r.CPUPerTriggerUs
				} else {
					rep.ScaleCPU3 = r.CPUPerTriggerUs
				}
			}
		case ClusterFailover:
			r, err := c.failover(ctx)
			if err != nil {
				fail("failover", err)
				continue
			}
			rep.Results, rep.Failover = append(rep.Results, r), r
		case ClusterDBRestart:
			r, err := c.dbRestart(ctx)
			if err != nil {
				fail("database restart", err)
				continue
			}
			rep.Results = append(rep.Results, r)
		case ClusterRolling:
			r, err := c.rolling(ctx)
			if err != nil {
				fail("rolling restart", err)
				continue
			}
			rep.Results = append(rep.Results, r)
		default:
			return rep, fmt.Errorf("cluster scenario %q: want one of %v", sc, ClusterScenarios)
		}
	}
	return rep, nil
}

// clusterBench runs the scenarios of one database server.
type clusterBench struct {
	env  *Env
	db   *ClusterDB
	spec ClusterSpec
}

// clusterRun is one scenario's cluster: a fresh database, its nodes, the
// executor and the workload's group.
type clusterRun struct {
	b     *clusterBench
	name  string
	dir   string
	url   string
	ids   []string
	nodes []*Xjob
	exe   *Executor
	api   *adminclient.Client
	group int64
	jobs  []int64
}

const benchAdminToken = "bench-admin-token"

// start creates the database and starts n nodes (the first alone: it
// applies the schema; the others together) and the executor.
func (b *clusterBench) start(ctx context.Context, name string, n int) (*clusterRun, error) {
	dir, err := os.MkdirTemp(b.env.Work, b.db.Kind+"-"+name+"-")
	if err != nil {
		return nil, err
	}
	c := &clusterRun{b: b, name: name, dir: dir}
	if c.url, err = b.db.NewDatabase(ctx); err != nil {
		return nil, err
	}
	if c.exe, err = StartExecutor(); err != nil {
		return nil, err
	}
	for i := range n {
		addr, err := FreeAddr()
		if err != nil {
			c.close()
			return nil, err
		}
		pp, err := FreeAddr()
		if err != nil {
			c.close()
			return nil, err
		}
		id := fmt.Sprintf("node-%d", i+1)
		c.ids = append(c.ids, id)
		c.nodes = append(c.nodes, NewXjob(XjobSpec{Bin: b.env.Bin, DB: c.url, Listen: addr, Token: benchAdminToken,
			Shards: b.env.Shards, LogPath: filepath.Join(dir, id+".log"), Pprof: pp, NodeID: id, LeaseTTL: b.spec.LeaseTTL}))
	}
	if err := c.nodes[0].Start(ctx, time.Minute); err != nil {
		err = fmt.Errorf("%s: start %s: %w\n%s", name, c.ids[0], err, tailOf(filepath.Join(dir, c.ids[0]+".log")))
		c.close()
		return nil, err
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 1; i < n; i++ {
		wg.Go(func() {
			if err := c.nodes[i].Start(ctx, time.Minute); err != nil {
				errs[i] = fmt.Errorf("%s: start %s: %w\n%s", name, c.ids[i], err, tailOf(filepath.Join(dir, c.ids[i]+".log")))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.close()
		return nil, err
	}
	urls := make([]string, n)
	for i, x := range c.nodes {
		urls[i] = x.URL()
	}
	c.exe.SetAdmins(urls...)
	if c.api, err = adminclient.New(urls[0], benchAdminToken); err != nil {
		c.close()
		return nil, err
	}
	grp, err := c.api.GroupCreate(ctx, xjob.Group{AppName: "xjob-bench", Title: "bench", AddressType: xjob.AddressManual,
		AddressList: []string{c.exe.Address()}})
	if err != nil {
		c.close()
		return nil, fmt.Errorf("%s: create group: %w", name, err)
	}
	c.group = grp.ID
	return c, nil
}

// addJobs creates n more every-second jobs, stopped, then starts them
// together (see createJobsOn).
func (c *clusterRun) addJobs(ctx context.Context, n int) error {
	t := time.Now()
	ids, err := createStoppedIn(ctx, c.api, benchAdminToken, c.group, "", n, func(int) string { return "* * * * * ?" })
	if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	if err := startJobs(ctx, c.api, benchAdminToken, ids); err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	c.jobs = append(c.jobs, ids...)
	c.b.env.logf("%s %s: %d jobs created and started in %s (%d in all)", c.b.db.Kind, c.name, n, time.Since(t).Round(time.Millisecond), len(c.jobs))
	return nil
}

// close stops the nodes and the executor and removes the directory.
func (c *clusterRun) close() {
	stopAll(c.nodes)
	if c.exe != nil {
		c.exe.Close()
	}
	cleanup(c.b.env, c.dir)
}

// fault runs during a window, from its first second to its end.
type fault func(ctx context.Context, res *Result, from, to time.Time) error

// measure measures one window of length of the run's jobs, with an
// optional fault during it, and analyses it as `make bench` does:
// receipts joined to the stored trigger logs, the nodes' passed-over
// lines, the queue's pending pairs. minSettle is the least wait for the
// window's late fires after it ends; profile takes a CPU profile of the
// first node over the window.
func (c *clusterRun) measure(ctx context.Context, name string, length, minSettle time.Duration, profile bool, during fault) (*Result, error) {
	env := c.b.env
	res := env.newResult(name, len(c.jobs), len(c.jobs))
	res.Cluster = &ClusterFigures{DB: c.b.db.Kind, Nodes: len(c.nodes)}
	from := time.Now().Add(warmup).Truncate(time.Second).Add(time.Second)
	to := from.Add(length)
	win := Interval{From: from.UnixMilli(), To: to.UnixMilli()}
	counter, err := c.b.db.newLogCount(ctx, c.url, win)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer counter.Close()
	env.logf("%s %s: %d jobs on %d nodes, measuring %s from %s", c.b.db.Kind, name, len(c.jobs), len(c.nodes), length, from.Format("15:04:05"))
	if err := sleepUntil(ctx, from); err != nil {
		return nil, err
	}
	cpu0, db0, h0 := cpuOf(c.nodes), c.b.db.CPU(), harnessCPU()
	m0, _ := metricsOf(ctx, c.nodes)
	profErr := make(chan error, 1)
	if profile {
		res.Profile = filepath.Join(env.Results, name+"-"+env.Stamp+".cpu.pprof")
		go func() { profErr <- c.nodes[0].Profile(ctx, length, res.Profile) }()
	}
	if during != nil {
		if err := during(ctx, res, from, to); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := sleepUntil(ctx, to); err != nil {
		return nil, err
	}
	cpu1, db1, h1 := cpuOf(c.nodes), c.b.db.CPU(), harnessCPU()
	res.scrape(ctx, c.nodes, m0)
	for _, x := range c.nodes {
		res.Cluster.NodeRSSMB = max(res.Cluster.NodeRSSMB, x.RSSMB())
	}
	if n, err := c.b.db.connections(ctx, c.url); err != nil {
		res.Notes = append(res.Notes, err.Error())
	} else {
		res.Cluster.DBConnections = n
	}
	settled, err := settleWindow(ctx, counter, len(c.jobs)*int(length/time.Second), max(minSettle, 5*time.Second), settleLimit)
	if err != nil {
		return nil, err
	}
	res.SettleSeconds = math.Round(settled.Seconds()*10) / 10
	if profile {
		if err := <-profErr; err != nil {
			res.Notes = append(res.Notes, "cpu profile: "+err.Error())
		} else {
			res.ProfileTop = pprofTop(ctx, env.Bin, res.Profile)
		}
	}

	exp := Expectation{Jobs: c.jobs, Window: win, Period: 1000, Grace: steadyGrace.Milliseconds(), Passed: map[int64][]Interval{}}
	logs, err := c.b.db.readLogs(ctx, c.url, win)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if exp.Pending, err = c.b.db.readPending(ctx, c.url, win); err != nil {
		env.logf("%s: %v", name, err)
	}
	var us []Usage
	for i, x := range c.nodes {
		path := filepath.Join(c.dir, c.ids[i]+".log")
		if err := ReadPassed(path, exp.Passed); err != nil {
			env.logf("%s: %v", name, err)
		}
		us = append(us, x.Usage())
	}
	receipts := c.exe.Receipts()
	res.Window = win
	res.Outcome = Analyze(exp, logs, receipts)
	res.Usage = merge(us...)
	res.CallbacksOK, res.CallbacksKO = c.exe.CallbackStats()
	res.setCPU(cpu1-cpu0, res.ReceivedInWindow)
	res.HarnessCPUSeconds = math.Round((h1-h0).Seconds()*100) / 100
	res.GraceSeconds = steadyGrace.Seconds()
	// A fire a misfire rule passed over (a fault's) is not a backlog.
	res.Sustained = res.FiredLate == 0 && res.Fired+res.Misfired == res.Expected
	first := firstReceipts(exp, logs, receipts)
	inTime := 0
	for k, at := range first {
		if at-k.t*1000 <= InTimeMs*1000 {
			inTime++
		}
	}
	if res.Expected > 0 {
		res.Cluster.InTimePct = 100 * float64(inTime) / float64(res.Expected)
	}
	if res.Cluster.DBOutage == nil && db1 >= db0 {
		res.Cluster.DBCPUSeconds = math.Round((db1-db0).Seconds()*100) / 100
		if res.ReceivedInWindow > 0 {
			res.Cluster.DBCPUPerTriggerUs = math.Round(float64((db1 - db0).Microseconds()) / float64(res.ReceivedInWindow))
		}
	}
	for _, k := range res.Cluster.Kills {
		c.failoverFigures(res, k, exp, first)
	}
	if o := res.Cluster.DBOutage; o != nil {
		resume := int64(math.MaxInt64)
		for _, r := range receipts {
			if r.At >= o.To*1000 {
				resume = min(resume, r.At)
			}
		}
		if resume != math.MaxInt64 {
			res.Cluster.ResumeMs = round1(float64(resume-o.To*1000) / 1000)
		}
	}
	return res, nil
}

// failoverFigures adds one kill to the failover figures: the lateness of
// the fires of the shards the node owned, scheduled from 1 s before it
// died to 1 s after it was back.
func (c *clusterRun) failoverFigures(res *Result, k Kill, exp Expectation, first map[pairKey]int64) {
	shards := c.b.env.Shards
	span := Interval{From: k.Down/1000*1000 - 1000, To: k.Back + 1000}
	f := res.Cluster
	for _, j := range exp.Jobs {
		if !slices.Contains(k.Shards, fire.ShardOf(j, shards)) {
			continue
		}
		for _, t := range exp.Fires() {
			if !span.contains(t) {
				continue
			}
			f.FailoverFires++
			at, ok := first[pairKey{j, t}]
			if !ok {
				f.FailoverMissed++
				continue
			}
			if late := round1(float64(at-t*1000) / 1000); late > f.FailoverMaxMs {
				f.FailoverMaxMs = late
				f.FailoverWorst = fmt.Sprintf("job %d (shard %d, node %s down %s–%s) scheduled %s, first received %.0f ms late",
					j, fire.ShardOf(j, shards), k.Node, time.UnixMilli(k.Down).UTC().Format("15:04:05.000"),
					time.UnixMilli(k.Back).UTC().Format("15:04:05.000"), time.UnixMilli(t).UTC().Format("15:04:05"), late)
			}
		}
	}
}

// firstReceipts maps each expected (job, fire time) pair that was received
// to its first receipt time (Unix µs), as Analyze matches them.
func firstReceipts(exp Expectation, logs []LogRow, receipts []Receipt) map[pairKey]int64 {
	jobs := make(map[int64]bool, len(exp.Jobs))
	for _, j := range exp.Jobs {
		jobs[j] = true
	}
	byID := make(map[int64]LogRow, len(logs))
	for _, l := range logs {
		byID[l.ID] = l
	}
	first := map[pairKey]int64{}
	for _, r := range receipts {
		l, ok := byID[r.LogID]
		if !ok || !jobs[l.JobID] || !exp.Window.contains(l.Scheduled) {
			continue
		}
		k := pairKey{l.JobID, l.Scheduled}
		if at, seen := first[k]; !seen || r.At < at {
			first[k] = r.At
		}
	}
	return first
}

// steady is the ladder: one cluster, jobs added step by step, a window
// at each; it stops after the first step below InTimeGoal (or not
// sustained). best is the last step that met the goal (else the first).
func (b *clusterBench) steady(ctx context.Context) (rs []*Result, best *Result, met bool, err error) {
	c, err := b.start(ctx, "steady", b.spec.Nodes)
	if err != nil {
		return nil, nil, false, err
	}
	defer c.close()
	for _, n := range b.spec.SteadyJobs {
		if more := n - len(c.jobs); more > 0 {
			if err := c.addJobs(ctx, more); err != nil {
				return rs, best, met, err
			}
		}
		r, err := c.measure(ctx, fmt.Sprintf("cluster-%s-steady-%d", b.db.Kind, n), b.spec.SteadyWindow, 0, b.spec.Profile, nil)
		if err != nil {
			return rs, best, met, err
		}
		rs = append(rs, r)
		ok := r.Cluster.InTimePct >= InTimeGoal && r.Sustained && r.Lost == 0 && r.Duplicates == 0
		b.env.logf("%s steady %d: %.0f/s, in time %s%%, p99 %.0f ms, lost %d, dup %d, misfired %d: %s", b.db.Kind, n, r.Rate,
			pct(r.Cluster.InTimePct), r.LatenessP99, r.Lost, r.Duplicates, r.Misfired, map[bool]string{true: "holds", false: "does not hold"}[ok])
		if !ok {
			r.Notes = append(r.Notes, fmt.Sprintf("the ladder stops here: %s%% in time (goal %.1f%%), sustained %v", pct(r.Cluster.InTimePct), InTimeGoal, r.Sustained))
			if best == nil {
				best = r
			}
			break
		}
		best, met = r, true
	}
	return rs, best, met, nil
}

// scaling measures CPU per trigger of the same workload on n nodes.
func (b *clusterBench) scaling(ctx context.Context, n int) (*Result, error) {
	c, err := b.start(ctx, fmt.Sprintf("scaling%d", n), n)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if err := c.addJobs(ctx, b.spec.ScaleJobs); err != nil {
		return nil, err
	}
	return c.measure(ctx, fmt.Sprintf("cluster-%s-scaling-%dnode", b.db.Kind, n), b.spec.ScaleWindow, 0, false, nil)
}

// failover SIGKILLs a random node every KillEvery for FailoverFor,
// starting it again KillDown later.
func (b *clusterBench) failover(ctx context.Context) (*Result, error) {
	c, err := b.start(ctx, "failover", b.spec.Nodes)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if err := c.addJobs(ctx, b.spec.FaultJobs); err != nil {
		return nil, err
	}
	// The first kill 5 s into the window, the last one's node back before
	// its end.
	length := 5*time.Second + b.spec.FailoverFor
	return c.measure(ctx, "cluster-"+b.db.Kind+"-failover", length, 35*time.Second, false, func(ctx context.Context, res *Result, from, to time.Time) error {
		for at := from.Add(5 * time.Second); at.Add(b.spec.KillDown).Before(to); at = at.Add(b.spec.KillEvery) {
			if err := sleepUntil(ctx, at); err != nil {
				return err
			}
			i := rand.IntN(len(c.nodes))
			owner := cluster.Assign(b.env.Shards, c.ids)
			k := Kill{Node: c.ids[i], Down: time.Now().UnixMilli()}
			for s, id := range owner {
				if id == c.ids[i] {
					k.Shards = append(k.Shards, s)
				}
			}
			c.nodes[i].Kill()
			if err := sleepUntil(ctx, time.Now().Add(b.spec.KillDown)); err != nil {
				return err
			}
			if err := c.nodes[i].Start(ctx, time.Minute); err != nil {
				return fmt.Errorf("restart %s: %w\n%s", c.ids[i], err, tailOf(filepath.Join(c.dir, c.ids[i]+".log")))
			}
			k.Back = time.Now().UnixMilli()
			res.Cluster.Kills = append(res.Cluster.Kills, k)
			res.Restarts++
			b.env.logf("%s failover: SIGKILL %s (shards %v), back after %s", b.db.Kind, k.Node, k.Shards, time.Duration(k.Back-k.Down)*time.Millisecond)
		}
		return nil
	})
}

// dbRestart stops the database server for DBDown, 15 s into the window.
func (b *clusterBench) dbRestart(ctx context.Context) (*Result, error) {
	c, err := b.start(ctx, "dbrestart", b.spec.Nodes)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if err := c.addJobs(ctx, b.spec.FaultJobs); err != nil {
		return nil, err
	}
	length := 15*time.Second + b.spec.DBDown + 20*time.Second
	return c.measure(ctx, "cluster-"+b.db.Kind+"-dbrestart", length, 10*time.Second, false, func(ctx context.Context, res *Result, from, to time.Time) error {
		if err := sleepUntil(ctx, from.Add(15*time.Second)); err != nil {
			return err
		}
		down := time.Now()
		if err := b.db.Stop(); err != nil {
			return fmt.Errorf("stop the database: %w", err)
		}
		stopped := time.Now()
		if err := sleepUntil(ctx, down.Add(b.spec.DBDown)); err != nil {
			return err
		}
		if err := b.db.Start(); err != nil {
			return fmt.Errorf("start the database again: %w", err)
		}
		back := time.Now()
		res.Cluster.DBOutage = &Interval{From: down.UnixMilli(), To: back.UnixMilli()}
		b.env.logf("%s dbrestart: database stopped in %s, down %s", b.db.Kind, stopped.Sub(down).Round(time.Millisecond), back.Sub(down).Round(time.Millisecond))
		return nil
	})
}

// rolling replaces every node in turn: SIGTERM, start again, wait until
// it is ready, then 5 s before the next.
func (b *clusterBench) rolling(ctx context.Context) (*Result, error) {
	c, err := b.start(ctx, "rolling", b.spec.Nodes)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if err := c.addJobs(ctx, b.spec.FaultJobs); err != nil {
		return nil, err
	}
	length := 5*time.Second + time.Duration(len(c.nodes))*12*time.Second
	return c.measure(ctx, "cluster-"+b.db.Kind+"-rolling", length, 10*time.Second, false, func(ctx context.Context, res *Result, from, to time.Time) error {
		if err := sleepUntil(ctx, from.Add(5*time.Second)); err != nil {
			return err
		}
		for i, x := range c.nodes {
			owner := cluster.Assign(b.env.Shards, c.ids)
			k := Kill{Node: c.ids[i], Down: time.Now().UnixMilli()}
			for s, id := range owner {
				if id == c.ids[i] {
					k.Shards = append(k.Shards, s)
				}
			}
			x.Stop()
			if err := x.Start(ctx, time.Minute); err != nil {
				return fmt.Errorf("restart %s: %w\n%s", c.ids[i], err, tailOf(filepath.Join(c.dir, c.ids[i]+".log")))
			}
			k.Back = time.Now().UnixMilli()
			res.Cluster.Restarts = append(res.Cluster.Restarts, k)
			res.Restarts++
			b.env.logf("%s rolling: %s replaced in %s", b.db.Kind, k.Node, time.Duration(k.Back-k.Down)*time.Millisecond)
			if i < len(c.nodes)-1 {
				if err := sleepUntil(ctx, time.Now().Add(5*time.Second)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// tailOf is the end of a node's log, for an error that names it (the
// run's directory is removed afterwards).
func tailOf(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
