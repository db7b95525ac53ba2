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
	"strconv"
	"strings"
	"sync"
	"time"
)

// apiPrefix is the Runtime API's path prefix (its only version).
const apiPrefix = "/2018-06-01/runtime/"

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
}

type environment struct {
	f    *Function
	cmd  *exec.Cmd
	srv  *http.Server
	mu   sync.Mutex
	cur  *invocation
	dead bool
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
	inv := &invocation{id: newID(), payload: payload, deadline: time.Now().Add(timeout), done: make(chan reply, 1)}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, errors.New("lambdarun: function closed")
	}
	f.pending++
	err := f.fill()
	f.mu.Unlock()
	if err != nil {
		f.abandon(inv)
		return nil, err
	}
	select {
	case f.queue <- inv:
	case <-ctx.Done():
		f.abandon(inv)
		return nil, ctx.Err()
	}
	// The runtime's own context ends at the deadline; the handler's reply
	// may take a moment more to arrive.
	t := time.NewTimer(time.Until(inv.deadline) + 250*time.Millisecond)
	defer t.Stop()
	select {
	case r := <-inv.done:
		return r.body, r.err
	case <-t.C:
	}
	if taken := f.abandon(inv); taken {
		select {
		case r := <-inv.done: // replied while we were deciding
			return r.body, r.err
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
	return nil, &Error{Type: "Sandbox.Timedout", Message: msg}
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
	e := &environment{f: f}
	e.srv = &http.Server{Handler: http.HandlerFunc(e.serve), ReadHeaderTimeout: 10 * time.Second}
	e.cmd = exec.Command(f.opts.Path)
	e.cmd.Env = append(f.lambdaEnv(ln.Addr().String()), f.opts.Env...)
	e.cmd.Stdout, e.cmd.Stderr = f.opts.Output, f.opts.Output
	if err := e.cmd.Start(); err != nil {
		_ = ln.Close()
		return fmt.Errorf("lambdarun %s: start %s: %w", f.opts.Name, f.opts.Path, err)
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
	why := "exited"
	if err != nil {
		why = err.Error()
	}
	_ = e.srv.Close()
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

// serve is one environment's Runtime API.
func (e *environment) serve(w http.ResponseWriter, r *http.Request) {
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

// next hands the environment the next live invocation.
func (e *environment) next(w http.ResponseWriter, r *http.Request) {
	for {
		var inv *invocation
		select {
		case inv = <-e.f.queue:
		case <-e.f.stop:
			http.Error(w, "shutting down", http.StatusGone)
			return
		case <-r.Context().Done():
			return
		}
		inv.mu.Lock()
		live := !inv.expired
		if live {
			inv.taken = true
			e.mu.Lock()
			e.cur = inv
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
	e.mu.Unlock()
	e.f.mu.Lock()
	e.f.busy--
	e.f.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	if verb == "response" {
		inv.done <- reply{body: body}
		return
	}
	fe := &Error{}
	if json.Unmarshal(body, fe) != nil || fe.Type == "" && fe.Message == "" {
		fe = &Error{Type: r.Header.Get("Lambda-Runtime-Function-Error-Type"), Message: string(body)}
	}
	inv.done <- reply{err: fe}
}

// Environments is the number of live execution environments.
func (f *Function) Environments() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.envs)
}

// Close ends every environment (invocations still running fail) and waits
// for the processes to exit. It is safe to call more than once.
func (f *Function) Close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	close(f.stop)
	for e := range f.envs {
		_ = e.cmd.Process.Kill()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}
