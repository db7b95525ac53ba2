// Package callbackfn is the callback Lambda function: API Gateway routes
// executors' results (POST /api/callback, also under /xxl-job-admin) here,
// and only those. Every other path is a 404, so a misrouted request
// reaches nothing else; the function links the callback service and the
// executor routes of package executorapi, nothing of the admin side.
package callbackfn

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob/internal/adapter/sqsqueue"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/pipeline"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/web/executorapi"
)

// Function is the callback function.
type Function struct {
	b    *wiring.Base
	http *executorapi.Handler
}

// New builds the callback function on b.
func New(b *wiring.Base) (*Function, error) {
	cb, err := pipeline.Callback(b)
	if err != nil {
		return nil, err
	}
	// With a results queue, a callback request is recorded there and
	// applied later with others (dispatchfn's HandleResults), so a log page
	// is written once per batch of requests, not once per request.
	var rec executorapi.Callbacker = cb
	if url := b.Config.ResultsQueueURL; url != "" {
		rec = callback.NewRecorder(sqsqueue.NewQueue[callback.Recorded](b.Deps.SQS, url, b.Clock), b.Clock)
	}
	h, err := executorapi.New(executorapi.Config{Callback: rec, Tokens: b.AccessTokens, Logger: b.Log})
	if err != nil {
		return nil, fmt.Errorf("lambda callback: %w", err)
	}
	return &Function{b: b, http: h}, nil
}

// Build is New as a wiring.Builder: the callback main's whole wiring.
func Build(b *wiring.Base) (any, error) {
	f, err := New(b)
	if err != nil {
		return nil, err
	}
	return f.Handle, nil
}

// Handle serves one HTTP API request.
func (f *Function) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	defer f.b.FlushReports(ctx)
	switch wiring.RequestPath(req) {
	case "/api/callback", "/xxl-job-admin/api/callback":
		return wiring.ServeHTTPAPI(ctx, f.http, req)
	}
	return wiring.NotFound(), nil
}
