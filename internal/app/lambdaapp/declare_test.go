package lambdaapp_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/pkg/executor"
)

// Executor-declared jobs on AWS: the real SDK executor declares its job
// at its admin address, the function URL, which forwards it to the web
// function behind API Gateway, which creates it in
// DynamoDB (dynalite) once, started here because the function's
// XJOB_START_DECLARED_JOBS allows it; a second start changes nothing.
func TestLambdaDeclaredJobs(t *testing.T) {
	e := setupEnv(t)
	e.vars[awsconfig.EnvStartDeclaredJobs] = "true"
	gw := e.apiGateway()
	fu := e.functionURL(gw.URL)
	var g xjob.Group
	adminCall(t, gw.URL, "POST", "/v1/groups", map[string]any{"appname": "declaring", "title": "declaring", "addressType": 0}, &g)

	start := func(timeout int) {
		srv := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(srv.Close)
		ex, err := executor.New(executor.Config{AdminAddresses: []string{fu.URL}, AccessToken: accessToken, AppName: "declaring",
			Address: srv.URL + "/", LogDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
		must(t, err)
		must(t, ex.Register("report", func(context.Context, *executor.Job) error { return nil },
			executor.WithJob(xjob.JobDeclaration{ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 0 3 * * ?", TimeoutSeconds: timeout})))
		must(t, ex.Start())
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = ex.Shutdown(ctx)
		})
	}
	list := func() []xjob.Job {
		var page struct {
			Items []xjob.Job `json:"items"`
		}
		adminCall(t, gw.URL, "GET", fmt.Sprintf("/v1/jobs?group=%d", g.ID), nil, &page)
		return page.Items
	}
	waitJobs := func(cond func([]xjob.Job) bool) []xjob.Job {
		deadline := time.Now().Add(20 * time.Second)
		for {
			jobs := list()
			if cond(jobs) {
				return jobs
			}
			if time.Now().After(deadline) {
				t.Fatalf("declared jobs = %+v", jobs)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	start(30)
	jobs := waitJobs(func(js []xjob.Job) bool { return len(js) == 1 })
	j := jobs[0]
	if j.Name != "declaring.report" || j.TriggerStatus != xjob.StatusRunning || j.TriggerNextTime == 0 ||
		j.TimeoutSeconds != 30 || j.Declared == "" {
		t.Fatalf("declared job on AWS = %+v", j)
	}
	start(60) // a changed declaration: recorded, not applied
	jobs = waitJobs(func(js []xjob.Job) bool { return len(js) == 1 && js[0].Declared != j.Declared })
	if got := jobs[0]; got.TimeoutSeconds != 30 || got.Revision != j.Revision || len(got.DeclarationDiff()) != 1 {
		t.Fatalf("after a changed declaration: %+v (diff %v)", got, got.DeclarationDiff())
	}
}
