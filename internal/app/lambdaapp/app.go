package lambdaapp

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awscfg "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/clock"
	"github.com/xjobdev/xjob/driver"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/adapter/snsalarm"
	"github.com/xjobdev/xjob/internal/adapter/sqsqueue"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/egress"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/dispatch"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/internal/scheduler/ring"
	"github.com/xjobdev/xjob/internal/scheduler/route"
	"github.com/xjobdev/xjob/internal/scheduler/scan"
	"github.com/xjobdev/xjob/internal/scheduler/tally"
	"github.com/xjobdev/xjob/internal/scheduler/upkeep"
	"github.com/xjobdev/xjob/internal/web/adminapi"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/internal/web/console"
)

// Deps are the clients a function is built on: SDK clients on AWS,
// emulator clients (possibly wrapped for request counting) in tests.
type Deps struct {
	DynamoDB dynamostore.API
	SQS      sqsqueue.API
	// SNS publishes alarms when Config.AlarmTopicARN is set; nil logs them only.
	SNS    snsalarm.SNSAPI
	Clock  clock.Clock
	Logger *slog.Logger
	// Owner names this execution environment in scan leases (default:
	// the Lambda log stream, or a random id).
	Owner string
	// ExecutorHTTP replaces the executor client's HTTP client (tests).
	ExecutorHTTP *http.Client
	// Scan overrides scan tunables (tests); Shards always comes from Config.
	Scan scan.Config
	// ClaimTTL overrides dispatch.Config.ClaimTTL (tests: a held claim
	// expires, and its task returns, within seconds).
	ClaimTTL time.Duration
	// RingRetry overrides ringRetryStep (tests: a failed bucket returns
	// within the test's patience).
	RingRetry time.Duration
}

// App is one function's wired services. It is built once per execution
// environment, outside the handler, and is safe for concurrent use.
type App struct {
	cfg        Config
	log        *slog.Logger
	clk        clock.Clock
	store      *dynamostore.DB
	queues     *sqsqueue.Queues
	exec       *execclient.Client
	scanner    *scan.Scanner
	ring       *ring.Ring
	dispatcher *dispatch.Dispatcher
	callback   *callback.Service
	registry   *registry.Service
	upkeep     *upkeep.Service
	admin      *admin.Service
	reports    *tally.Batcher // run-report counters, flushed before each handler returns
	ringRetry  time.Duration  // ringRetryStep, or Deps.RingRetry
	http       http.Handler
	lanes      map[string]xjob.Lane // SQS queue name → dispatch lane
}

// Init is what a main calls: it reads function name's configuration from
// the process environment, loads the AWS SDK configuration (region and
// credentials from the Lambda environment) and builds the App.
func Init(ctx context.Context, name string) (*App, error) {
	cfg, err := LoadConfig(name, os.Getenv)
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel})).With("function", name)
	awsConf, err := awscfg.LoadDefaultConfig(ctx, awscfg.WithHTTPClient(sdkHTTPClient()))
	if err != nil {
		return nil, fmt.Errorf("lambdaapp %s: aws config: %w", name, err)
	}
	d := Deps{
		DynamoDB: dynamodb.NewFromConfig(awsConf),
		SQS:      sqs.NewFromConfig(awsConf),
		Clock:    clock.Real{},
		Logger:   logger,
	}
	if cfg.AlarmTopicARN != "" {
		d.SNS = sns.NewFromConfig(awsConf)
	}
	return New(cfg, d)
}

// SDKConnsPerHost is how many idle connections the SDK clients of one
// execution environment keep per endpoint. The SDK's default is 10, but
// one invocation fans out further: the ring sends a bucket's lanes and
// fires concurrently, dispatch reads and writes up to 32 tasks' items at
// once, callback records 16 results at once. Connections past the idle
// pool are opened and closed per request (a TLS handshake each on AWS),
// which is the latency and the CPU this avoids.
const SDKConnsPerHost = 64

// sdkHTTPClient is the SDK's HTTP client with the pool sized for one
// environment's concurrency (SDKConnsPerHost), shared by the DynamoDB,
// SQS and SNS clients.
func sdkHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns, t.MaxIdleConnsPerHost = 3*SDKConnsPerHost, SDKConnsPerHost
	})
}

// dispatchConcurrency bounds the executor calls one dispatch invocation
// makes at once; the executor client's keep-alive pool is sized to match.
const dispatchConcurrency = 32

// The ring function dispatches its buckets' fast lane in process
// (dispatch.LaneSink). A hand-off (an instant's fast-lane fires, one
// dispatch batch) is cut into chunks of ringChunk tasks, ringChunks of them
// in flight at once, each one claim (LogCreateMany) and one record
// (LogTriggeredMany) for all its tasks: the write batches the packed log
// layout makes cheap, so a chunk holds a whole instant of a busy bucket
// (W1, 1,000 jobs every second over 4 shards, is ~250 fires a bucket).
// A prepared hand-off of at most ringClaimAhead tasks (a busy second of
// W1, all its buckets merged) is claimed when the ring receives it, about
// a second early, so that at the instant only the executor calls remain:
// on DynamoDB a claim is a read and a conditional put per page, tens of
// milliseconds that would otherwise sit between the clock and the
// executor. ringFastCalls executor calls run at once (xxl-job's fast
// trigger pool has 200 threads): the claimed-ahead tasks and the two
// chunks in flight are at most three waves of calls, each bounded by the
// executor client's connect + read timeouts (3 s + 3 s). That bound is
// what RingTimeout counts on.
const (
	ringChunk      = dispatch.DefaultSinkChunk // 256
	ringChunks     = 2
	ringClaimAhead = 4 * ringChunk
	ringFastCalls  = 512
)

// ringLead is how long before its second the scan makes a ring bucket
// visible. SQS delays are whole seconds, rounded up (sqsqueue.DelaySeconds),
// so a bucket becomes visible between ringLead − 1 s and ringLead before
// its second, depending on when the scan sent it; in a given deployment
// that phase is stable per scan grid, and a grid whose buckets become
// visible only milliseconds early has them prepared (reads, claims ahead)
// just after their instant. A lead of 1.1 s would keep every bucket at
// least 100 ms early, for a 20% longer mean wait of the ring function
// (which is most of its cost at low rates). The runs so far do not tell
// the two apart: W1's 99th percentile at 1,000/s was 50–221 ms over three
// runs with 1 s and 82 ms in one with 1.1 s; with 100 jobs every minute
// the ring function cost $13.66 and $25.37 a month in two runs with 1 s,
// $24.94 in one with 1.1 s (bench/results/cost-idle-*). It stays at 1 s.
const ringLead = time.Second

// RingTimeout is the ring function's timeout in the templates (infra
// checks them against it; the ring queue's visibility timeout is 6 × it,
// AWS's guidance for SQS event sources, checked too). An invocation holds
// its buckets while it
//
//	waits to their instants              ≤  2 s  (a bucket arrives ≤ 1 s early, the scan's RingLead, and spans its second)
//	starts the fast lane's chunks        ≤ 10 s  (dispatch.DefaultSpillBudget; the rest goes to the fast queue)
//	runs the last chunk it started       ≤ 30 s  (route probes, claim, ≤ 3 waves of /run calls of ≤ 6 s, record,
//	                                              completions: the dispatch function's own timeout)
//	queues what it could not finish      ≤  2 s  (one SendMessageBatch per 10 tasks)
//	flushes the run-report counters      ≤  2 s  (reportFlushTimeout)
//
// ≈ 46 s, so 50 s. A healthy bucket takes the wait plus milliseconds; the
// timeout only bounds the worst case (unreachable executors). Were it
// still exceeded, Lambda would end the invocation with the bucket
// unacknowledged: it comes back after the visibility timeout, the fires
// already triggered are dropped as repeats and claims left mid-dispatch
// are taken over once they expire, after the take-over's probe asks the
// executor whether the run got there: the cost is lateness, not a lost
// fire, and a run repeats only in the one case package dispatch documents
// (/run reached an executor that no longer knows the log id).
const RingTimeout = 50 * time.Second

// ringRetryStep spaces the returns of a bucket whose hand-off failed (a
// store or queue error): it becomes visible again after receives ×
// ringRetryStep, capped by the queue's visibility timeout (6 ×
// RingTimeout), rather than after the whole visibility timeout. 30 s,
// 60 s, 90 s, 120 s: a bucket reaches the dead-letter queue (5 receives)
// after about the 5 minutes it took before the ring dispatched in process.
const ringRetryStep = 30 * time.Second

// New wires every core service of the pipeline on DynamoDB and SQS, the
// same graph local mode builds on SQLite. Construction does no I/O, so
// building the services a function does not call costs nothing but memory.
func New(cfg Config, d Deps) (*App, error) {
	if d.DynamoDB == nil || d.SQS == nil {
		return nil, fmt.Errorf("lambdaapp %s: DynamoDB and SQS clients are required", cfg.Function)
	}
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Owner == "" {
		d.Owner = defaultOwner()
	}
	if cfg.Shards == 0 {
		cfg.Shards = 16
	}
	fail := func(what string, err error) (*App, error) {
		return nil, fmt.Errorf("lambdaapp %s: %s: %w", cfg.Function, what, err)
	}
	store, err := dynamostore.New(d.DynamoDB, dynamostore.Options{
		Tables: dynamostore.TablesWithPrefix(cfg.TablePrefix), Shards: cfg.Shards,
	})
	if err != nil {
		return fail("dynamodb store", err)
	}
	queues := sqsqueue.New(d.SQS, sqsqueue.URLs{
		Ring: cfg.RingQueueURL, DispatchFast: cfg.DispatchFastURL, DispatchSlow: cfg.DispatchSlowURL,
	}, d.Clock)
	// The pool keeps one connection per concurrent executor call of an
	// invocation, so a warm dispatch (or ring) function reuses them all.
	idle := dispatchConcurrency
	if cfg.Function == "ring" {
		idle = ringFastCalls
	}
	exec, err := execclient.New(execclient.Options{AccessToken: cfg.AccessToken, HTTPClient: d.ExecutorHTTP,
		MaxIdleConnsPerHost: idle})
	if err != nil {
		return fail("executor client", err)
	}
	var alarmer driver.Alarmer = alarm.Log{Logger: d.Logger}
	if cfg.AlarmTopicARN != "" && d.SNS != nil {
		alarmer = alarm.Multi{alarmer, snsalarm.SNS{API: d.SNS, TopicARN: cfg.AlarmTopicARN, Clock: d.Clock}}
	}
	metrics := &metric.Metrics{}
	a := &App{cfg: cfg, log: d.Logger, clk: d.Clock, store: store, queues: queues, exec: exec,
		lanes: map[string]xjob.Lane{}, ringRetry: cmp.Or(d.RingRetry, ringRetryStep)}
	for url, lane := range map[string]xjob.Lane{cfg.DispatchFastURL: xjob.LaneFast, cfg.DispatchSlowURL: xjob.LaneSlow} {
		if url != "" {
			a.lanes[queueName(url)] = lane
		}
	}
	// Dispatch and callback count every trigger and result; the batcher
	// folds an invocation's counts into one DynamoDB write per day, written
	// when the handler returns (flushReports).
	a.reports, err = tally.New(store, tally.Options{Clock: d.Clock, Logger: d.Logger})
	if err != nil {
		return fail("report", err)
	}
	counted := a.reports.Store(store)
	a.callback, err = callback.New(callback.Config{Store: counted, Queues: queues, Alarmer: alarmer,
		Clock: d.Clock, Logger: d.Logger, Metrics: metrics,
		Retry: callback.RetryPolicy{Delay: cfg.RetryDelay, Backoff: cfg.RetryBackoff}})
	if err != nil {
		return fail("callback", err)
	}
	// Registrations of link-local and metadata addresses are refused, as
	// the executor client refuses to dial them. (Loopback stays allowed
	// until the deployment can say where its executors live.)
	egressRule := egress.Policy{AllowLoopback: true}
	a.registry, err = registry.New(registry.Config{Store: store, Clock: d.Clock, Logger: d.Logger,
		CheckAddress: func(ctx context.Context, address string) error {
			return egressRule.Check(ctx, net.DefaultResolver, address)
		}})
	if err != nil {
		return fail("registry", err)
	}
	a.upkeep, err = upkeep.New(upkeep.Config{Store: store, Liveness: a.registry, Completer: a.callback, Clock: d.Clock, Logger: d.Logger})
	if err != nil {
		return fail("upkeep", err)
	}
	sc := d.Scan
	sc.Shards = cfg.Shards
	if sc.PreRead == 0 {
		sc.PreRead = ScanHorizon
	}
	if sc.Advance == 0 {
		sc.Advance = cmp.Or(cfg.ScanAdvance, DefaultScanAdvance)
	}
	if sc.TickBudget == 0 {
		sc.TickBudget = scanBudget
	}
	if sc.LeaseTTL == 0 {
		sc.LeaseTTL = scanLease
	}
	if sc.RingLead == 0 {
		sc.RingLead = ringLead
	}
	// The admin pushes the fires of a job it creates, starts or edits within
	// the scan's horizon, so it shares the scanner's configuration.
	a.admin, err = admin.New(admin.Config{Store: counted, Queues: queues, Executors: exec, Finisher: a.callback,
		Clock: d.Clock, Logger: d.Logger, Scan: sc, AnyTriggerAddress: cfg.AnyTriggerAddress,
		StartDeclaredJobs: cfg.StartDeclaredJobs})
	if err != nil {
		return fail("admin", err)
	}
	// One dispatcher for the dispatch function (lane queues, manual
	// triggers) and the ring function (its buckets' fast lane).
	a.dispatcher, err = dispatch.New(dispatch.Config{AdminAddress: "xjob-lambda", AnyTriggerAddress: cfg.AnyTriggerAddress,
		BatchConcurrency: dispatchConcurrency, ClaimTTL: d.ClaimTTL}, dispatch.Deps{
		Store: counted, Executors: exec, Router: route.New(route.Options{Clock: d.Clock, Prober: exec}),
		Addresses: a.registry, Completer: a.callback, Clock: d.Clock, Logger: d.Logger, Metrics: metrics,
	})
	if err != nil {
		return fail("dispatch", err)
	}
	// The ring dispatches its buckets' fast lane itself, one batch per
	// instant, and sends what it cannot finish to the fast queue (the
	// dispatch function retries it); the slow lane goes to its queue, where
	// the dispatch function's own concurrency keeps slow jobs apart. Dispatches run on
	// the invocation's context without its cancellation (LaneSink's nil
	// Base), so a started chunk is always recorded; RingTimeout leaves room
	// for it.
	fastSink, err := dispatch.NewLaneSink(a.dispatcher, dispatch.LaneSinkOptions{Queues: queues, Logger: d.Logger,
		Calls: map[xjob.Lane]int{xjob.LaneFast: ringFastCalls}, Chunk: ringChunk, Chunks: ringChunks, ClaimAhead: ringClaimAhead})
	if err != nil {
		return fail("ring sink", err)
	}
	a.ring, err = ring.New(ring.Deps{Jobs: store, Queues: queues, Clock: d.Clock, Logger: d.Logger,
		Sink: ring.Split{xjob.LaneFast: fastSink, xjob.LaneSlow: ring.QueueSink{Queues: queues}}})
	if err != nil {
		return fail("ring", err)
	}
	a.scanner, err = scan.New(sc, scan.Deps{Jobs: store, Leases: store, Queues: queues,
		Clock: d.Clock, Logger: d.Logger, Owner: d.Owner})
	if err != nil {
		return fail("scan", err)
	}
	adminToken := cfg.AdminToken
	if adminToken == "" {
		// The callback function serves no /v1 route (see Callback); the
		// handler still wants a token, so it gets one nobody knows.
		adminToken = randomHex(32)
	}
	accessToken := cfg.AccessToken
	if accessToken == "" {
		// Likewise for the functions that serve no HTTP at all (scan,
		// ring); every function that does requires XJOB_ACCESS_TOKEN.
		accessToken = randomHex(32)
	}
	// Console sessions are signed with a key derived from the admin token,
	// so every environment of the registry function verifies them alike;
	// sign-in attempts and sign-outs live in the store, so every
	// environment counts and refuses alike too.
	au, err := auth.New(auth.Config{Users: store, Store: store, AdminToken: adminToken, Key: auth.DeriveKey(adminToken), Clock: d.Clock})
	if err != nil {
		return fail("auth", err)
	}
	a.http, err = adminapi.New(adminapi.Config{Admin: a.admin, Registry: a.registry, Callback: a.callback,
		Metrics: metrics, Gauges: metric.Gauges{ExecutorsOnline: a.registry.OnlineCounts,
			RunsToday: metric.RunsTodayFrom(a.reports, d.Clock.Now), Logger: d.Logger},
		AdminToken: adminToken, Auth: au, AccessToken: accessToken, Logger: d.Logger, Clock: d.Clock})
	if err != nil {
		return fail("admin api", err)
	}
	con, err := console.New(console.Config{Admin: a.admin, Auth: au, Clock: d.Clock, Logger: d.Logger})
	if err != nil {
		return fail("console", err)
	}
	a.http = console.Mount(a.http, con)
	return a, nil
}

// reportFlushTimeout bounds the counters' write at the end of an
// invocation, which may run past a cancelled context.
const reportFlushTimeout = 2 * time.Second

// flushReports writes the run-report counts the invocation accumulated.
// Handlers that can reach dispatch or callback defer it: a Lambda
// environment is frozen between invocations, so no background loop could
// do it. A failure is logged; the counts stay pending for the
// environment's next invocation (they are best effort).
func (a *App) flushReports(ctx context.Context) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportFlushTimeout)
	defer cancel()
	if err := a.reports.Flush(fctx); err != nil {
		a.log.WarnContext(ctx, "report counters not flushed; kept for the next invocation", "err", err)
	}
}

// Store returns the App's DynamoDB store (tests and table bootstrap).
func (a *App) Store() *dynamostore.DB { return a.store }

// queueName is the last path segment of an SQS queue URL, which is also the
// last segment of the queue's ARN (how an SQS record names its source).
func queueName(urlOrARN string) string {
	urlOrARN = strings.TrimRight(urlOrARN, "/")
	if i := strings.LastIndexAny(urlOrARN, "/:"); i >= 0 {
		return urlOrARN[i+1:]
	}
	return urlOrARN
}

// defaultOwner names this execution environment: Lambda's log stream is
// unique per environment, and the random suffix covers everything else.
func defaultOwner() string {
	if s := os.Getenv("AWS_LAMBDA_LOG_STREAM_NAME"); s != "" {
		return s + "/" + randomHex(4)
	}
	host, _ := os.Hostname()
	return host + "/" + randomHex(4)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}
