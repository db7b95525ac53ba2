package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/xjobdev/xjob/pkg/executor"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// callbackAdmin stands in for the scheduling center's /api/callback: it
// passes every result an executor reports to results and accepts it.
func callbackAdmin(results chan<- protocol.HandleCallbackParam) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var batch []protocol.HandleCallbackParam
		if strings.HasSuffix(r.URL.Path, "/api/callback") && json.NewDecoder(r.Body).Decode(&batch) == nil {
			for _, p := range batch {
				results <- p
			}
		}
		_, _ = io.WriteString(w, `{"code":200}`)
	}))
}

// An executor registers handlers under their JobHandler names and serves
// the executor protocol over HTTP. The admin triggers a run with POST
// /run; the executor answers at once and reports the handler's result to
// the admin's /api/callback when the run ends.
func Example() {
	results := make(chan protocol.HandleCallbackParam, 1)
	admin := callbackAdmin(results)
	defer admin.Close()
	logDir, err := os.MkdirTemp("", "executor-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(logDir)

	e, err := executor.New(executor.Config{
		AdminAddresses: []string{admin.URL},
		AccessToken:    "secret", // the admin's accessToken
		LogDir:         logDir,
		Logger:         slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	err = e.Register("greet", func(ctx context.Context, job *executor.Job) error {
		job.Logf("greeting %s", job.Param) // the run's log, which the admin pages through /log
		job.Succeed("hello " + job.Param)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(); err != nil { // the callback sender
		log.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	// In production: e.ListenAndServe(ctx, grace), or mount e on your server.
	srv := httptest.NewServer(e)
	defer srv.Close()

	// What the admin sends when job 1 fires.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/run", strings.NewReader(`{"jobId":1,
		"executorHandler":"greet","executorParams":"world","executorBlockStrategy":"SERIAL_EXECUTION",
		"logId":42,"logDateTime":1700000000000,"glueType":"BEAN","broadcastIndex":0,"broadcastTotal":1}`))
	req.Header.Set(protocol.AccessTokenHeader, "secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	reply, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("reply:", string(reply))

	select {
	case r := <-results:
		fmt.Println("callback:", r.LogID, r.HandleCode, r.HandleMsg)
	case <-time.After(10 * time.Second):
		fmt.Println("no callback")
	}
	// Output:
	// reply: {"code":200}
	// callback: 42 200 hello world
}

// Serve answers one protocol call without HTTP, for a transport of your
// own (package lambdaexec serves Lambda function URLs with it). Calls
// without the access token are refused before any routing.
func ExampleExecutor_Serve() {
	logDir, err := os.MkdirTemp("", "executor-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(logDir)
	e, err := executor.New(executor.Config{AccessToken: "secret", LogDir: logDir,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for _, token := range []string{"secret", "guess"} {
		rt := e.Serve(ctx, executor.Request{Method: http.MethodPost, URI: "/beat", Token: token})
		fmt.Printf("token %q: %d %q\n", token, rt.Code, rt.Msg)
	}
	// Output:
	// token "secret": 200 ""
	// token "guess": 500 "The access token is wrong."
}

// A handler reports failure by returning an error (or with job.Fail);
// the admin then retries or alarms as the job says.
func ExampleHandlerFunc() {
	results := make(chan protocol.HandleCallbackParam, 1)
	admin := callbackAdmin(results)
	defer admin.Close()
	logDir, err := os.MkdirTemp("", "executor-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(logDir)
	e, err := executor.New(executor.Config{AdminAddresses: []string{admin.URL}, AccessToken: "secret",
		LogDir: logDir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	var export executor.HandlerFunc = func(ctx context.Context, job *executor.Job) error {
		if job.Param == "" {
			return fmt.Errorf("export: no table named")
		}
		return nil
	}
	if err := e.Register("export", export); err != nil {
		log.Fatal(err)
	}
	if err := e.Start(); err != nil {
		log.Fatal(err)
	}
	defer e.Shutdown(context.Background())

	rt := e.Serve(context.Background(), executor.Request{Method: http.MethodPost, URI: "/run", Token: "secret",
		Body: []byte(`{"jobId":7,"executorHandler":"export","logId":43,"logDateTime":1700000000000,
			"glueType":"BEAN","broadcastIndex":0,"broadcastTotal":1}`)})
	fmt.Println("queued:", rt.Code)
	select {
	case r := <-results:
		fmt.Println("callback:", r.LogID, r.HandleCode, r.HandleMsg)
	case <-time.After(10 * time.Second):
		fmt.Println("no callback")
	}
	// Output:
	// queued: 200
	// callback: 43 500 export: no table named
}
