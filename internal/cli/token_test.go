package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob/pkg/clock"
)

// TestTokenSources checks where the bearer token comes from: --token, then
// XJOB_TOKEN, then XJOB_ADMIN_TOKEN (what `xjob local` reads), so that one
// export serves the server and the CLI.
func TestTokenSources(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		vars map[string]string
		args []string
		want string // Authorization header sent
	}{
		{"flag wins over both variables", map[string]string{envToken: "cli-tok", envAdminToken: "admin-tok"},
			[]string{"--token", "flag-tok"}, "Bearer flag-tok"},
		{"XJOB_TOKEN wins over XJOB_ADMIN_TOKEN", map[string]string{envToken: "cli-tok", envAdminToken: "admin-tok"},
			nil, "Bearer cli-tok"},
		{"XJOB_ADMIN_TOKEN when XJOB_TOKEN is unset", map[string]string{envAdminToken: "admin-tok"},
			nil, "Bearer admin-tok"},
		{"XJOB_ADMIN_TOKEN when XJOB_TOKEN is empty", map[string]string{envToken: "", envAdminToken: "admin-tok"},
			nil, "Bearer admin-tok"},
		{"no token at all", map[string]string{}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := newAPIDouble(t, map[string][]reply{"GET /v1/groups": {{200, `{"items":[]}`}}})
			vars := map[string]string{envServer: d.srv.URL}
			for k, v := range tt.vars {
				vars[k] = v
			}
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"group", "list"}, tt.args...), env{
				stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
				getenv: func(k string) string { return vars[k] },
				clock:  clock.NewFake(t0), loc: time.UTC,
			})
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			reqs := d.requests()
			if len(reqs) != 1 || reqs[0].auth != tt.want {
				t.Errorf("requests %+v, want one with Authorization %q", reqs, tt.want)
			}
		})
	}
}
