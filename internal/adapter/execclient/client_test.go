package execclient_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/egress"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// request is what the test executor saw.
type request struct {
	Method string
	Path   string
	Header http.Header
	Body   string
}

// executor is a scripted xxl-job executor: it records requests and answers
// every call with reply, as text/html like xxl-job's Netty server.
type executor struct {
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []request
	reply string
}

func setup(t *testing.T, reply string) *executor {
	t.Helper()
	e := &executor{reply: reply}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.reqs = append(e.reqs, request{Method: r.Method, Path: r.RequestURI, Header: r.Header.Clone(), Body: string(b)})
		e.mu.Unlock()
		w.Header().Set("Content-Type", "text/html;charset=UTF-8")
		_, _ = io.WriteString(w, e.reply)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *executor) last(t *testing.T) request {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.reqs) == 0 {
		t.Fatal("executor saw no request")
	}
	return e.reqs[len(e.reqs)-1]
}

func newClient(t *testing.T, opts execclient.Options) *execclient.Client {
	t.Helper()
	if directRun && opts.HTTPClient == nil {
		opts.Direct = true
	}
	c, err := execclient.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestCallsWireFormat(t *testing.T) {
	t.Parallel()
	tp := protocol.TriggerParam{
		JobID: 12, ExecutorHandler: "demoJobHandler", ExecutorParams: "a=1",
		ExecutorBlockStrategy: "SERIAL_EXECUTION", ExecutorTimeout: 30, LogID: 345,
		LogDateTime: 1700000000123, GlueType: "BEAN", GlueSource: "", GlueUpdatetime: 1699999999000,
		BroadcastIndex: 1, BroadcastTotal: 3,
	}
	tests := []struct {
		name     string
		call     func(c *execclient.Client, addr string) protocol.ReturnT
		wantPath string
		wantBody string
	}{
		{
			name:     "run",
			call:     func(c *execclient.Client, a string) protocol.ReturnT { return c.Run(context.Background(), a, tp) },
			wantPath: "/run",
			wantBody: `{"jobId":12,"executorHandler":"demoJobHandler","executorParams":"a=1",` +
				`"executorBlockStrategy":"SERIAL_EXECUTION","executorTimeout":30,"logId":345,` +
				`"logDateTime":1700000000123,"glueType":"BEAN","glueSource":"","glueUpdatetime":1699999999000,` +
				`"broadcastIndex":1,"broadcastTotal":3}`,
		},
		{
			name:     "beat",
			call:     func(c *execclient.Client, a string) protocol.ReturnT { return c.Beat(context.Background(), a) },
			wantPath: "/beat",
			wantBody: `""`,
		},
		{
			name:     "idleBeat",
			call:     func(c *execclient.Client, a string) protocol.ReturnT { return c.IdleBeat(context.Background(), a, 77) },
			wantPath: "/idleBeat",
			wantBody: `{"jobId":77}`,
		},
		{
			name:     "kill",
			call:     func(c *execclient.Client, a string) protocol.ReturnT { return c.Kill(context.Background(), a, 78) },
			wantPath: "/kill",
			wantBody: `{"jobId":78}`,
		},
		{
			name: "log",
			call: func(c *execclient.Client, a string) protocol.ReturnT {
				_, r := c.Log(context.Background(), a, protocol.LogParam{LogDateTim: 1700000000123, LogID: 345, FromLineNum: 5})
				return r
			},
			wantPath: "/log",
			wantBody: `{"logDateTim":1700000000123,"logDateTime":1700000000123,"logId":345,"fromLineNum":5}`,
		},
	}
	for _, tt := range tests {
		for _, slash := range []string{"", "/"} {
			for _, token := range []string{"", "   ", "default_token"} {
				t.Run(tt.name+"/slash="+slash+"/token="+token, func(t *testing.T) {
					t.Parallel()
					e := setup(t, `{"code":200}`)
					c := newClient(t, execclient.Options{AccessToken: token})
					r := tt.call(c, e.srv.URL+slash)
					if r.Code != protocol.SuccessCode {
						t.Fatalf("code = %d (%s), want 200", r.Code, r.Msg)
					}
					got := e.last(t)
					if got.Method != http.MethodPost {
						t.Errorf("method = %s, want POST", got.Method)
					}
					if got.Path != tt.wantPath {
						t.Errorf("path = %q, want %q", got.Path, tt.wantPath)
					}
					if got.Body != tt.wantBody {
						t.Errorf("body =\n%s\nwant\n%s", got.Body, tt.wantBody)
					}
					if h := got.Header.Get("Content-Type"); h != "application/json;charset=UTF-8" {
						t.Errorf("Content-Type = %q", h)
					}
					if h := got.Header.Get("Accept-Charset"); h != "application/json;charset=UTF-8" {
						t.Errorf("Accept-Charset = %q", h)
					}
					vals := got.Header.Values(protocol.AccessTokenHeader)
					sent := len(vals) > 0
					switch {
					case strings.TrimSpace(token) == "" && sent:
						t.Errorf("token header sent for blank token: %q", vals)
					case strings.TrimSpace(token) != "" && (len(vals) != 1 || vals[0] != token):
						t.Errorf("token header = %q, want %q", vals, token)
					}
				})
			}
		}
	}
}

func TestReplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		reply    string
		wantCode int
		wantMsg  string // substring
	}{
		{"plain success", `{"code":200}`, 200, ""},
		{"success with nulls", `{"code":200,"msg":null,"content":null}`, 200, ""},
		{"refusal", `{"code":500,"msg":"job thread is running or has trigger queue."}`, 500, "job thread is running"},
		{"quoted code", `{"code":"200"}`, 200, ""},
		{"unknown fields ignored", `{"code":200,"extra":[1,2]}`, 200, ""},
		{"garbage", `<html>oops</html>`, 500, "response content invalid (not an xxl-job reply, 17 bytes)"},
		{"empty body", ``, 500, "response content invalid"},
		{"no code", `{"msg":"hi"}`, 500, "response content invalid"},
		{"non-numeric code", `{"code":"abc"}`, 500, "response content invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, tt.reply)
			c := newClient(t, execclient.Options{})
			r := c.Beat(context.Background(), e.srv.URL)
			if r.Code != tt.wantCode {
				t.Fatalf("code = %d (%s), want %d", r.Code, r.Msg, tt.wantCode)
			}
			if !strings.Contains(r.Msg, tt.wantMsg) {
				t.Errorf("msg = %q, want it to contain %q", r.Msg, tt.wantMsg)
			}
			if tt.wantCode == 500 && tt.wantMsg != "" && strings.Contains(tt.wantMsg, "invalid") &&
				!strings.Contains(r.Msg, e.srv.URL+"/beat") {
				t.Errorf("msg = %q, want it to name the url", r.Msg)
			}
		})
	}
}

func TestLogResult(t *testing.T) {
	t.Parallel()
	want := protocol.LogResult{FromLineNum: 1, ToLineNum: 3, LogContent: "a\nb\nc", IsEnd: false}
	tests := []struct {
		name     string
		reply    string
		wantCode int
		want     protocol.LogResult
	}{
		{"content (2.x)", `{"code":200,"content":{"fromLineNum":1,"toLineNum":3,"logContent":"a\nb\nc","isEnd":false}}`, 200, want},
		{"data (3.3+)", `{"code":200,"msg":null,"data":{"fromLineNum":1,"toLineNum":3,"logContent":"a\nb\nc","isEnd":false}}`, 200, want},
		{"missing file", `{"code":200,"content":{"fromLineNum":1,"toLineNum":0,"logContent":"readLog fail, logFile not exists","isEnd":true}}`, 200,
			protocol.LogResult{FromLineNum: 1, LogContent: protocol.MsgLogFileNotExists, IsEnd: true}},
		{"no content", `{"code":200}`, 200, protocol.LogResult{}},
		{"failure", `{"code":500,"msg":"The access token is wrong."}`, 500, protocol.LogResult{}},
		{"bad content", `{"code":200,"content":"not an object"}`, 500, protocol.LogResult{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, tt.reply)
			c := newClient(t, execclient.Options{})
			lr, r := c.Log(context.Background(), e.srv.URL+"/", protocol.LogParam{LogID: 1, FromLineNum: 1})
			if r.Code != tt.wantCode {
				t.Fatalf("code = %d (%s), want %d", r.Code, r.Msg, tt.wantCode)
			}
			if lr != tt.want {
				t.Errorf("LogResult = %+v, want %+v", lr, tt.want)
			}
		})
	}
}

func TestStatusNot200(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, execclient.Options{})
	r := c.Run(context.Background(), srv.URL, protocol.TriggerParam{JobID: 1})
	want := "xxl-job remoting fail, StatusCode(502) invalid. for url : " + srv.URL + "/run"
	if r.Code != 500 || r.Msg != want {
		t.Fatalf("got %d %q, want 500 %q", r.Code, r.Msg, want)
	}
}

func TestReplyTooLarge(t *testing.T) {
	t.Parallel()
	e := setup(t, `{"code":200,"msg":"`+strings.Repeat("x", 200)+`"}`)
	c := newClient(t, execclient.Options{MaxReplyBytes: 100})
	r := c.Kill(context.Background(), e.srv.URL, 1)
	if r.Code != 500 || !strings.Contains(r.Msg, "larger than 100 bytes") {
		t.Fatalf("got %d %q, want a size failure", r.Code, r.Msg)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	c := newClient(t, execclient.Options{ReadTimeout: 50 * time.Millisecond, ConnectTimeout: 50 * time.Millisecond})
	r := c.Run(context.Background(), srv.URL, protocol.TriggerParam{JobID: 1})
	if r.Code != 500 {
		t.Fatalf("code = %d, want 500", r.Code)
	}
	if !strings.HasPrefix(r.Msg, "xxl-job remoting error(") || !strings.HasSuffix(r.Msg, "for url : "+srv.URL+"/run") {
		t.Errorf("msg = %q, want xxl-job's remoting error naming the url", r.Msg)
	}
}

func TestContextCanceled(t *testing.T) {
	t.Parallel()
	e := setup(t, `{"code":200}`)
	c := newClient(t, execclient.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := c.Beat(ctx, e.srv.URL); r.Code != 500 || !strings.Contains(r.Msg, "context canceled") {
		t.Fatalf("got %d %q, want a 500 naming the cancellation", r.Code, r.Msg)
	}
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, execclient.Options{})
	r := c.Beat(context.Background(), addr)
	if r.Code != 500 {
		t.Fatalf("code = %d, want 500", r.Code)
	}
	if !strings.Contains(r.Msg, "refused") || !strings.HasSuffix(r.Msg, "for url : "+addr+"/beat") {
		t.Errorf("msg = %q", r.Msg)
	}
}

func TestBadAddress(t *testing.T) {
	t.Parallel()
	c := newClient(t, execclient.Options{})
	for _, addr := range []string{"", "  ", "://bad"} {
		if r := c.Beat(context.Background(), addr); r.Code != 500 || r.Msg == "" {
			t.Errorf("Beat(%q) = %d %q, want a 500 with a message", addr, r.Code, r.Msg)
		}
	}
}

func TestConnectionReuse(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	conns := map[string]bool{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		_, _ = io.WriteString(w, `{"code":200}`)
	}))
	srv.Start()
	t.Cleanup(srv.Close)
	c := newClient(t, execclient.Options{})
	for range 20 {
		if r := c.Beat(context.Background(), srv.URL); r.Code != 200 {
			t.Fatalf("beat: %d %s", r.Code, r.Msg)
		}
	}
	if len(conns) != 1 {
		t.Errorf("sequential calls used %d connections, want 1 (keep-alive)", len(conns))
	}
}

// A lane's worth of concurrent triggers to one executor, twice: with the
// pool sized for the concurrency, the second wave reuses every connection
// of the first (no dial, no TLS handshake, no TIME_WAIT per trigger).
func TestConcurrentWavesReuseThePool(t *testing.T) {
	t.Parallel()
	const n = 48
	var (
		mu      sync.Mutex
		conns   = map[string]bool{}
		arrived = make(chan struct{}, n)
		release atomic.Pointer[chan struct{}]
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		hold := *release.Load()
		arrived <- struct{}{}
		<-hold // hold every call until the whole wave is in flight
		_, _ = io.WriteString(w, `{"code":200}`)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, execclient.Options{MaxIdleConnsPerHost: n})
	wave := func() int {
		ch := make(chan struct{})
		release.Store(&ch)
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				if r := c.Run(context.Background(), srv.URL, protocol.TriggerParam{JobID: 1}); r.Code != 200 {
					t.Errorf("run: %d %s", r.Code, r.Msg)
				}
			})
		}
		for range n {
			<-arrived
		}
		close(ch)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return len(conns)
	}
	if first := wave(); first != n {
		t.Fatalf("first wave used %d connections, want %d", first, n)
	}
	if second := wave(); second != n {
		t.Errorf("second wave opened %d new connections, want 0 (pool of %d per host)", second-n, n)
	}
}

func TestNewRejectsNegativeOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []execclient.Options{
		{ConnectTimeout: -1}, {ReadTimeout: -1}, {MaxReplyBytes: -1}, {MaxLogReplyBytes: -1}, {MaxIdleConnsPerHost: -1},
	} {
		if _, err := execclient.New(o); err == nil {
			t.Errorf("New(%+v) accepted a negative option", o)
		}
	}
}

func TestEndpoint(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ addr, want string }{
		{"http://10.0.0.5:9999", "http://10.0.0.5:9999/run"},
		{"http://10.0.0.5:9999/", "http://10.0.0.5:9999/run"},
		{"https://fn.lambda-url.eu-west-1.on.aws/xjob", "https://fn.lambda-url.eu-west-1.on.aws/xjob/run"},
	} {
		if got := execclient.Endpoint(tt.addr, protocol.PathRun); got != tt.want {
			t.Errorf("Endpoint(%q) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

// TestRunReturnsAtEndOfReplyValue is the Lambda streaming executor's case:
// the reply is flushed at once and the body stays open while the job runs.
// Run must return with the reply before the server lets go of the body.
func TestRunReturnsAtEndOfReplyValue(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	handlerDone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/run" {
			_, _ = io.WriteString(w, `{"code":200}`)
			return
		}
		defer close(handlerDone)
		w.Header().Set("Content-Type", "text/html;charset=UTF-8")
		_, _ = io.WriteString(w, `{"code":200}`)
		w.(http.Flusher).Flush()
		// Wait for the release only (not for the client to hang up: Run
		// discards the open connection when it returns, which would end
		// the handler before the check below). The timeout keeps a Run
		// that waits for the whole body from hanging the test.
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		_, _ = io.WriteString(w, "\n")
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, execclient.Options{})

	r := c.Run(context.Background(), srv.URL, protocol.TriggerParam{JobID: 1, LogID: 1})
	select {
	case <-handlerDone:
		t.Fatal("the executor's handler finished before it was released")
	default:
	}
	if r.Code != protocol.SuccessCode || r.Msg != "" {
		t.Fatalf("Run = %d %q, want 200 while the body is still open", r.Code, r.Msg)
	}
	close(release)
	<-handlerDone
	// The open body's connection was discarded, not pooled half-read: the
	// next call gets a clean reply.
	if r := c.Beat(context.Background(), srv.URL); r.Code != protocol.SuccessCode {
		t.Fatalf("Beat after a streamed reply = %d %q", r.Code, r.Msg)
	}
}

func TestRepliesJudgedOnWholeBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		reply    string
		limit    int64
		wantCode int
		wantMsg  string
	}{
		{"trailing whitespace", "{\"code\":200}\r\n", 0, 200, ""},
		{"trailing garbage", `{"code":200}xyz`, 0, 500, "response content invalid (not an xxl-job reply, 15 bytes)"},
		{"second value", `{"code":200}{"code":500}`, 0, 500, "response content invalid"},
		{"value exactly at limit", `{"code":200}`, 12, 200, ""},
		{"value one byte over limit", `{"code":200} `, 11, 500, "larger than 11 bytes"},
		{"whitespace past limit is not read", `{"code":200}` + strings.Repeat(" ", 50), 20, 200, ""},
		{"garbage not quoted", `{"code":` + strings.Repeat("x", 300), 0, 500, "response content invalid (not an xxl-job reply, 308 bytes)."},
		{"metadata not echoed", "ami-id: ami-123\naccess-key: AKIA\n", 0, 500, "response content invalid (not an xxl-job reply, 33 bytes)."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, tt.reply)
			c := newClient(t, execclient.Options{MaxReplyBytes: tt.limit})
			r := c.Kill(context.Background(), e.srv.URL, 1)
			if r.Code != tt.wantCode || !strings.Contains(r.Msg, tt.wantMsg) {
				t.Fatalf("got %d %q, want %d containing %q", r.Code, r.Msg, tt.wantCode, tt.wantMsg)
			}
		})
	}
}

// An executor never redirects. Following a 3xx would send the TriggerParam
// and the access token to the Location's host (a 307 keeps method and
// body) and record that host's reply; the 3xx must be the answer.
func TestRedirectsNotFollowed(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			elsewhere := setup(t, `{"code":200,"msg":"secret page of another host"}`)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.srv.URL+"/steal", status)
			}))
			t.Cleanup(srv.Close)
			for _, opts := range []execclient.Options{
				{AccessToken: "tok-1234567890"},
				// A caller's client, with its own transport: on
				// http.DefaultTransport, another parallel test's Close
				// (CloseIdleConnections) could break this one's request.
				{AccessToken: "tok-1234567890", HTTPClient: &http.Client{Transport: &http.Transport{}}},
			} {
				c := newClient(t, opts)
				r := c.Run(context.Background(), srv.URL, protocol.TriggerParam{JobID: 1, ExecutorParams: "p"})
				want := fmt.Sprintf("xxl-job remoting fail, StatusCode(%d) invalid. for url : %s/run", status, srv.URL)
				if r.Code != 500 || r.Msg != want {
					t.Errorf("got %d %q, want 500 %q", r.Code, r.Msg, want)
				}
			}
			elsewhere.mu.Lock()
			defer elsewhere.mu.Unlock()
			if len(elsewhere.reqs) != 0 {
				t.Fatalf("the redirect target got %d requests (first with token %q)", len(elsewhere.reqs),
					elsewhere.reqs[0].Header.Get(protocol.AccessTokenHeader))
			}
		})
	}
}

// A failed lookup must not reveal which resolver the scheduler uses.
func TestDNSErrorHidesResolver(t *testing.T) {
	t.Parallel()
	c := newClient(t, execclient.Options{HTTPClient: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{
				Err: "no such host", Name: "nowhere.invalid", Server: "10.9.8.7:53", IsNotFound: true}}
		},
	}}})
	r := c.Beat(context.Background(), "http://nowhere.invalid:9999")
	if r.Code != 500 || strings.Contains(r.Msg, "10.9.8.7") || !strings.Contains(r.Msg, "no such host") {
		t.Fatalf("got %d %q, want a lookup failure without the resolver address", r.Code, r.Msg)
	}
}

// The client checks the IP it dials: an address resolving to loopback is
// refused under a policy without loopback, whatever its spelling, and the
// reply of a metadata-like service never reaches the message.
func TestEgressChecksDialledIP(t *testing.T) {
	t.Parallel()
	e := setup(t, "ami-id: ami-123\naccess-key: AKIA\n")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.srv.URL, "http://"))
	strict := newClient(t, execclient.Options{Egress: &egress.Policy{}})
	for _, addr := range []string{e.srv.URL, "http://localhost:" + port, "http://[::ffff:127.0.0.1]:" + port} {
		r := strict.Beat(context.Background(), addr)
		if r.Code != 500 || !strings.Contains(r.Msg, "not allowed") || strings.Contains(r.Msg, "ami-") {
			t.Errorf("%s: %d %q, want a refusal naming the policy", addr, r.Code, r.Msg)
		}
	}
	r := newClient(t, execclient.Options{}).Beat(context.Background(), e.srv.URL)
	if r.Code != 500 || strings.Contains(r.Msg, "ami-") || strings.Contains(r.Msg, "AKIA") {
		t.Errorf("loopback allowed: %d %q, want a fixed message", r.Code, r.Msg)
	}
}
