package lambdarun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// apiPrefix is the Runtime API's path prefix (its only version).
const apiPrefix = "/2018-06-01/runtime/"

// extPrefix is the Extensions API's path prefix, served at the same
// address (AWS_LAMBDA_RUNTIME_API).
const extPrefix = "/2020-01-01/extension/"

// The Extensions API's headers.
const (
	headerExtensionName = "Lambda-Extension-Name"
	headerExtensionID   = "Lambda-Extension-Identifier"
	headerEventID       = "Lambda-Extension-Event-Identifier"
)

// ShutdownGrace is how long an environment with a registered extension
// has between SIGTERM and SIGKILL when it is shut down: Lambda's shutdown
// phase with internal extensions only (an extension registered by the
// runtime process itself, as every one here is).
const ShutdownGrace = 500 * time.Millisecond

// Options describe one function.
type Options struct {
	// Name is the function's name (AWS_LAMBDA_FUNCTION_NAME).
	Name string
	// Path is the bootstrap binary.
	Path string
	// Env is the function's environment (KEY=VALUE): its configuration,
	// credentials and endpoints. The Lambda-reserved variables are added;
	// nothing of the parent process's environment is passed on.
	Env []string
	// Max bounds the concurrent execution environments (default 1).
	Max int
	// MemoryMB is AWS_LAMBDA_FUNCTION_MEMORY_SIZE (default 256).
	MemoryMB int
	// CPUShare, when above 0, limits each execution environment to that
	// fraction of one core, as Lambda limits a function to its memory's
	// share of a vCPU (MemoryMB / 1,769: 0.145 at 256 MB), so that the
	// time a CPU-bound handler takes, and what waits on it, is measured
	// as Lambda would run it rather than on a whole core of this machine
	// (Linux's cgroup v1 cpu controller; Start fails without it).
	CPUShare float64
	// Output receives the processes' stdout and stderr, the function's
	// logs (default: discarded). Writes come from several goroutines.
	Output io.Writer
}

// Error is a handler's error as the runtime reported it (/error), or the
// harness's verdict on an invocation that never replied.
type Error struct {
	Type    string `json:"errorType"`
	Message string `json:"errorMessage"`
}

func (e *Error) Error() string { return e.Type + ": " + e.Message }

// Function is one function's running execution environments.
type Function struct {
	opts  Options
	queue chan *invocation
	stop  chan struct{}

	mu       sync.Mutex
	envs     map[*environment]bool
	busy     int // environments running an invocation
	pending  int // invocations queued and not yet taken
	closed   bool
	lastExit string // why the last environment ended, for timeout errors
	inits    []time.Duration
	initCPU  []time.Duration // the CPU of each Init, beside inits
	wg       sync.WaitGroup
}

type invocation struct {
	id       string
	payload  []byte
	deadline time.Time
	done     chan reply // buffered 1
	mu       sync.Mutex
	taken    bool // handed to an environment
	expired  bool // Invoke gave up before an environment took it
}

type reply struct {
	body []byte
	err  error
	cpu  time.Duration // the environment's CPU while it ran the invocation
}

type environment struct {
	f      *Function
	cmd    *exec.Cmd
	srv    *http.Server
	exited chan struct{} // closed once the process is reaped
	ending chan struct{} // closed when the shutdown starts: SHUTDOWN events go out
	mu     sync.Mutex
	cur    *invocation
	cpuAt  time.Duration // the process's CPU when cur was handed out
	dead   bool
	inited bool                  // the runtime asked for its first invocation: Init is over
	start  time.Time             // when the process started: Init's start
	exts   map[string]*extension // by identifier
	uncap  func()                // removes the CPU quota's cgroup, once the process exited
}

// extension is one registration with the Extensions API.
type extension struct {
	name     string
	shutdown bool // registered for SHUTDOWN events
}

// Start returns the function, ready for Invoke; environments start on
// demand, as cold starts do.
func Start(opts Options) (*Function, error) {
	if opts.Name == "" || opts.Path == "" {
		return nil, errors.New("lambdarun: Name and Path are required")
	}
	if opts.Max <= 0 {
		opts.Max = 1
	}
	if opts.MemoryMB <= 0 {
		opts.MemoryMB = 256
	}
	if opts.Output == nil {
		opts.Output = io.Discard
	}
	return &Function{opts: opts, queue: make(chan *invocation, 1024), stop: make(chan struct{}),
		envs: map[*environment]bool{}}, nil
}

// Invoke runs one invocation with payload and returns the handler's
// response, or an *Error when the handler failed, the environment died or
// the timeout passed (the environment is then killed). ctx only bounds the
// wait for an environment; once running, an invocation runs to its
// timeout, as on Lambda.
func (f *Function) Invoke(ctx context.Context, payload []byte, timeout time.Duration) ([]byte, error) {
	body, _, err := f.InvokeCPU(ctx, payload, timeout)
	return body, err
}

// InvokeCPU is Invoke that also returns the CPU time (user and system)
// the execution environment's process used from handing the invocation
// out (its /next) to receiving its response or error. Lambda runs one
// invocation at a time in an environment, so that is the invocation's
// CPU: what Lambda's CPU share, in proportion to the function's memory,
// would stretch. It is 0 when the invocation failed without a reply or
// when the system cannot read it (CPUMeasured).
func (f *Function) InvokeCPU(ctx context.Context, payload []byte, timeout time.Duration) ([]byte, time.Duration, error) {
	inv := &invocation{id: newID(), payload: payload, deadline: time.Now().Add(timeout), done: make(chan reply, 1)}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, 0, errors.New("lambdarun: function closed")
	}
	f.pending++
	err := f.fill()
	f.mu.Unlock()
	if err != nil {
		f.abandon(inv)
		return nil, 0, err
	}
	select {
	case f.queue <- inv:
	case <-ctx.Done():
		f.abandon(inv)
		return nil, 0, ctx.Err()
	}
	// The runtime's own context ends at the deadline; the handler's reply
	// may take a moment more to arrive.
	t := time.NewTimer(time.Until(inv.deadline) + 250*time.Millisecond)
	defer t.Stop()
	select {
	case r := <-inv.done:
		return r.body, r.cpu, r.err
	case <-t.C:
	}
	if taken := f.abandon(inv); taken {
		select {
		case r := <-inv.done: // replied while we were deciding
			return r.body, r.cpu, r.err
		default:
		}
		// Past its deadline: a timeout, whatever the environment reports
		// once it is killed (its exit error is this kill, not the cause).
		f.killRunning(inv)
	}
	f.mu.Lock()
	why := f.lastExit
	f.mu.Unlock()
	msg := fmt.Sprintf("Task timed out after %.2f seconds", timeout.Seconds())
	if why != "" {
		msg += " (last environment exit: " + why + ")"
	}
	return nil, 0, &Error{Type: "Sandbox.Timedout", Message: msg}
}

// abandon marks inv as given up by Invoke and reports whether an
// environment had already taken it; if not, it no longer counts as pending.
func (f *Function) abandon(inv *invocation) (taken bool) {
	inv.mu.Lock()
	inv.expired = true
	taken = inv.taken
	inv.mu.Unlock()
	if !taken {
		f.mu.Lock()
		f.pending--
		f.mu.Unlock()
	}
	return taken
}

// fill starts environments while fewer are idle than invocations are
// pending and Max allows: Lambda's scale-out on demand. f.mu is held.
func (f *Function) fill() error {
	for !f.closed && len(f.envs)-f.busy < f.pending && len(f.envs) < f.opts.Max {
		if err := f.startEnv(); err != nil {
			return err
		}
	}
	return nil
}

// startEnv starts one execution environment: a Runtime API listener of
// its own and the bootstrap process pointed at it. f.mu is held.
func (f *Function) startEnv() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("lambdarun %s: listen: %w", f.opts.Name, err)
	}
	e := &environment{f: f, exited: make(chan struct{}), ending: make(chan struct{}), exts: map[string]*extension{}}
	e.srv = &http.Server{Handler: http.HandlerFunc(e.serve), ReadHeaderTimeout: 10 * time.Second}
	e.cmd = exec.Command(f.opts.Path)
	e.cmd.Env = append(f.lambdaEnv(ln.Addr().String()), f.opts.Env...)
	e.cmd.Stdout, e.cmd.Stderr = f.opts.Output, f.opts.Output
	e.start = time.Now()
	if err := e.cmd.Start(); err != nil {
		_ = ln.Close()
		return fmt.Errorf("lambdarun %s: start %s: %w", f.opts.Name, f.opts.Path, err)
	}
	if f.opts.CPUShare > 0 {
		uncap, err := limitCPU(f.opts.Name, e.cmd.Process.Pid, f.opts.CPUShare)
		if err != nil {
			_ = e.cmd.Process.Kill()
			_ = e.cmd.Wait()
			_ = ln.Close()
			return err
		}
		e.uncap = uncap
	}
	f.envs[e] = true
	f.wg.Go(func() { _ = e.srv.Serve(ln) })
	f.wg.Go(func() { e.wait() })
	return nil
}

// lambdaEnv is the reserved environment Lambda gives a provided.al2023
// function.
func (f *Function) lambdaEnv(api string) []string {
	stream := time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + newID()
	return []string{
		"AWS_LAMBDA_RUNTIME_API=" + api,
		"AWS_LAMBDA_FUNCTION_NAME=" + f.opts.Name,
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=" + strconv.Itoa(f.opts.MemoryMB),
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/" + f.opts.Name,
		"AWS_LAMBDA_LOG_STREAM_NAME=" + stream,
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"_HANDLER=bootstrap",
		"TZ=:UTC",
	}
}

// wait reaps the process and fails the invocation it held.
func (e *environment) wait() {
	err := e.cmd.Wait()
	if e.uncap != nil {
		e.uncap()
	}
	why := "exited"
	if err != nil {
		why = err.Error()
	}
	_ = e.srv.Close()
	close(e.exited)
	e.mu.Lock()
	e.dead = true
	cur := e.cur
	e.cur = nil
	e.mu.Unlock()
	f := e.f
	f.mu.Lock()
	delete(f.envs, e)
	if cur != nil {
		f.busy--
	}
	f.lastExit = why
	_ = f.fill() // replace it if invocations wait; a failure shows as their timeout
	f.mu.Unlock()
	if cur != nil {
		cur.done <- reply{err: &Error{Type: "Runtime.ExitError", Message: "execution environment ended during the invocation: " + why}}
	}
}

// killRunning kills the environment running inv (a timed-out invocation).
func (f *Function) killRunning(inv *invocation) {
	f.mu.Lock()
	var victim *environment
	for e := range f.envs {
		e.mu.Lock()
		if e.cur == inv {
			victim = e
		}
		e.mu.Unlock()
	}
	f.mu.Unlock()
	if victim != nil {
		_ = victim.cmd.Process.Kill()
	}
}

// shutdown ends the environment as Lambda ends one it no longer needs:
// with no extension registered, SIGKILL; with one, SIGTERM, the SHUTDOWN
// event to the extensions registered for it, and SIGKILL if the process
// is still there ShutdownGrace later. It returns once the process is
// reaped.
func (e *environment) shutdown() {
	e.mu.Lock()
	graceful := len(e.exts) > 0
	e.mu.Unlock()
	if !graceful {
		_ = e.cmd.Process.Kill()
		<-e.exited
		return
	}
	close(e.ending)
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(ShutdownGrace)
	defer t.Stop()
	select {
	case <-e.exited:
	case <-t.C:
		_ = e.cmd.Process.Kill()
		<-e.exited
	}
}

// serve is one environment's Runtime API and Extensions API.
func (e *environment) serve(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, extPrefix); ok {
		e.serveExtension(w, r, rest)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, apiPrefix)
	switch {
	case !ok:
		http.NotFound(w, r)
	case rest == "invocation/next" && r.Method == http.MethodGet:
		e.next(w, r)
	case rest == "init/error" && r.Method == http.MethodPost:
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		e.f.mu.Lock()
		e.f.lastExit = "init error: " + string(body)
		e.f.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		_ = e.cmd.Process.Kill() // Lambda discards an environment whose init failed
	case strings.HasPrefix(rest, "invocation/") && r.Method == http.MethodPost:
		id, verb, _ := strings.Cut(strings.TrimPrefix(rest, "invocation/"), "/")
		e.finish(w, r, id, verb)
	default:
		http.NotFound(w, r)
	}
}

// serveExtension is the Extensions API (version 2020-01-01), as far as a
// runtime's internal extension uses it:
//
//	POST /2020-01-01/extension/register   during Init only (403 after the
//	                                      runtime's first /next); header
//	                                      Lambda-Extension-Name, body
//	                                      {"events":["SHUTDOWN"]} (or none);
//	                                      → 200, Lambda-Extension-Identifier
//	GET  /2020-01-01/extension/event/next blocks until the environment shuts
//	                                      down; then, to an extension
//	                                      registered for SHUTDOWN,
//	                                      {"eventType":"SHUTDOWN",…}; the
//	                                      others stay blocked until the
//	                                      process ends
//
// A registered extension makes the shutdown graceful (SIGTERM, then
// SIGKILL after ShutdownGrace), which is all aws-lambda-go's
// WithEnableSIGTERM registers one for. INVOKE events are not emulated: a
// registration for them is refused (400) rather than silently never
// answered.
func (e *environment) serveExtension(w http.ResponseWriter, r *http.Request, rest string) {
	fail := func(code int, typ, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(Error{Type: typ, Message: msg})
	}
	switch {
	case rest == "register" && r.Method == http.MethodPost:
		name := r.Header.Get(headerExtensionName)
		var body struct {
			Events []string `json:"events"`
		}
		if name == "" {
			fail(http.StatusBadRequest, "Extension.InvalidRequest", "missing "+headerExtensionName)
			return
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil && !errors.Is(err, io.EOF) {
			fail(http.StatusBadRequest, "Extension.InvalidRequest", "body: "+err.Error())
			return
		}
		ext := &extension{name: name}
		for _, ev := range body.Events {
			switch ev {
			case "SHUTDOWN":
				ext.shutdown = true
			case "INVOKE":
				fail(http.StatusBadRequest, "Extension.InvalidRequest", "INVOKE events are not emulated by lambdarun")
				return
			default:
				fail(http.StatusBadRequest, "Extension.InvalidRequest", "unknown event "+ev)
				return
			}
		}
		id := newID()
		e.mu.Lock()
		if e.inited {
			e.mu.Unlock()
			fail(http.StatusForbidden, "Extension.InvalidRequest", "extensions register during Init only")
			return
		}
		e.exts[id] = ext
		e.mu.Unlock()
		w.Header().Set(headerExtensionID, id)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"functionName": e.f.opts.Name, "functionVersion": "$LATEST", "handler": "bootstrap"})
	case rest == "event/next" && r.Method == http.MethodGet:
		e.mu.Lock()
		ext := e.exts[r.Header.Get(headerExtensionID)]
		e.mu.Unlock()
		if ext == nil {
			fail(http.StatusForbidden, "Extension.UnknownExtensionIdentifier", "unknown "+headerExtensionID)
			return
		}
		select {
		case <-e.ending:
		case <-r.Context().Done():
			return
		}
		if !ext.shutdown {
			<-r.Context().Done() // no event it registered for: blocked until the process ends
			return
		}
		w.Header().Set(headerEventID, newID())
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"eventType": "SHUTDOWN", "shutdownReason": "spindown",
			"deadlineMs": time.Now().Add(ShutdownGrace).UnixMilli()})
	default:
		http.NotFound(w, r)
	}
}

// next hands the environment the next live invocation. Once the function
// closes it answers nothing: the environment is shut down meanwhile, and a
// runtime told anything else would end on its own, as none does on Lambda.
func (e *environment) next(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	first := !e.inited
	e.inited = true
	e.mu.Unlock()
	if first {
		// Lambda bills Init (process start to the first /next) on a
		// cold start: what InitDurations reports.
		d := time.Since(e.start)
		cpu, _ := ProcessCPU(e.cmd.Process.Pid) // all of it so far was Init's
		e.f.mu.Lock()
		e.f.inits = append(e.f.inits, d)
		e.f.initCPU = append(e.f.initCPU, cpu)
		e.f.mu.Unlock()
	}
	for {
		var inv *invocation
		select {
		case inv = <-e.f.queue:
		case <-e.f.stop:
			<-r.Context().Done()
			return
		case <-r.Context().Done():
			return
		}
		inv.mu.Lock()
		live := !inv.expired
		if live {
			inv.taken = true
			cpu, _ := ProcessCPU(e.cmd.Process.Pid)
			e.mu.Lock()
			e.cur = inv
			e.cpuAt = cpu
			e.mu.Unlock()
		}
		inv.mu.Unlock()
		if !live {
			continue
		}
		e.f.mu.Lock()
		e.f.busy++
		e.f.pending--
		e.f.mu.Unlock()
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:000000000000:function:"+e.f.opts.Name)
		h.Set("Lambda-Runtime-Trace-Id", "Root=1-"+inv.id[:8]+"-"+inv.id[8:]+";Sampled=0")
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(inv.payload)
		return
	}
}

// finish takes the reply (verb "response" or "error") to invocation id.
func (e *environment) finish(w http.ResponseWriter, r *http.Request, id, verb string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 6<<20)) // Lambda's payload limit
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	inv := e.cur
	if inv == nil || inv.id != id || (verb != "response" && verb != "error") {
		e.mu.Unlock()
		http.Error(w, `{"errorType":"InvalidRequestID"}`, http.StatusBadRequest)
		return
	}
	e.cur = nil
	var cpu time.Duration
	if now, ok := ProcessCPU(e.cmd.Process.Pid); ok && now > e.cpuAt {
		cpu = now - e.cpuAt
	}
	e.mu.Unlock()
	e.f.mu.Lock()
	e.f.busy--
	e.f.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	if verb == "response" {
		inv.done <- reply{body: body, cpu: cpu}
		return
	}
	fe := &Error{}
	if json.Unmarshal(body, fe) != nil || fe.Type == "" && fe.Message == "" {
		fe = &Error{Type: r.Header.Get("Lambda-Runtime-Function-Error-Type"), Message: string(body)}
	}
	inv.done <- reply{err: fe, cpu: cpu}
}

// Environments is the number of live execution environments.
func (f *Function) Environments() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.envs)
}

// InitDurations returns how long each environment's Init took so far,
// from the process's start to its first request for an invocation, in
// the order they finished: a cold start's init duration, which Lambda
// bills for provided runtimes.
func (f *Function) InitDurations() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.inits)
}

// InitCPU returns the CPU time each environment's process used during
// its Init (up to its first request for an invocation), in the order of
// InitDurations: what Lambda's CPU share would stretch in a cold start.
// Entries are 0 where the system cannot read it (CPUMeasured).
func (f *Function) InitCPU() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.initCPU)
}

// Close shuts every environment down, all at once, as Lambda does
// (environment.shutdown: SIGKILL, or SIGTERM and SIGKILL ShutdownGrace
// later when the runtime registered an extension; invocations still
// running fail) and waits for the processes to exit. It is safe to call
// more than once.
func (f *Function) Close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	close(f.stop)
	envs := make([]*environment, 0, len(f.envs))
	for e := range f.envs {
		envs = append(envs, e)
	}
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range envs {
		wg.Go(e.shutdown)
	}
	wg.Wait()
	f.wg.Wait()
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}
