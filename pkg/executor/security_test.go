package executor

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A redirect from an admin address is the admin's final answer: the token
// and the body never reach the Location.
func TestAdminRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	var trapped atomic.Int64
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trapped.Add(1)
		t.Errorf("redirect followed: %s %s token=%q", r.Method, r.URL, r.Header.Get("XXL-JOB-ACCESS-TOKEN"))
	}))
	t.Cleanup(trap.Close)
	for _, code := range []int{301, 302, 303, 307, 308} {
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, trap.URL+r.URL.Path, code)
		}))
		t.Cleanup(redirector.Close)
		for _, client := range []*http.Client{nil, {}} {
			f := setup(t, func(c *Config) {
				c.AdminAddresses = []string{redirector.URL}
				c.HTTPClient = client
			})
			err := f.e.admin.post(context.Background(), "api/registry", map[string]string{"registryKey": "x"})
			if err == nil || !strings.Contains(err.Error(), "status") {
				t.Errorf("%d: post through a redirect: %v, want an http status error", code, err)
			}
		}
	}
	if n := trapped.Load(); n != 0 {
		t.Fatalf("%d requests reached the redirect target", n)
	}
}

func TestCrossSiteRefused(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	tests := []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"admin", map[string]string{"Content-Type": "application/json;charset=UTF-8"}, 200},
		{"no content type", nil, 200},
		{"text/plain", map[string]string{"Content-Type": "text/plain"}, 403},
		{"form", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 403},
		{"multipart", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, 403},
		{"origin", map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, 403},
		{"fetch metadata", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("POST", f.srv.URL+"/beat", strings.NewReader(`""`))
		req.Header.Set("XXL-JOB-ACCESS-TOKEN", "tok")
		for k, v := range tt.headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", tt.name)
		}
	}
}

func TestServerTimeouts(t *testing.T) {
	t.Parallel()
	s := NewServer(http.NotFoundHandler())
	if s.ReadTimeout <= 0 || s.ReadHeaderTimeout <= 0 || s.IdleTimeout <= 0 || s.ReadTimeout > time.Minute {
		t.Fatalf("timeouts read %v header %v idle %v", s.ReadTimeout, s.ReadHeaderTimeout, s.IdleTimeout)
	}
}
