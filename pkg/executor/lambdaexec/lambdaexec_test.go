package lambdaexec

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/executor"
)

var t0 = time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)

// admin records the callback bodies an httptest scheduling center received.
type admin struct {
	mu     sync.Mutex
	bodies []string
}

func (a *admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.bodies = append(a.bodies, r.URL.Path+" "+string(b))
	a.mu.Unlock()
	_, _ = io.WriteString(w, `{"code":200}`)
}

func (a *admin) got() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.bodies...)
}

func setup(t *testing.T) (*executor.Executor, *admin, *clock.Fake) {
	t.Helper()
	a := &admin{}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	clk := clock.NewFake(t0)
	e, err := executor.New(executor.Config{
		AdminAddresses: []string{srv.URL},
		AccessToken:    "tok",
		LogDir:         t.TempDir(),
		Location:       time.UTC,
		Clock:          clk,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return e, a, clk
}

func fixture(t *testing.T) events.LambdaFunctionURLRequest {
	t.Helper()
	b, err := os.ReadFile("testdata/run-request.json")
	if err != nil {
		t.Fatal(err)
	}
	var req events.LambdaFunctionURLRequest
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	return req
}

func TestRunInlineCallsBackBeforeReturning(t *testing.T) {
	t.Parallel()
	e, a, _ := setup(t)
	_ = e.Register("demoJobHandler", func(_ context.Context, j *executor.Job) error {
		j.Logf("param %s", j.Param)
		return nil
	})
	resp, err := Handler(e)(context.Background(), fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Body != `{"code":200}` || resp.Headers["Content-Type"] != "text/html;charset=UTF-8" {
		t.Fatalf("response %+v", resp)
	}
	want := `/api/callback [{"logId":42,"logDateTim":1709287200000,"handleCode":200}]`
	if got := a.got(); len(got) != 1 || got[0] != want {
		t.Fatalf("admin got %q, want %q", got, want)
	}
}

func TestRunInlineBoundedByRemainingTime(t *testing.T) {
	t.Parallel()
	e, a, clk := setup(t)
	started := make(chan struct{})
	_ = e.Register("demoJobHandler", func(ctx context.Context, _ *executor.Job) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type result struct {
		resp events.LambdaFunctionURLResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		r, err := Handler(e)(ctx, fixture(t))
		done <- result{r, err}
	}()
	<-started
	if err := clk.WaitForSleepers(ctx, 1); err != nil { // the run's deadline
		t.Fatal(err)
	}
	clk.Advance(time.Minute) // past the invocation deadline less the reserve
	r := <-done
	if r.err != nil || r.resp.Body != `{"code":200}` {
		t.Fatalf("response %+v %v", r.resp, r.err)
	}
	want := `/api/callback [{"logId":42,"logDateTim":1709287200000,"handleCode":502,"handleMsg":"job execute timeout "}]`
	if got := a.got(); len(got) != 1 || got[0] != want {
		t.Fatalf("admin got %q, want %q", got, want)
	}
}

func TestOtherEndpoints(t *testing.T) {
	t.Parallel()
	e, a, _ := setup(t)
	h := Handler(e)
	tests := []struct {
		name, path, query, token, body string
		b64                            bool
		want                           string
	}{
		{"beat", "/beat", "", "tok", `""`, false, `{"code":200}`},
		{"idleBeat", "/idleBeat", "", "tok", `{"jobId":3}`, false, `{"code":200}`},
		{"kill", "/kill", "", "tok", `{"jobId":3}`, false, `{"code":200,"msg":"job thread already killed."}`},
		{"log", "/log", "", "tok", `{"logDateTim":1709287200000,"logId":42,"fromLineNum":1}`, false,
			`{"code":200,"content":{"fromLineNum":1,"toLineNum":0,"logContent":"readLog fail, logFile not exists","isEnd":true},"data":{"fromLineNum":1,"toLineNum":0,"logContent":"readLog fail, logFile not exists","isEnd":true}}`},
		{"base64", "/idleBeat", "", "tok", base64.StdEncoding.EncodeToString([]byte(`{"jobId":3}`)), true, `{"code":200}`},
		{"query", "/beat", "a=b", "tok", `""`, false, `{"code":500,"msg":"invalid request, uri-mapping(/beat?a=b) not found."}`},
		{"token", "/beat", "", "bad", `""`, false, `{"code":500,"msg":"The access token is wrong."}`},
		{"unknown handler", "/run", "", "tok", `{"jobId":3,"executorHandler":"x","logId":1,"glueType":"BEAN"}`, false,
			`{"code":500,"msg":"job handler [x] not found."}`},
	}
	for _, tt := range tests {
		req := events.LambdaFunctionURLRequest{
			RawPath: tt.path, RawQueryString: tt.query, Body: tt.body, IsBase64Encoded: tt.b64,
			Headers: map[string]string{"xxl-job-access-token": tt.token},
		}
		req.RequestContext.HTTP.Method = "POST"
		resp, err := h(context.Background(), req)
		if err != nil || resp.StatusCode != 200 || resp.Body != tt.want {
			t.Errorf("%s: got %d %s %v, want %s", tt.name, resp.StatusCode, resp.Body, err, tt.want)
		}
	}
	if got := a.got(); len(got) != 0 {
		t.Fatalf("unexpected admin calls %q", got)
	}
}
