package main

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/app/local"
	"github.com/xjobdev/xjob/internal/demo"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/executor"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// These tests run the example executor — built by newExecutor from flags,
// exactly as main builds it, and served by its own ListenAndServe — against
// `xjob local` (local.Run on a temporary file and free loopback ports).
// Jobs are managed and triggered through the admin API and every outcome
// is read back from xjob's trigger logs. Both sides run on the wall clock,
// so the tests wait for conditions (with generous limits) but never assert
// durations; the gate handler lets each test decide when a run may finish.

// gateHandler is the JobHandler name of the test's controllable handler.
const gateHandler = "gateJobHandler"

// gate is one run of the gate handler, named by its job parameter.
type gate struct {
	started   chan struct{} // closed when the run starts
	release   chan struct{} // closed by the test: the run succeeds
	cancelled chan struct{} // closed when the run's context ended first
}

// gates hands out one gate per parameter and records the start order.
type gates struct {
	mu    sync.Mutex
	m     map[string]*gate
	order []string
}

func (gs *gates) get(param string) *gate {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g := gs.m[param]
	if g == nil {
		g = &gate{started: make(chan struct{}), release: make(chan struct{}), cancelled: make(chan struct{})}
		gs.m[param] = g
	}
	return g
}

func (gs *gates) startOrder() []string {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	return slices.Clone(gs.order)
}

// handle blocks until the test releases the run (200 "released <param>")
// or the executor cancels it (timeout, kill, COVER_EARLY).
func (gs *gates) handle(ctx context.Context, job *executor.Job) error {
	g := gs.get(job.Param)
	gs.mu.Lock()
	gs.order = append(gs.order, job.Param)
	gs.mu.Unlock()
	job.Logf("gate %s started", job.Param)
	close(g.started) // a second run with the same param is a bug: panic → 500
	select {
	case <-g.release:
		job.Succeed("released " + job.Param)
		return nil
	case <-ctx.Done():
		close(g.cancelled)
		return ctx.Err()
	}
}

// harness is a running xjob local with the example executor registered.
type harness struct {
	api   *adminclient.Client
	group xjob.Group
	gates *gates
}

const appName = "xjob-e2e-example"

func setup(t *testing.T) *harness {
	t.Helper()
	// xjob local, stopped last (cleanups run in reverse).
	cfg := local.Defaults()
	cfg.DB = t.TempDir() + "/xjob.db"
	cfg.Listen = "127.0.0.1:0"
	cfg.Shards = 1
	cfg.Grace = 5 * time.Second
	cfg.Logger = slog.New(slog.DiscardHandler)
	ready := make(chan local.Info, 1)
	cfg.Ready = func(i local.Info) { ready <- i }
	lctx, stopLocal := context.WithCancel(context.Background())
	localDone := make(chan error, 1)
	go func() { localDone <- local.Run(lctx, cfg) }()
	t.Cleanup(func() {
		stopLocal()
		if err := <-localDone; err != nil {
			t.Errorf("local.Run: %v", err)
		}
	})
	var info local.Info
	select {
	case info = <-ready:
	case err := <-localDone:
		t.Fatalf("local.Run: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("xjob local did not become ready")
	}

	api, err := adminclient.New(info.URL, info.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	group, err := api.GroupCreate(ctx, xjob.Group{AppName: appName, Title: "e2e", AddressType: xjob.AddressAuto})
	if err != nil {
		t.Fatalf("create group: %v", err)
	}

	// The example executor, configured the way a person would point an
	// xxl-job executor at xjob: the /xxl-job-admin admin address.
	noEnv := func(string) (string, bool) { return "", false }
	e, err := newExecutor([]string{
		"-admin", info.URL + "/xxl-job-admin", "-token", info.AccessToken, "-appname", appName,
		"-listen", "127.0.0.1:0", "-logdir", t.TempDir(),
	}, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	gs := &gates{m: map[string]*gate{}}
	if err := e.Register(gateHandler, gs.handle); err != nil {
		t.Fatal(err)
	}
	ectx, stopExec := context.WithCancel(context.Background())
	execDone := make(chan error, 1)
	go func() { execDone <- e.ListenAndServe(ectx, 5*time.Second) }()
	t.Cleanup(func() {
		stopExec()
		if err := <-execDone; err != nil {
			t.Errorf("executor ListenAndServe: %v", err)
		}
	})

	eventually(t, "the example executor's registration", func() bool {
		live, err := api.GroupExecutors(ctx, group.ID)
		return err == nil && len(live) == 1
	})
	return &harness{api: api, group: group, gates: gs}
}

// eventually polls cond every 20 ms for up to 15 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wait blocks until ch is closed, for up to 15 s.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(15 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// job creates a manually triggered job on the gate handler.
func (h *harness) job(t *testing.T, desc string, block xjob.BlockStrategy, timeoutSeconds int) xjob.Job {
	t.Helper()
	j, err := h.api.JobCreate(t.Context(), xjob.Job{
		GroupID: h.group.ID, Description: desc, Author: "e2e", ScheduleType: xjob.ScheduleNone,
		Handler: gateHandler, BlockStrategy: block, TimeoutSeconds: timeoutSeconds,
	})
	if err != nil {
		t.Fatalf("create job %q: %v", desc, err)
	}
	return j
}

// trigger fires job once with param (POST /v1/jobs/{id}/trigger).
func (h *harness) trigger(t *testing.T, job xjob.Job, param string) {
	t.Helper()
	if _, err := h.api.JobTrigger(t.Context(), job.ID, adminclient.TriggerParams{ExecutorParam: &param}); err != nil {
		t.Fatalf("trigger %s: %v", param, err)
	}
}

// log waits until the trigger log of job with param satisfies cond.
func (h *harness) log(t *testing.T, job xjob.Job, param, what string, cond func(xjob.Log) bool) xjob.Log {
	t.Helper()
	var found xjob.Log
	eventually(t, param+": "+what, func() bool {
		page, err := h.api.LogList(t.Context(), adminclient.LogListParams{Job: job.ID, Limit: 100})
		if err != nil {
			return false
		}
		for _, l := range page.Items {
			if l.ExecutorParam == param && cond(l) {
				found = l
				return true
			}
		}
		return false
	})
	return found
}

func triggered(l xjob.Log) bool { return l.Triggered() }
func handled(l xjob.Log) bool   { return l.Handled() }

func TestExampleExecutorAgainstLocal(t *testing.T) {
	t.Parallel()
	h := setup(t)

	t.Run("the example's handlers", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		dj, err := h.api.JobCreate(ctx, xjob.Job{GroupID: h.group.ID, Description: "demo handler", Author: "e2e",
			ScheduleType: xjob.ScheduleNone, Handler: demo.DemoHandler})
		if err != nil {
			t.Fatal(err)
		}
		sj, err := h.api.JobCreate(ctx, xjob.Job{GroupID: h.group.ID, Description: "sharding handler", Author: "e2e",
			ScheduleType: xjob.ScheduleNone, Handler: demo.ShardingHandler, RouteStrategy: xjob.RouteShardingBroadcast})
		if err != nil {
			t.Fatal(err)
		}
		h.trigger(t, dj, "hello")
		h.trigger(t, dj, "fail")
		h.trigger(t, sj, "")
		for _, c := range []struct {
			job         xjob.Job
			param       string
			code        int
			msg         string
			logContains string
		}{
			{dj, "hello", xjob.CodeSuccess, "demo done", `param "hello"`},
			{dj, "fail", xjob.CodeFail, "asked to fail", "step 5 of 5"},
			{sj, "", xjob.CodeSuccess, "shard 0/1 done", "processing item 9"},
		} {
			l := h.log(t, c.job, c.param, "handled", handled)
			if l.TriggerCode != xjob.CodeSuccess {
				t.Errorf("%s %q: trigger %d %q, want 200", c.job.Handler, c.param, l.TriggerCode, l.TriggerMsg)
			}
			if l.HandleCode != c.code || l.HandleMsg != c.msg {
				t.Errorf("%s %q: handle %d %q, want %d %q", c.job.Handler, c.param, l.HandleCode, l.HandleMsg, c.code, c.msg)
			}
			res, err := h.api.LogExecutorLog(ctx, l.ID, 1)
			if err != nil || !strings.Contains(res.LogContent, c.logContains) {
				t.Errorf("%s %q: executor log (err %v) lacks %q:\n%s", c.job.Handler, c.param, err, c.logContains, res.LogContent)
			}
		}
	})

	t.Run("serial execution runs every trigger, in order", func(t *testing.T) {
		t.Parallel()
		j := h.job(t, "serial", xjob.BlockSerialExecution, 0)
		params := []string{"serial-1", "serial-2", "serial-3"}
		h.trigger(t, j, params[0])
		wait(t, h.gates.get(params[0]).started, "serial-1 to start")
		// Each later trigger is accepted (queued on the job's worker)
		// before the next is sent, so the queue order is known.
		for _, p := range params[1:] {
			h.trigger(t, j, p)
			if l := h.log(t, j, p, "triggered", triggered); l.TriggerCode != xjob.CodeSuccess {
				t.Fatalf("%s trigger: %d %s", p, l.TriggerCode, l.TriggerMsg)
			}
		}
		for i, p := range params {
			g := h.gates.get(p)
			wait(t, g.started, p+" to start")
			for _, later := range params[i+1:] {
				if closed(h.gates.get(later).started) {
					t.Fatalf("%s started while %s was running", later, p)
				}
			}
			close(g.release)
		}
		var prev xjob.Log
		for _, p := range params {
			l := h.log(t, j, p, "handled", handled)
			if l.HandleCode != xjob.CodeSuccess || l.HandleMsg != "released "+p {
				t.Errorf("%s: handle %d %q, want 200 %q", p, l.HandleCode, l.HandleMsg, "released "+p)
			}
			// Runs are serial (checked on the gates above); the admin may
			// record results of one callback batch concurrently, so only the
			// log order is checked here, not the handle times.
			if prev.ID != 0 && l.ID <= prev.ID {
				t.Errorf("%s (log %d, handled %d) not after %s (log %d, handled %d)",
					p, l.ID, l.HandleTime, prev.ExecutorParam, prev.ID, prev.HandleTime)
			}
			prev = l
		}
		var order []string
		for _, p := range h.gates.startOrder() {
			if strings.HasPrefix(p, "serial-") {
				order = append(order, p)
			}
		}
		if !slices.Equal(order, params) {
			t.Errorf("start order %v, want %v", order, params)
		}
	})

	t.Run("discard later refuses the trigger while one runs", func(t *testing.T) {
		t.Parallel()
		j := h.job(t, "discard", xjob.BlockDiscardLater, 0)
		h.trigger(t, j, "discard-1")
		first := h.gates.get("discard-1")
		wait(t, first.started, "discard-1 to start")
		h.trigger(t, j, "discard-2")
		l := h.log(t, j, "discard-2", "triggered", triggered)
		if l.TriggerCode != xjob.CodeFail || !strings.Contains(l.TriggerMsg, protocol.MsgDiscardLater) {
			t.Errorf("discard-2: trigger %d %q, want 500 containing %q", l.TriggerCode, l.TriggerMsg, protocol.MsgDiscardLater)
		}
		close(first.release)
		if l := h.log(t, j, "discard-1", "handled", handled); l.HandleCode != xjob.CodeSuccess {
			t.Errorf("discard-1: handle %d %q, want 200", l.HandleCode, l.HandleMsg)
		}
		if closed(h.gates.get("discard-2").started) {
			t.Error("discard-2 ran")
		}
	})

	t.Run("cover early kills the running trigger for the new one", func(t *testing.T) {
		t.Parallel()
		j := h.job(t, "cover", xjob.BlockCoverEarly, 0)
		h.trigger(t, j, "cover-1")
		first := h.gates.get("cover-1")
		wait(t, first.started, "cover-1 to start")
		h.trigger(t, j, "cover-2")
		if l := h.log(t, j, "cover-2", "triggered", triggered); l.TriggerCode != xjob.CodeSuccess {
			t.Fatalf("cover-2 trigger: %d %s", l.TriggerCode, l.TriggerMsg)
		}
		wait(t, first.cancelled, "cover-1 to be cancelled")
		const want = "block strategy effect：Cover Early [job running, killed]"
		if l := h.log(t, j, "cover-1", "handled", handled); l.HandleCode != xjob.CodeFail || l.HandleMsg != want {
			t.Errorf("cover-1: handle %d %q, want 500 %q", l.HandleCode, l.HandleMsg, want)
		}
		second := h.gates.get("cover-2")
		wait(t, second.started, "cover-2 to start")
		close(second.release)
		if l := h.log(t, j, "cover-2", "handled", handled); l.HandleCode != xjob.CodeSuccess {
			t.Errorf("cover-2: handle %d %q, want 200", l.HandleCode, l.HandleMsg)
		}
	})

	t.Run("timeout reports 502", func(t *testing.T) {
		t.Parallel()
		j := h.job(t, "timeout", xjob.BlockSerialExecution, 1)
		h.trigger(t, j, "timeout-1")
		g := h.gates.get("timeout-1")
		wait(t, g.started, "timeout-1 to start")
		// Never released: the executor's 1 s timeout ends it.
		l := h.log(t, j, "timeout-1", "handled", handled)
		if l.HandleCode != xjob.CodeTimeout || !strings.HasPrefix(l.HandleMsg, "job execute timeout") {
			t.Errorf("timeout-1: handle %d %q, want 502 job execute timeout", l.HandleCode, l.HandleMsg)
		}
		wait(t, g.cancelled, "timeout-1's context to end")
	})

	t.Run("kill through the admin API", func(t *testing.T) {
		t.Parallel()
		j := h.job(t, "kill", xjob.BlockSerialExecution, 0)
		h.trigger(t, j, "kill-1")
		g := h.gates.get("kill-1")
		wait(t, g.started, "kill-1 to start")
		l := h.log(t, j, "kill-1", "running", func(l xjob.Log) bool { return l.Running() })
		// Two results race: the kill's own (admin.KillMsg, recorded once
		// the executor acknowledged /kill) and the executor's callback for
		// the killed run, which the SDK sends at once. Whichever is
		// first, the log reads 500 "job killed manually".
		killed, err := h.api.LogKill(t.Context(), l.ID)
		if err != nil {
			t.Fatalf("kill log %d: %v", l.ID, err)
		}
		const want = admin.KillMsg
		if killed.HandleCode != xjob.CodeFail || killed.HandleMsg != want {
			t.Errorf("killed log: handle %d %q, want 500 %q", killed.HandleCode, killed.HandleMsg, want)
		}
		wait(t, g.cancelled, "kill-1's context to end")
		// Once the executor's callback went out (the run log notes it),
		// the log must still hold the first result.
		var runLog string
		eventually(t, "kill-1's callback in its run log", func() bool {
			res, err := h.api.LogExecutorLog(t.Context(), l.ID, 1)
			runLog = res.LogContent
			return err == nil && strings.Contains(runLog, "xjob job callback finish")
		})
		for _, line := range []string{"gate kill-1 started", "JobThread toStop, stopReason:scheduling center kill job."} {
			if !strings.Contains(runLog, line) {
				t.Errorf("run log lacks %q:\n%s", line, runLog)
			}
		}
		after, err := h.api.LogGet(t.Context(), l.ID)
		if err != nil {
			t.Fatal(err)
		}
		if after.HandleCode != xjob.CodeFail || after.HandleMsg != want {
			t.Errorf("after the executor's callback: handle %d %q, want 500 %q", after.HandleCode, after.HandleMsg, want)
		}
	})
}
