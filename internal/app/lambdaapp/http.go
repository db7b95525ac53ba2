package lambdaapp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// Callback is the callback function's handler: API Gateway routes POST
// /api/callback (and /xxl-job-admin/api/callback) here. Every other path is
// a 404, so a misrouted request cannot reach the admin API through it.
func (a *App) Callback(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	defer a.flushReports(ctx)
	switch requestPath(req) {
	case "/api/callback", "/xxl-job-admin/api/callback":
		return ServeHTTPAPI(ctx, a.http, req)
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusNotFound,
		Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"error":"not found"}`}, nil
}

// MaintenanceResult says what one maintenance run did.
type MaintenanceResult struct {
	Swept         int  `json:"swept"`
	StaleRemoved  int  `json:"staleRemoved"`
	GroupsUpdated int  `json:"groupsUpdated"`
	LostChecked   int  `json:"lostChecked"`
	LostMarked    int  `json:"lostMarked"`
	Purged        int  `json:"purged"`
	PurgeRan      bool `json:"purgeRan"`
}

// Registry is the registry function's handler. An API Gateway HTTP API
// event is served by the whole adminapi handler (executor registry, admin
// API, health); an EventBridge scheduled event runs the maintenance.
func (a *App) Registry(ctx context.Context, raw json.RawMessage) (any, error) {
	defer a.flushReports(ctx)
	var probe struct {
		RequestContext struct {
			HTTP *json.RawMessage `json:"http"`
		} `json:"requestContext"`
		Source     string `json:"source"`
		DetailType string `json:"detail-type"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("registry: payload is not a JSON object: %w", err)
	}
	switch {
	case probe.RequestContext.HTTP != nil:
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, fmt.Errorf("registry: HTTP API event: %w", err)
		}
		return ServeHTTPAPI(ctx, a.http, req)
	case probe.DetailType != "" || probe.Source != "":
		var ev events.EventBridgeEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("registry: scheduled event: %w", err)
		}
		return a.Maintain(ctx, ev)
	default:
		return nil, errors.New("registry: unrecognised payload: want an HTTP API (v2) event or an EventBridge scheduled event")
	}
}

// Maintain runs xxl-job's background monitors once, for the registry
// function's EventBridge rule (every minute): the callback sweep (xxl-job
// every 10 s), group refresh (30 s) and lost-job check (60 s) every run,
// and log purge in the first minute of each hour (xxl-job: daily; hourly
// keeps each run's deletes small). Each step runs even when an earlier one
// failed; the errors are joined, so the invocation is reported failed.
func (a *App) Maintain(ctx context.Context, ev events.EventBridgeEvent) (MaintenanceResult, error) {
	defer a.flushReports(ctx)
	var res MaintenanceResult
	var errs []error
	n, err := a.callback.Sweep(ctx)
	res.Swept = n
	errs = append(errs, wrap("callback sweep", err))
	rr, err := a.registry.RefreshGroups(ctx)
	res.StaleRemoved, res.GroupsUpdated = rr.Removed, rr.Updated
	errs = append(errs, wrap("registry refresh", err))
	lr, err := a.upkeep.CheckLost(ctx)
	res.LostChecked, res.LostMarked = lr.Checked, lr.Marked
	errs = append(errs, wrap("lost-job check", err))
	at := ev.Time
	if at.IsZero() {
		at = a.clk.Now()
	}
	if at.UTC().Minute() == 0 {
		res.PurgeRan = true
		res.Purged, err = a.upkeep.PurgeLogs(ctx)
		errs = append(errs, wrap("log purge", err))
	}
	a.log.InfoContext(ctx, "maintenance", "result", res)
	return res, errors.Join(errs...)
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// requestPath is the request's path as the client sent it. With the
// $default stage the raw path carries no stage prefix.
func requestPath(req events.APIGatewayV2HTTPRequest) string {
	if req.RawPath != "" {
		return req.RawPath
	}
	return req.RequestContext.HTTP.Path
}

// ServeHTTPAPI serves one API Gateway HTTP API (payload format 2.0) request
// with h and returns the response in the shape API Gateway expects: the
// adapter that lets the callback and registry functions run the same
// http.Handler as local mode.
func ServeHTTPAPI(ctx context.Context, h http.Handler, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusBadRequest, Body: "malformed base64 body"}, nil
		}
		body = b
	}
	target := requestPath(req)
	if req.RawQueryString != "" {
		target += "?" + req.RawQueryString
	}
	method := req.RequestContext.HTTP.Method
	if method == "" {
		method = http.MethodGet
	}
	r, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusBadRequest, Body: "malformed request"}, nil
	}
	r.RequestURI = target
	r.ContentLength = int64(len(body))
	for k, v := range req.Headers {
		// HTTP API joins repeated headers with commas; they stay joined.
		r.Header.Set(k, v)
	}
	if len(req.Cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(req.Cookies, "; "))
	}
	if host := r.Header.Get("Host"); host != "" {
		r.Host = host
	} else {
		r.Host = req.RequestContext.DomainName
	}
	if ip := req.RequestContext.HTTP.SourceIP; ip != "" {
		r.RemoteAddr = ip + ":0"
	}
	w := &responseWriter{header: http.Header{}}
	h.ServeHTTP(w, r)
	return w.response(), nil
}

// responseWriter collects a handler's response in memory.
type responseWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *responseWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// SetWriteDeadline and SetReadDeadline let handlers that use
// http.ResponseController run; there is no connection to time out.
func (w *responseWriter) SetWriteDeadline(time.Time) error { return nil }

func (w *responseWriter) response() events.APIGatewayV2HTTPResponse {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	resp := events.APIGatewayV2HTTPResponse{StatusCode: w.status, Headers: map[string]string{}}
	for k, vs := range w.header {
		if strings.EqualFold(k, "Set-Cookie") {
			resp.Cookies = append(resp.Cookies, vs...)
			continue
		}
		resp.Headers[k] = strings.Join(vs, ", ")
	}
	if b := w.body.Bytes(); utf8.Valid(b) {
		resp.Body = string(b)
	} else {
		resp.Body, resp.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return resp
}
