package executor

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/xjobdev/xjob"
)

// declareJobs' verdict per admin answer: settled (not sent again) or
// retried after the next beat. An xxl-job admin (404, or its HTTP 200
// "uri-mapping not found" ReturnT) is settled: the executor runs as usual.
func TestDeclareJobsAnswers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		status  int
		body    string
		settled bool
	}{
		{"xjob accepted", 200, `{"code":200,"content":{"jobs":[{"key":"app.h","id":3,"outcome":"created"}]}}`, true},
		{"xxl-job admin 404", 404, `<html>Whitelabel Error Page</html>`, true},
		{"xxl-job uri not found", 200, `{"code":500,"msg":"invalid request, uri-mapping(xjob/declare) not found."}`, true},
		{"refused for good", 400, `{"code":500,"msg":"invalid input"}`, true},
		{"wrong token", 401, `{"code":500,"msg":"The access token is wrong."}`, true},
		{"no group yet", 409, `{"code":500,"msg":"no executor group"}`, false},
		{"admin failing", 503, ``, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got atomic.Value
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/"+PathDeclare || r.Header.Get("XXL-JOB-ACCESS-TOKEN") != "tok" {
					t.Errorf("request %s token %q", r.URL.Path, r.Header.Get("XXL-JOB-ACCESS-TOKEN"))
				}
				b, _ := io.ReadAll(r.Body)
				got.Store(string(b))
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			f := setup(t, func(c *Config) { c.AdminAddresses, c.AppName = []string{srv.URL}, "app" })
			ok := func(context.Context, *Job) error { return nil }
			if err := f.e.Register("h", ok, WithJob(xjob.JobDeclaration{ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 0 * * * ?"})); err != nil {
				t.Fatal(err)
			}
			if err := f.e.Register("plain", ok); err != nil {
				t.Fatal(err)
			}
			if settled := f.e.declareJobs(t.Context()); settled != tt.settled {
				t.Fatalf("settled = %v, want %v", settled, tt.settled)
			}
			var req xjob.DeclareRequest
			if err := json.Unmarshal([]byte(got.Load().(string)), &req); err != nil || req.AppName != "app" ||
				len(req.Jobs) != 1 || req.Jobs[0].Handler != "h" || req.Jobs[0].ScheduleConf != "0 0 * * * ?" {
				t.Fatalf("declaration sent = %v %+v", err, req)
			}
		})
	}
}

// A declaration is checked when the handler is registered.
func TestWithJobRegisterChecks(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, *Job) error { return nil }
	for _, tt := range []struct {
		name, app string
		d         xjob.JobDeclaration
		want      string
	}{
		{"other handler", "app", xjob.JobDeclaration{Handler: "x"}, "names handler"},
		{"no app", "", xjob.JobDeclaration{}, "AppName"},
		{"bad cron", "app", xjob.JobDeclaration{ScheduleType: xjob.ScheduleCron, ScheduleConf: "nope"}, "scheduleConf"},
		{"bad name", "app", xjob.JobDeclaration{Name: "has space"}, "name"},
	} {
		f := setup(t, func(c *Config) { c.AppName = tt.app })
		err := f.e.Register("h", ok, WithJob(tt.d))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one naming %q", tt.name, err, tt.want)
		}
	}
	f := setup(t, nil)
	if n := len(f.e.declarations()); n != 0 {
		t.Fatalf("%d declarations without WithJob", n)
	}
}
