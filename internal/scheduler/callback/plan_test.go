package callback

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
)

func TestParseShardingParam(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		i, n     int
		wantOK   bool
		describe string
	}{
		{"0/1", 0, 1, true, "single"},
		{"2/5", 2, 5, true, "middle shard"},
		{" 4/5 ", 4, 5, true, "blanks trimmed"},
		{"", 0, 0, false, "empty"},
		{"5/5", 0, 0, false, "index out of range"},
		{"-1/5", 0, 0, false, "negative index"},
		{"1/0", 0, 0, false, "zero total"},
		{"a/b", 0, 0, false, "not numbers"},
		{"3", 0, 0, false, "no slash"},
	}
	for _, tt := range tests {
		t.Run(tt.describe, func(t *testing.T) {
			t.Parallel()
			i, n, ok := ParseShardingParam(tt.in)
			if i != tt.i || n != tt.n || ok != tt.wantOK {
				t.Fatalf("ParseShardingParam(%q) = %d, %d, %v; want %d, %d, %v", tt.in, i, n, ok, tt.i, tt.n, tt.wantOK)
			}
		})
	}
}

func TestRetryTask(t *testing.T) {
	t.Parallel()
	base := xjob.Log{ID: 42, JobID: 7, ExecutorParam: "p=1"}
	tests := []struct {
		name       string
		count      int
		sharding   string
		wantOK     bool
		wantLeft   int
		wantIdx    int
		wantTotal  int
		wantOccIDs string
	}{
		{name: "no retries left", count: 0},
		{name: "last retry", count: 1, wantOK: true, wantLeft: 0, wantOccIDs: "j7/RETRY/r42/s0"},
		{name: "counts down", count: 3, wantOK: true, wantLeft: 2, wantOccIDs: "j7/RETRY/r42/s0"},
		{name: "broadcast shard kept", count: 2, sharding: "3/4", wantOK: true, wantLeft: 1, wantIdx: 3, wantTotal: 4, wantOccIDs: "j7/RETRY/r42/s3"},
		{name: "bad sharding routes normally", count: 2, sharding: "9/4", wantOK: true, wantLeft: 1, wantOccIDs: "j7/RETRY/r42/s0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := base
			l.ExecutorFailRetryCount = tt.count
			l.ExecutorShardingParam = tt.sharding
			task, ok := RetryTask(l, 1000)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if !ok {
				return
			}
			if err := task.Validate(); err != nil {
				t.Fatalf("planned task invalid: %v", err)
			}
			if *task.FailRetryCount != tt.wantLeft || *task.Param != "p=1" ||
				task.ShardIndex != tt.wantIdx || task.ShardTotal != tt.wantTotal || task.EnqueuedAt != 1000 {
				t.Fatalf("task = %+v (left %d, param %q)", task, *task.FailRetryCount, *task.Param)
			}
			if got := task.Occurrence.ID(task.ShardIndex); got != tt.wantOccIDs {
				t.Fatalf("occurrence id = %q, want %q", got, tt.wantOccIDs)
			}
			again, _ := RetryTask(l, 2000)
			if again.Occurrence != task.Occurrence {
				t.Fatalf("retry occurrence not deterministic: %+v vs %+v", again.Occurrence, task.Occurrence)
			}
		})
	}
}

func TestChildTasks(t *testing.T) {
	t.Parallel()
	parent := xjob.Log{ID: 9, JobID: 1}
	if got := ChildTasks(parent, nil, 5); got != nil {
		t.Fatalf("no children: got %v", got)
	}
	tasks := ChildTasks(parent, []int64{3, 4}, 5)
	if len(tasks) != 2 {
		t.Fatalf("got %d tasks", len(tasks))
	}
	for i, want := range []string{"j3/PARENT/r9/s0", "j4/PARENT/r9/s0"} {
		task := tasks[i]
		if got := task.Occurrence.ID(0); got != want {
			t.Errorf("task %d occurrence %q, want %q", i, got, want)
		}
		if task.Param != nil || task.FailRetryCount != nil || task.EnqueuedAt != 5 {
			t.Errorf("child must use its own param and retry count: %+v", task)
		}
	}
}

func TestResultMsg(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code      int
		msg, want string
	}{
		{xjob.CodeFail, ExecutorKilledMsg, KillMsg},
		{xjob.CodeFail, KillMsg, KillMsg},
		{xjob.CodeFail, "scheduling center kill job. [job not executed, in the job queue, killed.]",
			"scheduling center kill job. [job not executed, in the job queue, killed.]"}, // a queued run, not the killed one
		{xjob.CodeSuccess, ExecutorKilledMsg, ExecutorKilledMsg},
		{xjob.CodeFail, "boom", "boom"},
	} {
		if got := ResultMsg(tc.code, tc.msg); got != tc.want {
			t.Errorf("ResultMsg(%d, %q) = %q, want %q", tc.code, tc.msg, got, tc.want)
		}
	}
}

func TestHandleMsg(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 20000)
	summary := ChildSummary([]int64{3, 4})
	tests := []struct {
		name, msg, summary string
		wantLen            int
		wantSuffix         string
	}{
		{name: "short kept", msg: "ok", wantLen: 2, wantSuffix: "ok"},
		{name: "long cut", msg: long, wantLen: MaxHandleMsg + 3, wantSuffix: "x..."},
		{name: "summary survives", msg: long, summary: summary, wantLen: MaxHandleMsg + 3, wantSuffix: summary},
		{name: "short with summary", msg: "done", summary: summary, wantLen: 4 + len(summary), wantSuffix: summary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := HandleMsg(tt.msg, tt.summary)
			if len(got) != tt.wantLen || !strings.HasSuffix(got, tt.wantSuffix) {
				t.Fatalf("len %d (want %d), suffix ok %v", len(got), tt.wantLen, strings.HasSuffix(got, tt.wantSuffix))
			}
		})
	}
	if s := ChildSummary([]int64{3, 4}); !strings.Contains(s, "1/2 [Job ID=3]") || !strings.Contains(s, "2/2 [Job ID=4]") {
		t.Fatalf("summary %q", s)
	}
}

func TestFinishDelta(t *testing.T) {
	t.Parallel()
	const day = int64(1767225600000) // 2026-01-01T00:00:00Z
	tests := []struct {
		name                 string
		trigger, handle      int
		running, suc, failed int
	}{
		{"running then success", 200, 200, -1, 1, 0},
		{"running then failure", 200, 500, -1, 0, 1},
		{"running then timeout", 200, 502, -1, 0, 1},
		{"callback overtook dispatch, success", 0, 200, -1, 1, 0},
		{"callback overtook dispatch, failure", 0, 500, -1, 0, 1},
		{"failed trigger then success", 500, 200, 0, 1, -1},
		{"failed trigger then failure", 500, 500, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := FinishDelta(xjob.Log{TriggerTime: day + 3600_000*23, TriggerCode: tt.trigger, HandleCode: tt.handle})
			want := xjob.ReportDay{Day: "2026-01-01", RunningCount: tt.running, SucCount: tt.suc, FailCount: tt.failed}
			if d != want {
				t.Fatalf("delta %+v, want %+v", d, want)
			}
		})
	}
}

func TestAlarmOutcome(t *testing.T) {
	t.Parallel()
	if got := AlarmOutcome(false, nil); got != xjob.AlarmNoNeed {
		t.Errorf("deleted job: %v", got)
	}
	if got := AlarmOutcome(true, nil); got != xjob.AlarmSuccess {
		t.Errorf("alarm ok: %v", got)
	}
	if got := AlarmOutcome(true, errors.New("smtp down")); got != xjob.AlarmFailed {
		t.Errorf("alarm error: %v", got)
	}
}

func TestItemErrors(t *testing.T) {
	t.Parallel()
	if ErrLogNotFound.Error() != "log item not found." || !errors.Is(ErrLogNotFound, xjob.ErrNotFound) {
		t.Errorf("ErrLogNotFound = %v", ErrLogNotFound)
	}
	if ErrRepeatCallback.Error() != "log repeate callback." || !errors.Is(ErrRepeatCallback, xjob.ErrConflict) {
		t.Errorf("ErrRepeatCallback = %v", ErrRepeatCallback)
	}
}

func TestPlanRetry(t *testing.T) {
	t.Parallel()
	const now = 1_000_000
	busy := "Trigger result: fail<br>address: http://e/<br>code: 500<br>msg: There is already have a same job is running, jobId:7"
	failed := func(typ xjob.TriggerType, left int, msg string) xjob.Log {
		return xjob.Log{ID: 42, JobID: 7, TriggerType: typ, TriggerTime: now - 100, TriggerCode: 500, TriggerMsg: msg,
			ExecutorParam: "p", ExecutorFailRetryCount: left}
	}
	handled := failed(xjob.TriggerCron, 2, "ok")
	handled.TriggerCode, handled.HandleCode = 200, 500
	deferredOnce := failed(xjob.TriggerRetry, 1, busy)
	deferredOnce.ScheduledTime = now - 60_000
	tests := []struct {
		name         string
		l            xjob.Log
		jobRetries   int
		p            RetryPolicy
		wantTask     bool
		wantDeferred bool
		wantDelay    int64 // ms after now
		wantLeft     int
		wantFireTime int64
	}{
		{name: "no retries left", l: failed(xjob.TriggerCron, 0, "boom"), jobRetries: 0},
		{name: "first retry after the default delay", l: handled, jobRetries: 2, wantTask: true, wantDelay: 5000, wantLeft: 1},
		{name: "constant without backoff", l: failed(xjob.TriggerRetry, 1, "boom"), jobRetries: 3, wantTask: true, wantDelay: 5000},
		{name: "backoff doubles per retry made", l: failed(xjob.TriggerRetry, 1, "boom"), jobRetries: 3,
			p: RetryPolicy{Delay: 2 * time.Second, Backoff: 2}, wantTask: true, wantDelay: 8000},
		{name: "backoff stops at the SQS maximum", l: failed(xjob.TriggerRetry, 1, "boom"), jobRetries: 40,
			p: RetryPolicy{Delay: time.Minute, Backoff: 3}, wantTask: true, wantDelay: MaxRetryDelay.Milliseconds()},
		{name: "job retries lowered since: no negative attempts", l: failed(xjob.TriggerRetry, 3, "boom"), jobRetries: 1,
			wantTask: true, wantDelay: 5000, wantLeft: 2},
		{name: "busy retry deferred with its count", l: failed(xjob.TriggerRetry, 1, busy), jobRetries: 3,
			wantTask: true, wantDeferred: true, wantDelay: 5000, wantLeft: 1, wantFireTime: now - 100},
		{name: "busy retry with no retries left still deferred", l: failed(xjob.TriggerRetry, 0, busy), jobRetries: 1,
			wantTask: true, wantDeferred: true, wantDelay: 5000, wantLeft: 0, wantFireTime: now - 100},
		{name: "discard-later retry deferred", l: failed(xjob.TriggerRetry, 1, "msg: block strategy effect：Discard Later"), jobRetries: 1,
			wantTask: true, wantDeferred: true, wantDelay: 5000, wantLeft: 1, wantFireTime: now - 100},
		{name: "deferral keeps the first due time", l: deferredOnce, jobRetries: 1,
			wantTask: true, wantDeferred: true, wantDelay: 5000, wantLeft: 1, wantFireTime: now - 60_000},
		{name: "busy past the window is the retry's failure", l: deferredOnce, jobRetries: 1, p: RetryPolicy{BusyWindow: time.Minute},
			wantTask: true, wantDelay: 5000, wantLeft: 0},
		{name: "busy cron trigger is not a retry", l: failed(xjob.TriggerCron, 1, busy), jobRetries: 1, wantTask: true, wantDelay: 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := PlanRetry(tt.l, tt.jobRetries, now, tt.p)
			if got.HasTask != tt.wantTask || got.Deferred != tt.wantDeferred {
				t.Fatalf("plan %+v, want task %v deferred %v", got, tt.wantTask, tt.wantDeferred)
			}
			if !got.HasTask {
				return
			}
			if err := got.Task.Validate(); err != nil {
				t.Fatalf("task invalid: %v", err)
			}
			if got.VisibleAt-now != tt.wantDelay || *got.Task.FailRetryCount != tt.wantLeft ||
				got.Task.Occurrence.FireTime != tt.wantFireTime || got.Task.Occurrence.ID(0) != "j7/RETRY/r42/s0" {
				t.Fatalf("task %+v visible +%d ms (left %d), want +%d left %d fire time %d",
					got.Task, got.VisibleAt-now, *got.Task.FailRetryCount, tt.wantDelay, tt.wantLeft, tt.wantFireTime)
			}
		})
	}
}

// Day answers from the day it formatted last only for an instant of that
// same UTC day: each instant, taken in an order that moves between days
// and back, gets its own day as time.Format names it.
func TestDayKeepsTheLastDayOnlyWithinIt(t *testing.T) {
	t.Parallel()
	midnight := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC).UnixMilli()
	instants := []int64{
		midnight, midnight - 1, midnight + msPerDay - 1, midnight + msPerDay, midnight + 1,
		0, -1, -msPerDay, -msPerDay - 1, 1, midnight - msPerDay, midnight,
		time.Date(2028, 2, 29, 23, 59, 59, 999e6, time.UTC).UnixMilli(),
		time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
	}
	for _, ms := range instants {
		want := time.UnixMilli(ms).UTC().Format(time.DateOnly)
		// Twice: formatted, then from the kept day.
		for range 2 {
			if got := Day(ms); got != want {
				t.Errorf("Day(%d) = %s, want %s", ms, got, want)
			}
		}
	}
}
