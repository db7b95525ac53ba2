package executor

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/exechttp"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// Executor runs registered handlers for a scheduling center that speaks
// the xxl-job 2.x executor protocol (xjob, or an original xxl-job admin).
// Build it with New, Register handlers, then either ListenAndServe, or
// Start it and mount it (it is an http.Handler) on your own server, or
// serve it from Lambda through package lambdaexec.
type Executor struct {
	cfg   Config
	clock clock.Clock
	log   *slog.Logger
	logs  *logStore
	admin *adminClient
	cb    *callbacks

	hmu      sync.RWMutex
	handlers map[string]*handlerEntry

	mu      sync.Mutex
	workers map[int64]*worker
	closed  bool
	started bool
	addr    string

	inlineMu     sync.Mutex
	inlineInited map[string]*handlerEntry

	workerWG sync.WaitGroup
	bgWG     sync.WaitGroup
	bgCancel context.CancelFunc
	cbWG     sync.WaitGroup
	cbCancel context.CancelFunc
	beatWG   sync.WaitGroup
	beatStop context.CancelFunc

	onWorkerExit func(jobID int64, reason string) // test hook
}

// New validates cfg and returns an Executor with no handlers.
func New(cfg Config) (*Executor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Executor{
		cfg:          cfg,
		clock:        cfg.Clock,
		log:          cfg.Logger,
		logs:         &logStore{dir: cfg.LogDir, loc: cfg.Location},
		admin:        &adminClient{addrs: cfg.AdminAddresses, token: cfg.AccessToken, client: cfg.HTTPClient, timeout: cfg.AdminTimeout},
		handlers:     map[string]*handlerEntry{},
		workers:      map[int64]*worker{},
		addr:         cfg.Address,
		inlineInited: map[string]*handlerEntry{},
	}
	switch {
	case cfg.AccessToken == "":
		e.log.Warn("executor runs without an access token (AllowNoToken): anyone who reaches it can run its handlers")
	case weakToken(cfg.AccessToken):
		e.log.Warn("executor access token is weak (shorter than 16 characters or xxl-job's published default); " +
			"set a long random one on the admin and here")
	}
	if cfg.JobLogMirror != nil {
		e.logs.mirror = &lockedWriter{w: cfg.JobLogMirror}
	}
	e.cb = newCallbacks(e)
	return e, nil
}

// now is the clock's time in the log time zone.
func (e *Executor) now() time.Time { return e.clock.Now().In(e.cfg.Location) }

func (e *Executor) address() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.addr
}

// Start launches the background loops: the callback sender, the spool
// retry loop, the registry heartbeat (when AppName and admins are set) and
// the daily log cleanup. It does not listen; see ListenAndServe.
func (e *Executor) Start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started || e.closed {
		return errors.New("executor start: already started")
	}
	register := e.cfg.AppName != "" && len(e.cfg.AdminAddresses) > 0
	if register && e.addr == "" {
		return errors.New("executor start: AppName is set but no Address to register (set Config.Address or use ListenAndServe)")
	}
	e.started = true
	cbCtx, cbCancel := context.WithCancel(context.Background())
	e.cbCancel = cbCancel
	e.cbWG.Add(1)
	go func() { defer e.cbWG.Done(); e.cb.run(cbCtx) }()

	bg, cancel := context.WithCancel(context.Background())
	e.bgCancel = cancel
	e.goBG(func() { e.cb.retryLoop(bg) })
	beat, beatStop := context.WithCancel(context.Background())
	e.beatStop = beatStop
	if register {
		e.beatWG.Add(1)
		go func() { defer e.beatWG.Done(); e.heartbeat(beat) }()
	}
	if e.cfg.LogRetentionDays > 0 {
		e.goBG(func() { e.cleanupLoop(bg) })
	}
	return nil
}

func (e *Executor) goBG(f func()) {
	e.bgWG.Add(1)
	go func() { defer e.bgWG.Done(); f() }()
}

func (e *Executor) cleanupLoop(ctx context.Context) {
	for {
		if n, err := e.logs.clean(e.clock.Now(), e.cfg.LogRetentionDays); err != nil {
			e.log.Warn("executor log cleanup failed", "removed", n, "err", err)
		}
		if err := e.clock.SleepUntil(ctx, e.clock.Now().Add(24*time.Hour)); err != nil {
			return
		}
	}
}

// Shutdown stops the executor: new triggers are refused, the executor
// deregisters (/api/registryRemove), running and queued triggers may
// finish until ctx ends and are then killed (called back as killed), the
// callback queue is flushed (spooled if no admin answers), and destroy
// hooks run. It returns ctx's error if triggers had to be killed.
func (e *Executor) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	started := e.started
	for _, w := range e.workers {
		if w.cancelIdle != nil {
			w.cancelIdle() // an idle worker sees closed and exits
		}
	}
	e.mu.Unlock()

	if started {
		// Stop beating first, so no beat re-registers after the removal.
		e.beatStop()
		e.beatWG.Wait()
	}
	if started && e.cfg.AppName != "" && len(e.cfg.AdminAddresses) > 0 {
		if err := e.admin.post(ctx, protocol.PathRegistryRemove, e.registryParam()); err != nil {
			e.log.Warn("executor registry remove failed", "err", err)
		}
	}

	var result error
	done := make(chan struct{})
	go func() { e.workerWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		result = fmt.Errorf("executor shutdown: running jobs killed: %w", ctx.Err())
		e.mu.Lock()
		for _, w := range e.workers {
			e.removeLocked(w, reasonShutdown)
		}
		e.mu.Unlock()
		<-done
	}

	if started {
		e.bgCancel()
		e.bgWG.Wait()
		e.cbCancel()
		e.cbWG.Wait()
	}
	e.cb.flush(context.WithoutCancel(ctx))

	e.inlineMu.Lock()
	for name, h := range e.inlineInited {
		if h.destroy != nil {
			if err := h.destroy(context.WithoutCancel(ctx)); err != nil {
				e.log.Warn("executor handler destroy failed", "handler", name, "err", err)
			}
		}
	}
	e.inlineInited = map[string]*handlerEntry{}
	e.inlineMu.Unlock()
	return result
}

// ListenAndServe listens on Config.ListenAddr, registers the listener's
// address when Config.Address is empty, starts the executor and serves
// until ctx ends, then shuts down, giving running jobs up to grace; the
// HTTP server closes at most a second after that.
func (e *Executor) ListenAndServe(ctx context.Context, grace time.Duration) error {
	ln, err := net.Listen("tcp", e.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("executor listen: %w", err)
	}
	e.mu.Lock()
	if e.addr == "" {
		e.addr = listenerAddress(ln.Addr())
	}
	e.mu.Unlock()
	if err := e.Start(); err != nil {
		ln.Close()
		return err
	}
	srv := NewServer(e)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	e.log.Info("executor listening", "addr", ln.Addr().String(), "registered", e.address(), "app", e.cfg.AppName)

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		_ = e.Shutdown(sctx)
		return fmt.Errorf("executor serve: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	// Keep serving /kill and /log while jobs drain; /run is refused.
	shutErr := e.Shutdown(sctx)
	closeServer(sctx, srv)
	return shutErr
}

// Timeouts of the server NewServer builds. A request is a few KiB (at most
// MaxBodyBytes), so a client that takes longer than ReadTimeout to send
// one is holding a connection, not sending a trigger.
const (
	ServerReadHeaderTimeout = 10 * time.Second
	ServerReadTimeout       = 30 * time.Second
	ServerIdleTimeout       = 90 * time.Second
)

// NewServer returns an http.Server for h (an Executor) with the read,
// header and idle timeouts every listener of the executor should have.
// There is no WriteTimeout: a streaming reply may stay open for a job.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: ServerReadHeaderTimeout, ReadTimeout: ServerReadTimeout,
		IdleTimeout: ServerIdleTimeout}
}

// httpDrain bounds how long the HTTP server may take to close once the
// executor has shut down.
const httpDrain = time.Second

// closeServer stops srv after the executor has shut down. Every request
// is then answered at once (/run is refused, nothing runs), so in-flight
// replies finish within httpDrain. What is left are connections that never
// sent a request — an admin's HTTP client dials spare keep-alive
// connections under concurrent triggers — which http.Server.Shutdown would
// wait 5 s for; they are closed instead.
func closeServer(ctx context.Context, srv *http.Server) {
	ctx, cancel := context.WithTimeout(ctx, httpDrain)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
}

// listenerAddress is http://{ip}:{port}/ for a listener, replacing an
// unspecified host (":9999") with this machine's first non-loopback IPv4
// address, as xxl-job's IpUtil does.
func listenerAddress(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = localIP()
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

func localIP() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				return n.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// Request is one executor-protocol call, independent of the transport.
type Request struct {
	Method string // HTTP method; anything but POST is refused
	URI    string // raw request URI; must be exactly /run (or 3.5's /trigger), /beat, /idleBeat, /kill or /log
	Token  string // XXL-JOB-ACCESS-TOKEN header value
	Body   []byte
	// Inline makes /run execute the trigger to completion inside the call
	// (bounded by ctx's deadline less Config.InlineReserve) and deliver its
	// callback before returning, instead of queueing it on a job worker.
	// Used by the Lambda adapter.
	Inline bool
	// Accepted, if set, is called once an inline /run has passed every
	// check that could refuse it, just before the job starts: the Lambda
	// adapter's streaming handler then replies {"code":200} at once and
	// keeps the invocation alive for the run.
	Accepted func()
}

// Executor replies xxl-job writes verbatim (EmbedServer).
const (
	msgMethodNotSupported = "invalid request, HttpMethod not support."
	msgURIEmpty           = "invalid request, uri-mapping empty."
	msgShuttingDown       = "executor is shutting down."
)

// Serve answers one request as xxl-job's EmbedServer does: method, then
// token, then exact-path routing. Failures are code-500 envelopes.
func (e *Executor) Serve(ctx context.Context, req Request) protocol.ReturnT {
	if req.Method != http.MethodPost {
		return protocol.Fail(msgMethodNotSupported)
	}
	if req.URI == "" {
		return protocol.Fail(msgURIEmpty)
	}
	if !e.tokenOK(req.Token) {
		return protocol.Fail(protocol.MsgWrongToken)
	}
	switch req.URI {
	case "/" + protocol.PathBeat:
		return protocol.OK()
	case "/" + protocol.PathIdleBeat:
		var p protocol.IdleBeatParam
		if err := decode(req.Body, &p); err != nil {
			return protocol.Fail(err.Error())
		}
		return e.idleBeat(p.JobID)
	case "/" + protocol.PathRun, "/" + protocol.PathTrigger: // /trigger: what xxl-job 3.5 admins call
		var p protocol.TriggerParam
		if err := decode(req.Body, &p); err != nil {
			return protocol.Fail(err.Error())
		}
		if req.Inline {
			return e.runInline(ctx, &p, req.Accepted)
		}
		return e.run(&p)
	case "/" + protocol.PathKill:
		var p protocol.KillParam
		if err := decode(req.Body, &p); err != nil {
			return protocol.Fail(err.Error())
		}
		return e.kill(p.JobID)
	case "/" + protocol.PathLog:
		var p protocol.LogParam
		if err := decode(req.Body, &p); err != nil {
			return protocol.Fail(err.Error())
		}
		return e.readLog(p)
	default:
		return protocol.Fail("invalid request, uri-mapping(" + req.URI + ") not found.")
	}
}

// tokenOK reports whether tok (a header value, which net/http trims) is
// the access token, or no token is required. Constant time: a
// byte-by-byte == lets a network caller guess the token one byte at a
// time from response times.
func (e *Executor) tokenOK(tok string) bool {
	return e.cfg.AccessToken == "" || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(e.cfg.AccessToken)) == 1
}

func decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("request error: invalid JSON body: %w", err)
	}
	return nil
}

// ServeHTTP serves the executor protocol: HTTP 200 with a ReturnT JSON
// body and xxl-job's Content-Type, 413 for a body over 5 MiB, 403 for a
// request a browser sent on another site's behalf (see exechttp.CrossSite).
// The access token is checked before the body is read.
func (e *Executor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if exechttp.CrossSite(r) {
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodPost || !e.tokenOK(r.Header.Get(protocol.AccessTokenHeader)) {
		// Method and token before the body: a caller without the token
		// costs no read of it, and the connection is not kept, so net/http
		// does not drain the body either. Serve gives xxl-job's refusal.
		if r.ContentLength != 0 {
			w.Header().Set("Connection", "close")
		}
		exechttp.WriteReturnT(w, e.Serve(r.Context(), Request{
			Method: r.Method, URI: r.RequestURI, Token: r.Header.Get(protocol.AccessTokenHeader),
		}))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		exechttp.WriteReturnT(w, protocol.Fail("request error: read body: "+err.Error()))
		return
	}
	exechttp.WriteReturnT(w, e.Serve(r.Context(), Request{
		Method: r.Method, URI: r.RequestURI, Token: r.Header.Get(protocol.AccessTokenHeader), Body: body,
	}))
}

// weakToken reports a token shorter than 16 characters or xxl-job's
// published default (the key of its executor RCEs).
// tok is the trimmed token in effect (Config.withDefaults trims it).
func weakToken(tok string) bool { return len(tok) < 16 || tok == "default_token" }

// resolve finds the handler for a trigger, or the failure reply.
func (e *Executor) resolve(tp *protocol.TriggerParam) (*handlerEntry, *protocol.ReturnT) {
	switch g := xjob.GlueType(tp.GlueType); g {
	case xjob.GlueBean, "":
		h := e.handler(tp.ExecutorHandler)
		if h == nil {
			f := protocol.Fail("job handler [" + tp.ExecutorHandler + "] not found.")
			return nil, &f
		}
		return h, nil
	case xjob.GlueGroovy, xjob.GlueShell, xjob.GluePython, xjob.GluePython2,
		xjob.GluePHP, xjob.GlueNodeJS, xjob.GluePowerShell:
		f := protocol.Fail("glueType[" + tp.GlueType + "] is not supported by this executor: the xjob Go executor runs BEAN handlers only.")
		return nil, &f
	default:
		f := protocol.Fail("glueType[" + tp.GlueType + "] is not valid.")
		return nil, &f
	}
}

// run queues a trigger on its job's worker, applying the block strategy
// (ExecutorBizImpl.run).
func (e *Executor) run(tp *protocol.TriggerParam) protocol.ReturnT {
	entry, fail := e.resolve(tp)
	if fail != nil {
		return *fail
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return protocol.Fail(msgShuttingDown)
	}
	w := e.workers[tp.JobID]
	if w != nil && w.entry != entry {
		e.removeLocked(w, reasonReplace)
		w = nil
	}
	if w != nil {
		switch decideBlock(tp.ExecutorBlockStrategy, w.busyLocked()) {
		case blockDiscard:
			return protocol.Fail(protocol.MsgDiscardLater)
		case blockCover:
			e.removeLocked(w, reasonCoverEarly)
			w = nil
		}
	}
	if w == nil {
		w = &worker{e: e, jobID: tp.JobID, entry: entry, lastActive: e.clock.Now()}
		e.workers[tp.JobID] = w
		e.workerWG.Add(1)
		go w.loop()
	}
	if w.queuedLocked(tp.LogID) {
		return protocol.Fail("repeate trigger job, logId:" + strconv.FormatInt(tp.LogID, 10))
	}
	w.enqueueLocked(tp)
	return protocol.OK()
}

func (e *Executor) removeLocked(w *worker, reason string) {
	if e.workers[w.jobID] == w {
		delete(e.workers, w.jobID)
	}
	w.stopLocked(reason)
}

func (e *Executor) workerExited(w *worker) {
	if e.onWorkerExit != nil {
		e.onWorkerExit(w.jobID, w.reason())
	}
}

func (e *Executor) idleBeat(jobID int64) protocol.ReturnT {
	e.mu.Lock()
	defer e.mu.Unlock()
	if w := e.workers[jobID]; w != nil && w.busyLocked() {
		return protocol.Fail(protocol.MsgJobBusy)
	}
	return protocol.OK()
}

func (e *Executor) kill(jobID int64) protocol.ReturnT {
	e.mu.Lock()
	defer e.mu.Unlock()
	if w := e.workers[jobID]; w != nil {
		e.removeLocked(w, reasonKill)
		return protocol.OK()
	}
	return protocol.ReturnT{Code: protocol.SuccessCode, Msg: protocol.MsgThreadKilled}
}

func (e *Executor) readLog(p protocol.LogParam) protocol.ReturnT {
	res, err := e.logs.read(p)
	if err != nil {
		return protocol.Fail(err.Error())
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return protocol.Fail("log encode: " + err.Error())
	}
	// content for admins up to 3.2, data for 3.3+ (each reads its own).
	return protocol.ReturnT{Code: protocol.SuccessCode, Content: raw, Data: raw}
}

// runInline executes a trigger within the call and delivers its callback
// before returning. There is no job worker: on Lambda every invocation
// may land in its own environment, so nothing queues behind it.
func (e *Executor) runInline(ctx context.Context, tp *protocol.TriggerParam, accepted func()) protocol.ReturnT {
	entry, fail := e.resolve(tp)
	if fail != nil {
		return *fail
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return protocol.Fail(msgShuttingDown)
	}
	if accepted != nil {
		accepted()
	}
	var deadline time.Time
	if d, ok := ctx.Deadline(); ok {
		deadline = e.clock.Now().Add(time.Until(d) - e.cfg.InlineReserve)
	}
	initHook := func(ctx context.Context) error {
		e.inlineMu.Lock()
		defer e.inlineMu.Unlock()
		if _, ok := e.inlineInited[entry.name]; ok {
			return nil
		}
		if entry.init != nil {
			if err := entry.init(ctx); err != nil {
				return err
			}
		}
		e.inlineInited[entry.name] = entry
		return nil
	}
	res := e.execute(ctx, entry, tp, deadline, initHook, func() string { return reasonKill })
	if e.cb.deliver(context.WithoutCancel(ctx), []protocol.HandleCallbackParam{res}) {
		if _, err := e.cb.resend(ctx); err != nil {
			e.log.Warn("executor callback retry failed", "err", err)
		}
	}
	return protocol.OK()
}
