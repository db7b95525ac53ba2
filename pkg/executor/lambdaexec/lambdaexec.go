package lambdaexec

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob/internal/exechttp"
	"github.com/xjobdev/xjob/pkg/executor"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// HandlerFunc is the function lambda.Start takes for a function URL in the
// default BUFFERED invoke mode.
type HandlerFunc func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error)

// StreamingHandlerFunc is the function lambda.Start takes for a function
// URL whose invoke mode is RESPONSE_STREAM. lambda.Start sends the
// returned response's body to the caller as it is read, so the reply can
// leave before the invocation ends.
type StreamingHandlerFunc func(context.Context, events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error)

// Handler answers the executor protocol from a function URL in BUFFERED
// invoke mode: the same routing, token check and replies as the HTTP
// server, with /run executed inline and replied to only after the job and
// its callback finished (see the package documentation for why that limits
// jobs to a few seconds). It never returns an error, so Lambda never
// retries an executor request on its own.
func Handler(e *executor.Executor) HandlerFunc {
	return func(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		r, early := parse(req)
		if early != nil {
			return *early, nil
		}
		return reply(e.Serve(ctx, r)), nil
	}
}

// StreamingHandler answers the executor protocol from a function URL in
// RESPONSE_STREAM invoke mode. /run replies {"code":200} as soon as the
// trigger is accepted, as an xxl-job executor does, and keeps the
// invocation (and the response stream) open while the job runs and its
// callback is sent; the stream ends after that. A trigger that is refused
// (bad token, unknown handler, malformed body, …) gets its failure reply
// and nothing runs. Every other endpoint replies at once and ends the
// stream. It never returns an error, so Lambda never retries an executor
// request on its own.
func StreamingHandler(e *executor.Executor) StreamingHandlerFunc {
	return func(ctx context.Context, req events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
		r, early := parse(req)
		if early != nil {
			return streamed(*early), nil
		}
		if r.URI != "/"+protocol.PathRun && r.URI != "/"+protocol.PathTrigger {
			return streamed(reply(e.Serve(ctx, r))), nil
		}
		accepted := make(chan struct{})
		var once sync.Once
		r.Accepted = func() { once.Do(func() { close(accepted) }) }
		result := make(chan protocol.ReturnT, 1)
		go func() { result <- serve(ctx, e, r) }()
		select {
		case rt := <-result: // refused (or already finished): one complete reply
			return streamed(reply(rt)), nil
		case <-accepted:
		}
		done := make(chan struct{})
		go func() {
			<-result // job finished and callback sent (or spooled)
			close(done)
		}()
		return &events.LambdaFunctionURLStreamingResponse{
			StatusCode: http.StatusOK,
			Headers:    map[string]string{"Content-Type": exechttp.ContentType},
			Body:       newRunStream(exechttp.EncodeReturnT(protocol.OK()), done),
		}, nil
	}
}

// serve runs Serve off the handler's goroutine, where lambda.Start's own
// panic recovery does not reach, so a panic becomes a failure reply
// instead of ending the process.
func serve(ctx context.Context, e *executor.Executor, r executor.Request) (rt protocol.ReturnT) {
	defer func() {
		if p := recover(); p != nil {
			rt = protocol.Fail(fmt.Sprintf("executor panic: %v", p))
		}
	}()
	return e.Serve(ctx, r)
}

// parse turns a function URL event into an executor request, or into the
// reply for a body that cannot be one.
func parse(req events.LambdaFunctionURLRequest) (executor.Request, *events.LambdaFunctionURLResponse) {
	if exechttp.CrossSiteHeaders(func(name string) string { return header(req.Headers, name) }) {
		return executor.Request{}, &events.LambdaFunctionURLResponse{StatusCode: http.StatusForbidden,
			Headers: map[string]string{"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"},
			Body:    "cross-site request refused"}
	}
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			r := reply(protocol.Fail("request error: invalid base64 body: " + err.Error()))
			return executor.Request{}, &r
		}
		body = b
	}
	if len(body) > executor.MaxBodyBytes {
		return executor.Request{}, &events.LambdaFunctionURLResponse{StatusCode: http.StatusRequestEntityTooLarge,
			Headers: map[string]string{"Content-Type": "text/plain; charset=utf-8"}, Body: "request body too large"}
	}
	uri := req.RawPath
	if req.RawQueryString != "" {
		uri += "?" + req.RawQueryString
	}
	return executor.Request{
		Method: req.RequestContext.HTTP.Method,
		URI:    uri,
		Token:  header(req.Headers, protocol.AccessTokenHeader),
		Body:   body,
		Inline: true,
	}, nil
}

func reply(rt protocol.ReturnT) events.LambdaFunctionURLResponse {
	return events.LambdaFunctionURLResponse{
		StatusCode: http.StatusOK,
		Headers:    map[string]string{"Content-Type": exechttp.ContentType},
		Body:       string(exechttp.EncodeReturnT(rt)),
	}
}

// streamed sends a complete buffered reply through a streaming function
// URL: the whole body, then the end of the stream.
func streamed(r events.LambdaFunctionURLResponse) *events.LambdaFunctionURLStreamingResponse {
	return &events.LambdaFunctionURLStreamingResponse{
		StatusCode: r.StatusCode,
		Headers:    r.Headers,
		Body:       strings.NewReader(r.Body),
	}
}

// runStream is the body of a streamed /run reply: the reply bytes at once,
// then nothing until the run is done, then EOF. The Lambda runtime reads
// it to the end before it finishes the invocation, so the invocation (and
// the execution environment) stays alive exactly as long as the run.
type runStream struct {
	mu     sync.Mutex
	reply  []byte
	done   <-chan struct{}
	closed chan struct{}
	once   sync.Once
}

func newRunStream(reply []byte, done <-chan struct{}) *runStream {
	return &runStream{reply: reply, done: done, closed: make(chan struct{})}
}

// Read returns the reply, then blocks until the run is done (or the stream
// is closed) and reports io.EOF.
func (s *runStream) Read(p []byte) (int, error) {
	s.mu.Lock()
	if len(s.reply) > 0 {
		n := copy(p, s.reply)
		s.reply = s.reply[n:]
		s.mu.Unlock()
		return n, nil
	}
	s.mu.Unlock()
	select {
	case <-s.done:
	case <-s.closed:
	}
	return 0, io.EOF
}

// Close ends the stream early; the Lambda runtime calls it after the
// invocation's response was sent (or failed to be sent), so a reader still
// waiting is released.
func (s *runStream) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
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
