// Package callbackfn is the callback Lambda function, the executor API:
// behind its Lambda function URL it serves every route an xxl-job
// executor calls at its one admin address — results (POST /api/callback)
// and heartbeats (POST /api/registry, /api/registryRemove), also under
// /xxl-job-admin — and only those. A function URL with AuthType NONE
// takes any path, so every other path is a 404 and a misrouted request
// reaches nothing else; executorapi checks the access token of each
// request before it reads more than the route's body cap. The xjob SDK's
// job declarations (/api/xjob/declare) are the web function's: they are
// forwarded to its address when the deployment gives one (Config.WebURL;
// declare.go). The function links the callback and registry services and
// the executor routes of package executorapi, nothing of the admin side.
package callbackfn

import (
	"context"
	"fmt"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob/internal/adapter/sqsqueue"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/pipeline"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/web/executorapi"
)

// Function is the callback function.
type Function struct {
	b       *wiring.Base
	http    *executorapi.Handler
	declare http.Handler // nil without a web address
}

// New builds the callback function on b.
func New(b *wiring.Base) (*Function, error) {
	cb, err := pipeline.Callback(b)
	if err != nil {
		return nil, err
	}
	reg, err := pipeline.Registry(b)
	if err != nil {
		return nil, err
	}
	// With a results queue, a busy environment's callback requests are
	// recorded there and applied later with others (dispatchfn's
	// HandleResults), so a log page is written once per batch of requests,
	// not once per request; a quiet one's are written at once, which costs
	// less than a record applied alone (callback.Sparse).
	var rec executorapi.Callbacker = cb
	if url := b.Config.ResultsQueueURL; url != "" {
		queued := callback.NewRecorder(sqsqueue.NewQueue[callback.Recorded](b.Deps.SQS, url, b.Clock), b.Clock)
		rec = callback.NewSparse(cb, queued, callback.SparseOptions{Clock: b.Clock})
	}
	h, err := executorapi.New(executorapi.Config{Callback: rec, Registry: reg, Tokens: b.AccessTokens, Logger: b.Log})
	if err != nil {
		return nil, fmt.Errorf("lambda callback: %w", err)
	}
	f := &Function{b: b, http: h}
	if web := b.Config.WebURL; web != "" {
		f.declare = newDeclarer(h, web)
	}
	return f, nil
}

// Build is New as a wiring.Builder: the callback main's whole wiring.
func Build(b *wiring.Base) (any, error) {
	f, err := New(b)
	if err != nil {
		return nil, err
	}
	return f.Handle, nil
}

// Handle serves one function URL request. An HTTP API (payload 2.0) event
// has the same shape, so a route of an older deployment that still points
// here is served alike.
func (f *Function) Handle(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	defer f.b.FlushReports(ctx)
	switch wiring.URLPath(req) {
	case "/api/callback", "/api/registry", "/api/registryRemove",
		"/xxl-job-admin/api/callback", "/xxl-job-admin/api/registry", "/xxl-job-admin/api/registryRemove":
		return wiring.ServeFunctionURL(ctx, f.http, req)
	case "/api/xjob/declare", "/xxl-job-admin/api/xjob/declare":
		if f.declare != nil {
			return wiring.ServeFunctionURL(ctx, f.declare, req)
		}
	}
	return wiring.URLNotFound(), nil
}
