// Package execclient is the scheduling center's HTTP client for executors:
// it POSTs xxl-job requests to an executor's /run, /beat, /idleBeat, /kill
// and /log and reads back the ReturnT envelope.
//
// It reproduces xxl-job's XxlJobRemotingUtil.postBody so that any
// xxl-job-compatible executor (Java, Go, Node, the xjob SDK) accepts our
// calls: always POST, a JSON body, the same Content-Type and Accept-Charset
// headers, the XXL-JOB-ACCESS-TOKEN header only when a token is configured,
// XXL-JOB-APPNAME when the caller names the group (protocol.WithAppName;
// xxl-job 3.5 requires it), /trigger instead of /run for 3.5 executors,
// and connect and read timeouts of 3 s by default. Like xxl-job, a transport
// failure is never a Go error: it comes back as a failing ReturnT (code 500)
// whose message names the URL, so the dispatcher records it in the trigger
// log exactly as it records an executor's own refusal.
//
// Connections are kept alive and pooled per executor. A call is never
// sent twice unless none of it was written the first time (see postOnce),
// and a pooled connection that has not carried a request yet is dropped
// before an executor's header timeout can close it under a request (see
// FreshConnTimeout).
//
// Unlike xxl-job, which reads a reply to the end of the body, the client
// stops at the end of the reply's JSON value. That is what lets a Lambda
// executor with a streaming function URL answer /run at once and keep the
// invocation running the job: the dispatcher is not held for the job's
// duration, and a long job is not recorded as a timed-out trigger.
package execclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xjobdev/xjob/internal/egress"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

var _ driver.ExecutorClient = (*Client)(nil)

// Defaults of Options, as xxl-job 2.3/2.4 (3 s connect, 3 s read) plus our
// own limits on reply sizes and pooling.
const (
	DefaultConnectTimeout      = 3 * time.Second
	DefaultReadTimeout         = 3 * time.Second
	DefaultMaxReplyBytes       = 1 << 20  // 1 MiB for run/beat/idleBeat/kill
	DefaultMaxLogReplyBytes    = 16 << 20 // 16 MiB: /log returns the whole tail of a file
	DefaultMaxIdleConnsPerHost = 16
	DefaultMaxIdleConns        = 1024
	// DefaultIdleConnTimeout is below the 90 s after which xxl-job's
	// executor (Netty EmbedServer) and the SDK close idle connections, so
	// we rarely pick a pooled connection the executor is just closing. A
	// connection that has not carried a request yet is closed much
	// sooner (FreshConnTimeout).
	DefaultIdleConnTimeout = 60 * time.Second
)

// Request headers xxl-job sends on every call.
const (
	contentType   = "application/json;charset=UTF-8"
	acceptCharset = "application/json;charset=UTF-8"
)

// Options configures a Client. The zero value is xxl-job's behaviour with
// no access token.
type Options struct {
	// AccessToken is sent as XXL-JOB-ACCESS-TOKEN when it is not blank.
	AccessToken string
	// AccessTokens, when set, replaces AccessToken and is asked on every
	// call: the first token is sent, and an executor that answers "wrong
	// token" is asked again with the next one. During a rotation, when the
	// list holds the old and the new token, executors still on either
	// one are reached (an executor refuses a wrong token before it runs
	// anything, so the repeat cannot run a job twice).
	AccessTokens func() []string
	// ConnectTimeout bounds establishing a connection (TCP and TLS).
	// Zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// ReadTimeout bounds waiting for the reply once the request is sent.
	// Zero means DefaultReadTimeout. A whole call never takes longer than
	// ConnectTimeout + ReadTimeout.
	ReadTimeout time.Duration
	// MaxReplyBytes caps the body read from run, beat, idleBeat and kill.
	// Zero means DefaultMaxReplyBytes.
	MaxReplyBytes int64
	// MaxLogReplyBytes caps the body read from /log. Zero means
	// DefaultMaxLogReplyBytes.
	MaxLogReplyBytes int64
	// MaxIdleConnsPerHost is how many keep-alive connections are kept per
	// executor. Zero means DefaultMaxIdleConnsPerHost (Go's own default of
	// 2 is too few for a busy executor). Size it to the concurrent calls
	// the caller makes (a local dispatch lane's workers): every call beyond
	// it dials a connection that is closed again when it returns to the
	// pool, so a burst to one executor would pay a TCP (and TLS) handshake
	// and leave a TIME_WAIT socket per trigger.
	MaxIdleConnsPerHost int
	// Egress decides which IPs the client may connect to, checked on the
	// address actually dialled. Nil refuses the built-in ranges
	// (link-local, cloud metadata, …) and allows loopback, as xjob local
	// needs; a deployment sets its own (loopback refused on AWS).
	Egress *egress.Policy
	// InsecureSkipVerify disables TLS certificate checks for https
	// executors. xxl-job trusts every certificate; we verify by default
	// and make trusting everything an explicit choice.
	InsecureSkipVerify bool
	// Clock tells a pooled connection's age (see FreshConnTimeout). Nil
	// means the real clock.
	Clock clock.Clock
	// Direct sends calls to plain http executors on the client's own
	// HTTP/1.1 connections instead of net/http's transport (see direct):
	// the same requests and replies for a fraction of the CPU. https
	// executors, and everything when HTTPClient is set, still go through
	// net/http.
	Direct bool
	// HTTPClient replaces the client built from the options above (tests,
	// custom transports; Egress and FreshConnTimeout are then the
	// transport's to apply).
	// Timeouts still apply per call through the request context. The
	// client is copied and its CheckRedirect replaced: redirects are never
	// followed.
	HTTPClient *http.Client
}

func (o Options) withDefaults() (Options, error) {
	if o.ConnectTimeout < 0 || o.ReadTimeout < 0 {
		return o, errors.New("execclient options: timeouts must not be negative")
	}
	if o.MaxReplyBytes < 0 || o.MaxLogReplyBytes < 0 || o.MaxIdleConnsPerHost < 0 {
		return o, errors.New("execclient options: limits must not be negative")
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.MaxReplyBytes == 0 {
		o.MaxReplyBytes = DefaultMaxReplyBytes
	}
	if o.MaxLogReplyBytes == 0 {
		o.MaxLogReplyBytes = DefaultMaxLogReplyBytes
	}
	if o.MaxIdleConnsPerHost == 0 {
		o.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	}
	o.Clock = fallback.Clock(o.Clock)
	return o, nil
}

// Client calls executors over HTTP. It holds one pooled http.Client for
// every executor, so build one Client per process and share it; it is safe
// for concurrent use.
type Client struct {
	opts  Options
	token string
	http  *http.Client
	// triggerAt holds the addresses found to take triggers at /trigger
	// (xxl-job 3.5) rather than /run; see Run.
	mu        sync.Mutex
	triggerAt map[string]bool
	// urls holds Endpoint(address, path) by both (under mu): two string
	// allocations a call, made once per executor and path instead.
	urls map[endpointKey]string
	// direct is the own HTTP/1.1 path (Options.Direct), nil without it.
	direct *direct
}

// maxRemembered bounds triggerAt; past it the map starts over (xxl-job 3.5
// clears its client cache past 1000 entries the same way), and forgotten
// addresses are found again on their next trigger.
const maxRemembered = 10000

// New returns a Client, or an error when an option is out of range.
func New(opts Options) (*Client, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: newTransport(o)}
	if o.HTTPClient != nil {
		copied := *o.HTTPClient
		hc = &copied
	}
	hc.CheckRedirect = noRedirects
	c := &Client{opts: o, token: strings.TrimSpace(o.AccessToken), http: hc}
	if o.Direct && o.HTTPClient == nil {
		c.direct = newDirect(egressPolicy(o).Dialer(o.ConnectTimeout).DialContext, o.Clock, o.MaxIdleConnsPerHost)
	}
	return c, nil
}

// noRedirects makes a 3xx the executor's final answer. Executors never
// redirect; following one would re-send the TriggerParam and the access
// token to wherever the Location points (a 307 keeps method and body),
// and put that host's reply into the trigger log.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// egressPolicy is the policy the options ask for.
func egressPolicy(o Options) egress.Policy {
	if o.Egress != nil {
		return *o.Egress
	}
	return egress.Policy{AllowLoopback: true}
}

func newTransport(o Options) *http.Transport {
	dialer := egressPolicy(o).Dialer(o.ConnectTimeout)
	t := &http.Transport{
		// No proxy, whatever HTTP_PROXY / HTTPS_PROXY say: through a
		// proxy the dial (and so the egress check) would reach the
		// proxy's address, and the proxy would connect to whatever the
		// executor's name resolves to, with the access token, unchecked.
		// Executors live on the network xjob is on; environment proxies
		// are for the way out to the internet (the AWS APIs).
		Proxy:                 nil,
		DialContext:           freshDial(dialer.DialContext, o.Clock, FreshConnTimeout),
		TLSHandshakeTimeout:   o.ConnectTimeout,
		ResponseHeaderTimeout: o.ReadTimeout,
		MaxIdleConns:          max(DefaultMaxIdleConns, o.MaxIdleConnsPerHost),
		MaxIdleConnsPerHost:   o.MaxIdleConnsPerHost,
		IdleConnTimeout:       DefaultIdleConnTimeout,
		ExpectContinueTimeout: time.Second,
	}
	if o.InsecureSkipVerify {
		t.TLSClientConfig = insecureTLS()
	}
	return t
}

func insecureTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // opt-in, as xxl-job's trust-all client
}

// Close drops the idle pooled connections.
func (c *Client) Close() {
	c.http.CloseIdleConnections()
	if c.direct != nil {
		c.direct.closeIdle()
	}
}

// Run asks the executor to queue one trigger (POST /run). Success means
// accepted, not finished: the result comes later through the callback.
// Run returns as soon as the reply's JSON value has arrived, so an
// executor may keep the response open while the job runs (a Lambda
// executor in RESPONSE_STREAM mode does).
//
// xxl-job 3.5 executors take triggers at /trigger and answer /run with
// "uri-mapping(/run) not found": Run calls the path last seen to work for
// the address (/run for a new one) and, when the executor says it has no
// such path (that message, or HTTP 404), calls the other one at once and
// remembers it. Neither refusal ran anything, so the second call cannot
// run the job twice.
func (c *Client) Run(ctx context.Context, address string, p protocol.TriggerParam) protocol.ReturnT {
	bp := bodies.Get().(*[]byte)
	payload := appendTriggerParam((*bp)[:0], p)
	path := c.runPath(address)
	r, _, reuse := c.post(ctx, address, path, payload, c.opts.MaxReplyBytes)
	if !notMapped(r, path) {
		recycleBody(bp, payload, reuse)
		return r
	}
	other := protocol.PathTrigger
	if path == protocol.PathTrigger {
		other = protocol.PathRun
	}
	r2, _, reuse2 := c.post(ctx, address, other, payload, c.opts.MaxReplyBytes)
	recycleBody(bp, payload, reuse && reuse2)
	if notMapped(r2, other) {
		return r // neither path: report the first refusal
	}
	c.setRunPath(address, other)
	return r2
}

// bodies are /run bodies for reuse (*[]byte, so that Get and Put do
// not allocate): one a trigger was a third of a kilobyte of garbage at
// 10,000 triggers a second.
var bodies = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// maxPooledBody bounds the bodies kept: a job with a large GLUE source
// must not pin its size in the pool.
const maxPooledBody = 16 << 10

// recycleBody returns payload's buffer to bodies when reuse says no one
// holds it any more: only the direct path, which copies it into its
// connection's buffer, had it. net/http's transport may still be writing a
// body after Do returned (an executor that answered before reading it).
func recycleBody(bp *[]byte, payload []byte, reuse bool) {
	if !reuse || cap(payload) > maxPooledBody {
		return
	}
	*bp = payload[:0]
	bodies.Put(bp)
}

func (c *Client) runPath(address string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.triggerAt[address] {
		return protocol.PathTrigger
	}
	return protocol.PathRun
}

func (c *Client) setRunPath(address, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if path == protocol.PathRun {
		delete(c.triggerAt, address)
		return
	}
	if c.triggerAt == nil || len(c.triggerAt) >= maxRemembered {
		c.triggerAt = map[string]bool{}
	}
	c.triggerAt[address] = true
}

// notMapped reports whether r says the executor has no endpoint path: an
// xxl-job executor's "invalid request, uri-mapping(/path) not found." or an
// HTTP 404 (post's message for it).
func notMapped(r protocol.ReturnT, path string) bool {
	return r.Code != protocol.SuccessCode &&
		(strings.Contains(r.Msg, "uri-mapping(/"+path+") not found") ||
			strings.HasPrefix(r.Msg, "xxl-job remoting fail, StatusCode(404)"))
}

// Beat checks that the executor is alive (POST /beat, the FAILOVER probe).
// The body is the JSON string "", which is what xxl-job's client sends.
func (c *Client) Beat(ctx context.Context, address string) protocol.ReturnT {
	r, _ := c.postJSON(ctx, address, protocol.PathBeat, "", c.opts.MaxReplyBytes)
	return r
}

// IdleBeat checks that the executor is not running or queueing jobID
// (POST /idleBeat, the BUSYOVER probe).
func (c *Client) IdleBeat(ctx context.Context, address string, jobID int64) protocol.ReturnT {
	r, _ := c.postJSON(ctx, address, protocol.PathIdleBeat, protocol.IdleBeatParam{JobID: jobID}, c.opts.MaxReplyBytes)
	return r
}

// Kill stops jobID's thread on the executor (POST /kill).
func (c *Client) Kill(ctx context.Context, address string, jobID int64) protocol.ReturnT {
	r, _ := c.postJSON(ctx, address, protocol.PathKill, protocol.KillParam{JobID: jobID}, c.opts.MaxReplyBytes)
	return r
}

// Log reads a trigger's execution log from fromLineNum on (POST /log). The
// LogResult is decoded from the envelope's "content" field, or "data" for
// xxl-job 3.3+ executors; it is zero when the reply fails or carries none.
// The request carries the date as both logDateTim and logDateTime.
func (c *Client) Log(ctx context.Context, address string, p protocol.LogParam) (protocol.LogResult, protocol.ReturnT) {
	// Both spellings of the date: ≤ 3.4 executors read logDateTim, 3.5
	// ones logDateTime, and each ignores the other.
	p.LogDateTim, p.LogDateTime = p.Date(), p.Date()
	r, u := c.postJSON(ctx, address, protocol.PathLog, p, c.opts.MaxLogReplyBytes)
	var lr protocol.LogResult
	if r.Code != protocol.SuccessCode || len(r.Content) == 0 {
		return lr, r
	}
	if err := json.Unmarshal(r.Content, &lr); err != nil {
		return protocol.LogResult{}, protocol.Fail(invalidReply(u, len(r.Content)))
	}
	return lr, r
}

// Endpoint returns the URL xxl-job calls for path on an executor: the
// address with a trailing "/" forced, then the path.
func Endpoint(address, path string) string {
	if !strings.HasSuffix(address, "/") {
		address += "/"
	}
	return address + path
}

// endpointKey is an address and a path, the key of Client.urls.
type endpointKey struct{ address, path string }

// endpoint is Endpoint(address, path) of the address trimmed, remembered;
// ok is false for a blank address.
func (c *Client) endpoint(address, path string) (u string, ok bool) {
	k := endpointKey{address, path}
	c.mu.Lock()
	u, ok = c.urls[k]
	c.mu.Unlock()
	if ok {
		return u, true
	}
	trimmed := strings.TrimSpace(address)
	if trimmed == "" {
		return "", false
	}
	u = Endpoint(trimmed, path)
	c.mu.Lock()
	if c.urls == nil || len(c.urls) >= maxRemembered {
		c.urls = map[endpointKey]string{}
	}
	c.urls[k] = u
	c.mu.Unlock()
	return u, true
}

// postJSON is post of body encoded as JSON.
func (c *Client) postJSON(ctx context.Context, address, path string, body any, limit int64) (protocol.ReturnT, string) {
	payload, err := json.Marshal(body)
	if err != nil {
		u, _ := c.endpoint(address, path)
		return remotingError(fmt.Errorf("encode request: %w", err), u), u
	}
	r, u, _ := c.post(ctx, address, path, payload, limit)
	return r, u
}

// post performs one call and returns the envelope and the URL it used;
// reuse reports that payload was only read by the direct path, which is
// done with it (see recycleBody).
func (c *Client) post(ctx context.Context, address, path string, payload []byte, limit int64) (r protocol.ReturnT, u string, reuse bool) {
	u, ok := c.endpoint(address, path)
	if !ok {
		return protocol.Fail("xxl-job remoting error(executor address is empty), for path : " + path), path, true
	}
	if c.opts.AccessTokens != nil {
		if tokens := c.opts.AccessTokens(); len(tokens) > 0 {
			reuse = true
			for i, token := range tokens {
				var direct bool
				r, direct = c.postOnce(ctx, u, payload, strings.TrimSpace(token), limit)
				reuse = reuse && direct
				if r.Msg != protocol.MsgWrongToken || i == len(tokens)-1 {
					break
				}
			}
			return r, u, reuse
		}
	}
	r, reuse = c.postOnce(ctx, u, payload, c.token, limit)
	return r, u, reuse
}

// maxUnsent bounds the calls postOnce makes for one request when each
// failed before any of it was written (see unsent).
const maxUnsent = 4

// postOnce sends payload to u, with token when it is not blank. The
// request reaches the executor once at most: it is sent again only when
// the call failed on a pooled connection before a byte of it was written
// (an expired fresh connection, or one the executor had closed), which
// the executor cannot have seen. Any other failure is the answer, as
// xxl-job gives it: a /run the executor may have read is never repeated.
//
// direct reports that only the direct path had payload.
func (c *Client) postOnce(ctx context.Context, u string, payload []byte, token string, limit int64) (r protocol.ReturnT, direct bool) {
	if c.direct != nil {
		// The direct path bounds the call by the same timeouts through
		// the connection's deadline, without a context of its own.
		app := protocol.AppNameFromContext(ctx)
		for attempt := 1; ; attempt++ {
			r, unsent, handled := c.direct.call(ctx, u, payload, token, app, c.opts.ConnectTimeout, c.opts.ReadTimeout, limit)
			if !handled {
				break
			}
			if !unsent || attempt == maxUnsent || ctx.Err() != nil {
				return r, true
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout+c.opts.ReadTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		r, unsent := c.call(ctx, u, payload, token, limit)
		if !unsent || attempt == maxUnsent || ctx.Err() != nil {
			return r, false
		}
	}
}

// call makes one HTTP call. unsent reports a transport failure on a
// connection that had written none of this request.
func (c *Client) call(ctx context.Context, u string, payload []byte, token string, limit int64) (r protocol.ReturnT, unsent bool) {
	var w written
	ctx = httptrace.WithClientTrace(ctx, w.trace())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(payload))
	if err != nil {
		return remotingError(err, u), false
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept-Charset", acceptCharset)
	if token != "" {
		// Sent with xxl-job's exact spelling rather than Go's canonical
		// form; header names are case-insensitive, but not every executor
		// framework is careful about it.
		req.Header[protocol.AccessTokenHeader] = []string{token}
	}
	if app := protocol.AppNameFromContext(ctx); app != "" {
		// Required by xxl-job 3.5 executors, ignored by older ones.
		req.Header[protocol.AppNameHeader] = []string{app}
	}

	resp, err := c.http.Do(req)
	if err != nil {
		return remotingError(err, u), w.none()
	}
	defer resp.Body.Close()

	if resp.StatusCode != http.StatusOK {
		// Drain a little so a small error page does not cost the connection.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return protocol.Fail(fmt.Sprintf(
			"xxl-job remoting fail, StatusCode(%d) invalid. for url : %s", resp.StatusCode, u)), false
	}

	return readReply(resp.Body, limit, u), false
}

// written follows the connection a call got from the transport, to tell
// afterwards whether any of the request was written on it. The transport
// may try a request on several connections (it moves on from one that
// failed before writing); the last one is the call's.
type written struct {
	mu   sync.Mutex
	conn *freshConn // nil: no connection yet, or one freshDial did not make
	at   int64      // conn.sent() when the call got it
}

func (w *written) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		conn := info.Conn
		if tc, ok := conn.(*tls.Conn); ok {
			conn = tc.NetConn()
		}
		fc, _ := conn.(*freshConn)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.conn, w.at = fc, 0
		if fc != nil {
			w.at = fc.sent()
		}
	}}
}

// none reports whether the call had a connection and wrote nothing on it.
// A call that got no connection (the dial failed) is not unsent: there is
// nothing to gain from dialling again at once.
func (w *written) none() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.conn != nil && w.conn.sent() == w.at
}

// readReply decodes the reply envelope from body and returns as soon as
// its JSON value is complete, without waiting for the end of the body. An
// executor that streams its reply and keeps the body open while the job
// runs (lambdaexec.StreamingHandler on a RESPONSE_STREAM function URL) is
// therefore answered within the read timeout however long the job takes.
// The caller then closes the body; an unread streaming body makes
// net/http discard the connection instead of pooling it, which is what we
// want. A complete body (Content-Length, or chunked with its end already
// received) is read to EOF by the decoder, so its connection is reused.
//
// The limit applies to the value: one that ends past limit bytes is "too
// large"; whitespace after it is never read. Anything that is not a valid
// envelope — garbage, a value ending past the limit, non-space data already
// received after the value, a read error — is judged on the whole body
// (read up to limit+1 bytes), so the failure messages stay the ones a
// buffered read gave.
func readReply(body io.Reader, limit int64, u string) protocol.ReturnT {
	// One read, as the decoder's first would be: what it returns is
	// what has arrived, and a whole {"code":N} in it is a complete
	// value with nothing after it, which readReplySlow would accept.
	var buf [shortReply]byte
	n, err := body.Read(buf[:])
	if (err == nil || err == io.EOF) && int64(n) <= limit {
		if code, ok := codeOnly(buf[:n]); ok {
			return protocol.ReturnT{Code: code}
		}
	}
	var rest io.Reader = body
	if err != nil {
		rest = errReader{err}
	}
	return readReplySlow(io.MultiReader(bytes.NewReader(buf[:n]), rest), limit, u)
}

// shortReply bounds the replies readReply tries codeOnly on.
const shortReply = 64

// errReader fails every read with err: the rest of a body whose read
// already failed.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// codeOnly reads the reply most executors send, {"code":200} (xxl-job's
// own executors leave out null fields), without encoding/json: the
// decoder's buffers and reflection were half of reading a /run reply.
// It accepts exactly {"code":N} with N a small non-negative or negative
// integer, white space around it; anything else is readReplySlow's.
func codeOnly(b []byte) (int, bool) {
	b = bytes.Trim(b, " \t\r\n")
	const head = `{"code":`
	if len(b) < len(head)+2 || string(b[:len(head)]) != head || b[len(b)-1] != '}' {
		return 0, false
	}
	digits := b[len(head) : len(b)-1]
	if len(digits) > 9 || len(digits) > 1 && digits[0] == '0' || len(digits) > 2 && digits[0] == '-' && digits[1] == '0' {
		return 0, false
	}
	code, err := strconv.Atoi(string(digits))
	if err != nil || digits[0] == '+' {
		return 0, false
	}
	return code, true
}

// readReplySlow is readReply for any reply: one JSON envelope of at most
// limit bytes, white space around it.
func readReplySlow(body io.Reader, limit int64, u string) protocol.ReturnT {
	rec := &recorder{r: io.LimitReader(body, limit+1)}
	dec := json.NewDecoder(rec)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err == nil && dec.InputOffset() <= limit && onlySpace(dec.Buffered()) {
		if r, err := decodeReturn(raw); err == nil {
			return r
		}
	}
	_, _ = io.Copy(io.Discard, rec) // the rest of the body, for the message
	switch {
	case rec.err != nil:
		return remotingError(rec.err, u)
	case rec.n > limit:
		return protocol.Fail(fmt.Sprintf(
			"xxl-job remoting (url=%s) response larger than %d bytes.", u, limit))
	default:
		return protocol.Fail(invalidReply(u, int(rec.n)))
	}
}

// invalidReply is the message for a reply that is not an envelope. It
// quotes none of the reply: whatever answered at the address (a metadata
// service, an internal page, if an address got past the egress policy)
// must not have its content shown in trigger logs to every user of the
// group. The size is enough to tell an empty reply from a page.
func invalidReply(u string, n int) string {
	return fmt.Sprintf("xxl-job remoting (url=%s) response content invalid (not an xxl-job reply, %d bytes).", u, n)
}

// recorder counts the bytes read through it and keeps the first read
// error other than io.EOF, so a failed decode can still be described.
type recorder struct {
	r   io.Reader
	n   int64
	err error
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && r.err == nil {
		r.err = err
	}
	return n, err
}

// onlySpace reports whether the bytes the decoder read past the value are
// JSON whitespace; it does not read further from the body.
func onlySpace(rest io.Reader) bool {
	b, _ := io.ReadAll(rest) // a bytes.Reader over the decoder's buffer
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// envelope accepts both ReturnT {code,msg,content} (xxl-job ≤ 3.2) and
// Response {code,msg,data} (3.3+). Code is raw so that a quoted number,
// which Gson accepts, is accepted too.
type envelope struct {
	Code    json.RawMessage `json:"code"`
	Msg     *string         `json:"msg"`
	Content json.RawMessage `json:"content"`
	Data    json.RawMessage `json:"data"`
}

func decodeReturn(data []byte) (protocol.ReturnT, error) {
	var e envelope
	if err := json.Unmarshal(data, &e); err != nil {
		return protocol.ReturnT{}, fmt.Errorf("decode reply: %w", err)
	}
	raw := strings.Trim(string(bytes.TrimSpace(e.Code)), `"`)
	if raw == "" || raw == "null" {
		return protocol.ReturnT{}, errors.New("decode reply: no code")
	}
	code, err := strconv.Atoi(raw)
	if err != nil {
		return protocol.ReturnT{}, fmt.Errorf("decode reply code: %w", err)
	}
	r := protocol.ReturnT{Code: code}
	if e.Msg != nil {
		r.Msg = *e.Msg
	}
	switch {
	case present(e.Content):
		r.Content = e.Content
	case present(e.Data):
		r.Content = e.Data
	}
	return r, nil
}

func present(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) > 0 && !bytes.Equal(s, []byte("null"))
}

// remotingError renders a transport failure as xxl-job does:
// "xxl-job remoting error(<cause>), for url : <url>". The URL is taken off
// Go's *url.Error so that it is not repeated inside the cause, and a DNS
// failure loses the resolver's address: the message lands in trigger logs
// that every admin reads, and must not map the scheduler's network.
func remotingError(err error, u string) protocol.ReturnT {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		err = &net.DNSError{Err: de.Err, Name: de.Name, IsNotFound: de.IsNotFound, IsTimeout: de.IsTimeout}
	}
	return protocol.Fail(fmt.Sprintf("xxl-job remoting error(%s), for url : %s", sanitize([]byte(err.Error()), causeMax), u))
}

// sanitize keeps at most limit bytes of b, with every byte that is not
// printable ASCII (control characters, escape sequences, UTF-8) shown as
// '?', and "..." when it was cut.
func sanitize(b []byte, limit int) string {
	cut := len(b) > limit
	if cut {
		b = b[:limit]
	}
	out := make([]byte, len(b), len(b)+3)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		out[i] = c
	}
	if cut {
		out = append(out, "..."...)
	}
	return string(out)
}

// How many bytes of a transport error a message quotes.
const causeMax = 200
