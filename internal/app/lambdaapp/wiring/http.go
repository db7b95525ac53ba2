package wiring

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// NotFound is the JSON 404 a function answers for a path the HTTP API
// should not have routed to it, so a misrouted request reaches nothing.
func NotFound() events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusNotFound,
		Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"error":"not found"}`}
}

// IsHTTPEvent reports whether raw is an HTTP event, from an API Gateway
// HTTP API (payload 2.0) or a Lambda function URL (the same shape),
// rather than an EventBridge scheduled event or a direct invocation: it
// has requestContext.http.
func IsHTTPEvent(raw json.RawMessage) (bool, error) {
	var probe struct {
		RequestContext struct {
			HTTP *json.RawMessage `json:"http"`
		} `json:"requestContext"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return false, fmt.Errorf("payload is not a JSON object: %w", err)
	}
	return probe.RequestContext.HTTP != nil, nil
}

// RequestPath is the request's path as the client sent it. With the
// $default stage the raw path carries no stage prefix.
func RequestPath(req events.APIGatewayV2HTTPRequest) string {
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
	target := RequestPath(req)
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

// URLNotFound is NotFound for a function URL: a URL with AuthType NONE
// takes any path and method, so the function answers the ones it does not
// serve.
func URLNotFound() events.LambdaFunctionURLResponse { return urlResponse(NotFound()) }

// URLPath is a function URL request's path as the client sent it.
func URLPath(req events.LambdaFunctionURLRequest) string {
	if req.RawPath != "" {
		return req.RawPath
	}
	return req.RequestContext.HTTP.Path
}

// ServeFunctionURL serves one Lambda function URL request (payload 2.0,
// the HTTP API's shape less the route and stage) with h, as ServeHTTPAPI
// serves an HTTP API request. An HTTP API event decodes into the same
// type and its response has the same shape, so a function served here
// also answers an HTTP API route that still points to it.
func ServeFunctionURL(ctx context.Context, h http.Handler, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	c := req.RequestContext
	resp, err := ServeHTTPAPI(ctx, h, events.APIGatewayV2HTTPRequest{Version: req.Version, RawPath: req.RawPath,
		RawQueryString: req.RawQueryString, Cookies: req.Cookies, Headers: req.Headers, Body: req.Body,
		IsBase64Encoded: req.IsBase64Encoded,
		RequestContext: events.APIGatewayV2HTTPRequestContext{AccountID: c.AccountID, RequestID: c.RequestID,
			DomainName: c.DomainName, DomainPrefix: c.DomainPrefix, APIID: c.APIID,
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: c.HTTP.Method, Path: c.HTTP.Path,
				Protocol: c.HTTP.Protocol, SourceIP: c.HTTP.SourceIP, UserAgent: c.HTTP.UserAgent}}})
	return urlResponse(resp), err
}

func urlResponse(r events.APIGatewayV2HTTPResponse) events.LambdaFunctionURLResponse {
	return events.LambdaFunctionURLResponse{StatusCode: r.StatusCode, Headers: r.Headers, Body: r.Body,
		IsBase64Encoded: r.IsBase64Encoded, Cookies: r.Cookies}
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
