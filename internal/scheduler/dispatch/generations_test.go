package dispatch_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// TestDispatchXxlJob35Executor triggers a job whose executor behaves as
// xxl-job 3.5's: triggers at /trigger only, and every call refused unless
// XXL-JOB-APPNAME names its group. The FAILOVER beat and the trigger both
// carry the group's appname, and the trigger lands on /trigger.
func TestDispatchXxlJob35Executor(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen = append(seen, r.URL.Path)
		mu.Unlock()
		switch {
		case r.Header.Get(protocol.AppNameHeader) != "demo-app":
			_, _ = io.WriteString(w, `{"code":500,"msg":"invalid request, accessToken or appname is empty."}`)
		case r.URL.Path == "/trigger" || r.URL.Path == "/beat":
			_, _ = io.WriteString(w, `{"code":200,"msg":"Success"}`)
		default:
			_, _ = io.WriteString(w, `{"code":500,"msg":"invalid request, uri-mapping(`+r.URL.Path+`) not found."}`)
		}
	}))
	t.Cleanup(srv.Close)
	j := e.job(t, e.group(t, srv.URL), func(j *xjob.Job) { j.RouteStrategy = xjob.RouteFailover })
	out, err := e.d.Dispatch(context.Background(), cronTask(j))
	if err != nil || len(out.Logs) != 1 {
		t.Fatalf("Dispatch = %+v, %v", out, err)
	}
	if l := out.Logs[0]; l.TriggerCode != 200 {
		t.Fatalf("trigger code %d: %s", l.TriggerCode, l.TriggerMsg)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || seen[0] != "/beat" || seen[1] != "/run" || seen[2] != "/trigger" {
		t.Fatalf("executor saw %v, want /beat /run /trigger", seen)
	}
}

// A batch of triggers of several groups, interleaved, sends each /run
// with its own group's appname: the context that carries it is reused
// from one trigger to the next of the same group only.
func TestDispatchManyNamesEachGroup(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var mu sync.Mutex
	got := map[string][]string{} // handler -> appnames seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p protocol.TriggerParam
		_ = json.NewDecoder(r.Body).Decode(&p)
		mu.Lock()
		got[p.ExecutorHandler] = append(got[p.ExecutorHandler], r.Header.Get(protocol.AppNameHeader))
		mu.Unlock()
		_, _ = io.WriteString(w, `{"code":200}`)
	}))
	t.Cleanup(srv.Close)
	var tasks []fire.DispatchTask
	apps := []string{"app-a", "app-b", "app-a", "app-c", "app-c", "app-b"}
	for i, app := range apps {
		g, err := e.db.GroupInsert(context.Background(), xjob.Group{AppName: app, Title: app,
			AddressType: xjob.AddressManual, AddressList: []string{srv.URL}})
		if err != nil {
			t.Fatal(err)
		}
		j := e.job(t, g, func(j *xjob.Job) { j.Handler = "h" + strconv.Itoa(i) })
		tasks = append(tasks, cronTask(j))
	}
	_, errs := e.d.DispatchMany(context.Background(), tasks)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, app := range apps {
		if seen := got["h"+strconv.Itoa(i)]; len(seen) != 1 || seen[0] != app {
			t.Errorf("job %d of %s: /run carried appnames %q", i, app, seen)
		}
	}
}
