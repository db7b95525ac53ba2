package adminapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/internal/testenv/syncbuf"
	"github.com/xjobdev/xjob/internal/web/adminapi"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

const (
	adminToken  = "admin-secret"
	accessToken = "access-secret"
)

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	t    testing.TB
	ctx  context.Context
	db   *sqlitestore.DB
	clk  *clock.Fake
	srv  *httptest.Server
	exec *httptest.Server
	met  *metric.Metrics
	logs *syncbuf.Buffer // the handler's log
}

// services are what an adminapi.Handler wires, on a fresh SQLite store
// with a fake clock at start.
type services struct {
	db    *sqlitestore.DB
	clk   *clock.Fake
	svc   *admin.Service
	reg   *registry.Service
	cb    *callback.Service
	met   *metric.Metrics
	quiet *slog.Logger
}

func newServices(t testing.TB) services {
	t.Helper()
	clk := clock.NewFake(start)
	db, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "xjob.db"), sqlitestore.Options{Shards: 4, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s := services{db: db, clk: clk, met: &metric.Metrics{}, quiet: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.cb, err = callback.New(callback.Config{Store: db, Queues: db, Alarmer: alarm.Log{Logger: s.quiet}, Clock: clk, Logger: s.quiet, Metrics: s.met})
	if err != nil {
		t.Fatal(err)
	}
	s.reg, err = registry.New(registry.Config{Store: db, Clock: clk, Logger: s.quiet})
	if err != nil {
		t.Fatal(err)
	}
	ec, err := execclient.New(execclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ec.Close)
	s.svc, err = admin.New(admin.Config{Store: db, Queues: db, Executors: ec, Finisher: s.cb, Clock: clk, Logger: s.quiet})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func setup(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	s := newServices(t)
	db, clk, met := s.db, s.clk, s.met
	logs := &syncbuf.Buffer{}
	h, err := adminapi.New(adminapi.Config{Admin: s.svc, Registry: s.reg, Callback: s.cb, Metrics: met,
		AdminToken: adminToken, AccessToken: accessToken, Logger: slog.New(slog.NewTextHandler(logs, nil)), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	// A stand-in executor answering /kill and /log (three log lines).
	exec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p protocol.LogParam
		_ = json.NewDecoder(r.Body).Decode(&p)
		rt := protocol.OK()
		if r.URL.Path == "/log" {
			rt.Content, _ = json.Marshal(protocol.LogResult{FromLineNum: p.FromLineNum, ToLineNum: 3, LogContent: "a\nb\nc"})
		}
		_ = json.NewEncoder(w).Encode(rt)
	}))
	t.Cleanup(exec.Close)
	return &env{t: t, ctx: ctx, db: db, clk: clk, srv: srv, exec: exec, met: met, logs: logs}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("reply %d %q: %v", r.status, r.body, err)
	}
}

// call sends a request; hdr holds "Name: value" pairs. Admin calls get the
// bearer token and JSON content type unless hdr overrides them.
func (e *env) call(method, path, body string, hdr ...string) reply {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if strings.HasPrefix(path, "/v1/") {
		req.Header.Set("Authorization", "Bearer "+adminToken)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// must sends a request and fails unless the status is want.
func (e *env) must(want int, method, path, body string, v any) reply {
	e.t.Helper()
	r := e.call(method, path, body)
	if r.status != want {
		e.t.Fatalf("%s %s: %d %s, want %d", method, path, r.status, r.body, want)
	}
	if v != nil {
		r.decode(e.t, v)
	}
	return r
}

func (e *env) group() xjob.Group {
	e.t.Helper()
	var g xjob.Group
	e.must(201, "POST", "/v1/groups", `{"appname":"xjob-demo","title":"Demo","addressType":1,"addressList":["`+e.exec.URL+`/"]}`, &g)
	return g
}

func (e *env) job(groupID int64, extra string) xjob.Job {
	e.t.Helper()
	var j xjob.Job
	e.must(201, "POST", "/v1/jobs", fmt.Sprintf(`{"jobGroup":%d,"jobDesc":"demo","author":"ops",
		"scheduleType":"CRON","scheduleConf":"0/10 * * * * ?","executorHandler":"demoHandler"%s}`, groupID, extra), &j)
	return j
}

// state is everything a request could write, to prove a rejected one wrote nothing.
func (e *env) state() string {
	e.t.Helper()
	jobs, err := e.db.JobList(e.ctx, driver.JobListParams{})
	if err != nil {
		e.t.Fatal(err)
	}
	groups, err := e.db.GroupList(e.ctx, driver.GroupListParams{})
	if err != nil {
		e.t.Fatal(err)
	}
	logs, err := e.db.LogList(e.ctx, driver.LogListParams{})
	if err != nil {
		e.t.Fatal(err)
	}
	reg, err := e.db.RegistryList(e.ctx, driver.RegistryListParams{})
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := json.Marshal([]any{jobs, groups, logs, reg})
	return string(b)
}

func (e *env) queued() int {
	e.t.Helper()
	ds, err := e.db.Dispatch(fire.LaneFast).Receive(e.ctx, driver.ReceiveParams{Max: 100, Visibility: time.Hour})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(ds)
}

// runningLog stores a log triggered on the stand-in executor.
func (e *env) runningLog(j xjob.Job) xjob.Log {
	e.t.Helper()
	l, err := e.db.LogCreate(e.ctx, xjob.Log{
		OccurrenceID: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerManual, Ref: strconv.FormatInt(time.Now().UnixNano(), 10)}.ID(0),
		JobID:        j.ID, GroupID: j.GroupID, TriggerType: xjob.TriggerManual, TriggerTime: clock.Millis(e.clk),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.db.LogTriggered(e.ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: e.exec.URL + "/", TriggerCode: 200}); err != nil {
		e.t.Fatal(err)
	}
	return l
}

func TestExecutorAPI(t *testing.T) {
	t.Parallel()
	const reg = `{"registryGroup":"EXECUTOR","registryKey":"xjob-demo","registryValue":"http://10.0.0.5:9999/"}`
	withToken := "XXL-JOB-ACCESS-TOKEN: " + accessToken
	tests := []struct {
		name, method, uri, body string
		hdr                     []string
		want                    string
		wantEntries             int // registry entries after the call
	}{
		{"registry", "POST", "registry", reg, []string{withToken}, `{"code":200}`, 1},
		{"registry blank key", "POST", "registry", `{"registryGroup":"EXECUTOR","registryKey":" ","registryValue":"http://a/"}`,
			[]string{withToken}, `{"code":500,"msg":"Illegal Argument."}`, 0},
		{"registry malformed", "POST", "registry", `{"registryGroup":`, []string{withToken}, `{"code":500,"msg":"Illegal Argument."}`, 0},
		{"registry wrong token", "POST", "registry", reg, []string{"XXL-JOB-ACCESS-TOKEN: nope"},
			`{"code":500,"msg":"The access token is wrong."}`, 0},
		{"registry no token", "POST", "registry", reg, nil, `{"code":500,"msg":"The access token is wrong."}`, 0},
		{"GET", "GET", "registry", "", []string{withToken}, `{"code":500,"msg":"invalid request, HttpMethod not support."}`, 0},
		{"unknown uri", "POST", "jobs", reg, []string{withToken}, `{"code":500,"msg":"invalid request, uri-mapping(jobs) not found."}`, 0},
		{"empty uri", "POST", "", reg, []string{withToken}, `{"code":500,"msg":"invalid request, uri-mapping empty."}`, 0},
		{"callback empty batch", "POST", "callback", `[]`, []string{withToken}, `{"code":200}`, 0},
		{"callback unknown log", "POST", "callback", `[{"logId":424242,"logDateTim":1,"handleCode":200}]`,
			[]string{withToken}, `{"code":200}`, 0},
		{"callback not an array", "POST", "callback", `{"logId":1}`, []string{withToken},
			`{"code":500,"msg":"invalid request, callback body is not a JSON array of HandleCallbackParam or a callbackList."}`, 0},
	}
	for _, prefix := range []string{"", "/xxl-job-admin"} {
		for _, tt := range tests {
			t.Run(prefix+" "+tt.name, func(t *testing.T) {
				t.Parallel()
				e := setup(t)
				r := e.call(tt.method, prefix+"/api/"+tt.uri, tt.body, tt.hdr...)
				if r.status != 200 || string(r.body) != tt.want {
					t.Fatalf("reply %d %s, want 200 %s", r.status, r.body, tt.want)
				}
				entries, err := e.db.RegistryList(e.ctx, driver.RegistryListParams{})
				if err != nil {
					t.Fatal(err)
				}
				if len(entries) != tt.wantEntries {
					t.Fatalf("%d registry entries, want %d", len(entries), tt.wantEntries)
				}
			})
		}
	}
}

func TestExecutorAPIRegistryRemoveAndCallback(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"", "/xxl-job-admin"} {
		t.Run("prefix"+prefix, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			tok := "XXL-JOB-ACCESS-TOKEN: " + accessToken
			const reg = `{"registryGroup":"EXECUTOR","registryKey":"xjob-demo","registryValue":"http://10.0.0.5:9999/"}`
			for _, uri := range []string{"registry", "registryRemove"} {
				if r := e.call("POST", prefix+"/api/"+uri, reg, tok); string(r.body) != `{"code":200}` {
					t.Fatalf("%s: %s", uri, r.body)
				}
			}
			if entries, _ := e.db.RegistryList(e.ctx, driver.RegistryListParams{}); len(entries) != 0 {
				t.Fatalf("entries after remove: %v", entries)
			}

			g := e.group()
			j := e.job(g.ID, "")
			l := e.runningLog(j)
			body := fmt.Sprintf(`[{"logId":%d,"logDateTim":%d,"handleCode":200,"handleMsg":"done"}]`, l.ID, l.TriggerTime)
			for range 2 { // a repeated callback is still answered 200
				if r := e.call("POST", prefix+"/api/callback", body, tok); r.status != 200 || string(r.body) != `{"code":200}` {
					t.Fatalf("callback: %d %s", r.status, r.body)
				}
			}
			got, err := e.db.LogGet(e.ctx, l.ID)
			if err != nil || got.HandleCode != 200 || got.HandleMsg != "done" {
				t.Fatalf("log after callback: %+v %v", got, err)
			}
			if r := e.call("POST", prefix+"/api/callback", body, "XXL-JOB-ACCESS-TOKEN: x"); string(r.body) != `{"code":500,"msg":"The access token is wrong."}` {
				t.Fatalf("callback with wrong token: %s", r.body)
			}
		})
	}
}

func TestAuthAndHealth(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.call("GET", "/healthz", "")
	if r.status != 200 || strings.TrimSpace(string(r.body)) != `{"status":"ok"}` {
		t.Fatalf("healthz: %d %s", r.status, r.body)
	}
	for _, auth := range []string{"Authorization: ", "Authorization: Bearer wrong", "Authorization: Basic " + adminToken,
		"Authorization: Bearer " + adminToken + "x", "Authorization: Bearer"} {
		for _, path := range []string{"/v1/jobs", "/v1/groups", "/v1/nope", "/v1/metrics"} {
			r := e.call("GET", path, "", auth)
			var ae struct{ Error string }
			r.decode(t, &ae)
			if r.status != 401 || ae.Error == "" || r.header.Get("WWW-Authenticate") == "" {
				t.Fatalf("%s with %q: %d %s", path, auth, r.status, r.body)
			}
		}
	}
	if r := e.call("POST", "/v1/jobs", `{}`, "Authorization: Bearer wrong"); r.status != 401 {
		t.Fatalf("POST with wrong token: %d", r.status)
	}
	if _, err := adminapi.New(adminapi.Config{}); err == nil {
		t.Fatal("New accepted a config without admin token")
	}
	// Executor routes never run open either.
	_, err := adminapi.New(adminapi.Config{Admin: &admin.Service{}, Registry: &registry.Service{}, Callback: &callback.Service{},
		AdminToken: adminToken, AccessToken: "  "})
	if err == nil || !strings.Contains(err.Error(), "AccessToken") {
		t.Fatalf("New without access token: %v", err)
	}
}

func TestJobLifecycle(t *testing.T) {
	t.Parallel()
	e := setup(t)
	g := e.group()
	if g.ID == 0 || g.Version != 1 || len(g.AddressList) != 1 {
		t.Fatalf("group = %+v", g)
	}
	child := e.job(g.ID, "")
	j := e.job(g.ID, fmt.Sprintf(`,"triggerStatus":1,"childJobIds":[%d],"id":55,"version":9`, child.ID))
	if j.TriggerStatus != 1 || j.TriggerNextTime != start.Add(10*time.Second).UnixMilli() || j.Version != 1 ||
		len(j.ChildJobIDs) != 1 {
		t.Fatalf("created job = %+v", j)
	}

	var list struct {
		Items []xjob.Job
		Next  *string
	}
	e.must(200, "GET", "/v1/jobs?status=1&group="+strconv.FormatInt(g.ID, 10), "", &list)
	if len(list.Items) != 1 || list.Items[0].ID != j.ID || list.Next == nil || *list.Next != "" {
		t.Fatalf("list running = %s", e.call("GET", "/v1/jobs?status=1", "").body)
	}
	e.must(200, "GET", "/v1/jobs?limit=1", "", &list)
	if len(list.Items) != 1 || *list.Next == "" {
		t.Fatalf("page 1 = %+v", list)
	}
	e.must(200, "GET", "/v1/jobs?limit=1&cursor="+*list.Next, "", &list)
	if len(list.Items) != 1 || list.Items[0].ID != j.ID || *list.Next != "" {
		t.Fatalf("page 2 = %+v", list)
	}

	var got xjob.Job
	e.must(200, "GET", "/v1/jobs/"+strconv.FormatInt(j.ID, 10), "", &got)
	if got.ID != j.ID || got.Description != "demo" {
		t.Fatalf("get = %+v", got)
	}

	// PUT: a GET's body sent back with a change; the version makes it conditional.
	got.ScheduleConf = "0/30 * * * * ?"
	b, _ := json.Marshal(got)
	var upd xjob.Job
	e.must(200, "PUT", "/v1/jobs/"+strconv.FormatInt(j.ID, 10), string(b), &upd)
	if upd.Revision != j.Revision+1 || upd.TriggerNextTime != start.Add(30*time.Second).UnixMilli() {
		t.Fatalf("updated = %+v", upd)
	}
	if r := e.call("PUT", "/v1/jobs/"+strconv.FormatInt(j.ID, 10), string(b)); r.status != 409 {
		t.Fatalf("stale PUT: %d %s", r.status, r.body)
	}

	var stopped, started xjob.Job
	e.must(200, "POST", "/v1/jobs/"+strconv.FormatInt(j.ID, 10)+"/stop", "", &stopped)
	if stopped.TriggerStatus != 0 || stopped.TriggerNextTime != 0 {
		t.Fatalf("stopped = %+v", stopped)
	}
	e.must(200, "POST", "/v1/jobs/"+strconv.FormatInt(j.ID, 10)+"/start", "", &started)
	if started.TriggerStatus != 1 || started.TriggerNextTime == 0 {
		t.Fatalf("started = %+v", started)
	}

	var next struct{ Next []string }
	e.must(200, "GET", "/v1/jobs/"+strconv.FormatInt(j.ID, 10)+"/next?n=2", "", &next)
	if len(next.Next) != 2 || next.Next[0] != "2026-03-01T12:00:30Z" {
		t.Fatalf("next = %+v", next)
	}

	var trig struct {
		JobID        int64
		OccurrenceID string
	}
	// An override names an executor registered for the group…
	if r := e.call("POST", "/api/registry", `{"registryGroup":"EXECUTOR","registryKey":"xjob-demo","registryValue":"http://127.0.0.1:9/"}`,
		"XXL-JOB-ACCESS-TOKEN: "+accessToken); string(r.body) != `{"code":200}` {
		t.Fatalf("registry: %s", r.body)
	}
	e.must(202, "POST", "/v1/jobs/"+strconv.FormatInt(j.ID, 10)+"/trigger",
		`{"executorParam":"x=1","addressList":["http://127.0.0.1:9/"]}`, &trig)
	// …and nothing else.
	if r := e.call("POST", "/v1/jobs/"+strconv.FormatInt(j.ID, 10)+"/trigger",
		`{"addressList":["http://169.254.169.254/latest/meta-data/"]}`); r.status != 400 {
		t.Fatalf("foreign override: %d %s", r.status, r.body)
	}
	if trig.JobID != j.ID || !strings.HasPrefix(trig.OccurrenceID, "j"+strconv.FormatInt(j.ID, 10)+"/MANUAL/r") {
		t.Fatalf("trigger = %+v", trig)
	}
	e.must(202, "POST", "/v1/jobs/"+strconv.FormatInt(j.ID, 10)+"/trigger", "", nil) // empty body
	if n := e.queued(); n != 2 {
		t.Fatalf("%d tasks queued, want 2", n)
	}

	e.must(204, "DELETE", "/v1/jobs/"+strconv.FormatInt(j.ID, 10), "", nil)
	e.must(404, "GET", "/v1/jobs/"+strconv.FormatInt(j.ID, 10), "", nil)
}

func TestGroupsLogsReport(t *testing.T) {
	t.Parallel()
	e := setup(t)
	g := e.group()
	id := strconv.FormatInt(g.ID, 10)
	var groups struct{ Items []xjob.Group }
	e.must(200, "GET", "/v1/groups?appname=demo", "", &groups)
	if len(groups.Items) != 1 {
		t.Fatalf("groups = %+v", groups)
	}
	var upd xjob.Group
	e.must(200, "PUT", "/v1/groups/"+id, `{"appname":"xjob-demo","title":"Renamed","addressType":0,"version":1}`, &upd)
	if upd.Title != "Renamed" || upd.AddressType != 0 || len(upd.AddressList) != 0 {
		t.Fatalf("updated group = %+v", upd)
	}
	if err := e.db.RegistryUpsert(e.ctx, xjob.RegistryEntry{Group: "EXECUTOR", Key: "xjob-demo",
		Value: "http://10.0.0.5:9999/", UpdatedAt: start.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	r := e.must(200, "GET", "/v1/groups/"+id+"/executors", "", nil)
	if want := fmt.Sprintf(`{"items":[{"address":"http://10.0.0.5:9999/","updateTime":%d}]}`, start.UnixMilli()); strings.TrimSpace(string(r.body)) != want {
		t.Fatalf("executors = %s, want %s", r.body, want)
	}

	j := e.job(g.ID, "")
	l := e.runningLog(j)
	lid := strconv.FormatInt(l.ID, 10)
	var logs struct {
		Items []xjob.Log
		Next  string
	}
	e.must(200, "GET", fmt.Sprintf("/v1/logs?job=%d&status=running&from=%d&to=%d", j.ID, start.UnixMilli(), start.UnixMilli()), "", &logs)
	if len(logs.Items) != 1 || logs.Items[0].ID != l.ID {
		t.Fatalf("logs = %+v", logs)
	}
	e.must(200, "GET", "/v1/logs?status=success", "", &logs)
	if len(logs.Items) != 0 {
		t.Fatalf("success logs = %+v", logs)
	}
	var lg xjob.Log
	e.must(200, "GET", "/v1/logs/"+lid, "", &lg)
	if lg.ID != l.ID || lg.TriggerCode != 200 {
		t.Fatalf("log = %+v", lg)
	}
	var res protocol.LogResult
	e.must(200, "GET", "/v1/logs/"+lid+"/executor-log?from=4", "", &res)
	if res.FromLineNum != 4 || res.ToLineNum != 3 || res.IsEnd {
		t.Fatalf("executor log while running = %+v", res)
	}
	e.must(200, "POST", "/v1/logs/"+lid+"/kill", "", &lg)
	if lg.HandleCode != 500 || lg.HandleMsg != admin.KillMsg {
		t.Fatalf("killed = %+v", lg)
	}
	r = e.must(200, "GET", "/v1/logs/"+lid+"/executor-log?from=4", "", &res)
	if !res.IsEnd || !bytes.Contains(r.body, []byte(`"isEnd":true`)) {
		t.Fatalf("executor log after kill = %s", r.body)
	}

	var report struct{ Items []xjob.ReportDay }
	e.must(200, "GET", "/v1/report?from=2026-03-01&to=2026-03-01", "", &report)
	if len(report.Items) != 1 || report.Items[0].FailCount != 1 {
		t.Fatalf("report = %+v", report)
	}
	var snap xjob.MetricsSnapshot
	e.must(200, "GET", "/v1/metrics", "", &snap)
	if snap.Failures != 1 {
		t.Fatalf("metrics = %+v", snap)
	}

	var cron struct {
		Expression, TimeZone string
		Next                 []string
	}
	e.must(200, "GET", "/v1/cron/next?expr=0+0+9+*+*+%3F&tz=Asia%2FTokyo&from=2026-02-28T23:00:00Z&n=2", "", &cron)
	if cron.Expression != "0 0 9 * * ?" || cron.TimeZone != "Asia/Tokyo" || len(cron.Next) != 2 ||
		cron.Next[0] != "2026-03-01T09:00:00+09:00" {
		t.Fatalf("cron next = %+v", cron)
	}

	e.must(204, "DELETE", "/v1/jobs/"+strconv.FormatInt(j.ID, 10), "", nil)
	e.must(204, "DELETE", "/v1/groups/"+id, "", nil)
	e.must(404, "GET", "/v1/groups/"+id, "", nil)
}

func TestRejectedRequests(t *testing.T) {
	t.Parallel()
	e := setup(t)
	g := e.group()
	j := e.job(g.ID, "")
	jid, gid := strconv.FormatInt(j.ID, 10), strconv.FormatInt(g.ID, 10)
	done := e.runningLog(j)
	if _, err := e.db.LogFinish(e.ctx, driver.LogFinishParams{ID: done.ID, HandleTime: 1, HandleCode: 200}); err != nil {
		t.Fatal(err)
	}
	validJob := fmt.Sprintf(`{"jobGroup":%d,"jobDesc":"d","author":"a","executorHandler":"h"}`, g.ID)
	huge := `{"jobDesc":"` + strings.Repeat("x", adminapi.MaxBodyBytes) + `"}`
	tests := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		field                    string // a problem expected on this field
	}{
		{"malformed JSON", "POST", "/v1/jobs", `{"jobGroup":`, nil, 400, ""},
		{"unknown field", "POST", "/v1/jobs", `{"jobGroup":1,"colour":"red"}`, nil, 400, ""},
		{"wrong type", "POST", "/v1/jobs", `{"jobGroup":"one"}`, nil, 400, ""},
		{"two objects", "POST", "/v1/jobs", validJob + validJob, nil, 400, ""},
		{"array", "POST", "/v1/jobs", `[` + validJob + `]`, nil, 400, ""},
		{"null", "POST", "/v1/jobs", `null`, nil, 400, ""},
		{"empty body", "POST", "/v1/jobs", ``, []string{"Content-Type: application/json"}, 400, ""},
		{"validation", "POST", "/v1/jobs", fmt.Sprintf(`{"jobGroup":%d,"author":"a","executorHandler":"h"}`, g.ID), nil, 400, "jobDesc"},
		{"bad enum", "POST", "/v1/jobs", fmt.Sprintf(`{"jobGroup":%d,"jobDesc":"d","author":"a","executorHandler":"h","executorRouteStrategy":"SOMETIMES"}`, g.ID), nil, 400, "executorRouteStrategy"},
		{"missing group", "POST", "/v1/jobs", `{"jobGroup":999,"jobDesc":"d","author":"a","executorHandler":"h"}`, nil, 400, "jobGroup"},
		{"missing child", "POST", "/v1/jobs", fmt.Sprintf(`{"jobGroup":%d,"jobDesc":"d","author":"a","executorHandler":"h","childJobIds":[999]}`, g.ID), nil, 400, "childJobIds"},
		{"running NONE", "POST", "/v1/jobs", fmt.Sprintf(`{"jobGroup":%d,"jobDesc":"d","author":"a","executorHandler":"h","triggerStatus":1}`, g.ID), nil, 400, "triggerStatus"},
		{"no content type", "POST", "/v1/jobs", validJob, []string{"Content-Type: "}, 415, ""},
		{"text/plain", "POST", "/v1/jobs", validJob, []string{"Content-Type: text/plain"}, 415, ""},
		{"too large", "POST", "/v1/jobs", huge, nil, 413, ""},
		{"bad id", "GET", "/v1/jobs/abc", "", nil, 400, "id"},
		{"missing job", "GET", "/v1/jobs/999", "", nil, 404, ""},
		{"PUT missing job", "PUT", "/v1/jobs/999", validJob, nil, 404, ""},
		{"PUT stale version", "PUT", "/v1/jobs/" + jid, strings.Replace(validJob, "{", `{"version":7,`, 1), nil, 409, ""},
		{"PUT id mismatch", "PUT", "/v1/jobs/" + jid, strings.Replace(validJob, "{", `{"id":999,`, 1), nil, 400, "id"},
		{"PUT glue type", "PUT", "/v1/jobs/" + jid, strings.Replace(validJob, "{", `{"glueType":"GLUE_SHELL",`, 1), nil, 400, "glueType"},
		{"DELETE missing job", "DELETE", "/v1/jobs/999", "", nil, 404, ""},
		{"start with junk body", "POST", "/v1/jobs/" + jid + "/start", `{"x":1}`, nil, 400, ""},
		{"trigger bad address", "POST", "/v1/jobs/" + jid + "/trigger", `{"addressList":["nope"]}`, nil, 400, "addressList"},
		{"trigger unknown field", "POST", "/v1/jobs/" + jid + "/trigger", `{"param":"x"}`, nil, 400, ""},
		{"trigger wrong type", "POST", "/v1/jobs/" + jid + "/trigger", `{"addressList":"http://a/"}`, nil, 400, ""},
		{"trigger missing job", "POST", "/v1/jobs/999/trigger", ``, nil, 404, ""},
		{"next n too big", "GET", "/v1/jobs/" + jid + "/next?n=1000", "", nil, 400, "n"},
		{"list bad status", "GET", "/v1/jobs?status=2", "", nil, 400, "status"},
		{"list unknown param", "GET", "/v1/jobs?stauts=1", "", nil, 400, "stauts"},
		{"list bad cursor", "GET", "/v1/jobs?cursor=zz", "", nil, 400, "cursor"},
		{"list limit", "GET", "/v1/jobs?limit=0", "", nil, 400, "limit"},
		{"cron bad expr", "GET", "/v1/cron/next?expr=bad", "", nil, 400, "expr"},
		{"cron no expr", "GET", "/v1/cron/next", "", nil, 400, "expr"},
		{"cron bad from", "GET", "/v1/cron/next?expr=0+*+*+*+*+%3F&from=yesterday", "", nil, 400, "from"},
		{"group invalid", "POST", "/v1/groups", `{"appname":"ab","title":"t"}`, nil, 400, "appname"},
		{"group manual without list", "POST", "/v1/groups", `{"appname":"abcd","title":"t","addressType":1}`, nil, 400, "addressList"},
		{"group unknown field", "POST", "/v1/groups", `{"appname":"abcd","title":"t","owner":"x"}`, nil, 400, ""},
		{"group in use", "DELETE", "/v1/groups/" + gid, "", nil, 409, ""},
		{"group stale", "PUT", "/v1/groups/" + gid, `{"appname":"abcd","title":"t","version":5}`, nil, 409, ""},
		{"group missing", "GET", "/v1/groups/999/executors", "", nil, 404, ""},
		{"logs bad status", "GET", "/v1/logs?status=weird", "", nil, 400, "status"},
		{"logs bad from", "GET", "/v1/logs?from=x", "", nil, 400, "from"},
		{"log missing", "GET", "/v1/logs/999", "", nil, 404, ""},
		{"executor log from 0", "GET", "/v1/logs/" + strconv.FormatInt(done.ID, 10) + "/executor-log?from=0", "", nil, 400, "from"},
		{"kill finished log", "POST", "/v1/logs/" + strconv.FormatInt(done.ID, 10) + "/kill", "", nil, 409, ""},
		{"report bad date", "GET", "/v1/report?from=2026-13-01", "", nil, 400, "from"},
		{"wrong method", "PATCH", "/v1/jobs/" + jid, validJob, nil, 405, ""},
		{"wrong method on list", "DELETE", "/v1/jobs", "", nil, 405, ""},
		{"unknown route", "GET", "/v1/nope", "", nil, 404, ""},
	}
	for _, tt := range tests {
		before, queuedBefore := e.state(), e.queued()
		r := e.call(tt.method, tt.path, tt.body, tt.hdr...)
		if r.status != tt.status {
			t.Errorf("%s: %d %s, want %d", tt.name, r.status, r.body, tt.status)
			continue
		}
		var ae struct {
			Error    string
			Problems []xjob.FieldProblem
		}
		if err := json.Unmarshal(r.body, &ae); err != nil || ae.Error == "" || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: error body %q (%v)", tt.name, r.body, err)
		}
		if tt.field != "" && (len(ae.Problems) == 0 || ae.Problems[0].Field != tt.field) {
			t.Errorf("%s: problems %+v, want one on %s", tt.name, ae.Problems, tt.field)
		}
		if tt.status == 405 && r.header.Get("Allow") == "" {
			t.Errorf("%s: no Allow header", tt.name)
		}
		if after := e.state(); after != before {
			t.Errorf("%s: a rejected request wrote:\nbefore %s\nafter  %s", tt.name, before, after)
		}
		if n := e.queued(); n != 0 || queuedBefore != 0 {
			t.Errorf("%s: a rejected request queued %d tasks", tt.name, n)
		}
	}
}

// Executor routes read small bodies: a registration is refused past
// MaxRegistryBodyBytes and a callback batch past MaxCallbackBodyBytes;
// wrongly cased and repeated keys are refused there as on /v1.
func TestExecutorBodiesBoundedAndStrict(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tok := "XXL-JOB-ACCESS-TOKEN: " + accessToken
	pad := strings.Repeat(" ", adminapi.MaxRegistryBodyBytes)
	reg := `{"registryGroup":"EXECUTOR","registryKey":"xjob-demo","registryValue":"http://10.0.0.5:9999/"}`
	tests := []struct {
		name, path, body, want string
	}{
		{"registration", "/api/registry", reg, `{"code":200}`},
		{"oversized registration", "/api/registry", reg + pad, `{"code":500,"msg":"Illegal Argument."}`},
		{"repeated key", "/api/registry", `{"registryGroup":"EXECUTOR","registryKey":"xjob-demo","registryValue":"http://10.0.0.5:9999/","registryValue":"http://10.6.6.6/"}`,
			`{"code":500,"msg":"Illegal Argument."}`},
		{"folded key", "/api/registry", `{"registryGroup":"EXECUTOR","REGISTRYKEY":"xjob-demo","registryValue":"http://10.0.0.5:9999/"}`,
			`{"code":500,"msg":"Illegal Argument."}`},
		{"file address", "/api/registry", `{"registryGroup":"EXECUTOR","registryKey":"xjob-demo","registryValue":"file:///etc/passwd"}`,
			`{"code":500,"msg":"Illegal Argument."}`},
		{"oversized callback", "/api/callback", `[` + strings.Repeat(" ", adminapi.MaxCallbackBodyBytes) + `]`, "larger than"},
		{"repeated callback key", "/api/callback", `[{"logId":1,"logId":2,"handleCode":200}]`, "given more than once"},
	}
	for _, tt := range tests {
		if r := e.call("POST", tt.path, tt.body, tok); !strings.Contains(string(r.body), tt.want) {
			t.Errorf("%s: %s, want %s", tt.name, r.body, tt.want)
		}
	}
}

// /v1 bodies: field names match exactly, once.
func TestAdminJSONStrict(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for name, body := range map[string]string{
		"folded":   `{"APPNAME":"strict-app","title":"t","addressType":0}`,
		"repeated": `{"appname":"strict-app","title":"t","title":"u","addressType":0}`,
	} {
		if r := e.call("POST", "/v1/groups", body); r.status != 400 {
			t.Errorf("%s: %d %s, want 400", name, r.status, r.body)
		}
	}
	var list struct{ Items []xjob.Group }
	e.must(200, "GET", "/v1/groups?appname=strict-app", "", &list)
	if len(list.Items) != 0 {
		t.Fatalf("refused bodies wrote %v", list.Items)
	}
}
