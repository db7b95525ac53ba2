// Package awsconfig is the single source of truth for how the five Lambda
// functions are deployed: their names, the environment variables each one
// reads, and the AWS actions each one may call. The Lambda mains read their
// configuration through it, and the infra test checks the SAM template and
// the Terraform against it, so code and infrastructure cannot drift apart.
package awsconfig

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
)

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
}

// Functions lists the five functions. Actions are filled from what each
// function's code calls (measured by the emulated-AWS end-to-end test's
// request counter).
var Functions = []Function{
	{Name: "scan",
		Env: []string{EnvTablePrefix, EnvShards, EnvRingQueueURL, EnvDispatchFastURL, EnvDispatchSlowURL}},
	{Name: "ring",
		Env:      []string{EnvTablePrefix, EnvShards, EnvRingQueueURL, EnvDispatchFastURL, EnvDispatchSlowURL},
		Consumes: []string{EnvRingQueueURL}},
	{Name: "dispatch",
		Env:      []string{EnvTablePrefix, EnvShards, EnvDispatchFastURL, EnvDispatchSlowURL, EnvAccessToken, EnvAlarmTopicARN},
		Consumes: []string{EnvDispatchFastURL, EnvDispatchSlowURL}},
	{Name: "callback",
		Env: []string{EnvTablePrefix, EnvShards, EnvDispatchFastURL, EnvDispatchSlowURL, EnvAccessToken, EnvAlarmTopicARN}},
	{Name: "registry",
		Env: []string{EnvTablePrefix, EnvShards, EnvDispatchFastURL, EnvDispatchSlowURL, EnvAccessToken, EnvAdminToken, EnvAlarmTopicARN}},
}
