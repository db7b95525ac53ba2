package lambdaapp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/xjobdev/xjob/internal/app/lambdaapp"
)

// offlineApp is an App whose clients are never called by these tests
// (payload shape checks happen before any request).
func offlineApp(t *testing.T, fn string) *lambdaapp.App {
	t.Helper()
	a, err := lambdaapp.New(lambdaapp.Config{Function: fn, TablePrefix: "x-", Shards: 1, AccessToken: "a"},
		lambdaapp.Deps{DynamoDB: dynamodb.New(dynamodb.Options{Region: "us-east-1"}), SQS: sqs.New(sqs.Options{Region: "us-east-1"})})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestPayloadShapes(t *testing.T) {
	t.Parallel()
	d := offlineApp(t, "dispatch")
	r := offlineApp(t, "registry")
	tests := []struct {
		name    string
		call    func(context.Context, json.RawMessage) (any, error)
		payload string
		wantErr string
	}{
		{"dispatch: not an object", d.Dispatch, `[1]`, "not a JSON object"},
		{"dispatch: unknown shape", d.Dispatch, `{"foo":1}`, "unrecognised payload"},
		{"dispatch: manual with unknown field", d.Dispatch, `{"jobId":1,"param":"x"}`, "unknown field"},
		{"dispatch: manual without a job", d.Dispatch, `{"jobId":0}`, "jobId"},
		{"dispatch: bad address list", d.Dispatch, `{"jobId":1,"addressList":5}`, "addressList"},
		{"dispatch: empty SQS batch", d.Dispatch, `{"Records":[]}`, ""},
		{"registry: unknown shape", r.Registry, `{"foo":1}`, "unrecognised payload"},
		{"registry: heartbeat over HTTP", r.Registry, `{"version":"2.0","rawPath":"/api/registry","requestContext":{"http":{"method":"POST","path":"/api/registry"}}}`, "unrecognised payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.call(context.Background(), json.RawMessage(tt.payload))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestExecutorURLServesOnlyExecutorRoutes: the function URL (AuthType
// NONE) takes every path, so the callback function answers 404 for all
// but the executor routes and checks the access token on those before
// anything is read or written; job declarations are forwarded to the web
// address when it has one (404 without), only with a valid token.
func TestExecutorURLServesOnlyExecutorRoutes(t *testing.T) {
	t.Parallel()
	var forwarded []string
	var mu sync.Mutex
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		forwarded = append(forwarded, r.Method+" "+r.URL.Path+" "+r.Header.Get("XXL-JOB-ACCESS-TOKEN")+" "+string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"code":500,"msg":"no group"}`)
	}))
	t.Cleanup(web.Close)
	a := offlineApp(t, "callback")
	fwd, err := lambdaapp.New(lambdaapp.Config{Function: "callback", TablePrefix: "x-", Shards: 1, AccessToken: "a", WebURL: web.URL},
		lambdaapp.Deps{DynamoDB: dynamodb.New(dynamodb.Options{Region: "us-east-1"}), SQS: sqs.New(sqs.Options{Region: "us-east-1"})})
	if err != nil {
		t.Fatal(err)
	}
	req := func(method, path, token string) events.LambdaFunctionURLRequest {
		return events.LambdaFunctionURLRequest{Version: "2.0", RawPath: path, Body: `{"appname":"x"}`,
			Headers:        map[string]string{"xxl-job-access-token": token},
			RequestContext: events.LambdaFunctionURLRequestContext{HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: method, Path: path}}}
	}
	tests := []struct {
		name   string
		app    *lambdaapp.App
		req    events.LambdaFunctionURLRequest
		status int
		body   string
	}{
		{"admin API", a, req("GET", "/v1/jobs", "a"), http.StatusNotFound, "not found"},
		{"console", a, req("GET", "/console/", ""), http.StatusNotFound, "not found"},
		{"health", a, req("GET", "/healthz", ""), http.StatusNotFound, "not found"},
		{"root", a, req("GET", "/", ""), http.StatusNotFound, "not found"},
		{"unknown executor uri", a, req("POST", "/api/run", "a"), http.StatusNotFound, "not found"},
		{"declare without a web address", a, req("POST", "/api/xjob/declare", "a"), http.StatusNotFound, "not found"},
		{"declare without a token", fwd, req("POST", "/api/xjob/declare", ""), http.StatusUnauthorized, "The access token is wrong."},
		{"declare by GET", fwd, req("GET", "/api/xjob/declare", "a"), http.StatusMethodNotAllowed, "HttpMethod not support"},
		{"declare forwarded", fwd, req("POST", "/api/xjob/declare", "a"), http.StatusConflict, "no group"},
		{"prefixed declare forwarded", fwd, req("POST", "/xxl-job-admin/api/xjob/declare", "a"), http.StatusConflict, "no group"},
		{"callback without a token", a, req("POST", "/api/callback", ""), http.StatusOK, "The access token is wrong."},
		{"heartbeat with a wrong token", a, req("POST", "/api/registry", "b"), http.StatusOK, "The access token is wrong."},
		{"prefixed removal without a token", a, req("POST", "/xxl-job-admin/api/registryRemove", ""), http.StatusOK, "The access token is wrong."},
		{"callback by GET", a, req("GET", "/api/callback", "a"), http.StatusOK, "HttpMethod not support"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := tt.app.URL(context.Background(), tt.req)
			if err != nil || resp.StatusCode != tt.status || !strings.Contains(resp.Body, tt.body) {
				t.Errorf("%d %q %v, want %d %q", resp.StatusCode, resp.Body, err, tt.status, tt.body)
			}
		})
	}
	want := []string{`POST /api/xjob/declare a {"appname":"x"}`, `POST /xxl-job-admin/api/xjob/declare a {"appname":"x"}`}
	if !slices.Equal(forwarded, want) {
		t.Errorf("forwarded %q, want only the two declarations with a valid token %q", forwarded, want)
	}
}
