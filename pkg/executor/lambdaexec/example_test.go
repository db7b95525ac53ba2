package lambdaexec_test

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

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob/pkg/executor"
	"github.com/xjobdev/xjob/pkg/executor/lambdaexec"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// A Lambda function serves the executor's handlers at its function URL:
// main builds the executor once and hands lambda.Start the handler,
//
//	lambda.Start(lambdaexec.Handler(e))
//
// Here the handler gets the event Lambda would pass for the admin's POST
// /run. In the BUFFERED invoke mode the run happens inside the
// invocation, and its result reaches the admin's /api/callback before the
// reply (StreamingHandler replies first, for longer jobs).
func Example() {
	results := make(chan protocol.HandleCallbackParam, 1)
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var batch []protocol.HandleCallbackParam
		if json.NewDecoder(r.Body).Decode(&batch) == nil {
			for _, p := range batch {
				results <- p
			}
		}
		_, _ = io.WriteString(w, `{"code":200}`)
	}))
	defer admin.Close()
	logDir, err := os.MkdirTemp("", "lambdaexec-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(logDir)

	e, err := executor.New(executor.Config{
		AdminAddresses: []string{admin.URL},
		AccessToken:    "secret",
		LogDir:         logDir, // on Lambda: under /tmp, the one writable place
		Logger:         slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	err = e.Register("resize", func(ctx context.Context, job *executor.Job) error {
		job.Succeed("resized " + job.Param)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	handler := lambdaexec.Handler(e)

	var event events.LambdaFunctionURLRequest
	event.RequestContext.HTTP.Method = http.MethodPost
	event.RawPath = "/run"
	event.Headers = map[string]string{strings.ToLower(protocol.AccessTokenHeader): "secret"} // Lambda lower-cases names
	event.Body = `{"jobId":3,"executorHandler":"resize","executorParams":"cat.png","logId":44,
		"logDateTime":1700000000000,"glueType":"BEAN","broadcastIndex":0,"broadcastTotal":1}`
	resp, err := handler(context.Background(), event)
	if err != nil {
		log.Fatal(err)
	}
	select {
	case r := <-results:
		fmt.Println("callback:", r.LogID, r.HandleCode, r.HandleMsg)
	default:
		fmt.Println("no callback before the reply")
	}
	fmt.Println("reply:", resp.StatusCode, resp.Body)
	// Output:
	// callback: 44 200 resized cat.png
	// reply: 200 {"code":200}
}
