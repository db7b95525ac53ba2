package dispatch_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/xjobdev/xjob"
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
