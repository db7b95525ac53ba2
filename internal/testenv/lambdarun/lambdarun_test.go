package lambdarun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/xjobdev/xjob/internal/testenv/lambdarun"
)

// The test binary is its own bootstrap: started with roleEnv set, it runs
// lambda.Start with the handler below instead of the tests, so the real
// aws-lambda-go runtime client talks to the harness. The role says how:
//
//	plain     lambda.Start; it notes a SIGTERM in dirEnv/term, but
//	          registers no extension, so it should never get one
//	sigterm   lambda.StartWithOptions(WithEnableSIGTERM): the callback
//	          notes it in dirEnv/term and exits
//	stuck     as sigterm, but the callback then hangs; it notes in
//	          dirEnv/late should it ever get 3 s later
//	extension registers its own extension for the events of eventsEnv,
//	          notes each answer in dirEnv, then lambda.Start
const (
	roleEnv   = "LAMBDARUN_TEST_BOOTSTRAP"
	dirEnv    = "LAMBDARUN_TEST_DIR"
	eventsEnv = "LAMBDARUN_TEST_EVENTS"
)

type request struct {
	Echo    string `json:"echo"`
	Fail    bool   `json:"fail"`
	Exit    bool   `json:"exit"`
	SleepMs int    `json:"sleepMs"`
	// SpinMs burns that much of the process's CPU (user and system, as
	// getrusage counts it) in a busy loop.
	SpinMs int `json:"spinMs"`
	// Register registers an extension during the invocation (after
	// Init) and answers the status as Echo.
	Register bool `json:"register"`
}

type response struct {
	Echo      string `json:"echo"`
	RequestID string `json:"requestId"`
	Deadline  int64  `json:"deadlineMs"`
	Function  string `json:"function"`
	Pid       int    `json:"pid"`
}

func handler(ctx context.Context, r request) (response, error) {
	switch {
	case r.Fail:
		return response{}, errors.New("asked to fail")
	case r.Exit:
		os.Exit(3)
	case r.SleepMs > 0:
		time.Sleep(time.Duration(r.SleepMs) * time.Millisecond)
	case r.SpinMs > 0:
		spin(time.Duration(r.SpinMs) * time.Millisecond)
	case r.Register:
		code, _ := register(nil)
		r.Echo = fmt.Sprint(code)
	}
	lc, _ := lambdacontext.FromContext(ctx)
	dl, _ := ctx.Deadline()
	return response{Echo: r.Echo, RequestID: lc.AwsRequestID, Deadline: dl.UnixMilli(),
		Function: lambdacontext.FunctionName, Pid: os.Getpid()}, nil
}

// spin keeps a core busy until the process has used d more CPU time.
func spin(d time.Duration) {
	used := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	end := used() + d
	for x := uint64(1); used() < end; x++ {
		for i := range 10000 {
			x = x*6364136223846793005 + uint64(i)
		}
		sink = x
	}
}

var sink uint64

func TestMain(m *testing.M) {
	note := func(name, text string) {
		_ = os.WriteFile(filepath.Join(os.Getenv(dirEnv), name), []byte(text), 0o644)
	}
	switch os.Getenv(roleEnv) {
	case "":
		os.Exit(m.Run())
	case "sigterm":
		lambda.StartWithOptions(handler, lambda.WithEnableSIGTERM(func() {
			note("term", "flushed")
			os.Exit(0)
		}))
	case "stuck":
		lambda.StartWithOptions(handler, lambda.WithEnableSIGTERM(func() {
			note("term", "flushed")
			time.Sleep(3 * time.Second)
			note("late", "not killed")
		}))
	case "extension":
		runExtension(note)
		lambda.Start(handler)
	default:
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		go func() {
			<-sig
			note("term", "SIGTERM without an extension")
		}()
		lambda.Start(handler)
	}
}

// extensionURL is the Extensions API's base address in a bootstrap.
func extensionURL() string {
	return "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2020-01-01/extension/"
}

// register registers an extension for events; it returns the status and
// the identifier.
func register(events []string) (int, string) {
	body, _ := json.Marshal(map[string][]string{"events": events})
	req, _ := http.NewRequest(http.MethodPost, extensionURL()+"register", bytes.NewReader(body))
	req.Header.Set("Lambda-Extension-Name", "lambdarun-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Lambda-Extension-Identifier")
}

// runExtension is the extension role's Init: it registers for the events
// of eventsEnv (noting "register": status), asks for an event under an
// identifier never issued (noting "unknown": status) and, in the
// background, under its own (noting "event": status and body, when it is
// answered). On SIGTERM it gives that answer a moment to be noted, then
// exits.
func runExtension(note func(name, text string)) {
	var events []string
	if v := os.Getenv(eventsEnv); v != "" {
		events = strings.Split(v, ",")
	}
	code, id := register(events)
	note("register", fmt.Sprint(code))
	if code != http.StatusOK {
		return
	}
	next := func(id string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, extensionURL()+"event/next", nil)
		req.Header.Set("Lambda-Extension-Identifier", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, _ = next("never-issued")
	note("unknown", fmt.Sprint(code))
	answered := make(chan struct{})
	go func() {
		code, body := next(id)
		note("event", fmt.Sprint(code, " ", body))
		close(answered)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	go func() {
		<-sig
		select {
		case <-answered:
		case <-time.After(200 * time.Millisecond):
		}
		os.Exit(0)
	}()
}

func setup(t *testing.T, max int) *lambdarun.Function {
	t.Helper()
	return setupRole(t, max, "plain", t.TempDir())
}

// setupRole starts the test bootstrap in role, noting into dir.
func setupRole(t *testing.T, max int, role, dir string, env ...string) *lambdarun.Function {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := lambdarun.Start(lambdarun.Options{Name: "echo", Path: self, Max: max,
		Env: append([]string{roleEnv + "=" + role, dirEnv + "=" + dir}, env...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// noted is what a bootstrap noted in dir as name ("" if nothing).
func noted(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

func invoke(t *testing.T, f *lambdarun.Function, req request, timeout time.Duration) (response, error) {
	t.Helper()
	b, _ := json.Marshal(req)
	out, err := f.Invoke(context.Background(), b, timeout)
	var resp response
	if err == nil {
		if jerr := json.Unmarshal(out, &resp); jerr != nil {
			t.Fatalf("response %q: %v", out, jerr)
		}
	}
	return resp, err
}

func TestInvoke(t *testing.T) {
	t.Parallel()
	f := setup(t, 1)
	before := time.Now()
	resp, err := invoke(t, f, request{Echo: "hi"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Echo != "hi" || len(resp.RequestID) != 32 || resp.Function != "echo" {
		t.Errorf("response %+v", resp)
	}
	if dl := time.UnixMilli(resp.Deadline); dl.Before(before.Add(4*time.Second)) || dl.After(time.Now().Add(5*time.Second)) {
		t.Errorf("handler deadline %v, want about 5 s after the invocation", dl)
	}
	// The same environment serves the next invocation (a warm start).
	again, err := invoke(t, f, request{Echo: "again"}, 5*time.Second)
	if err != nil || again.Pid != resp.Pid || again.RequestID == resp.RequestID {
		t.Errorf("second invocation %+v %v, want the same pid %d and a new request id", again, err, resp.Pid)
	}
	// One environment, one cold start: one Init, no longer than the
	// whole first invocation took.
	if inits := f.InitDurations(); len(inits) != 1 || inits[0] <= 0 || inits[0] > time.Since(before) {
		t.Errorf("init durations %v, want one, within the test's time", inits)
	}

	_, err = invoke(t, f, request{Fail: true}, 5*time.Second)
	var fe *lambdarun.Error
	if !errors.As(err, &fe) || !strings.Contains(fe.Message, "asked to fail") {
		t.Errorf("handler error: %v", err)
	}
}

func TestTimeoutAndExitEndTheEnvironment(t *testing.T) {
	t.Parallel()
	f := setup(t, 1)
	first, err := invoke(t, f, request{}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = invoke(t, f, request{SleepMs: 3000}, 300*time.Millisecond)
	var fe *lambdarun.Error
	if !errors.As(err, &fe) || fe.Type != "Sandbox.Timedout" {
		t.Fatalf("slow invocation: %v, want a timeout", err)
	}
	after, err := invoke(t, f, request{}, 5*time.Second)
	if err != nil || after.Pid == first.Pid {
		t.Errorf("after a timeout: %+v %v, want a new environment (not pid %d)", after, err, first.Pid)
	}
	_, err = invoke(t, f, request{Exit: true}, 5*time.Second)
	if !errors.As(err, &fe) || fe.Type != "Runtime.ExitError" {
		t.Errorf("exit during an invocation: %v", err)
	}
	if _, err := invoke(t, f, request{Echo: "x"}, 5*time.Second); err != nil {
		t.Errorf("after an exit: %v", err)
	}
}

func TestConcurrencyIsBoundedByMax(t *testing.T) {
	t.Parallel()
	const max = 3
	f := setup(t, max)
	var wg sync.WaitGroup
	var mu sync.Mutex
	pids := map[int]bool{}
	for i := range 2 * max {
		wg.Go(func() {
			resp, err := invoke(t, f, request{Echo: fmt.Sprint(i), SleepMs: 300}, 10*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			pids[resp.Pid] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(pids) > max || f.Environments() > max {
		t.Errorf("%d environments served, %d live, want ≤ %d", len(pids), f.Environments(), max)
	}
	if len(pids) < 2 {
		t.Errorf("only %d environment served %d concurrent invocations", len(pids), 2*max)
	}
}

// Shutdown as Lambda does it: a runtime that registered an extension
// (aws-lambda-go's WithEnableSIGTERM) gets SIGTERM when its environment
// shuts down and may write what it holds before it exits; one still
// running ShutdownGrace later is killed; one that registered none is
// killed at once, never signalled.
func TestShutdown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		role       string
		term, late string // what the bootstrap notes
	}{
		{"plain", "", ""},
		{"sigterm", "flushed", ""},
		{"stuck", "flushed", ""},
	} {
		t.Run(tc.role, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			f := setupRole(t, 2, tc.role, dir)
			var wg sync.WaitGroup
			for range 2 { // two environments, both shut down
				wg.Go(func() {
					if _, err := invoke(t, f, request{Echo: "x", SleepMs: 200}, 5*time.Second); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			start := time.Now()
			f.Close()
			took := time.Since(start)
			if got := noted(t, dir, "term"); got != tc.term {
				t.Errorf("noted on SIGTERM %q, want %q", got, tc.term)
			}
			if f.Environments() != 0 {
				t.Errorf("%d environments live after Close", f.Environments())
			}
			// The stuck runtime was killed, not waited for (it would note
			// "late" 3 s after SIGTERM).
			time.Sleep(100 * time.Millisecond)
			if tc.role == "stuck" {
				if took < lambdarun.ShutdownGrace {
					t.Errorf("a runtime still running after SIGTERM was killed after %s, before the %s grace", took, lambdarun.ShutdownGrace)
				}
				if got := noted(t, dir, "late"); got != "" {
					t.Errorf("the stuck runtime ran on past its grace: noted %q", got)
				}
			}
		})
	}
}

// The Extensions API: registration during Init only, an unknown
// identifier refused, INVOKE events refused as not emulated, and
// event/next answered with SHUTDOWN only to an extension registered for
// it, when its environment shuts down.
func TestExtensionsAPI(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, events      string
		register, unknown string
		event             string // prefix of the noted answer
	}{
		{"shutdown", "SHUTDOWN", "200", "403", `200 {"deadlineMs":`},
		{"no events", "", "200", "403", ""},
		{"invoke", "INVOKE", "400", "", ""},
		{"unknown event", "RESTART", "400", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			f := setupRole(t, 1, "extension", dir, eventsEnv+"="+tc.events)
			// After Init, no registration.
			resp, err := invoke(t, f, request{Register: true}, 5*time.Second)
			if err != nil || resp.Echo != "403" {
				t.Errorf("registration after Init: %+v %v, want 403", resp, err)
			}
			if got := noted(t, dir, "register"); got != tc.register {
				t.Errorf("registration for %q: %s, want %s", tc.events, got, tc.register)
			}
			if got := noted(t, dir, "unknown"); got != tc.unknown {
				t.Errorf("event/next of an unknown identifier: %q, want %q", got, tc.unknown)
			}
			if got := noted(t, dir, "event"); got != "" {
				t.Errorf("event/next answered before the shutdown: %s", got)
			}
			f.Close()
			got := noted(t, dir, "event")
			if !strings.HasPrefix(got, tc.event) || (tc.event == "") != (got == "") {
				t.Errorf("event/next at shutdown: %q, want %q…", got, tc.event)
			}
			if tc.event != "" && !strings.Contains(got, `"eventType":"SHUTDOWN"`) {
				t.Errorf("event/next at shutdown: %q, want a SHUTDOWN event", got)
			}
		})
	}
}

// TestInvocationCPU shows that InvokeCPU reports the CPU the environment
// used for the invocation and not its wall time: a handler that spins
// for a known CPU time shows that time, one that sleeps shows about none.
func TestInvocationCPU(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the process CPU clock is read on Linux only")
	}
	if !lambdarun.CPUMeasured {
		t.Fatal("CPUMeasured is false on Linux")
	}
	tests := []struct {
		name     string
		req      request
		min, max time.Duration // CPU
		minWall  time.Duration
	}{
		{"spins 300 ms", request{SpinMs: 300}, 300 * time.Millisecond, 450 * time.Millisecond, 0},
		{"sleeps 300 ms", request{SleepMs: 300}, 0, 30 * time.Millisecond, 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, 1)
			// A warm-up invocation: the cold start's Init is not the
			// invocation's.
			if _, err := invoke(t, f, request{Echo: "warm"}, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			if ic := f.InitCPU(); len(ic) != 1 || ic[0] <= 0 {
				t.Errorf("init CPU %v, want one, above 0", ic)
			}
			b, _ := json.Marshal(tt.req)
			start := time.Now()
			_, cpu, err := f.InvokeCPU(context.Background(), b, 10*time.Second)
			wall := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if cpu < tt.min || cpu > tt.max || wall < tt.minWall {
				t.Errorf("CPU %v (wall %v), want %v to %v (wall at least %v)", cpu, wall, tt.min, tt.max, tt.minWall)
			}
		})
	}
}

// TestCPUShareStretchesCPUBoundWork: an environment limited to a quarter
// of a core takes at least three times as long as its CPU for a handler
// that spins, as Lambda at a quarter of a vCPU would.
func TestCPUShareStretchesCPUBoundWork(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the CPU quota is Linux's cgroup cpu controller")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := lambdarun.Start(lambdarun.Options{Name: "quota", Path: self, Max: 1, CPUShare: 0.25,
		Env: []string{roleEnv + "=plain", dirEnv + "=" + t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	if _, err := invoke(t, f, request{Echo: "warm"}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(request{SpinMs: 200})
	start := time.Now()
	_, cpu, err := f.InvokeCPU(context.Background(), b, 20*time.Second)
	wall := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if cpu < 200*time.Millisecond || wall < 3*cpu {
		t.Errorf("spinning 200 ms at a quarter of a core: CPU %v, wall %v; want wall at least 3× the CPU", cpu, wall)
	}
}
