package lambdaapp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
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
		{"registry: health over HTTP", r.Registry, `{"version":"2.0","rawPath":"/healthz","requestContext":{"http":{"method":"GET","path":"/healthz"}}}`, ""},
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

func TestCallbackServesOnlyCallbacks(t *testing.T) {
	t.Parallel()
	a := offlineApp(t, "callback")
	for _, path := range []string{"/v1/jobs", "/api/registry", "/healthz"} {
		resp, err := a.HTTP(context.Background(), events.APIGatewayV2HTTPRequest{RawPath: path,
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"}}})
		if err != nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d %v, want 404", path, resp.StatusCode, err)
		}
	}
}
