package awsstack_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/pkg/adminclient"
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

// succeed is a handler that succeeds at once.
func succeed(_ context.Context, j *executor.Job) error {
	j.Succeed("ok")
	return nil
}
