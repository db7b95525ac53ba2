package local

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/web/guard"
	"github.com/xjobdev/xjob/pkg/executor"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// The security suite: attacks run end to end against xjob local on
// loopback, each bounded in time (a client timeout, eventually's limit).

// clientFrom is an HTTP client whose connections come from the loopback
// address ip (any of 127.0.0.0/8 reaches the listener), so one test can
// play several client addresses. It never follows redirects.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signIn posts the sign-in form from c and returns the status and the
// session cookie ("" when none was set).
func signIn(t *testing.T, c *http.Client, base, user, pw string) (int, *http.Cookie) {
	t.Helper()
	res, err := c.PostForm(base+"/console/login", url.Values{"username": {user}, "password": {pw}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	for _, ck := range res.Cookies() {
		if ck.Name == "xjob_session" && ck.Value != "" {
			return res.StatusCode, ck
		}
	}
	return res.StatusCode, nil
}

// Concurrent wrong passwords from one client: at most five are checked
// (the rest are refused before any hash), and the process does not
// allocate a hash's memory per request. Not parallel: it reads the
// process's allocation counter.
func TestSecurityConcurrentSignIns(t *testing.T) {
	info, _ := runLocal(t, nil)
	c := clientFrom("127.0.0.1")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 100
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _ = signIn(t, c, info.URL, "admin", "wrong-password")
		}()
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	if count[http.StatusUnauthorized] > 5 || count[http.StatusTooManyRequests] < n-5 {
		t.Fatalf("statuses %v: want at most 5 checked (401), the rest 429", count)
	}
	// Each argon2id check allocates 19 MiB: 100 unchecked would be ~1.9 GB.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 400<<20 {
		t.Fatalf("%d concurrent sign-ins allocated %d MiB", n, grew>>20)
	}
	t.Logf("statuses %v, allocated %d MiB", count, (after.TotalAlloc-before.TotalAlloc)>>20)
}

// Wrong passwords from one address hold back that address only; a cookie
// kept from before sign-out is refused after it.
func TestSecurityLockoutAndSignOut(t *testing.T) {
	t.Parallel()
	info, _ := runLocal(t, nil)
	attacker, user := clientFrom("127.0.0.2"), clientFrom("127.0.0.3")
	for range 6 {
		signIn(t, attacker, info.URL, "admin", "wrong-password")
	}
	if st, _ := signIn(t, attacker, info.URL, "admin", info.AdminPassword); st != http.StatusTooManyRequests {
		t.Fatalf("the guessing address with the right password: %d, want 429", st)
	}
	st, cookie := signIn(t, user, info.URL, "admin", info.AdminPassword)
	if st != http.StatusSeeOther || cookie == nil {
		t.Fatalf("the user from another address: %d, want a session", st)
	}
	get := func() int {
		req, _ := http.NewRequest("GET", info.URL+"/v1/users", nil)
		req.AddCookie(cookie)
		res, err := user.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if st := get(); st != http.StatusOK {
		t.Fatalf("GET /v1/users with the session: %d", st)
	}
	// The sign-out form carries the CSRF token; read it off a page.
	req, _ := http.NewRequest("GET", info.URL+"/console/", nil)
	req.AddCookie(cookie)
	res, err := user.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	_, rest, ok := strings.Cut(string(page), `name="_csrf" value="`)
	csrf, _, _ := strings.Cut(rest, `"`)
	if !ok || csrf == "" {
		t.Fatal("no CSRF token on the dashboard")
	}
	req, _ = http.NewRequest("POST", info.URL+"/console/logout", strings.NewReader(url.Values{"_csrf": {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(cookie)
	if res, err = user.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if st := get(); st != http.StatusUnauthorized {
		t.Fatalf("GET /v1/users with the cookie kept after sign-out: %d, want 401", st)
	}
}

// Registration of link-local and metadata addresses is refused in every
// spelling; loopback is allowed in xjob local.
func TestSecurityRegistrationToInternalAddresses(t *testing.T) {
	t.Parallel()
	info, _ := runLocal(t, nil)
	for _, tt := range []struct {
		addr string
		ok   bool
	}{
		{"http://169.254.169.254/latest/meta-data", false},
		{"http://[fd00:ec2::254]/", false},
		{"http://[fe80::1]:9999/", false},
		{"http://[::ffff:169.254.169.254]/", false},
		{"http://2852039166/", false},
		{"http://0xa9fea9fe/", false},
		{"http://100.100.100.200/latest/meta-data/", false},
		{"http://[64:ff9b::a9fe:a9fe]/", false},
		{"http://[64:ff9b::6464:64c8]/", false},
		{"http://[fd00:ec2::253]/", false},
		{"http://127.0.0.1:9999/", true},
		{"http://10.1.2.3:9999/", true},
	} {
		body := fmt.Sprintf(`{"registryGroup":"EXECUTOR","registryKey":"sec-app","registryValue":%q}`, tt.addr)
		req, _ := http.NewRequest("POST", info.URL+"/api/registry", strings.NewReader(body))
		req.Header.Set(protocol.AccessTokenHeader, info.AccessToken)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if got := strings.Contains(string(b), `"code":200`); got != tt.ok {
			t.Errorf("register %s: %s, want accepted=%v", tt.addr, b, tt.ok)
		}
	}
}

// Weak access tokens are refused at start unless accepted on purpose.
func TestSecurityWeakTokens(t *testing.T) {
	t.Parallel()
	for _, tok := range []string{"default_token", "default_token   ", " default_token\t", "x", "fifteen-chars-x", "fifteen-chars-x "} {
		cfg := Defaults()
		cfg.DB, cfg.Listen, cfg.AccessToken = t.TempDir()+"/x.db", "127.0.0.1:0", tok
		cfg.Logger = slog.New(slog.DiscardHandler)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := Run(ctx, cfg)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "weak") {
			t.Errorf("--access-token %q: %v, want a refusal", tok, err)
		}
	}
	logs := &strings.Builder{}
	var mu sync.Mutex
	info, _ := runLocal(t, func(c *Config) {
		c.AccessToken, c.AllowWeakAccessToken = "default_token", true
		c.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, logs}, nil))
	})
	if info.AccessToken != "default_token" {
		t.Fatalf("token in effect %q", info.AccessToken)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "WEAK EXECUTOR ACCESS TOKEN") {
		t.Fatal("a weak token accepted on request was not warned about")
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// trap counts the requests that reach it.
func trap(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Write([]byte(`{"code":200}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func redirector(t *testing.T, to string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Redirect(w, r, to+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// No redirect is followed with a token: the SDK calling an admin address
// that redirects, and the admin calling an executor address that does.
func TestSecurityRedirectTraps(t *testing.T) {
	t.Parallel()
	info, _ := runLocal(t, nil)

	// SDK → admin.
	sdkTrap, sdkTrapped := trap(t)
	adminRedirect, redirected := redirector(t, sdkTrap.URL)
	e, err := executor.New(executor.Config{AdminAddresses: []string{adminRedirect.URL}, AccessToken: info.AccessToken,
		AppName: "trap-app", Address: "http://127.0.0.1:9/", LogDir: t.TempDir(), LogRetentionDays: -1,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Shutdown(ctx)
	})
	eventually(t, 10*time.Second, "the SDK's registration at the redirecting admin", func() bool { return redirected.Load() > 0 })

	// Admin → executor.
	execTrap, execTrapped := trap(t)
	execRedirect, _ := redirector(t, execTrap.URL)
	var group struct{ ID int64 }
	if st := v1(t, info, "POST", "/v1/groups", fmt.Sprintf(`{"appname":"redirect-app","title":"Redirect","addressType":1,"addressList":[%q]}`,
		execRedirect.URL), &group); st != http.StatusCreated {
		t.Fatalf("create group: %d", st)
	}
	var job struct{ ID int64 }
	if st := v1(t, info, "POST", "/v1/jobs", fmt.Sprintf(`{"jobGroup":%d,"jobDesc":"redirect","author":"t","scheduleType":"NONE",`+
		`"glueType":"BEAN","executorHandler":"h","executorFailRetryCount":0}`, group.ID), &job); st != http.StatusCreated {
		t.Fatalf("create job: %d", st)
	}
	if st := v1(t, info, "POST", fmt.Sprintf("/v1/jobs/%d/trigger", job.ID), `{}`, nil); st >= 300 {
		t.Fatalf("trigger: %d", st)
	}
	var logs struct {
		Items []struct {
			TriggerCode int    `json:"triggerCode"`
			TriggerMsg  string `json:"triggerMsg"`
		} `json:"items"`
	}
	eventually(t, 10*time.Second, "the trigger's result", func() bool {
		v1(t, info, "GET", fmt.Sprintf("/v1/logs?job=%d", job.ID), "", &logs)
		return len(logs.Items) == 1 && logs.Items[0].TriggerCode != 0
	})
	if l := logs.Items[0]; l.TriggerCode == 200 || !strings.Contains(l.TriggerMsg, "307") {
		t.Errorf("trigger through a redirect: %d %q, want a failure naming the 307", l.TriggerCode, l.TriggerMsg)
	}
	if n, m := sdkTrapped.Load(), execTrapped.Load(); n != 0 || m != 0 {
		t.Fatalf("redirect targets reached: SDK→admin %d, admin→executor %d", n, m)
	}
}

// countingListener counts the bytes the server reads off its connections.
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

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// bigBody is a JSON-looking body of n bytes made on the fly, so that the
// client holds none of it.
type bigBody struct{ left int64 }

func (b *bigBody) Read(p []byte) (int, error) {
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

// Anonymous requests cost at most a small body whatever the route: 300
// concurrent just-under-the-cap bodies without a credential (and with a
// wrong one) to /v1/apply, /v1/jobs and a console form are refused with
// the server reading no more than guard.Small (plus what one read of the
// connection brings) of each, and the process does not grow by their
// size. Not parallel: it reads the process's allocation counter.
func TestSecurityAnonymousBodiesUnread(t *testing.T) {
	var read atomic.Int64
	info, _ := runLocal(t, func(c *Config) {
		c.wrapListener = func(ln net.Listener) net.Listener { return countingListener{ln, &read} }
	})
	const n = 300
	size := int64(guard.Apply - 100<<10) // 4.9 MiB: under /v1/apply's cap
	targets := []struct{ path, ct, auth string }{
		{"/v1/apply", "application/json", ""},
		{"/v1/apply", "application/json", "Bearer wrong-token-wrong-token"},
		{"/v1/jobs", "application/json", ""},
		{"/console/jobs", "application/x-www-form-urlencoded", ""},
	}
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer client.CloseIdleConnections()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	read.Store(0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tg := targets[i%len(targets)]
			req, _ := http.NewRequest("POST", info.URL+tg.path, &bigBody{left: size})
			req.ContentLength = size
			req.Header.Set("Content-Type", tg.ct)
			if tg.auth != "" {
				req.Header.Set("Authorization", tg.auth)
			}
			code := 0 // the server closed before the client finished writing
			if res, err := client.Do(req); err == nil {
				code = res.StatusCode
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	got, grew := read.Load(), after.TotalAlloc-before.TotalAlloc
	t.Logf("%d requests of %d MiB: statuses %v; the server read %d KiB (%d per request), the process allocated %d MiB",
		n, size>>20, codes, got>>10, got/n, grew>>20)
	for code := range codes {
		if code >= 200 && code < 300 {
			t.Errorf("an anonymous request succeeded: %v", codes)
		}
	}
	// Headers, guard.Small and one 4 KiB read of the connection's buffer.
	if limit := int64(n) * (guard.Small + 8<<10); got > limit {
		t.Errorf("the server read %d bytes of %d anonymous requests, want at most %d", got, n, limit)
	}
	if grew > 100<<20 {
		t.Errorf("%d anonymous requests allocated %d MiB, want under 100", n, grew>>20)
	}
}

// signInVia posts the sign-in form from c with X-Forwarded-For xff ("":
// none) and the cookies in jar (nil: none); it returns the status.
func signInVia(t *testing.T, c *http.Client, base, xff, user, pw string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/console/login", strings.NewReader(url.Values{"username": {user}, "password": {pw}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// Behind a reverse proxy listed in --trusted-proxies, clients are told
// apart by the X-Forwarded-For the proxy writes: wrong passwords from one
// client hold back that client only, and the audit log names the client
// and the proxy. Without the setting the header is not believed: a
// guesser that makes up a new one for every try is still one client.
func TestSecurityLockoutBehindProxy(t *testing.T) {
	t.Parallel()
	logs := &strings.Builder{}
	var mu sync.Mutex
	info, _ := runLocal(t, func(c *Config) {
		c.TrustedProxies = "127.0.0.1"
		c.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, logs}, nil))
	})
	proxy := clientFrom("127.0.0.1")
	for range 6 {
		signInVia(t, proxy, info.URL, "198.51.100.7", "admin", "wrong-password")
	}
	if st := signInVia(t, proxy, info.URL, "198.51.100.7", "admin", info.AdminPassword); st != http.StatusTooManyRequests {
		t.Fatalf("the guessing client with the right password: %d, want 429", st)
	}
	// A forged left part of the header does not move the guesser.
	if st := signInVia(t, proxy, info.URL, "203.0.113.1, 198.51.100.7", "admin", info.AdminPassword); st != http.StatusTooManyRequests {
		t.Fatalf("the guessing client behind a forged entry: %d, want 429", st)
	}
	if st := signInVia(t, proxy, info.URL, "198.51.100.8", "admin", info.AdminPassword); st != http.StatusSeeOther {
		t.Fatalf("the admin from another client behind the same proxy: %d, want a session", st)
	}
	mu.Lock()
	audit := logs.String()
	mu.Unlock()
	if !strings.Contains(audit, "remote=198.51.100.7 peer=127.0.0.1") {
		t.Fatalf("the audit log does not name the client and the proxy:\n%s", audit)
	}

	// Not a trusted proxy: the header is the client's to write, and
	// ignored.
	direct := clientFrom("127.0.0.2")
	for i := range 6 {
		signInVia(t, direct, info.URL, fmt.Sprintf("192.0.2.%d", i+1), "admin", "wrong-password")
	}
	if st := signInVia(t, direct, info.URL, "192.0.2.99", "admin", info.AdminPassword); st != http.StatusTooManyRequests {
		t.Fatalf("a guesser inventing X-Forwarded-For: %d, want 429", st)
	}
}

// Guesses from many addresses do not lock the user out: from the browser
// it signed in with before, a typo and the right password still get in,
// however many addresses failed for the username.
func TestSecurityLockoutFromManyAddresses(t *testing.T) {
	t.Parallel()
	info, _ := runLocal(t, nil)
	jar, _ := cookiejar.New(nil)
	victim := clientFrom("127.0.0.3")
	victim.Jar = jar
	if st := signInVia(t, victim, info.URL, "", "admin", info.AdminPassword); st != http.StatusSeeOther {
		t.Fatalf("first sign-in: %d", st)
	}
	for a := range 8 { // 8 addresses × 5 tries: the per-user lane is full
		c := clientFrom(fmt.Sprintf("127.0.0.%d", 10+a))
		for range 5 {
			signInVia(t, c, info.URL, "", "admin", "wrong-password")
		}
	}
	if st := signInVia(t, victim, info.URL, "", "admin", "typo-password"); st != http.StatusUnauthorized {
		t.Fatalf("the victim's typo: %d, want 401", st)
	}
	if st := signInVia(t, victim, info.URL, "", "admin", info.AdminPassword); st != http.StatusSeeOther {
		t.Fatalf("the victim after a typo, under attack from 8 addresses: %d, want a session", st)
	}
}

// Guessing the /v1 bearer token: past 20 misses a minute from one
// address the guesser gets 429 unlogged, so 300 guesses write 21 audit
// lines, not 300; another address with the token is not held back.
func TestSecurityBearerGuessing(t *testing.T) {
	t.Parallel()
	logs := &strings.Builder{}
	var mu sync.Mutex
	info, _ := runLocal(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, logs}, nil))
	})
	get := func(c *http.Client, tok string) int {
		req, _ := http.NewRequest("GET", info.URL+"/v1/jobs", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	guesser := clientFrom("127.0.0.4")
	codes := map[int]int{}
	for i := range 300 {
		codes[get(guesser, fmt.Sprintf("%048x", i))]++
	}
	mu.Lock()
	lines := strings.Count(logs.String(), "event=auth_failed kind=admin-token")
	mu.Unlock()
	t.Logf("300 guesses: statuses %v, %d audit lines", codes, lines)
	if codes[http.StatusTooManyRequests] < 270 || lines > 21 {
		t.Fatalf("300 guesses: statuses %v and %d audit lines; want 429 past 21 and at most 21 lines", codes, lines)
	}
	if st := get(clientFrom("127.0.0.5"), info.AdminToken); st != http.StatusOK {
		t.Fatalf("the admin token from another address: %d", st)
	}
}
