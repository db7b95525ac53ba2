package callback_test

import (
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/pkg/driver"
)

// runTask stores the log a dispatch of task would, marks it triggered and
// reports success; it returns the child tasks that success enqueued.
func (e *env) runTask(task fire.DispatchTask) []fire.DispatchTask {
	e.t.Helper()
	j, err := e.db.JobGet(e.ctx, task.Occurrence.JobID)
	if err != nil {
		e.t.Fatal(err)
	}
	l, err := e.db.LogCreate(e.ctx, xjob.Log{OccurrenceID: task.Occurrence.ID(0), JobID: j.ID, GroupID: j.GroupID,
		TriggerType: task.Occurrence.Type, TriggerTime: e.clk.Now().UnixMilli(), ExecutorHandler: j.Handler})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.db.LogTriggered(e.ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: "http://127.0.0.1:9999/",
		TriggerCode: 200, TriggerMsg: "trigger"}); err != nil {
		e.t.Fatal(err)
	}
	if err := e.callback(l.ID, 200, "ok"); err != nil {
		e.t.Fatal(err)
	}
	return e.tasks()
}

// setChildren writes a job's children straight into the store, past the
// admin's cycle check (a restored or hand-edited store).
func (e *env) setChildren(j xjob.Job, children ...int64) {
	e.t.Helper()
	j, err := e.db.JobGet(e.ctx, j.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	j.ChildJobIDs = children
	if _, err := e.db.JobUpdate(e.ctx, driver.JobUpdateParams{Job: j, ExpectVersion: j.Version}); err != nil {
		e.t.Fatal(err)
	}
}

// A cycle in the stored children stops when it comes round: one alarm,
// no trigger of a job already in the chain.
func TestChildCycleStops(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.job(0)
	b := e.job(0, a.ID)
	e.setChildren(a, b.ID)
	root := e.triggered(a, 200, 0, "")
	if err := e.callback(root.ID, 200, "ok"); err != nil {
		t.Fatal(err)
	}
	ts := e.tasks()
	if len(ts) != 1 || ts[0].Occurrence.JobID != b.ID {
		t.Fatalf("a's success enqueued %+v, want b", ts)
	}
	if ts = e.runTask(ts[0]); len(ts) != 0 {
		t.Fatalf("b's success enqueued %+v: the cycle went round", ts)
	}
	if n := e.alarm.count(); n != 1 {
		t.Fatalf("%d alarms, want 1 for the stopped cycle", n)
	}
}

// A chain deeper than MaxChildDepth stops, cycle or not.
func TestChildChainDepthBounded(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const n = callback.MaxChildDepth + 3
	jobs := make([]xjob.Job, n)
	for i := n - 1; i >= 0; i-- {
		if i == n-1 {
			jobs[i] = e.job(0)
		} else {
			jobs[i] = e.job(0, jobs[i+1].ID)
		}
	}
	root := e.triggered(jobs[0], 200, 0, "")
	if err := e.callback(root.ID, 200, "ok"); err != nil {
		t.Fatal(err)
	}
	ts := e.tasks()
	ran := 1
	for len(ts) == 1 {
		ts = e.runTask(ts[0])
		ran++
	}
	if ran != callback.MaxChildDepth || e.alarm.count() != 1 {
		t.Fatalf("%d jobs of the chain ran, %d alarms; want %d and 1", ran, e.alarm.count(), callback.MaxChildDepth)
	}
}
