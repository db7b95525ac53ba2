package executor

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xjobdev/xjob/pkg/protocol"
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

// countingConn counts the bytes the server reads off a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.n}, nil
}

// spaces is an n-byte body made on the fly.
type spaces struct{ left int64 }

func (b *spaces) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), b.left)
	for i := range n {
		p[i] = ' '
	}
	b.left -= n
	return int(n), nil
}

// The access token is checked before the body is read: 100 concurrent
// just-under-the-cap bodies with a wrong or no token cost the executor
// a few KiB of reading each, not their 5 MiB; the right token still gets
// its body read.
func TestWrongTokenBodyUnread(t *testing.T) {
	t.Parallel()
	var read atomic.Int64
	e, err := New(Config{AccessToken: "  a-long-enough-token-0123  ", LogDir: t.TempDir(), LogRetentionDays: -1,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(e)
	srv.Listener = countingListener{srv.Listener, &read}
	srv.Start()
	t.Cleanup(srv.Close)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	const n, size = 100, MaxBodyBytes - 1<<10
	var wg sync.WaitGroup
	var refused atomic.Int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", srv.URL+"/run", &spaces{left: size})
			req.ContentLength = size
			if i%2 == 0 {
				req.Header.Set("XXL-JOB-ACCESS-TOKEN", "a-long-enough-token-0124")
			}
			res, err := client.Do(req)
			if err != nil {
				refused.Add(1) // closed before the client finished writing
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if strings.Contains(string(b), protocol.MsgWrongToken) {
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	got := read.Load()
	t.Logf("%d requests of %d MiB with a wrong token: %d refused, the executor read %d KiB", n, size>>20, refused.Load(), got>>10)
	if refused.Load() != n {
		t.Errorf("%d of %d wrong-token requests refused", refused.Load(), n)
	}
	if limit := int64(n) * 16 << 10; got > limit {
		t.Errorf("the executor read %d bytes of %d wrong-token requests, want at most %d", got, n, limit)
	}
	// The token is compared trimmed, as configured with spaces around it.
	req, _ := http.NewRequest("POST", srv.URL+"/beat", strings.NewReader(`{}`))
	req.Header.Set("XXL-JOB-ACCESS-TOKEN", "a-long-enough-token-0123")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(b), `"code":200`) {
		t.Errorf("the right token: %s", b)
	}
}

// The weak-token warning looks at the token as compared: trimmed. An
// all-blank token is no token.
func TestWeakTokenTrimmed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		token string
		weak  bool
	}{
		{"default_token", true},
		{"default_token   ", true},
		{"\tdefault_token", true},
		{"short  ", true},
		{"a-long-enough-token-0123", false},
		{"  a-long-enough-token-0123  ", false},
	} {
		var logs strings.Builder
		var mu sync.Mutex
		_, err := New(Config{AccessToken: tt.token, LogDir: t.TempDir(), LogRetentionDays: -1,
			Logger: slog.New(slog.NewTextHandler(lockedBuilder{&mu, &logs}, nil))})
		if err != nil {
			t.Fatalf("%q: %v", tt.token, err)
		}
		mu.Lock()
		if got := strings.Contains(logs.String(), "weak"); got != tt.weak {
			t.Errorf("%q: weak warning %v, want %v", tt.token, got, tt.weak)
		}
		mu.Unlock()
	}
	if _, err := New(Config{AccessToken: "   ", LogDir: t.TempDir()}); err == nil {
		t.Error("a blank access token was accepted without AllowNoToken")
	}
}

type lockedBuilder struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (l lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
