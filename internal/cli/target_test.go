package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
)

// TestHTTPJobFromTheCLI: `xjob job create --type http` makes a job the
// scheduler calls itself, its secret read from the environment and never
// printed; `job update` changes one field and keeps the secret.
func TestHTTPJobFromTheCLI(t *testing.T) {
	t.Parallel()
	s := startLocal(t)
	var mu sync.Mutex
	var got []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+string(b))
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	mustRun(t, s, "group", "create", "--appname", "hooks", "--title", "Hooks")

	var out, errb bytes.Buffer
	vars := map[string]string{envServer: s.info.URL, envToken: s.info.AdminToken, "HOOK_AUTH": "Bearer from-env"}
	code := run(t.Context(), []string{"job", "create", "--group", "1", "--desc", "hook", "--author", "ann", "--type", "http",
		"--url", hook.URL + "/run", "--method", "post", "--header", "Content-Type: application/json",
		"--secret-header-env", "Authorization=HOOK_AUTH", "--body", `{"p":{{param|json}}}`, "--param", "x", "-o", "json"},
		envWith(&out, &errb, vars))
	if code != 0 {
		t.Fatalf("job create: exit %d: %s", code, errb.String())
	}
	if strings.Contains(out.String(), "from-env") {
		t.Fatalf("the secret was printed: %s", out.String())
	}
	var j xjob.Job
	if err := json.Unmarshal(out.Bytes(), &j); err != nil || j.GlueType != xjob.GlueHTTP {
		t.Fatalf("created %+v, %v", j, err)
	}
	mustRun(t, s, "job", "update", "1", "--url", hook.URL+"/other", "--body", `{"p":{{param|json}},"log":{{logId}}}`)
	mustRun(t, s, "job", "trigger", "1")
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hook was never called")
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.HasPrefix(got[0], "POST /other Bearer from-env {\"p\":\"x\",\"log\":") {
		t.Fatalf("call = %q", got[0])
	}

	// Bad input names the field and writes nothing.
	o, e, code := s.cli(t, "job", "create", "--group", "1", "--desc", "bad", "--author", "ann", "--type", "http",
		"--url", "http://169.254.169.254/latest/")
	if code == 0 || !strings.Contains(e, "glueSource.url") {
		t.Fatalf("metadata URL: exit %d\n%s\n%s", code, o, e)
	}
	if _, e, code := s.cli(t, "job", "create", "--group", "1", "--desc", "bad", "--author", "ann", "--type", "http",
		"--url", "https://h/", "--secret-header-env", "Authorization=UNSET_VAR"); code == 0 || !strings.Contains(e, "UNSET_VAR is not set") {
		t.Fatalf("unset variable: exit %d: %s", code, e)
	}
}
