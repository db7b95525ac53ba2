// Package awsconfig is the single source of truth for how the six Lambda
// functions are deployed: their names, the environment variables each one
// reads, the HTTP API routes and the function URL each one serves, and the
// AWS actions each one may call. The Lambda mains read their
// configuration through it, and the infra test checks the SAM template and
// the Terraform against it, so code and infrastructure cannot drift apart.
package awsconfig

import (
	"slices"
	"strings"

	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
)

// Environment variables. Every function reads XJOB_TABLE_PREFIX and XJOB_SHARDS,
// and XJOB_LOG_PAGES when set (dynamostore.Options.LogPages: a multiple of
// XJOB_SHARDS when that divides 16, recorded in the layout item like it).
const (
	EnvTablePrefix     = "XJOB_TABLE_PREFIX"            // DynamoDB table name prefix (dynamostore.TablesWithPrefix)
	EnvShards          = "XJOB_SHARDS"                  // scan shard count; must never change after the first job
	EnvLogPages        = "XJOB_LOG_PAGES"               // trigger log pages a fire second has, 1/2/4/8/16 (optional, default 16); must never change after the first job
	EnvRingQueueURL    = "XJOB_RING_QUEUE_URL"          // SQS ring queue
	EnvDispatchFastURL = "XJOB_DISPATCH_FAST_QUEUE_URL" // SQS fast dispatch lane
	EnvDispatchSlowURL = "XJOB_DISPATCH_SLOW_QUEUE_URL" // SQS slow dispatch lane
	// EnvDispatchFunction names the dispatch function (name or ARN): when
	// set, the lanes are asynchronous invocations of it (package
	// lambdaqueue) and the lane queue URLs are not read; tasks due later
	// wait in the ring queue (EnvRingQueueURL, which every sender then
	// needs).
	EnvDispatchFunction = "XJOB_DISPATCH_FUNCTION"
	// The tokens are SSM Parameter Store SecureString parameters: the
	// functions get their names, never their values (package secrets).
	EnvAccessTokenParam = "XJOB_ACCESS_TOKEN_PARAM" // xxl-job access token (executor ⇄ admin), one per line during a rotation
	EnvAdminTokenParam  = "XJOB_ADMIN_TOKEN_PARAM"  // bearer token of the /v1 admin API, likewise
	EnvSessionKeyParam  = "XJOB_SESSION_KEY_PARAM"  // the secret console sessions are signed with
	EnvSecretsRefresh   = "XJOB_SECRETS_REFRESH"    // how often they are read again, a Go duration 1s-1h (optional, default 5m)
	// EnvAccessToken and EnvAdminToken carry the values themselves, in
	// place of the parameters: for tests and the emulated stack only, as
	// anyone allowed to read a function's configuration reads them.
	EnvAccessToken   = "XJOB_ACCESS_TOKEN"
	EnvAdminToken    = "XJOB_ADMIN_TOKEN"
	EnvAlarmTopicARN = "XJOB_ALARM_TOPIC_ARN" // SNS topic for final-failure alarms
	// EnvResultsQueueURL is the SQS queue executor results are recorded
	// in on arrival (callback) and applied from in batches (dispatch).
	// Optional: without it the callback function writes the logs itself.
	EnvResultsQueueURL = "XJOB_RESULTS_QUEUE_URL"
	EnvLogLevel        = "XJOB_LOG_LEVEL"     // debug|info|warn|error (optional, default info)
	EnvRetryDelay      = "XJOB_RETRY_DELAY"   // wait before a failure's retry, a Go duration (optional, default 5s)
	EnvRetryBackoff    = "XJOB_RETRY_BACKOFF" // retry delay multiplier per retry made, 1-10 (optional, default 1)
	// EnvAnyTriggerAddress=true lets a manual trigger's address override
	// name any host (optional; default: only the group's own executors).
	EnvAnyTriggerAddress = "XJOB_ALLOW_ANY_TRIGGER_ADDRESS"
	// EnvStartDeclaredJobs=true starts the jobs executors declare when they
	// are created (optional; default: created stopped).
	EnvStartDeclaredJobs = "XJOB_START_DECLARED_JOBS"
	// EnvScanAdvance is how far ahead the scan plans a due job's fires, a
	// Go duration from the 150 s horizon to 14m (optional, default 14m).
	EnvScanAdvance = "XJOB_SCAN_ADVANCE"
	// EnvAllowCIDRs and EnvDenyCIDRs are the operator's executor address
	// ranges (package egress), comma-separated CIDRs matching
	// CIDRListPattern (optional, default none): Deny wins, Allow overrides
	// the built-in refusals. Loopback is refused on AWS unless allowed
	// here (the emulated stack, whose executors run on loopback, does).
	EnvAllowCIDRs = "XJOB_ALLOW_CIDRS"
	EnvDenyCIDRs  = "XJOB_DENY_CIDRS"
	// EnvGluePolicy is who creates and edits GLUE jobs: admins (default),
	// everyone (xxl-job's behaviour) or off (optional; package auth).
	EnvGluePolicy = "XJOB_GLUE_POLICY"
	// EnvWebURL is the web function's base address (the HTTP API's):
	// executors know one admin address, the executor API's function URL,
	// and the xjob SDK sends its job declarations there; the callback
	// function forwards them to this address (optional: without it they
	// are answered 404, which the SDK logs as an admin without them).
	EnvWebURL = "XJOB_WEB_URL"
	// EnvMetricsPerJob, from 1 to MaxMetricsPerJob, adds per-job result
	// metrics for that many jobs of the deployment, the others as "other"
	// (optional, default 0: none), as local mode's XJOB_METRICS_PER_JOB.
	EnvMetricsPerJob = "XJOB_METRICS_PER_JOB"
	// EnvCustomMetrics=true writes the pipeline's counters (Triggers,
	// Results, the scan's Fires and ScanJobs, the ring's LatenessMaxMs,
	// …) as CloudWatch custom metrics, embedded-metric-format records
	// that CloudWatch bills $0.30 a metric and month (optional; default
	// false: the same records are written as plain JSON log lines, which
	// CloudWatch Logs Insights reads and no template alarm needs). Every
	// function reads it; the per-job metrics are their own opt-in
	// (EnvMetricsPerJob).
	EnvCustomMetrics = "XJOB_CUSTOM_METRICS"
	// EnvRingLead is how long before its second a ring bucket is visible
	// at the latest, whole milliseconds matching RingLeadPattern
	// (optional; default wiring.DefaultRingLead): the scan's, and the web
	// function's admin pushes. The ring function is billed while it waits
	// that long for the instant; the lead is its margin for SQS's delay
	// and the mapping's delivery.
	EnvRingLead = "XJOB_RING_LEAD"
	// EnvLogRetentionDays is how many days trigger logs are kept, counted
	// from their trigger time, a whole number matching
	// LogRetentionDaysPattern (optional, default 30), local mode's
	// XJOB_LOG_RETENTION_DAYS: every function that reads or writes logs
	// reads it (dynamostore.Options.LogTTL, the logs' TTL and what readers
	// leave out).
	EnvLogRetentionDays = "XJOB_LOG_RETENTION_DAYS"
	// EnvAWSTargetARNs lists the ARNs AWS jobs may call (glue type AWS:
	// Lambda functions, SQS queues, SNS topics, EventBridge buses, Step
	// Functions state machines), comma-separated, matching
	// TargetARNListPattern (optional, default none: AWS jobs are refused
	// at save). The templates grant TargetActions on exactly these ARNs,
	// to the functions with CallsTargets, and nothing when it is empty,
	// local mode's --aws-target-arns.
	EnvAWSTargetARNs = "XJOB_AWS_TARGET_ARNS"
	// EnvTableBillingMode is the stack's TableBillingMode (one of
	// TableBillingModes): PROVISIONED runs the scan function's capacity
	// keeper on SteadyTables, sizing capacity between EnvTableCapacityMin
	// and EnvTableCapacityMax units at EnvTableTargetUtilization percent,
	// as the stack's auto scaling does.
	EnvTableBillingMode       = "XJOB_TABLE_BILLING_MODE"
	EnvTableCapacityMin       = "XJOB_TABLE_CAPACITY_MIN"
	EnvTableCapacityMax       = "XJOB_TABLE_CAPACITY_MAX"
	EnvTableTargetUtilization = "XJOB_TABLE_TARGET_UTILIZATION"
)

// TargetActions are what AWS jobs call (package
// internal/adapter/awstarget: one call per service, and an SQS queue's
// URL looked up from its ARN once per environment): the templates grant
// them on the listed ARNs only, where an action of another service's ARN
// grants nothing.
var TargetActions = []string{"events:PutEvents", "lambda:InvokeFunction", "sns:Publish", "sqs:GetQueueUrl", "sqs:SendMessage", "states:StartExecution"}

// TargetARNListPattern is what EnvAWSTargetARNs must match, whole: a
// comma-separated list (no spaces) of ARNs of the five services, in the
// aws partitions, with a region, a 12-digit account and a resource of
// the characters their names take; never a wildcard, which would make
// the templates' grant wider than the list the functions check. The
// functions check each ARN further (target.ParseAllowList), and the
// templates carry it as the parameter's pattern.
var TargetARNListPattern = "^(" + targetARN + "(," + targetARN + ")*)?$"

// targetARN is one ARN: each service's resource form (target.ParseARN's).
const (
	targetARN = "arn:aws(-[a-z]+)*:(lambda" + arnScope + "function:[A-Za-z0-9_-]+(:[A-Za-z0-9_$-]+)?" +
		"|(sqs|sns)" + arnScope + "[A-Za-z0-9_-]+([.]fifo)?" +
		"|events" + arnScope + "event-bus/[A-Za-z0-9_./-]+" +
		"|states" + arnScope + "stateMachine:[A-Za-z0-9_-]+)"
	arnScope = ":[a-z]{2}(-[a-z]+)+-[0-9]:[0-9]{12}:" // region and account
)

// The range of EnvLogRetentionDays: xxl-job's minimum
// (xxl.job.logretentiondays, as local mode's), and ten years. Local mode's
// -1 (keep logs) has no AWS equivalent: the DynamoDB store retires logs
// by TTL only, and nothing would purge them.
const (
	MinLogRetentionDays     = 7
	MaxLogRetentionDays     = 3650
	DefaultLogRetentionDays = 30
)

// LogRetentionDaysPattern is what EnvLogRetentionDays must match, whole:
// a whole number from MinLogRetentionDays to MaxLogRetentionDays without
// sign or leading zeros. The templates carry it as the parameter's
// pattern.
const LogRetentionDaysPattern = "^([7-9]|[1-9][0-9]{1,2}|[12][0-9]{3}|3[0-5][0-9]{2}|36[0-4][0-9]|3650)$"

// RingLeadPattern is what EnvRingLead must match, whole: 50 to 1000
// whole milliseconds ("100ms"). The templates carry it as the
// parameter's pattern.
const RingLeadPattern = "^([5-9][0-9]|[1-9][0-9]{2}|1000)ms$"

// MaxMetricsPerJob bounds EnvMetricsPerJob on AWS. Every per-job series
// is a CloudWatch custom metric billed monthly ($0.30): a job with its
// own metric costs up to two (JobResults, and JobResultFailures in a month
// with failures) per function that records its results (callback and
// dispatch, registry when the maintenance finishes a run), $1.80 a month
// at most, and "other" as much again. 25 jobs bound that to (25 + 1) × 2
// × 3 = 156 metrics, $46.80 a month; local mode's Prometheus series cost
// nothing and keep their own, higher bound.
const MaxMetricsPerJob = 25

// Lambda's own log lines. Every function logs in Lambda's JSON format,
// which lets Lambda filter its platform lines by level: at SystemLogLevel
// WARN it drops the START, END and REPORT lines it otherwise writes for
// every invocation (about PlatformLogBytes), which at one callback
// invocation per result are most of what CloudWatch Logs would ingest.
// Failed and timed-out invocations still show in the AWS/Lambda metrics
// (Errors, Throttles, Duration) the templates' alarms watch. The
// functions' own lines are JSON objects with a "level" key (slog), and
// their embedded-metric records JSON objects without one, which Lambda
// reads as INFO; ApplicationLogLevel is DEBUG so that XJOB_LOG_LEVEL
// alone decides what the functions write.
const (
	LogFormat           = "JSON"
	SystemLogLevel      = "WARN" // the templates' default (LambdaSystemLogLevel, lambda_system_log_level)
	ApplicationLogLevel = "DEBUG"
	// PlatformLogBytes is what Lambda writes per invocation at system
	// log level INFO: its START, END and REPORT lines.
	PlatformLogBytes = 350
)

// SystemLogLevels are the values the templates accept for the system
// log level, most verbose first.
var SystemLogLevels = []string{"DEBUG", "INFO", "WARN"}

// PlatformLogBytesAt is what Lambda writes per invocation at system log
// level level: nothing at WARN, PlatformLogBytes otherwise.
func PlatformLogBytesAt(level string) int {
	if level == "WARN" {
		return 0
	}
	return PlatformLogBytes
}

// GluePolicies are the values EnvGluePolicy takes (auth.ParseGluePolicy;
// listed here so that the functions that do not serve the console need
// not link package auth to check it).
var GluePolicies = []string{"admins", "everyone", "off"}

// CIDRListPattern is what EnvAllowCIDRs and EnvDenyCIDRs must match,
// whole: a comma-separated list (no spaces) of IPv4 or IPv6 addresses,
// each with an optional prefix length. The functions check it, and the
// templates carry it as the parameters' pattern, so a value that would
// stop the functions is refused at deploy time instead.
var CIDRListPattern = "^(" + cidr + "(," + cidr + ")*)?$"

const (
	octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
	ipv4  = octet + "([.]" + octet + "){3}(/(3[0-2]|[12]?[0-9]))?"
	h16   = "[0-9a-fA-F]{1,4}"
	ipv6  = "(" + "(" + h16 + ":){7}" + h16 +
		"|(" + h16 + ":){1,7}:" +
		"|(" + h16 + ":){1,6}:" + h16 +
		"|(" + h16 + ":){1,5}(:" + h16 + "){1,2}" +
		"|(" + h16 + ":){1,4}(:" + h16 + "){1,3}" +
		"|(" + h16 + ":){1,3}(:" + h16 + "){1,4}" +
		"|(" + h16 + ":){1,2}(:" + h16 + "){1,5}" +
		"|" + h16 + ":(:" + h16 + "){1,6}" +
		"|:((:" + h16 + "){1,7}|:)" +
		")(/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))?"
	cidr = "(" + ipv4 + "|" + ipv6 + ")"
)

// Lookup returns the function named name from Functions.
func Lookup(name string) (Function, bool) {
	for _, f := range Functions {
		if f.Name == name {
			return f, true
		}
	}
	return Function{}, false
}

// Function describes one Lambda function.
type Function struct {
	// Name is the function's directory under functions/ and its logical
	// name in the templates (e.g. "scan" → functions/scan, ScanFunction).
	Name string
	// Env lists the environment variables the function requires.
	Env []string
	// OptionalEnv lists variables it reads when set.
	OptionalEnv []string
	// Actions lists the IAM actions the function's own code calls
	// (event-source-mapping permissions are added by the templates per
	// queue the function consumes).
	Actions []string
	// Tables lists the DynamoDB tables (dynamostore names, unprefixed) the
	// function's code reads or writes: its grants name those tables only,
	// so the internet-facing callback cannot touch console users.
	Tables []string
	// TableActions narrows DynamoDB actions that the function calls on
	// some of its Tables only: action → those tables. An action not
	// listed here is granted on every table of Tables. The internet-facing
	// callback function deletes, scans and batch-writes only where its
	// code does.
	TableActions map[string][]string
	// Consumes lists the queues (by env var of their URL) the function is
	// fed from by an SQS event source mapping.
	Consumes []string
	// ReservedConcurrency, when > 0, is the function's reserved concurrency
	// in the templates: a ceiling for functions an EventBridge rule
	// invokes, so a backlog of scheduled events can never run a crowd.
	ReservedConcurrency int
	// Routes are the HTTP API route keys API Gateway sends to the function
	// ("GET /v1/jobs"); "$default" takes every request no other route
	// matches.
	Routes []string
	// URLRoutes, when set, give the function a Lambda function URL
	// (AuthType NONE) and list what it serves there ("POST /api/callback").
	// A function URL takes every path and method, so the function itself
	// answers any other request 404 and checks the access token on these;
	// one function has it: the executors' admin address.
	URLRoutes []string
	// ChecksLayout says the function records the table layout and shard
	// count at start, and refuses tables of another layout or count
	// (wiring.CheckLayout): the functions whose work depends on the shard
	// count, the scan (which shards it reads) and web (which shard a new
	// job gets).
	ChecksLayout bool
	// CallsExecutors says the function connects to executors (dispatch,
	// log views, kills): it is the one that runs in the deployment's VPC
	// when one is given, with the network-interface permissions that
	// takes (and no other function gets them).
	CallsExecutors bool
	// NoAsyncRetries says the templates turn Lambda's asynchronous retries
	// off (MaximumRetryAttempts 0, events older than a minute dropped): a
	// failed or throttled scheduled run is simply superseded by the next
	// minute's, instead of running late and overlapping it. Such a failure
	// goes to the alarm topic (the function's asynchronous failure
	// destination, which its role may publish to).
	NoAsyncRetries bool
	// CallsTargets says the function makes the calls of HTTP and AWS jobs
	// (the dispatchers, ring and dispatch, and web's test call): it reads
	// EnvAWSTargetARNs and, when that lists any, is granted TargetActions
	// on them.
	CallsTargets bool
}

// dispatcherActions are what a dispatch.Dispatcher's code calls: the
// dispatch function's, and the ring function's since it dispatches its
// buckets' fast lane itself.
var dispatcherActions = []string{
	"dynamodb:BatchGetItem",   // the jobs of a batch (DispatchMany; the ring's re-check of its bucket's jobs)
	"dynamodb:BatchWriteItem", // not exercised: failed-list entries of failed triggers
	"dynamodb:GetItem",        // log pages before a change
	"dynamodb:PutItem",        // log pages: claims, executors' replies
	"dynamodb:Query",          // live executors of an automatic group
	"dynamodb:UpdateItem",
	"sns:Publish",           // not exercised: alarm of a failed trigger (executor unreachable)
	"sqs:SendMessage",       // retry task of a failed trigger; the ring's hand-off to the lanes (slow lane, and fast-lane tasks it cannot finish)
	"ssm:GetParameters",     // its secrets, at init and every refresh
	"lambda:InvokeFunction", // the dispatch lanes (lambdaqueue): the ring's hand-offs; retries and child jobs due now
}

// Functions lists the six functions. Actions are what each function's
// code calls, as measured by the emulated-AWS end-to-end test
// (internal/app/lambdaapp, which fails if a function calls an action not listed
// here), plus the actions of code paths that test does not reach, each
// marked "not exercised" with the path that needs it. SQS batch calls are
// authorised by their single-message actions (SendMessageBatch needs
// sqs:SendMessage, DeleteMessageBatch sqs:DeleteMessage).
var Functions = []Function{
	{Name: "scan",
		Env: []string{EnvTablePrefix, EnvShards, EnvRingQueueURL},
		OptionalEnv: []string{EnvLogLevel, EnvLogPages, EnvCustomMetrics, EnvDispatchFunction, EnvDispatchFastURL, EnvDispatchSlowURL, EnvScanAdvance, EnvRingLead,
			EnvTableBillingMode, EnvTableCapacityMin, EnvTableCapacityMax, EnvTableTargetUtilization},
		Tables: []string{dynamostore.TableJobs, dynamostore.TableLeases, dynamostore.TableLogs},
		Actions: []string{
			"dynamodb:GetItem",       // not exercised: consistent read after a lost conditional write (job advance, lease)
			"dynamodb:Query",         // due index; leases
			"dynamodb:UpdateItem",    // job advance; lease acquire/renew/release
			"dynamodb:DescribeTable", // not exercised (the emulated stack is on demand): the capacity keeper, TableBillingMode PROVISIONED
			"dynamodb:UpdateTable",   // not exercised: the keeper's switches between provisioned and on demand
			"sqs:SendMessage",        // ring buckets; late fires to the dispatch lanes
			"lambda:InvokeFunction",  // the dispatch lanes (lambdaqueue): late fires
		},
		// The capacity keeper reads and switches the steady tables only;
		// the scan's data stays the jobs and leases.
		TableActions: map[string][]string{
			"dynamodb:GetItem": {dynamostore.TableJobs, dynamostore.TableLeases}, "dynamodb:Query": {dynamostore.TableJobs, dynamostore.TableLeases},
			"dynamodb:UpdateItem":    {dynamostore.TableJobs, dynamostore.TableLeases},
			"dynamodb:DescribeTable": SteadyTables, "dynamodb:UpdateTable": SteadyTables,
		},
		// Consecutive minutes' invocations overlap by the lease hand-over.
		ReservedConcurrency: 2, NoAsyncRetries: true, ChecksLayout: true},
	// The ring dispatches its buckets' fast lane in process (the same
	// dispatcher as the dispatch function), so it holds the dispatcher's
	// variables and actions too; the slow lane and what it cannot finish
	// go to the lane queues.
	{Name: "ring",
		// The session key: HTTP jobs' secret headers are sealed with a
		// key derived from it (the web function's), and opened here.
		Env: []string{EnvTablePrefix, EnvShards, EnvRingQueueURL, EnvAccessTokenParam, EnvSessionKeyParam,
			EnvAlarmTopicARN},
		OptionalEnv: []string{EnvLogLevel, EnvLogPages, EnvCustomMetrics, EnvDispatchFunction, EnvDispatchFastURL, EnvDispatchSlowURL, EnvRetryDelay, EnvRetryBackoff, EnvSecretsRefresh, EnvAccessToken, EnvAdminToken, EnvAllowCIDRs, EnvDenyCIDRs,
			EnvLogRetentionDays, EnvAWSTargetARNs},
		CallsExecutors: true, CallsTargets: true,
		// The retry delay of a bucket whose hand-off failed is a
		// ChangeMessageVisibility on the ring queue: the consume grant.
		// The dispatcher's: jobs, their groups and live executors, log pages,
		// report counters; and leases: FIRE_ONCE_NOW's misfire episodes.
		Tables:   []string{dynamostore.TableJobs, dynamostore.TableGroups, dynamostore.TableLogs, dynamostore.TableRegistry, dynamostore.TableReports, dynamostore.TableLeases},
		Actions:  dispatcherActions,
		Consumes: []string{EnvRingQueueURL}},
	{Name: "dispatch",
		// The session key, as the ring's: HTTP jobs' secret headers.
		Env: []string{EnvTablePrefix, EnvShards, EnvAccessTokenParam, EnvSessionKeyParam, EnvAlarmTopicARN},
		OptionalEnv: []string{EnvLogLevel, EnvLogPages, EnvCustomMetrics, EnvDispatchFunction, EnvDispatchFastURL, EnvDispatchSlowURL, EnvRingQueueURL, EnvRetryDelay, EnvRetryBackoff, EnvAnyTriggerAddress, EnvSecretsRefresh, EnvAccessToken, EnvAdminToken,
			EnvResultsQueueURL, EnvAllowCIDRs, EnvDenyCIDRs, EnvMetricsPerJob, EnvLogRetentionDays, EnvAWSTargetARNs},
		CallsExecutors: true, CallsTargets: true,
		// Counters: the jobs with per-job metrics (results it applies).
		Tables: []string{dynamostore.TableJobs, dynamostore.TableGroups, dynamostore.TableLogs, dynamostore.TableRegistry, dynamostore.TableReports,
			dynamostore.TableCounters},
		Actions: slices.Concat(dispatcherActions, []string{
			"sqs:ChangeMessageVisibility", // not exercised: retry delay of a task in flight elsewhere or of a store failure
			"dynamodb:DeleteItem",         // not exercised: a one-time job deleted after its run, when it applies results (callback.afterCompletion)
		}),
		// The results queue: executor results recorded by the callback
		// function, applied in batches (dispatchfn.Function.HandleResults).
		Consumes: []string{EnvDispatchFastURL, EnvDispatchSlowURL, EnvResultsQueueURL}},
	// The callback function is the executor API: everything an xxl-job
	// executor calls at its one admin address (results and heartbeats),
	// behind a function URL, so that sign-ins and admin calls (the web
	// function's) cannot delay them and no API Gateway request is paid
	// per result.
	{Name: "callback",
		Env: []string{EnvTablePrefix, EnvShards, EnvAccessTokenParam, EnvAlarmTopicARN},
		// The address rule: registrations of addresses the dispatch would
		// refuse to dial are refused. The web address: where job
		// declarations are forwarded.
		OptionalEnv: []string{EnvLogLevel, EnvLogPages, EnvCustomMetrics, EnvDispatchFunction, EnvDispatchFastURL, EnvDispatchSlowURL, EnvRingQueueURL, EnvRetryDelay, EnvRetryBackoff, EnvSecretsRefresh, EnvAccessToken, EnvResultsQueueURL,
			EnvAllowCIDRs, EnvDenyCIDRs, EnvWebURL, EnvMetricsPerJob, EnvLogRetentionDays},
		// Results: log pages, their jobs (retry, children), report counters;
		// heartbeats: the registry, and the groups when a new app name
		// registers; counters: the jobs with per-job metrics. Never users.
		Tables: []string{dynamostore.TableJobs, dynamostore.TableLogs, dynamostore.TableReports, dynamostore.TableRegistry, dynamostore.TableGroups,
			dynamostore.TableCounters},
		TableActions: map[string][]string{
			"dynamodb:BatchWriteItem": {dynamostore.TableLogs},                              // failed-list entries
			"dynamodb:DeleteItem":     {dynamostore.TableJobs, dynamostore.TableRegistry},   // a one-time job (and its GLUE item); a deregistration
			"dynamodb:Scan":           {dynamostore.TableRegistry, dynamostore.TableGroups}, // app names, groups
		},
		Actions: []string{
			"dynamodb:BatchGetItem",   // a callback request's log pages and jobs (LogGetMany, JobGetMany)
			"dynamodb:BatchWriteItem", // failed-list entries of failed results
			"dynamodb:DeleteItem",     // not exercised: deregistration (registryRemove); a one-time job deleted after its run (callback.afterCompletion)
			"dynamodb:GetItem",        // log pages before a change
			"dynamodb:PutItem",        // log pages: first result wins; alarm status
			"dynamodb:Query",          // a heartbeat's app: its live executors
			"dynamodb:Scan",           // a new app name's first heartbeat: the app names and groups (small tables)
			"dynamodb:UpdateItem",     // report counters; heartbeats
			"sns:Publish",             // alarm of a failed result
			"sqs:SendMessage",         // results recorded on the results queue; retry and child-job tasks
			"ssm:GetParameters",       // its secrets, at init and every refresh
			"lambda:InvokeFunction",   // the dispatch lanes (lambdaqueue): retry and child-job tasks due now
		},
		URLRoutes: []string{"POST /api/callback", "POST /api/registry", "POST /api/registryRemove",
			"POST /xxl-job-admin/api/callback", "POST /xxl-job-admin/api/registry", "POST /xxl-job-admin/api/registryRemove"},
		// Results and heartbeats of every executor in a burst: a function
		// URL has no route throttling, so this ceiling is what keeps a
		// flood from taking the account's whole concurrency (beyond it
		// Lambda answers 429, and executors retry).
		ReservedConcurrency: 15},
	// The registry function runs the maintenance on its EventBridge rule;
	// it serves no HTTP (heartbeats are the callback function's).
	{Name: "registry",
		Env:         []string{EnvTablePrefix, EnvShards, EnvAlarmTopicARN},
		OptionalEnv: []string{EnvLogLevel, EnvLogPages, EnvCustomMetrics, EnvDispatchFunction, EnvDispatchFastURL, EnvDispatchSlowURL, EnvRingQueueURL, EnvRetryDelay, EnvRetryBackoff, EnvAllowCIDRs, EnvDenyCIDRs, EnvMetricsPerJob, EnvLogRetentionDays},
		// Group refresh and stale entries; the sweep and the lost-job check finish logs
		// (not exercised: their jobs and report counters, as the callback does).
		// Console and leases: the maintenance resumes a change set an apply
		// left half-written (upkeep.ResumeChanges).
		Tables: []string{dynamostore.TableRegistry, dynamostore.TableGroups, dynamostore.TableLogs, dynamostore.TableCounters, dynamostore.TableJobs, dynamostore.TableReports,
			dynamostore.TableConsole, dynamostore.TableLeases},
		Actions: []string{
			"dynamodb:BatchGetItem",   // not exercised: logs the sweep and the lost-job check finish
			"dynamodb:BatchWriteItem", // not exercised: failed-list entries of logs the sweep and the lost-job check fail
			"dynamodb:DeleteItem",     // not exercised: executor deregistration, stale entries
			"dynamodb:GetItem",
			"dynamodb:PutItem",
			"dynamodb:Query",
			"dynamodb:Scan", // small tables: registry (all appnames), groups
			"dynamodb:UpdateItem",
			"sns:Publish",           // not exercised: alarms from the lost-job check and the sweep
			"sqs:SendMessage",       // not exercised: retries the sweep sends to the lanes
			"lambda:InvokeFunction", // not exercised: the dispatch lanes (lambdaqueue), the sweep's retries due now
		},
		// Consecutive minutes' runs may overlap.
		ReservedConcurrency: 2, NoAsyncRetries: true},
	// The web function serves people and tools: the console, the /v1 admin
	// API, /metrics, /healthz and executors' job declarations.
	{Name: "web",
		Env: []string{EnvTablePrefix, EnvShards, EnvRingQueueURL,
			EnvAccessTokenParam, EnvAdminTokenParam, EnvSessionKeyParam, EnvAlarmTopicARN},
		OptionalEnv: []string{EnvLogLevel, EnvLogPages, EnvCustomMetrics, EnvRingLead, EnvDispatchFunction, EnvDispatchFastURL, EnvDispatchSlowURL, EnvRetryDelay, EnvRetryBackoff, EnvAnyTriggerAddress, EnvStartDeclaredJobs,
			EnvSecretsRefresh, EnvAccessToken, EnvAdminToken, EnvAllowCIDRs, EnvDenyCIDRs, EnvGluePolicy, EnvMetricsPerJob, EnvLogRetentionDays,
			EnvAWSTargetARNs},
		// Log views, kills and idle beats call executors; a target job's
		// test call calls its target, and saves check its ARN.
		CallsExecutors: true, CallsTargets: true,
		// Every table (log pages not exercised: log views, kill; leases: the layout item only).
		Tables: []string{dynamostore.TableJobs, dynamostore.TableGroups, dynamostore.TableLogs, dynamostore.TableRegistry, dynamostore.TableReports, dynamostore.TableCounters, dynamostore.TableConsole, dynamostore.TableLeases},
		Actions: []string{
			// The admin API reaches every store operation; the test exercises
			// job/group creation, users and the console.
			"dynamodb:BatchGetItem",   // not exercised: job/log lists
			"dynamodb:BatchWriteItem", // not exercised: log clear
			"dynamodb:DeleteItem",     // not exercised: job/group/user delete
			"dynamodb:GetItem",
			"dynamodb:PutItem", // job/group/user create
			"dynamodb:Query",
			"dynamodb:Scan", // small tables: registry, reports, users; the jobs table once per deployment (name claims backfill)
			"dynamodb:UpdateItem",
			"sns:Publish",           // not exercised: alarm of a manual trigger's failure
			"sqs:SendMessage",       // admin push of a new job's fires within the scan horizon (ring); manual trigger
			"ssm:GetParameters",     // its secrets, at init and every refresh
			"lambda:InvokeFunction", // the dispatch lanes (lambdaqueue): manual triggers
		},
		Routes:       []string{"$default"},
		ChecksLayout: true,
		// Sign-ins cost ≈ 0.2 s of CPU each: the ceiling bounds what a flood
		// of them costs, and it is the executor-facing functions' own
		// concurrency that keeps heartbeats and results flowing meanwhile.
		ReservedConcurrency: 5},
}

// SteadyTables are the tables the templates' TableBillingMode
// PROVISIONED puts on provisioned capacity under auto scaling (the
// others stay on demand), and the scan's capacity keeper
// (internal/scheduler/capacity) switches to on demand each while its
// load costs less so: the log pages, which every fire writes three times
// (the ring's claim, the executor's reply, the result), and the jobs,
// which every dispatch reads — at 70% utilisation a unit of capacity
// costs about 40% of the same load on demand. The jobs table with its
// three indexes pays at least 4 write and 4 read units provisioned
// (about $2.25 a month): W5's sparse load costs $1.26 a month on demand
// and the keeper leaves it there, W1's reads cost $254 a month on demand
// and are cheaper provisioned (`make cost`'s table load lines).
var SteadyTables = []string{dynamostore.TableJobs, dynamostore.TableLogs}

// TableBillingModes are the values TableBillingMode takes; the first is
// the default.
var TableBillingModes = []string{"PAY_PER_REQUEST", "PROVISIONED"}

// MinUnreservedConcurrency is what Lambda keeps of an account's
// concurrent executions unreserved: it refuses a reservation that would
// leave fewer.
const MinUnreservedConcurrency = 100

// ReservedTotal is what the templates reserve with ReservedConcurrency
// on: the sum of the functions' ReservedConcurrency. An account needs
// ReservedTotal + MinUnreservedConcurrency available for it (the
// deploy's quota check, infra/check-concurrency.sh); off, the default,
// a new account's quota takes the stack.
func ReservedTotal() int {
	n := 0
	for _, f := range Functions {
		n += f.ReservedConcurrency
	}
	return n
}

// ActionTables returns the tables of f.Tables that f may call DynamoDB
// action on: TableActions' when it lists the action, else all of them.
func (f Function) ActionTables(action string) []string {
	if ts, ok := f.TableActions[action]; ok {
		return ts
	}
	return f.Tables
}

// RouteFunction is the function the HTTP API sends a request for path to:
// the one with a route for it (method and exact path; API Gateway picks
// the most specific route, and ours have no variables), else the one with
// "$default".
func RouteFunction(method, path string) string {
	def := ""
	for _, f := range Functions {
		for _, r := range f.Routes {
			if r == "$default" {
				def = f.Name
				continue
			}
			m, p, _ := strings.Cut(r, " ")
			if p == path && (m == "ANY" || m == method) {
				return f.Name
			}
		}
	}
	return def
}

// URLFunction is the function with a function URL: the executor API.
func URLFunction() string {
	for _, f := range Functions {
		if len(f.URLRoutes) > 0 {
			return f.Name
		}
	}
	return ""
}

// SecretParams maps each secret's parameter variable to the variable that,
// set, makes it unnecessary (tests, the emulated stack): the token given
// directly; for the session key, the admin token stands in.
var SecretParams = map[string]string{
	EnvAccessTokenParam: EnvAccessToken,
	EnvAdminTokenParam:  EnvAdminToken,
	EnvSessionKeyParam:  EnvAdminToken,
}
