package execclient

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// deadlineListener hands http.Server connections whose first read can be
// made to behave like Go's ReadHeaderTimeout firing as a request arrives:
// it takes one byte of the request and then reports a timeout, so the
// server closes the connection with the rest of the request unread and the
// kernel answers the client with a reset. That is what an executor built
// on net/http does to a connection that carried no request for its header
// timeout.
type deadlineListener struct {
	net.Listener
	accepted atomic.Int64
	expire   func(n int64) bool // whether the n-th accepted connection (from 1) times out
}

func (l *deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if l.expire(l.accepted.Add(1)) {
		return &timedOutConn{Conn: c}, nil
	}
	return c, nil
}

type timedOutConn struct {
	net.Conn
	once sync.Once
}

func (c *timedOutConn) Read(p []byte) (int, error) {
	var fired bool
	c.once.Do(func() {
		var one [1]byte
		_, _ = io.ReadFull(c.Conn, one[:])
		fired = true
	})
	if fired {
		return 0, os.ErrDeadlineExceeded
	}
	return c.Conn.Read(p)
}

// runServer is an executor on net/http that records the log ids of the
// /run calls its handler served.
type runServer struct {
	addr string
	mu   sync.Mutex
	runs []int64
}

func startRunServer(t *testing.T, expire func(n int64) bool, handler func(w http.ResponseWriter, r *http.Request, logID int64)) *runServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &runServer{addr: "http://" + ln.Addr().String()}
	srv := &http.Server{ReadHeaderTimeout: time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var id int64
		if i := strings.Index(string(b), `"logId":`); i >= 0 {
			rest := string(b[i+len(`"logId":`):])
			for _, ch := range rest {
				if ch < '0' || ch > '9' {
					break
				}
				id = id*10 + int64(ch-'0')
			}
		}
		s.mu.Lock()
		s.runs = append(s.runs, id)
		s.mu.Unlock()
		handler(w, r, id)
	})}
	go func() { _ = srv.Serve(&deadlineListener{Listener: ln, expire: expire}) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *runServer) served() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.runs...)
}

func reply(w http.ResponseWriter, _ *http.Request, _ int64) { _, _ = io.WriteString(w, `{"code":200}`) }

// clientOn is a Client with a fake clock whose dials run through dial
// (wrapped by freshDial as New wraps the real dialer).
func clientOn(t *testing.T, fake *clock.Fake, dial dialFunc) *Client {
	t.Helper()
	c, err := New(Options{Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.http.Transport.(*http.Transport).DialContext = freshDial(dial, fake, FreshConnTimeout)
	return c
}

// A connection the client kept unused past FreshConnTimeout is one the
// executor may be closing: the client must not send on it. Here the first
// connection is held past the limit before its first request (the clock
// moves on right after its dial), and the executor times it out as the
// request arrives; the trigger must still reach the executor, once.
func TestStaleFreshConnectionNotUsed(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := startRunServer(t, func(n int64) bool { return n == 1 }, reply)
	var dials atomic.Int64
	var d net.Dialer
	c := clientOn(t, fake, func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err == nil && dials.Add(1) == 1 {
			fake.Advance(FreshConnTimeout)
		}
		return conn, err
	})

	r := c.Run(context.Background(), s.addr, protocol.TriggerParam{JobID: 1, LogID: 7})
	if r.Code != protocol.SuccessCode {
		t.Fatalf("Run = %+v, want success", r)
	}
	if got := s.served(); len(got) != 1 || got[0] != 7 {
		t.Fatalf("executor ran %v, want [7] once", got)
	}
	if n := dials.Load(); n != 2 {
		t.Fatalf("dials = %d, want 2 (the stale connection, then a new one)", n)
	}
}

// A request that was written is never sent again, whatever happens to its
// connection afterwards: here the executor reads it, runs it, and resets
// the connection instead of answering. Run reports the failure and the
// executor ran the trigger exactly once.
func TestWrittenRequestNotRetried(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := startRunServer(t, func(int64) bool { return false }, func(w http.ResponseWriter, _ *http.Request, _ int64) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_ = conn.(*net.TCPConn).SetLinger(0)
		_ = conn.Close()
	})
	var d net.Dialer
	c := clientOn(t, fake, d.DialContext)

	r := c.Run(context.Background(), s.addr, protocol.TriggerParam{JobID: 1, LogID: 8})
	if r.Code == protocol.SuccessCode || !strings.Contains(r.Msg, "connection reset by peer") {
		t.Fatalf("Run = %+v, want a remoting error naming the reset", r)
	}
	if got := s.served(); len(got) != 1 {
		t.Fatalf("executor ran %v, want once", got)
	}
}

// freshConn's own rule: a write before the limit goes out and makes the
// connection used for good (expiry no longer closes it); the first write
// at the limit, or after expiry closed it, writes nothing.
func TestFreshConn(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	received := make(chan string, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				b, _ := io.ReadAll(c)
				received <- string(b)
				_ = c.Close()
			}()
		}
	}()
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	var d net.Dialer
	dial := freshDial(d.DialContext, fake, FreshConnTimeout)
	open := func() *freshConn {
		t.Helper()
		c, err := dial(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c.(*freshConn)
	}

	used := open()
	if _, err := used.Write([]byte("a")); err != nil {
		t.Fatalf("write before the limit: %v", err)
	}
	fake.Advance(FreshConnTimeout)
	used.expire()
	if _, err := used.Write([]byte("b")); err != nil || used.sent() != 2 {
		t.Fatalf("used connection: write err %v, sent %d", err, used.sent())
	}
	_ = used.Close()
	if got := <-received; got != "ab" {
		t.Fatalf("used connection delivered %q", got)
	}

	late := open()
	fake.Advance(FreshConnTimeout)
	if n, err := late.Write([]byte("c")); n != 0 || !errors.Is(err, errStaleConn) {
		t.Fatalf("write at the limit = %d, %v; want 0, errStaleConn", n, err)
	}
	if got := <-received; got != "" {
		t.Fatalf("stale connection delivered %q", got)
	}

	expired := open()
	expired.expire()
	if n, err := expired.Write([]byte("d")); n != 0 || !errors.Is(err, errStaleConn) {
		t.Fatalf("write after expiry = %d, %v; want 0, errStaleConn", n, err)
	}
	if got := <-received; got != "" {
		t.Fatalf("expired connection delivered %q", got)
	}
}
