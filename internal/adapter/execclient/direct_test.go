package execclient_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// directEnv makes this test binary build every client of newClient with
// Options.Direct (see TestDirectBattery).
const directEnv = "XJOB_EXECCLIENT_TEST_DIRECT"

var directRun = os.Getenv(directEnv) == "1"

// The direct path must answer every call as the net/http path does:
// the package's client tests run again, in a child of this test binary,
// with Options.Direct on every client they build.
func TestDirectBattery(t *testing.T) {
	t.Parallel()
	if directRun {
		return // the child's run selects other tests; never start another child
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^(TestCallsWireFormat|TestReplies|TestLogResult|TestStatusNot200|TestReplyTooLarge|TestTimeout|TestContextCanceled|TestConnectionRefused|TestBadAddress|TestConnectionReuse|TestConcurrentWavesReuseThePool|TestRunReturnsAtEndOfReplyValue|TestRepliesJudgedOnWholeBody|TestRedirectsNotFollowed|TestDNSErrorHidesResolver|TestEgressChecksDialledIP|TestGenerations|TestGenerationsRefusals)$", "-test.v")
	cmd.Env = append(os.Environ(), directEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client tests with Options.Direct: %v\n%s", err, out)
	}
}

// rawExecutor answers each request on a connection with reply, then
// closes the connection after closeAfter requests (0: never). It records
// every request head it read.
func rawExecutor(t *testing.T, reply string, closeAfter int) (addr string, heads func() []string, conns, closed func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var (
		mu       sync.Mutex
		seen     []string
		accepted int
		shut     int
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted++
			mu.Unlock()
			go func() {
				defer func() {
					_ = c.Close()
					mu.Lock()
					shut++
					mu.Unlock()
				}()
				br := bufio.NewReader(c)
				for n := 1; ; n++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					var head strings.Builder
					_ = req.Header.Write(&head)
					mu.Lock()
					seen = append(seen, req.Method+" "+req.RequestURI+"\n"+head.String())
					mu.Unlock()
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(reply), reply)
					if n == closeAfter {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), seen...)
		}, func() int {
			mu.Lock()
			defer mu.Unlock()
			return accepted
		}, func() int {
			mu.Lock()
			defer mu.Unlock()
			return shut
		}
}

func TestDirect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		closeAfter int
		calls      int
		wantConns  int
	}{
		{"keep-alive reuses one connection", 0, 5, 1},
		// The executor closes each connection after its reply: the
		// pooled connection is found closed before the next request is
		// written on it, and every call still succeeds.
		{"a connection the executor closed is not used", 1, 5, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr, heads, conns, closed := rawExecutor(t, `{"code":200}`, tc.closeAfter)
			c, err := execclient.New(execclient.Options{Direct: true, AccessToken: "tok-0123456789"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			for i := range tc.calls {
				if i > 0 && tc.closeAfter > 0 {
					// Let the executor's FIN reach the client's socket,
					// as it does between two triggers.
					deadline := time.Now().Add(5 * time.Second)
					for (closed() < i || !closeWait(t, addr)) && time.Now().Before(deadline) {
						runtime.Gosched()
					}
				}
				if r := c.Run(context.Background(), addr, protocol.TriggerParam{JobID: int64(i + 1)}); r.Code != 200 {
					t.Fatalf("call %d: %d %s", i, r.Code, r.Msg)
				}
			}
			if got := conns(); got != tc.wantConns {
				t.Errorf("connections = %d, want %d", got, tc.wantConns)
			}
			h := heads()
			if len(h) != tc.calls {
				t.Fatalf("executor read %d requests, want %d", len(h), tc.calls)
			}
			for _, want := range []string{"POST /run\n", "Content-Type: application/json;charset=UTF-8", "Xxl-Job-Access-Token: tok-0123456789"} {
				if !strings.Contains(h[0], want) {
					t.Errorf("request head %q lacks %q", h[0], want)
				}
			}
			// net/http's transport asks for gzip; the direct path does
			// not, which shows the call took it.
			if strings.Contains(h[0], "Accept-Encoding") {
				t.Errorf("request head %q went through net/http", h[0])
			}
		})
	}
}

// BenchmarkRun is one /run to a loopback executor on keep-alive
// connections, through net/http's transport and through the direct path,
// in one run so that the two compare. The executor's own work is in both.
func BenchmarkRun(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"code":200}`)
	}))
	b.Cleanup(srv.Close)
	p := protocol.TriggerParam{JobID: 7, ExecutorHandler: "demoJobHandler", GlueType: "BEAN", LogID: 123456, LogDateTime: 1764388800000, BroadcastTotal: 1}
	// Local mode calls on its lanes' context, which shutdown cancels, with
	// the group's appname: "direct" calls so; "direct-background" on a
	// context that never ends (nothing to watch during the call).
	for _, tc := range []struct {
		name       string
		direct     bool
		background bool
	}{{"net-http", false, false}, {"direct", true, false}, {"direct-background", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := execclient.New(execclient.Options{Direct: tc.direct, AccessToken: "tok-0123456789"})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(c.Close)
			ctx, cancel := context.WithCancel(context.Background())
			b.Cleanup(cancel)
			ctx = protocol.WithAppName(ctx, "demo-app")
			if tc.background {
				ctx = context.Background()
			}
			b.ReportAllocs()
			for b.Loop() {
				if r := c.Run(ctx, srv.URL, p); r.Code != 200 {
					b.Fatalf("run: %d %s", r.Code, r.Msg)
				}
			}
		})
	}
}

// A context that ends while the executor holds its reply ends the call
// with the context's error, and the connection is not used again: the
// next call still succeeds.
func TestDirectContextEndsDuringCall(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	var held atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if held.CompareAndSwap(false, true) {
			arrived <- struct{}{}
			<-r.Context().Done() // the client gives up and closes
			return
		}
		_, _ = io.WriteString(w, `{"code":200}`)
	}))
	t.Cleanup(srv.Close)
	c, err := execclient.New(execclient.Options{Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	if r := c.Run(ctx, srv.URL, protocol.TriggerParam{JobID: 1}); r.Code != 500 || !strings.Contains(r.Msg, "context canceled") {
		t.Fatalf("got %d %q, want a 500 naming the cancellation", r.Code, r.Msg)
	}
	if r := c.Run(context.Background(), srv.URL, protocol.TriggerParam{JobID: 2}); r.Code != 200 {
		t.Fatalf("next call: %d %s", r.Code, r.Msg)
	}
}

// closeWait reports whether a client socket connected to addr has
// received the executor's FIN (TCP state CLOSE_WAIT in /proc/net/tcp), or
// true where that file cannot be read: the executor's close() returns
// before the kernel has always delivered its FIN on loopback.
func closeWait(t *testing.T, addr string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return true
	}
	_, port, err := net.SplitHostPort(strings.TrimPrefix(addr, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	// Columns: sl local_address rem_address st ...; addresses are
	// HEXIP:HEXPORT, state 08 is CLOSE_WAIT.
	want := fmt.Sprintf(":%04X", p)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[2], want) && f[3] == "08" {
			return true
		}
	}
	return false
}

// A pooled connection keeps watching the context of its last call: calls
// on that context reuse it, a call on another context moves the watch,
// and a connection whose context ended while it sat in the pool is not
// used again (its watch may still be moving its deadline), so the next
// call dials and succeeds.
func TestDirectWatchOutlivesCall(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"code":200}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := execclient.New(execclient.Options{Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	run := func(ctx context.Context) {
		t.Helper()
		if r := c.Run(ctx, srv.URL, protocol.TriggerParam{JobID: 1}); r.Code != 200 {
			t.Fatalf("run: %d %s", r.Code, r.Msg)
		}
	}
	first, cancelFirst := context.WithCancel(context.Background())
	for range 3 {
		run(first)
	}
	second, cancelSecond := context.WithCancel(context.Background())
	defer cancelSecond()
	run(protocol.WithAppName(second, "demo-app")) // the watch moves to second
	run(context.Background())                     // and is stopped
	run(second)
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for calls on live contexts, want 1", n)
	}
	cancelSecond() // while the connection sits in the pool, watched by second
	run(first)
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want a second one after the watched context ended", n)
	}
	cancelFirst()
	run(context.Background())
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want a third one after the watched context ended", n)
	}
}
