package lambdaexec

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob/pkg/executor"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// HandlerFunc is the function lambda.Start takes for a function URL.
type HandlerFunc func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error)

// Handler answers the executor protocol from a function URL: the same
// routing, token check and replies as the HTTP server, with /run executed
// inline (see the package documentation). It never returns an error, so
// Lambda never retries an executor request on its own.
func Handler(e *executor.Executor) HandlerFunc {
	return func(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		body := []byte(req.Body)
		if req.IsBase64Encoded {
			b, err := base64.StdEncoding.DecodeString(req.Body)
			if err != nil {
				return reply(protocol.Fail("request error: invalid base64 body: " + err.Error())), nil
			}
			body = b
		}
		if len(body) > executor.MaxBodyBytes {
			return events.LambdaFunctionURLResponse{StatusCode: http.StatusRequestEntityTooLarge,
				Headers: map[string]string{"Content-Type": "text/plain; charset=utf-8"}, Body: "request body too large"}, nil
		}
		uri := req.RawPath
		if req.RawQueryString != "" {
			uri += "?" + req.RawQueryString
		}
		return reply(e.Serve(ctx, executor.Request{
			Method: req.RequestContext.HTTP.Method,
			URI:    uri,
			Token:  header(req.Headers, protocol.AccessTokenHeader),
			Body:   body,
			Inline: true,
		})), nil
	}
}

func reply(rt protocol.ReturnT) events.LambdaFunctionURLResponse {
	return events.LambdaFunctionURLResponse{
		StatusCode: http.StatusOK,
		Headers:    map[string]string{"Content-Type": executor.ContentType},
		Body:       string(executor.EncodeReturnT(rt)),
	}
}

// header finds name in a function URL's headers, which Lambda lower-cases.
func header(h map[string]string, name string) string {
	if v, ok := h[strings.ToLower(name)]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}
