package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/adapter/httptarget"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/cluster"
	"github.com/xjobdev/xjob/internal/scheduler/dispatch"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/internal/scheduler/ring"
	"github.com/xjobdev/xjob/internal/scheduler/route"
	"github.com/xjobdev/xjob/internal/scheduler/scan"
	"github.com/xjobdev/xjob/internal/scheduler/tally"
	"github.com/xjobdev/xjob/internal/scheduler/upkeep"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Visibility timeouts of the local queues. The ring holds a bucket while
// it waits (the scan's ring lead, 500 ms), while its tasks wait for a free
// dispatch worker (at most dispatch.DefaultSpillAfter, 1 s) and while they are dispatched
// (at most the executor client's 3 s + 3 s, plus a few store calls): 10 s
// covers that, and still brings back the bucket of a killed process
// quickly. A hand-off that takes longer (the ring far behind) keeps its
// bucket hidden (ring.ServeOptions.Visibility) rather than have it
// received and claimed again. A dispatch from the lane queue takes at
// most 3 s + 3 s.
const (
	ringVisibility     = 10 * time.Second
	dispatchVisibility = 30 * time.Second
	httpShutdownGrace  = 3 * time.Second
)

// localClaimAhead is how many fires of one instant and lane the ring
// claims (creates their trigger logs) while it waits for the instant: a
// burst of 10,000 jobs due in one second, whose bucket the ring holds
// from the scan's ring lead (500 ms) ahead. At the instant only the
// executor calls and their records remain. A process that dies in
// between fires nothing and loses nothing: restarted, it takes back its
// ring bucket and its claims (takeBackClaims) and fires them late, once
// (TestClaimedAheadCrashFiresLateOnce); a cluster node's claims are taken
// over by the others once they expire or it is seen gone, and it marks
// them as calling at the second, calling only what the mark kept, so as
// not to call what was taken over (dispatch.Config.Fence).
const localClaimAhead = 16384

// fenceOf is the dispatcher's Fence: a cluster node's store whose claims
// the other nodes release when they see this node leave (a node is seen
// leaving when its beats stop for one lease TTL, which a node that is
// only slow, not dead, survives). Such a node must mark each claim as
// calling before its call, and call only what the mark kept; nothing
// releases a single process's claims early, so xjob local trusts them.
func fenceOf(n node, db backend) driver.CallFence {
	if n.member == nil {
		return nil
	}
	if f, ok := db.(interface {
		driver.CallFence
		nodeClaims
	}); ok {
		return f
	}
	return nil
}

// services is everything Run wires, kept together for the demo and tests.
type services struct {
	db       backend
	admin    *admin.Service
	registry *registry.Service
	upkeep   *upkeep.Service
	callback *callback.Service
	metrics  *metric.Metrics
	reports  *tally.Batcher // the run report, read through it so pending counts are flushed first
	logger   *slog.Logger
	clock    clock.Clock // what every service runs on (Config.Clock)
	// chore says whether this process runs a periodic chore now: always
	// in local mode; in a cluster, the node holding its lease (chore.go).
	chore func(ctx context.Context, name string, every time.Duration) bool
	// cluster, on a server node, reports the live nodes and the shards
	// it holds, for /metrics.
	cluster func() (nodes, shardsHeld int)
}

// backend is what the services need of a database: the stores, the
// durable queues, and the queues' depths for /metrics. SQLite in local
// mode; PostgreSQL or MySQL in a cluster.
type backend interface {
	driver.Store
	driver.Queues
	QueueDepths(ctx context.Context) (map[string]int64, error)
}

// Run hosts every scheduling-center service on cfg.DB until ctx ends, then
// shuts down in pipeline order (see the package doc). It returns nil after a
// clean shutdown, or the error that stopped it.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	}
	st, err := openSite(&cfg, logger)
	if err != nil {
		return err
	}
	defer st.close()
	if st.ownerShared {
		logger.Warn("another xjob local runs on this file; scanning under a separate owner", "db", cfg.DB, "owner", st.owner)
	}
	if cfg.AccessToken == "" && !isLoopback(cfg.Listen) {
		return fmt.Errorf("local: --listen (XJOB_LISTEN) %s is not loopback and no executor access token is set (XJOB_ACCESS_TOKEN)", cfg.Listen)
	}
	if cfg.AccessToken != "" && WeakToken(cfg.AccessToken) {
		logger.Warn("WEAK EXECUTOR ACCESS TOKEN accepted (--allow-weak-access-token): anyone who guesses it can register "+
			"executors and report results; replace it with a long random token on the executors and here",
			"length", len(strings.TrimSpace(cfg.AccessToken)), "default_token", strings.TrimSpace(cfg.AccessToken) == "default_token")
	}
	logger.Info("executor addresses: loopback allowed (xjob local); link-local and cloud metadata addresses refused",
		"allowCIDRs", cfg.AllowCIDRs, "denyCIDRs", cfg.DenyCIDRs)

	if cfg.TrustedProxies != "" {
		logger.Info("client addresses: X-Forwarded-For believed from the trusted proxies only", "trustedProxies", cfg.TrustedProxies)
	}

	var clk clock.Clock = clock.Real{}
	if cfg.Clock != nil {
		clk = cfg.Clock
	}
	db, err := sqlitestore.Open(ctx, cfg.DB, sqlitestore.Options{Shards: cfg.Shards, Clock: clk, Logger: logger})
	if err != nil {
		return fmt.Errorf("local: open %s: %w", cfg.DB, err)
	}
	defer db.Close()
	if cfg.PprofListen != "" {
		stop, err := servePprof(cfg.PprofListen, logger)
		if err != nil {
			return fmt.Errorf("local: %w", err)
		}
		defer stop()
	}
	if !st.ownerShared {
		if err := takeBackClaims(ctx, db, logger); err != nil {
			return err
		}
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("local: --listen (XJOB_LISTEN) %s: %w", cfg.Listen, err)
	}
	baseURL := "http://" + ln.Addr().String()
	if cfg.wrapListener != nil {
		ln = cfg.wrapListener(ln)
	}
	return host(ctx, node{cfg: cfg, db: db, clk: clk, logger: logger, owner: st.owner, ln: ln, baseURL: baseURL,
		adminToken: st.adminToken,
		started: func(ctx context.Context, svc *services, adminPassword string) *demoExecutor {
			info := Info{URL: baseURL, AdminToken: st.adminToken, TokenFile: st.tokenFile, Owner: st.owner,
				AccessToken: cfg.AccessToken, AccessTokenFile: st.accessTokenFile, AdminPassword: adminPassword}
			return announce(ctx, cfg, svc, st, &info, logger)
		}})
}

// node is what host runs: one process's services over one backend.
type node struct {
	cfg        Config
	db         backend
	clk        clock.Clock
	logger     *slog.Logger
	owner      string // of the scan leases
	ln         net.Listener
	baseURL    string // the admin address given to executors
	adminToken string
	// member divides the shards in a cluster (xjob server); nil in local
	// mode, where one process scans every shard it can lease.
	member *cluster.Member
	// wrap, if set, wraps the HTTP handler (the server's /readyz and drain).
	wrap func(http.Handler, *services) http.Handler
	// started runs once everything serves; it may start a demo executor.
	started func(ctx context.Context, svc *services, adminPassword string) *demoExecutor
	// stopping, if set, is closed by the server's drain to stop the scan
	// before ctx ends.
	stopping <-chan struct{}
}

// host wires every service on n.db, serves HTTP on n.ln and runs the
// pipeline until ctx ends, then shuts down in pipeline order.
func host(ctx context.Context, n node) error {
	pipe := newStages(ctx)
	defer pipe.stopAll()
	svc, parts, err := wire(pipe.lanes.ctx, n)
	if err != nil {
		_ = n.ln.Close()
		return err
	}
	defer parts.exec.Close()
	defer parts.targets.Close()
	if n.member != nil {
		svc.cluster = func() (int, int) { return len(n.member.Live()), len(parts.scanner.Held()) }
	}
	srv, httpErr, adminPassword, err := serveHTTP(ctx, n, svc)
	if err != nil {
		return err
	}
	pipe.start(n.cfg, svc, parts, n.logger)
	if n.member != nil {
		pipe.maint.run(n.member.Run)
	}
	var demo *demoExecutor
	if n.started != nil {
		demo = n.started(ctx, svc, adminPassword)
	}

	var runErr error
	stopping := n.stopping
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-stopping:
			pipe.stopScan(svc, n.member, n.logger)
			stopping = nil
		case err := <-httpErr:
			runErr = fmt.Errorf("%s: http: %w", n.name(), err)
			done = true
		}
	}
	pipe.shutdown(n, parts, svc, demo, srv)
	return runErr
}

// name is the command, for messages.
func (n node) name() string {
	if n.cfg.Server {
		return "server"
	}
	return "local"
}

// takeBackClaims releases the queue messages a previous run held. Only
// the holder of the installation lock calls it: whoever consumed the
// queues before it is gone, so what it held (ring buckets, lane tasks) is
// taken back now rather than after the visibility timeouts.
func takeBackClaims(ctx context.Context, db *sqlitestore.DB, logger *slog.Logger) error {
	n, err := db.ReleaseClaims(ctx)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	if n > 0 {
		logger.Info("took back queue messages a previous run held", "messages", n)
	}
	return nil
}

// MaxHeaderBytes caps a request's headers (net/http adds 4 KiB of
// slack), which are read before any credential is checked. xjob's own
// cookie and headers use well under 1 KiB; the rest is room for what a
// browser sends a shared host name (localhost's cookies of every other
// local app) and what a reverse proxy adds. net/http's default is 1 MiB.
const MaxHeaderBytes = 32 << 10

// serveHTTP builds the console users' auth (creating the first user, whose
// password it returns, on a new file) and the one HTTP handler, and
// serves it on ln. httpErr yields a failure of the server and is closed
// when it stops. On error ln is closed.
func serveHTTP(ctx context.Context, n node, svc *services) (
	srv *http.Server, httpErr chan error, adminPassword string, err error) {
	cfg, adminToken, ln, logger := n.cfg, n.adminToken, n.ln, n.logger
	glue, err := gluePolicy(ctx, cfg, svc, logger)
	if err != nil {
		_ = ln.Close()
		return nil, nil, "", err
	}
	au, err := newAuth(svc, adminToken, cfg.SessionKey, glue)
	if err != nil {
		_ = ln.Close()
		return nil, nil, "", err
	}
	adminPassword, err = au.Bootstrap(ctx)
	if err != nil {
		_ = ln.Close()
		return nil, nil, "", fmt.Errorf("local: first console user: %w", err)
	}
	handler, _, err := newHandler(cfg, svc, adminToken, au)
	if err != nil {
		_ = ln.Close()
		return nil, nil, "", err
	}
	if n.wrap != nil {
		handler = n.wrap(handler, svc)
	}
	srv = &http.Server{
		Handler: handler,
		// Headers are read before any route can check a credential: they
		// get the same small allowance as an anonymous body.
		MaxHeaderBytes:    MaxHeaderBytes,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	httpErr = make(chan error, 1)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			httpErr <- err
		}
		close(httpErr)
	}()
	return srv, httpErr, adminPassword, nil
}

// announce starts the demo executor if asked (a failure is logged, not
// fatal), completes info with it, and tells the world Run is up: the log
// line, the banner on cfg.Stdout and cfg.Ready. It returns the demo
// executor, or nil.
func announce(ctx context.Context, cfg Config, svc *services, st *site, info *Info, logger *slog.Logger) *demoExecutor {
	var demo *demoExecutor
	if cfg.Demo {
		var err error
		demo, err = startDemo(ctx, cfg, svc, info.URL)
		if err != nil {
			logger.Error("demo", "err", err)
		} else {
			info.DemoExecutor, info.DemoJobs = demo.address, demo.jobIDs
		}
	}
	logger.Info("xjob local started", "url", info.URL, "db", cfg.DB, "shards", cfg.Shards, "owner", st.owner,
		"fastWorkers", cfg.FastWorkers, "slowWorkers", cfg.SlowWorkers, "demo", cfg.Demo)
	if cfg.Stdout != nil {
		printBanner(cfg.Stdout, cfg, *info, st.tokenGenerated, st.accessTokenGenerated)
	}
	if cfg.Ready != nil {
		cfg.Ready(*info)
	}
	return demo
}

// parts are the running pieces Run starts and stops.
type parts struct {
	exec       *execclient.Client
	targets    *httptarget.Executor // HTTP jobs' built-in executor
	scanner    *scan.Scanner
	ring       *ring.Ring
	dispatcher *dispatch.Dispatcher
	ringGate   *gate[fire.RingBucket]
	fast, slow *gate[fire.DispatchTask]
	reports    *tally.Batcher
}

// wire builds every service on db. laneCtx is the context dispatches run
// on, those the ring hands over directly included.
func wire(laneCtx context.Context, n node) (*services, *parts, error) {
	cfg, db, clk, logger, owner, baseURL := n.cfg, n.db, n.clk, n.logger, n.owner, n.baseURL
	metrics := &metric.Metrics{PerJob: cfg.MetricsPerJob}
	// One keep-alive connection per concurrent dispatch: both lanes'
	// workers may call the same executor at once (a burst of one app's
	// jobs), and a pool smaller than that closes and re-dials the excess
	// on every burst.
	policy := cfg.egressPolicy()
	exec, err := execclient.New(execclient.Options{AccessToken: cfg.AccessToken,
		MaxIdleConnsPerHost: cfg.FastWorkers + cfg.SlowWorkers, Egress: &policy, ReadTimeout: cfg.executorReadTimeout,
		Direct: true})
	if err != nil {
		return nil, nil, fmt.Errorf("local: executor client: %w", err)
	}
	fail := func(err error) (*services, *parts, error) {
		exec.Close()
		return nil, nil, err
	}
	var alarmer driver.Alarmer = alarm.Log{Logger: logger}
	if cfg.AlarmWebhook != "" {
		hook, err := alarm.NewWebhook(alarm.WebhookConfig{URL: cfg.AlarmWebhook, Secret: cfg.AlarmWebhookSecret, Clock: clk})
		if err != nil {
			return fail(fmt.Errorf("local: --alarm-webhook (XJOB_ALARM_WEBHOOK): %w", err))
		}
		alarmer = alarm.Multi{alarmer, hook}
	}
	// Dispatch and callback count every trigger and result in the run
	// report; the batcher folds those counts into one write per day and
	// second instead of one per trigger.
	reports, err := tally.New(db, tally.Options{Clock: clk, Logger: logger})
	if err != nil {
		return fail(fmt.Errorf("%s: report: %w", n.name(), err))
	}
	counted := reports.Store(db)
	cb, err := callback.New(callback.Config{Store: counted, Queues: db, Alarmer: alarmer, Clock: clk, Logger: logger, Metrics: metrics,
		Retry: callback.RetryPolicy{Delay: cfg.RetryDelay, Backoff: cfg.RetryBackoff}})
	if err != nil {
		return fail(fmt.Errorf("local: callback: %w", err))
	}
	reg, err := registry.New(registry.Config{Store: db, Clock: clk, Logger: logger,
		CheckAddress: func(ctx context.Context, address string) error {
			return policy.Check(ctx, net.DefaultResolver, address)
		}})
	if err != nil {
		return fail(fmt.Errorf("local: registry: %w", err))
	}
	keep, err := upkeep.New(upkeep.Config{Store: db, Liveness: reg, Completer: cb, Clock: clk, Logger: logger, Metrics: metrics,
		RetentionDays: cfg.LogRetentionDays})
	if err != nil {
		return fail(fmt.Errorf("local: upkeep: %w", err))
	}
	// The admin pushes the fires of a job it creates, starts or edits within
	// the scan's horizon, so it shares the scanner's configuration.
	// Advance 2×PreRead: a due job's fires are pushed up to 10 s ahead, so
	// an every-second job is read and advanced once per ~6 ticks, not on
	// every tick (the scan's JobsDue + JobAdvanceMany were a fifth of the
	// CPU of 10,000 every-second jobs).
	// PushWithin 2 s: the scan ticks every second, so the admin need only
	// push the fires of a new or edited job that are due before that tick
	// can plan them.
	scanCfg := scan.Tunables{Shards: cfg.Shards, PreRead: admin.DefaultPreRead, Advance: 2 * admin.DefaultPreRead,
		PushWithin: 2 * time.Second}
	targets, targetCfg, err := newTargets(n, policy, cb)
	if err != nil {
		return fail(err)
	}
	executors := httptarget.Executors{Remote: exec, Local: targets}
	adm, err := admin.New(admin.Config{Store: counted, Queues: db, Executors: executors, Finisher: cb, Clock: clk, Logger: logger,
		Scan: scanCfg, AnyTriggerAddress: cfg.AnyTriggerAddress,
		StartDeclaredJobs: cfg.StartDeclaredJobs, Targets: targetCfg})
	if err != nil {
		return fail(fmt.Errorf("local: admin: %w", err))
	}
	router := route.New(route.Options{Clock: clk, Prober: executors})
	// A cluster node rechecks an occurrence another node holds every
	// second: when that node dies, its claims are released as soon as
	// the others see it gone, and its fires should go out then (the
	// claims it had marked as calling last until their ClaimUntil: it
	// may have called them).
	var inFlightRetry time.Duration
	if n.member != nil {
		inFlightRetry = time.Second
	}
	disp, err := dispatch.New(dispatch.Config{
		Store: counted, Executors: executors, Targets: targets, Router: router, Addresses: reg, Completer: cb,
		Clock: clk, Logger: logger, Metrics: metrics, InFlightRetry: inFlightRetry, Fence: fenceOf(n, db),
		AdminAddress: baseURL, AnyTriggerAddress: cfg.AnyTriggerAddress,
	})
	if err != nil {
		return fail(fmt.Errorf("local: dispatch: %w", err))
	}
	p := &parts{
		exec:       exec,
		targets:    targets,
		dispatcher: disp,
		ringGate:   newGate(db.Ring()),
		fast:       newGate(db.Dispatch(fire.LaneFast)),
		slow:       newGate(db.Dispatch(fire.LaneSlow)),
		reports:    reports,
	}
	// The ring dispatches straight on the lanes' worker pools; the lane
	// queues take what must wait (retries) and what comes from elsewhere
	// (child jobs, manual triggers).
	// Each hand-off's first localClaimAhead logs are claimed when the ring
	// prepares it, ahead of its second, so that at the second only the
	// executor calls and their records remain.
	sink, err := dispatch.NewLaneSink(disp, dispatch.LaneSinkOptions{Base: laneCtx, Queues: db, Logger: logger,
		Calls:      map[fire.Lane]int{fire.LaneFast: cfg.FastWorkers, fire.LaneSlow: cfg.SlowWorkers},
		ClaimAhead: localClaimAhead})
	if err != nil {
		return fail(fmt.Errorf("local: lane sink: %w", err))
	}
	p.ring, err = ring.New(ring.Config{Jobs: db, Queues: ringQueues{Queues: db, ring: p.ringGate}, Sink: sink, Clock: clk, Logger: logger,
		MisfireThreshold: scanCfg.MisfireThreshold, Metrics: metrics, Leases: db})
	if err != nil {
		return fail(fmt.Errorf("local: ring: %w", err))
	}
	var owns func(int) bool
	if n.member != nil {
		owns = n.member.Owns
		scanCfg.LeaseTTL = cfg.LeaseTTL
	}
	p.scanner, err = scan.New(scan.Config{
		Tunables: scanCfg, Jobs: db, Leases: db, Queues: db, Clock: clk, Logger: logger, Owner: owner, Metrics: metrics, Owns: owns,
	})
	if err != nil {
		return fail(fmt.Errorf("local: scan: %w", err))
	}
	svc := &services{db: db, admin: adm, registry: reg, upkeep: keep, callback: cb, metrics: metrics, reports: reports, logger: logger,
		clock: clk, chore: func(context.Context, string, time.Duration) bool { return true }}
	if n.member != nil {
		svc.chore = choreLease(db, clk, owner, logger)
	}
	return svc, p, nil
}
