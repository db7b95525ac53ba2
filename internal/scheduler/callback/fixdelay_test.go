package callback_test

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

const fixDelay = 5 * time.Second

// fixDelayJob stores a running FIX_DELAY job (5 s delay, 30 s timeout) as
// the scan leaves it after firing at fired: parked at the fallback.
func (e *env) fixDelayJob(fired int64, retries int) xjob.Job {
	e.t.Helper()
	j := e.job(retries)
	j.ScheduleType, j.ScheduleConf, j.TimeoutSeconds, j.TriggerStatus = xjob.ScheduleFixDelay, "5", 30, xjob.StatusRunning
	if err := j.Validate(); err != nil {
		e.t.Fatal(err)
	}
	j, err := e.db.JobUpdate(e.ctx, driver.JobUpdateParams{Job: j, ExpectVersion: j.Version})
	if err != nil {
		e.t.Fatal(err)
	}
	park := fired + (j.RunWait() + fixDelay).Milliseconds()
	if err := e.db.JobAdvance(e.ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: j.Version,
		TriggerLastTime: fired, TriggerNextTime: park}); err != nil {
		e.t.Fatal(err)
	}
	return e.jobNow(j.ID)
}

func (e *env) jobNow(id int64) xjob.Job {
	e.t.Helper()
	j, err := e.db.JobGet(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// run stores a triggered log of j: a scheduled fire at fired (typ CRON or
// MISFIRE), a RETRY of the log ref, or a MANUAL run.
func (e *env) run(j xjob.Job, typ xjob.TriggerType, fired, ref int64, retries int) xjob.Log {
	e.t.Helper()
	o := fire.Occurrence{JobID: j.ID, Type: typ, FireTime: fired, Ref: strconv.FormatInt(ref, 10)}
	if o.Scheduled() {
		o.Ref = ""
	} else {
		o.FireTime = 0
	}
	l, err := e.db.LogCreate(e.ctx, xjob.Log{OccurrenceID: o.ID(0), JobID: j.ID, GroupID: j.GroupID, TriggerType: typ,
		ScheduledTime: o.FireTime, TriggerTime: clock.Millis(e.clk), ExecutorHandler: j.Handler, ExecutorFailRetryCount: retries})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.db.LogTriggered(e.ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: "http://127.0.0.1:9999/",
		TriggerCode: xjob.CodeSuccess, TriggerMsg: "trigger"}); err != nil {
		e.t.Fatal(err)
	}
	return e.get(l.ID)
}

// TestFixDelayPlannedWhenTheResultArrives checks which results move a
// FIX_DELAY job's next fire to end + delay, and that nothing else does.
func TestFixDelayPlannedWhenTheResultArrives(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// act runs the job's runs (fired at f) to the result under test and
		// returns the end the job must be planned from, 0 for no move.
		act func(e *env, j xjob.Job, f int64) int64
	}{
		{"success", func(e *env, j xjob.Job, f int64) int64 {
			l := e.run(j, xjob.TriggerCron, f, 0, 0)
			e.clk.Advance(12 * time.Second) // the run takes longer than the delay
			if err := e.callback(l.ID, xjob.CodeSuccess, ""); err != nil {
				t.Fatal(err)
			}
			return clock.Millis(e.clk)
		}},
		{"failure with no retry", func(e *env, j xjob.Job, f int64) int64 {
			l := e.run(j, xjob.TriggerMisfire, f, 0, 0)
			e.clk.Advance(time.Second)
			if err := e.callback(l.ID, xjob.CodeFail, "boom"); err != nil {
				t.Fatal(err)
			}
			return clock.Millis(e.clk)
		}},
		{"timeout reported by the executor", func(e *env, j xjob.Job, f int64) int64 {
			l := e.run(j, xjob.TriggerCron, f, 0, 0)
			e.clk.Advance(30 * time.Second)
			if err := e.callback(l.ID, xjob.CodeTimeout, "job timeout"); err != nil {
				t.Fatal(err)
			}
			return clock.Millis(e.clk)
		}},
		{"lost run marked failed", func(e *env, j xjob.Job, f int64) int64 {
			l := e.run(j, xjob.TriggerCron, f, 0, 0)
			e.clk.Advance(20 * time.Second) // upkeep's path; its timing is upkeep's
			if _, err := e.svc.Finish(e.ctx, l, xjob.CodeFail, "Job result lost, marked as failure."); err != nil {
				t.Fatal(err)
			}
			return clock.Millis(e.clk)
		}},
		{"a failure that is retried waits for the retry's result", func(e *env, j xjob.Job, f int64) int64 {
			l := e.run(j, xjob.TriggerCron, f, 0, 1)
			e.clk.Advance(time.Second)
			if err := e.callback(l.ID, xjob.CodeFail, "boom"); err != nil {
				t.Fatal(err)
			}
			if got := e.jobNow(j.ID); got.TriggerNextTime != j.TriggerNextTime {
				t.Fatalf("a retried failure moved the job to %d", got.TriggerNextTime)
			}
			e.clk.Advance(callback.DefaultRetryDelay)
			r := e.run(j, xjob.TriggerRetry, 0, l.ID, 0)
			e.clk.Advance(time.Second)
			if err := e.callback(r.ID, xjob.CodeSuccess, ""); err != nil {
				t.Fatal(err)
			}
			return clock.Millis(e.clk)
		}},
		{"a result after the fallback was due leaves it to the scan", func(e *env, j xjob.Job, f int64) int64 {
			l := e.run(j, xjob.TriggerCron, f, 0, 0)
			e.clk.Advance(36 * time.Second) // the fallback is at 30 s + 5 s
			if err := e.callback(l.ID, xjob.CodeSuccess, ""); err != nil {
				t.Fatal(err)
			}
			return 0
		}},
		{"a manual run does not move the schedule", func(e *env, j xjob.Job, _ int64) int64 {
			l := e.run(j, xjob.TriggerManual, 0, 99, 0)
			if err := e.callback(l.ID, xjob.CodeSuccess, ""); err != nil {
				t.Fatal(err)
			}
			return 0
		}},
		{"an older run's result does not move the schedule", func(e *env, j xjob.Job, f int64) int64 {
			l := e.run(j, xjob.TriggerCron, f-60_000, 0, 0)
			if err := e.callback(l.ID, xjob.CodeSuccess, ""); err != nil {
				t.Fatal(err)
			}
			return 0
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			fired := clock.Millis(e.clk)
			j := e.fixDelayJob(fired, 1)
			end := tt.act(e, j, fired)
			got := e.jobNow(j.ID)
			want := j.TriggerNextTime
			if end != 0 {
				want = end + fixDelay.Milliseconds()
			}
			if got.TriggerNextTime != want || got.TriggerLastTime != fired || got.Revision != j.Revision {
				t.Fatalf("job next %d last %d revision %d, want next %d last %d revision %d",
					got.TriggerNextTime, got.TriggerLastTime, got.Revision, want, fired, j.Revision)
			}
		})
	}
}

// TestFixDelayTwoResultsMoveOnce races duplicate callbacks of one run and
// then completes the log again (the sweep's path): the job is moved by one
// write, to the first result's end + delay.
func TestFixDelayTwoResultsMoveOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	fired := clock.Millis(e.clk)
	j := e.fixDelayJob(fired, 0)
	l := e.run(j, xjob.TriggerCron, fired, 0, 0)
	e.clk.Advance(3 * time.Second)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = e.callback(l.ID, xjob.CodeFail, "r"+strconv.Itoa(i)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, callback.ErrRepeatCallback) {
			t.Fatal(err)
		}
	}
	moved := e.jobNow(j.ID)
	e.clk.Advance(time.Minute)
	if err := e.svc.Complete(e.ctx, e.get(l.ID)); err != nil {
		t.Fatal(err)
	}
	got := e.jobNow(j.ID)
	want := e.get(l.ID).HandleTime + fixDelay.Milliseconds()
	if got.TriggerNextTime != want || got.Version != j.Version+1 || moved.Version != got.Version {
		t.Fatalf("next %d version %d (after the race %d), want next %d version %d",
			got.TriggerNextTime, got.Version, moved.Version, want, j.Version+1)
	}
}
