package lambdaapp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/callbackfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/dispatchfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/registryfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/ringfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/scanfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/webfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/scheduler/scan"
)

// Config, Deps and LoadConfig are package wiring's, the shared part.
type (
	Config = wiring.Config
	Deps   = wiring.Deps
)

// ScanTunables keeps the fields of c a test may override (wiring.ScanTunables).
func ScanTunables(c scan.Tunables) wiring.ScanTunables {
	return wiring.ScanTunables{PreRead: c.PreRead, Advance: c.Advance, TickBudget: c.TickBudget, LeaseTTL: c.LeaseTTL, RingLead: c.RingLead,
		AdvanceRate: c.AdvanceRate}
}

// LoadConfig reads function name's configuration (wiring.LoadConfig).
func LoadConfig(name string, getenv func(string) string) (Config, error) {
	return wiring.LoadConfig(name, getenv)
}

// Payloads and tunables of the functions, for tests and tools.
type (
	ManualTrigger     = dispatchfn.ManualTrigger
	ManualResult      = dispatchfn.ManualResult
	MaintenanceResult = registryfn.MaintenanceResult
)

const (
	RingTimeout        = ringfn.RingTimeout
	ScanHorizon        = wiring.ScanHorizon
	DefaultScanAdvance = wiring.DefaultScanAdvance
	MaxScanAdvance     = wiring.MaxScanAdvance

	DefaultScanAdvanceRate = wiring.DefaultScanAdvanceRate
)

// App is one function's wired services, built as its main builds them.
// Exactly one of the function fields is set, the one of Config.Function.
type App struct {
	base     *wiring.Base
	scan     *scanfn.Function
	ring     *ringfn.Function
	dispatch *dispatchfn.Function
	callback *callbackfn.Function
	registry *registryfn.Function
	web      *webfn.Function
}

// New builds function cfg.Function on the clients of d, as its main does;
// its only I/O is reading the secrets when cfg names SSM parameters.
func New(cfg Config, d Deps) (*App, error) {
	b, err := wiring.NewBase(cfg, d)
	if err != nil {
		return nil, err
	}
	if err := b.LoadSecrets(context.Background()); err != nil {
		return nil, err
	}
	a := &App{base: b}
	switch cfg.Function {
	case "scan":
		a.scan, err = scanfn.New(b)
	case "ring":
		a.ring, err = ringfn.New(b)
	case "dispatch":
		a.dispatch, err = dispatchfn.New(b)
	case "callback":
		a.callback, err = callbackfn.New(b)
	case "registry":
		a.registry, err = registryfn.New(b)
	case "web":
		a.web, err = webfn.New(b)
	default:
		err = fmt.Errorf("lambdaapp: no function %q", cfg.Function)
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Handler is the handler Lambda calls for the App's function: what the
// function's main serves with lambda.Start, and what the emulated
// deployment invokes in-process through the same JSON boundary
// (lambda.NewHandler).
func (a *App) Handler() any {
	switch {
	case a.scan != nil:
		return a.scan.Handle
	case a.ring != nil:
		return a.ring.Handle
	case a.dispatch != nil:
		return a.dispatch.Handle
	case a.callback != nil:
		return a.callback.Handle
	case a.registry != nil:
		return a.registry.Handle
	}
	return a.web.Handle
}

// Shutdown is what the function's main runs when Lambda shuts its
// environment down (SIGTERM, wiring.Main): it writes the run-report counts
// and EMF records the environment held back (wiring.Base.Shutdown). The
// emulated deployment runs it when it ends an in-process environment.
func (a *App) Shutdown(ctx context.Context) { a.base.Shutdown(ctx) }

// Store returns the App's DynamoDB store (tests and table bootstrap).
func (a *App) Store() *dynamostore.DB { return a.base.Store }

// Scan is the scan function's handler.
func (a *App) Scan(ctx context.Context, ev events.EventBridgeEvent) error {
	return a.scan.Handle(ctx, ev)
}

// Ring is the ring function's handler.
func (a *App) Ring(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return a.ring.Handle(ctx, ev)
}

// Dispatch is the dispatch function's handler (SQS event or manual trigger).
func (a *App) Dispatch(ctx context.Context, raw json.RawMessage) (any, error) {
	return a.dispatch.Handle(ctx, raw)
}

// DispatchSQS is the dispatch function's handler of an SQS event.
func (a *App) DispatchSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return a.dispatch.HandleSQS(ctx, ev)
}

// Registry is the registry function's handler (HTTP event or maintenance).
func (a *App) Registry(ctx context.Context, raw json.RawMessage) (any, error) {
	return a.registry.Handle(ctx, raw)
}

// HTTP serves one HTTP API request with the App's function: web.
func (a *App) HTTP(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if a.web == nil {
		return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("lambdaapp: function %s is behind no HTTP API route", a.base.Config.Function)
	}
	return a.web.Handle(ctx, req)
}

// URL serves one function URL request with the App's function: callback,
// the executor API.
func (a *App) URL(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	if a.callback == nil {
		return events.LambdaFunctionURLResponse{}, fmt.Errorf("lambdaapp: function %s has no function URL", a.base.Config.Function)
	}
	return a.callback.Handle(ctx, req)
}

// ServeHTTPAPI serves one API Gateway HTTP API request with an
// http.Handler (wiring.ServeHTTPAPI).
var ServeHTTPAPI = wiring.ServeHTTPAPI

// ServeFunctionURL serves one Lambda function URL request with an
// http.Handler (wiring.ServeFunctionURL).
var ServeFunctionURL = wiring.ServeFunctionURL
