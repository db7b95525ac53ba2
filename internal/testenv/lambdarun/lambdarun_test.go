package lambdarun_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/xjobdev/xjob/internal/testenv/lambdarun"
)

// The test binary is its own bootstrap: started with roleEnv set, it runs
// lambda.Start with the handler below instead of the tests, so the real
// aws-lambda-go runtime client talks to the harness.
const roleEnv = "LAMBDARUN_TEST_BOOTSTRAP"

type request struct {
	Echo    string `json:"echo"`
	Fail    bool   `json:"fail"`
	Exit    bool   `json:"exit"`
	SleepMs int    `json:"sleepMs"`
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
	}
	lc, _ := lambdacontext.FromContext(ctx)
	dl, _ := ctx.Deadline()
	return response{Echo: r.Echo, RequestID: lc.AwsRequestID, Deadline: dl.UnixMilli(),
		Function: lambdacontext.FunctionName, Pid: os.Getpid()}, nil
}

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) != "" {
		lambda.Start(handler)
		return
	}
	os.Exit(m.Run())
}

func setup(t *testing.T, max int) *lambdarun.Function {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := lambdarun.Start(lambdarun.Options{Name: "echo", Path: self, Env: []string{roleEnv + "=1"}, Max: max})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
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
