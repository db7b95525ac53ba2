package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/clock"
)

// t0 is "now" in every CLI test.
var t0 = time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)

type reply struct {
	status int
	body   string
}

type seenRequest struct {
	method, target, auth, body string
}

// apiDouble is an httptest server answering canned replies per route
// ("GET /v1/jobs/7", or with the query "GET /v1/jobs?cursor=c2" when that
// must differ); a route given several replies answers them in turn and then
// repeats the last. It records every request.
type apiDouble struct {
	mu     sync.Mutex
	routes map[string][]reply
	seen   []seenRequest
	srv    *httptest.Server
}

func newAPIDouble(t *testing.T, routes map[string][]reply) *apiDouble {
	t.Helper()
	d := &apiDouble{routes: routes}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *apiDouble) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	d.mu.Lock()
	defer d.mu.Unlock()
	target := r.URL.Path
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	d.seen = append(d.seen, seenRequest{r.Method, target, r.Header.Get("Authorization"), string(body)})
	key := r.Method + " " + target
	replies, ok := d.routes[key]
	if !ok {
		key = r.Method + " " + r.URL.Path
		replies, ok = d.routes[key]
	}
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"test double: no route `+r.Method+` `+target+`"}`)
		return
	}
	rp := replies[0]
	if len(replies) > 1 {
		d.routes[key] = replies[1:]
	}
	if rp.body != "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(rp.status)
	_, _ = io.WriteString(w, rp.body)
}

func (d *apiDouble) requests() []seenRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]seenRequest(nil), d.seen...)
}

type result struct {
	code        int
	out, errOut string
}

// runCLI runs the CLI against server with token "tok" in the environment,
// the clock at t0 and times shown in UTC.
func runCLI(ctx context.Context, server, stdin string, clk clock.Clock, args ...string) result {
	var out, errb bytes.Buffer
	vars := map[string]string{envServer: server, envToken: "tok"}
	code := run(ctx, args, env{
		stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return vars[k] },
		clock:  clk, loc: time.UTC,
	})
	return result{code, out.String(), errb.String()}
}

const (
	jobJSON   = `{"id":7,"jobGroup":1,"jobDesc":"demo cron","author":"ann","scheduleType":"CRON","scheduleConf":"0/2 * * * * ?","timeZone":"UTC","misfireStrategy":"DO_NOTHING","executorRouteStrategy":"FIRST","executorHandler":"demoJob","executorParam":"p","executorBlockStrategy":"SERIAL_EXECUTION","executorTimeout":30,"executorFailRetryCount":1,"glueType":"BEAN","childJobIds":[3],"triggerStatus":1,"triggerLastTime":1767225608000,"triggerNextTime":1767225612000,"version":4,"addTime":1767225600000,"updateTime":1767225600000}`
	job8JSON  = `{"id":8,"jobGroup":1,"jobDesc":"demo rate","author":"bob","scheduleType":"FIX_RATE","scheduleConf":"5","timeZone":"UTC","executorRouteStrategy":"ROUND","executorHandler":"rateJob","triggerStatus":0,"version":1}`
	groupJSON = `{"id":1,"appname":"demo-app","title":"Demo","addressType":1,"addressList":["http://127.0.0.1:9999","http://127.0.0.1:9998"],"version":2,"updateTime":1767225600000}`
	logJSON   = `{"id":11,"occurrenceId":"7@1767225600000","jobId":7,"jobGroup":1,"triggerType":"CRON","scheduleTime":1767225600000,"triggerTime":1767225600010,"triggerCode":200,"triggerMsg":"Trigger type: CRON<br>Route: FIRST<br>Address: http://127.0.0.1:9999","executorAddress":"http://127.0.0.1:9999","executorHandler":"demoJob","handleTime":1767225601000,"handleCode":500,"handleMsg":"boom:\nstack"}`
	log12JSON = `{"id":12,"jobId":7,"jobGroup":1,"triggerType":"MANUAL","triggerTime":1767225602000,"triggerCode":200,"executorAddress":"http://127.0.0.1:9999"}`
)

func TestCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		routes map[string][]reply
		args   []string
		stdin  string
		code   int
		out    string   // exact stdout, when not empty
		errHas []string // substrings of stderr
		reqs   []string // "METHOD target" of every request, in order (nil: not checked)
		body   string   // JSON object the last request's body must equal (field by field)
	}{
		{
			name:   "job list table",
			routes: map[string][]reply{"GET /v1/jobs": {{200, `{"items":[` + jobJSON + `,` + job8JSON + `],"next":""}`}}},
			args:   []string{"job", "list"},
			out: "" +
				"ID  GROUP  DESCRIPTION  SCHEDULE            HANDLER  ROUTE  STATUS   NEXT FIRE\n" +
				"7   1      demo cron    cron 0/2 * * * * ?  demoJob  FIRST  started  2026-01-01 00:00:12 UTC\n" +
				"8   1      demo rate    every 5s            rateJob  ROUND  stopped  -\n",
			reqs: []string{"GET /v1/jobs"},
		},
		{
			name:   "job list json with filters and a next page",
			routes: map[string][]reply{"GET /v1/jobs": {{200, `{"items":[` + job8JSON + `],"next":"c2"}`}}},
			args:   []string{"job", "list", "--group", "1", "--status", "stopped", "--handler", "rate", "--limit", "1", "-o", "json"},
			out:    jsonOf[adminclient.JobPage](`{"items":[` + job8JSON + `],"next":"c2"}`),
			reqs:   []string{"GET /v1/jobs?group=1&handler=rate&limit=1&status=0"},
		},
		{
			name:   "job list table hints at the next page",
			routes: map[string][]reply{"GET /v1/jobs": {{200, `{"items":[],"next":"c2"}`}}},
			args:   []string{"job", "list"},
			out:    "ID  GROUP  DESCRIPTION  SCHEDULE  HANDLER  ROUTE  STATUS  NEXT FIRE\n",
			errHas: []string{"More jobs: add --cursor c2 (or --all)."},
		},
		{
			name: "job list --all follows cursors",
			routes: map[string][]reply{
				"GET /v1/jobs":           {{200, `{"items":[` + jobJSON + `],"next":"c2"}`}},
				"GET /v1/jobs?cursor=c2": {{200, `{"items":[` + job8JSON + `],"next":""}`}},
			},
			args: []string{"job", "list", "--all", "-o", "json"},
			reqs: []string{"GET /v1/jobs", "GET /v1/jobs?cursor=c2"},
		},
		{
			name:   "job list bad status",
			args:   []string{"job", "list", "--status", "maybe"},
			code:   2,
			errHas: []string{`--status must be started or stopped, got "maybe"`, "Usage:"},
			reqs:   []string{},
		},
		{
			name:   "job get detail",
			routes: map[string][]reply{"GET /v1/jobs/7": {{200, jobJSON}}},
			args:   []string{"job", "get", "7"},
			out: "" +
				"ID:            7\n" +
				"Name:          -\n" +
				"Group:         1\n" +
				"Description:   demo cron\n" +
				"Author:        ann\n" +
				"Alarm e-mail:  -\n" +
				"Schedule:      cron 0/2 * * * * ? (UTC)\n" +
				"Misfire:       DO_NOTHING\n" +
				"Status:        started\n" +
				"Handler:       demoJob\n" +
				"Param:         p\n" +
				"Glue:          BEAN\n" +
				"Route:         FIRST\n" +
				"Block:         SERIAL_EXECUTION\n" +
				"Timeout:       30s\n" +
				"Retries:       1\n" +
				"Children:      3\n" +
				"Last fire:     2026-01-01 00:00:08 UTC\n" +
				"Next fire:     2026-01-01 00:00:12 UTC\n" +
				"Declared:      -\n" +
				"Version:       4\n" +
				"Created:       2026-01-01 00:00:00 UTC\n" +
				"Updated:       2026-01-01 00:00:00 UTC\n",
		},
		{
			name: "job get declared and edited",
			routes: map[string][]reply{"GET /v1/jobs/7": {{200, strings.Replace(jobJSON, `"id":7,`,
				`"id":7,"name":"demo-app.demoJob","declared":"{\"handler\":\"demoJob\",\"description\":\"demo cron\",\"scheduleType\":\"CRON\",\"scheduleConf\":\"0/5 * * * * ?\",\"timeZone\":\"UTC\",\"misfireStrategy\":\"DO_NOTHING\",\"routeStrategy\":\"FIRST\",\"timeoutSeconds\":30,\"failRetryCount\":1,\"param\":\"p\"}",`, 1)}}},
			args: []string{"job", "show", "7"}, // the alias of get
			out: "" +
				"ID:            7\n" +
				"Name:          demo-app.demoJob\n" +
				"Group:         1\n" +
				"Description:   demo cron\n" +
				"Author:        ann\n" +
				"Alarm e-mail:  -\n" +
				"Schedule:      cron 0/2 * * * * ? (UTC)\n" +
				"Misfire:       DO_NOTHING\n" +
				"Status:        started\n" +
				"Handler:       demoJob\n" +
				"Param:         p\n" +
				"Glue:          BEAN\n" +
				"Route:         FIRST\n" +
				"Block:         SERIAL_EXECUTION\n" +
				"Timeout:       30s\n" +
				"Retries:       1\n" +
				"Children:      3\n" +
				"Last fire:     2026-01-01 00:00:08 UTC\n" +
				"Next fire:     2026-01-01 00:00:12 UTC\n" +
				"Declared:      by its executor; current differs in scheduleConf (the job keeps its values)\n" +
				"Version:       4\n" +
				"Created:       2026-01-01 00:00:00 UTC\n" +
				"Updated:       2026-01-01 00:00:00 UTC\n",
		},
		{
			name:   "job get json",
			routes: map[string][]reply{"GET /v1/jobs/8": {{200, job8JSON}}},
			args:   []string{"-o", "json", "job", "get", "8"},
			out:    jsonOf[xjob.Job](job8JSON),
		},
		{
			name:   "job get not found",
			routes: map[string][]reply{"GET /v1/jobs/9": {{404, `{"error":"no such job 9"}`}}},
			args:   []string{"job", "get", "9"},
			code:   1,
			errHas: []string{"Error: no such job 9 (HTTP 404)\n"},
		},
		{
			name:   "job get bad id",
			args:   []string{"job", "get", "seven"},
			code:   2,
			errHas: []string{`"seven" is not an id`},
			reqs:   []string{},
		},
		{
			name:   "job get needs an id",
			args:   []string{"job", "get"},
			code:   2,
			errHas: []string{"accepts 1 arg(s), received 0", "Usage:\n  xjob job get ID"},
		},
		{
			name:   "job create from flags",
			routes: map[string][]reply{"POST /v1/jobs": {{201, jobJSON}}},
			args: []string{"job", "create", "--group", "1", "--desc", "demo cron", "--author", "ann", "--cron", "0/2 * * * * ?",
				"--handler", "demoJob", "--param", "p", "--route", "first", "--block", "serial_execution", "--timeout", "30",
				"--retry", "1", "--tz", "UTC", "--child", "3", "--start", "-o", "json"},
			out:  jsonOf[xjob.Job](jobJSON),
			reqs: []string{"POST /v1/jobs"},
			body: `{"jobGroup":1,"jobDesc":"demo cron","author":"ann","scheduleType":"CRON","scheduleConf":"0/2 * * * * ?",
				"executorHandler":"demoJob","executorParam":"p","executorRouteStrategy":"FIRST","executorBlockStrategy":"SERIAL_EXECUTION",
				"executorTimeout":30,"executorFailRetryCount":1,"timeZone":"UTC","childJobIds":[3],"triggerStatus":1}`,
		},
		{
			name:   "job create fix rate over a file from stdin",
			routes: map[string][]reply{"POST /v1/jobs": {{201, job8JSON}}},
			args:   []string{"job", "create", "--file", "-", "--fix-rate", "5", "--author", "bob"},
			stdin:  `{"jobGroup":1,"jobDesc":"demo rate","author":"someone","scheduleType":"CRON","scheduleConf":"x","executorHandler":"rateJob"}`,
			errHas: []string{},
			body:   `{"jobGroup":1,"jobDesc":"demo rate","author":"bob","scheduleType":"FIX_RATE","scheduleConf":"5","executorHandler":"rateJob"}`,
		},
		{
			name:   "job create fix delay over a file from stdin",
			routes: map[string][]reply{"POST /v1/jobs": {{201, job8JSON}}},
			args:   []string{"job", "create", "--file", "-", "--fix-delay", "30", "--timeout", "600"},
			stdin:  `{"jobGroup":1,"jobDesc":"drain","author":"bob","scheduleType":"FIX_RATE","scheduleConf":"5","executorHandler":"drainJob"}`,
			errHas: []string{},
			body: `{"jobGroup":1,"jobDesc":"drain","author":"bob","scheduleType":"FIX_DELAY","scheduleConf":"30","executorHandler":"drainJob",
				"executorTimeout":600}`,
		},
		{
			name:   "job create fix rate and fix delay exclude each other",
			args:   []string{"job", "create", "--fix-delay", "5", "--fix-rate", "5"},
			code:   2,
			errHas: []string{"[fix-delay fix-rate] were all set"},
			reqs:   []string{},
		},
		{
			name:   "job create file with an unknown field",
			args:   []string{"job", "create", "--file", "-"},
			stdin:  `{"jobGroup":1,"jobDescription":"typo"}`,
			code:   2,
			errHas: []string{`unknown field "jobDescription"`},
			reqs:   []string{},
		},
		{
			name:   "job create cron and fix rate exclude each other",
			args:   []string{"job", "create", "--cron", "* * * * * ?", "--fix-rate", "5"},
			code:   2,
			errHas: []string{"[cron fix-rate] were all set"},
			reqs:   []string{},
		},
		{
			name:   "job create bad child list",
			args:   []string{"job", "create", "--child", "1,x"},
			code:   2,
			errHas: []string{"--child:"},
		},
		{
			name:   "job create without fields",
			args:   []string{"job", "create"},
			code:   2,
			errHas: []string{"give the job's fields"},
		},
		{
			name: "job create validation error",
			routes: map[string][]reply{"POST /v1/jobs": {{400, `{"error":"invalid job","problems":[` +
				`{"field":"jobDesc","message":"is required"},{"field":"scheduleConf","message":"cron: bad field"}]}`}}},
			args:   []string{"job", "create", "--group", "1"},
			code:   1,
			errHas: []string{"Error: invalid job (HTTP 400)\n  jobDesc: is required\n  scheduleConf: cron: bad field\n"},
		},
		{
			name: "job create validation error spelt into the message",
			routes: map[string][]reply{"POST /v1/jobs": {{400, `{"error":"invalid input: jobDesc: is required","problems":[` +
				`{"field":"jobDesc","message":"is required"}]}`}}},
			args:   []string{"job", "create", "--group", "1"},
			code:   1,
			errHas: []string{"Error: invalid input (HTTP 400)\n  jobDesc: is required\n"},
		},
		{
			name: "job update reads then writes conditionally",
			routes: map[string][]reply{
				"GET /v1/jobs/7": {{200, jobJSON}},
				"PUT /v1/jobs/7": {{200, jobJSON}},
			},
			args: []string{"job", "update", "7", "--param", "", "--child", "", "--desc", "renamed"},
			reqs: []string{"GET /v1/jobs/7", "PUT /v1/jobs/7"},
			body: `{"id":7,"jobGroup":1,"jobDesc":"renamed","author":"ann","scheduleType":"CRON","scheduleConf":"0/2 * * * * ?","timeZone":"UTC",
				"misfireStrategy":"DO_NOTHING","executorRouteStrategy":"FIRST","executorHandler":"demoJob","executorParam":"",
				"executorBlockStrategy":"SERIAL_EXECUTION","executorTimeout":30,"executorFailRetryCount":1,"glueType":"BEAN",
				"childJobIds":null,"triggerStatus":1,"triggerLastTime":1767225608000,"triggerNextTime":1767225612000,"version":4,
				"addTime":1767225600000,"updateTime":1767225600000}`,
		},
		{
			name: "job update conflict",
			routes: map[string][]reply{
				"GET /v1/jobs/7": {{200, jobJSON}},
				"PUT /v1/jobs/7": {{409, `{"error":"job 7 changed since version 4"}`}},
			},
			args:   []string{"job", "update", "7", "--retry", "2"},
			code:   1,
			errHas: []string{"Error: job 7 changed since version 4 (HTTP 409)\n", "Hint: it changed since it was read"},
		},
		{
			name:   "job update with nothing to change",
			routes: map[string][]reply{"GET /v1/jobs/7": {{200, jobJSON}}},
			args:   []string{"job", "update", "7"},
			code:   2,
			errHas: []string{"nothing to change"},
		},
		{
			name:   "job delete",
			routes: map[string][]reply{"DELETE /v1/jobs/7": {{204, ""}}},
			args:   []string{"job", "delete", "7"},
			out:    "Deleted job 7.\n",
			reqs:   []string{"DELETE /v1/jobs/7"},
		},
		{
			name:   "job start",
			routes: map[string][]reply{"POST /v1/jobs/7/start": {{200, jobJSON}}},
			args:   []string{"job", "start", "7"},
			out:    "Started job 7; next fire 2026-01-01 00:00:12 UTC.\n",
		},
		{
			name:   "job stop",
			routes: map[string][]reply{"POST /v1/jobs/8/stop": {{200, job8JSON}}},
			args:   []string{"job", "stop", "8"},
			out:    "Stopped job 8.\n",
		},
		{
			name: "job trigger with overrides",
			routes: map[string][]reply{"POST /v1/jobs/7/trigger": {{202, `{"jobId":7,"occurrenceId":"7@m1"}`}},
				"GET /v1/logs": {{200, `{"items":[{"id":31,"jobId":7,"occurrenceId":"7@m1"},{"id":30,"jobId":7,"occurrenceId":"7@m0"}]}`}}},
			args: []string{"job", "trigger", "7", "--param", "", "--address", "http://10.0.0.1:9999,http://10.0.0.2:9999"},
			out:  "Triggered job 7: log 31 (occurrence 7@m1). Follow it with: xjob log tail 31\n",
			body: `{"executorParam":"","addressList":["http://10.0.0.1:9999","http://10.0.0.2:9999"]}`,
		},
		{
			name: "job trigger plain json",
			routes: map[string][]reply{"POST /v1/jobs/7/trigger": {{202, `{"jobId":7,"occurrenceId":"j7/MANUAL/r2/s0"}`}},
				"GET /v1/logs": {{200, `{"items":[{"id":41,"jobId":7,"occurrenceId":"j7/MANUAL/r2/s1"},{"id":40,"jobId":7,"occurrenceId":"j7/MANUAL/r2/s0"}]}`}}},
			args: []string{"job", "trigger", "7", "-o", "json"},
			out:  "{\n  \"jobId\": 7,\n  \"occurrenceId\": \"j7/MANUAL/r2/s0\",\n  \"logIds\": [\n    40,\n    41\n  ]\n}\n",
			body: `{}`,
		},
		{
			name:   "job next",
			routes: map[string][]reply{"GET /v1/jobs/7/next": {{200, `{"next":["2026-01-01T00:00:12Z","2026-01-01T08:00:14+08:00"]}`}}},
			args:   []string{"job", "next", "7", "-n", "2"},
			out:    "2026-01-01 00:00:12 UTC\n2026-01-01 00:00:14 UTC\n",
			reqs:   []string{"GET /v1/jobs/7/next?n=2"},
		},
		{
			name:   "job next json keeps the server's offsets",
			routes: map[string][]reply{"GET /v1/jobs/7/next": {{200, `{"next":["2026-01-01T08:00:14+08:00"]}`}}},
			args:   []string{"job", "next", "7", "-o", "json"},
			out:    "{\n  \"next\": [\n    \"2026-01-01T08:00:14+08:00\"\n  ]\n}\n",
		},
		{
			name:   "unauthorized shows a token hint",
			routes: map[string][]reply{"GET /v1/jobs": {{401, `{"error":"missing or wrong bearer token"}`}}},
			args:   []string{"job", "list"},
			code:   1,
			errHas: []string{"Error: missing or wrong bearer token (HTTP 401)", "Hint: pass --token or set XJOB_TOKEN"},
		},
		{
			name:   "bad output format",
			args:   []string{"job", "list", "-o", "yaml"},
			code:   2,
			errHas: []string{`-o must be table or json, got "yaml"`},
			reqs:   []string{},
		},
		{
			name:   "unknown flag",
			args:   []string{"job", "list", "--colour"},
			code:   2,
			errHas: []string{"unknown flag: --colour", "Usage:"},
		},
		{
			name:   "unknown subcommand",
			args:   []string{"job", "frob"},
			code:   2,
			errHas: []string{`unknown command "frob" for "xjob job"`},
		},
		{
			name:   "group create manual",
			routes: map[string][]reply{"POST /v1/groups": {{201, groupJSON}}},
			args:   []string{"group", "create", "--appname", "demo-app", "--title", "Demo", "--address", "http://127.0.0.1:9999", "--address", "http://127.0.0.1:9998"},
			out: "" +
				"ID:         1\n" +
				"AppName:    demo-app\n" +
				"Title:      Demo\n" +
				"Type:       manual\n" +
				"Addresses:  http://127.0.0.1:9999\n" +
				"            http://127.0.0.1:9998\n" +
				"Version:    2\n" +
				"Updated:    2026-01-01 00:00:00 UTC\n",
			body: `{"appname":"demo-app","title":"Demo","addressType":1,"addressList":["http://127.0.0.1:9999","http://127.0.0.1:9998"]}`,
		},
		{
			name:   "group create auto",
			routes: map[string][]reply{"POST /v1/groups": {{201, groupJSON}}},
			args:   []string{"group", "create", "--appname", "demo-app", "--title", "Demo"},
			body:   `{"appname":"demo-app","title":"Demo","addressType":0,"addressList":null}`,
		},
		{
			name:   "group list",
			routes: map[string][]reply{"GET /v1/groups": {{200, `{"items":[` + groupJSON + `,{"id":2,"appname":"other-app","title":"Other","addressType":0}]}`}}},
			args:   []string{"group", "list", "--appname", "app"},
			out: "" +
				"ID  APPNAME    TITLE  TYPE    ADDRESSES\n" +
				"1   demo-app   Demo   manual  http://127.0.0.1:9999,http://127.0.0.1:9998\n" +
				"2   other-app  Other  auto    -\n",
			reqs: []string{"GET /v1/groups?appname=app"},
		},
		{
			name: "group update to automatic",
			routes: map[string][]reply{
				"GET /v1/groups/1": {{200, groupJSON}},
				"PUT /v1/groups/1": {{200, groupJSON}},
			},
			args: []string{"group", "update", "1", "--address-type", "auto", "-o", "json"},
			body: `{"id":1,"appname":"demo-app","title":"Demo","addressType":0,"addressList":null,"version":2,"updateTime":1767225600000}`,
		},
		{
			// An automatic group's list is the server's: a title edit must not
			// send it back (with more than xjob.MaxAddresses live executors, or
			// one the server now refuses, the PUT failed).
			name: "group update of an automatic group",
			routes: map[string][]reply{
				"GET /v1/groups/2": {{200, `{"id":2,"appname":"auto-app","title":"Auto","addressType":0,"addressList":["http://10.0.0.1:9999/","http://10.0.0.2:9999/"],"version":3}`}},
				"PUT /v1/groups/2": {{200, `{"id":2,"appname":"auto-app","title":"Renamed","addressType":0,"version":4}`}},
			},
			args: []string{"group", "update", "2", "--title", "Renamed", "-o", "json"},
			body: `{"id":2,"appname":"auto-app","title":"Renamed","addressType":0,"addressList":null,"version":3,"updateTime":0}`,
		},
		{
			name:   "group delete in use",
			routes: map[string][]reply{"DELETE /v1/groups/1": {{409, `{"error":"group 1 is used by 2 jobs"}`}}},
			args:   []string{"group", "delete", "1"},
			code:   1,
			errHas: []string{"Error: group 1 is used by 2 jobs (HTTP 409)\n"},
		},
		{
			name:   "group get",
			routes: map[string][]reply{"GET /v1/groups/1": {{200, groupJSON}}},
			args:   []string{"group", "get", "1", "-o", "json"},
			out:    jsonOf[xjob.Group](groupJSON),
		},
		{
			name:   "executor list",
			routes: map[string][]reply{"GET /v1/groups/1/executors": {{200, `{"items":[{"address":"http://127.0.0.1:9999","updateTime":1767225607000}]}`}}},
			args:   []string{"executor", "list", "--group", "1"},
			out: "" +
				"ADDRESS                LAST HEARTBEAT           AGE\n" +
				"http://127.0.0.1:9999  2026-01-01 00:00:07 UTC  3s\n",
		},
		{
			name:   "executor list needs a group",
			args:   []string{"executor", "list"},
			code:   2,
			errHas: []string{`required flag(s) "group" not set`},
		},
		{
			name:   "log list with filters",
			routes: map[string][]reply{"GET /v1/logs": {{200, `{"items":[` + logJSON + `,` + log12JSON + `],"next":""}`}}},
			args:   []string{"log", "list", "--job", "7", "--status", "fail", "--from", "2026-01-01", "--to", "10s"},
			out: "" +
				"ID  JOB  TYPE    TRIGGERED                EXECUTOR               STATE    MESSAGE\n" +
				"11  7    CRON    2026-01-01 00:00:00 UTC  http://127.0.0.1:9999  failed   boom: stack\n" +
				"12  7    MANUAL  2026-01-01 00:00:02 UTC  http://127.0.0.1:9999  running  -\n",
			reqs: []string{"GET /v1/logs?from=1767225600000&job=7&status=fail&to=1767225600000"},
		},
		{
			name:   "log list bad status",
			args:   []string{"log", "list", "--status", "ok"},
			code:   2,
			errHas: []string{"--status must be success, fail or running"},
		},
		{
			name:   "log list bad time",
			args:   []string{"log", "list", "--from", "yesterday"},
			code:   2,
			errHas: []string{`--from "yesterday"`},
		},
		{
			name:   "log get detail",
			routes: map[string][]reply{"GET /v1/logs/11": {{200, logJSON}}},
			args:   []string{"log", "get", "11"},
			out: "" +
				"ID:            11\n" +
				"Job:           7\n" +
				"Group:         1\n" +
				"Occurrence:    7@1767225600000\n" +
				"Type:          CRON\n" +
				"State:         failed\n" +
				"Scheduled:     2026-01-01 00:00:00 UTC\n" +
				"Triggered:     2026-01-01 00:00:00 UTC\n" +
				"Trigger code:  200\n" +
				"Trigger msg:   Trigger type: CRON\n" +
				"               Route: FIRST\n" +
				"               Address: http://127.0.0.1:9999\n" +
				"Executor:      http://127.0.0.1:9999\n" +
				"Handler:       demoJob\n" +
				"Param:         -\n" +
				"Sharding:      -\n" +
				"Retries left:  0\n" +
				"Handled:       2026-01-01 00:00:01 UTC\n" +
				"Handle code:   500\n" +
				"Handle msg:    boom:\n" +
				"               stack\n",
		},
		{
			name:   "log kill",
			routes: map[string][]reply{"POST /v1/logs/12/kill": {{200, `{"id":12,"jobId":7,"triggerCode":200,"handleCode":500,"handleMsg":"job killed manually"}`}}},
			args:   []string{"log", "kill", "12"},
			out:    "Killed log 12 of job 7: job killed manually\n",
		},
		{
			name:   "log kill not running",
			routes: map[string][]reply{"POST /v1/logs/11/kill": {{409, `{"error":"log 11 is not running"}`}}},
			args:   []string{"log", "kill", "11"},
			code:   1,
			errHas: []string{"Error: log 11 is not running (HTTP 409)\n"},
		},
		{
			name:   "log clear",
			routes: map[string][]reply{"DELETE /v1/logs": {{200, `{"deleted":1500}`}}},
			args:   []string{"log", "clear", "--group", "2", "--job", "7", "--mode", "3m"},
			out:    "Deleted 1500 logs\n",
			reqs:   []string{"DELETE /v1/logs?group=2&job=7&mode=3m"},
		},
		{
			name:   "log clear bad mode",
			routes: map[string][]reply{"DELETE /v1/logs": {{400, `{"error":"invalid request","problems":[{"field":"mode","message":"must be one of 1m, 3m"}]}`}}},
			args:   []string{"log", "clear", "--mode", "2m"},
			code:   1,
			errHas: []string{"mode"},
		},
		{
			name:   "report",
			routes: map[string][]reply{"GET /v1/report": {{200, `{"items":[{"triggerDay":"2026-01-01","runningCount":1,"sucCount":20,"failCount":2}]}`}}},
			args:   []string{"report", "--from", "2026-01-01", "--to", "2026-01-01"},
			out:    "DAY (UTC)   SUCCESS  FAIL  RUNNING\n2026-01-01  20       2     1\n",
			reqs:   []string{"GET /v1/report?from=2026-01-01&to=2026-01-01"},
		},
		{
			// 2025-12-31 20:00 UTC is already 2026-01-01 in Shanghai.
			name: "report in another zone",
			routes: map[string][]reply{"GET /v1/logs": {{200, `{"items":[` +
				`{"id":2,"jobId":7,"triggerTime":1767211200000,"triggerCode":200,"handleCode":500,"handleTime":1767211201000},` +
				`{"id":1,"jobId":7,"triggerTime":1767225600000,"triggerCode":200,"handleCode":200,"handleTime":1767225601000}]}`}}},
			args: []string{"report", "--from", "2026-01-01", "--to", "2026-01-01", "--tz", "Asia/Shanghai"},
			out:  "DAY (Asia/Shanghai)  SUCCESS  FAIL  RUNNING\n2026-01-01           1        1     0\n",
			reqs: []string{"GET /v1/logs?from=1767196800000&limit=1000&to=1767283199999"},
		},
		{
			name:   "metrics json",
			routes: map[string][]reply{"GET /v1/metrics": {{200, `{"triggers":3}`}}},
			args:   []string{"metrics", "-o", "json"},
			out:    "{\n  \"triggers\": 3,\n  \"triggerFailures\": 0,\n  \"duplicates\": 0,\n  \"dropped\": 0,\n  \"successes\": 0,\n  \"failures\": 0,\n  \"fireDelayP50Ms\": 0,\n  \"fireDelayP99Ms\": 0,\n  \"fireDelayAvgMs\": 0,\n  \"scanTicks\": 0,\n  \"scanJobs\": 0,\n  \"scanTickP50Ms\": 0,\n  \"scanTickP99Ms\": 0,\n  \"misfired\": {\n    \"DO_NOTHING\": 0,\n    \"FIRE_ONCE_NOW\": 0\n  },\n  \"collapsed\": 0\n}\n",
		},
		{
			name:   "metrics shows misfired fires",
			routes: map[string][]reply{"GET /v1/metrics": {{200, `{"triggers":3,"misfired":{"DO_NOTHING":5,"FIRE_ONCE_NOW":1},"collapsed":2}`}}},
			args:   []string{"metrics"},
			out: "Triggers:           3\nTrigger failures:   0\nDuplicates:         0\nDropped:            0\nSuccesses:          0\nFailures:           0\n" +
				"Fire delay p50:     0 ms\nFire delay p99:     0 ms\nFire delay avg:     0 ms\nScan ticks:         0\nScan tick p50/p99:  0 / 0 ms\n" +
				"Misfired:           6 (DO_NOTHING 5, FIRE_ONCE_NOW 1)\nLate, collapsed:    2\n\n" +
				"xjob fell behind schedule: fire times above were passed over (see the server's \"behind schedule\" warnings).\n",
		},
		{
			name: "cron next behind global flags goes to the offline preview",
			args: []string{"--server", "http://127.0.0.1:1", "cron", "next", "0 0 12 * * ?", "--from", "2026-01-01T00:00:00Z", "-n", "1"},
			out:  "2026-01-01 12:00:00 UTC\n",
			reqs: []string{},
		},
		{
			name: "cron next with global output flag first",
			args: []string{"-o", "json", "--token=x", "cron", "next", "0 0 12 * * ?", "--from", "2026-01-01T00:00:00Z", "-n", "1"},
			out:  `{"expression":"0 0 12 * * ?","next":["2026-01-01T12:00:00Z"],"timeZone":"UTC"}` + "\n",
		},
		{
			name:   "help",
			args:   []string{"help"},
			errHas: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newAPIDouble(t, tt.routes)
			r := runCLI(context.Background(), d.srv.URL, tt.stdin, clock.NewFake(t0), tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.out, r.errOut)
			}
			if tt.out != "" && r.out != tt.out {
				t.Errorf("stdout:\n%s\nwant:\n%s", r.out, tt.out)
			}
			if tt.code != 0 && r.out != "" {
				t.Errorf("a failed command printed to stdout: %q", r.out)
			}
			for _, s := range tt.errHas {
				if !strings.Contains(r.errOut, s) {
					t.Errorf("stderr:\n%s\nwant it to contain %q", r.errOut, s)
				}
			}
			reqs := d.requests()
			for _, rq := range reqs {
				if rq.auth != "Bearer tok" {
					t.Errorf("%s %s sent Authorization %q", rq.method, rq.target, rq.auth)
				}
			}
			if tt.reqs != nil {
				got := []string{}
				for _, rq := range reqs {
					got = append(got, rq.method+" "+rq.target)
				}
				if !reflect.DeepEqual(got, tt.reqs) {
					t.Errorf("requests %q, want %q", got, tt.reqs)
				}
			}
			if tt.body != "" {
				if len(reqs) == 0 {
					t.Fatal("no request")
				}
				last := reqs[len(reqs)-1]
				for _, rq := range reqs {
					if rq.method != http.MethodGet {
						last = rq // the request with the body, before any polling
					}
				}
				checkBody(t, last.body, tt.body)
			}
		})
	}
}

// checkBody compares a sent JSON object with want: every field of want must
// match, every other sent field must be a zero value.
func checkBody(t *testing.T, got, want string) {
	t.Helper()
	var g, w map[string]any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("body %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %q: %v", want, err)
	}
	for k, v := range w {
		if gv, ok := g[k]; !ok || !reflect.DeepEqual(gv, v) {
			t.Errorf("body field %s = %v, want %v", k, gv, v)
		}
	}
	for k, v := range g {
		if _, ok := w[k]; !ok && v != nil && v != "" && v != float64(0) && v != false {
			t.Errorf("body field %s = %v, want it zero or absent", k, v)
		}
	}
}

// jsonOf is how `-o json` prints fixture s decoded into T: the root types'
// fields in order, indented.
func jsonOf[T any](s string) string {
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

func TestServerAndTokenFlagsOverrideEnvironment(t *testing.T) {
	t.Parallel()
	d := newAPIDouble(t, map[string][]reply{"GET /v1/groups": {{200, `{"items":[]}`}}})
	// The environment points at a closed server; the flags must win.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	r := runCLI(context.Background(), closed.URL, "", clock.NewFake(t0), "group", "list", "--server", d.srv.URL+"/", "--token", "flag-tok")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	reqs := d.requests()
	if len(reqs) != 1 || reqs[0].auth != "Bearer flag-tok" {
		t.Errorf("requests %+v, want one with the flag's token", reqs)
	}
}

func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	r := runCLI(context.Background(), closed.URL, "", clock.NewFake(t0), "job", "list")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1", r.code)
	}
	for _, s := range []string{"Error: list jobs: admin API:", "connect", "Hint: is an xjob server running at " + closed.URL} {
		if !strings.Contains(r.errOut, s) {
			t.Errorf("stderr %q lacks %q", r.errOut, s)
		}
	}
	r = runCLI(context.Background(), "ftp://nowhere", "", clock.NewFake(t0), "job", "list")
	if r.code != 2 || !strings.Contains(r.errOut, "--server:") {
		t.Errorf("bad --server: exit %d, stderr %q", r.code, r.errOut)
	}
}

// TestLogTail follows an executor log across polls on a fake clock: each
// poll continues from the previous toLineNum+1 and the command ends at
// isEnd.
func TestLogTail(t *testing.T) {
	t.Parallel()
	for _, output := range []string{"table", "json"} {
		t.Run(output, func(t *testing.T) {
			t.Parallel()
			d := newAPIDouble(t, map[string][]reply{
				"GET /v1/logs/12":                     {{200, `{"id":12,"jobId":3}`}},
				"GET /v1/logs/12/executor-log?from=1": {{200, `{"fromLineNum":1,"toLineNum":2,"logContent":"line 1\nline 2\n","isEnd":false}`}},
				"GET /v1/logs/12/executor-log?from=3": {
					{200, `{"fromLineNum":3,"toLineNum":2,"logContent":"","isEnd":false}`},
					{200, `{"fromLineNum":3,"toLineNum":3,"logContent":"line 3","isEnd":false}`},
				},
				"GET /v1/logs/12/executor-log?from=4": {{200, `{"fromLineNum":4,"toLineNum":3,"logContent":"","isEnd":true}`}},
			})
			clk := clock.NewFake(t0)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done := make(chan result, 1)
			go func() { done <- runCLI(ctx, d.srv.URL, "", clk, "log", "tail", "12", "-o", output) }()
			var r result
			sleeps := 0
		wait:
			for {
				select {
				case r = <-done:
					break wait
				default:
				}
				// Advance only once the command sleeps between polls.
				wctx, wcancel := context.WithTimeout(ctx, 10*time.Millisecond)
				if clk.WaitForSleepers(wctx, 1) == nil {
					clk.Advance(time.Second)
					sleeps++
				}
				wcancel()
				if ctx.Err() != nil {
					t.Fatal("log tail did not end")
				}
			}
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.errOut)
			}
			if sleeps != 3 {
				t.Errorf("slept %d times, want 3 (one per poll before the end)", sleeps)
			}
			want := "line 1\nline 2\nline 3\n"
			if output == "json" {
				want = `{"fromLineNum":1,"toLineNum":2,"logContent":"line 1\nline 2\n","isEnd":false}` + "\n" +
					`{"fromLineNum":3,"toLineNum":2,"logContent":"","isEnd":false}` + "\n" +
					`{"fromLineNum":3,"toLineNum":3,"logContent":"line 3","isEnd":false}` + "\n" +
					`{"fromLineNum":4,"toLineNum":3,"logContent":"","isEnd":true}` + "\n"
			}
			if r.out != want {
				t.Errorf("stdout %q, want %q", r.out, want)
			}
		})
	}
}

// A log that does not exist is a 404 before "Following…" is said.
func TestLogTailMissingLog(t *testing.T) {
	t.Parallel()
	d := newAPIDouble(t, map[string][]reply{
		"GET /v1/logs/999999": {{404, `{"error":"log 999999 not found"}`}},
	})
	r := runCLI(context.Background(), d.srv.URL, "", clock.NewFake(t0), "log", "tail", "999999")
	if r.code != 1 || !strings.Contains(r.errOut, "log 999999 not found") || strings.Contains(r.errOut, "Following") {
		t.Fatalf("exit %d, stderr %q", r.code, r.errOut)
	}
}

// TestLogTailStopsWhenCancelled: Ctrl-C (the context) ends a tail that is
// waiting between polls, plainly, with exit code 130.
func TestLogTailStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	d := newAPIDouble(t, map[string][]reply{
		"GET /v1/logs/12":              {{200, `{"id":12,"jobId":3}`}},
		"GET /v1/logs/12/executor-log": {{200, `{"fromLineNum":1,"toLineNum":0,"logContent":"","isEnd":false}`}},
	})
	clk := clock.NewFake(t0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { done <- runCLI(ctx, d.srv.URL, "", clk, "log", "tail", "12") }()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := clk.WaitForSleepers(wctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	r := <-done
	if r.code != 130 || !strings.Contains(r.errOut, "Stopped waiting for log 12 (interrupted); the run goes on.") ||
		strings.Contains(r.errOut, "Error") {
		t.Errorf("exit %d, stderr %q", r.code, r.errOut)
	}
}
