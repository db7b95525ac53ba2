package metric

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/xjobdev/xjob/internal/fallback"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Gauges read state the counters cannot hold: they are called on every
// scrape, each with a short deadline. Nil functions are left out.
type Gauges struct {
	// LaneDepth returns the messages waiting on each dispatch lane queue
	// ("fast", "slow") and on the ring ("ring").
	LaneDepth func(ctx context.Context) (map[string]int64, error)
	// ExecutorsOnline returns the live executor addresses per app name.
	ExecutorsOnline func(ctx context.Context) (map[string]int, error)
	// RunsToday returns today's (UTC) runs by current result from the
	// durable daily report every process adds to: unlike the per-process
	// counters, the same figures whichever process (or Lambda instance)
	// serves the scrape. See RunsTodayFrom.
	RunsToday func(ctx context.Context) (RunCounts, error)
	// Cluster, set on an `xjob server` node, returns the live nodes this
	// node sees and the scan shards it holds leases on.
	Cluster func() (nodes, shardsHeld int)
	// Logger reports a gauge that failed (default slog.Default()).
	Logger *slog.Logger
}

var (
	descTriggers = prometheus.NewDesc("xjob_triggers_total",
		"Executor /run calls, by trigger type and result (success: the executor accepted the run).",
		[]string{"type", "result"}, nil)
	descResults = prometheus.NewDesc("xjob_results_total",
		"Run results recorded (executor callbacks, kills, lost runs), by result.", []string{"result"}, nil)
	descDuplicates = prometheus.NewDesc("xjob_occurrences_duplicate_total",
		"Occurrences dropped because they were already triggered (redeliveries, racing scanners).", nil, nil)
	descDropped = prometheus.NewDesc("xjob_occurrences_stale_total",
		"Occurrences dropped because their job was stopped, edited or deleted since they were planned.", nil, nil)
	descMisfired = prometheus.NewDesc("xjob_misfired_fires_total",
		"Scheduled fire times found more than the misfire threshold late, by the job's misfire strategy.",
		[]string{"strategy"}, nil)
	descCollapsed = prometheus.NewDesc("xjob_collapsed_fires_total",
		"Scheduled fire times late within the misfire threshold, folded into the one late fire before them.", nil, nil)
	descScanJobs = prometheus.NewDesc("xjob_scan_due_jobs_total", "Due jobs read by scan ticks.", nil, nil)
	// A cluster node's view: summed over the nodes, shards held should
	// equal the shard count; a sum below it for long means shards nobody
	// scans (deploy/prometheus/alerts.yml).
	descClusterNodes = prometheus.NewDesc("xjob_cluster_nodes",
		"Live nodes of the cluster as this node saw them at its last beat (xjob server only).", nil, nil)
	descShardsHeld = prometheus.NewDesc("xjob_cluster_shards_held",
		"Scan shards this node holds the lease of (xjob server only).", nil, nil)
	descLane = prometheus.NewDesc("xjob_queue_depth",
		"Messages waiting on a queue: the dispatch lanes (fast, slow) and the ring.", []string{"queue"}, nil)
	descExecutors = prometheus.NewDesc("xjob_executors_online",
		"Executor addresses with a live heartbeat, by app name (0 for an automatic group with none).", []string{"app"}, nil)
	descJobResults = prometheus.NewDesc("xjob_job_results_total",
		"Run results by job, for at most the configured number of jobs (the rest as job=\"other\"); only when per-job metrics are on.",
		[]string{"job", "result"}, nil)
	descLost = prometheus.NewDesc("xjob_runs_lost_total",
		"Runs marked failed because their executor went away before their result arrived (callback lost).", nil, nil)
	descRunsToday = prometheus.NewDesc("xjob_runs_today",
		"Runs triggered today (UTC) by current result (running, success, failure), from the daily report shared by every process.",
		[]string{"result"}, nil)
)

// RunCounts is one day's runs by current result.
type RunCounts struct {
	Running, Success, Failure int64
}

type collector struct {
	m *Metrics
	g Gauges
}

// metrics is c's Metrics; a nil one reads as zeros.
func (c collector) metrics() *Metrics {
	if c.m == nil {
		return &Metrics{}
	}
	return c.m
}

// Describe sends every descriptor.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTriggers, descResults, descDuplicates, descDropped,
		descMisfired, descCollapsed, descScanJobs, descLane, descExecutors, descRunsToday, descLost, descJobResults,
		descClusterNodes, descShardsHeld} {
		ch <- d
	}
	h := c.metrics().hists()
	for _, m := range []prometheus.Histogram{h.delay, h.scanTick, h.callback} {
		ch <- m.Desc()
	}
}

// Collect reads the counters and histograms, and the gauges.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	m := c.metrics()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for i := range len(TriggerTypes) + 1 {
		typ := "OTHER"
		if i < len(TriggerTypes) {
			typ = TriggerTypes[i]
		}
		counter(descTriggers, m.byType[i][1].Load(), typ, "success")
		counter(descTriggers, m.byType[i][0].Load(), typ, "failure")
	}
	counter(descResults, m.Successes.Load(), "success")
	counter(descResults, m.Failures.Load(), "failure")
	counter(descDuplicates, m.Duplicates.Load())
	counter(descDropped, m.Dropped.Load())
	counter(descMisfired, m.misfiredNothing.Load(), StrategyDoNothing)
	counter(descMisfired, m.misfiredOnce.Load(), StrategyFireOnceNow)
	counter(descCollapsed, m.collapsed.Load())
	counter(descLost, m.lost.Load())
	for job, n := range m.jobResults() {
		counter(descJobResults, n[1], job, "success")
		counter(descJobResults, n[0], job, "failure")
	}
	counter(descScanJobs, m.scanJobs.Load())
	h := m.hists()
	ch <- h.delay
	ch <- h.scanTick
	ch <- h.callback
	c.gauges(ch)
}

func (c collector) gauges(ch chan<- prometheus.Metric) {
	log := c.g.Logger
	log = fallback.Logger(log)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if c.g.LaneDepth != nil {
		depths, err := c.g.LaneDepth(ctx)
		if err != nil {
			log.WarnContext(ctx, "metrics: queue depth", "err", err)
		}
		for q, n := range depths {
			ch <- prometheus.MustNewConstMetric(descLane, prometheus.GaugeValue, float64(n), q)
		}
	}
	if c.g.ExecutorsOnline != nil {
		online, err := c.g.ExecutorsOnline(ctx)
		if err != nil {
			log.WarnContext(ctx, "metrics: executors online", "err", err)
		}
		for app, n := range online {
			ch <- prometheus.MustNewConstMetric(descExecutors, prometheus.GaugeValue, float64(n), app)
		}
	}
	if c.g.Cluster != nil {
		nodes, held := c.g.Cluster()
		ch <- prometheus.MustNewConstMetric(descClusterNodes, prometheus.GaugeValue, float64(nodes))
		ch <- prometheus.MustNewConstMetric(descShardsHeld, prometheus.GaugeValue, float64(held))
	}
	if c.g.RunsToday != nil {
		runs, err := c.g.RunsToday(ctx)
		if err != nil {
			log.WarnContext(ctx, "metrics: runs today", "err", err)
		} else {
			for _, r := range []struct {
				result string
				n      int64
			}{{"running", runs.Running}, {"success", runs.Success}, {"failure", runs.Failure}} {
				ch <- prometheus.MustNewConstMetric(descRunsToday, prometheus.GaugeValue, float64(r.n), r.result)
			}
		}
	}
}

// Handler serves m and g in the Prometheus text format, with the Go
// runtime's and the process's own metrics (process_start_time_seconds
// dates the counters' last reset).
func Handler(m *Metrics, g Gauges) http.Handler {
	reg := prometheus.NewRegistry()
	// The collectors package would do the same but imports database/sql,
	// which core packages must not depend on (arch_test.go).
	//lint:ignore SA1019 see above
	reg.MustRegister(collector{m: m, g: g}, prometheus.NewGoCollector(), //nolint:staticcheck // see above
		prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{})) //nolint:staticcheck // see above
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError,
		// Plain text: behind API Gateway a gzip body would have to travel
		// base64-encoded through the Lambda response; the gateway compresses.
		DisableCompression: true})
}
