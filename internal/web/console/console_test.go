package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/internal/web/console"
	"github.com/xjobdev/xjob/pkg/clock"
)

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const adminToken = "console-test-admin-token-long-enough"

// fixture is a console on a real SQLite store: an admin and a normal user
// (group "mine" only), a BEAN job in each group, a GLUE_SHELL job in mine,
// one log per group.
type fixture struct {
	t            *testing.T
	db           *sqlitestore.DB
	au           *auth.Service
	h            http.Handler
	mine, theirs xjob.Group
	myJob, glue  xjob.Job
	theirJob     xjob.Job
	myLog, their xjob.Log
	logs         *strings.Builder // the console's log (requests are served synchronously)
}

// setup builds the fixture under xxl-job's GLUE behaviour (any user of
// the group edits GLUE jobs); setupGlue under another policy.
func setup(t *testing.T) *fixture { t.Helper(); return setupGlue(t, auth.GlueEveryone) }

// newStack builds what the console serves from, as xjob local wires it:
// a SQLite store on clk, the admin service over it and the sign-in service
// with GLUE policy glue. Closed when the test ends.
func newStack(tb testing.TB, clk *clock.Fake, glue auth.GluePolicy) (*sqlitestore.DB, *admin.Service, *auth.Service) {
	tb.Helper()
	db, err := sqlitestore.Open(context.Background(), filepath.Join(tb.TempDir(), "xjob.db"), sqlitestore.Options{Shards: 4, Clock: clk})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	quiet := slog.New(slog.DiscardHandler)
	cb, err := callback.New(callback.Config{Store: db, Queues: db, Alarmer: alarm.Log{Logger: quiet}, Clock: clk, Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	ec, err := execclient.New(execclient.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(ec.Close)
	svc, err := admin.New(admin.Config{Store: db, Queues: db, Executors: ec, Finisher: cb, Clock: clk, Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	au, err := auth.New(auth.Config{Users: db, AdminToken: adminToken, Key: auth.DeriveKey(adminToken), Params: auth.TestParams, Clock: clk,
		Glue: glue})
	if err != nil {
		tb.Fatal(err)
	}
	return db, svc, au
}

func setupGlue(t *testing.T, glue auth.GluePolicy) *fixture {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(start)
	db, svc, au := newStack(t, clk, glue)
	logs := &strings.Builder{}
	con, err := console.New(console.Config{Admin: svc, Auth: au, Clock: clk, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: db, au: au, h: con, logs: logs}
	group := func(app string) xjob.Group {
		g, err := svc.CreateGroup(ctx, xjob.Group{AppName: app, Title: app + " title", AddressType: xjob.AddressManual,
			AddressList: []string{"http://127.0.0.1:1"}})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	f.mine, f.theirs = group("mine-app"), group("their-app")
	job := func(g int64, typ xjob.GlueType, src string) xjob.Job {
		j := xjob.Job{GroupID: g, Description: "job of " + strconv.FormatInt(g, 10), Author: "a", ScheduleType: xjob.ScheduleCron,
			ScheduleConf: "0 0 0 * * ?", GlueType: typ, GlueSource: src}
		if typ == xjob.GlueBean {
			j.Handler = "demo"
		}
		out, err := svc.CreateJob(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	f.myJob, f.theirJob, f.glue = job(f.mine.ID, xjob.GlueBean, ""), job(f.theirs.ID, xjob.GlueBean, ""), job(f.mine.ID, xjob.GlueShell, "echo hi")
	logOf := func(j xjob.Job) xjob.Log {
		l, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: "occ/" + strconv.FormatInt(j.ID, 10), JobID: j.ID, GroupID: j.GroupID,
			TriggerType: xjob.TriggerManual, TriggerTime: clock.Millis(clk)})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	f.myLog, f.their = logOf(f.myJob), logOf(f.theirJob)
	root := auth.Principal{Token: true}
	for _, u := range []auth.UserInput{
		{Username: "boss", Password: "boss-password", Role: xjob.RoleAdmin},
		{Username: "normal", Password: "normal-password", GroupIDs: []int64{f.mine.ID}},
	} {
		if _, err := au.CreateUser(ctx, root, u); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// session is a signed-in user's cookie and CSRF token.
type session struct {
	cookie *http.Cookie
	csrf   string
}

func (f *fixture) signIn(user, pw string) session {
	f.t.Helper()
	rec := httptest.NewRecorder()
	p, err := f.au.SignIn(rec, httptest.NewRequest("POST", "/console/login", nil), user, pw)
	if err != nil {
		f.t.Fatal(err)
	}
	return session{cookie: rec.Result().Cookies()[0], csrf: f.au.CSRFToken(p)}
}

// do serves one request: s may be nil (no session); a POST form gets the
// session's CSRF token unless noCSRF.
func (f *fixture) do(s *session, method, path string, form url.Values, noCSRF bool, hdr ...string) *httptest.ResponseRecorder {
	f.t.Helper()
	var body io.Reader
	if form != nil || method == "POST" {
		if form == nil {
			form = url.Values{}
		}
		if s != nil && !noCSRF {
			form.Set(auth.CSRFField, s.csrf)
		}
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, path, body)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if s != nil {
		req.AddCookie(s.cookie)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

func id(v int64) string { return strconv.FormatInt(v, 10) }

// TestPages renders every page for an admin and for a normal user and
// checks what each must (and must not) show.
func TestPages(t *testing.T) {
	t.Parallel()
	f := setup(t)
	boss, normal := f.signIn("boss", "boss-password"), f.signIn("normal", "normal-password")
	tests := []struct {
		name    string
		s       *session
		path    string
		status  int
		has     []string
		hasNot  []string
		headers []string
	}{
		{"login page", nil, "/console/login", 200, []string{`id="username"`, `id="signin"`}, nil, nil},
		{"login page in Chinese", nil, "/console/login", 200, []string{"登录"}, nil, []string{"Accept-Language", "zh-CN,zh;q=0.9"}},
		{"dashboard", &boss, "/console/", 200, []string{`id="stat-jobs"`, "<svg"}, nil, nil},
		{"jobs of every group", &boss, "/console/jobs", 200, []string{"job-" + id(f.myJob.ID), "job-" + id(f.theirJob.ID)}, nil, nil},
		{"jobs filtered", &boss, "/console/jobs?group=" + id(f.theirs.ID), 200, []string{"job-" + id(f.theirJob.ID)},
			[]string{`id="job-` + id(f.myJob.ID) + `"`}, nil},
		{"new job form", &boss, "/console/jobs/new?group=" + id(f.mine.ID), 200, []string{`id="jobDesc"`, `id="scheduleConf"`}, nil, nil},
		{"edit job", &boss, "/console/jobs/" + id(f.myJob.ID) + "/edit", 200, []string{"job of " + id(f.mine.ID)}, nil, nil},
		{"missing job", &boss, "/console/jobs/999/edit", 404, nil, nil, nil},
		{"trigger page", &boss, "/console/jobs/" + id(f.myJob.ID) + "/trigger", 200, []string{`id="trigger-param"`}, nil, nil},
		{"GLUE editor", &boss, "/console/jobs/" + id(f.glue.ID) + "/glue", 200,
			[]string{`data-lang="bash"`, "echo hi", "prism-1.30.0.min.js", "editor.js"}, nil, nil},
		{"BEAN has no GLUE", &boss, "/console/jobs/" + id(f.myJob.ID) + "/glue", 200, nil, []string{`id="glue-source"`}, nil},
		{"logs with clear dialog", &boss, "/console/logs?job=" + id(f.myJob.ID), 200,
			[]string{`id="clear-logs"`, `value="100k"`, `value="all"`, "log-row"}, nil, nil},
		{"log detail", &boss, "/console/logs/" + id(f.myLog.ID), 200, []string{"#" + id(f.myLog.ID)}, nil, nil},
		{"groups", &boss, "/console/groups", 200, []string{"mine-app", "their-app", `name="appname"`}, nil, nil},
		{"users", &boss, "/console/users", 200, []string{"boss", "normal", `id="new-username"`}, nil, nil},
		{"normal: own jobs", &normal, "/console/jobs?group=" + id(f.mine.ID), 200, []string{"job-" + id(f.myJob.ID)}, nil, nil},
		{"normal: other group's jobs", &normal, "/console/jobs?group=" + id(f.theirs.ID), 403, nil, nil, nil},
		{"normal: other group's job", &normal, "/console/jobs/" + id(f.theirJob.ID) + "/edit", 403, nil, nil, nil},
		{"normal: other group's log", &normal, "/console/logs/" + id(f.their.ID), 403, nil, nil, nil},
		{"normal: logs default to own group", &normal, "/console/logs", 200, []string{`id="clear-logs"`}, []string{`value="0">All`}, nil},
		{"normal: users page has no user admin", &normal, "/console/users", 200, []string{`name="current"`}, []string{`id="new-username"`}, nil},
		{"normal: groups page has no editor", &normal, "/console/groups", 200, nil, []string{`name="appname"`}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := f.do(tc.s, "GET", tc.path, nil, false, tc.headers...)
			body := rec.Body.String()
			if rec.Code != tc.status {
				t.Fatalf("GET %s: %d, want %d\n%.400s", tc.path, rec.Code, tc.status, body)
			}
			for _, s := range tc.has {
				if !strings.Contains(body, s) {
					t.Errorf("GET %s lacks %q", tc.path, s)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(body, s) {
					t.Errorf("GET %s shows %q", tc.path, s)
				}
			}
		})
	}
}

// TestSessionAndCSRF: visitors go to the sign-in page (htmx requests by
// HX-Redirect), the admin token signs nobody in, and every POST needs the
// session's CSRF token.
func TestSessionAndCSRF(t *testing.T) {
	t.Parallel()
	f := setup(t)
	boss := f.signIn("boss", "boss-password")
	rec := f.do(nil, "GET", "/console/jobs?group=1", nil, false)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/console/login?next="+url.QueryEscape("/console/jobs?group=1") {
		t.Fatalf("visitor: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if rec := f.do(nil, "GET", "/console/jobs", nil, false, "HX-Request", "true"); rec.Header().Get("HX-Redirect") == "" {
		t.Fatalf("htmx visitor: no HX-Redirect (%d)", rec.Code)
	}
	if rec := f.do(nil, "GET", "/console/jobs", nil, false, "Authorization", "Bearer "+adminToken); rec.Code != http.StatusSeeOther {
		t.Fatalf("admin token on the console: %d, want a redirect to sign in", rec.Code)
	}
	posts := []struct {
		path string
		form url.Values
	}{
		{"/console/jobs/" + id(f.myJob.ID) + "/start", nil},
		{"/console/jobs/" + id(f.myJob.ID) + "/delete", nil},
		{"/console/logs/clear", url.Values{"group": {id(f.mine.ID)}, "mode": {"all"}}},
		{"/console/jobs/" + id(f.glue.ID) + "/glue", url.Values{"glueSource": {"echo evil"}, "glueRemark": {"no token"}}},
		{"/console/users", url.Values{"username": {"mallory"}, "password": {"mallory-password"}, "role": {"1"}}},
		{"/console/logout", nil},
	}
	for _, p := range posts {
		if rec := f.do(&boss, "POST", p.path, p.form, true); rec.Code != http.StatusForbidden {
			t.Errorf("POST %s without CSRF: %d, want 403", p.path, rec.Code)
		}
	}
	// Nothing was written.
	if _, err := f.db.LogGet(t.Context(), f.myLog.ID); err != nil {
		t.Errorf("the refused clear deleted a log: %v", err)
	}
	if j, _ := f.db.JobGet(t.Context(), f.glue.ID); j.GlueSource != "echo hi" {
		t.Errorf("the refused GLUE save wrote %q", j.GlueSource)
	}
	if _, err := f.db.UserGet(t.Context(), "mallory"); err == nil {
		t.Errorf("the refused user create wrote mallory")
	}
	// With the token the same start works.
	if rec := f.do(&boss, "POST", "/console/jobs/"+id(f.myJob.ID)+"/start", nil, false); rec.Code != http.StatusSeeOther {
		t.Fatalf("start with CSRF: %d %s", rec.Code, rec.Body)
	}
}

// TestLogClear: the clear dialog's permissions and its effect.
func TestLogClear(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		user, pw  string
		form      url.Values
		status    int
		mineGone  bool
		theirGone bool
	}{
		{"normal, every group", "normal", "normal-password", url.Values{"mode": {"all"}}, 403, false, false},
		{"normal, other group", "normal", "normal-password", url.Values{"group": {"G2"}, "mode": {"all"}}, 403, false, false},
		{"normal, other group's job", "normal", "normal-password", url.Values{"job": {"J2"}, "mode": {"all"}}, 403, false, false},
		{"normal, own group, bad mode", "normal", "normal-password", url.Values{"group": {"G1"}, "mode": {"2m"}}, 409, false, false},
		{"normal, own group, older than a month", "normal", "normal-password", url.Values{"group": {"G1"}, "mode": {"1m"}}, 303, false, false},
		{"normal, own group", "normal", "normal-password", url.Values{"group": {"G1"}, "mode": {"all"}}, 303, true, false},
		{"normal, own job", "normal", "normal-password", url.Values{"job": {"J1"}, "mode": {"all"}}, 303, true, false},
		{"admin, every group", "boss", "boss-password", url.Values{"mode": {"all"}}, 303, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			s := f.signIn(tc.user, tc.pw)
			form := url.Values{}
			for k, v := range tc.form {
				form.Set(k, strings.NewReplacer("G1", id(f.mine.ID), "G2", id(f.theirs.ID), "J1", id(f.myJob.ID), "J2", id(f.theirJob.ID)).Replace(v[0]))
			}
			rec := f.do(&s, "POST", "/console/logs/clear", form, false)
			if rec.Code != tc.status {
				t.Fatalf("clear: %d, want %d\n%s", rec.Code, tc.status, rec.Body)
			}
			if tc.status == 303 && !strings.Contains(rec.Header().Get("Location"), "flash=") {
				t.Errorf("clear redirects to %q, without its count", rec.Header().Get("Location"))
			}
			for _, c := range []struct {
				l    xjob.Log
				gone bool
			}{{f.myLog, tc.mineGone}, {f.their, tc.theirGone}} {
				_, err := f.db.LogGet(t.Context(), c.l.ID)
				if gone := err != nil; gone != c.gone {
					t.Errorf("log %d of group %d: gone %v, want %v", c.l.ID, c.l.GroupID, gone, c.gone)
				}
			}
		})
	}
}

// TestGlueSave: the editor's save keeps a version even when only the
// remark is new, refuses a short remark without writing, and loads an
// older version back.
func TestGlueSave(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := f.signIn("normal", "normal-password")
	path := "/console/jobs/" + id(f.glue.ID) + "/glue"
	save := func(src, remark string) *httptest.ResponseRecorder {
		return f.do(&s, "POST", path, url.Values{"glueSource": {src}, "glueRemark": {remark}}, false)
	}
	if rec := save("echo short", "no"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "remark") {
		t.Fatalf("short remark: %d", rec.Code)
	}
	if j, _ := f.db.JobGet(t.Context(), f.glue.ID); j.GlueSource != "echo hi" {
		t.Fatalf("a refused save wrote %q", j.GlueSource)
	}
	for _, v := range []struct{ src, remark string }{{"echo two", "second"}, {"echo two", "same source"}, {"echo three", "third"}} {
		if rec := save(v.src, v.remark); rec.Code != http.StatusSeeOther {
			t.Fatalf("save %q: %d %s", v.remark, rec.Code, rec.Body)
		}
	}
	vs, err := f.db.GlueVersionList(t.Context(), f.glue.ID, xjob.MaxGlueVersions)
	if err != nil || len(vs) != 3 || vs[0].Remark != "third" || vs[1].Remark != "same source" {
		t.Fatalf("versions %+v, %v", vs, err)
	}
	if rec := f.do(&s, "GET", path+"?version=2", nil, false); !strings.Contains(rec.Body.String(), ">echo two</textarea>") {
		t.Fatalf("version 2 not loaded into the editor:\n%.600s", rec.Body)
	}
	// Another group's job is not the normal user's to edit.
	if rec := f.do(&s, "POST", "/console/jobs/"+id(f.theirJob.ID)+"/glue", url.Values{"glueSource": {"x"}, "glueRemark": {"theirs"}}, false); rec.Code != http.StatusForbidden {
		t.Fatalf("other group's GLUE save: %d", rec.Code)
	}
}

// TestAuditLines: a failed sign-in, a refused CSRF token and every write
// leave one "audit" line (who, route, id, status), never the password.
func TestAuditLines(t *testing.T) {
	t.Parallel()
	f := setup(t)
	audit := func() []string {
		var out []string
		for _, l := range strings.Split(f.logs.String(), "\n") {
			if strings.Contains(l, "msg=audit") {
				out = append(out, l)
			}
		}
		return out
	}
	rec := f.do(nil, "POST", "/console/login", url.Values{"username": {"boss"}, "password": {"wrong-password-xyz"}}, false)
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("bad sign-in: %d", rec.Code)
	}
	boss := f.signIn("boss", "boss-password")
	f.do(&boss, "POST", "/console/jobs/"+id(f.myJob.ID)+"/start", nil, true)
	f.do(&boss, "POST", "/console/jobs/"+id(f.myJob.ID)+"/start", nil, false)
	lines := audit()
	want := [][]string{
		{"event=auth_failed", "kind=login", "username=boss"},
		{"event=auth_failed", "kind=session", "CSRF"},
		{"event=admin_write", "who=user:boss", `route="POST /console/jobs/{id}/start"`, "id=" + id(f.myJob.ID), "status=303"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d audit lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for i, w := range want {
		for _, sub := range w {
			if !strings.Contains(lines[i], sub) {
				t.Errorf("audit line %d %q lacks %q", i, lines[i], sub)
			}
		}
	}
	if strings.Contains(f.logs.String(), "password-xyz") || strings.Contains(f.logs.String(), "boss-password") {
		t.Errorf("a password reached the log:\n%s", f.logs.String())
	}
}
