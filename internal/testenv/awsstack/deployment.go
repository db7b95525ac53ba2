package awsstack

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/app/lambdaapp"
	"github.com/xjobdev/xjob/internal/scheduler/scan"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/internal/testenv/lambdarun"
)

// Region is the region the emulator clients sign for, the one the
// shared test clients use.
const Region = emulator.Region

// Function timeouts of the templates (infra/sam/template.yaml): each
// invocation's context carries the deadline Lambda would give it.
const (
	ScanTimeout     = 55 * time.Second
	RingTimeout     = lambdaapp.RingTimeout // the wait to the instants + the fast lane's dispatch
	DispatchTimeout = 30 * time.Second
	CallbackTimeout = 15 * time.Second
	RegistryTimeout = 60 * time.Second
	WebTimeout      = 30 * time.Second
)

// Options configure a Deployment. Zero values take the defaults noted.
type Options struct {
	// Root is the module root holding test/emulators (default: found from
	// the working directory).
	Root string
	// Shards is the number of scan shards (default 16).
	Shards int
	// LogPages is the trigger log pages a fire second has (default 16;
	// dynamostore.Options.LogPages): the store's and the functions'
	// XJOB_LOG_PAGES, as the templates' LogPages parameter sets it. A
	// sparse profile runs Shards 1 and LogPages 1.
	LogPages int
	// AccessToken is the xxl-job access token executors must send
	// (default "xjob-awsstack-access"); AdminToken the /v1 bearer token
	// (default "xjob-awsstack-admin-token").
	AccessToken, AdminToken string
	// Logger receives the functions' logs, with a "function" attribute
	// (default: discarded).
	Logger *slog.Logger
	// Listen is the HTTP API's address (default 127.0.0.1:0).
	Listen string
	// ListenURL is the executor API's function URL's address (default
	// 127.0.0.1:0).
	ListenURL string
	// RingPollers is the ring queue mapping's concurrent batches (the
	// templates' RingConcurrency, MaximumConcurrency: default 10). The
	// lanes have no mapping: they are asynchronous invocations of the
	// dispatch function (the deployment's Invoke API, DispatchFunction).
	RingPollers int
	// ResultsPollers, ResultsBatch and ResultsWindow are the results
	// queue's mapping (to the dispatch function): concurrent batches
	// (default 2, the templates' MaximumConcurrency), records per batch
	// (default 1000, BatchSize) and how long it gathers a batch (default
	// 1 s, MaximumBatchingWindowInSeconds).
	ResultsPollers, ResultsBatch int
	ResultsWindow                time.Duration
	// SyncCallbacks leaves the results queue out: the callback function
	// applies each request's results itself (a deployment that predates
	// the queue).
	SyncCallbacks bool
	// PollWait is the mapping's long-poll wait (default 20 s, as Lambda's).
	PollWait time.Duration
	// ScanPeriod is the EventBridge rate of the scan and maintenance
	// schedules (default 1 minute).
	ScanPeriod time.Duration
	// NoMaintenance leaves out the registry function's scheduled runs.
	NoMaintenance bool
	// Scan overrides scan tunables (Shards always comes from Shards).
	Scan scan.Tunables
	// StartTimeout bounds each emulator's start (default 30 s).
	StartTimeout time.Duration
	// ScanTimeout is the scan function's timeout (default ScanTimeout, as
	// deployed); a scan invocation ticks until ~1.5 s before it.
	ScanTimeout time.Duration
	// Bootstraps, when set, is a directory holding the functions'
	// bootstrap binaries, one per function named by it (see
	// BuildBootstraps): every invocation then goes to the real mains,
	// served by package lambdarun, instead of to in-process handlers. The
	// meter then counts invocations, their CPU time and HTTP API requests
	// only (the processes' SDK calls are not metered), and Scan is
	// ignored.
	Bootstraps string
	// BootstrapOutput receives the bootstraps' logs (default: discarded).
	BootstrapOutput io.Writer
	// BootstrapMemory is each bootstrap's memory in MB, by function name
	// (AWS_LAMBDA_FUNCTION_MEMORY_SIZE; default MemoryMB).
	BootstrapMemory map[string]int
	// CPUShare runs each bootstrap at its memory's share of one core
	// (memory / VCPUMemoryMB, by a CPU quota: lambdarun.Options.CPUShare),
	// as Lambda does, so that lateness and durations are measured at the
	// CPU Lambda would give, not at a whole core of this machine.
	CPUShare bool
	// ReservedConcurrency deploys as the templates do with
	// ReservedConcurrency=true: a function with a reserved concurrency
	// (awsconfig.Function.ReservedConcurrency) never has more execution
	// environments than that. Off, the templates' default, functions
	// scale out with their concurrent invocations.
	ReservedConcurrency bool
	// ColdStarts, per function, delays the first invocation of each new
	// in-process execution environment by that function's Init, as a
	// cold start's Init delays its invocation on Lambda (the real
	// bootstraps' measured Init: MeasureInit), so lateness includes it.
	ColdStarts map[string]time.Duration
	// SecretsRefresh is the bootstraps' XJOB_SECRETS_REFRESH (default:
	// the functions' own, 5 minutes).
	SecretsRefresh time.Duration
	// TargetQueues are SQS queues created at start besides the
	// deployment's own, as an operator creates the queues AWS jobs send
	// to before listing them: their ARNs, with AWSTargetARNs, are the
	// functions' XJOB_AWS_TARGET_ARNS (TargetQueue gives them).
	TargetQueues  []string
	AWSTargetARNs []string
	// CustomMetrics deploys as the templates do with CustomMetrics=true
	// (XJOB_CUSTOM_METRICS): the functions' EMF records carry their
	// metric directive, and the meter prices the custom metrics they
	// define. Off, the templates' default, the records are plain log
	// lines the meter prices as log ingestion only.
	CustomMetrics bool
	// AsyncRetryWait is the wait before Lambda's first retry of a failed
	// asynchronous invocation, doubled for the second (default 1 minute,
	// as Lambda's).
	AsyncRetryWait time.Duration
}

func (o *Options) applyDefaults() {
	if o.Shards == 0 {
		o.Shards = 16
	}
	if o.LogPages == 0 {
		o.LogPages = 16
	}
	if o.AccessToken == "" {
		o.AccessToken = "xjob-awsstack-access"
	}
	if o.AdminToken == "" {
		o.AdminToken = "xjob-awsstack-admin-token"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.ListenURL == "" {
		o.ListenURL = "127.0.0.1:0"
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.RingPollers, 10)
	if o.AsyncRetryWait <= 0 {
		o.AsyncRetryWait = time.Minute
	}
	def(&o.ResultsPollers, 2)
	def(&o.ResultsBatch, 1000)
	if o.ResultsWindow <= 0 {
		o.ResultsWindow = time.Second
	}
	if o.PollWait <= 0 {
		o.PollWait = 20 * time.Second
	}
	if o.ScanPeriod <= 0 {
		o.ScanPeriod = time.Minute
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.ScanTimeout <= 0 {
		o.ScanTimeout = ScanTimeout
	}
}

// Deployment is one running emulated AWS deployment of xjob.
type Deployment struct {
	opts     Options
	dynalite *emulator.Process
	fauxqs   *emulator.Process
	moto     *emulator.Process // SSM Parameter Store of the bootstraps' secrets
	meter    *Meter
	httpc    *awshttp.BuildableClient
	vars     map[string]string // the functions' environment
	arns     map[string]string // queue URL → ARN
	store    *dynamostore.DB   // un-metered
	srv      *http.Server
	url      string
	urlSrv   *http.Server // the function URL's
	execURL  string

	appsMu   sync.Mutex
	apps     map[string]*lambdaapp.App      // execution environment → app
	handlers map[string]lambda.Handler      // execution environment → its App's handler
	runners  map[string]*lambdarun.Function // function → bootstraps (Options.Bootstraps)
	idle     map[string][]string            // function → execution environments not running an invocation
	envs     map[string]int                 // function → execution environments created
	fresh    map[string]bool                // execution environments not yet invoked (their Init is due)
	envFree  *sync.Cond                     // on appsMu: an environment was released (acquire)

	stop         context.CancelFunc
	wg           sync.WaitGroup
	shutdownOnce sync.Once
	closeMu      sync.Once
	errMu        sync.Mutex
	errs         []error // invocation errors, for Errors

	targetQs map[string][2]string // Options.TargetQueues: name → URL, ARN

	// The dispatch function's Invoke API (the lanes):
	// its address, its on-failure destination, the asynchronous
	// invocations it accepted, and the context its retries run in.
	lambdaSrv     *http.Server
	lambdaURL     string
	dlq           string
	asyncAccepted atomic.Int64
	asyncDone     atomic.Int64 // asynchronous invocations settled (AsyncSettled)
	runCtx        context.Context
}

// Start launches the emulators, creates the tables, queues and alarm
// topic, and starts the triggers: the HTTP API, the event source mappings
// and the scan and maintenance schedules (the first scan invocation starts
// at once). Close stops everything.
func Start(ctx context.Context, opts Options) (d *Deployment, err error) {
	opts.applyDefaults()
	dir, err := emulator.Dir(opts.Root)
	if err != nil {
		return nil, err
	}
	d = &Deployment{opts: opts, meter: NewMeter(), arns: map[string]string{}, apps: map[string]*lambdaapp.App{},
		handlers: map[string]lambda.Handler{}, runners: map[string]*lambdarun.Function{}, idle: map[string][]string{}, envs: map[string]int{}}
	// The failure returns below set d to nil before this runs: close
	// what was started through started, not d.
	started := d
	defer func() {
		if err != nil {
			started.Close()
			d = nil
		}
	}()
	if d.dynalite, err = emulator.StartDynalite(dir, opts.StartTimeout); err != nil {
		return nil, err
	}
	if d.fauxqs, err = emulator.StartFauxqs(dir, opts.StartTimeout); err != nil {
		return nil, err
	}
	// One transport for every client: the SDK's default keeps 10 idle
	// connections per host, too few for dozens of concurrent functions.
	d.httpc = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns, t.MaxIdleConnsPerHost = 512, 256
	})
	if err := d.createResources(ctx); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("awsstack http api: %w", err)
	}
	d.url = "http://" + ln.Addr().String()
	d.srv = &http.Server{Handler: http.HandlerFunc(d.serveAPI), ReadHeaderTimeout: 10 * time.Second}
	urlLn, err := net.Listen("tcp", opts.ListenURL)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("awsstack function url: %w", err)
	}
	d.execURL = "http://" + urlLn.Addr().String()
	d.urlSrv = &http.Server{Handler: http.HandlerFunc(d.serveURL), ReadHeaderTimeout: 10 * time.Second}
	lambdaLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = ln.Close()
		_ = urlLn.Close()
		return nil, fmt.Errorf("awsstack lambda invoke api: %w", err)
	}
	d.lambdaURL = "http://" + lambdaLn.Addr().String()
	d.lambdaSrv = &http.Server{Handler: http.HandlerFunc(d.serveInvoke), ReadHeaderTimeout: 10 * time.Second}
	d.vars[awsconfig.EnvDispatchFunction] = DispatchFunction
	// The executor API forwards job declarations to the web function, at
	// the HTTP API's address, as the templates configure it.
	d.vars[awsconfig.EnvWebURL] = d.url
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	d.stop = stop
	d.runCtx = runCtx
	// Not in wg: the invocations wg waits for may invoke until they
	// end (Shutdown closes it after them).
	go func() { _ = d.lambdaSrv.Serve(lambdaLn) }()
	d.wg.Go(func() { _ = d.srv.Serve(ln) })
	d.wg.Go(func() { _ = d.urlSrv.Serve(urlLn) })
	if opts.Bootstraps != "" {
		if err := d.startBootstraps(ctx); err != nil {
			return nil, err
		}
	} else {
		// Build every function's environment before the triggers start, so a
		// broken configuration fails Start rather than the first invocation.
		for _, fn := range awsconfig.Functions {
			if _, err := d.app(fn.Name, fn.Name); err != nil {
				return nil, err
			}
		}
	}
	d.startMappings(runCtx)
	d.startSchedules(runCtx)
	return d, nil
}

// URL is the HTTP API's base address: the admin client's and the
// console's (the web function).
func (d *Deployment) URL() string { return d.url }

// ExecutorURL is the executor API's function URL: the one admin address
// of executors (results and heartbeats; job declarations are forwarded
// to URL).
func (d *Deployment) ExecutorURL() string { return d.execURL }

// AccessToken is the xxl-job access token the functions expect.
func (d *Deployment) AccessToken() string { return d.opts.AccessToken }

// AdminToken is the bearer token of the /v1 admin API.
func (d *Deployment) AdminToken() string { return d.opts.AdminToken }

// Store is an un-metered store on the deployment's tables, for reading
// results (trigger logs) without counting the reads as the pipeline's.
func (d *Deployment) Store() *dynamostore.DB { return d.store }

// SendRing puts raw message bodies on the ring queue, visible after delay
// (whole seconds, at most SQS's 15 minutes): buckets as another version of
// the code wrote them, for upgrade tests.
func (d *Deployment) SendRing(ctx context.Context, delay time.Duration, bodies ...string) error {
	_, sq, _ := d.clients("")
	for _, b := range bodies {
		if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(d.vars[awsconfig.EnvRingQueueURL]),
			MessageBody: aws.String(b), DelaySeconds: int32(delay / time.Second)}); err != nil {
			return fmt.Errorf("awsstack ring send: %w", err)
		}
	}
	return nil
}

// Meter is the deployment's request meter.
func (d *Deployment) Meter() *Meter { return d.meter }

// Endpoints returns the emulators' base URLs (DynamoDB, SQS/SNS).
func (d *Deployment) Endpoints() (dynamoDB, sqsSNS string) {
	return d.dynalite.Endpoint(), d.fauxqs.Endpoint()
}

// EmulatorUsage is the kernel's accounting of the emulator processes; the
// figures are complete after Close.
func (d *Deployment) EmulatorUsage() []ProcessUsage {
	var out []ProcessUsage
	for _, e := range []*emulator.Process{d.dynalite, d.fauxqs} {
		if e != nil {
			out = append(out, e.Usage())
		}
	}
	return out
}

// Errors returns the invocation errors seen so far (a handler that
// returned an error, or a mapping's failed SQS call), at most 100.
func (d *Deployment) Errors() []error {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	return append([]error(nil), d.errs...)
}

func (d *Deployment) fail(err error) {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	if len(d.errs) < 100 {
		d.errs = append(d.errs, err)
	}
}

// Shutdown stops the triggers, waits for running invocations, shuts the
// HTTP API and the function URL down, and then every execution environment,
// as Lambda retires them: the bootstraps get SIGTERM (lambdarun) and the
// in-process environments run their shutdown flush (lambdaapp.App.Shutdown),
// all at once. What they held back (the run report's counts) is written
// then, and metered: on AWS too that write happens once per environment
// lifetime. The emulators stay up, so tests read what was written (Store);
// Close ends them. It is safe to call more than once.
func (d *Deployment) Shutdown() {
	d.shutdownOnce.Do(func() {
		if d.stop != nil {
			d.stop()
		}
		for _, srv := range []*http.Server{d.srv, d.urlSrv} {
			if srv != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_ = srv.Shutdown(ctx)
				cancel()
			}
		}
		d.wg.Wait()
		if d.lambdaSrv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = d.lambdaSrv.Shutdown(ctx)
			cancel()
		}
		var wg sync.WaitGroup
		for _, r := range d.runners {
			wg.Go(r.Close)
		}
		d.appsMu.Lock()
		apps := slices.Collect(maps.Values(d.apps))
		d.appsMu.Unlock()
		for _, a := range apps {
			wg.Go(func() { a.Shutdown(context.Background()) })
		}
		wg.Wait()
	})
}

// Close shuts the deployment down (Shutdown) and ends the emulators. It is
// safe to call more than once.
func (d *Deployment) Close() {
	d.closeMu.Do(func() {
		d.Shutdown()
		for _, e := range []*emulator.Process{d.moto, d.fauxqs, d.dynalite} {
			if e != nil {
				e.Stop()
			}
		}
	})
}

// config is the SDK configuration of every client: region, static dummy
// credentials (no real profile is ever read) and the shared transport.
func (d *Deployment) config() aws.Config {
	return aws.Config{Region: Region, HTTPClient: detached{d.httpc},
		Credentials: credentials.NewStaticCredentialsProvider("xjob-awsstack", "xjob-awsstack", "")}
}

// clients returns SDK clients for the emulators, metered as function fn
// ("" for none).
func (d *Deployment) clients(fn string) (*dynamodb.Client, *sqs.Client, *sns.Client) {
	var apiOpts []func(*middleware.Stack) error
	if fn != "" {
		apiOpts = append(apiOpts, d.meter.Middleware(fn))
	}
	cfg := d.config()
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(d.dynalite.Endpoint())
		o.APIOptions = append(o.APIOptions, apiOpts...)
	})
	sq := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(d.fauxqs.Endpoint())
		o.APIOptions = append(o.APIOptions, apiOpts...)
	})
	sn := sns.NewFromConfig(cfg, func(o *sns.Options) {
		o.BaseEndpoint = aws.String(d.fauxqs.Endpoint())
		o.APIOptions = append(o.APIOptions, apiOpts...)
	})
	return ddb, sq, sn
}

// Queue visibility timeouts of the templates (6 × the consumer's timeout).
const (
	ringVisibility     = "300"
	dispatchVisibility = "180"
)

// createResources makes what the templates declare: the tables, the ring
// and results queues, the lanes' dead-letter queue and the alarm topic, and the functions' environment.
func (d *Deployment) createResources(ctx context.Context) error {
	ddb, sq, sn := d.clients("")
	const prefix = TablePrefix
	st, err := dynamostore.New(ddb, dynamostore.Options{Tables: dynamostore.TablesWithPrefix(prefix), Shards: d.opts.Shards,
		LogPages: d.opts.LogPages})
	if err != nil {
		return fmt.Errorf("awsstack store: %w", err)
	}
	if err := st.CreateTables(ctx); err != nil {
		return fmt.Errorf("awsstack create tables: %w", err)
	}
	tables := dynamostore.TablesWithPrefix(prefix)
	d.meter.Describe(ddb, dynamostore.TableSpecs(tables), tables.Logs)
	d.store = st
	queue := func(name, visibility string) (string, error) {
		out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name),
			Attributes: map[string]string{"VisibilityTimeout": visibility}})
		if err != nil {
			return "", fmt.Errorf("awsstack create queue %s: %w", name, err)
		}
		a, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			return "", fmt.Errorf("awsstack queue %s arn: %w", name, err)
		}
		d.arns[*out.QueueUrl] = a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
		return *out.QueueUrl, nil
	}
	ring, err := queue(prefix+"-ring", ringVisibility)
	if err != nil {
		return err
	}
	// The dispatch function's on-failure destination: no mapping.
	if d.dlq, err = queue(prefix+"-dispatch-dlq", "30"); err != nil {
		return err
	}
	results := ""
	if !d.opts.SyncCallbacks {
		if results, err = queue(prefix+"-results", dispatchVisibility); err != nil {
			return err
		}
	}
	topic, err := sn.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(prefix + "-alarms")})
	if err != nil {
		return fmt.Errorf("awsstack create topic: %w", err)
	}
	d.vars = map[string]string{
		awsconfig.EnvTablePrefix: prefix, awsconfig.EnvShards: fmt.Sprint(d.opts.Shards),
		awsconfig.EnvLogPages:     fmt.Sprint(d.opts.LogPages),
		awsconfig.EnvRingQueueURL: ring,
		awsconfig.EnvAccessToken:  d.opts.AccessToken, awsconfig.EnvAdminToken: d.opts.AdminToken,
		awsconfig.EnvAlarmTopicARN: *topic.TopicArn,
		// This deployment's executors run on loopback, which a deployment
		// on AWS refuses unless its operator allows it: the emulated
		// stack's own address rule.
		awsconfig.EnvAllowCIDRs: LoopbackCIDRs,
	}
	if results != "" {
		d.vars[awsconfig.EnvResultsQueueURL] = results
	}
	if d.opts.CustomMetrics {
		d.vars[awsconfig.EnvCustomMetrics] = "true"
	}
	allowed := slices.Clone(d.opts.AWSTargetARNs)
	d.targetQs = map[string][2]string{}
	for _, name := range d.opts.TargetQueues {
		url, err := queue(name, "30")
		if err != nil {
			return err
		}
		d.targetQs[name] = [2]string{url, d.arns[url]}
		allowed = append(allowed, d.arns[url])
	}
	if len(allowed) > 0 {
		d.vars[awsconfig.EnvAWSTargetARNs] = strings.Join(allowed, ",")
	}
	return nil
}

// TargetQueue is the URL and ARN of Options.TargetQueues' queue name.
func (d *Deployment) TargetQueue(name string) (url, arn string) {
	q := d.targetQs[name]
	return q[0], q[1]
}

// TablePrefix is the emulated deployment's XJOB_TABLE_PREFIX.
const TablePrefix = "xjob"

// LoopbackCIDRs is the emulated deployment's XJOB_ALLOW_CIDRS.
const LoopbackCIDRs = "127.0.0.0/8,::1/128"

// app returns the App of one execution environment (key) of function fn,
// building it as its main would: configuration from the environment,
// clients built once.
func (d *Deployment) app(fn, key string) (*lambdaapp.App, error) {
	d.appsMu.Lock()
	defer d.appsMu.Unlock()
	if a := d.apps[key]; a != nil {
		return a, nil
	}
	cfg, err := lambdaapp.LoadConfig(fn, func(k string) string { return d.vars[k] })
	if err != nil {
		return nil, fmt.Errorf("awsstack %s: %w", fn, err)
	}
	ddb, sq, sn := d.clients(fn)
	// The function's log as Lambda would ingest it (lambdaapp.Init's JSON
	// to stdout at the configured level, and its embedded-metric-format
	// records) is counted for CloudWatch Logs; the log also goes to
	// Options.Logger.
	counted := slog.NewJSONHandler(logCounter{d.meter, fn}, &slog.HandlerOptions{Level: cfg.LogLevel})
	logger := slog.New(teeHandler{counted, d.opts.Logger.Handler()}).With("function", fn)
	// AWS jobs call the emulators, as the bootstraps do through
	// AWS_ENDPOINT_URL_SQS and _SNS.
	targetAWS := d.config()
	deps := lambdaapp.Deps{DynamoDB: ddb, SQS: sq, SNS: sn,
		Logger: logger, MetricsOut: emfCounter{logCounter{d.meter, fn}}, Owner: key, Scan: lambdaapp.ScanTunables(d.opts.Scan),
		TargetAWS: &targetAWS, TargetEndpoints: map[string]string{"sqs": d.fauxqs.Endpoint(), "sns": d.fauxqs.Endpoint()}}
	if d.lambdaURL != "" {
		deps.Lambda = d.lambdaClient()
	}
	a, err := lambdaapp.New(cfg, deps)
	if err != nil {
		return nil, fmt.Errorf("awsstack %s: %w", fn, err)
	}
	d.apps[key] = a
	return a, nil
}

// acquire picks an execution environment of function fn that runs no
// invocation, creating one when all are busy, as Lambda scales a
// function out: each concurrent invocation has an environment (and an
// App: clients, caches, batched counters) of its own. release returns it.
// With Options.ReservedConcurrency, a function with a reserved
// concurrency in the templates (awsconfig.Function.ReservedConcurrency)
// never has more environments than that: an invocation past it waits for one to be released. Lambda
// answers it with a throttle (429 at a function URL) and the caller sends
// it again later; waiting stands for that retry without its delay, so
// the environments, and what each one caches and batches, are as many as
// Lambda would run.
func (d *Deployment) acquire(fn string) (key string, release func()) {
	d.appsMu.Lock()
	defer d.appsMu.Unlock()
	if d.envFree == nil {
		d.envFree = sync.NewCond(&d.appsMu)
	}
	limit := 0
	if f, ok := awsconfig.Lookup(fn); ok && d.opts.ReservedConcurrency {
		limit = f.ReservedConcurrency
	}
	for len(d.idle[fn]) == 0 && limit > 0 && d.envs[fn] >= limit {
		d.envFree.Wait()
	}
	if idle := d.idle[fn]; len(idle) > 0 {
		key = idle[len(idle)-1]
		d.idle[fn] = idle[:len(idle)-1]
	} else {
		key = fn
		if n := d.envs[fn]; n > 0 {
			key = fmt.Sprintf("%s#%d", fn, n)
		}
		d.envs[fn]++
		d.meter.ColdStart(fn) // a new environment: Lambda bills its Init
		if d.fresh == nil {
			d.fresh = map[string]bool{}
		}
		d.fresh[key] = true
	}
	return key, func() {
		d.appsMu.Lock()
		d.idle[fn] = append(d.idle[fn], key)
		d.envFree.Broadcast()
		d.appsMu.Unlock()
	}
}

// initDue reports whether execution environment key was just created,
// and forgets it: its first invocation waits for its Init
// (Options.ColdStarts).
func (d *Deployment) initDue(key string) bool {
	d.appsMu.Lock()
	defer d.appsMu.Unlock()
	due := d.fresh[key]
	delete(d.fresh, key)
	return due
}

// Environments is how many execution environments function fn has had
// (in-process invocations only).
func (d *Deployment) Environments(fn string) int {
	d.appsMu.Lock()
	defer d.appsMu.Unlock()
	return d.envs[fn]
}

// handler returns the handler of execution environment key of function
// fn, as lambda.Start would wrap it.
func (d *Deployment) handler(fn, key string) (lambda.Handler, error) {
	a, err := d.app(fn, key)
	if err != nil {
		return nil, err
	}
	d.appsMu.Lock()
	defer d.appsMu.Unlock()
	h := d.handlers[key]
	if h == nil {
		h = lambda.NewHandler(a.Handler())
		d.handlers[key] = h
	}
	return h, nil
}

// logCounter counts the bytes a function logs.
type logCounter struct {
	m  *Meter
	fn string
}

func (c logCounter) Write(p []byte) (int, error) {
	c.m.LogWrite(c.fn, len(p))
	return len(p), nil
}

// emfCounter counts the bytes of a function's embedded-metric-format
// records, as logCounter does, and the custom metrics they define
// (Meter.MetricRecords).
type emfCounter struct{ logCounter }

func (c emfCounter) Write(p []byte) (int, error) {
	c.m.MetricRecords(c.fn, p)
	return c.logCounter.Write(p)
}

// teeHandler sends every record to two handlers.
type teeHandler struct{ a, b slog.Handler }

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	if t.a.Enabled(ctx, r.Level) {
		_ = t.a.Handle(ctx, r.Clone())
	}
	if t.b.Enabled(ctx, r.Level) {
		return t.b.Handle(ctx, r)
	}
	return nil
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{t.a.WithAttrs(as), t.b.WithAttrs(as)}
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	return teeHandler{t.a.WithGroup(name), t.b.WithGroup(name)}
}

// detached sends each request on a context without cancellation and
// stops waiting for it when the caller's context ends: an invocation that
// hits its timeout gets its error at once, as on AWS, but the request is
// not aborted on the wire — dynalite ends its process on a request its
// client aborts.
type detached struct{ c aws.HTTPClient }

func (d detached) Do(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	type result struct {
		resp *http.Response
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		resp, err := d.c.Do(r.WithContext(context.WithoutCancel(ctx)))
		ch <- result{resp, err}
	}()
	select {
	case x := <-ch:
		return x.resp, x.err
	case <-ctx.Done():
		go func() {
			if x := <-ch; x.resp != nil {
				_, _ = io.Copy(io.Discard, x.resp.Body)
				_ = x.resp.Body.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
