package wiring

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/adapter/lambdaqueue"
	"github.com/xjobdev/xjob/internal/adapter/snsalarm"
	"github.com/xjobdev/xjob/internal/adapter/sqsqueue"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/tally"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Deps are the clients a function is built on: SDK clients on AWS,
// emulator clients (possibly wrapped for request counting) in tests.
type Deps struct {
	DynamoDB dynamostore.API
	SQS      sqsqueue.API
	// Lambda invokes the dispatch function when Config.DispatchFunction
	// is set: the lanes (package lambdaqueue).
	Lambda lambdaqueue.API
	// SNS publishes alarms when Config.AlarmTopicARN is set; nil logs them only.
	SNS snsalarm.SNSAPI
	// Secrets reads the secrets when Config names parameters (package
	// secrets: SSM Parameter Store).
	Secrets SecretSource
	Clock   clock.Clock
	Logger  *slog.Logger
	// Owner names this execution environment in scan leases (default:
	// the Lambda log stream, or a random id).
	Owner string
	// ExecutorHTTP replaces the executor client's HTTP client (tests).
	ExecutorHTTP *http.Client
	// Scan overrides scan tunables (tests); zero fields keep the defaults.
	Scan ScanTunables
	// ClaimTTL overrides dispatch.Config.ClaimTTL (tests: a held claim
	// expires, and its task returns, within seconds).
	ClaimTTL time.Duration
	// MetricsOut receives the embedded-metric-format records (default
	// os.Stdout, the function's log).
	MetricsOut io.Writer
	// RingRetry overrides the ring's retry step (tests: a failed bucket
	// returns within the test's patience).
	RingRetry time.Duration
	// TargetAWS is the SDK configuration AWS jobs' calls are made with
	// (the Lambda environment's: its role's credentials); nil refuses
	// AWS jobs when Config.AWSTargets lists any (pipeline.Targets).
	// TargetEndpoints maps a service to an emulator's endpoint (tests;
	// awstarget.Config.Endpoints).
	TargetAWS       *aws.Config
	TargetEndpoints map[string]string
}

// SecretSource reads a function's secrets: Load once at start, Values
// per use (package secrets keeps them fresh).
type SecretSource interface {
	Load(ctx context.Context) error
	Values(ctx context.Context, name string) []string
}

// SecretsFactory builds the secret source of parameters names from the
// Lambda environment's AWS configuration (secrets.FromSSM).
type SecretsFactory func(cfg aws.Config, names []string, refresh time.Duration, log *slog.Logger) SecretSource

// ScanTunables are the scan.Tunables fields tests may override; they are
// here rather than a scan.Tunables so that only the scan and web functions
// link package scan.
type ScanTunables struct {
	PreRead, Advance, TickBudget, LeaseTTL, RingLead time.Duration
	// AdvanceRate is scan.Tunables.AdvanceRate; zero takes the scan
	// function's default, a negative value lifts the cap.
	AdvanceRate int
}

// Base is what every function is built on. Construction does no I/O.
type Base struct {
	Config Config
	Deps   Deps // with the defaults applied
	Log    *slog.Logger
	Clock  clock.Clock
	Store  *dynamostore.DB
	Queues *sqsqueue.Queues
	// Lanes are the dispatch lanes on asynchronous invocations, when
	// Config.DispatchFunction is set (nil otherwise; Queues carries them).
	Lanes map[fire.Lane]*lambdaqueue.Queue
	// Alarmer logs alarms, and publishes them to the stack's topic when
	// Config.AlarmTopicARN is set.
	Alarmer driver.Alarmer
	Metrics *metric.Metrics
	// Reports folds the environment's trigger and result counts into one
	// DynamoDB write per day and group at most once a ReportFlushAge
	// (FlushReports) and at shutdown (Shutdown); Counted is Store counting
	// through it, what dispatch, callback and the admin write to.
	Reports *tally.Batcher
	Counted driver.Store
	// EMF writes the pipeline's metrics into the log (plain JSON lines, or
	// embedded-metric-format records with Config.CustomMetrics): counters
	// on the report's cadence (FlushReports, Shutdown), and what a
	// function reports itself at once (EMF.Put).
	EMF *EMF
	// Secrets reads the parameters Config names; nil when the tokens are
	// given directly. LoadSecrets reads them once, before any handler.
	Secrets SecretSource
}

// NewBase applies the defaults of d and builds the store, queues,
// alarmer and report counters of function cfg.Function.
func NewBase(cfg Config, d Deps) (*Base, error) {
	if d.DynamoDB == nil || d.SQS == nil {
		return nil, fmt.Errorf("lambda %s: DynamoDB and SQS clients are required", cfg.Function)
	}
	d.Clock = fallback.Clock(d.Clock)
	d.Logger = fallback.Logger(d.Logger)
	if d.Owner == "" {
		d.Owner = defaultOwner()
	}
	if cfg.Shards == 0 {
		cfg.Shards = 16
	}
	store, err := dynamostore.New(d.DynamoDB, dynamostore.Options{
		Tables: dynamostore.TablesWithPrefix(cfg.TablePrefix), Shards: cfg.Shards, LogPages: cfg.LogPages, Clock: d.Clock,
		LogTTL: cfg.LogRetention,
	})
	if err != nil {
		return nil, fmt.Errorf("lambda %s: dynamodb store: %w", cfg.Function, err)
	}
	b := &Base{Config: cfg, Deps: d, Log: d.Logger, Clock: d.Clock, Store: store, Metrics: &metric.Metrics{},
		Queues: sqsqueue.New(d.SQS, sqsqueue.URLs{
			Ring: cfg.RingQueueURL, DispatchFast: cfg.DispatchFastURL, DispatchSlow: cfg.DispatchSlowURL,
		}, d.Clock)}
	// Every function sends ring buckets by their deadline (never visible
	// after fire − the scan's ring lead); only the scan waits for the
	// phase that makes them arrive just that early (scanfn).
	b.Queues.PaceRing(sqsqueue.Pacing{Window: RingWindow})
	if cfg.DispatchFunction != "" {
		if d.Lambda == nil {
			return nil, fmt.Errorf("lambda %s: %s set but no Lambda client", cfg.Function, awsconfig.EnvDispatchFunction)
		}
		// Tasks due later wait in the ring queue, unpaced (a lower bound,
		// as the lanes' DelaySeconds was).
		var later driver.Queue[lambdaqueue.Deferred]
		if cfg.RingQueueURL != "" {
			later = sqsqueue.NewQueue[lambdaqueue.Deferred](d.SQS, cfg.RingQueueURL, d.Clock)
		}
		b.Lanes = map[fire.Lane]*lambdaqueue.Queue{
			fire.LaneFast: lambdaqueue.New(d.Lambda, cfg.DispatchFunction, fire.LaneFast, later, d.Clock),
			fire.LaneSlow: lambdaqueue.New(d.Lambda, cfg.DispatchFunction, fire.LaneSlow, later, d.Clock),
		}
		b.Queues.SetLanes(b.Lanes[fire.LaneFast], b.Lanes[fire.LaneSlow])
	}
	b.Alarmer = alarm.Log{Logger: d.Logger}
	if cfg.AlarmTopicARN != "" && d.SNS != nil {
		b.Alarmer = alarm.Multi{b.Alarmer, snsalarm.SNS{API: d.SNS, TopicARN: cfg.AlarmTopicARN, Clock: d.Clock}}
	}
	b.Reports, err = tally.New(store, tally.Options{MaxAge: ReportFlushAge, Clock: d.Clock, Logger: d.Logger})
	if err != nil {
		return nil, fmt.Errorf("lambda %s: report: %w", cfg.Function, err)
	}
	b.Counted = b.Reports.Store(store)
	out := d.MetricsOut
	if out == nil {
		out = os.Stdout
	}
	// Lambda names the function (<stack>-<function>) in its environment;
	// the alarms address the metrics by it.
	b.EMF = NewEMF(out, cmp.Or(os.Getenv("AWS_LAMBDA_FUNCTION_NAME"), cfg.Function), d.Clock)
	b.EMF.CustomMetrics(cfg.CustomMetrics)
	if cfg.MetricsPerJob > 0 {
		// Every environment counts each job's results and the EMF gives
		// its own metric to the deployment's first MetricsPerJob jobs.
		b.Metrics.DrainJobs = true
		b.EMF.PerJob(store, cfg.MetricsPerJob)
	}
	if len(cfg.SecretNames()) > 0 {
		if d.Secrets == nil {
			return nil, fmt.Errorf("lambda %s: secrets in SSM parameters but no secret source", cfg.Function)
		}
		b.Secrets = d.Secrets
	}
	return b, nil
}

// LoadSecrets reads the function's secrets (none when they are given
// directly); a function that cannot read them cannot start.
func (b *Base) LoadSecrets(ctx context.Context) error {
	if b.Secrets == nil {
		return nil
	}
	if err := b.Secrets.Load(ctx); err != nil {
		return fmt.Errorf("lambda %s: %w", b.Config.Function, err)
	}
	return nil
}

// AccessTokens are the xxl-job access tokens accepted from executors, the
// first one the token sent to them: the SSM parameter's lines, read again
// every refresh interval, or the one given directly.
func (b *Base) AccessTokens() []string {
	return b.secret(b.Config.AccessTokenParam, b.Config.AccessToken)
}

// AdminTokens are the accepted bearer tokens of the /v1 admin API.
func (b *Base) AdminTokens() []string {
	return b.secret(b.Config.AdminTokenParam, b.Config.AdminToken)
}

// SessionKey is the secret console sessions are signed with: its own
// parameter on AWS, so that neither token can forge a session; given
// directly (tests), the admin token stands in.
func (b *Base) SessionKey() string {
	if v := b.secret(b.Config.SessionKeyParam, ""); len(v) > 0 {
		return v[0]
	}
	return b.Config.AdminToken
}

func (b *Base) secret(param, direct string) []string {
	if param != "" && b.Secrets != nil {
		return b.Secrets.Values(context.Background(), param)
	}
	if direct == "" {
		return nil
	}
	return []string{direct}
}

// ReportFlushAge is how long an execution environment keeps its run-report
// counts and EMF counters before the end of an invocation writes them
// (FlushReports): CloudWatch metrics have one-minute resolution, so a
// minute's delay changes none of the minutes they land in (they are
// bucketed by minute, EMF), and the report read by the console and
// /metrics trails the environments by about as much. Writing at every
// invocation was a DynamoDB write per invocation (and an EMF record per
// invocation in the log): at sparse schedules most of what the counters
// cost.
const ReportFlushAge = time.Minute

// reportFlushTimeout bounds the counters' write at the end of an
// invocation, which may run past a cancelled context.
const reportFlushTimeout = 2 * time.Second

// ShutdownFlushTimeout bounds the flush when Lambda shuts the environment
// down (Shutdown): Lambda sends SIGTERM and, about 500 ms later, SIGKILL.
const ShutdownFlushTimeout = 400 * time.Millisecond

// FlushReports ends every invocation of a handler that can count triggers
// or results (dispatch, callback, the ring, the admin and maintenance
// paths). It collects the invocation's pipeline counters into the EMF's
// minute buckets and writes what the environment holds — the run-report
// deltas, one DynamoDB UpdateItem per day and group, and the EMF records —
// only once the oldest of it is ReportFlushAge old or the report holds
// tally.DefaultMaxPending counters; otherwise it waits in the environment
// for a later invocation, or for Shutdown.
//
// A Lambda environment is frozen between invocations, so no background
// loop could write on a timer; the end of an invocation and the SIGTERM
// of its shutdown are the only moments it runs. What an environment that
// dies without SIGTERM (a timeout, a crash) held is lost: at most
// ReportFlushAge of its counts, which are best effort (the trigger logs
// are the record). None of the templates' alarms reads these counters
// or any xjob metric (ScanStalledAlarm reads AWS/Lambda's Invocations
// and Errors of the scan), which is why they are metrics only with
// Config.CustomMetrics; the scan's metrics and the ring's LatenessMaxMs
// are written at once (EMF.Put). An alarm added on Triggers, Results or
// their failures (CustomMetrics on) sees each minute's full count up to
// a minute (or an idle environment's lifetime) later: give it an
// evaluation range of a few periods.
//
// A failure is logged; the counts stay pending for the environment's next
// flush.
func (b *Base) FlushReports(ctx context.Context) {
	b.EMF.Collect(b.Metrics)
	if !b.Reports.Due() && !b.emfDue() {
		return
	}
	b.flush(ctx, reportFlushTimeout)
}

// Shutdown writes everything the environment holds (run-report deltas,
// EMF records), whatever its age, within ShutdownFlushTimeout: what Main
// runs when Lambda sends SIGTERM, and what the emulated deployment runs
// when it ends an in-process environment.
func (b *Base) Shutdown(ctx context.Context) {
	b.EMF.Collect(b.Metrics)
	b.flush(ctx, ShutdownFlushTimeout)
}

// emfDue reports whether the EMF's oldest collected count is
// ReportFlushAge old.
func (b *Base) emfDue() bool {
	oldest := b.EMF.Oldest()
	return !oldest.IsZero() && !b.Clock.Now().Before(oldest.Add(ReportFlushAge))
}

// flush writes the EMF records and the run-report deltas, bounded by
// timeout past ctx's cancellation.
func (b *Base) flush(ctx context.Context, timeout time.Duration) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := b.EMF.Flush(fctx); err != nil {
		b.Log.WarnContext(ctx, "per-job metrics: jobs not placed, counted as other", "err", err)
	}
	if err := b.Reports.Flush(fctx); err != nil {
		b.Log.WarnContext(ctx, "report counters not flushed; kept for the next flush", "err", err)
	}
}

// QueueName is the last path segment of an SQS queue URL, which is also the
// last segment of the queue's ARN (how an SQS record names its source).
func QueueName(urlOrARN string) string {
	urlOrARN = strings.TrimRight(urlOrARN, "/")
	if i := strings.LastIndexAny(urlOrARN, "/:"); i >= 0 {
		return urlOrARN[i+1:]
	}
	return urlOrARN
}

// ReceiveCount is how many times SQS has delivered r, this delivery
// included (1 when the attribute is missing).
func ReceiveCount(r events.SQSMessage) int {
	n, _ := strconv.Atoi(r.Attributes["ApproximateReceiveCount"])
	return max(n, 1)
}

// KeepUnread decides about an SQS record that did not decode (err), for
// every function an event source mapping feeds: one of a format newer
// than this code reads (fire.VersionError: written by a newer version,
// read during a rollback or a staggered deploy) is kept — the caller
// reports it as a batch item failure, so it stays in the queue and, after
// the queue's receive limit, waits in the dead-letter queue to be
// redriven — and never acknowledged unread; one that is no message at
// all can never be read by any version and is dropped. Either way the log
// says so, naming what (e.g. "ring: bucket").
func (b *Base) KeepUnread(ctx context.Context, what string, r events.SQSMessage, err error) bool {
	var verr *fire.VersionError
	if errors.As(err, &verr) {
		b.Log.ErrorContext(ctx, what+" of a newer format left in the queue; deploy the version that wrote it",
			"messageId", r.MessageId, "version", verr.Version, "reads", verr.Newest, "receives", ReceiveCount(r))
		return true
	}
	b.Log.ErrorContext(ctx, what+" malformed, dropped", "messageId", r.MessageId, "err", err)
	return false
}

// defaultOwner names this execution environment: Lambda's log stream is
// unique per environment, and the random suffix covers everything else.
func defaultOwner() string {
	if s := os.Getenv("AWS_LAMBDA_LOG_STREAM_NAME"); s != "" {
		return s + "/" + RandomHex(4)
	}
	host, _ := os.Hostname()
	return host + "/" + RandomHex(4)
}

// RandomHex is n random bytes in hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}
