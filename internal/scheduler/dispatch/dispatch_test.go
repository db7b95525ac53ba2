package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/dispatch"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/internal/scheduler/route"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

var t0 = time.UnixMilli(1_800_000_000_000).UTC()

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// executor is a protocol-speaking test executor answering /run with code
// (and msg, "boom" by default on failure), and /log with a file for the
// log ids in hasLog.
type executor struct {
	srv    *httptest.Server
	code   int
	msg    string
	mu     sync.Mutex
	runs   []protocol.TriggerParam
	hasLog map[int64]bool
}

func newExecutor(t *testing.T, code int) *executor {
	e := &executor{code: code, msg: map[bool]string{true: "boom"}[code != 200], hasLog: map[int64]bool{}}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		switch r.URL.Path {
		case "/run":
			var p protocol.TriggerParam
			_ = json.NewDecoder(r.Body).Decode(&p)
			e.runs = append(e.runs, p)
		case "/log":
			var p protocol.LogParam
			_ = json.NewDecoder(r.Body).Decode(&p)
			res := protocol.LogResult{FromLineNum: 1, LogContent: protocol.MsgLogFileNotExists, IsEnd: true}
			if e.hasLog[p.LogID] {
				res = protocol.LogResult{FromLineNum: 1, ToLineNum: 2, LogContent: "started\nworking\n"}
			}
			content, _ := json.Marshal(res)
			_ = json.NewEncoder(w).Encode(protocol.ReturnT{Code: 200, Content: content})
			return
		}
		_ = json.NewEncoder(w).Encode(protocol.ReturnT{Code: e.code, Msg: e.msg})
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *executor) got() []protocol.TriggerParam {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]protocol.TriggerParam(nil), e.runs...)
}

type env struct {
	db  *sqlitestore.DB
	clk *clock.Fake
	d   *dispatch.Dispatcher
}

func setup(t *testing.T) env {
	t.Helper()
	return setupWith(t, nil)
}

// setupWith is setup with the dispatcher's (and registry's) store wrapped
// by wrap, when not nil; env.db stays the bare store for fixtures.
func setupWith(t *testing.T, wrap func(driver.Store) driver.Store) env {
	t.Helper()
	return setupConfig(t, wrap, dispatch.Config{})
}

// setupConfig is setupWith with cfg's tunables; it sets cfg's ports.
func setupConfig(t *testing.T, wrap func(driver.Store) driver.Store, cfg dispatch.Config) env {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	db, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "x.db"), sqlitestore.Options{Shards: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	client, err := execclient.New(execclient.Options{ConnectTimeout: time.Second, ReadTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var store driver.Store = db
	if wrap != nil {
		store = wrap(db)
	}
	reg, err := registry.New(registry.Config{Store: store, Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	cb, err := callback.New(callback.Config{Store: db, Queues: db, Alarmer: alarm.Log{Logger: quiet}, Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Executors, cfg.Router = store, client, route.New(route.Options{Clock: clk, Prober: client})
	cfg.Addresses, cfg.Completer, cfg.Clock, cfg.Logger = reg, cb, clk, quiet
	d, err := dispatch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return env{db: db, clk: clk, d: d}
}

func (e env) group(t *testing.T, addrs ...string) xjob.Group {
	t.Helper()
	g := xjob.Group{AppName: "demo-app", Title: "demo"}
	if len(addrs) > 0 {
		g.AddressType, g.AddressList = xjob.AddressManual, addrs
	}
	g, err := e.db.GroupInsert(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func (e env) job(t *testing.T, g xjob.Group, edit func(*xjob.Job)) xjob.Job {
	t.Helper()
	j := xjob.Job{GroupID: g.ID, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "60",
		Handler: "demo", Param: "p", TriggerStatus: xjob.StatusRunning, TriggerNextTime: t0.Add(time.Hour).UnixMilli()}
	j.ApplyDefaults()
	if edit != nil {
		edit(&j)
	}
	j, err := e.db.JobInsert(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func cronTask(j xjob.Job) fire.DispatchTask {
	return fire.DispatchTask{Occurrence: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerCron, FireTime: t0.UnixMilli()}, Revision: j.Revision}
}

func (e env) pending(t *testing.T) []fire.DispatchTask {
	t.Helper()
	ds, err := e.db.Dispatch(fire.LaneFast).Receive(context.Background(), driver.ReceiveParams{Max: 10, Visibility: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var out []fire.DispatchTask
	for _, d := range ds {
		out = append(out, d.Msg)
	}
	return out
}

func TestDispatchRunsTriggerParam(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ex := newExecutor(t, 200)
	j := e.job(t, e.group(t, ex.srv.URL), func(j *xjob.Job) {
		j.TimeoutSeconds, j.BlockStrategy = 30, xjob.BlockDiscardLater
	})
	out, err := e.d.Dispatch(context.Background(), cronTask(j))
	if err != nil || len(out.Logs) != 1 {
		t.Fatalf("Dispatch = %+v, %v", out, err)
	}
	l := out.Logs[0]
	want := protocol.TriggerParam{JobID: j.ID, ExecutorHandler: "demo", ExecutorParams: "p", ExecutorBlockStrategy: "DISCARD_LATER",
		ExecutorTimeout: 30, LogID: l.ID, LogDateTime: t0.UnixMilli(), GlueType: "BEAN", BroadcastIndex: 0, BroadcastTotal: 1}
	if got := ex.got(); len(got) != 1 || got[0] != want {
		t.Fatalf("executor got %+v, want %+v", got, want)
	}
	stored, err := e.db.LogGet(context.Background(), l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.TriggerCode != 200 || stored.ExecutorAddress != ex.srv.URL || stored.ScheduledTime != t0.UnixMilli() ||
		!strings.Contains(stored.TriggerMsg, "Route strategy: FIRST") {
		t.Fatalf("stored log = %+v", stored)
	}
}

func TestDispatchShardingBroadcast(t *testing.T) {
	t.Parallel()
	e := setup(t)
	exs := []*executor{newExecutor(t, 200), newExecutor(t, 200), newExecutor(t, 200)}
	j := e.job(t, e.group(t, exs[0].srv.URL, exs[1].srv.URL, exs[2].srv.URL), func(j *xjob.Job) {
		j.RouteStrategy = xjob.RouteShardingBroadcast
	})
	out, err := e.d.Dispatch(context.Background(), cronTask(j))
	if err != nil || len(out.Logs) != 3 {
		t.Fatalf("Dispatch = %+v, %v", out, err)
	}
	for i, ex := range exs {
		got := ex.got()
		if len(got) != 1 || got[0].BroadcastIndex != i || got[0].BroadcastTotal != 3 {
			t.Errorf("executor %d got %+v, want shard %d/3", i, got, i)
		}
		if out.Logs[i].ExecutorShardingParam != fire.ShardingParam(i, 3) {
			t.Errorf("log %d sharding = %q", i, out.Logs[i].ExecutorShardingParam)
		}
	}
	// Redelivery: all three shards are already triggered.
	out, err = e.d.Dispatch(context.Background(), cronTask(j))
	if err != nil || out.Duplicates != 3 || len(out.Logs) != 0 {
		t.Fatalf("redelivery = %+v, %v; want 3 duplicates", out, err)
	}
	// A retried shard re-runs only itself.
	one := 0
	retry := fire.DispatchTask{Occurrence: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerRetry, Ref: "77"},
		ShardIndex: 1, ShardTotal: 3, FailRetryCount: &one}
	if out, err = e.d.Dispatch(context.Background(), retry); err != nil || len(out.Logs) != 1 {
		t.Fatalf("retry = %+v, %v", out, err)
	}
	if n := len(exs[1].got()); n != 2 {
		t.Errorf("shard 1 executor ran %d times, want 2", n)
	}
	if n := len(exs[0].got()) + len(exs[2].got()); n != 2 {
		t.Errorf("other shards ran %d times, want 2 (no re-run)", n)
	}
}

func TestDispatchFailureRetriesThenRecords(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.job(t, e.group(t), func(j *xjob.Job) { j.FailRetryCount = 2 }) // automatic group, no executor alive
	out, err := e.d.Dispatch(context.Background(), cronTask(j))
	if err != nil || len(out.Logs) != 1 {
		t.Fatalf("Dispatch = %+v, %v", out, err)
	}
	l, _ := e.db.LogGet(context.Background(), out.Logs[0].ID)
	if l.TriggerCode != 500 || !strings.Contains(l.TriggerMsg, "no executor address") {
		t.Fatalf("log = %+v, want a failed trigger naming the missing address", l)
	}
	e.clk.Advance(callback.DefaultRetryDelay) // the retry waits the retry delay
	retries := e.pending(t)
	if len(retries) != 1 || retries[0].Occurrence.Type != xjob.TriggerRetry || retries[0].FailRetryCount == nil || *retries[0].FailRetryCount != 1 {
		t.Fatalf("retry tasks = %+v, want one RETRY with count 1", retries)
	}
}

func TestDispatchExecutorRejects(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ex := newExecutor(t, 500)
	j := e.job(t, e.group(t, ex.srv.URL), nil)
	out, err := e.d.Dispatch(context.Background(), cronTask(j))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := e.db.LogGet(context.Background(), out.Logs[0].ID)
	if l.TriggerCode != 500 || !strings.Contains(l.TriggerMsg, "boom") {
		t.Fatalf("log = %+v, want trigger code 500 with the executor's message", l)
	}
}

func TestDispatchManualOverrides(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, b := newExecutor(t, 200), newExecutor(t, 200)
	j := e.job(t, e.group(t, a.srv.URL, b.srv.URL+"/"), func(j *xjob.Job) { j.TriggerStatus = xjob.StatusStopped })
	param := "manual-param"
	task := fire.DispatchTask{Occurrence: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerManual, Ref: "req-1"},
		Param: &param, AddressList: []string{b.srv.URL}}
	out, err := e.d.Dispatch(context.Background(), task)
	if err != nil || len(out.Logs) != 1 {
		t.Fatalf("manual trigger of a stopped job = %+v, %v; want it to run", out, err)
	}
	if len(a.got()) != 0 || len(b.got()) != 1 || b.got()[0].ExecutorParams != param {
		t.Fatalf("a got %v, b got %v; want only b with the manual param", a.got(), b.got())
	}
	if !strings.Contains(out.Logs[0].TriggerMsg, "Executor registry type: manual") {
		t.Errorf("trigger msg = %q", out.Logs[0].TriggerMsg)
	}
}

// An override naming an address outside the group fails the trigger with
// no call, unless the dispatcher allows any address.
func TestDispatchOverrideOutsideGroup(t *testing.T) {
	t.Parallel()
	for _, anyAddr := range []bool{false, true} {
		e := setupConfig(t, nil, dispatch.Config{AnyTriggerAddress: anyAddr})
		a, other := newExecutor(t, 200), newExecutor(t, 200)
		j := e.job(t, e.group(t, a.srv.URL), nil)
		task := fire.DispatchTask{Occurrence: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerManual, Ref: "req-1"},
			AddressList: []string{other.srv.URL}}
		out, err := e.d.Dispatch(context.Background(), task)
		if err != nil || len(out.Logs) != 1 {
			t.Fatalf("any=%v: %+v, %v", anyAddr, out, err)
		}
		l, _ := e.db.LogGet(context.Background(), out.Logs[0].ID)
		if anyAddr {
			if len(other.got()) != 1 || l.TriggerCode != 200 {
				t.Errorf("allowed override: other got %d calls, log %+v", len(other.got()), l)
			}
			continue
		}
		if len(other.got()) != 0 || len(a.got()) != 0 || l.TriggerCode == 200 ||
			!strings.Contains(l.TriggerMsg, "is not an address of group") {
			t.Errorf("foreign override: other got %d calls, a %d, log %d %q", len(other.got()), len(a.got()), l.TriggerCode, l.TriggerMsg)
		}
	}
}

func TestDispatchDropsStaleScheduledTasks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	ex := newExecutor(t, 200)
	g := e.group(t, ex.srv.URL)
	// A person stops a job (admin bumps the revision with the status).
	stopped := e.job(t, g, nil)
	stoppedTask := cronTask(stopped)
	stopped.TriggerStatus, stopped.Revision = xjob.StatusStopped, stopped.Revision+1
	if _, err := e.db.JobUpdate(ctx, driver.JobUpdateParams{Job: stopped, ExpectVersion: stopped.Version}); err != nil {
		t.Fatal(err)
	}
	edited := e.job(t, g, nil)
	task := cronTask(edited)
	task.Revision = edited.Revision + 1
	for name, tk := range map[string]fire.DispatchTask{"stopped": stoppedTask, "edited": task,
		"deleted": {Occurrence: fire.Occurrence{JobID: 999, Type: xjob.TriggerCron, FireTime: 1}}} {
		out, err := e.d.Dispatch(ctx, tk)
		if err != nil || !out.Dropped {
			t.Errorf("%s: %+v, %v; want dropped", name, out, err)
		}
	}
	if n := len(ex.got()); n != 0 {
		t.Fatalf("executor ran %d stale tasks", n)
	}
}

// A one-shot schedule: the scan pushes the last fire, finds no next time
// and stops the job. That stop is not a person's: the fire must still run.
func TestDispatchRunsLastFireOfJobStoppedByScan(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	ex := newExecutor(t, 200)
	j := e.job(t, e.group(t, ex.srv.URL), nil)
	if err := e.db.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: j.Version, Stop: true}); err != nil {
		t.Fatal(err)
	}
	out, err := e.d.Dispatch(ctx, cronTask(j))
	if err != nil || out.Dropped || len(ex.got()) != 1 {
		t.Fatalf("Dispatch = %+v, %v; executor ran %d; want the last fire to run", out, err, len(ex.got()))
	}
}

func TestDispatchFailover(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	live := newExecutor(t, 200)
	j := e.job(t, e.group(t, deadURL, live.srv.URL), func(j *xjob.Job) { j.RouteStrategy = xjob.RouteFailover })
	out, err := e.d.Dispatch(context.Background(), cronTask(j))
	if err != nil || len(out.Logs) != 1 {
		t.Fatalf("Dispatch = %+v, %v", out, err)
	}
	if out.Logs[0].ExecutorAddress != live.srv.URL || len(live.got()) != 1 {
		t.Fatalf("routed to %q, want the live executor", out.Logs[0].ExecutorAddress)
	}
	if !strings.Contains(out.Logs[0].TriggerMsg, deadURL) {
		t.Errorf("trigger msg lacks the failover trail: %q", out.Logs[0].TriggerMsg)
	}
}

func TestDispatchRejectsMalformedTask(t *testing.T) {
	t.Parallel()
	e := setup(t)
	_, err := e.d.Dispatch(context.Background(), fire.DispatchTask{Occurrence: fire.Occurrence{JobID: 1, Type: "WHENEVER"}})
	var verr *xjob.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("err = %v, want a ValidationError", err)
	}
	if disp := e.d.Dispose(err, 1); !disp.Ack {
		t.Error("a malformed task must be dropped, not retried")
	}
	if disp := e.d.Dispose(dispatch.ErrInFlight, 1); disp.Ack || disp.RetryAfter != 30*time.Second {
		t.Errorf("in-flight disposition = %+v, want retry after the claim TTL", disp)
	}
}

// A cluster node retries an occurrence held elsewhere after its
// InFlightRetry, not the claim TTL (a dead node's claims are released
// sooner); a longer setting is capped at the claim TTL.
func TestDisposeInFlightRetry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		retry, want time.Duration
	}{
		{0, 30 * time.Second},
		{time.Second, time.Second},
		{time.Hour, 30 * time.Second},
	} {
		e := setupConfig(t, nil, dispatch.Config{InFlightRetry: tc.retry})
		if disp := e.d.Dispose(dispatch.ErrInFlight, 1); disp.Ack || disp.RetryAfter != tc.want {
			t.Errorf("InFlightRetry %v: disposition %+v, want retry after %v", tc.retry, disp, tc.want)
		}
	}
}

// A dispatcher routed a log to an executor and died before recording the
// reply. The one that takes the log over asks the executor first (/log)
// and, where it already has the run, records it instead of sending it again.
func TestDispatchTakeoverDoesNotResendARunTheExecutorHas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		hasLog   bool
		runCode  int
		runMsg   string
		wantRuns int
		wantMsg  string
	}{
		{"executor has the run", true, 200, "", 0, "recovered: the executor already has log"},
		{"executor never got it", false, 200, "", 1, "code: 200"},
		{"executor still queues it", false, 500, "repeate trigger job, logId:1", 1, "recovered: repeate trigger job"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ctx := context.Background()
			ex := newExecutor(t, tt.runCode)
			ex.msg = tt.runMsg
			j := e.job(t, e.group(t, ex.srv.URL), nil)
			task := cronTask(j)
			dead, err := e.db.LogCreate(ctx, xjob.Log{OccurrenceID: task.Occurrence.ID(0), JobID: j.ID, GroupID: j.GroupID,
				TriggerType: xjob.TriggerCron, ScheduledTime: t0.UnixMilli(), TriggerTime: t0.UnixMilli(),
				ExecutorAddress: ex.srv.URL, ClaimUntil: t0.Add(30 * time.Second).UnixMilli()})
			if err != nil {
				t.Fatal(err)
			}
			ex.mu.Lock()
			ex.hasLog[dead.ID] = tt.hasLog
			ex.mu.Unlock()
			e.clk.Advance(31 * time.Second)
			out, err := e.d.Dispatch(ctx, task)
			if err != nil || len(out.Logs) != 1 {
				t.Fatalf("Dispatch = %+v, %v", out, err)
			}
			if n := len(ex.got()); n != tt.wantRuns {
				t.Errorf("executor got %d /run calls, want %d", n, tt.wantRuns)
			}
			l, _ := e.db.LogGet(ctx, dead.ID)
			if l.TriggerCode != 200 || !strings.Contains(l.TriggerMsg, tt.wantMsg) {
				t.Errorf("log = code %d msg %q; want 200 with %q", l.TriggerCode, l.TriggerMsg, tt.wantMsg)
			}
		})
	}
}
