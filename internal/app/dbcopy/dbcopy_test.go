package dbcopy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/app/local"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/testenv/mariadb"
	"github.com/xjobdev/xjob/internal/testenv/pgserver"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/executor"
)

const (
	shards       = 8
	userPassword = "copied-password-123"
	adminToken   = "copy-admin-token-0123456789"
	accessToken  = "copy-access-token-0123456789"
)

func TestCopyToPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	srv := pgserver.Start(t)
	exerciseCopy(t, srv.Password, func(t *testing.T) string { return srv.NewDatabase(t) })
}

func TestCopyToMariaDB(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts MariaDB")
	}
	srv := mariadb.Start(t)
	const password = "copy-db-password-0123"
	exerciseCopy(t, password, func(t *testing.T) string {
		name := srv.CreateDatabase(t)
		srv.CreateUser(t, "xjobcopy", password, name)
		return "mysql://xjobcopy:" + password + "@" + srv.Addr + "/" + name
	})
}

// fixture is what populate wrote to the SQLite file.
type fixture struct {
	everySecond, hourly, glue int64 // job ids
	ringFire                  int64 // the fire time of the ring bucket's item (Unix ms)
}

// exerciseCopy copies a populated installation to a fresh database,
// compares the two record by record, checks the refusals, and runs an
// `xjob server` on the copy.
func exerciseCopy(t *testing.T, password string, newDB func(t *testing.T) string) {
	ctx := t.Context()
	runs := make(chan int64, 1000)
	execURL := startExecutor(t, runs)
	file := filepath.Join(t.TempDir(), "xjob.db")
	writeState(t, file, shards)
	fx := populate(t, file, execURL)
	dbURL := newDB(t)

	// A wrong password is one clear error that does not show it.
	u, _ := url.Parse(dbURL)
	bad := *u
	bad.User = url.UserPassword(u.User.Username(), "wrong-secret-98765")
	_, err := Copy(ctx, Options{From: file, To: bad.String()})
	if err == nil || strings.Contains(err.Error(), "wrong-secret-98765") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("copy with a wrong password: %v, want one line without the password", err)
	}

	// While xjob local holds the file's lock, the copy is refused.
	unlock, err := local.LockInstallation(file)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Copy(ctx, Options{From: file, To: dbURL})
	unlock()
	if !errors.Is(err, local.ErrRunning) {
		t.Fatalf("copy while the lock is held: %v, want ErrRunning", err)
	}

	var progress bytes.Buffer
	sum, err := Copy(ctx, Options{From: file, To: dbURL, PageSize: 7, Progress: &progress})
	if err != nil {
		t.Fatalf("copy: %v\n%s", err, progress.String())
	}
	want := Summary{Shards: shards, Groups: 2, Jobs: 4, GlueVersions: 3, Users: 2, Logs: 25, ReportDays: 3,
		Registry: 1, Retired: 1, Revoked: 1, Queued: 2}
	if sum != want {
		t.Fatalf("copied %+v, want %+v", sum, want)
	}
	if got := strings.Count(progress.String(), "  logs "); got != 4 {
		t.Fatalf("progress shows %d pages of logs, want 4 (25 logs by 7):\n%s", got, progress.String())
	}
	if strings.Contains(progress.String(), password) {
		t.Fatal("the progress shows the database password")
	}
	compare(t, file, dbURL, fx)

	// A second copy into the now non-empty database is refused with one
	// line, and writes nothing.
	_, err = Copy(ctx, Options{From: file, To: dbURL})
	if !errors.Is(err, ErrNotEmpty) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), password) {
		t.Fatalf("copy into a non-empty database: %v, want one line of ErrNotEmpty", err)
	}
	t.Logf("refusal: %v", err)

	runServer(t, dbURL, fx, runs)
}

// startExecutor runs a real executor with a handler that reports the job
// id of every run, and returns its address.
func startExecutor(t *testing.T, runs chan<- int64) string {
	e, err := executor.New(executor.Config{AccessToken: accessToken, LogDir: t.TempDir(),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Register("copied", func(_ context.Context, j *executor.Job) error {
		select {
		case runs <- j.JobID:
		default:
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Shutdown(ctx)
	})
	return srv.URL + "/"
}

// writeState writes the state file `xjob local` keeps beside its database.
func writeState(t testing.TB, file string, shards int) {
	b, _ := json.Marshal(map[string]any{"owner": "local-test", "shards": shards, "createdAt": time.Now().UnixMilli()})
	if err := os.WriteFile(file+".state.json", b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// populate writes an installation with records of every kind through the
// SQLite store: jobs of every schedule type, some at versions and
// revisions past 1, GLUE versions, users, logs, report days, the
// registry, a retired declaration, a revoked session, a ring bucket and a
// dispatch task.
func populate(t *testing.T, file, execURL string) fixture {
	ctx := t.Context()
	db, err := sqlitestore.Open(ctx, file, sqlitestore.Options{Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UnixMilli()
	manual, err := db.GroupInsert(ctx, xjob.Group{AppName: "copy-manual", Title: "Manual", AddressType: xjob.AddressManual,
		AddressList: []string{execURL}, UpdatedAt: now})
	must(err)
	auto, err := db.GroupInsert(ctx, xjob.Group{AppName: "copy-auto", Title: "Auto", AddressType: xjob.AddressAuto, UpdatedAt: now})
	must(err)
	_, err = db.GroupUpdate(ctx, driver.GroupUpdateParams{Group: func() xjob.Group { g := auto; g.Title = "Auto (edited)"; return g }(), ExpectVersion: 1})
	must(err)

	job := func(group int64, typ xjob.ScheduleType, conf string, status xjob.TriggerStatus, next int64) xjob.Job {
		return xjob.Job{GroupID: group, Description: "copied " + string(typ), Author: "copy", ScheduleType: typ, ScheduleConf: conf,
			TimeZone: "UTC", MisfireStrategy: xjob.MisfireFireOnceNow, AfterCompletion: xjob.AfterKeep, RouteStrategy: xjob.RouteFirst,
			Handler: "copied", BlockStrategy: xjob.BlockSerialExecution, TimeoutSeconds: 10, GlueType: xjob.GlueBean,
			TriggerStatus: status, TriggerNextTime: next, CreatedAt: now - 86_400_000, UpdatedAt: now - 3_600_000}
	}
	var fx fixture
	// Every second, due now: the server on the copy fires it.
	j, err := db.JobInsert(ctx, job(manual.ID, xjob.ScheduleCron, "* * * * * ?", xjob.StatusRunning, now))
	must(err)
	fx.everySecond = j.ID
	// Hourly at a fixed rate, at version 3 and revision 2 (stopped and
	// started by a person), next an hour away; a fire its scan pushed
	// to the ring waits there.
	j, err = db.JobInsert(ctx, job(manual.ID, xjob.ScheduleFixRate, "3600", xjob.StatusRunning, now+3_600_000))
	must(err)
	j.Revision = 2
	j, err = db.JobUpdate(ctx, driver.JobUpdateParams{Job: j, ExpectVersion: 1})
	must(err)
	must(db.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: j.Version, TriggerLastTime: now - 1000, TriggerNextTime: now + 3_600_000}))
	must(db.JobRecordSlow(ctx, j.ID, now/60_000))
	fx.hourly = j.ID
	fx.ringFire = (now/1000 + 4) * 1000
	must(db.Ring().Send(ctx, []driver.Outgoing[fire.RingBucket]{{
		Msg:       fire.RingBucket{Shard: fire.ShardOf(j.ID, shards), Second: fx.ringFire / 1000, Items: []fire.RingItem{{JobID: j.ID, FireTime: fx.ringFire, Revision: 2}}},
		VisibleAt: fx.ringFire - 1000}}))
	// A GLUE job without a schedule, with three saved sources, and a
	// retry waiting an hour in the slow lane.
	g := job(auto.ID, xjob.ScheduleNone, "", xjob.StatusStopped, 0)
	g.GlueType, g.GlueSource, g.ChildJobIDs = xjob.GlueShell, "echo 3", []int64{fx.everySecond}
	j, err = db.JobInsert(ctx, g)
	must(err)
	fx.glue = j.ID
	for i := range 3 {
		must(db.GlueVersionAdd(ctx, xjob.GlueVersion{JobID: j.ID, GlueType: xjob.GlueShell, Source: fmt.Sprintf("echo %d", i+1),
			Remark: fmt.Sprintf("v%d", i+1), CreatedAt: now - int64(3-i)*60_000}, xjob.MaxGlueVersions))
	}
	must(db.Dispatch(fire.LaneSlow).Send(ctx, []driver.Outgoing[fire.DispatchTask]{{
		Msg:       fire.DispatchTask{Occurrence: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerRetry, Ref: "7"}, EnqueuedAt: now},
		VisibleAt: now + 3_600_000}}))
	// Once, at an instant past: stopped after its fire.
	_, err = db.JobInsert(ctx, job(manual.ID, xjob.ScheduleOnce, "2024-05-01T10:00:00Z", xjob.StatusStopped, 0))
	must(err)

	admin, err := auth.HashPassword(userPassword, auth.TestParams)
	must(err)
	_, err = db.UserInsert(ctx, xjob.User{Username: "copyadmin", PasswordHash: admin, Role: xjob.RoleAdmin, Locale: "en", CreatedAt: now, UpdatedAt: now})
	must(err)
	viewer, err := db.UserInsert(ctx, xjob.User{Username: "viewer", PasswordHash: admin, Role: xjob.RoleNormal, GroupIDs: []int64{manual.ID}, CreatedAt: now, UpdatedAt: now})
	must(err)
	viewer.Locale = "zh-CN"
	_, err = db.UserUpdate(ctx, driver.UserUpdateParams{User: viewer, ExpectVersion: 1})
	must(err)

	// 25 logs of the GLUE job: finished, failed and alarmed, running.
	for i := range 25 {
		l, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: fmt.Sprintf("j%d/MANUAL/r%d/s0", fx.glue, i), JobID: fx.glue, GroupID: auto.ID,
			TriggerType: xjob.TriggerManual, TriggerTime: now - int64(25-i)*1000, ExecutorHandler: "", ExecutorParam: fmt.Sprint(i),
			ExecutorShardingParam: "0/1", ClaimUntil: now})
		must(err)
		must(db.LogTriggered(ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: "http://10.0.0.9:9999/", TriggerCode: xjob.CodeSuccess, TriggerMsg: "ok"}))
		switch i % 3 {
		case 0:
			_, err = db.LogFinish(ctx, driver.LogFinishParams{ID: l.ID, HandleTime: l.TriggerTime + 10, HandleCode: xjob.CodeSuccess, HandleMsg: "done"})
		case 1:
			_, err = db.LogFinish(ctx, driver.LogFinishParams{ID: l.ID, HandleTime: l.TriggerTime + 10, HandleCode: xjob.CodeFail, HandleMsg: "boom"})
			if err == nil {
				err = db.LogSetAlarm(ctx, driver.LogSetAlarmParams{ID: l.ID, From: xjob.AlarmDefault, To: xjob.AlarmSuccess})
			}
		}
		must(err)
	}
	for _, d := range []xjob.ReportDay{
		{Day: "2024-05-01", GroupID: 0, RunningCount: 1, SucCount: 20, FailCount: 3},
		{Day: "2024-05-01", GroupID: manual.ID, RunningCount: 0, SucCount: 7, FailCount: 1},
		{Day: "2024-05-02", GroupID: auto.ID, RunningCount: 2, SucCount: 5, FailCount: 0},
	} {
		must(db.ReportAdd(ctx, d))
	}
	must(db.RegistryUpsert(ctx, xjob.RegistryEntry{Group: "EXECUTOR", Key: "copy-auto", Value: "http://10.0.0.9:9999/", UpdatedAt: now}))
	must(db.DeclarationRetire(ctx, "copy-auto/nightly", `{"handler":"nightly"}`))
	must(db.SessionRevoke(ctx, "session-1", now+3_600_000))
	return fx
}

// compare reads every record back from both stores.
func compare(t *testing.T, file, dbURL string, fx fixture) {
	ctx := t.Context()
	src, err := sqlitestore.Open(ctx, file, sqlitestore.Options{Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	u, _ := url.Parse(dbURL)
	dst, err := openTarget(ctx, u, shards, clock.Real{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	same := func(what string, a, b any) {
		t.Helper()
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s differ:\n source %+v\n target %+v", what, a, b)
		}
	}
	read := func(what string, f func(s driver.Store) (any, error)) {
		t.Helper()
		a, err := f(src)
		if err != nil {
			t.Fatalf("source %s: %v", what, err)
		}
		b, err := f(dst)
		if err != nil {
			t.Fatalf("target %s: %v", what, err)
		}
		same(what, a, b)
	}
	read("groups", func(s driver.Store) (any, error) {
		gs, err := s.GroupList(ctx, driver.GroupListParams{})
		for i := range gs {
			gs[i].Version = 0 // restarts at 1 in the target
		}
		return gs, err
	})
	read("jobs", func(s driver.Store) (any, error) {
		p, err := s.JobList(ctx, driver.JobListParams{Limit: 100})
		return p.Jobs, err
	})
	read("GLUE versions", func(s driver.Store) (any, error) { return s.GlueVersionList(ctx, fx.glue, 100) })
	read("users", func(s driver.Store) (any, error) {
		us, err := s.UserList(ctx, driver.UserListParams{})
		for i := range us {
			us[i].Version = 0
		}
		return us, err
	})
	read("logs", func(s driver.Store) (any, error) {
		var all []xjob.Log
		for cursor := ""; ; {
			p, err := s.LogList(ctx, driver.LogListParams{Cursor: cursor, Limit: 10})
			if err != nil {
				return nil, err
			}
			all = append(all, p.Logs...)
			if cursor = p.Next; cursor == "" {
				return all, nil
			}
		}
	})
	gs, _ := src.GroupList(ctx, driver.GroupListParams{})
	for _, p := range []driver.ReportListParams{{}, {GroupIDs: []int64{gs[0].ID}}, {GroupIDs: []int64{gs[1].ID}}} {
		p.From, p.To = "2024-01-01", "2024-12-31"
		read(fmt.Sprintf("report of groups %v", p.GroupIDs), func(s driver.Store) (any, error) { return s.ReportList(ctx, p) })
	}
	read("registry", func(s driver.Store) (any, error) { return s.RegistryList(ctx, driver.RegistryListParams{}) })
	read("retired declaration", func(s driver.Store) (any, error) {
		d, ok, err := s.DeclarationRetired(ctx, "copy-auto/nightly")
		return fmt.Sprint(d, ok), err
	})
	read("revoked session", func(s driver.Store) (any, error) { return s.SessionRevoked(ctx, "session-1") })
	if t.Failed() {
		t.FailNow()
	}
	// Records that read back the same could still be held differently:
	// the stores' own paths must work from them.
	j, err := dst.JobGet(ctx, fx.hourly)
	if err != nil || j.Version != 3 || j.Revision != 2 || j.SlowCount != 1 {
		t.Fatalf("copied hourly job: %+v, %v; want version 3, revision 2, one slow dispatch", j, err)
	}
	due, err := dst.JobsDue(ctx, driver.JobsDueParams{Shard: fire.ShardOf(fx.everySecond, shards), Before: time.Now().UnixMilli() + 1000, Limit: 10})
	if err != nil || !slices.ContainsFunc(due, func(j xjob.Job) bool { return j.ID == fx.everySecond }) {
		t.Fatalf("due jobs in the target: %v, %v; want the every-second job", due, err)
	}
}

// runServer starts one `xjob server` on the copy and checks that a
// copied running job fires, that the ring bucket copied with it fires,
// and that a copied user signs in.
func runServer(t *testing.T, dbURL string, fx fixture, runs <-chan int64) {
	cfg := local.ServerDefaults()
	cfg.DB, cfg.NodeID, cfg.Listen, cfg.Shards = dbURL, "node-copy", "127.0.0.1:0", shards
	cfg.AdminToken, cfg.AccessToken = adminToken, accessToken
	cfg.LeaseTTL, cfg.Grace = 3*time.Second, 5*time.Second
	cfg.AllowCIDRs = "127.0.0.0/8"
	cfg.Logger = slog.New(slog.DiscardHandler)
	ready := make(chan local.Info, 1)
	cfg.Ready = func(i local.Info) { ready <- i }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- local.RunServer(ctx, cfg) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Error("the server did not stop")
			}
		})
	}
	t.Cleanup(stop)
	var info local.Info
	select {
	case info = <-ready:
	case err := <-done:
		t.Fatalf("server on the copy: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the server on the copy did not start")
	}
	if info.AdminPassword != "" {
		t.Fatal("the server created an admin user: it did not see the copied users")
	}
	seen := map[int64]bool{}
	deadline := time.After(30 * time.Second)
	for !seen[fx.everySecond] || !seen[fx.hourly] {
		select {
		case id := <-runs:
			seen[id] = true
		case <-deadline:
			t.Fatalf("runs seen: %v; want the every-second job %d (scan) and the hourly job %d (its copied ring bucket)",
				seen, fx.everySecond, fx.hourly)
		}
	}
	c := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.PostForm(info.URL+"/console/login", url.Values{"username": {"copyadmin"}, "password": {userPassword}})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if !slices.ContainsFunc(res.Cookies(), func(c *http.Cookie) bool { return c.Name == "xjob_session" && c.Value != "" }) {
		t.Fatalf("sign-in of a copied user: %s, no session cookie", res.Status)
	}
	stop()
}
