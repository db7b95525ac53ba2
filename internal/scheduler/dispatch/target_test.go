package dispatch_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/dispatch"
	"github.com/xjobdev/xjob/internal/target"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// targets records the calls handed to the built-in executor (the port's
// logic is tested here; the real executor in internal/adapter/httptarget).
type targets struct {
	mu    sync.Mutex
	calls []target.Call
}

func (r *targets) Start(_ context.Context, c target.Call) protocol.ReturnT {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
	return protocol.OK()
}

func httpJob(j *xjob.Job) {
	j.GlueType, j.Handler, j.GlueSource = xjob.GlueHTTP, "", `{"url":"https://hooks.example.com/run"}`
	j.TimeoutSeconds, j.BlockStrategy = 30, xjob.BlockCoverEarly
}

// TestDispatchHandsHTTPJobsToTargets: an HTTP job in a group with no
// executor is triggered on the built-in executor, with the values its
// templates name; an address override cannot send it anywhere else.
func TestDispatchHandsHTTPJobsToTargets(t *testing.T) {
	t.Parallel()
	rec := &targets{}
	e := setupConfig(t, nil, dispatch.Config{Targets: rec})
	ex := newExecutor(t, 200)
	j := e.job(t, e.group(t), httpJob)
	task := cronTask(j)
	out, err := e.d.Dispatch(context.Background(), task)
	if err != nil || len(out.Logs) != 1 {
		t.Fatalf("Dispatch = %+v, %v", out, err)
	}
	l := out.Logs[0]
	if l.TriggerCode != xjob.CodeSuccess || l.ExecutorAddress != target.Address || !strings.Contains(l.TriggerMsg, "built-in (HTTP job)") {
		t.Fatalf("log = %+v", l)
	}
	manual := fire.DispatchTask{Occurrence: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerManual, Ref: "r1"},
		Revision: j.Revision, AddressList: []string{ex.srv.URL}}
	if _, err := e.d.Dispatch(context.Background(), manual); err != nil {
		t.Fatal(err)
	}
	if len(ex.got()) != 0 {
		t.Fatalf("an override sent the HTTP job to an executor: %+v", ex.got())
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.calls) != 2 {
		t.Fatalf("calls = %+v", rec.calls)
	}
	c := rec.calls[0]
	want := target.Call{GlueType: "HTTP", Vars: target.Vars{JobID: j.ID, LogID: l.ID, Param: "p", ShardIndex: 0, ShardTotal: 1,
		ScheduleTime: task.Occurrence.FireTime, TriggerTime: l.TriggerTime}, Source: j.GlueSource, TimeoutSeconds: 30,
		BlockStrategy: "COVER_EARLY"}
	if c != want {
		t.Fatalf("call = %+v\nwant %+v", c, want)
	}
	if m := rec.calls[1]; m.ScheduleTime != m.TriggerTime || m.ScheduleTime == 0 {
		t.Fatalf("a manual trigger's schedule time = %d, want its trigger time %d", m.ScheduleTime, m.TriggerTime)
	}
}

// TestDispatchWithoutTargetsFailsHTTPJobs: a deployment with no built-in
// executor fails the trigger saying so (retry and alarm apply).
func TestDispatchWithoutTargetsFailsHTTPJobs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.job(t, e.group(t), httpJob)
	out, err := e.d.Dispatch(context.Background(), cronTask(j))
	if err != nil || len(out.Logs) != 1 {
		t.Fatalf("Dispatch = %+v, %v", out, err)
	}
	if l := out.Logs[0]; l.TriggerCode != xjob.CodeFail || !strings.Contains(l.TriggerMsg, "HTTP jobs are not run on this deployment") {
		t.Fatalf("log = %+v", l)
	}
}
