package lambdaexec

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/exechttp"
	"github.com/xjobdev/xjob/pkg/executor"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// firstValue reads the reply's JSON value off a streaming body without
// waiting for the end of the stream, as the dispatcher does.
func firstValue(t *testing.T, body io.Reader) (string, *json.Decoder) {
	t.Helper()
	dec := json.NewDecoder(body)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("decode reply: %v", err)
	}
	return string(raw), dec
}

// rest reads what remains of a streaming body up to its end.
func rest(t *testing.T, dec *json.Decoder, body io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(io.MultiReader(dec.Buffered(), body))
	if err != nil {
		t.Fatalf("read rest of stream: %v", err)
	}
	return string(b)
}

func TestStreamingRunRepliesBeforeJobFinishes(t *testing.T) {
	t.Parallel()
	e, a, _ := setup(t)
	started, release := make(chan struct{}), make(chan struct{})
	_ = e.Register("demoJobHandler", func(_ context.Context, j *executor.Job) error {
		close(started)
		<-release
		j.Logf("param %s", j.Param)
		return nil
	})
	resp, err := StreamingHandler(e)(context.Background(), fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Headers["Content-Type"] != exechttp.ContentType {
		t.Fatalf("response %d %v", resp.StatusCode, resp.Headers)
	}
	got, dec := firstValue(t, resp.Body)
	if got != `{"code":200}` {
		t.Fatalf("reply %s, want {\"code\":200}", got)
	}
	<-started // the job is running and blocked: the reply came first
	if got := a.got(); len(got) != 0 {
		t.Fatalf("callback before the job finished: %q", got)
	}

	close(release)
	if r := rest(t, dec, resp.Body); r != "" {
		t.Fatalf("stream carried %q after the reply", r)
	}
	// The stream ended only after the callback was delivered.
	want := `/api/callback [{"logId":42,"logDateTim":1709287200000,"handleCode":200}]`
	if got := a.got(); len(got) != 1 || got[0] != want {
		t.Fatalf("admin got %q at the end of the stream, want %q", got, want)
	}
	if err := resp.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestStreamingRunBoundedByRemainingTime(t *testing.T) {
	t.Parallel()
	e, a, clk := setup(t)
	_ = e.Register("demoJobHandler", func(ctx context.Context, _ *executor.Job) error {
		<-ctx.Done()
		return ctx.Err()
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := StreamingHandler(e)(ctx, fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	got, dec := firstValue(t, resp.Body)
	if got != `{"code":200}` {
		t.Fatalf("reply %s", got)
	}
	if err := clk.WaitForSleepers(ctx, 1); err != nil { // the run's deadline
		t.Fatal(err)
	}
	clk.Advance(time.Minute) // past the invocation deadline less the reserve
	if r := rest(t, dec, resp.Body); r != "" {
		t.Fatalf("stream carried %q after the reply", r)
	}
	want := `/api/callback [{"logId":42,"logDateTim":1709287200000,"handleCode":502,"handleMsg":"job execute timeout "}]`
	if got := a.got(); len(got) != 1 || got[0] != want {
		t.Fatalf("admin got %q, want %q", got, want)
	}
}

// TestStreamingRefusalsAndOtherEndpoints: everything but an accepted /run
// is one complete reply, and a refused trigger runs nothing.
func TestStreamingRefusalsAndOtherEndpoints(t *testing.T) {
	t.Parallel()
	e, a, _ := setup(t)
	ran := make(chan struct{}, 10)
	_ = e.Register("demoJobHandler", func(context.Context, *executor.Job) error {
		ran <- struct{}{}
		return nil
	})
	h := StreamingHandler(e)
	run := `{"jobId":3,"executorHandler":"demoJobHandler","logId":1,"glueType":"BEAN"}`
	tests := []struct {
		name, method, path, token, body string
		b64                             bool
		wantStatus                      int
		want                            string
	}{
		{"beat", "POST", "/beat", "tok", `""`, false, 200, `{"code":200}`},
		{"idleBeat", "POST", "/idleBeat", "tok", `{"jobId":3}`, false, 200, `{"code":200}`},
		{"kill", "POST", "/kill", "tok", `{"jobId":3}`, false, 200, `{"code":200,"msg":"job thread already killed."}`},
		{"log", "POST", "/log", "tok", `{"logDateTim":1709287200000,"logId":42,"fromLineNum":1}`, false, 200,
			`{"code":200,"content":{"fromLineNum":1,"toLineNum":0,"logContent":"readLog fail, logFile not exists","isEnd":true},"data":{"fromLineNum":1,"toLineNum":0,"logContent":"readLog fail, logFile not exists","isEnd":true}}`},
		{"base64", "POST", "/idleBeat", "tok", base64.StdEncoding.EncodeToString([]byte(`{"jobId":3}`)), true, 200, `{"code":200}`},
		{"bad base64", "POST", "/run", "tok", "%%%", true, 200, ""},
		{"too large", "POST", "/run", "tok", strings.Repeat(" ", executor.MaxBodyBytes+1), false, 413, "request body too large"},
		{"run wrong token", "POST", "/run", "bad", run, false, 200, `{"code":500,"msg":"The access token is wrong."}`},
		{"run wrong method", "GET", "/run", "tok", run, false, 200, `{"code":500,"msg":"invalid request, HttpMethod not support."}`},
		{"run with query", "POST", "/run", "tok", run, false, 200, ""},
		{"run bad json", "POST", "/run", "tok", `{"jobId":`, false, 200, ""},
		{"run unknown handler", "POST", "/run", "tok", `{"jobId":3,"executorHandler":"x","logId":1,"glueType":"BEAN"}`, false, 200,
			`{"code":500,"msg":"job handler [x] not found."}`},
		{"run glue", "POST", "/run", "tok", `{"jobId":3,"logId":1,"glueType":"GLUE_SHELL"}`, false, 200, ""},
	}
	for _, tt := range tests {
		req := events.LambdaFunctionURLRequest{
			RawPath: tt.path, Body: tt.body, IsBase64Encoded: tt.b64,
			Headers: map[string]string{"xxl-job-access-token": tt.token},
		}
		if tt.name == "run with query" {
			req.RawQueryString = "a=b"
		}
		req.RequestContext.HTTP.Method = tt.method
		resp, err := h(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		body, err := io.ReadAll(resp.Body) // ends: nothing keeps the stream open
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if resp.StatusCode != tt.wantStatus {
			t.Errorf("%s: status %d, want %d", tt.name, resp.StatusCode, tt.wantStatus)
		}
		switch {
		case tt.want != "" && string(body) != tt.want:
			t.Errorf("%s: body %s, want %s", tt.name, body, tt.want)
		case tt.want == "" && !strings.HasPrefix(string(body), `{"code":500,"msg":`):
			t.Errorf("%s: body %s, want a failure reply", tt.name, body)
		}
	}
	select {
	case <-ran:
		t.Fatal("a refused trigger ran")
	default:
	}
	if got := a.got(); len(got) != 0 {
		t.Fatalf("unexpected admin calls %q", got)
	}
}

func TestStreamingRunRefusedWhileShuttingDown(t *testing.T) {
	t.Parallel()
	e, a, _ := setup(t)
	_ = e.Register("demoJobHandler", func(context.Context, *executor.Job) error { return nil })
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, err := StreamingHandler(e)(context.Background(), fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != `{"code":500,"msg":"executor is shutting down."}` {
		t.Fatalf("body %s", body)
	}
	if got := a.got(); len(got) != 0 {
		t.Fatalf("unexpected admin calls %q", got)
	}
}

// TestStreamingWireFormat checks what lambda.Start sends to the runtime
// API: the HTTP integration prelude, eight NUL bytes, then the body.
func TestStreamingWireFormat(t *testing.T) {
	t.Parallel()
	e, _, _ := setup(t)
	req := events.LambdaFunctionURLRequest{RawPath: "/beat", Body: `""`,
		Headers: map[string]string{"xxl-job-access-token": "tok"}}
	req.RequestContext.HTTP.Method = "POST"
	resp, err := StreamingHandler(e)(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ContentType() != "application/vnd.awslambda.http-integration-response" {
		t.Fatalf("content type %q", resp.ContentType())
	}
	b, err := io.ReadAll(resp)
	if err != nil {
		t.Fatal(err)
	}
	prelude, body, ok := bytes.Cut(b, make([]byte, 8))
	if !ok {
		t.Fatalf("no prelude separator in %q", b)
	}
	if string(prelude) != `{"statusCode":200,"headers":{"Content-Type":"text/html;charset=UTF-8"}}` || string(body) != `{"code":200}` {
		t.Fatalf("prelude %s body %s", prelude, body)
	}
}

// functionURL plays a RESPONSE_STREAM function URL in front of the
// streaming handler: it turns the HTTP request into the Lambda event and
// relays the response stream, flushing each chunk as it is read, as the
// Lambda runtime and function URL do. ended is closed when the stream ends.
func functionURL(t *testing.T, h StreamingHandlerFunc, ended chan<- struct{}) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		b, _ := io.ReadAll(r.Body)
		req := events.LambdaFunctionURLRequest{RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery,
			Body: string(b), Headers: map[string]string{}}
		for k := range r.Header {
			req.Headers[strings.ToLower(k)] = r.Header.Get(k)
		}
		req.RequestContext.HTTP.Method = r.Method
		resp, err := h(context.WithoutCancel(r.Context()), req) // a client disconnect does not stop an invocation
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Close()
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 512)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				_, _ = w.Write(buf[:n]) // may fail once the client is gone; keep draining like Lambda
				w.(http.Flusher).Flush()
			}
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestStreamingWithDispatcherClient runs xjob's dispatcher client against
// the streaming handler behind a simulated function URL: Run gets its 200
// while the job still runs, and the result arrives by callback.
func TestStreamingWithDispatcherClient(t *testing.T) {
	t.Parallel()
	e, a, _ := setup(t)
	release := make(chan struct{})
	_ = e.Register("demoJobHandler", func(context.Context, *executor.Job) error {
		<-release
		return nil
	})
	ended := make(chan struct{})
	srv := functionURL(t, StreamingHandler(e), ended)
	c, err := execclient.New(execclient.Options{AccessToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	r := c.Run(context.Background(), srv.URL+"/", protocol.TriggerParam{JobID: 3, ExecutorHandler: "demoJobHandler",
		LogID: 43, LogDateTime: 1709287200000, GlueType: "BEAN", BroadcastTotal: 1})
	if r.Code != protocol.SuccessCode {
		t.Fatalf("Run = %d %q, want 200 before the job finished", r.Code, r.Msg)
	}
	if got := a.got(); len(got) != 0 {
		t.Fatalf("callback before the job finished: %q", got)
	}
	close(release)
	<-ended
	want := `/api/callback [{"logId":43,"logDateTim":1709287200000,"handleCode":200}]`
	if got := a.got(); len(got) != 1 || got[0] != want {
		t.Fatalf("admin got %q, want %q", got, want)
	}
}

// TestStreamingThroughLambdaStart goes through the reflection wrapper that
// lambda.Start builds: it must hand the streaming response over as a
// reader (not as JSON) and read it to the end, callback included.
func TestStreamingThroughLambdaStart(t *testing.T) {
	t.Parallel()
	e, a, _ := setup(t)
	_ = e.Register("demoJobHandler", func(context.Context, *executor.Job) error { return nil })
	payload, err := os.ReadFile("testdata/run-request.json")
	if err != nil {
		t.Fatal(err)
	}
	out, err := lambda.NewHandler(StreamingHandler(e)).Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"statusCode":200,"headers":{"Content-Type":"text/html;charset=UTF-8"}}` + string(make([]byte, 8)) + `{"code":200}`
	if string(out) != want {
		t.Fatalf("runtime response %q, want %q", out, want)
	}
	if got := a.got(); len(got) != 1 || !strings.Contains(got[0], `"handleCode":200`) {
		t.Fatalf("admin got %q, want the callback before the invocation ended", got)
	}
}
