// Package awsconfig is the single source of truth for how the five Lambda
// functions are deployed: their names, the environment variables each one
// reads, and the AWS actions each one may call. The Lambda mains read their
// configuration through it, and the infra test checks the SAM template and
// the Terraform against it, so code and infrastructure cannot drift apart.
package awsconfig

import "slices"

// Environment variables. Every function reads XJOB_TABLE_PREFIX and XJOB_SHARDS.
const (
	EnvTablePrefix     = "XJOB_TABLE_PREFIX"            // DynamoDB table name prefix (dynamostore.TablesWithPrefix)
	EnvShards          = "XJOB_SHARDS"                  // scan shard count; must never change after the first job
	EnvRingQueueURL    = "XJOB_RING_QUEUE_URL"          // SQS ring queue
	EnvDispatchFastURL = "XJOB_DISPATCH_FAST_QUEUE_URL" // SQS fast dispatch lane
	EnvDispatchSlowURL = "XJOB_DISPATCH_SLOW_QUEUE_URL" // SQS slow dispatch lane
	EnvAccessToken     = "XJOB_ACCESS_TOKEN"            // xxl-job access token (executor ⇄ admin)
	EnvAdminToken      = "XJOB_ADMIN_TOKEN"             // bearer token of the /v1 admin API
	EnvAlarmTopicARN   = "XJOB_ALARM_TOPIC_ARN"         // SNS topic for final-failure alarms
	EnvLogLevel        = "XJOB_LOG_LEVEL"               // debug|info|warn|error (optional, default info)
	EnvRetryDelay      = "XJOB_RETRY_DELAY"             // wait before a failure's retry, a Go duration (optional, default 5s)
	EnvRetryBackoff    = "XJOB_RETRY_BACKOFF"           // retry delay multiplier per retry made, 1-10 (optional, default 1)
	// EnvAnyTriggerAddress=true lets a manual trigger's address override
	// name any host (optional; default: only the group's own executors).
	EnvAnyTriggerAddress = "XJOB_ALLOW_ANY_TRIGGER_ADDRESS"
	// EnvStartDeclaredJobs=true starts the jobs executors declare when they
	// are created (optional; default: created stopped).
	EnvStartDeclaredJobs = "XJOB_START_DECLARED_JOBS"
	// EnvScanAdvance is how far ahead the scan plans a due job's fires, a
	// Go duration from the 150 s horizon to 14m (optional, default 14m).
	EnvScanAdvance = "XJOB_SCAN_ADVANCE"
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
	// Consumes lists the queues (by env var of their URL) the function is
	// fed from by an SQS event source mapping.
	Consumes []string
	// ReservedConcurrency, when > 0, is the function's reserved concurrency
	// in the templates: a ceiling for functions an EventBridge rule
	// invokes, so a backlog of scheduled events can never run a crowd.
	ReservedConcurrency int
	// NoAsyncRetries says the templates turn Lambda's asynchronous retries
	// off (MaximumRetryAttempts 0, events older than a minute dropped): a
	// failed or throttled scheduled run is simply superseded by the next
	// minute's, instead of running late and overlapping it.
	NoAsyncRetries bool
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
	"sns:Publish",     // not exercised: alarm of a failed trigger (executor unreachable)
	"sqs:SendMessage", // retry task of a failed trigger; the ring's hand-off to the lanes (slow lane, and fast-lane tasks it cannot finish)
}

// Functions lists the five functions. Actions are what each function's
// code calls, as measured by the emulated-AWS end-to-end test
// (internal/app/lambdaapp, which fails if a function calls an action not listed
// here), plus the actions of code paths that test does not reach, each
// marked "not exercised" with the path that needs it. SQS batch calls are
// authorised by their single-message actions (SendMessageBatch needs
// sqs:SendMessage, DeleteMessageBatch sqs:DeleteMessage).
var Functions = []Function{
	{Name: "scan",
		Env:         []string{EnvTablePrefix, EnvShards, EnvRingQueueURL, EnvDispatchFastURL, EnvDispatchSlowURL},
		OptionalEnv: []string{EnvLogLevel, EnvScanAdvance},
		Actions: []string{
			"dynamodb:GetItem",    // not exercised: consistent read after a lost conditional write (job advance, lease)
			"dynamodb:Query",      // due index; leases
			"dynamodb:UpdateItem", // job advance; lease acquire/renew/release
			"sqs:SendMessage",     // ring buckets; late fires to the dispatch lanes
		},
		// Consecutive minutes' invocations overlap by the lease hand-over.
		ReservedConcurrency: 2, NoAsyncRetries: true},
	// The ring dispatches its buckets' fast lane in process (the same
	// dispatcher as the dispatch function), so it holds the dispatcher's
	// variables and actions too; the slow lane and what it cannot finish
	// go to the lane queues.
	{Name: "ring",
		Env:         []string{EnvTablePrefix, EnvShards, EnvRingQueueURL, EnvDispatchFastURL, EnvDispatchSlowURL, EnvAccessToken, EnvAlarmTopicARN},
		OptionalEnv: []string{EnvLogLevel, EnvRetryDelay, EnvRetryBackoff},
		// The retry delay of a bucket whose hand-off failed is a
		// ChangeMessageVisibility on the ring queue: the consume grant.
		Actions:  dispatcherActions,
		Consumes: []string{EnvRingQueueURL}},
	{Name: "dispatch",
		Env:         []string{EnvTablePrefix, EnvShards, EnvDispatchFastURL, EnvDispatchSlowURL, EnvAccessToken, EnvAlarmTopicARN},
		OptionalEnv: []string{EnvLogLevel, EnvRetryDelay, EnvRetryBackoff, EnvAnyTriggerAddress},
		Actions: slices.Concat(dispatcherActions, []string{
			"sqs:ChangeMessageVisibility", // not exercised: retry delay of a task in flight elsewhere or of a store failure
		}),
		Consumes: []string{EnvDispatchFastURL, EnvDispatchSlowURL}},
	{Name: "callback",
		Env:         []string{EnvTablePrefix, EnvShards, EnvDispatchFastURL, EnvDispatchSlowURL, EnvAccessToken, EnvAlarmTopicARN},
		OptionalEnv: []string{EnvLogLevel, EnvRetryDelay, EnvRetryBackoff},
		Actions: []string{
			"dynamodb:BatchGetItem",   // a callback request's log pages and jobs (LogGetMany, JobGetMany)
			"dynamodb:BatchWriteItem", // failed-list entries of failed results
			"dynamodb:GetItem",        // log pages before a change
			"dynamodb:PutItem",        // log pages: first result wins; alarm status
			"dynamodb:UpdateItem",     // report counters
			"sns:Publish",             // alarm of a failed result
			"sqs:SendMessage",         // not exercised: retry and child-job tasks
		}},
	{Name: "registry",
		Env:         []string{EnvTablePrefix, EnvShards, EnvRingQueueURL, EnvDispatchFastURL, EnvDispatchSlowURL, EnvAccessToken, EnvAdminToken, EnvAlarmTopicARN},
		OptionalEnv: []string{EnvLogLevel, EnvRetryDelay, EnvRetryBackoff, EnvAnyTriggerAddress, EnvStartDeclaredJobs},
		Actions: []string{
			// The admin API and maintenance reach every store operation; the
			// test exercises heartbeats, job/group creation and one maintenance run.
			"dynamodb:BatchGetItem",   // not exercised: job/log lists
			"dynamodb:BatchWriteItem", // not exercised: log purge
			"dynamodb:DeleteItem",     // not exercised: executor deregistration, job/group delete
			"dynamodb:GetItem",
			"dynamodb:PutItem", // job/group create
			"dynamodb:Query",
			"dynamodb:Scan", // small tables: registry (all appnames), reports, job list without a group
			"dynamodb:UpdateItem",
			"sns:Publish",     // not exercised: alarms from the lost-job check and the sweep
			"sqs:SendMessage", // admin push of a new job's fires within the scan horizon (ring); manual trigger, retries
		},
		// The ceiling covers the admin API and heartbeats too (a few ms
		// each; 10 serve thousands of executors beating every 30 s).
		ReservedConcurrency: 10, NoAsyncRetries: true},
}
