package local

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/internal/web/guard"
	"github.com/xjobdev/xjob/pkg/clock"
)

const (
	frontAdminToken  = "front-admin-token-0123456789"
	frontAccessToken = "front-access-token-0123456789"
)

// front is the whole HTTP front of xjob local, in process: what Run
// serves, with a signed-in admin's cookie and CSRF token.
type front struct {
	h      http.Handler
	routes []string
	cookie *http.Cookie
	csrf   string
}

func newFront(t *testing.T) front {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := Defaults()
	cfg.AccessToken = frontAccessToken
	clk := clock.Real{}
	db, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "x.db"), sqlitestore.Options{Shards: 2, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc, parts, err := wire(ctx, node{cfg: cfg, db: db, clk: clk, logger: slog.New(slog.DiscardHandler), owner: "test", baseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(parts.exec.Close)
	au, err := auth.New(auth.Config{Users: db, AdminToken: frontAdminToken, Key: auth.DeriveKey(frontAdminToken),
		Params: auth.TestParams})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := au.CreateUser(ctx, auth.Principal{Token: true}, auth.UserInput{Username: "root", Password: "root-password",
		Role: xjob.RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	h, routes, err := newHandler(cfg, svc, frontAdminToken, au)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "http://127.0.0.1/console/login", nil)
	w := httptest.NewRecorder()
	p, err := au.SignIn(w, r, "root", "root-password")
	if err != nil {
		t.Fatal(err)
	}
	return front{h: h, routes: routes, cookie: w.Result().Cookies()[0], csrf: au.CSRFToken(p)}
}

// counter counts what a handler reads of an endless body.
type counter struct{ n atomic.Int64 }

func (c *counter) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	c.n.Add(int64(len(p)))
	if c.n.Load() > 64<<20 {
		return len(p), io.EOF
	}
	return len(p), nil
}

// concrete turns a route pattern into a path that matches it.
func concrete(pattern string) string {
	r := strings.NewReplacer("{id}", "1", "{name}", "someone", "{$}", "", "{uri...}", "registry")
	return r.Replace(pattern)
}

// TestEveryRouteBodyCapped walks every route of the admin API and the
// console and posts an endless body to it, with every credential a route
// may want: no route reads more than its cap (plus the one byte that
// tells the cap was passed), routes anyone may reach read at most
// guard.Small, and every reply says nosniff.
func TestEveryRouteBodyCapped(t *testing.T) {
	t.Parallel()
	f := newFront(t)
	if len(f.routes) < 40 {
		t.Fatalf("only %d routes: %v", len(f.routes), f.routes)
	}
	open := map[string]bool{"POST /console/login": true, "POST /console/lang": true, "GET /healthz": true,
		"GET /console/login": true, "GET /console": true, "GET /console/static/": true}
	for _, rt := range f.routes {
		method, pattern, _ := strings.Cut(rt, " ")
		path := concrete(pattern)
		for _, ct := range []string{"application/json", "application/x-www-form-urlencoded", "application/octet-stream"} {
			body := &counter{}
			r := httptest.NewRequest(method, "http://127.0.0.1"+path, body)
			r.ContentLength = -1 // as a chunked request: no length to refuse on
			r.Header.Set("Content-Type", ct)
			r.Header.Set("Authorization", "Bearer "+frontAdminToken)
			r.Header.Set("XXL-JOB-ACCESS-TOKEN", frontAccessToken)
			r.Header.Set(auth.CSRFHeader, f.csrf)
			r.AddCookie(f.cookie)
			if strings.HasPrefix(path, "/console") {
				r.Header.Del("Authorization") // the console is for people
			}
			w := httptest.NewRecorder()
			done := make(chan struct{})
			go func() { defer close(done); f.h.ServeHTTP(w, r) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s %s (%s): no answer", method, path, ct)
			}
			limit := guard.Limit(method, path)
			if got := body.n.Load(); got > limit+1<<15 { // reads come in chunks of up to 32 KiB
				t.Errorf("%s %s (%s): read %d bytes, cap %d", method, path, ct, got, limit)
			}
			if open[rt] && limit > guard.Small {
				t.Errorf("%s: reachable without signing in, cap %d > %d", rt, limit, guard.Small)
			}
			if w.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s %s: no nosniff", method, path)
			}
			// Without any credential, every route but the executor
			// routes (which check the access token before reading)
			// reads at most guard.Small.
			body = &counter{}
			r = httptest.NewRequest(method, "http://127.0.0.1"+path, body)
			r.ContentLength = -1
			r.Header.Set("Content-Type", ct)
			w = httptest.NewRecorder()
			f.h.ServeHTTP(w, r)
			anon := int64(guard.Small)
			if strings.Contains(path, "/api/") {
				anon = 0
			}
			if got := body.n.Load(); got > anon+1<<15 {
				t.Errorf("%s %s (%s) without a credential: read %d bytes, want at most %d", method, path, ct, got, anon)
			}
		}
	}
}
