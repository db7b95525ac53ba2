package adminapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAuditLines: every refused credential (admin token, session, executor
// token) and every admin write leaves one "audit" line saying who, what,
// which id and from where, and never the secret presented.
func TestAuditLines(t *testing.T) {
	e := setup(t)
	g := e.group()
	j := e.job(g.ID, "")
	before := len(e.auditLines())

	const guess = "guessed-token-value-1234"
	steps := []struct {
		name string
		do   func()
		want []string // substrings of the new audit line
	}{
		{"bad admin token", func() {
			e.call("GET", "/v1/jobs", "", "Authorization: Bearer "+guess)
		}, []string{"event=auth_failed", "kind=admin-token", "path=/v1/jobs", "remote=127.0.0.1"}},
		{"no credential", func() {
			e.call("DELETE", "/v1/jobs/"+strconv.FormatInt(j.ID, 10), "", "Authorization: ")
		}, []string{"event=auth_failed", "kind=none"}},
		{"bad session cookie", func() {
			e.call("GET", "/v1/jobs", "", "Authorization: ", "Cookie: xjob_session="+guess)
		}, []string{"event=auth_failed", "kind=session"}},
		{"wrong executor token", func() {
			e.call("POST", "/api/registry", `{"registryGroup":"EXECUTOR","registryKey":"a","registryValue":"http://127.0.0.1:1/"}`,
				"XXL-JOB-ACCESS-TOKEN: "+guess)
		}, []string{"event=auth_failed", "kind=executor-token", `reason="wrong access token"`, "path=/api/registry"}},
		{"job update", func() {
			e.must(http.StatusOK, "POST", "/v1/jobs/"+strconv.FormatInt(j.ID, 10)+"/stop", "", nil)
		}, []string{"event=admin_write", "who=admin-token", `route="POST /v1/jobs/{id}/stop"`, "id=" + strconv.FormatInt(j.ID, 10), "status=200"}},
		{"refused write", func() {
			e.call("DELETE", "/v1/groups/999999", "")
		}, []string{"event=admin_write", `route="DELETE /v1/groups/{id}"`, "id=999999", "status=404"}},
	}
	for _, s := range steps {
		s.do()
		lines := e.auditLines()
		if len(lines) != before+1 {
			t.Fatalf("%s: %d new audit lines, want 1:\n%s", s.name, len(lines)-before, strings.Join(lines[before:], "\n"))
		}
		before = len(lines)
		for _, w := range s.want {
			if !strings.Contains(lines[len(lines)-1], w) {
				t.Errorf("%s: audit line %q lacks %q", s.name, lines[len(lines)-1], w)
			}
		}
	}
	if all := e.logs.String(); strings.Contains(all, guess) || strings.Contains(all, adminToken) || strings.Contains(all, accessToken) {
		t.Errorf("a secret reached the log:\n%s", all)
	}
}

func (e *env) auditLines() []string {
	var out []string
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(l, "msg=audit") {
			out = append(out, l)
		}
	}
	return out
}

// TestBearerGuessesThrottled: wrong bearer tokens from one client are
// answered and written down up to a limit per minute; past it the
// client's bearer requests get 429 without a comparison or an audit line,
// so guessing cannot flood the log. The window ends on the clock.
func TestBearerGuessesThrottled(t *testing.T) {
	e := setup(t)
	before := len(e.auditLines())
	codes := map[int]int{}
	for i := range 100 {
		r := e.call("GET", "/v1/jobs", "", "Authorization: Bearer guess-"+strconv.Itoa(i)+"-0123456789abcdef")
		codes[r.status]++
	}
	lines := e.auditLines()[before:]
	if codes[http.StatusUnauthorized] != 21 || codes[http.StatusTooManyRequests] != 79 {
		t.Fatalf("100 wrong tokens: statuses %v, want 21 × 401 then 429", codes)
	}
	if len(lines) != 21 || !strings.Contains(lines[20], "refused (429)") {
		t.Fatalf("%d audit lines for 100 wrong tokens, want 21, the last saying the client is cut off:\n%s",
			len(lines), strings.Join(lines, "\n"))
	}
	if r := e.call("GET", "/v1/jobs", ""); r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
		t.Fatalf("the right token from the cut-off client: %d %v, want 429 with Retry-After", r.status, r.header)
	}
	// A session cookie is not a bearer token: not held back.
	if r := e.call("GET", "/v1/jobs", "", "Authorization: ", "Cookie: xjob_session=x"); r.status != http.StatusUnauthorized {
		t.Fatalf("no bearer token from the cut-off client: %d, want 401", r.status)
	}
	e.clk.Advance(time.Minute)
	if r := e.call("GET", "/v1/jobs", ""); r.status != http.StatusOK {
		t.Fatalf("the right token after the minute: %d", r.status)
	}
	// Trailing white space in the header is not part of the token.
	if r := e.call("GET", "/v1/jobs", "", "Authorization: Bearer "+adminToken+"  "); r.status != http.StatusOK {
		t.Fatalf("the token with trailing blanks: %d", r.status)
	}
}
