package awsstack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/app/lambdaapp"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/executor"
)

// sdkExecutor starts an executor of the xjob SDK for app on loopback,
// serving handlers behind wrap (nil: none), and registers it at d's
// executor URL (a function URL request to the callback function). It
// returns the executor's address and stop, which the caller defers so
// that the executor leaves before the deployment closes.
func sdkExecutor(t *testing.T, d *awsstack.Deployment, app string, wrap func(http.Handler) http.Handler,
	handlers map[string]executor.HandlerFunc) (addr string, stop func()) {
	t.Helper()
	srv := httptest.NewServer(nil)
	exe, err := executor.New(executor.Config{AdminAddresses: []string{d.ExecutorURL()}, AccessToken: d.AccessToken(), AppName: app,
		Address: srv.URL + "/", LogDir: t.TempDir(), CallbackRetryInterval: 500 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	var h http.Handler = exe
	if wrap != nil {
		h = wrap(exe)
	}
	srv.Config.Handler = h
	for name, fn := range handlers {
		if err := exe.Register(name, fn); err != nil {
			srv.Close()
			t.Fatal(err)
		}
	}
	if err := exe.Start(); err != nil {
		srv.Close()
		t.Fatal(err)
	}
	return srv.URL + "/", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = exe.Shutdown(ctx)
		srv.Close()
	}
}

// manualJob starts an SDK executor for app whose handler "ok" succeeds,
// creates its group (manual address) and a job with no schedule through
// d's admin API, and returns the job and the executor's stop, which the
// caller defers: the set-up of the tests that trigger one job by hand.
func manualJob(ctx context.Context, t *testing.T, d *awsstack.Deployment, app string) (xjob.Job, func()) {
	t.Helper()
	addr, stop := sdkExecutor(t, d, app, nil, map[string]executor.HandlerFunc{"ok": succeed})
	api, err := adminclient.New(d.URL(), d.AdminToken())
	if err != nil {
		stop()
		t.Fatal(err)
	}
	g, err := api.GroupCreate(ctx, xjob.Group{AppName: app, Title: "t", AddressType: xjob.AddressManual,
		AddressList: []string{addr}})
	if err != nil {
		stop()
		t.Fatalf("group: %v", err)
	}
	job := xjob.Job{GroupID: g.ID, Description: "by hand", Author: "t", ScheduleType: xjob.ScheduleNone, Handler: "ok"}
	job.ApplyDefaults()
	j, err := api.JobCreate(ctx, job)
	if err != nil {
		stop()
		t.Fatalf("job: %v", err)
	}
	return j, stop
}

// runByHand triggers job by hand through the dispatch function, as the
// admin's manual trigger does, and waits until its one run has recorded
// a success.
func runByHand(ctx context.Context, t *testing.T, d *awsstack.Deployment, job int64) {
	t.Helper()
	out, err := d.Invoke(ctx, "dispatch", "dispatch", fmt.Appendf(nil, `{"jobId":%d}`, job))
	if err != nil {
		t.Fatalf("manual trigger: %v", err)
	}
	var mr lambdaapp.ManualResult
	if err := json.Unmarshal(out, &mr); err != nil || len(mr.LogIDs) != 1 || mr.TriggerCodes[0] != xjob.CodeSuccess {
		t.Fatalf("manual trigger result %s (%v)", out, err)
	}
	if err := await(20*time.Second, func() (bool, string) {
		page, err := d.Store().LogList(ctx, driver.LogListParams{JobID: job, Limit: 10})
		if err != nil {
			return false, err.Error()
		}
		return len(page.Logs) == 1 && page.Logs[0].HandleCode == xjob.CodeSuccess, fmt.Sprintf("logs %+v; errors %v", page.Logs, d.Errors())
	}); err != nil {
		t.Fatal(err)
	}
}

// succeed is a handler that succeeds at once.
func succeed(_ context.Context, j *executor.Job) error {
	j.Succeed("ok")
	return nil
}
