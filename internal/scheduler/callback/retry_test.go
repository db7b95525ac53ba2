package callback_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/dispatch"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/internal/scheduler/route"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

const busyMsg = "There is already have a same job is running, jobId:"

// TestRetryWaitsTheDelay: a failure's retry becomes visible to the lanes
// only after the retry delay, not while the failing callback is answered.
func TestRetryWaitsTheDelay(t *testing.T) {
	t.Parallel()
	e := setup(t)
	l := e.triggered(e.job(2), 200, 2, "")
	if err := e.callback(l.ID, 500, "boom"); err != nil {
		t.Fatal(err)
	}
	if ts := e.visible(); len(ts) != 0 {
		t.Fatalf("retry visible at once: %+v", ts)
	}
	e.clk.Advance(callback.DefaultRetryDelay - time.Millisecond)
	if ts := e.visible(); len(ts) != 0 {
		t.Fatalf("retry visible before the delay: %+v", ts)
	}
	e.clk.Advance(time.Millisecond)
	if ts := e.visible(); len(ts) != 1 || *ts[0].FailRetryCount != 1 {
		t.Fatalf("after the delay: %+v, want the retry", ts)
	}
}

// npmExecutor behaves as the npm xxl-job SDK: a job stays marked running
// until its callback request has returned, and /run of a running job is
// refused with "There is already have a same job is running".
type npmExecutor struct {
	srv     *httptest.Server
	mu      sync.Mutex
	running map[int64]bool
	runs    []protocol.TriggerParam
	refused int
}

func newNpmExecutor(t *testing.T) *npmExecutor {
	x := &npmExecutor{running: map[int64]bool{}}
	x.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p protocol.TriggerParam
		_ = json.NewDecoder(r.Body).Decode(&p)
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.running[p.JobID] {
			x.refused++
			_, _ = io.WriteString(w, `{"code":500,"msg":"`+busyMsg+strconv.FormatInt(p.JobID, 10)+`"}`)
			return
		}
		x.running[p.JobID] = true
		x.runs = append(x.runs, p)
		_, _ = io.WriteString(w, `{"code":200,"msg":"Success"}`)
	}))
	t.Cleanup(x.srv.Close)
	return x
}

func (x *npmExecutor) setRunning(job int64, v bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.running[job] = v
}

func (x *npmExecutor) lastRun(t *testing.T) protocol.TriggerParam {
	t.Helper()
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.runs) == 0 {
		t.Fatal("no run")
	}
	return x.runs[len(x.runs)-1]
}

// TestRetryAgainstExecutorBusyUntilCallbackReturns drives dispatch, the
// executor client and the callback service against an npm-SDK-like
// executor. The retry of a failure is not sent while the executor still
// holds the job (during its callback request); sent after the delay, it
// runs, and nothing is alarmed. A retry the executor refuses as busy (the
// job was started again meanwhile) is put off, not failed.
func TestRetryAgainstExecutorBusyUntilCallbackReturns(t *testing.T) {
	t.Parallel()
	e := setup(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	x := newNpmExecutor(t)
	ec, err := execclient.New(execclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ec.Close)
	reg, err := registry.New(registry.Config{Store: e.db, Clock: e.clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	d, err := dispatch.New(dispatch.Config{
		Store: e.db, Executors: ec, Router: route.New(route.Options{Clock: e.clk, Prober: ec}),
		Addresses: reg, Completer: e.svc, Clock: e.clk, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := e.db.GroupInsert(e.ctx, xjob.Group{AppName: "npm-app", Title: "npm", AddressType: xjob.AddressManual, AddressList: []string{x.srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	j := xjob.Job{GroupID: g.ID, Description: "npm job", Author: "ops", Handler: "demo", FailRetryCount: 2}
	j.ApplyDefaults()
	j, err = e.db.JobInsert(e.ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	// lane dispatches what a lane worker would find on the queue now.
	lane := func() {
		t.Helper()
		for _, task := range e.visible() {
			if _, err := d.Dispatch(e.ctx, task); err != nil {
				t.Fatalf("dispatch %+v: %v", task, err)
			}
		}
	}
	// executorCallback is the executor's /api/callback request: the job
	// stays running until it returns, and lane workers act meanwhile.
	executorCallback := func(logID int64, code int) {
		t.Helper()
		if err := e.callback(logID, code, "result"); err != nil {
			t.Fatal(err)
		}
		lane()
		x.setRunning(j.ID, false)
	}

	if _, err := d.Dispatch(e.ctx, fire.DispatchTask{Occurrence: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerManual, Ref: "m1"}}); err != nil {
		t.Fatal(err)
	}
	first := x.lastRun(t)
	executorCallback(first.LogID, 500)
	if x.refused != 0 || len(x.runs) != 1 {
		t.Fatalf("retry sent during the callback: %d refused, %d runs", x.refused, len(x.runs))
	}
	e.clk.Advance(callback.DefaultRetryDelay)
	lane()
	retry := x.lastRun(t)
	if retry.LogID == first.LogID {
		t.Fatal("retry not run after the delay")
	}

	// The retry fails too; meanwhile the job was started again by hand,
	// so the second retry finds it running.
	if err := e.callback(retry.LogID, 500, "again"); err != nil {
		t.Fatal(err)
	}
	x.setRunning(j.ID, false)
	if _, err := d.Dispatch(e.ctx, fire.DispatchTask{Occurrence: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerManual, Ref: "m2"}}); err != nil {
		t.Fatal(err)
	}
	manual := x.lastRun(t)
	e.clk.Advance(callback.DefaultRetryDelay)
	lane() // second retry: refused, busy
	if x.refused != 1 {
		t.Fatalf("refused = %d, want the busy second retry", x.refused)
	}
	executorCallback(manual.LogID, 200)
	e.clk.Advance(callback.DefaultRetryDelay)
	lane() // the second retry again, now accepted
	second := x.lastRun(t)
	if second.LogID == manual.LogID {
		t.Fatal("deferred retry not run")
	}
	if err := e.callback(second.LogID, 200, "ok"); err != nil {
		t.Fatal(err)
	}
	x.setRunning(j.ID, false)

	// Alarmed: the first failure and the first retry's (failures are
	// alarmed even when retried, as in xxl-job); not the busy refusal.
	if n := e.alarm.count(); n != 2 {
		t.Fatalf("%d alarms, want 2 (the two real failures)", n)
	}
	logs, err := e.db.LogList(e.ctx, driver.LogListParams{JobID: j.ID})
	if err != nil {
		t.Fatal(err)
	}
	var deferred []xjob.Log
	for _, l := range logs.Logs {
		if l.TriggerType == xjob.TriggerRetry && strings.Contains(l.TriggerMsg, busyMsg) {
			deferred = append(deferred, l)
		}
	}
	if len(deferred) != 1 || deferred[0].AlarmStatus != xjob.AlarmNoNeed || deferred[0].ExecutorFailRetryCount != 0 {
		t.Fatalf("busy refusal logs = %+v, want one, not alarmed", deferred)
	}
	got := e.get(second.LogID)
	if got.ExecutorFailRetryCount != 0 || got.ScheduledTime != deferred[0].TriggerTime {
		t.Fatalf("deferred retry log = %+v, want count 0 and first due %d", got, deferred[0].TriggerTime)
	}
}

// TestAlarmWaitsForTriggerRecord: a failure callback that overtakes
// dispatch's record of the /run reply is alarmed with the trigger's code
// and message, once dispatch has written them.
func TestAlarmWaitsForTriggerRecord(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.job(0)
	create := func(ref string) xjob.Log {
		l, err := e.db.LogCreate(e.ctx, xjob.Log{
			OccurrenceID: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerManual, Ref: ref}.ID(0),
			JobID:        j.ID, GroupID: j.GroupID, TriggerType: xjob.TriggerManual, TriggerTime: clock.Millis(e.clk),
		})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}

	l := create("fast")
	done := make(chan error, 1)
	go func() { done <- e.callback(l.ID, 500, "boom") }()
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if err := e.clk.WaitForSleepers(ctx, 1); err != nil {
		t.Fatal("callback did not wait for the trigger record")
	}
	if err := e.db.LogTriggered(e.ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: "http://127.0.0.1:9999/",
		TriggerCode: 200, TriggerMsg: "Trigger result: success"}); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.alarm.mu.Lock()
	a := e.alarm.alarms
	e.alarm.mu.Unlock()
	if len(a) != 1 || a[0].Log.TriggerCode != 200 || a[0].Log.TriggerMsg != "Trigger result: success" ||
		a[0].Log.ExecutorAddress == "" || a[0].Log.HandleCode != 500 {
		t.Fatalf("alarms = %+v, want one with the trigger recorded", a)
	}

	// A trigger never recorded within the wait: no alarm now, the sweep
	// alarms it once it is older than the grace.
	l2 := create("lost")
	go func() { done <- e.callback(l2.ID, 500, "boom") }()
	for range int(callback.DefaultTriggerWait/(50*time.Millisecond)) + 1 {
		if err := e.clk.WaitForSleepers(ctx, 1); err != nil {
			break
		}
		e.clk.Advance(50 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := e.alarm.count(); n != 1 {
		t.Fatalf("%d alarms, want none for the unrecorded trigger yet", n)
	}
	e.clk.Advance(callback.DefaultSweepGrace)
	if n, err := e.svc.Sweep(e.ctx); err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v", n, err)
	}
	if n := e.alarm.count(); n != 2 {
		t.Fatalf("%d alarms after the sweep, want 2", n)
	}
}
