package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/executor"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// declaringExecutor starts a real SDK executor of app whose handlers
// "report" and "cleanup" declare jobs (report's timeout is reportTimeout),
// served on loopback, and returns it once its declarations are settled.
func declaringExecutor(t *testing.T, info Info, app string, reportTimeout int) {
	t.Helper()
	var ex atomic.Pointer[executor.Executor]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := ex.Load(); e != nil {
			e.ServeHTTP(w, r)
			return
		}
		http.Error(w, "not ready", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	e, err := executor.New(executor.Config{
		AdminAddresses: []string{info.URL}, AccessToken: info.AccessToken, AppName: app, Address: srv.URL + "/",
		LogDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ok := func(_ context.Context, job *executor.Job) error { job.Succeed("ok"); return nil }
	if err := e.Register("report", ok, executor.WithJob(xjob.JobDeclaration{
		Description: "nightly report", ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 0 3 * * ?",
		TimeZone: "Europe/Paris", RouteStrategy: xjob.RouteRound, TimeoutSeconds: reportTimeout,
		FailRetryCount: 2, MisfireStrategy: xjob.MisfireFireOnceNow, Param: "full"})); err != nil {
		t.Fatal(err)
	}
	if err := e.Register("cleanup", ok, executor.WithJob(xjob.JobDeclaration{
		Name: "nightly-cleanup", ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "3600"})); err != nil {
		t.Fatal(err)
	}
	if err := e.Register("plain", ok); err != nil { // declares nothing
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	ex.Store(e)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = e.Shutdown(ctx)
	})
}

func (sc scenario) jobsOf(g xjob.Group) map[string]xjob.Job {
	sc.t.Helper()
	var page struct {
		Items []xjob.Job `json:"items"`
	}
	if code := sc.call("GET", fmt.Sprintf("/v1/jobs?group=%d", g.ID), nil, &page); code != http.StatusOK {
		sc.t.Fatalf("list jobs: HTTP %d", code)
	}
	out := map[string]xjob.Job{}
	for _, j := range page.Items {
		out[j.Name] = j
	}
	return out
}

// Executor-declared jobs end to end: the real SDK
// executor declares two jobs when it starts; xjob local creates them
// stopped, once; a person's edit survives a later, different declaration,
// which is recorded and shown as a difference; a deleted declared job comes
// back at the next start; a bad declaration is a 4xx that writes nothing.
func TestLocalDeclaredJobs(t *testing.T) {
	t.Parallel()
	info, _ := runLocal(t, nil)
	sc := scenario{t, info}
	g := sc.group("declaring")

	declaringExecutor(t, info, "declaring", 30)
	var jobs map[string]xjob.Job
	eventually(t, scenarioWait, "the two declared jobs", func() bool { jobs = sc.jobsOf(g); return len(jobs) == 2 })
	rep, clean := jobs["declaring.report"], jobs["nightly-cleanup"]
	if rep.ID == 0 || clean.ID == 0 {
		t.Fatalf("declared jobs = %v, want declaring.report and nightly-cleanup", slices.Collect(mapKeys(jobs)))
	}
	if rep.TriggerStatus != xjob.StatusStopped || rep.Handler != "report" || rep.ScheduleConf != "0 0 3 * * ?" ||
		rep.TimeZone != "Europe/Paris" || rep.RouteStrategy != xjob.RouteRound || rep.TimeoutSeconds != 30 ||
		rep.FailRetryCount != 2 || rep.MisfireStrategy != xjob.MisfireFireOnceNow || rep.Param != "full" ||
		rep.Description != "nightly report" || rep.Declared == "" || len(rep.DeclarationDiff()) != 0 {
		t.Fatalf("declared report job = %+v", rep)
	}
	if clean.ScheduleType != xjob.ScheduleFixRate || clean.Handler != "cleanup" || clean.TriggerStatus != xjob.StatusStopped {
		t.Fatalf("declared cleanup job = %+v", clean)
	}

	// The declared job runs on the declaring executor (automatic group).
	eventually(t, scenarioWait, "the executor registered", func() bool {
		var ex struct {
			Items []map[string]any `json:"items"`
		}
		return sc.call("GET", fmt.Sprintf("/v1/groups/%d/executors", g.ID), nil, &ex) == http.StatusOK && len(ex.Items) == 1
	})
	sc.trigger(rep.ID, nil)
	eventually(t, scenarioWait, "the declared job's manual run", func() bool {
		logs := sc.logs(rep.ID)
		return len(logs) == 1 && logs[0].HandleCode == xjob.CodeSuccess
	})

	// A person edits the job; an executor restarted with another
	// declaration does not overwrite the edit, and the difference shows.
	edit := rep
	edit.ScheduleConf, edit.Author, edit.Version = "0 30 4 * * ?", "ops", 0
	edit.Declared = "forged" // not the editor's to set
	var edited xjob.Job
	if code := sc.call("PUT", fmt.Sprintf("/v1/jobs/%d", rep.ID), edit, &edited); code != http.StatusOK {
		t.Fatalf("person's edit: HTTP %d", code)
	}
	if edited.Declared != rep.Declared || !slices.Equal(edited.DeclarationDiff(), []string{"scheduleConf"}) {
		t.Fatalf("after the edit: declared %q, diff %v", edited.Declared, edited.DeclarationDiff())
	}
	declaringExecutor(t, info, "declaring", 90)
	var after xjob.Job
	eventually(t, scenarioWait, "the changed declaration recorded", func() bool {
		sc.call("GET", fmt.Sprintf("/v1/jobs/%d", rep.ID), nil, &after)
		return strings.Contains(after.Declared, `"timeoutSeconds":90`)
	})
	if after.ScheduleConf != "0 30 4 * * ?" || after.TimeoutSeconds != 30 || after.Author != "ops" || after.Revision != edited.Revision {
		t.Fatalf("a later declaration overwrote the person's job: %+v", after)
	}
	if d := after.DeclarationDiff(); !slices.Equal(d, []string{"scheduleConf", "executorTimeout"}) {
		t.Fatalf("declared vs current = %v, want scheduleConf and executorTimeout", d)
	}
	if n := len(sc.jobsOf(g)); n != 2 {
		t.Fatalf("%d jobs after the second start, want 2", n)
	}

	// Deleted by a person: the same declaration does not bring it back; a
	// changed one creates it again, stopped.
	if code := sc.call("DELETE", fmt.Sprintf("/v1/jobs/%d", clean.ID), nil, nil); code != http.StatusOK && code != http.StatusNoContent {
		t.Fatalf("delete: HTTP %d", code)
	}
	declareCleanup := func(every string) string {
		t.Helper()
		body, _ := json.Marshal(xjob.DeclareRequest{AppName: "declaring", Jobs: []xjob.JobDeclaration{
			{Name: "nightly-cleanup", Handler: "cleanup", ScheduleType: xjob.ScheduleFixRate, ScheduleConf: every}}})
		req, _ := http.NewRequest("POST", info.URL+"/api/xjob/declare", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(protocol.AccessTokenHeader, info.AccessToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rt protocol.ReturnT
		var res xjob.DeclareResult
		if err := json.NewDecoder(resp.Body).Decode(&rt); err != nil || json.Unmarshal(rt.Content, &res) != nil || len(res.Jobs) != 1 {
			t.Fatalf("declare cleanup every %s: HTTP %d %+v %v", every, resp.StatusCode, rt, err)
		}
		return res.Jobs[0].Outcome
	}
	if got := declareCleanup("3600"); got != xjob.DeclareRetired {
		t.Fatalf("the deleted job's declaration again: outcome %q, want %q", got, xjob.DeclareRetired)
	}
	if _, ok := sc.jobsOf(g)["nightly-cleanup"]; ok {
		t.Fatal("a person's delete was undone by the same declaration")
	}
	if got := declareCleanup("1800"); got != xjob.DeclareCreated {
		t.Fatalf("a changed declaration of the deleted job: outcome %q, want %q", got, xjob.DeclareCreated)
	}
	if j, ok := sc.jobsOf(g)["nightly-cleanup"]; !ok || j.ID == clean.ID || j.TriggerStatus != xjob.StatusStopped || j.ScheduleConf != "1800" {
		t.Fatalf("after a changed declaration: %+v, want a new stopped job every 1800 s", j)
	}

	// The endpoint: token, strict body, validation, group; nothing written.
	post := func(token, body string) (int, protocol.ReturnT) {
		req, _ := http.NewRequest("POST", info.URL+"/api/xjob/declare", bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(protocol.AccessTokenHeader, token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var rt protocol.ReturnT
		_ = json.Unmarshal(b, &rt)
		return resp.StatusCode, rt
	}
	good := `{"appname":"declaring","jobs":[{"handler":"h2","scheduleType":"CRON","scheduleConf":"0 0 * * * ?"}]}`
	for _, tt := range []struct {
		name, token, body string
		want              int
	}{
		{"wrong token", "nope", good, http.StatusUnauthorized},
		{"unknown field", info.AccessToken, `{"appname":"declaring","jobs":[{"handler":"h2","cron":"x"}]}`, http.StatusBadRequest},
		{"repeated key", info.AccessToken, `{"appname":"declaring","appname":"x","jobs":[]}`, http.StatusBadRequest},
		{"bad cron", info.AccessToken, `{"appname":"declaring","jobs":[{"handler":"h2","scheduleType":"CRON","scheduleConf":"61 * * * * ?"}]}`, http.StatusBadRequest},
		{"one bad of two", info.AccessToken, `{"appname":"declaring","jobs":[{"handler":"h2","scheduleType":"CRON","scheduleConf":"0 0 * * * ?"},{"handler":"h3","executorTimeout":-1,"timeoutSeconds":-1}]}`, http.StatusBadRequest},
		{"duplicate key", info.AccessToken, `{"appname":"declaring","jobs":[{"handler":"h2"},{"handler":"h3","name":"declaring.h2"}]}`, http.StatusBadRequest},
		{"bad default key", info.AccessToken, `{"appname":"declaring","jobs":[{"handler":"a:b"}]}`, http.StatusBadRequest},
		{"no group", info.AccessToken, `{"appname":"nobody","jobs":[{"handler":"h2"}]}`, http.StatusConflict},
	} {
		code, rt := post(tt.token, tt.body)
		if code != tt.want || rt.Code != protocol.FailCode {
			t.Errorf("%s: HTTP %d %+v, want %d", tt.name, code, rt, tt.want)
		}
	}
	if n := len(sc.jobsOf(g)); n != 2 {
		t.Fatalf("%d jobs after refused declarations, want 2 (nothing written)", n)
	}
	code, rt := post(info.AccessToken, good)
	var res xjob.DeclareResult
	if code != http.StatusOK || json.Unmarshal(rt.Content, &res) != nil || len(res.Jobs) != 1 || res.Jobs[0].Outcome != xjob.DeclareCreated {
		t.Fatalf("good declaration: HTTP %d %+v", code, rt)
	}
	if code, rt = post(info.AccessToken, good); code != http.StatusOK || !strings.Contains(string(rt.Content), `"unchanged"`) {
		t.Fatalf("same declaration again: HTTP %d %s", code, rt.Content)
	}
}

// With XJOB_START_DECLARED_JOBS the operator lets declared jobs start.
func TestLocalDeclaredJobsStarted(t *testing.T) {
	t.Parallel()
	info, _ := runLocal(t, func(c *Config) { c.StartDeclaredJobs = true })
	sc := scenario{t, info}
	g := sc.group("declaring")
	declaringExecutor(t, info, "declaring", 30)
	var jobs map[string]xjob.Job
	eventually(t, scenarioWait, "the two declared jobs", func() bool { jobs = sc.jobsOf(g); return len(jobs) == 2 })
	for name, j := range jobs {
		if j.TriggerStatus != xjob.StatusRunning || j.TriggerNextTime == 0 {
			t.Errorf("%s: status %d next %d, want started", name, j.TriggerStatus, j.TriggerNextTime)
		}
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
