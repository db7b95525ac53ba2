package xjob

// ScheduleType says how a job's next fire time is computed.
type ScheduleType string

// Schedule types, as xxl-job spells them (FIX_DELAY is commented out in xxl-job too).
const (
	ScheduleNone    ScheduleType = "NONE"
	ScheduleCron    ScheduleType = "CRON"
	ScheduleFixRate ScheduleType = "FIX_RATE"
	// ScheduleFixDelay fires ScheduleConf seconds after the previous run
	// of the job ended (PowerJob's FIX_DELAY): runs never overlap and never
	// bunch. Not an xxl-job type: an xxl-job import never produces it.
	ScheduleFixDelay ScheduleType = "FIX_DELAY"
	// ScheduleOnce fires once, at the RFC 3339 instant in ScheduleConf
	// (EventBridge Scheduler's at()); not an xxl-job type.
	ScheduleOnce ScheduleType = "ONCE"
)

// AfterCompletion says what becomes of a ONCE job once its single fire has
// a final result: success, or a failure with no retry left (EventBridge
// Scheduler's ActionAfterCompletion).
type AfterCompletion string

// After-completion actions.
const (
	// AfterKeep keeps the job, stopped (the scan stops it when it pushes
	// the fire), so it can be edited and started again.
	AfterKeep AfterCompletion = "KEEP"
	// AfterDelete deletes the job; its logs stay until retention purges them.
	AfterDelete AfterCompletion = "DELETE"
)

func (a AfterCompletion) valid() bool { return a == AfterKeep || a == AfterDelete }

// OrKeep returns a, or KEEP when a is empty: what stores read for a job
// written before the field existed.
func (a AfterCompletion) OrKeep() AfterCompletion {
	if a == "" {
		return AfterKeep
	}
	return a
}

// MisfireStrategy says what to do with a fire time found more than the
// misfire threshold in the past.
type MisfireStrategy string

// Misfire strategies.
const (
	MisfireDoNothing   MisfireStrategy = "DO_NOTHING"
	MisfireFireOnceNow MisfireStrategy = "FIRE_ONCE_NOW"
)

// RouteStrategy picks the executor address (or addresses) for a trigger.
type RouteStrategy string

// Route strategies, with xxl-job's algorithms (see package route).
const (
	RouteFirst               RouteStrategy = "FIRST"
	RouteLast                RouteStrategy = "LAST"
	RouteRound               RouteStrategy = "ROUND"
	RouteRandom              RouteStrategy = "RANDOM"
	RouteConsistentHash      RouteStrategy = "CONSISTENT_HASH"
	RouteLeastFrequentlyUsed RouteStrategy = "LEAST_FREQUENTLY_USED"
	RouteLeastRecentlyUsed   RouteStrategy = "LEAST_RECENTLY_USED"
	RouteFailover            RouteStrategy = "FAILOVER"
	RouteBusyover            RouteStrategy = "BUSYOVER"
	RouteShardingBroadcast   RouteStrategy = "SHARDING_BROADCAST"
)

// RouteStrategies lists every route strategy in xxl-job's order.
var RouteStrategies = []RouteStrategy{
	RouteFirst, RouteLast, RouteRound, RouteRandom, RouteConsistentHash,
	RouteLeastFrequentlyUsed, RouteLeastRecentlyUsed, RouteFailover, RouteBusyover,
	RouteShardingBroadcast,
}

// BlockStrategy tells the executor what to do with a trigger that arrives
// while the same job is running or queued there.
type BlockStrategy string

// Block strategies.
const (
	BlockSerialExecution BlockStrategy = "SERIAL_EXECUTION"
	BlockDiscardLater    BlockStrategy = "DISCARD_LATER"
	BlockCoverEarly      BlockStrategy = "COVER_EARLY"
)

// GlueType is the job's run mode: a named handler (BEAN) or source kept in
// the admin (GLUE_*), which the executor compiles or runs as a script.
type GlueType string

// Glue types (GLUE_PYTHON2 exists since xxl-job 3.2.0).
const (
	GlueBean       GlueType = "BEAN"
	GlueGroovy     GlueType = "GLUE_GROOVY"
	GlueShell      GlueType = "GLUE_SHELL"
	GluePython     GlueType = "GLUE_PYTHON"
	GluePython2    GlueType = "GLUE_PYTHON2"
	GluePHP        GlueType = "GLUE_PHP"
	GlueNodeJS     GlueType = "GLUE_NODEJS"
	GluePowerShell GlueType = "GLUE_POWERSHELL"
	// GlueHTTP is not an xxl-job type: the job calls an HTTP endpoint
	// from the scheduler itself, with no executor; its GLUE source is the
	// target's spec (package internal/target). It never reaches an
	// executor, so xxl-job executors never see it.
	GlueHTTP GlueType = "HTTP"
	// GlueAWS is not an xxl-job type either: the job calls one AWS
	// resource (a Lambda function, an SQS queue, an SNS topic, an
	// EventBridge bus, a Step Functions state machine) from the
	// scheduler; its GLUE source names it by ARN.
	GlueAWS GlueType = "AWS"
)

// Script reports whether g is source an executor runs (the GLUE_* types):
// what the GLUE policy governs and the GLUE history keeps.
func (g GlueType) Script() bool { return g != "" && g != GlueBean && !g.Target() }

// Target reports whether g is run by the scheduler itself, with no
// executor (HTTP and AWS jobs): its GLUE source is the target's spec.
func (g GlueType) Target() bool { return g == GlueHTTP || g == GlueAWS }

// TriggerType records why a trigger happened.
type TriggerType string

// Trigger types. Ring and late triggers are CRON even for FIX_RATE jobs, as in xxl-job.
const (
	TriggerManual  TriggerType = "MANUAL"
	TriggerCron    TriggerType = "CRON"
	TriggerRetry   TriggerType = "RETRY"
	TriggerParent  TriggerType = "PARENT"
	TriggerAPI     TriggerType = "API"
	TriggerMisfire TriggerType = "MISFIRE"
)

// TriggerStatus is whether the scheduler fires the job (xxl_job_info.trigger_status).
type TriggerStatus int

// Trigger statuses.
const (
	StatusStopped TriggerStatus = 0
	StatusRunning TriggerStatus = 1
)

// AddressType says where a group's executor addresses come from (xxl_job_group.address_type).
type AddressType int

// Address types.
const (
	AddressAuto   AddressType = 0 // from executor heartbeats
	AddressManual AddressType = 1 // typed by a person
)

// AlarmStatus is the fail-monitor state of a log (xxl_job_log.alarm_status).
type AlarmStatus int

// Alarm statuses, as xxl-job stores them.
const (
	AlarmLocked  AlarmStatus = -1 // claimed by a worker handling the failure
	AlarmDefault AlarmStatus = 0  // not handled yet
	AlarmNoNeed  AlarmStatus = 1  // no alarm needed (e.g. job deleted)
	AlarmSuccess AlarmStatus = 2
	AlarmFailed  AlarmStatus = 3
)

// Handle and trigger codes on the wire and in logs.
const (
	CodeNone    = 0   // trigger_code/handle_code not set yet
	CodeSuccess = 200 // ReturnT.SUCCESS_CODE, HANDLE_CODE_SUCCESS
	CodeFail    = 500 // ReturnT.FAIL_CODE, HANDLE_CODE_FAIL
	CodeTimeout = 502 // HANDLE_CODE_TIMEOUT
)

// RegistryGroupExecutor is the only registry group xxl-job executors use.
const RegistryGroupExecutor = "EXECUTOR"

func (s ScheduleType) valid() bool {
	switch s {
	case ScheduleNone, ScheduleCron, ScheduleFixRate, ScheduleFixDelay, ScheduleOnce:
		return true
	}
	return false
}

func (m MisfireStrategy) valid() bool {
	return m == MisfireDoNothing || m == MisfireFireOnceNow
}

func (r RouteStrategy) valid() bool {
	for _, s := range RouteStrategies {
		if r == s {
			return true
		}
	}
	return false
}

func (b BlockStrategy) valid() bool {
	switch b {
	case BlockSerialExecution, BlockDiscardLater, BlockCoverEarly:
		return true
	}
	return false
}

func (g GlueType) valid() bool {
	switch g {
	case GlueBean, GlueGroovy, GlueShell, GluePython, GluePython2, GluePHP, GlueNodeJS, GluePowerShell, GlueHTTP, GlueAWS:
		return true
	}
	return false
}

// Valid reports whether t is one of the known trigger types.
func (t TriggerType) Valid() bool {
	switch t {
	case TriggerManual, TriggerCron, TriggerRetry, TriggerParent, TriggerAPI, TriggerMisfire:
		return true
	}
	return false
}
