package execclient

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xjobdev/xjob/pkg/clock"
)

// FreshConnTimeout is how long a connection that has not yet carried a
// request may wait in the pool. An executor built on Go's net/http with a
// ReadHeaderTimeout (the xjob SDK: 10 s) closes a connection on which no
// request has arrived that long after accepting it, whatever its
// IdleTimeout; a request that reaches it as the deadline passes is never
// read, and the executor's kernel answers the unread bytes with a reset.
// The transport pools such connections when a burst dials for a request
// that an earlier connection then serves, and may keep them for
// DefaultIdleConnTimeout. Past FreshConnTimeout they are closed unused
// instead, well inside any header timeout of a few seconds, while a
// connection dialled in one second's burst still serves the next second's.
// An https connection has written its TLS handshake by the time it is
// pooled, so this applies to plain http executors (xxl-job's default).
const FreshConnTimeout = 2 * time.Second

// errStaleConn is what a fresh connection's first write returns once the
// connection is older than the fresh limit. Nothing was written on the
// connection, so the executor cannot have seen the request: sending it
// again on another connection cannot run a job twice.
var errStaleConn = errors.New("unused pooled connection expired before its first request")

// dialFunc is net.Dialer.DialContext's shape.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// freshDial wraps dial so that every connection it returns refuses its
// first write once it is older than limit (see FreshConnTimeout), and
// closes itself when it reaches limit still unused, so that the transport
// drops it from the pool before a request can pick it.
func freshDial(dial dialFunc, clk clock.Clock, limit time.Duration) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		// Aged from the start of the dial, which is before the executor
		// accepts and starts its own deadline.
		expires := clk.Now().Add(limit)
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		fc := &freshConn{Conn: c, clk: clk, expires: expires}
		// The timer only tidies the pool, on the process's own timers;
		// the first write's check against clk is what decides.
		fc.timer = time.AfterFunc(limit, fc.expire)
		return fc, nil
	}
}

// freshConn is a connection that has not written yet, and until then
// expires as FreshConnTimeout says. Its first write decides, under mu,
// between sending (the connection is used for good) and refusing
// (nothing is written and the connection is closed); the expiry timer
// closes it only while it is still unused. Once used it is the plain
// connection.
//
//	fresh ──first write before expires──▶ used (plain connection)
//	  │
//	  ├──first write at or after expires──▶ closed, write refused (errStaleConn)
//	  └──timer at expires, no write yet───▶ closed (pool drops it)
type freshConn struct {
	net.Conn
	clk     clock.Clock
	expires time.Time
	timer   *time.Timer

	mu     sync.Mutex
	used   bool
	closed bool // closed unused by expiry

	// written counts the bytes the kernel took, so that a failed call
	// can tell whether any of its request left the process.
	written atomic.Int64
}

func (c *freshConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if !c.used {
		if c.closed || !c.clk.Now().Before(c.expires) {
			c.closed = true
			c.mu.Unlock()
			_ = c.Conn.Close()
			return 0, errStaleConn
		}
		c.used = true
		c.timer.Stop()
	}
	c.mu.Unlock()
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// sent is the number of bytes written on the connection so far.
func (c *freshConn) sent() int64 { return c.written.Load() }

// expire closes the connection if it has still not written.
func (c *freshConn) expire() {
	c.mu.Lock()
	stale := !c.used && !c.closed
	if stale {
		c.closed = true
	}
	c.mu.Unlock()
	if stale {
		_ = c.Conn.Close()
	}
}

func (c *freshConn) Close() error {
	c.timer.Stop()
	return c.Conn.Close()
}
