package callback

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/xjobdev/xjob"
)

// MaxHandleMsg is the longest handle message kept, in bytes, as xxl-job cuts
// handle_msg to 15 000 characters (facts sheet A6.7).
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
func RetryTask(l xjob.Log, now int64) (xjob.DispatchTask, bool) {
	if l.ExecutorFailRetryCount <= 0 {
		return xjob.DispatchTask{}, false
	}
	param := l.ExecutorParam
	left := l.ExecutorFailRetryCount - 1
	t := xjob.DispatchTask{
		Occurrence: xjob.Occurrence{
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
	return t, true
}

// ChildTasks plans one PARENT trigger per child job of a successful log.
// Children run with their own param and retry count, as in xxl-job; the
// occurrence ref is the parent log id, so a repeated completion of the same
// parent log never triggers a child twice.
func ChildTasks(parent xjob.Log, children []int64, now int64) []xjob.DispatchTask {
	if len(children) == 0 {
		return nil
	}
	ref := strconv.FormatInt(parent.ID, 10)
	out := make([]xjob.DispatchTask, 0, len(children))
	for _, c := range children {
		out = append(out, xjob.DispatchTask{
			Occurrence: xjob.Occurrence{JobID: c, Type: xjob.TriggerParent, Ref: ref},
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

// HandleMsg builds the stored handle message: the executor's message cut to
// MaxHandleMsg, leaving room for the child summary so that it survives a
// huge executor message.
func HandleMsg(msg, summary string) string {
	room := MaxHandleMsg - len(summary)
	if room < 0 {
		room = 0
	}
	return xjob.Truncate(msg, room) + summary
}

// Day returns the report day (UTC yyyy-mm-dd) of an instant in Unix ms.
func Day(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.DateOnly)
}

// FinishDelta is the report change for log l having just been finished (l
// as LogFinish returned it). See the package doc for the counting rule; a
// zero delta (all counts 0) means nothing to record.
func FinishDelta(l xjob.Log) xjob.ReportDay {
	d := xjob.ReportDay{Day: Day(l.TriggerTime)}
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

func zeroDelta(d xjob.ReportDay) bool {
	return d.RunningCount == 0 && d.SucCount == 0 && d.FailCount == 0
}
