package admin_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// executor is a stand-in for an executor's /kill and /log endpoints: it
// records calls and answers with canned replies.
type executor struct {
	mu       sync.Mutex
	kills    []int64
	logCalls []protocol.LogParam
	killRT   protocol.ReturnT
	logRes   protocol.LogResult
	// onKill, when set, runs before /kill answers: the executor's own
	// callback for the killed run, racing the admin's kill result.
	onKill func()
	srv    *httptest.Server
}

func newExecutor(t *testing.T) *executor {
	e := &executor{killRT: protocol.OK()}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		defer e.mu.Unlock()
		var rt protocol.ReturnT
		switch r.URL.Path {
		case "/kill":
			var p protocol.KillParam
			_ = json.Unmarshal(body, &p)
			e.kills = append(e.kills, p.JobID)
			rt = e.killRT
			if e.onKill != nil {
				e.onKill()
			}
		case "/log":
			var p protocol.LogParam
			_ = json.Unmarshal(body, &p)
			e.logCalls = append(e.logCalls, p)
			res := e.logRes
			res.FromLineNum = p.FromLineNum
			c, _ := json.Marshal(res)
			rt = protocol.ReturnT{Code: 200, Content: c}
		default:
			rt = protocol.Fail("uri-mapping not found")
		}
		_ = json.NewEncoder(w).Encode(rt)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *executor) killed() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int64(nil), e.kills...)
}

type env struct {
	t     *testing.T
	ctx   context.Context
	path  string
	db    *sqlitestore.DB
	clk   *clock.Fake
	svc   *admin.Service
	exec  *executor
	group xjob.Group
	cb    *callback.Service
}

func setup(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(start)
	path := filepath.Join(t.TempDir(), "xjob.db")
	db, err := sqlitestore.Open(ctx, path, sqlitestore.Options{Shards: 4, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cb, err := callback.New(callback.Config{Store: db, Queues: db, Alarmer: alarm.Log{Logger: quiet}, Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ec, err := execclient.New(execclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ec.Close)
	n := 0
	svc, err := admin.New(admin.Config{Store: db, Queues: db, Executors: ec, Finisher: cb, Clock: clk, Logger: quiet,
		NewRequestID: func() string { n++; return "req" + strconv.Itoa(n) }})
	if err != nil {
		t.Fatal(err)
	}
	g, err := svc.CreateGroup(ctx, xjob.Group{AppName: "xjob-demo", Title: "demo", AddressType: xjob.AddressAuto})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, path: path, db: db, clk: clk, svc: svc, exec: newExecutor(t), group: g, cb: cb}
}

// spec is a valid job in the env's group; mutate it before creating.
func (e *env) spec(typ xjob.ScheduleType, conf string) xjob.Job {
	return xjob.Job{GroupID: e.group.ID, Description: "demo job", Author: "ops", Handler: "demoHandler",
		ScheduleType: typ, ScheduleConf: conf}
}

func (e *env) create(j xjob.Job) xjob.Job {
	e.t.Helper()
	out, err := e.svc.CreateJob(e.ctx, j)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) jobCount() int {
	e.t.Helper()
	p, err := e.db.JobList(e.ctx, driver.JobListParams{})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(p.Jobs)
}

// queued drains the fast lane.
func (e *env) queued() []fire.DispatchTask {
	e.t.Helper()
	ds, err := e.db.Dispatch(fire.LaneFast).Receive(e.ctx, driver.ReceiveParams{Max: 100, Visibility: time.Hour})
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]fire.DispatchTask, len(ds))
	for i, d := range ds {
		out[i] = d.Msg
	}
	return out
}

// runningLog stores a log as dispatch leaves it after a successful /run
// on the env's executor.
func (e *env) runningLog(j xjob.Job, triggerCode int) xjob.Log {
	e.t.Helper()
	l, err := e.db.LogCreate(e.ctx, xjob.Log{
		OccurrenceID: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerManual, Ref: strconv.FormatInt(time.Now().UnixNano(), 10)}.ID(0),
		JobID:        j.ID, GroupID: j.GroupID, TriggerType: xjob.TriggerManual, TriggerTime: clock.Millis(e.clk),
		ExecutorFailRetryCount: j.FailRetryCount,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.db.LogTriggered(e.ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: e.exec.srv.URL + "/",
		TriggerCode: triggerCode, TriggerMsg: "trigger"}); err != nil {
		e.t.Fatal(err)
	}
	l, err = e.db.LogGet(e.ctx, l.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

func problemFields(t *testing.T, err error) []string {
	t.Helper()
	var ve *xjob.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want a validation error, got %v", err)
	}
	var fs []string
	for _, p := range ve.Problems {
		fs = append(fs, p.Field)
	}
	return fs
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func TestCreateJobNextFireTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		typ      xjob.ScheduleType
		conf     string
		tz       string
		status   xjob.TriggerStatus
		wantNext int64
		wantLast int64 // a fire inside the 5 s horizon is pushed and the job advanced past it
	}{
		// now 12:00:00 → first match strictly after now; fires up to 12:00:05 are pushed at once
		{"cron running", xjob.ScheduleCron, "0/10 * * * * ?", "", xjob.StatusRunning, ms(start.Add(10 * time.Second)), 0},
		{"cron on the window edge", xjob.ScheduleCron, "0/5 * * * * ?", "", xjob.StatusRunning,
			ms(start.Add(10 * time.Second)), ms(start.Add(5 * time.Second))},
		{"cron in a zone", xjob.ScheduleCron, "0 0 14 * * ?", "Europe/Berlin", xjob.StatusRunning, ms(start.Add(time.Hour)), 0},
		{"fix rate running", xjob.ScheduleFixRate, "30", "", xjob.StatusRunning, ms(start.Add(30 * time.Second)), 0},
		{"fix rate inside the horizon", xjob.ScheduleFixRate, "2", "", xjob.StatusRunning,
			ms(start.Add(6 * time.Second)), ms(start.Add(4 * time.Second))},
		{"fix delay running", xjob.ScheduleFixDelay, "30", "", xjob.StatusRunning, ms(start.Add(30 * time.Second)), 0},
		// One fire, then parked at its lost-run fallback (no timeout: DefaultRunWait) + delay, never a grid.
		{"fix delay inside the horizon", xjob.ScheduleFixDelay, "2", "", xjob.StatusRunning,
			ms(start.Add(2*time.Second + xjob.DefaultRunWait + 2*time.Second)), ms(start.Add(2 * time.Second))},
		{"cron stopped", xjob.ScheduleCron, "0/10 * * * * ?", "", xjob.StatusStopped, 0, 0},
		{"none stopped", xjob.ScheduleNone, "", "", xjob.StatusStopped, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			spec := e.spec(tt.typ, tt.conf)
			spec.TimeZone, spec.TriggerStatus = tt.tz, tt.status
			spec.ID, spec.Version, spec.TriggerNextTime, spec.TriggerLastTime = 99, 7, 123, 456 // ignored
			j := e.create(spec)
			if j.TriggerNextTime != tt.wantNext || j.TriggerLastTime != tt.wantLast {
				t.Fatalf("next/last = %d/%d, want %d/%d", j.TriggerNextTime, j.TriggerLastTime, tt.wantNext, tt.wantLast)
			}
			wantVersion := int64(1)
			if tt.wantLast != 0 {
				wantVersion = 2 // the admin's advance past the horizon
			}
			if j.ID == 99 || j.Version != wantVersion || j.Revision != 1 || j.TriggerStatus != tt.status {
				t.Fatalf("stored job = id %d version %d revision %d status %d", j.ID, j.Version, j.Revision, j.TriggerStatus)
			}
			if j.CreatedAt != ms(start) || j.GlueUpdatedAt != ms(start) {
				t.Fatalf("times not set: %+v", j)
			}
		})
	}
}

func TestCreateJobRejected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(e *env, j *xjob.Job)
		fields []string
	}{
		{"missing group", func(_ *env, j *xjob.Job) { j.GroupID = 404 }, []string{"jobGroup"}},
		{"missing child", func(_ *env, j *xjob.Job) { j.ChildJobIDs = []int64{77} }, []string{"childJobIds"}},
		{"missing group and child", func(_ *env, j *xjob.Job) { j.GroupID, j.ChildJobIDs = 404, []int64{77} },
			[]string{"jobGroup", "childJobIds"}},
		{"bad cron", func(_ *env, j *xjob.Job) { j.ScheduleConf = "* * *" }, []string{"scheduleConf"}},
		{"bad fix delay", func(_ *env, j *xjob.Job) { j.ScheduleType, j.ScheduleConf = xjob.ScheduleFixDelay, "0" }, []string{"scheduleConf"}},
		{"running NONE", func(_ *env, j *xjob.Job) { j.ScheduleType, j.TriggerStatus = xjob.ScheduleNone, xjob.StatusRunning },
			[]string{"triggerStatus"}},
		{"bad status", func(_ *env, j *xjob.Job) { j.TriggerStatus = 2 }, []string{"triggerStatus"}},
		{"cron that never fires", func(_ *env, j *xjob.Job) {
			j.ScheduleConf, j.TriggerStatus = "0 0 0 1 1 ? 2020", xjob.StatusRunning
		}, []string{"scheduleConf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			j := e.spec(xjob.ScheduleCron, "0/10 * * * * ?")
			tt.mutate(e, &j)
			_, err := e.svc.CreateJob(e.ctx, j)
			got := problemFields(t, err)
			if len(got) != len(tt.fields) {
				t.Fatalf("problems %v, want %v (%v)", got, tt.fields, err)
			}
			for i := range got {
				if got[i] != tt.fields[i] {
					t.Fatalf("problems %v, want %v", got, tt.fields)
				}
			}
			if n := e.jobCount(); n != 0 {
				t.Fatalf("%d jobs written by a rejected create", n)
			}
		})
	}
}

func TestCreateJobChildExists(t *testing.T) {
	t.Parallel()
	e := setup(t)
	child := e.create(e.spec(xjob.ScheduleNone, ""))
	parent := e.spec(xjob.ScheduleNone, "")
	parent.ChildJobIDs = []int64{child.ID}
	if got := e.create(parent); len(got.ChildJobIDs) != 1 || got.ChildJobIDs[0] != child.ID {
		t.Fatalf("children = %v", got.ChildJobIDs)
	}
}

func TestCreateJobIDBeyondInt32(t *testing.T) {
	t.Parallel()
	e := setup(t)
	first := e.create(e.spec(xjob.ScheduleNone, ""))
	// Move the id space to the int32 edge behind the store's back.
	raw, err := sql.Open("sqlite", e.path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE jobs SET id = ? WHERE id = ?`, math.MaxInt32, first.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.CreateJob(e.ctx, e.spec(xjob.ScheduleNone, ""))
	if !errors.Is(err, xjob.ErrConflict) {
		t.Fatalf("create beyond int32: %v, want conflict", err)
	}
	if n := e.jobCount(); n != 1 {
		t.Fatalf("%d jobs after a refused create, want 1", n)
	}
}

func TestUpdateJobRevisionAndNextTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		running      bool
		edit         func(j *xjob.Job)
		wantRevision int64 // relative to the stored one
		wantNext     func(old int64) int64
	}{
		{"description only", true, func(j *xjob.Job) { j.Description = "renamed" }, 0, same},
		{"param only", true, func(j *xjob.Job) { j.Param = "x=1" }, 0, same},
		{"cron of running job", true, func(j *xjob.Job) { j.ScheduleConf = "0/20 * * * * ?" }, 1,
			at(start.Add(time.Minute + 20*time.Second))},
		{"type of running job", true, func(j *xjob.Job) { j.ScheduleType, j.ScheduleConf = xjob.ScheduleFixRate, "7" }, 1,
			at(start.Add(time.Minute + 7*time.Second))},
		{"zone of running job", true, func(j *xjob.Job) { j.TimeZone = "Asia/Tokyo" }, 1,
			at(start.Add(time.Minute + 10*time.Second))},
		{"route of running job", true, func(j *xjob.Job) { j.RouteStrategy = xjob.RouteRound }, 1, same},
		{"misfire of running job", true, func(j *xjob.Job) { j.MisfireStrategy = xjob.MisfireFireOnceNow }, 1, same},
		{"cron of stopped job", false, func(j *xjob.Job) { j.ScheduleConf = "0/20 * * * * ?" }, 1, same},
		{"status in body is ignored", true, func(j *xjob.Job) { j.TriggerStatus = xjob.StatusStopped }, 0, same},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			spec := e.spec(xjob.ScheduleCron, "0/10 * * * * ?")
			if tt.running {
				spec.TriggerStatus = xjob.StatusRunning
			}
			old := e.create(spec)
			e.clk.Advance(time.Minute) // now 12:01:00; a re-plan starts after now
			in := old
			tt.edit(&in)
			in.Version = 0
			got, err := e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: in})
			if err != nil {
				t.Fatal(err)
			}
			if got.Revision != old.Revision+tt.wantRevision {
				t.Fatalf("revision %d → %d, want +%d", old.Revision, got.Revision, tt.wantRevision)
			}
			if want := tt.wantNext(old.TriggerNextTime); got.TriggerNextTime != want {
				t.Fatalf("next = %s, want %s", time.UnixMilli(got.TriggerNextTime).UTC(), time.UnixMilli(want).UTC())
			}
			if got.Version != old.Version+1 || got.TriggerStatus != old.TriggerStatus || got.CreatedAt != old.CreatedAt {
				t.Fatalf("bookkeeping: %+v (old %+v)", got, old)
			}
			if got.UpdatedAt != ms(start.Add(time.Minute)) {
				t.Fatalf("updatedAt = %d", got.UpdatedAt)
			}
		})
	}
}

func same(old int64) int64 { return old }

func at(t time.Time) func(int64) int64 { return func(int64) int64 { return ms(t) } }

func TestUpdateJobRejected(t *testing.T) {
	t.Parallel()
	e := setup(t)
	old := e.create(e.spec(xjob.ScheduleCron, "0/10 * * * * ?"))
	other := e.create(e.spec(xjob.ScheduleNone, ""))
	tests := []struct {
		name  string
		in    func() admin.UpdateJobParams
		check func(error) bool
	}{
		{"glue type change", func() admin.UpdateJobParams {
			j := old
			j.GlueType = xjob.GlueShell
			return admin.UpdateJobParams{Job: j}
		}, isValidation("glueType")},
		{"self child", func() admin.UpdateJobParams {
			j := old
			j.ChildJobIDs = []int64{old.ID}
			return admin.UpdateJobParams{Job: j}
		}, isValidation("childJobIds")},
		{"missing child", func() admin.UpdateJobParams {
			j := old
			j.ChildJobIDs = []int64{other.ID, 999}
			return admin.UpdateJobParams{Job: j}
		}, isValidation("childJobIds")},
		{"missing group", func() admin.UpdateJobParams {
			j := old
			j.GroupID = 999
			return admin.UpdateJobParams{Job: j}
		}, isValidation("jobGroup")},
		{"stale version", func() admin.UpdateJobParams {
			j := old
			j.Description = "x"
			return admin.UpdateJobParams{Job: j, Version: old.Version + 1}
		}, func(err error) bool { return errors.Is(err, xjob.ErrConflict) }},
		{"missing job", func() admin.UpdateJobParams {
			j := old
			j.ID = 999
			return admin.UpdateJobParams{Job: j}
		}, func(err error) bool { return errors.Is(err, xjob.ErrNotFound) }},
	}
	for _, tt := range tests {
		_, err := e.svc.UpdateJob(e.ctx, tt.in())
		if !tt.check(err) {
			t.Errorf("%s: unexpected error %v", tt.name, err)
		}
	}
	now, err := e.svc.GetJob(e.ctx, old.ID)
	if err != nil || now.Version != old.Version {
		t.Fatalf("rejected updates wrote: %+v %v", now, err)
	}
}

func isValidation(field string) func(error) bool {
	return func(err error) bool {
		var ve *xjob.ValidationError
		return errors.As(err, &ve) && len(ve.Problems) > 0 && ve.Problems[0].Field == field
	}
}

func TestUpdateJobAfterScanAdvance(t *testing.T) {
	t.Parallel()
	e := setup(t)
	spec := e.spec(xjob.ScheduleCron, "0/10 * * * * ?")
	spec.TriggerStatus = xjob.StatusRunning
	old := e.create(spec)
	// The scan advances the job: version bumps, revision does not.
	if err := e.db.JobAdvance(e.ctx, driver.JobAdvanceParams{ID: old.ID, ExpectVersion: old.Version,
		TriggerLastTime: old.TriggerNextTime, TriggerNextTime: old.TriggerNextTime + 10000}); err != nil {
		t.Fatal(err)
	}
	in := old
	in.Description = "renamed"
	// Naming the version read before the advance is a conflict…
	if _, err := e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: in, Version: old.Version}); !errors.Is(err, xjob.ErrConflict) {
		t.Fatalf("stale version: %v", err)
	}
	// …naming none applies to the latest and keeps the scan's progress.
	got, err := e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: in})
	if err != nil {
		t.Fatal(err)
	}
	if got.TriggerNextTime != old.TriggerNextTime+10000 || got.Revision != old.Revision || got.Description != "renamed" {
		t.Fatalf("got %+v", got)
	}
}

func TestStartStop(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.create(e.spec(xjob.ScheduleFixRate, "60"))
	e.clk.Advance(90 * time.Second)

	started, err := e.svc.StartJob(e.ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := ms(start.Add(90*time.Second + time.Minute)); started.TriggerNextTime != want ||
		started.TriggerStatus != xjob.StatusRunning || started.Revision != j.Revision+1 {
		t.Fatalf("started = %+v, want next %d", started, want)
	}
	again, err := e.svc.StartJob(e.ctx, j.ID)
	if err != nil || again.Version != started.Version {
		t.Fatalf("second start wrote: %+v %v", again, err)
	}

	stopped, err := e.svc.StopJob(e.ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stopped.TriggerStatus != xjob.StatusStopped || stopped.TriggerNextTime != 0 || stopped.TriggerLastTime != 0 ||
		stopped.Revision != started.Revision+1 {
		t.Fatalf("stopped = %+v", stopped)
	}
	if again, err := e.svc.StopJob(e.ctx, j.ID); err != nil || again.Version != stopped.Version {
		t.Fatalf("second stop wrote: %+v %v", again, err)
	}

	none := e.create(e.spec(xjob.ScheduleNone, ""))
	if _, err := e.svc.StartJob(e.ctx, none.ID); !isValidation("scheduleType")(err) {
		t.Fatalf("start NONE: %v", err)
	}
	if _, err := e.svc.StartJob(e.ctx, 999); !errors.Is(err, xjob.ErrNotFound) {
		t.Fatalf("start missing: %v", err)
	}
}

func TestTriggerJob(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.create(e.spec(xjob.ScheduleNone, "")) // stopped: manual triggers still run
	param := "override"
	// An override may name a live executor of the group.
	if err := e.db.RegistryUpsert(e.ctx, xjob.RegistryEntry{Group: xjob.RegistryGroupExecutor, Key: e.group.AppName,
		Value: "http://127.0.0.1:9999", UpdatedAt: ms(start)}); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.TriggerJob(e.ctx, admin.TriggerParams{JobID: j.ID, Param: &param,
		AddressList: []string{"http://127.0.0.1:9999/"}})
	if err != nil {
		t.Fatal(err)
	}
	wantOcc := fire.Occurrence{JobID: j.ID, Type: xjob.TriggerManual, Ref: "req1"}
	if res.JobID != j.ID || res.OccurrenceID != wantOcc.ID(0) {
		t.Fatalf("result %+v, want occurrence %s", res, wantOcc.ID(0))
	}
	q := e.queued()
	if len(q) != 1 {
		t.Fatalf("%d tasks queued", len(q))
	}
	task := q[0]
	if task.Occurrence != wantOcc || task.Param == nil || *task.Param != param || len(task.AddressList) != 1 ||
		task.Revision != 0 || task.EnqueuedAt != ms(start) {
		t.Fatalf("task %+v", task)
	}

	for name, p := range map[string]admin.TriggerParams{
		"missing job":  {JobID: 999},
		"bad address":  {JobID: j.ID, AddressList: []string{"not a url"}},
		"user-info":    {JobID: j.ID, AddressList: []string{"http://u:pw@127.0.0.1:9999/"}},
		"other host":   {JobID: j.ID, AddressList: []string{"http://169.254.169.254/latest/"}},
		"other port":   {JobID: j.ID, AddressList: []string{"http://127.0.0.1:9998/"}},
		"long param":   {JobID: j.ID, Param: ptr(string(make([]byte, xjob.MaxParamLen+1)))},
		"invalid id 0": {JobID: 0},
	} {
		if _, err := e.svc.TriggerJob(e.ctx, p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := e.svc.TriggerJob(e.ctx, admin.TriggerParams{JobID: 999}); !errors.Is(err, xjob.ErrNotFound) {
		t.Errorf("missing job: %v", err)
	}
	if q := e.queued(); len(q) != 0 {
		t.Fatalf("rejected triggers queued %d tasks", len(q))
	}
}

func ptr[T any](v T) *T { return &v }

func TestDeleteJob(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.create(e.spec(xjob.ScheduleNone, ""))
	l := e.runningLog(j, 200)
	if err := e.svc.DeleteJob(e.ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteJob(e.ctx, j.ID); !errors.Is(err, xjob.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := e.svc.GetLog(e.ctx, l.ID); err != nil {
		t.Fatalf("log gone with the job: %v", err)
	}
}

func TestNextFireTimes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	spec := e.spec(xjob.ScheduleCron, "0 0 9 * * ?")
	spec.TimeZone = "America/New_York"
	j := e.create(spec)
	ts, err := e.svc.NextFireTimes(e.ctx, j.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 || ts[0].Format(time.RFC3339) != "2026-03-01T09:00:00-05:00" ||
		ts[2].Format(time.RFC3339) != "2026-03-03T09:00:00-05:00" {
		t.Fatalf("next = %v", ts)
	}
	none := e.create(e.spec(xjob.ScheduleNone, ""))
	if _, err := e.svc.NextFireTimes(e.ctx, none.ID, 3); !isValidation("scheduleType")(err) {
		t.Fatalf("NONE: %v", err)
	}
	if _, err := e.svc.NextFireTimes(e.ctx, j.ID, 0); !isValidation("n")(err) {
		t.Fatalf("n=0: %v", err)
	}
}

// TestFixDelayNextFiresAndEdits: a FIX_DELAY job's preview is the one
// fire planned, none while its run is out; an edit that bumps its
// revision keeps the run's fallback rather than firing a delay after now.
func TestFixDelayNextFiresAndEdits(t *testing.T) {
	t.Parallel()
	e := setup(t)
	spec := e.spec(xjob.ScheduleFixDelay, "2")
	spec.TriggerStatus, spec.TimeoutSeconds = xjob.StatusRunning, 60
	j := e.create(spec) // the fire at +2 s is pushed at once, the job parked at +2 + 60 + 2 s
	next := func() []time.Time {
		t.Helper()
		ts, err := e.svc.NextFireTimes(e.ctx, j.ID, 5)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	if ts := next(); len(ts) != 1 || !ts[0].Equal(start.Add(2*time.Second)) {
		t.Fatalf("before the fire: next = %v, want the pushed fire", ts)
	}
	e.clk.Advance(3 * time.Second)
	if ts := next(); len(ts) != 0 {
		t.Fatalf("while the run is out: next = %v, want none", ts)
	}
	parked, err := e.svc.GetJob(e.ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !admin.AfterCurrentRun(&parked, ms(e.clk.Now())) {
		t.Fatalf("job %+v does not read as after the current run", parked)
	}
	edit := parked
	edit.RouteStrategy = xjob.RouteLast // bumps the revision, schedule unchanged
	got, err := e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: edit})
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision == parked.Revision || got.TriggerNextTime != parked.TriggerNextTime {
		t.Fatalf("edit: revision %d→%d, next %d→%d, want the fallback kept", parked.Revision, got.Revision,
			parked.TriggerNextTime, got.TriggerNextTime)
	}
	stopped, err := e.svc.StopJob(e.ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ts := next(); len(ts) != 1 || !ts[0].Equal(e.clk.Now().Add(2*time.Second)) || stopped.TriggerStatus != xjob.StatusStopped {
		t.Fatalf("stopped: next = %v, want what a start now gives", ts)
	}
}

func TestPreviewCron(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr, tz string
		n        int
		want     []string
		field    string
	}{
		{"0/15 * * * * ?", "", 2, []string{"2026-03-01T12:00:15Z", "2026-03-01T12:00:30Z"}, ""},
		{"0 30 2 * * ?", "Europe/Berlin", 1, []string{"2026-03-02T02:30:00+01:00"}, ""},
		{"0 0 0 1 1 ? 2020", "UTC", 3, []string{}, ""},
		{"bad", "UTC", 1, nil, "expr"},
		{"0 * * * * ?", "Mars/Base", 1, nil, "tz"},
		{"0 * * * * ?", "Local", 1, nil, "tz"},
		{"0 * * * * ?", "UTC", 101, nil, "n"},
	}
	for _, tt := range tests {
		ts, err := admin.PreviewCron(tt.expr, tt.tz, start, tt.n)
		if tt.field != "" {
			if !isValidation(tt.field)(err) {
				t.Errorf("%q %q: error %v, want a problem on %s", tt.expr, tt.tz, err, tt.field)
			}
			continue
		}
		if err != nil || len(ts) != len(tt.want) {
			t.Errorf("%q: %v %v", tt.expr, ts, err)
			continue
		}
		for i := range ts {
			if got := ts[i].Format(time.RFC3339); got != tt.want[i] {
				t.Errorf("%q[%d] = %s, want %s", tt.expr, i, got, tt.want[i])
			}
		}
	}
}

func TestGroups(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// Live and dead registrations of the auto group's app.
	for _, r := range []xjob.RegistryEntry{
		{Group: "EXECUTOR", Key: "xjob-demo", Value: "http://b:9999/", UpdatedAt: ms(start)},
		{Group: "EXECUTOR", Key: "xjob-demo", Value: "http://a:9999/", UpdatedAt: ms(start.Add(-30 * time.Second))},
		{Group: "EXECUTOR", Key: "xjob-demo", Value: "http://dead:9999/", UpdatedAt: ms(start.Add(-91 * time.Second))},
		{Group: "EXECUTOR", Key: "other-app", Value: "http://c:9999/", UpdatedAt: ms(start)},
	} {
		if err := e.db.RegistryUpsert(e.ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	execs, err := e.svc.GroupExecutors(e.ctx, e.group.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(execs) != 2 || execs[0].Address != "http://a:9999/" || execs[1].Address != "http://b:9999/" ||
		execs[1].UpdatedAt != ms(start) {
		t.Fatalf("executors = %+v", execs)
	}

	// A second group cannot take an app name in use: executors, apply and
	// export know a group by it.
	if _, err := e.svc.CreateGroup(e.ctx, xjob.Group{AppName: "xjob-demo", Title: "again"}); !isValidation("appname")(err) {
		t.Fatalf("a second group named xjob-demo: %v", err)
	}
	// An automatic group's list comes from the registry, not the request.
	typed := e.group
	typed.Title, typed.AddressList = "again", []string{"http://typed:1/"}
	auto, err := e.svc.UpdateGroup(e.ctx, admin.UpdateGroupParams{Group: typed})
	if err != nil {
		t.Fatal(err)
	}
	if len(auto.AddressList) != 2 || auto.AddressList[0] != "http://a:9999/" {
		t.Fatalf("auto group addresses = %v", auto.AddressList)
	}
	manual, err := e.svc.CreateGroup(e.ctx, xjob.Group{AppName: "manual-app", Title: "manual",
		AddressType: xjob.AddressManual, AddressList: []string{"http://z:1/", "http://y:1/"}})
	if err != nil || manual.AddressList[0] != "http://z:1/" {
		t.Fatalf("manual group = %+v %v", manual, err)
	}
	if _, err := e.svc.CreateGroup(e.ctx, xjob.Group{AppName: "x", Title: ""}); !isValidation("appname")(err) {
		t.Fatalf("bad group: %v", err)
	}

	// Update: conditional on the version when one is given.
	manual.Title = "renamed"
	upd, err := e.svc.UpdateGroup(e.ctx, admin.UpdateGroupParams{Group: manual, Version: manual.Version})
	if err != nil || upd.Title != "renamed" || upd.Version != manual.Version+1 {
		t.Fatalf("update = %+v %v", upd, err)
	}
	if _, err := e.svc.UpdateGroup(e.ctx, admin.UpdateGroupParams{Group: manual, Version: manual.Version}); !errors.Is(err, xjob.ErrConflict) {
		t.Fatalf("stale update: %v", err)
	}
	upd.AppName = "xjob-demo" // renamed onto another group's app name
	if _, err := e.svc.UpdateGroup(e.ctx, admin.UpdateGroupParams{Group: upd}); !isValidation("appname")(err) {
		t.Fatalf("renamed to a taken app name: %v", err)
	}

	// Delete is refused while a job uses the group.
	j := e.create(e.spec(xjob.ScheduleNone, ""))
	if err := e.svc.DeleteGroup(e.ctx, e.group.ID); !errors.Is(err, xjob.ErrConflict) {
		t.Fatalf("delete group in use: %v", err)
	}
	if _, err := e.svc.GetGroup(e.ctx, e.group.ID); err != nil {
		t.Fatalf("group gone after a refused delete: %v", err)
	}
	if err := e.svc.DeleteJob(e.ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteGroup(e.ctx, e.group.ID); err != nil {
		t.Fatalf("delete unused group: %v", err)
	}
	if err := e.svc.DeleteGroup(e.ctx, e.group.ID); !errors.Is(err, xjob.ErrNotFound) {
		t.Fatalf("delete missing group: %v", err)
	}
}

func TestKillLog(t *testing.T) {
	t.Parallel()
	e := setup(t)
	spec := e.spec(xjob.ScheduleNone, "")
	spec.FailRetryCount = 1
	j := e.create(spec)

	l := e.runningLog(j, 200)
	e.clk.Advance(time.Second)
	got, err := e.svc.KillLog(e.ctx, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.HandleCode != xjob.CodeFail || got.HandleMsg != admin.KillMsg || got.HandleTime != ms(start.Add(time.Second)) {
		t.Fatalf("killed log = %+v", got)
	}
	if k := e.exec.killed(); len(k) != 1 || k[0] != j.ID {
		t.Fatalf("executor kills = %v", k)
	}
	// The completion path ran: the failure with a retry left is retried
	// (after the retry delay).
	e.clk.Advance(callback.DefaultRetryDelay)
	if q := e.queued(); len(q) != 1 || q[0].Occurrence.Type != xjob.TriggerRetry {
		t.Fatalf("after kill queued %+v", q)
	}

	// Not running any more (and never: failed trigger): conflict, no executor call.
	failed := e.runningLog(j, 500)
	for _, id := range []int64{l.ID, failed.ID} {
		if _, err := e.svc.KillLog(e.ctx, id); !errors.Is(err, xjob.ErrConflict) {
			t.Fatalf("kill of log %d: %v", id, err)
		}
	}
	if _, err := e.svc.KillLog(e.ctx, 999); !errors.Is(err, xjob.ErrNotFound) {
		t.Fatalf("kill of missing log: %v", err)
	}
	if k := e.exec.killed(); len(k) != 1 {
		t.Fatalf("executor called for non-running logs: %v", k)
	}

	// The executor refuses: the log stays running.
	e.exec.mu.Lock()
	e.exec.killRT = protocol.Fail("boom")
	e.exec.mu.Unlock()
	l2 := e.runningLog(j, 200)
	if _, err := e.svc.KillLog(e.ctx, l2.ID); !errors.Is(err, admin.ErrExecutor) {
		t.Fatalf("kill with executor failure: %v", err)
	}
	if now, _ := e.svc.GetLog(e.ctx, l2.ID); !now.Running() {
		t.Fatalf("log finished although the executor refused: %+v", now)
	}
}

// A kill ends a run with two results: the admin's and the executor's
// report of the killed run, either first. The log reads 500 "job killed
// manually" whichever wins; a report that is not the kill's is kept.
func TestKillLogOutcomeIsTheKills(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		fromExec    string // the executor's callback, sent before /kill answers ("" none)
		wantMsg     string
		wantCode    int
		wantRetried bool
	}{
		{"kill recorded first", "", admin.KillMsg, xjob.CodeFail, true},
		{"executor's report first", callback.ExecutorKilledMsg, admin.KillMsg, xjob.CodeFail, true},
		{"run failed on its own first", "disk full", "disk full", xjob.CodeFail, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			spec := e.spec(xjob.ScheduleNone, "")
			spec.FailRetryCount = 1
			j := e.create(spec)
			l := e.runningLog(j, 200)
			if tc.fromExec != "" {
				e.exec.onKill = func() {
					if errs := e.cb.Callback(e.ctx, []protocol.HandleCallbackParam{{LogID: l.ID, HandleCode: xjob.CodeFail,
						HandleMsg: tc.fromExec}}); errs[0] != nil {
						t.Errorf("executor's callback: %v", errs[0])
					}
				}
			}
			got, err := e.svc.KillLog(e.ctx, l.ID)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := e.svc.GetLog(e.ctx, l.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, lg := range []xjob.Log{got, stored} {
				if lg.HandleCode != tc.wantCode || lg.HandleMsg != tc.wantMsg {
					t.Fatalf("killed log: %d %q, want %d %q", lg.HandleCode, lg.HandleMsg, tc.wantCode, tc.wantMsg)
				}
			}
			e.clk.Advance(callback.DefaultRetryDelay)
			if q := e.queued(); tc.wantRetried != (len(q) == 1 && q[0].Occurrence.Type == xjob.TriggerRetry) {
				t.Fatalf("after kill queued %+v, want one retry: %v", q, tc.wantRetried)
			}
		})
	}
}

func TestExecutorLogEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		trigger   int
		handled   bool
		from, to  int
		wantEnd   bool
		wantCalls int
	}{
		{"more lines, running", 200, false, 1, 3, false, 1},
		{"more lines, handled", 200, true, 1, 3, false, 1},
		{"past the end, running", 200, false, 4, 3, false, 1},
		{"past the end, handled", 200, true, 4, 3, true, 1},
		{"trigger failed", 500, false, 1, 0, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			j := e.create(e.spec(xjob.ScheduleNone, ""))
			l := e.runningLog(j, tt.trigger)
			if tt.handled {
				if _, err := e.db.LogFinish(e.ctx, driver.LogFinishParams{ID: l.ID, HandleTime: 1, HandleCode: 200}); err != nil {
					t.Fatal(err)
				}
			}
			e.exec.mu.Lock()
			e.exec.logRes = protocol.LogResult{ToLineNum: tt.to, LogContent: "line"}
			e.exec.mu.Unlock()
			res, err := e.svc.ExecutorLog(e.ctx, l.ID, tt.from)
			if err != nil {
				t.Fatal(err)
			}
			if res.IsEnd != tt.wantEnd || res.FromLineNum != tt.from {
				t.Fatalf("result %+v, want isEnd %v", res, tt.wantEnd)
			}
			e.exec.mu.Lock()
			calls := append([]protocol.LogParam(nil), e.exec.logCalls...)
			e.exec.mu.Unlock()
			if len(calls) != tt.wantCalls {
				t.Fatalf("%d /log calls", len(calls))
			}
			if len(calls) == 1 && (calls[0] != protocol.LogParam{LogDateTim: l.TriggerTime, LogDateTime: l.TriggerTime, LogID: l.ID, FromLineNum: tt.from}) {
				t.Fatalf("/log param %+v", calls[0])
			}
		})
	}
}

func TestReport(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if err := e.db.ReportAdd(e.ctx, xjob.ReportDay{Day: "2026-02-27", SucCount: 3, FailCount: 1}); err != nil {
		t.Fatal(err)
	}
	days, err := e.svc.Report(e.ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 7 || days[0].Day != "2026-02-23" || days[6].Day != "2026-03-01" || days[4].SucCount != 3 {
		t.Fatalf("default report = %+v", days)
	}
	for _, tt := range []struct{ from, to, field string }{
		{"2026-03-02", "2026-03-01", "from"},
		{"yesterday", "", "from"},
		{"", "2026/03/01", "to"},
		{"2024-01-01", "2026-01-01", "to"},
	} {
		if _, err := e.svc.Report(e.ctx, tt.from, tt.to); !isValidation(tt.field)(err) {
			t.Errorf("report %q..%q: %v", tt.from, tt.to, err)
		}
	}
}

func TestNewRequiresDeps(t *testing.T) {
	t.Parallel()
	if _, err := admin.New(admin.Config{}); err == nil {
		t.Fatal("New accepted an empty config")
	}
}

// Child jobs must not lead back to the job: A→B→C→A would ping-pong
// forever. Diamonds are fine; a refused edit writes nothing.
func TestChildJobCycleRejected(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.create(e.spec(xjob.ScheduleNone, ""))
	b := e.create(e.spec(xjob.ScheduleNone, ""))
	c := e.create(e.spec(xjob.ScheduleNone, ""))
	d := e.create(e.spec(xjob.ScheduleNone, ""))
	setChildren := func(j xjob.Job, ids ...int64) (xjob.Job, error) {
		j.ChildJobIDs = ids
		return e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: j})
	}
	var err error
	if a, err = setChildren(a, b.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	if b, err = setChildren(b, d.ID); err != nil {
		t.Fatal(err)
	}
	if c, err = setChildren(c, d.ID); err != nil { // diamond: A→B→D, A→C→D
		t.Fatalf("diamond refused: %v", err)
	}
	for name, tc := range map[string]struct {
		j    xjob.Job
		kids []int64
	}{
		"self":        {a, []int64{a.ID}},
		"two jobs":    {b, []int64{d.ID, a.ID}},
		"three jobs":  {d, []int64{a.ID}},
		"via diamond": {d, []int64{c.ID}},
	} {
		before, _ := e.svc.GetJob(e.ctx, tc.j.ID)
		_, err := setChildren(before, tc.kids...)
		if f := problemFields(t, err); len(f) != 1 || f[0] != "childJobIds" {
			t.Errorf("%s: fields %v (%v)", name, f, err)
		}
		after, _ := e.svc.GetJob(e.ctx, tc.j.ID)
		if after.Version != before.Version {
			t.Errorf("%s: refused edit was written", name)
		}
	}
	if _, err := setChildren(d, a.ID); err == nil || !strings.Contains(err.Error(),
		fmt.Sprintf("%d → %d → %d → %d", d.ID, a.ID, b.ID, d.ID)) {
		t.Errorf("cycle not named: %v", err)
	}
}

// Overrides outside the group are refused (400, nothing queued) unless the
// service allows any address; the group's stored list counts as its own.
func TestTriggerOverrideAllowList(t *testing.T) {
	t.Parallel()
	e := setup(t)
	manual, err := e.svc.CreateGroup(e.ctx, xjob.Group{AppName: "manual-app", Title: "m", AddressType: xjob.AddressManual,
		AddressList: []string{"http://10.0.0.5:9999/"}})
	if err != nil {
		t.Fatal(err)
	}
	spec := e.spec(xjob.ScheduleNone, "")
	spec.GroupID = manual.ID
	j := e.create(spec)
	if _, err := e.svc.TriggerJob(e.ctx, admin.TriggerParams{JobID: j.ID, AddressList: []string{"http://10.0.0.5:9999"}}); err != nil {
		t.Fatalf("the group's own address: %v", err)
	}
	_, err = e.svc.TriggerJob(e.ctx, admin.TriggerParams{JobID: j.ID, AddressList: []string{"http://10.0.0.6:9999/"}})
	if f := problemFields(t, err); len(f) != 1 || f[0] != "addressList" {
		t.Fatalf("foreign address: %v", err)
	}
	if q := e.queued(); len(q) != 1 {
		t.Fatalf("%d tasks queued, want only the allowed trigger", len(q))
	}

	open, err := admin.New(admin.Config{Store: e.db, Queues: e.db, Executors: nopExecutors{}, Finisher: nopFinisher{},
		Clock: e.clk, AnyTriggerAddress: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.TriggerJob(e.ctx, admin.TriggerParams{JobID: j.ID, AddressList: []string{"http://10.0.0.6:9999/"}}); err != nil {
		t.Fatalf("AnyTriggerAddress: %v", err)
	}
}

type nopExecutors struct{ driver.ExecutorClient }

type nopFinisher struct{}

func (nopFinisher) Finish(context.Context, xjob.Log, int, string) (xjob.Log, error) {
	return xjob.Log{}, nil
}

// TestUpdateJobSavesGlueVersion: an edit that changes a GLUE job's source
// saves a version whatever the caller (the console or /v1); other edits
// and BEAN jobs save none; deleting the job deletes its versions.
func TestUpdateJobSavesGlueVersion(t *testing.T) {
	t.Parallel()
	e := setup(t)
	spec := e.spec(xjob.ScheduleNone, "")
	spec.GlueType, spec.GlueSource, spec.Handler = xjob.GlueShell, "echo 1", ""
	j := e.create(spec)
	edits := []struct {
		name     string
		edit     func(*xjob.Job)
		versions int
	}{
		{"description only", func(j *xjob.Job) { j.Description = "renamed" }, 0},
		{"new source", func(j *xjob.Job) { j.GlueSource, j.GlueRemark = "echo 2", "second" }, 1},
		{"same source", func(j *xjob.Job) { j.Author = "other" }, 1},
		{"newer source", func(j *xjob.Job) { j.GlueSource, j.GlueRemark = "echo 3", "third" }, 2},
	}
	for _, tc := range edits {
		cur, err := e.svc.GetJob(e.ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		tc.edit(&cur)
		if _, err := e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: cur}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		vs, err := e.db.GlueVersionList(e.ctx, j.ID, xjob.MaxGlueVersions)
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != tc.versions {
			t.Fatalf("%s: %d versions, want %d", tc.name, len(vs), tc.versions)
		}
		if len(vs) > 0 && (vs[0].Source != cur.GlueSource || vs[0].Remark != cur.GlueRemark) {
			t.Fatalf("%s: newest version %+v, want source %q remark %q", tc.name, vs[0], cur.GlueSource, cur.GlueRemark)
		}
	}
	if err := e.svc.DeleteJob(e.ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if vs, _ := e.db.GlueVersionList(e.ctx, j.ID, xjob.MaxGlueVersions); len(vs) != 0 {
		t.Fatalf("%d GLUE versions survived the job", len(vs))
	}
}

// TestSaveGlue: the GLUE editor's save is a version every time, a new
// remark on the same source too (UpdateJob alone saves one only for a new
// source); GlueVersions lists them newest first; a BEAN job has no GLUE
// source to save.
func TestSaveGlue(t *testing.T) {
	t.Parallel()
	e := setup(t)
	spec := e.spec(xjob.ScheduleNone, "")
	spec.GlueType, spec.GlueSource, spec.Handler = xjob.GlueShell, "echo 1", ""
	j := e.create(spec)
	saves := []struct{ source, remark string }{{"echo 2", "second"}, {"echo 2", "same source"}, {"echo 3", "third"}}
	for i, sv := range saves {
		cur, err := e.svc.GetJob(e.ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.svc.SaveGlue(e.ctx, cur, sv.source, sv.remark)
		if err != nil || out.GlueSource != sv.source || out.GlueRemark != sv.remark {
			t.Fatalf("save %d: %+v, %v", i, out, err)
		}
		vs, err := e.svc.GlueVersions(e.ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != i+1 || vs[0].Source != sv.source || vs[0].Remark != sv.remark {
			t.Fatalf("after save %d: versions %+v", i, vs)
		}
	}
	bean := e.create(e.spec(xjob.ScheduleNone, ""))
	var ve *xjob.ValidationError
	if _, err := e.svc.SaveGlue(e.ctx, bean, "echo", "remark"); !errors.As(err, &ve) {
		t.Fatalf("save GLUE of a BEAN job: %v, want a validation error", err)
	}
}

// TestClearLogs: each of xxl-job's modes, from the fake clock's now, and
// an unknown mode refused with nothing deleted.
func TestClearLogs(t *testing.T) {
	t.Parallel()
	now := start
	ages := []time.Duration{0, 40 * 24 * time.Hour, 100 * 24 * time.Hour, 200 * 24 * time.Hour, 400 * 24 * time.Hour}
	tests := []struct {
		mode    string
		deleted int
		err     bool
	}{
		{"1m", 4, false}, {"3m", 3, false}, {"6m", 2, false}, {"12m", 1, false},
		{"1k", 0, false}, {"all", 5, false}, {"2m", 0, true}, {"", 0, true},
	}
	for _, tc := range tests {
		t.Run("mode "+tc.mode, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			for i, age := range ages {
				if _, err := e.db.LogCreate(e.ctx, xjob.Log{OccurrenceID: "o" + strconv.Itoa(i), JobID: 1, GroupID: e.group.ID,
					TriggerType: xjob.TriggerCron, TriggerTime: ms(now.Add(-age))}); err != nil {
					t.Fatal(err)
				}
			}
			n, err := e.svc.ClearLogs(e.ctx, admin.ClearLogsParams{GroupID: e.group.ID, Mode: tc.mode})
			if (err != nil) != tc.err || n != tc.deleted {
				t.Fatalf("ClearLogs(%q) = %d, %v; want %d, error %v", tc.mode, n, err, tc.deleted, tc.err)
			}
		})
	}
}
