package cli

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/executor"
)

// startExecutor serves an SDK executor for app on loopback; its handler
// "step" logs three lines and fails when its parameter is "fail".
func startExecutor(t *testing.T, s *localServer, app string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	e, err := executor.New(executor.Config{
		AdminAddresses: []string{s.info.URL + "/"}, AccessToken: s.info.AccessToken, AppName: app, Address: "http://" + srv.Listener.Addr().String() + "/",
		LogDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	err = e.Register("step", func(_ context.Context, job *executor.Job) error {
		for i := 1; i <= 3; i++ {
			job.Logf("step %d of 3", i)
		}
		if job.Param == "fail" {
			return errors.New("asked to fail")
		}
		job.Succeed("all steps done")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = e
	srv.Start()
	t.Cleanup(srv.Close)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = e.Shutdown(ctx)
	})
}

func TestTriggerFollowAndWaitEndToEnd(t *testing.T) {
	t.Parallel()
	s := startLocal(t)
	ctx := t.Context()
	const app = "follow-app"
	startExecutor(t, s, app)
	g, err := s.api.GroupCreate(ctx, xjob.Group{AppName: app, Title: "Follow", AddressType: xjob.AddressAuto})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if live, _ := s.api.GroupExecutors(ctx, g.ID); len(live) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("executor did not register")
		}
		time.Sleep(50 * time.Millisecond) // waiting for the executor's first heartbeat
	}
	j, err := s.api.JobCreate(ctx, xjob.Job{GroupID: g.ID, Description: "steps", Author: "t", Handler: "step"})
	if err != nil {
		t.Fatal(err)
	}
	id := itoa(j.ID)

	// A plain trigger names its log.
	out := mustRun(t, s, "job", "trigger", id)
	if !strings.Contains(out, "Triggered job "+id+": log ") {
		t.Fatalf("trigger:\n%s", out)
	}

	// --follow streams the executor log, then the result; exit 0.
	out, errOut, code := s.cli(t, "job", "trigger", id, "--follow")
	if code != 0 || !strings.Contains(out, "step 1 of 3") || !strings.Contains(out, "step 3 of 3") ||
		!strings.Contains(out, ": success  all steps done") || !strings.Contains(errOut, "Following the executor log of log") {
		t.Fatalf("trigger --follow: exit %d\n%s\n%s", code, out, errOut)
	}

	// --wait exits 1 when the run fails; -o json carries the log ids and logs.
	out, _, code = s.cli(t, "job", "trigger", id, "--param", "fail", "--wait", "-o", "json")
	var res triggerOutput
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("trigger --wait -o json: %v\n%s", err, out)
	}
	if code != exitFailed || len(res.LogIDs) != 1 || len(res.Logs) != 1 || res.Logs[0].HandleCode == xjob.CodeSuccess {
		t.Fatalf("trigger --wait of a failing run: exit %d %+v", code, res)
	}

	// log tail of a finished run ends at once; of a missing one it fails.
	out = mustRun(t, s, "log", "tail", itoa(res.LogIDs[0]))
	if !strings.Contains(out, "step 2 of 3") {
		t.Fatalf("log tail:\n%s", out)
	}
	// Trigger messages are plain text in the terminal, HTML in JSON.
	out = mustRun(t, s, "log", "get", itoa(res.LogIDs[0]))
	if strings.Contains(out, "<br") || strings.Contains(out, "<span") {
		t.Fatalf("log get shows HTML:\n%s", out)
	}

	// Errors under -o json are JSON; a server without a scheme works.
	var errb, outb strings.Builder
	vars := map[string]string{envServer: strings.TrimPrefix(s.info.URL, "http://"), envToken: s.info.AdminToken}
	code = run(ctx, []string{"job", "get", "999999", "-o", "json"}, envWith(&outb, &errb, vars))
	var jerr struct {
		Error  string `json:"error"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal([]byte(errb.String()), &jerr); err != nil || code != exitFailed || jerr.Status != 404 {
		t.Fatalf("-o json error: exit %d, stderr %q (%v)", code, errb.String(), err)
	}
}

func TestLogTailTimeoutEndToEnd(t *testing.T) {
	t.Parallel()
	s := startLocal(t)
	ctx := t.Context()
	g, err := s.api.GroupCreate(ctx, xjob.Group{AppName: "nobody-home", Title: "Empty", AddressType: xjob.AddressManual,
		AddressList: []string{"http://127.0.0.1:9/"}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.api.JobCreate(ctx, xjob.Job{GroupID: g.ID, Description: "x", Author: "t", Handler: "h"})
	if err != nil {
		t.Fatal(err)
	}
	// No such log yet: tail waits for it, then gives up at --timeout.
	_, errOut, code := s.cli(t, "log", "tail", "424242", "--timeout", "300ms")
	if code != exitFailed || !strings.Contains(errOut, "log 424242") {
		t.Fatalf("log tail of a missing log: exit %d\n%s", code, errOut)
	}
	_ = adminclient.LogStatusFail
	_ = j
}
