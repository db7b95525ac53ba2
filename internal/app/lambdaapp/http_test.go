package lambdaapp_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob/internal/app/lambdaapp"
)

func TestServeHTTPAPI(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Path", r.URL.Path+"?"+r.URL.RawQuery)
		w.Header().Set("X-Token", r.Header.Get("XXL-JOB-ACCESS-TOKEN"))
		w.Header().Add("Set-Cookie", "a=1")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(append([]byte(r.Method+" "), b...))
	})
	tests := []struct {
		name     string
		req      events.APIGatewayV2HTTPRequest
		wantBody string
	}{
		{"plain", events.APIGatewayV2HTTPRequest{RawPath: "/api/registry", RawQueryString: "x=1",
			Headers: map[string]string{"xxl-job-access-token": "tok"}, Body: `{"a":1}`,
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"}}},
			`POST {"a":1}`},
		{"base64 body", events.APIGatewayV2HTTPRequest{RawPath: "/api/registry", RawQueryString: "x=1",
			Headers: map[string]string{"xxl-job-access-token": "tok"}, Body: base64.StdEncoding.EncodeToString([]byte("hi")), IsBase64Encoded: true,
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "PUT"}}},
			`PUT hi`},
		{"path from the context", events.APIGatewayV2HTTPRequest{RawQueryString: "x=1", Headers: map[string]string{"xxl-job-access-token": "tok"},
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: "/api/registry"}}},
			`GET `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, err := lambdaapp.ServeHTTPAPI(context.Background(), h, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusCreated || resp.Body != tt.wantBody || resp.Headers["X-Path"] != "/api/registry?x=1" ||
				resp.Headers["X-Token"] != "tok" || len(resp.Cookies) != 1 {
				t.Errorf("response %+v", resp)
			}
		})
	}
}

// TestServeFunctionURL: a function URL event reaches the handler as the
// client sent it (method, path, query, headers, base64 body) and the
// response keeps its status, headers and cookies.
func TestServeFunctionURL(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Path", r.URL.Path+"?"+r.URL.RawQuery)
		w.Header().Set("X-Token", r.Header.Get("XXL-JOB-ACCESS-TOKEN"))
		w.Header().Set("X-Remote", r.RemoteAddr)
		w.Header().Add("Set-Cookie", "a=1")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(append([]byte(r.Method+" "), b...))
	})
	resp, err := lambdaapp.ServeFunctionURL(context.Background(), h, events.LambdaFunctionURLRequest{Version: "2.0",
		RawPath: "/api/callback", RawQueryString: "x=1", Headers: map[string]string{"xxl-job-access-token": "tok"},
		Body: base64.StdEncoding.EncodeToString([]byte("[]")), IsBase64Encoded: true,
		RequestContext: events.LambdaFunctionURLRequestContext{HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
			Method: "POST", Path: "/api/callback", SourceIP: "203.0.113.9"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusAccepted || resp.Body != "POST []" || resp.Headers["X-Path"] != "/api/callback?x=1" ||
		resp.Headers["X-Token"] != "tok" || resp.Headers["X-Remote"] != "203.0.113.9:0" || len(resp.Cookies) != 1 {
		t.Errorf("response %+v", resp)
	}
}
