package callback

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/text"
)

// MaxHandleMsg is the longest handle message kept, in bytes, as xxl-job cuts
// handle_msg to 15 000 characters.
const MaxHandleMsg = 15000

// ParseShardingParam parses a broadcast shard as xxl-job stores it in
// executor_sharding_param ("i/n"). ok is false for an empty or malformed
// value, or one with i outside [0, n): such a log is retried with normal
// routing.
func ParseShardingParam(s string) (index, total int, ok bool) {
	a, b, found := strings.Cut(strings.TrimSpace(s), "/")
	if !found {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || n <= 0 || i < 0 || i >= n {
		return 0, 0, false
	}
	return i, n, true
}

// RetryTask plans the re-trigger of failed log l, or returns false when it
// has no retries left. The occurrence ref is the failed log's id, so
// planning it twice yields the same occurrence (deduplicated by dispatch);
// the retry keeps the log's param and broadcast shard, and counts down.
func RetryTask(l xjob.Log, now int64) (fire.DispatchTask, bool) {
	if l.ExecutorFailRetryCount <= 0 {
		return fire.DispatchTask{}, false
	}
	return retryTask(l, l.ExecutorFailRetryCount-1, now), true
}

// Retry timing defaults (RetryPolicy).
const (
	// DefaultRetryDelay is how long after a failure its retry is sent.
	// xxl-job retries from its fail monitor, 0–10 s after the failure;
	// sending the retry while the failing callback is still being answered
	// races executors that mark the job idle only once their callback
	// request returns (the npm xxl-job SDK refuses the retry as "There is
	// already have a same job is running").
	DefaultRetryDelay = 5 * time.Second
	// DefaultRetryBusyWindow is how long a retry the executor refuses as
	// busy keeps being put off (each time by the retry delay) before the
	// refusal counts as the retry's failure.
	DefaultRetryBusyWindow = 5 * time.Minute
	// MaxRetryDelay caps a delay grown by backoff: the longest an SQS
	// message can be delayed.
	MaxRetryDelay = 15 * time.Minute
)

// RetryPolicy times retries. The zero value means the defaults.
type RetryPolicy struct {
	// Delay is the wait before the first retry (DefaultRetryDelay).
	Delay time.Duration
	// Backoff multiplies the delay for each retry already made of the same
	// failure chain; 0 or 1 keeps it constant. Delays stop at MaxRetryDelay.
	Backoff float64
	// BusyWindow bounds how long a busy-refused retry is put off
	// (DefaultRetryBusyWindow).
	BusyWindow time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Delay <= 0 {
		p.Delay = DefaultRetryDelay
	}
	if p.Backoff < 1 {
		p.Backoff = 1
	}
	if p.BusyWindow <= 0 {
		p.BusyWindow = DefaultRetryBusyWindow
	}
	return p
}

// RetryPlan is what to do about a failed log's retry.
type RetryPlan struct {
	// Task is the retry to send, visible at VisibleAt (Unix ms); no task
	// when the log has no retries left.
	Task      fire.DispatchTask
	VisibleAt int64
	HasTask   bool
	// Deferred means the log is a retry the executor refused because the
	// job was still running: Task tries it again with the same count, and
	// the log is not alarmed (it is not the retry's outcome).
	Deferred bool
}

// PlanRetry decides the retry of failed log l at now. jobRetries is the
// job's configured retry count, to number the attempts for backoff.
//
//	l is a RETRY refused "job is running", within BusyWindow of when it
//	was first due ──▶ Deferred: same count, again after Delay, no alarm
//	l has retries left ──▶ count − 1, after Delay × Backoff^(attempts made)
//	otherwise ──▶ no task
//
// A deferred retry names the refused log (ref = its id), as RetryTask
// would: if a crash lets the sweep plan it again after the window, the two
// are one occurrence and dispatch runs it once. Its FireTime carries when
// the retry was first due (dispatch records it as the log's scheduled
// time), which is what bounds the deferrals.
func PlanRetry(l xjob.Log, jobRetries int, now int64, p RetryPolicy) RetryPlan {
	p = p.withDefaults()
	if firstDue, ok := busyRetry(l); ok && now-firstDue < p.BusyWindow.Milliseconds() {
		t := retryTask(l, l.ExecutorFailRetryCount, now)
		t.Occurrence.FireTime = firstDue
		return RetryPlan{Task: t, VisibleAt: now + p.Delay.Milliseconds(), HasTask: true, Deferred: true}
	}
	if l.ExecutorFailRetryCount <= 0 {
		return RetryPlan{}
	}
	delay := float64(p.Delay)
	for range max(jobRetries-l.ExecutorFailRetryCount, 0) {
		delay *= p.Backoff
		if delay >= float64(MaxRetryDelay) {
			break
		}
	}
	d := min(time.Duration(delay), MaxRetryDelay)
	return RetryPlan{Task: retryTask(l, l.ExecutorFailRetryCount-1, now), VisibleAt: now + d.Milliseconds(), HasTask: true}
}

// busyMarkers are the executor replies that refuse a trigger because the
// same job is still running there: the npm xxl-job SDKs' and xxl-job's own
// DISCARD_LATER block strategy (which the xjob SDK shares).
var busyMarkers = []string{"already have a same job is running", "block strategy effect：Discard Later"}

// busyRetry reports whether l is a retry whose trigger the executor refused
// as busy, and when that retry was first due: the scheduled time a
// deferral carried, or the log's own trigger time.
func busyRetry(l xjob.Log) (int64, bool) {
	if l.TriggerType != xjob.TriggerRetry || l.Handled() || !l.Triggered() || l.TriggerCode == xjob.CodeSuccess {
		return 0, false
	}
	for _, m := range busyMarkers {
		if strings.Contains(l.TriggerMsg, m) {
			if l.ScheduledTime > 0 {
				return l.ScheduledTime, true
			}
			return l.TriggerTime, true
		}
	}
	return 0, false
}

func retryTask(l xjob.Log, left int, now int64) fire.DispatchTask {
	param := l.ExecutorParam
	t := fire.DispatchTask{
		Occurrence: fire.Occurrence{
			JobID: l.JobID,
			Type:  xjob.TriggerRetry,
			Ref:   strconv.FormatInt(l.ID, 10),
		},
		Param:          &param,
		FailRetryCount: &left,
		EnqueuedAt:     now,
	}
	if i, n, ok := ParseShardingParam(l.ExecutorShardingParam); ok {
		t.ShardIndex, t.ShardTotal = i, n
	}
	return t
}

// ChildTasks plans one PARENT trigger per child job of a successful log.
// Children run with their own param and retry count, as in xxl-job; the
// occurrence ref is the parent log id, so a repeated completion of the same
// parent log never triggers a child twice.
func ChildTasks(parent xjob.Log, children []int64, now int64) []fire.DispatchTask {
	if len(children) == 0 {
		return nil
	}
	ref := strconv.FormatInt(parent.ID, 10)
	out := make([]fire.DispatchTask, 0, len(children))
	for _, c := range children {
		out = append(out, fire.DispatchTask{
			Occurrence: fire.Occurrence{JobID: c, Type: xjob.TriggerParent, Ref: ref},
			EnqueuedAt: now,
		})
	}
	return out
}

// ChildSummary is the note appended to a parent's handle message, in the
// shape xxl-job's log page shows ("Trigger child job" banner, one line per
// child), so people see which children a success set off.
func ChildSummary(children []int64) string {
	if len(children) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<br><br><span style=\"color:#00c0ef;\" > >>>>>>>>>>>Trigger child job<<<<<<<<<<< </span><br>")
	for i, c := range children {
		fmt.Fprintf(&b, "%d/%d [Job ID=%d], Trigger queued. <br>", i+1, len(children), c)
	}
	return b.String()
}

// KillMsg is the handle message of a run a person killed (xjob log kill,
// the console): the English text of xxl-job's joblog_kill_log_byman.
const KillMsg = "job killed manually"

// ExecutorKilledMsg is what an executor reports, code 500, for the run the
// admin's /kill stopped (xxl-job's JobThread and the xjob SDK alike).
const ExecutorKilledMsg = "scheduling center kill job. [job running, killed]"

// ResultMsg is the message recorded for result code/msg. A kill ends a run
// with two results, the admin's own (KillMsg, once the executor
// acknowledged /kill) and the executor's report of the killed run, sent
// at once; first result wins, and either may arrive first. Recording the
// executor's report as KillMsg makes the outcome one, 500 "job killed
// manually", whichever wins, as xxl-job-admin (which writes its kill
// message over the executor's) always shows it.
func ResultMsg(code int, msg string) string {
	if code == xjob.CodeFail && msg == ExecutorKilledMsg {
		return KillMsg
	}
	return msg
}

// HandleMsg builds the stored handle message: the executor's message cut to
// MaxHandleMsg, leaving room for the child summary so that it survives a
// huge executor message.
func HandleMsg(msg, summary string) string {
	room := MaxHandleMsg - len(summary)
	if room < 0 {
		room = 0
	}
	return text.Truncate(msg, room) + summary
}

// Day returns the report day (UTC yyyy-mm-dd) of an instant in Unix ms.
// Every result counts in the report under its day, and nearly all of a
// batch fall on the same one: the last day formatted is kept, so that a
// result costs a division and a compare instead of a Format and its
// allocation.
func Day(ms int64) string {
	n := ms / msPerDay
	if ms%msPerDay < 0 {
		n-- // floor: the day before the epoch for a negative instant
	}
	if d := lastDay.Load(); d != nil && d.n == n {
		return d.s
	}
	s := time.UnixMilli(ms).UTC().Format(time.DateOnly)
	lastDay.Store(&dayName{n: n, s: s})
	return s
}

// msPerDay is a UTC day in Unix ms (Unix time has no leap seconds).
const msPerDay = 24 * 60 * 60 * 1000

// dayName is a day number since the epoch (UTC) and its Day.
type dayName struct {
	n int64
	s string
}

// lastDay is the day Day formatted last.
var lastDay atomic.Pointer[dayName]

// FinishDelta is the report change for log l having just been finished (l
// as LogFinish returned it). See the package doc for the counting rule; a
// zero delta (all counts 0) means nothing to record.
func FinishDelta(l xjob.Log) xjob.ReportDay {
	d := xjob.ReportDay{Day: Day(l.TriggerTime), GroupID: l.GroupID}
	success := l.HandleCode == xjob.CodeSuccess
	if l.TriggerCode != xjob.CodeNone && l.TriggerCode != xjob.CodeSuccess {
		// Dispatch already counted the failed trigger as a failure.
		if success {
			d.FailCount, d.SucCount = -1, 1
		}
		return d
	}
	d.RunningCount = -1
	if success {
		d.SucCount = 1
	} else {
		d.FailCount = 1
	}
	return d
}

// AlarmOutcome is the final alarm status of a handled failure: no alarm
// needed when the job is gone, else success or failure of the alarm.
func AlarmOutcome(jobExists bool, alarmErr error) xjob.AlarmStatus {
	switch {
	case !jobExists:
		return xjob.AlarmNoNeed
	case alarmErr != nil:
		return xjob.AlarmFailed
	default:
		return xjob.AlarmSuccess
	}
}
