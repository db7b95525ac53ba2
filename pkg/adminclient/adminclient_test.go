package adminclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// request is what the test server saw.
type request struct {
	Method, Path, Query, Auth, ContentType, Body string
}

// reply is what the test server answers.
type reply struct {
	Status int
	Body   string
}

// setup starts a server on 127.0.0.1 that records each request and answers
// the replies in order, and returns a client of it with token "s3cret".
func setup(t *testing.T, replies ...reply) (*adminclient.Client, func() []request) {
	t.Helper()
	var seen []request
	reqs := make(chan request, 16)
	var mu sync.Mutex
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		reqs <- request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b)}
		mu.Lock()
		defer mu.Unlock()
		if next >= len(replies) {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		rp := replies[next]
		next++
		if rp.Body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(rp.Status)
		_, _ = io.WriteString(w, rp.Body)
	}))
	t.Cleanup(srv.Close)
	c, err := adminclient.New(srv.URL+"/", "s3cret", adminclient.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return c, func() []request {
		for {
			select {
			case r := <-reqs:
				seen = append(seen, r)
			default:
				return seen
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

const jobJSON = `{"id":7,"jobGroup":1,"jobDesc":"demo","author":"ann","scheduleType":"CRON","scheduleConf":"0/2 * * * * ?","timeZone":"UTC","executorHandler":"demoJob","childJobIds":[3],"triggerStatus":1,"triggerNextTime":1767225600000,"version":4}`

var wantJob = xjob.Job{ID: 7, GroupID: 1, Description: "demo", Author: "ann", ScheduleType: xjob.ScheduleCron,
	ScheduleConf: "0/2 * * * * ?", TimeZone: "UTC", Handler: "demoJob", ChildJobIDs: []int64{3},
	TriggerStatus: xjob.StatusRunning, TriggerNextTime: 1767225600000, Version: 4}

const groupJSON = `{"id":1,"appname":"demo-app","title":"Demo","addressType":1,"addressList":["http://127.0.0.1:9999"],"version":2}`

var wantGroup = xjob.Group{ID: 1, AppName: "demo-app", Title: "Demo", AddressType: xjob.AddressManual,
	AddressList: []string{"http://127.0.0.1:9999"}, Version: 2}

const logJSON = `{"id":11,"occurrenceId":"7@1767225600000","jobId":7,"jobGroup":1,"triggerType":"CRON","triggerTime":1767225600010,"triggerCode":200,"executorAddress":"http://127.0.0.1:9999","handleCode":500,"handleMsg":"job killed manually"}`

var wantLog = xjob.Log{ID: 11, OccurrenceID: "7@1767225600000", JobID: 7, GroupID: 1, TriggerType: xjob.TriggerCron,
	TriggerTime: 1767225600010, TriggerCode: 200, ExecutorAddress: "http://127.0.0.1:9999", HandleCode: 500,
	HandleMsg: "job killed manually"}

// TestRoutes checks, for every method, the request it sends (method, path,
// query, body, bearer token) and how it decodes the reply.
func TestRoutes(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		call   func(context.Context, *adminclient.Client) (any, error)
		reply  reply
		method string
		path   string
		query  string // url-encoded, sorted keys
		body   string // JSON the request must carry ("" = no body)
		want   any
	}{
		{
			name:   "health",
			call:   func(ctx context.Context, c *adminclient.Client) (any, error) { return nil, c.Health(ctx) },
			reply:  reply{200, `{"status":"ok"}`},
			method: "GET", path: "/healthz",
		},
		{
			name:   "metrics",
			call:   func(ctx context.Context, c *adminclient.Client) (any, error) { return c.Metrics(ctx) },
			reply:  reply{200, `{"triggers":5,"successes":4,"fireDelayP50Ms":2}`},
			method: "GET", path: "/v1/metrics",
			want: xjob.MetricsSnapshot{Triggers: 5, Successes: 4, FireDelayP50: 2},
		},
		{
			name: "job create",
			call: func(ctx context.Context, c *adminclient.Client) (any, error) {
				return c.JobCreate(ctx, xjob.Job{GroupID: 1, Description: "demo", ChildJobIDs: []int64{3}})
			},
			reply:  reply{201, jobJSON},
			method: "POST", path: "/v1/jobs",
			body: `{"jobGroup":1,"jobDesc":"demo","childJobIds":[3]}`,
			want: wantJob,
		},
		{
			name: "job list with filters",
			call: func(ctx context.Context, c *adminclient.Client) (any, error) {
				return c.JobList(ctx, adminclient.JobListParams{Group: 1, Status: ptr(xjob.StatusStopped), Desc: "de mo",
					Handler: "h", Author: "ann", Cursor: "c1", Limit: 20})
			},
			reply:  reply{200, `{"items":[` + jobJSON + `],"next":"c2"}`},
			method: "GET", path: "/v1/jobs",
			query: "author=ann&cursor=c1&desc=de+mo&group=1&handler=h&limit=20&status=0",
			want:  adminclient.JobPage{Items: []xjob.Job{wantJob}, Next: "c2"},
		},
		{
			name: "job list without filters",
			call: func(ctx context.Context, c *adminclient.Client) (any, error) {
				return c.JobList(ctx, adminclient.JobListParams{})
			},
			reply:  reply{200, `{"items":[],"next":""}`},
			method: "GET", path: "/v1/jobs",
			want: adminclient.JobPage{Items: []xjob.Job{}},
		},
		{
			name:   "job get",
			call:   func(ctx context.Context, c *adminclient.Client) (any, error) { return c.JobGet(ctx, 7) },
			reply:  reply{200, jobJSON},
			method: "GET", path: "/v1/jobs/7",
			want: wantJob,
		},
		{
			name: "job update",
			call: func(ctx context.Context, c *adminclient.Client) (any, error) {
				return c.JobUpdate(ctx, 7, xjob.Job{ID: 7, Description: "demo", Version: 4})
			},
			reply:  reply{200, jobJSON},
			method: "PUT", path: "/v1/jobs/7",
			body: `{"id":7,"jobDesc":"demo","version":4}`,
			want: wantJob,
		},
		{
			name:   "job delete",
			call:   func(ctx context.Context, c *adminclient.Client) (any, error) { return nil, c.JobDelete(ctx, 7) },
			reply:  reply{204, ""},
			method: "DELETE", path: "/v1/jobs/7",
		},
		{
			name:   "job start",
			call:   func(ctx context.Context, c *adminclient.Client) (any, error) { return c.JobStart(ctx, 7) },
			reply:  reply{200, jobJSON},
			method: "POST", path: "/v1/jobs/7/start",
			want: wantJob,
		},
		{
			name:   "job stop",
			call:   func(ctx context.Context, c *adminclient.Client) (any, error) { return c.JobStop(ctx, 7) },
			reply:  reply{200, jobJSON},
			method: "POST", path: "/v1/jobs/7/stop",
			want: wantJob,
		},
		{
			name: "job trigger with overrides",
			call: func(ctx context.Context, c *adminclient.Client) (any, error) {
				return c.JobTrigger(ctx, 7, adminclient.TriggerParams{ExecutorParam: ptr(""), AddressList: []string{"http://10.0.0.1:9999"}})
			},
			reply:  reply{202, `{"jobId":7,"occurrenceId":"7@m1"}`},
			method: "POST", path: "/v1/jobs/7/trigger",
			body: `{"executorParam":"","addressList":["http://10.0.0.1:9999"]}`,
			want: adminclient.TriggerResult{JobID: 7, OccurrenceID: "7@m1"},
		},
		{
			name: "job trigger plain",
			call: func(ctx context.Context, c *adminclient.Client) (any, error) {
				return c.JobTrigger(ctx, 7, adminclient.TriggerParams{})
			},
			reply:  reply{202, `{"jobId":7,"occurrenceId":"7@m2"}`},
			method: "POST", path: "/v1/jobs/7/trigger",
			body: `{}`,
			want: adminclient.TriggerResult{JobID: 7, OccurrenceID: "7@m2"},
		},
		{
			name:   "job next",
			call:   func(ctx context.Context, c *adminclient.Client) (any, error) { return c.JobNext(ctx, 7, 2) },
			reply:  reply{200, `{"next":["2026-01-01T00:00:00Z","2026-01-01T00:00:02Z"]}`},
			method: "GET", path: "/v1/jobs/7/next", query: "n=2",
			want: []time.Time{t0, t0.Add(2 * time.Second)},
		},
		{
			name: "cron next",
			call: func(ctx context.Context, c *adminclient.Client) (any, error) {
				return c.CronNext(ctx, adminclient.CronNextParams{Expr: "0 0 12 * * ?", TimeZone: "UTC", From: t0, N: 1})
			},
			reply:  reply{200, `{"expression":"0 0 12 * * ?","timeZone":"UTC","next":["2026-01-01T12:00:00Z"]}`},
			method: "GET", path: "/v1/cron/next",
			query: "expr=0+0+12+%2A+%2A+%3F&from=2026-01-01T00%3A00%3A00Z&n=1&tz=UTC",
			want:  adminclient.CronPreview{Expression: "0 0 12 * * ?", TimeZone: "UTC", Next: []time.Time{t0.Add(12 * time.Hour)}},
		},
		{
			name: "group create",
			call: func(ctx context.Context, c *adminclient.Client) (any, error) {
				return c.GroupCreate(ctx, xjob.Group{AppName: "demo-app", Title: "Demo"})
			},
			reply:  reply{201, groupJSON},
			method: "POST", path: "/v1/groups",
			body: `{"appname":"demo-app","title":"Demo"}`,
			want: wantGroup,
		},
		{
			name: "group list",
			call: func(ctx context.Context, c *adminclient.Client) (any, error) {
				return c.GroupList(ctx, adminclient.GroupListParams{AppName: "demo", Title: "De"})
			},
			reply:  reply{200, `{"items":[` + groupJSON + `]}`},
			method: "GET", path: "/v1/groups", query: "appname=demo&title=De",
			want: []xjob.Group{wantGroup},
		},
		{
			name:   "group get",
			call:   func(ctx context.Context, c *adminclient.Client) (any, error) { return c.GroupGet(ctx, 1) },
			reply:  reply{200, groupJSON},
			method: "GET", path: "/v1/groups/1",
			want: wantGroup,
		},
		{
			name: "group update",
			call: func(ctx context.Context, c *adminclient.Client) (any, error) {
				return c.GroupUpdate(ctx, 1, xjob.Group{ID: 1, AppName: "demo-app", Title: "Demo", Version: 2})
			},
			reply:  reply{200, groupJSON},
			method: "PUT", path: "/v1/groups/1",
			body: `{"id":1,"appname":"demo-app","title":"Demo","version":2}`,
			want: wantGroup,
		},
		{
			name:   "group delete",
			call:   func(ctx context.Context, c *adminclient.Client) (any, error) { return nil, c.GroupDelete(ctx, 1) },
			reply:  reply{204, ""},
			method: "DELETE", path: "/v1/groups/1",
		},
		{
			name:   "group executors",
			call:   func(ctx context.Context, c *adminclient.Client) (any, error) { return c.GroupExecutors(ctx, 1) },
			reply:  reply{200, `{"items":[{"address":"http://127.0.0.1:9999","updateTime":1767225600000}]}`},
			method: "GET", path: "/v1/groups/1/executors",
			want: []adminclient.Executor{{Address: "http://127.0.0.1:9999", UpdateTime: 1767225600000}},
		},
		{
			name: "log list",
			call: func(ctx context.Context, c *adminclient.Client) (any, error) {
				return c.LogList(ctx, adminclient.LogListParams{Job: 7, Group: 1, Status: adminclient.LogStatusFail,
					From: t0, To: t0.Add(time.Hour), Cursor: "x", Limit: 5})
			},
			reply:  reply{200, `{"items":[` + logJSON + `],"next":""}`},
			method: "GET", path: "/v1/logs",
			query: "cursor=x&from=1767225600000&group=1&job=7&limit=5&status=fail&to=1767229200000",
			want:  adminclient.LogPage{Items: []xjob.Log{wantLog}},
		},
		{
			name:   "log get",
			call:   func(ctx context.Context, c *adminclient.Client) (any, error) { return c.LogGet(ctx, 11) },
			reply:  reply{200, logJSON},
			method: "GET", path: "/v1/logs/11",
			want: wantLog,
		},
		{
			name:   "log executor log",
			call:   func(ctx context.Context, c *adminclient.Client) (any, error) { return c.LogExecutorLog(ctx, 11, 3) },
			reply:  reply{200, `{"fromLineNum":3,"toLineNum":4,"logContent":"c\nd","isEnd":true}`},
			method: "GET", path: "/v1/logs/11/executor-log", query: "from=3",
			want: protocol.LogResult{FromLineNum: 3, ToLineNum: 4, LogContent: "c\nd", IsEnd: true},
		},
		{
			name:   "log kill",
			call:   func(ctx context.Context, c *adminclient.Client) (any, error) { return c.LogKill(ctx, 11) },
			reply:  reply{200, logJSON},
			method: "POST", path: "/v1/logs/11/kill",
			want: wantLog,
		},
		{
			name: "report",
			call: func(ctx context.Context, c *adminclient.Client) (any, error) {
				return c.Report(ctx, t0, t0.AddDate(0, 0, 1))
			},
			reply:  reply{200, `{"items":[{"triggerDay":"2026-01-01","runningCount":1,"sucCount":2,"failCount":3}]}`},
			method: "GET", path: "/v1/report", query: "from=2026-01-01&to=2026-01-02",
			want: []xjob.ReportDay{{Day: "2026-01-01", RunningCount: 1, SucCount: 2, FailCount: 3}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, seen := setup(t, tt.reply)
			got, err := tt.call(context.Background(), c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			reqs := seen()
			if len(reqs) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tt.method || r.Path != tt.path {
				t.Errorf("request %s %s, want %s %s", r.Method, r.Path, tt.method, tt.path)
			}
			if r.Query != tt.query {
				t.Errorf("query %q, want %q", r.Query, tt.query)
			}
			if r.Auth != "Bearer s3cret" {
				t.Errorf("Authorization %q", r.Auth)
			}
			if tt.body == "" {
				if r.Body != "" || r.ContentType != "" {
					t.Errorf("unexpected body %q (Content-Type %q)", r.Body, r.ContentType)
				}
			} else {
				if r.ContentType != "application/json" {
					t.Errorf("Content-Type %q", r.ContentType)
				}
				if !jsonSubset(t, tt.body, r.Body) {
					t.Errorf("body %s, want it to hold %s", r.Body, tt.body)
				}
			}
			if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

// jsonSubset reports whether every key of want has the same value in got:
// the client sends whole structs, the test names the fields it cares about
// and that every other one is a zero value.
func jsonSubset(t *testing.T, want, got string) bool {
	t.Helper()
	var w, g map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want: %v", err)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Errorf("body is not JSON: %v", err)
		return false
	}
	for k, v := range g {
		wv, ok := w[k]
		if !ok {
			if !isZero(v) {
				t.Errorf("body field %s = %v, want zero", k, v)
				return false
			}
			continue
		}
		if !reflect.DeepEqual(wv, v) {
			return false
		}
	}
	for k := range w {
		if _, ok := g[k]; !ok {
			return false
		}
	}
	return true
}

func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case float64:
		return v == 0
	case bool:
		return !v
	}
	return false
}

func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply reply
		want  adminclient.APIError
		text  string
		is    error
		isNot error
	}{
		{
			name:  "validation",
			reply: reply{400, `{"error":"invalid job","problems":[{"field":"jobDesc","message":"is required"},{"field":"author","message":"is required"}]}`},
			want: adminclient.APIError{Status: 400, Message: "invalid job", Problems: []xjob.FieldProblem{
				{Field: "jobDesc", Message: "is required"}, {Field: "author", Message: "is required"}}},
			text:  "400 Bad Request: invalid job (jobDesc: is required; author: is required)",
			isNot: xjob.ErrNotFound,
		},
		{
			name: "validation with the problems in the message too",
			reply: reply{400, `{"error":"invalid input: jobDesc: is required; author: is required","problems":[` +
				`{"field":"jobDesc","message":"is required"},{"field":"author","message":"is required"}]}`},
			want: adminclient.APIError{Status: 400, Message: "invalid input: jobDesc: is required; author: is required",
				Problems: []xjob.FieldProblem{{Field: "jobDesc", Message: "is required"}, {Field: "author", Message: "is required"}}},
			text: "400 Bad Request: invalid input (jobDesc: is required; author: is required)",
		},
		{
			name:  "problems only",
			reply: reply{400, `{"problems":[{"field":"expr","message":"cron: bad"}]}`},
			want:  adminclient.APIError{Status: 400, Problems: []xjob.FieldProblem{{Field: "expr", Message: "cron: bad"}}},
			text:  "400 Bad Request (expr: cron: bad)",
		},
		{
			name:  "unauthorized",
			reply: reply{401, `{"error":"missing or wrong bearer token"}`},
			want:  adminclient.APIError{Status: 401, Message: "missing or wrong bearer token"},
			text:  "401 Unauthorized: missing or wrong bearer token",
		},
		{
			name:  "not found",
			reply: reply{404, `{"error":"no such job 9"}`},
			want:  adminclient.APIError{Status: 404, Message: "no such job 9"},
			text:  "404 Not Found: no such job 9",
			is:    xjob.ErrNotFound, isNot: xjob.ErrConflict,
		},
		{
			name:  "conflict",
			reply: reply{409, `{"error":"job changed since it was read"}`},
			want:  adminclient.APIError{Status: 409, Message: "job changed since it was read"},
			text:  "409 Conflict: job changed since it was read",
			is:    xjob.ErrConflict, isNot: xjob.ErrNotFound,
		},
		{
			name:  "not json",
			reply: reply{502, "<html>\n  <body>Bad   Gateway</body></html>"},
			want:  adminclient.APIError{Status: 502, Message: "<html> <body>Bad Gateway</body></html>"},
			text:  "502 Bad Gateway: <html> <body>Bad Gateway</body></html>",
		},
		{
			name:  "empty body",
			reply: reply{500, ""},
			want:  adminclient.APIError{Status: 500},
			text:  "500 Internal Server Error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := setup(t, tt.reply)
			_, err := c.JobGet(context.Background(), 9)
			apiErr, ok := adminclient.AsAPIError(err)
			if !ok {
				t.Fatalf("error %v (%T) is not an *APIError", err, err)
			}
			if !reflect.DeepEqual(*apiErr, tt.want) {
				t.Errorf("got %#v, want %#v", *apiErr, tt.want)
			}
			if err.Error() != tt.text {
				t.Errorf("Error() = %q, want %q", err.Error(), tt.text)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v) = false", tt.is)
			}
			if tt.isNot != nil && errors.Is(err, tt.isNot) {
				t.Errorf("errors.Is(%v) = true", tt.isNot)
			}
		})
	}
}

func TestBadReplyAndTransport(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, reply{200, `{"id":"seven"}`})
	if _, err := c.JobGet(context.Background(), 7); err == nil || !strings.Contains(err.Error(), "decode reply") {
		t.Errorf("bad JSON reply: err = %v", err)
	}
	if _, ok := adminclient.AsAPIError(errors.New("x")); ok {
		t.Error("AsAPIError on a plain error")
	}

	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	c2, err := adminclient.New(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	err = c2.Health(context.Background())
	if err == nil || !strings.Contains(err.Error(), "/healthz") {
		t.Errorf("closed server: err = %v", err)
	}
	if _, ok := adminclient.AsAPIError(err); ok {
		t.Error("transport error reported as an APIError")
	}
}

func TestNoTokenSendsNoAuthorization(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization") + "|" + r.URL.Path
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	}))
	t.Cleanup(srv.Close)
	c, err := adminclient.New(srv.URL+"/prefix/", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g != "|/prefix/healthz" {
		t.Errorf("Authorization|path = %q, want no token and the prefix kept", g)
	}
}

func TestNewRejectsBadAddress(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"", "127.0.0.1:8080", "ftp://host", "http://", "http://h/?q=1", "http://h/#f", "http://a b"} {
		if _, err := adminclient.New(addr, "t"); err == nil {
			t.Errorf("New(%q) accepted", addr)
		}
	}
	c, err := adminclient.New(" https://admin.example.com/xjob/ ", "t")
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != "https://admin.example.com/xjob" {
		t.Errorf("BaseURL = %q", c.BaseURL())
	}
}

func TestListAllFollowsCursors(t *testing.T) {
	t.Parallel()
	c, seen := setup(t,
		reply{200, `{"items":[{"id":1},{"id":2}],"next":"p2"}`},
		reply{200, `{"items":[{"id":3}],"next":""}`},
		reply{200, `{"items":[{"id":21},{"id":22}],"next":"q2"}`},
		reply{404, `{"error":"no such group 5"}`},
	)
	var ids []int64
	for j, err := range c.JobListAll(context.Background(), adminclient.JobListParams{Group: 5, Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	if !reflect.DeepEqual(ids, []int64{1, 2, 3}) {
		t.Errorf("job ids %v", ids)
	}
	var logIDs []int64
	var lastErr error
	for l, err := range c.LogListAll(context.Background(), adminclient.LogListParams{Group: 5}) {
		if err != nil {
			lastErr = err
			break
		}
		logIDs = append(logIDs, l.ID)
	}
	if !reflect.DeepEqual(logIDs, []int64{21, 22}) || !errors.Is(lastErr, xjob.ErrNotFound) {
		t.Errorf("log ids %v, err %v", logIDs, lastErr)
	}
	reqs := seen()
	var queries []string
	for _, r := range reqs {
		q, _ := url.ParseQuery(r.Query)
		queries = append(queries, r.Path+"?"+q.Get("cursor"))
	}
	want := []string{"/v1/jobs?", "/v1/jobs?p2", "/v1/logs?", "/v1/logs?q2"}
	if !reflect.DeepEqual(queries, want) {
		t.Errorf("requests %v, want %v", queries, want)
	}
}
