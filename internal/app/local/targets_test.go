package local

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/target"
)

// hook is an HTTP target on loopback: it records every request and
// answers 500 to the first n calls of /flaky.
type hook struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []hookCall
	flaky int
}

type hookCall struct {
	Path, Auth, Body string
}

func newHook(t *testing.T, flaky int) *hook {
	t.Helper()
	h := &hook{flaky: flaky}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.calls = append(h.calls, hookCall{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: string(b)})
		fail := r.URL.Path == "/flaky" && h.flaky > 0
		if fail {
			h.flaky--
		}
		h.mu.Unlock()
		if fail {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "done "+r.URL.Path)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) callsTo(path string) []hookCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hookCall
	for _, c := range h.calls {
		if c.Path == path {
			out = append(out, c)
		}
	}
	return out
}

func specJSON(t *testing.T, s target.Spec) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHTTPJobsEndToEnd runs HTTP jobs in xjob local with no executor at
// all: a scheduled job whose secret header reaches the target and never
// comes back out of /v1 or the export, and a failing call retried as any
// job's would be.
func TestHTTPJobsEndToEnd(t *testing.T) {
	t.Parallel()
	info, _ := runLocal(t, func(c *Config) { c.RetryDelay = time.Second })
	h := newHook(t, 1)
	base, tok := info.URL, info.AdminToken

	var g xjob.Group
	if code := api(t, base, tok, "POST", "/v1/groups", map[string]any{"appname": "hooks", "title": "hooks", "addressType": 0}, &g); code != http.StatusCreated {
		t.Fatalf("create group: %d", code)
	}
	var j xjob.Job
	if code := api(t, base, tok, "POST", "/v1/jobs", map[string]any{
		"jobGroup": g.ID, "jobDesc": "call the hook", "author": "test", "scheduleType": "FIX_RATE", "scheduleConf": "1",
		"glueType": "HTTP", "executorParam": "nightly", "triggerStatus": 1,
		"glueSource": specJSON(t, target.Spec{Method: "POST", URL: h.srv.URL + "/every", SecretHeaders: map[string]string{"Authorization": "Bearer s3cret"},
			Body: `{"param":{{param|json}},"log":{{logId}},"at":"{{scheduleTime}}"}`}),
	}, &j); code != http.StatusCreated {
		t.Fatalf("create HTTP job: %d", code)
	}
	if strings.Contains(j.GlueSource, "s3cret") || strings.Contains(j.GlueSource, "enc:v1:") || !strings.Contains(j.GlueSource, `"Authorization":"ref:`) {
		t.Fatalf("created job shows its secret: %s", j.GlueSource)
	}
	var logs logPage
	eventually(t, 20*time.Second, "2 successful HTTP runs", func() bool {
		logs = logPage{}
		api(t, base, tok, "GET", fmt.Sprintf("/v1/logs?job=%d&status=success&limit=100", j.ID), nil, &logs)
		n := 0
		for _, l := range logs.Items {
			if l.TriggerCode == xjob.CodeSuccess {
				n++
			}
		}
		return n >= 2
	})
	l := logs.Items[0]
	if l.ExecutorAddress != target.Address || !strings.Contains(l.HandleMsg, "HTTP 200 OK · POST "+h.srv.URL+"/every") ||
		!strings.Contains(l.HandleMsg, "done /every") || !strings.Contains(l.TriggerMsg, "built-in (HTTP job)") {
		t.Fatalf("log = %+v", l)
	}
	calls := h.callsTo("/every")
	if len(calls) < 2 || calls[0].Auth != "Bearer s3cret" || !strings.Contains(calls[0].Body, `"param":"nightly"`) {
		t.Fatalf("calls = %+v", calls)
	}

	// Read back, written back unchanged: the secret is kept, never shown.
	// The job runs every second, so the scan's advance may bump its
	// version between the read and the write: a 409 is optimistic
	// locking at work, and a person reloads and retries.
	var got xjob.Job
	for attempt := 0; ; attempt++ {
		api(t, base, tok, "GET", fmt.Sprintf("/v1/jobs/%d", j.ID), nil, &got)
		got.Description = "edited"
		code := api(t, base, tok, "PUT", fmt.Sprintf("/v1/jobs/%d", j.ID), got, &got)
		if code == http.StatusOK {
			break
		}
		if code != http.StatusConflict || attempt == 4 {
			t.Fatalf("update with the shown spec: %d", code)
		}
	}
	before := len(h.callsTo("/every"))
	eventually(t, 10*time.Second, "a call after the edit", func() bool { return len(h.callsTo("/every")) > before })
	if c := h.callsTo("/every"); c[len(c)-1].Auth != "Bearer s3cret" {
		t.Fatalf("after the edit the secret header is %q", c[len(c)-1].Auth)
	}
	var export struct {
		Jobs []xjob.JobSpec `json:"jobs"`
	}
	api(t, base, tok, "GET", "/v1/export", nil, &export)
	b, _ := json.Marshal(export)
	if strings.Contains(string(b), "s3cret") || strings.Contains(string(b), "enc:v1") || !strings.Contains(string(b), "ref:") {
		t.Fatalf("export shows the secret: %s", b)
	}
	api(t, base, tok, "POST", fmt.Sprintf("/v1/jobs/%d/stop", j.ID), nil, nil)

	// A failing call is retried like any job's.
	var flaky xjob.Job
	if code := api(t, base, tok, "POST", "/v1/jobs", map[string]any{
		"jobGroup": g.ID, "jobDesc": "flaky", "author": "test", "glueType": "HTTP", "executorFailRetryCount": 1,
		"glueSource": specJSON(t, target.Spec{URL: h.srv.URL + "/flaky"}),
	}, &flaky); code != http.StatusCreated {
		t.Fatalf("create flaky job: %d", code)
	}
	api(t, base, tok, "POST", fmt.Sprintf("/v1/jobs/%d/trigger", flaky.ID), map[string]any{}, nil)
	eventually(t, 20*time.Second, "the retry's success", func() bool {
		logs = logPage{}
		api(t, base, tok, "GET", fmt.Sprintf("/v1/logs?job=%d&limit=10", flaky.ID), nil, &logs)
		for _, l := range logs.Items {
			if l.TriggerType == xjob.TriggerRetry && l.HandleCode == xjob.CodeSuccess {
				return true
			}
		}
		return false
	})
	for _, l := range logs.Items {
		if l.TriggerType == xjob.TriggerManual && (l.HandleCode != xjob.CodeFail || !strings.Contains(l.HandleMsg, "HTTP 503")) {
			t.Fatalf("first run = %+v", l)
		}
	}
}

// TestHTTPJobBadInputWritesNothing: every refusal names its field, and
// no job is written.
func TestHTTPJobBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	info, _ := runLocal(t, nil)
	base, tok := info.URL, info.AdminToken
	var g xjob.Group
	api(t, base, tok, "POST", "/v1/groups", map[string]any{"appname": "hooks", "title": "hooks", "addressType": 0}, &g)
	tests := []struct {
		name, source, field string
		extra               map[string]any
	}{
		{"malformed URL", `{"url":"http//nohost"}`, "glueSource.url", nil},
		{"metadata address", `{"url":"http://169.254.169.254/latest/meta-data/"}`, "glueSource.url", nil},
		{"legacy spelling of metadata", `{"url":"http://0xa9fea9fe/"}`, "glueSource.url", nil},
		{"template error", `{"url":"http://127.0.0.1/","method":"POST","body":"{{param"}`, "glueSource.body", nil},
		{"unknown field", `{"url":"http://127.0.0.1/","verb":"GET"}`, "glueSource", nil},
		{"foreign reference", `{"url":"http://127.0.0.1/","secretHeaders":{"Authorization":"ref:0123456789abcdef"}}`, "glueSource.secretHeaders.Authorization", nil},
		{"broadcast", `{"url":"http://127.0.0.1/"}`, "executorRouteStrategy", map[string]any{"executorRouteStrategy": "SHARDING_BROADCAST"}},
		{"timeout", `{"url":"http://127.0.0.1/"}`, "executorTimeout", map[string]any{"executorTimeout": 301}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"jobGroup": g.ID, "jobDesc": tc.name, "author": "test", "glueType": "HTTP", "glueSource": tc.source}
			for k, v := range tc.extra {
				body[k] = v
			}
			var problem struct {
				Problems []xjob.FieldProblem `json:"problems"`
			}
			code := apiRaw(t, base, tok, "POST", "/v1/jobs", body, &problem)
			if code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", code)
			}
			found := false
			for _, p := range problem.Problems {
				found = found || p.Field == tc.field
			}
			if !found {
				t.Fatalf("problems %+v do not name %s", problem.Problems, tc.field)
			}
		})
	}
	var page struct {
		Items []xjob.Job `json:"items"`
	}
	api(t, base, tok, "GET", "/v1/jobs", nil, &page)
	if len(page.Items) != 0 {
		t.Fatalf("refused jobs were written: %+v", page.Items)
	}
}

// apiRaw is api that decodes any reply, an error's too, into out.
func apiRaw(t *testing.T, base, token, method, path string, body, out any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, base+path, strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(rb, out); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, rb)
	}
	return resp.StatusCode
}

// TestHTTPJobsInACluster: two `xjob server` nodes share one database and
// one key (derived from the shared admin token): a job saved through one
// node, its secret sealed there, is called with that secret by whichever
// node dispatches it, and neither node shows the secret.
func TestHTTPJobsInACluster(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + t.TempDir() + "/cluster.db"
	a := startNode(t, db, "node-a", nil)
	b := startNode(t, db, "node-b", nil)
	h := newHook(t, 0)
	var g xjob.Group
	if code := api(t, a.info.URL, clusterAdminToken, "POST", "/v1/groups", map[string]any{"appname": "hooks", "title": "hooks", "addressType": 0}, &g); code != http.StatusCreated {
		t.Fatalf("create group: %d", code)
	}
	var j xjob.Job
	if code := api(t, a.info.URL, clusterAdminToken, "POST", "/v1/jobs", map[string]any{
		"jobGroup": g.ID, "jobDesc": "cluster hook", "author": "test", "scheduleType": "FIX_RATE", "scheduleConf": "1",
		"glueType": "HTTP", "triggerStatus": 1,
		"glueSource": specJSON(t, target.Spec{URL: h.srv.URL + "/cluster", SecretHeaders: map[string]string{"Authorization": "shared-secret"}}),
	}, &j); code != http.StatusCreated {
		t.Fatalf("create HTTP job: %d", code)
	}
	eventually(t, 30*time.Second, "3 calls", func() bool { return len(h.callsTo("/cluster")) >= 3 })
	for _, c := range h.callsTo("/cluster") {
		if c.Auth != "shared-secret" {
			t.Fatalf("a node sent the secret header as %q", c.Auth)
		}
	}
	var got xjob.Job
	api(t, b.info.URL, clusterAdminToken, "GET", fmt.Sprintf("/v1/jobs/%d", j.ID), nil, &got)
	if strings.Contains(got.GlueSource, "shared-secret") || !strings.Contains(got.GlueSource, "ref:") {
		t.Fatalf("node b shows %s", got.GlueSource)
	}
	var logs logPage
	api(t, b.info.URL, clusterAdminToken, "GET", fmt.Sprintf("/v1/logs?job=%d&limit=100", j.ID), nil, &logs)
	for _, l := range logs.Items {
		if l.HandleCode != xjob.CodeNone && l.HandleCode != xjob.CodeSuccess {
			t.Fatalf("log = %+v", l)
		}
	}
}
