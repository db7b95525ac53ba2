package xjob

// Log is one trigger record (xxl_job_log): created when an occurrence is
// dispatched, completed by the executor's callback.
//
// Lifecycle:
//
//	created (TriggerCode 0, claimed until ClaimUntil)
//	  └─ POST /run ──▶ triggered (TriggerCode 200 or 500)
//	                     └─ callback / kill / lost ──▶ handled (HandleCode 200, 500, 502)
//	                                                     └─ failure: AlarmStatus 0 → -1 → 1|2|3
//
// A log is keyed twice: by ID (numeric, what executors echo back) and by
// OccurrenceID (deterministic, what makes dispatch idempotent).
type Log struct {
	ID           int64  `json:"id"`
	OccurrenceID string `json:"occurrenceId"`
	JobID        int64  `json:"jobId"`
	GroupID      int64  `json:"jobGroup"`

	TriggerType TriggerType `json:"triggerType"`
	// ScheduledTime is the planned fire time (0 for manual triggers);
	// TriggerTime is when dispatch actually created the trigger.
	ScheduledTime int64  `json:"scheduleTime"`
	TriggerTime   int64  `json:"triggerTime"`
	TriggerCode   int    `json:"triggerCode"`
	TriggerMsg    string `json:"triggerMsg"`

	ExecutorAddress        string `json:"executorAddress"`
	ExecutorHandler        string `json:"executorHandler"`
	ExecutorParam          string `json:"executorParam"`
	ExecutorShardingParam  string `json:"executorShardingParam"`
	ExecutorFailRetryCount int    `json:"executorFailRetryCount"`

	HandleTime int64  `json:"handleTime"`
	HandleCode int    `json:"handleCode"`
	HandleMsg  string `json:"handleMsg"`

	AlarmStatus AlarmStatus `json:"alarmStatus"`

	// ClaimUntil is when a dispatcher's claim on a created-but-untriggered
	// log expires: a redelivery of the same occurrence after that may take
	// the trigger over instead of dropping it (no lost fire on a crash
	// between creating the log and calling the executor).
	ClaimUntil int64 `json:"-"`
	Version    int64 `json:"-"`
	// Delivery names the ring message whose dispatcher holds a
	// provisional claim: one that records the trigger's success (code 200
	// and its message) before the executor is called, so that a successful
	// call needs no second write. Only a delivery of the same message may
	// take such a claim over once it expires; every other delivery of the
	// occurrence drops it (see Provisional). A plain claim made in a
	// message's name (an HTTP job's, or one with no executor to call)
	// keeps the name but is not provisional; a reply record or a result
	// clears it.
	Delivery string `json:"-"`
}

// Provisional reports whether the log's success is a provisional claim's
// (Delivery): recorded before the call, not yet confirmed by a reply
// record or a result.
func (l *Log) Provisional() bool {
	return l.Delivery != "" && l.TriggerCode == CodeSuccess && !l.Handled()
}

// Triggered reports whether the executor was called (successfully or not).
func (l *Log) Triggered() bool { return l.TriggerCode != CodeNone }

// Handled reports whether a final result is recorded.
func (l *Log) Handled() bool { return l.HandleCode != CodeNone }

// Failed reports whether the log counts as a failure for the fail monitor:
// the trigger failed, or the handle code is set and is not 200.
func (l *Log) Failed() bool {
	if l.Handled() {
		return l.HandleCode != CodeSuccess
	}
	return l.Triggered() && l.TriggerCode != CodeSuccess
}

// Running reports whether the trigger succeeded and no result has arrived.
func (l *Log) Running() bool {
	return l.TriggerCode == CodeSuccess && !l.Handled()
}

// LogStatus filters logs the way xxl-job's log page does.
type LogStatus int

// Log status filters (xxl-job's logStatus parameter).
const (
	LogAll     LogStatus = -1
	LogSuccess LogStatus = 1
	LogFail    LogStatus = 2
	LogRunning LogStatus = 3
)

// ReportDay is one day of the run report (xxl_job_log_report).
type ReportDay struct {
	Day string `json:"triggerDay"` // yyyy-mm-dd, UTC
	// GroupID is the executor group the counts belong to when they are
	// added, so that a user limited to some groups can read their report
	// without counting logs. Zero means no one group: counts kept before
	// the report was per group, imported history, and every sum
	// ReportList returns. It stays off the wire, as xxl-job has no such
	// field.
	GroupID      int64 `json:"-"`
	RunningCount int   `json:"runningCount"`
	SucCount     int   `json:"sucCount"`
	FailCount    int   `json:"failCount"`
}

// Add adds o's counts to d's; d keeps its Day and GroupID. Report
// counters are sums of deltas (a result moves a run from running to
// success), so every place that batches or totals them adds this way.
func (d *ReportDay) Add(o ReportDay) {
	d.RunningCount += o.RunningCount
	d.SucCount += o.SucCount
	d.FailCount += o.FailCount
}

// Empty reports whether d counts nothing: a delta that needs no write.
func (d ReportDay) Empty() bool {
	return d.RunningCount == 0 && d.SucCount == 0 && d.FailCount == 0
}
