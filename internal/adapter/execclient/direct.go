package execclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// direct is the client's own HTTP/1.1 path for plain http executors
// (Options.Direct). net/http's transport hands every request between
// three goroutines (the caller, the connection's write loop and its read
// loop) and builds a Request, a header map, a context and a trace for it;
// at 10,000 triggers a second that was about two fifths of xjob local's
// CPU. Here the calling goroutine writes the request in one write and
// reads the reply on the same connection, from a pool of keep-alive
// connections per executor.
//
// What it keeps of the transport's behaviour: the same request line,
// headers and body; the egress policy on the address dialled; the connect
// and read timeouts and the caller's context; a connection is reused only
// when its reply was read to the end, the executor did not ask to close
// it, and it has nothing left unread; idle connections past
// DefaultIdleConnTimeout are closed, and a pooled connection the executor
// has closed is found (a non-blocking peek, see alive) and dropped before
// a request is written on it. A connection is dialled for the request
// that needs it and used at once, so no connection waits unused in the
// pool (FreshConnTimeout's case cannot arise).
//
// What it does not do, and leaves to net/http: https, addresses with user
// information or non-ASCII hosts, and header values net/http would refuse
// (call reports those as not handled).
type direct struct {
	dial    dialFunc
	clk     clock.Clock
	maxIdle int

	mu        sync.Mutex
	idle      map[string][]*directConn // by host:port, most recently used last
	targets   map[string]*target       // parsed URLs
	lastSweep time.Time
}

// target is a parsed executor URL.
type target struct {
	hostport string // dialled
	head     []byte // "POST <uri> HTTP/1.1\r\nHost: <host>\r\n"
}

// directConn is a pooled connection with its reader.
type directConn struct {
	conn   net.Conn
	src    connReader
	br     *bufio.Reader
	buf    []byte // the request, reused
	body   bytes.Reader
	idleAt time.Time // when it went back to the pool
	peek   *peeker   // looks for the executor's close while pooled

	// watched is the Done channel of the context whose end moves the
	// connection's deadline to the past (context.AfterFunc), and unwatch
	// stops that; nil when none. The watch outlives the call that set it:
	// the next call on the same context (local mode's lanes call on one)
	// keeps it, which saves the registration's three allocations and its
	// two turns of the context's lock a call.
	watched <-chan struct{}
	unwatch func() bool
}

// watch makes the end of ctx stop the connection's current call, unless
// it already does (see watched).
func (pc *directConn) watch(ctx context.Context) {
	done := ctx.Done()
	if done == nil || done == pc.watched {
		return
	}
	pc.watched = done
	pc.unwatch = context.AfterFunc(ctx, func() { _ = pc.conn.SetDeadline(time.Unix(1, 0)) })
}

// rewatch readies a pooled connection for a call on a context whose Done
// channel is done: a watch on another context is stopped. It reports false
// when that watch had fired (its context ended): it may still be moving
// the deadline, so the connection must not be used.
func (pc *directConn) rewatch(done <-chan struct{}) bool {
	if pc.watched == nil || pc.watched == done {
		return true
	}
	stopped := pc.unwatch()
	pc.watched, pc.unwatch = nil, nil
	return stopped
}

// close closes the connection and stops its watch (a context that lives
// on, as the lanes' does, would otherwise keep every closed connection).
func (pc *directConn) close() {
	if pc.unwatch != nil {
		pc.unwatch()
		pc.watched, pc.unwatch = nil, nil
	}
	_ = pc.conn.Close()
}

// connReader is the bufio.Reader's source: it caps what one call may read
// (headers and reply), and can be told to refuse to block, which is how a
// finished call learns whether the reply's end has already arrived.
type connReader struct {
	conn    net.Conn
	left    int64
	noBlock bool
}

var (
	errWouldBlock    = errors.New("reply not complete")
	errReplyTooLarge = errors.New("reply headers too large")
)

func (r *connReader) Read(p []byte) (int, error) {
	if r.noBlock {
		return 0, errWouldBlock
	}
	if r.left <= 0 {
		return 0, errReplyTooLarge
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.conn.Read(p)
	r.left -= int64(n)
	return n, err
}

// maxReplyHead bounds the status line and headers of a reply, as net/http's
// default MaxResponseHeaderBytes does (with room to spare).
const maxReplyHead = 1 << 20

// directSweepEvery is how often returning a connection also closes the
// pool's connections idle past DefaultIdleConnTimeout.
const directSweepEvery = 30 * time.Second

func newDirect(dial dialFunc, clk clock.Clock, maxIdle int) *direct {
	return &direct{dial: dial, clk: clk, maxIdle: maxIdle, idle: map[string][]*directConn{}, targets: map[string]*target{}}
}

// target parses u once; nil when the direct path does not handle it.
func (d *direct) target(u string) *target {
	d.mu.Lock()
	t, ok := d.targets[u]
	d.mu.Unlock()
	if ok {
		return t
	}
	t = parseTarget(u)
	d.mu.Lock()
	if len(d.targets) >= maxRemembered {
		d.targets = map[string]*target{}
	}
	d.targets[u] = t
	d.mu.Unlock()
	return t
}

func parseTarget(u string) *target {
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme != "http" || pu.User != nil || pu.Host == "" || pu.Opaque != "" {
		return nil
	}
	host := pu.Host
	for i := 0; i < len(host); i++ {
		if host[i] <= ' ' || host[i] >= 0x7f {
			return nil // net/http's IDNA and validation
		}
	}
	hostport := host
	if pu.Port() == "" {
		h := pu.Hostname()
		hostport = net.JoinHostPort(h, "80")
		if len(host) > 0 && host[len(host)-1] == ':' {
			host = host[:len(host)-1] // as net/http: an empty port is dropped
		}
	}
	uri := pu.RequestURI()
	head := make([]byte, 0, len(uri)+len(host)+32)
	head = append(head, "POST "...)
	head = append(head, uri...)
	head = append(head, " HTTP/1.1\r\nHost: "...)
	head = append(head, host...)
	head = append(head, "\r\n"...)
	return &target{hostport: hostport, head: head}
}

// validValue reports whether v may be sent as a header value: what
// net/http accepts (no control characters other than tab).
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// call is Client.call on the direct path. handled is false when the
// direct path does not take u (the caller then uses net/http).
func (d *direct) call(ctx context.Context, u string, payload []byte, token, app string, connect, read time.Duration, limit int64) (r protocol.ReturnT, unsent, handled bool) {
	t := d.target(u)
	if t == nil || !validValue(token) || !validValue(app) {
		return r, false, false
	}
	if err := ctx.Err(); err != nil {
		return remotingError(err, u), false, true
	}
	start := time.Now()
	deadline := start.Add(connect + read)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	pc, err := d.get(ctx, t.hostport)
	if err != nil {
		return remotingError(d.cause(ctx, err), u), false, true
	}
	if rd := time.Now().Add(read); rd.Before(deadline) {
		deadline = rd
	}
	if err := pc.conn.SetDeadline(deadline); err != nil {
		pc.close()
		return remotingError(err, u), true, true
	}
	// The caller's context ends the call by moving the deadline to the
	// past. A watch kept from an earlier call may have done so before the
	// deadline above was set: the context's error, set before its watches
	// run, is looked at after it.
	pc.watch(ctx)
	if err := ctx.Err(); err != nil {
		pc.close()
		return remotingError(err, u), false, true
	}

	b := append(pc.buf[:0], t.head...)
	b = append(b, "User-Agent: Go-http-client/1.1\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(payload)), 10)
	b = append(b, "\r\nAccept-Charset: "+acceptCharset+"\r\nContent-Type: "+contentType+"\r\n"...)
	if token != "" {
		b = append(b, protocol.AccessTokenHeader+": "...)
		b = append(b, token...)
		b = append(b, "\r\n"...)
	}
	if app != "" {
		b = append(b, protocol.AppNameHeader+": "...)
		b = append(b, app...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	b = append(b, payload...)
	pc.buf = b
	n, err := pc.conn.Write(b)
	if err != nil {
		pc.close()
		return remotingError(d.cause(ctx, err), u), n == 0, true
	}

	pc.src.left = maxReplyHead + limit + 4<<10
	if _, err := pc.br.Peek(1); err != nil {
		pc.close()
		return remotingError(d.cause(ctx, err), u), false, true
	}
	if r, ok := d.quick(ctx, pc, t.hostport, limit, u); ok {
		return r, false, true
	}
	resp, err := readResponse(pc.br)
	if err != nil {
		pc.close()
		return remotingError(d.cause(ctx, err), u), false, true
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		pc.close()
		return protocol.Fail(fmt.Sprintf(
			"xxl-job remoting fail, StatusCode(%d) invalid. for url : %s", resp.StatusCode, u)), false, true
	}
	r = readReply(bodyErr{resp.Body, d, ctx}, limit, u)
	if ctx.Err() != nil {
		// The context ended during the call: the connection's deadline
		// is in the past, and it must not go back to the pool.
		pc.close()
		return r, false, true
	}
	d.done(pc, t.hostport, resp)
	return r, false, true
}

// quick answers the call from a reply whose head and body have both
// arrived and whose head quickHead reads; ok is false, with nothing
// consumed, for any other.
func (d *direct) quick(ctx context.Context, pc *directConn, hostport string, limit int64, u string) (protocol.ReturnT, bool) {
	buf, _ := pc.br.Peek(pc.br.Buffered())
	start, n, closeConn, ok := quickHead(buf)
	if !ok || start+n > len(buf) {
		return protocol.ReturnT{}, false
	}
	var r protocol.ReturnT
	if code, ok := codeOnly(buf[start : start+n]); ok && int64(n) <= limit {
		// readReply's fast path, without the copy into its buffer (an
		// allocation a call: the buffer escapes through the Read).
		r = protocol.ReturnT{Code: code}
	} else {
		pc.body.Reset(buf[start : start+n])
		r = readReply(&pc.body, limit, u)
		pc.body.Reset(nil) // the bufio buffer is the connection's, not the reply's
	}
	_, _ = pc.br.Discard(start + n)
	if ctx.Err() != nil || closeConn || pc.br.Buffered() > 0 {
		// The context ended during the call (the deadline is in the
		// past), the executor closes the connection, or sent more than
		// its reply.
		pc.close()
		return r, true
	}
	d.put(pc, hostport)
	return r, true
}

// bodyErr names the caller's context as the cause of a read that failed
// because the context ended (the deadline set by context.AfterFunc).
type bodyErr struct {
	r   io.Reader
	d   *direct
	ctx context.Context
}

func (b bodyErr) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = b.d.cause(b.ctx, err)
	}
	return n, err
}

// cause is err, or the context's error when the context has ended (the
// connection's deadline was moved to the past to stop the call).
func (d *direct) cause(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// readResponse reads a reply's head, skipping 1xx interim replies as
// net/http does.
func readResponse(br *bufio.Reader) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		return resp, nil
	}
}

// done pools pc when its reply has been read to the end without blocking
// and nothing follows it, and closes it otherwise (a streaming reply
// still open, a reply the executor closes, stray bytes).
func (d *direct) done(pc *directConn, hostport string, resp *http.Response) {
	reusable := !resp.Close
	if reusable {
		pc.src.noBlock = true
		var one [1]byte
		n, err := resp.Body.Read(one[:])
		pc.src.noBlock = false
		reusable = n == 0 && err == io.EOF && pc.br.Buffered() == 0
	}
	if !reusable {
		pc.close()
		return
	}
	d.put(pc, hostport)
}

// get takes the most recently used live connection to hostport from the
// pool, or dials one.
func (d *direct) get(ctx context.Context, hostport string) (*directConn, error) {
	now := d.clk.Now()
	for {
		d.mu.Lock()
		list := d.idle[hostport]
		if len(list) == 0 {
			d.mu.Unlock()
			break
		}
		pc := list[len(list)-1]
		list[len(list)-1] = nil
		d.idle[hostport] = list[:len(list)-1]
		d.mu.Unlock()
		if now.Sub(pc.idleAt) < DefaultIdleConnTimeout && pc.rewatch(ctx.Done()) && pc.peek.alive() {
			return pc, nil
		}
		pc.close()
	}
	c, err := d.dial(ctx, "tcp", hostport)
	if err != nil {
		return nil, err
	}
	pc := &directConn{conn: c, src: connReader{conn: c}, peek: newPeeker(c)}
	pc.br = bufio.NewReaderSize(&pc.src, 4<<10)
	return pc, nil
}

// put returns pc to the pool, or closes it when the pool is full. Now and
// then it also closes the connections left idle too long.
func (d *direct) put(pc *directConn, hostport string) {
	now := d.clk.Now()
	pc.idleAt = now
	var stale []*directConn
	d.mu.Lock()
	list := d.idle[hostport]
	keep := len(list) < d.maxIdle
	if keep {
		d.idle[hostport] = append(list, pc)
	}
	if now.Sub(d.lastSweep) >= directSweepEvery {
		d.lastSweep = now
		for hp, l := range d.idle {
			fresh := l[:0]
			for _, c := range l {
				if now.Sub(c.idleAt) >= DefaultIdleConnTimeout {
					stale = append(stale, c)
					continue
				}
				fresh = append(fresh, c)
			}
			clear(l[len(fresh):])
			if len(fresh) == 0 {
				delete(d.idle, hp)
			} else {
				d.idle[hp] = fresh
			}
		}
	}
	d.mu.Unlock()
	if !keep {
		pc.close()
	}
	for _, c := range stale {
		c.close()
	}
}

// closeIdle closes every pooled connection.
func (d *direct) closeIdle() {
	d.mu.Lock()
	idle := d.idle
	d.idle = map[string][]*directConn{}
	d.mu.Unlock()
	for _, l := range idle {
		for _, c := range l {
			c.close()
		}
	}
}
