package console_test

import (
	"net/url"
	"strings"
	"testing"
)

// TestTestCallGuards: the job form's test call is a POST like any other
// (refused without its CSRF token), for admins only (a normal user, even
// on a job of their own group, is refused), and, on a console whose
// deployment runs no target jobs, refused as a form problem.
func TestTestCallGuards(t *testing.T) {
	t.Parallel()
	f := setup(t)
	boss, normal := f.signIn("boss", "boss-password"), f.signIn("normal", "normal-password")
	form := url.Values{"jobGroup": {id(f.mine.ID)}, "jobDesc": {"d"}, "author": {"a"}, "scheduleType": {"CRON"},
		"scheduleConf": {"0 0 * * * ?"}, "glueType": {"HTTP"}, "targetUrl": {"http://127.0.0.1:1/x"},
		"executorRouteStrategy": {"FIRST"}, "executorBlockStrategy": {"SERIAL_EXECUTION"}, "misfireStrategy": {"DO_NOTHING"}}
	tests := []struct {
		name   string
		s      *session
		path   string
		noCSRF bool
		status int
		body   string
	}{
		{"no CSRF", &boss, "/console/jobs/test-call", true, 403, ""},
		{"no session", nil, "/console/jobs/test-call", false, 0, ""},
		{"normal user", &normal, "/console/jobs/test-call", false, 403, ""},
		{"normal user, own job", &normal, "/console/jobs/" + id(f.myJob.ID) + "/test-call", false, 403, ""},
		{"admin, no targets here", &boss, "/console/jobs/test-call", false, 422, "test calls are not available"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := f.do(tc.s, "POST", tc.path, form, tc.noCSRF)
			if tc.status == 0 {
				if rec.Code < 300 || rec.Code >= 500 || rec.Code == 200 {
					t.Fatalf("status %d, want a refusal", rec.Code)
				}
				return
			}
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.body) {
				t.Fatalf("status %d %q, want %d with %q", rec.Code, rec.Body.String(), tc.status, tc.body)
			}
		})
	}
}
