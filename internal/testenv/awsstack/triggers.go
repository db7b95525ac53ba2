package awsstack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
)

// call runs one Lambda invocation of function fn with payload (any
// JSON-encodable event) and decodes the response into out when out is not
// nil. With Options.Bootstraps it goes to the function's bootstrap through
// the Runtime API; otherwise to the App of execution environment key,
// in-process, through the same JSON boundary (lambda.NewHandler), with a
// context that carries the function's deadline and a request id. The
// handler time is metered either way.
func (d *Deployment) call(ctx context.Context, fn, key string, payload, out any) error {
	in, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("%s payload: %w", fn, err)
	}
	res, err := d.Invoke(ctx, fn, key, in)
	if err != nil {
		return err
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			d.fail(fmt.Errorf("%s response: %w", fn, err))
			return fmt.Errorf("%s response: %w", fn, err)
		}
	}
	return nil
}

// Invoke runs one invocation of function fn with a JSON payload, as
// `aws lambda invoke` does (key names the in-process execution
// environment; key == fn takes an idle one of the function's, or a new
// one, as Lambda does for concurrent invocations; bootstraps pick their
// own), and returns its response. A failed invocation is also recorded
// for Errors.
func (d *Deployment) Invoke(ctx context.Context, fn, key string, payload []byte) ([]byte, error) {
	timeout := d.timeout(fn)
	r := d.runners[fn]
	if r == nil && key == fn && fn != "scan" {
		// Before the meter's clock starts: a throttled invocation (see
		// acquire) is not billed for its wait.
		k, release := d.acquire(fn)
		defer release()
		key = k
		// A cold start: Lambda runs Init before the invocation (billed
		// apart, Meter.ColdStart), so the invocation starts that much later.
		if init := d.opts.ColdStarts[fn]; init > 0 && d.initDue(key) {
			select {
			case <-time.After(init):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	end := d.meter.BeginInvoke(fn)
	var res []byte
	var err error
	var cpu time.Duration
	if r != nil {
		// The bootstrap's CPU for this invocation (0 when it never
		// replied or the system cannot read it).
		res, cpu, err = r.InvokeCPU(ctx, payload, timeout)
	} else {
		var h lambda.Handler
		if h, err = d.handler(fn, key); err == nil {
			ictx, cancel := context.WithTimeout(ctx, timeout)
			ictx = lambdacontext.NewContext(ictx, &lambdacontext.LambdaContext{AwsRequestID: requestID()})
			res, err = h.Invoke(ictx, payload)
			cancel()
			// aws-lambda-go encodes the response into a buffer it reuses
			// on the handler's next invocation, and the environment is
			// free for that invocation once Invoke returns: keep a copy.
			res = bytes.Clone(res)
		}
	}
	end(cpu, cpu > 0)
	if err != nil {
		err = fmt.Errorf("%s invocation: %w", fn, err)
		d.fail(err)
	}
	return res, err
}

// timeout is function fn's timeout in the templates.
func (d *Deployment) timeout(fn string) time.Duration {
	switch fn {
	case "scan":
		return d.opts.ScanTimeout
	case "ring":
		return RingTimeout
	case "dispatch":
		return DispatchTimeout
	case "callback":
		return CallbackTimeout
	case "web":
		return WebTimeout
	}
	return RegistryTimeout // the function's; API Gateway would cut an HTTP request at 30 s
}

func requestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}

func scheduledEvent(at time.Time) events.EventBridgeEvent {
	return events.EventBridgeEvent{Version: "0", ID: requestID(), DetailType: "Scheduled Event", Source: "aws.events",
		Time: at.UTC().Truncate(time.Second), Region: Region, Detail: json.RawMessage(`{}`)}
}

// Scan runs one extra scan invocation now, as the EventBridge rule does
// (in an execution environment of its own), and waits for it. The cost
// harness brackets its metered window with two of them, so the window
// holds the scan work of exactly its own span whatever the once-a-minute
// rule does.
func (d *Deployment) Scan(ctx context.Context) error {
	return d.call(ctx, "scan", "scan-extra", scheduledEvent(time.Now()), nil)
}

// startSchedules plays the two EventBridge rules: every ScanPeriod, one
// scan invocation (in one of two execution environments, since
// consecutive invocations overlap by the timeout's extra 10 s) and one
// maintenance run of the registry function. The first of each starts now.
func (d *Deployment) startSchedules(ctx context.Context) {
	d.wg.Go(func() {
		tick := time.NewTicker(d.opts.ScanPeriod)
		defer tick.Stop()
		for i := 0; ; i++ {
			key := fmt.Sprintf("scan-%d", i%2)
			ev := scheduledEvent(time.Now())
			d.wg.Go(func() { _ = d.call(ctx, "scan", key, ev, nil) })
			if !d.opts.NoMaintenance {
				d.wg.Go(func() { _ = d.call(ctx, "registry", "registry", ev, nil) })
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
}

// mapping is one SQS event source mapping: pollers long-poll the queue,
// hand each batch (≤ 10 records) to the function and delete the records
// that are not batch item failures; those come back after the visibility
// timeout (or the delay the handler set).
type mapping struct {
	fn, url, arn string
	pollers      int
	// batch and window, when set, gather up to batch records over window
	// per invocation (BatchSize, MaximumBatchingWindowInSeconds).
	batch  int
	window time.Duration
}

// startMappings starts the ring mapping and the results queue's (the
// lanes have none: the Invoke API runs their events).
func (d *Deployment) startMappings(ctx context.Context) {
	ms := []mapping{{fn: "ring", url: d.vars[awsconfig.EnvRingQueueURL], pollers: d.opts.RingPollers}}
	if url := d.vars[awsconfig.EnvResultsQueueURL]; url != "" {
		ms = append(ms, mapping{fn: "dispatch", url: url, pollers: d.opts.ResultsPollers,
			batch: d.opts.ResultsBatch, window: d.opts.ResultsWindow})
	}
	// The continuations of a long poll (see longPoll) go through a client
	// the meter does not see.
	_, free, _ := d.clients("")
	for _, m := range ms {
		m.arn = d.arns[m.url]
		_, client, _ := d.clients("esm:" + m.fn)
		for range m.pollers {
			d.wg.Go(func() { d.poll(ctx, poller{billed: client, free: free}, m) })
		}
	}
}

// poller holds the SQS clients of one poller: billed is metered (one
// request per long poll AWS would answer), free is not (see longPoll).
type poller struct {
	billed, free *sqs.Client
}

// longPoll is one ReceiveMessage long poll of up to n messages from
// url, as SQS answers it: with the messages available to it as soon as
// there are some, empty only once wait has passed. fauxqs answers every
// waiting poll of a queue when a message becomes visible, and all but the
// one that took it come back empty at once; SQS keeps those waiting. So
// an empty answer before wait has passed is continued, for what remains
// of the wait, through the unmetered client: the meter counts one request
// per long poll, as AWS bills it. (A continuation's payload is not
// metered; it is the response the billed request would have carried.)
func (p poller) longPoll(ctx context.Context, url string, n int32, wait time.Duration) ([]sqstypes.Message, error) {
	end := time.Now().Add(wait)
	client := p.billed
	for {
		// Whole seconds, at least 1: a long poll that outlasts the end
		// by under a second, rather than short polls in a loop.
		secs := int32(max(1, min(20, (time.Until(end)+time.Second-1)/time.Second)))
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
			MaxNumberOfMessages: n, WaitTimeSeconds: secs,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil || len(out.Messages) > 0 || time.Until(end) <= 0 {
			if err != nil {
				return nil, err
			}
			return out.Messages, nil
		}
		client = p.free
	}
}

// poll is one poller of mapping m, until ctx ends. Each batch is one long
// poll (Options.PollWait) for its first records; a mapping with a batching
// window then keeps long-polling, until the batch is full or the window
// since the first records has passed, each poll waiting for what remains
// of the window: so an idle poller costs one request per PollWait, a
// batch one request per poll that brought records plus, when it is not
// full, the one empty poll that ends its window.
func (d *Deployment) poll(ctx context.Context, p poller, m mapping) {
	for ctx.Err() == nil {
		msgs, err := p.longPoll(ctx, m.url, 10, d.opts.PollWait)
		if err != nil {
			if ctx.Err() == nil {
				d.fail(fmt.Errorf("esm %s receive: %w", m.fn, err))
				sleep(ctx, time.Second)
			}
			continue
		}
		if len(msgs) == 0 {
			continue
		}
		for end := time.Now().Add(m.window); m.batch > len(msgs) && time.Now().Before(end) && ctx.Err() == nil; {
			more, err := p.longPoll(ctx, m.url, int32(min(10, m.batch-len(msgs))), time.Until(end))
			if err != nil || len(more) == 0 {
				break
			}
			msgs = append(msgs, more...)
		}
		ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
		for _, msg := range msgs {
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: aws.ToString(msg.MessageId),
				ReceiptHandle: aws.ToString(msg.ReceiptHandle), Body: aws.ToString(msg.Body), Attributes: msg.Attributes,
				Md5OfBody: aws.ToString(msg.MD5OfBody), EventSource: "aws:sqs", EventSourceARN: m.arn, AWSRegion: Region})
		}
		// An invocation runs to its end even when the deployment closes,
		// as Lambda lets it; only new polls stop.
		var resp events.SQSEventResponse
		if err := d.call(context.WithoutCancel(ctx), m.fn, m.fn, ev, &resp); err != nil {
			continue // the whole batch comes back after the visibility timeout
		}
		del := deletable(ev, resp)
		for len(del) > 0 {
			n := min(10, len(del))
			if _, err := p.billed.DeleteMessageBatch(context.WithoutCancel(ctx), &sqs.DeleteMessageBatchInput{
				QueueUrl: aws.String(m.url), Entries: del[:n]}); err != nil {
				d.fail(fmt.Errorf("esm %s delete: %w", m.fn, err))
			}
			del = del[n:]
		}
	}
}

// deletable lists the records of ev the mapping deletes: every record that
// resp does not report as a batch item failure.
func deletable(ev events.SQSEvent, resp events.SQSEventResponse) []sqstypes.DeleteMessageBatchRequestEntry {
	failed := make(map[string]bool, len(resp.BatchItemFailures))
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	var del []sqstypes.DeleteMessageBatchRequestEntry
	for i, r := range ev.Records {
		if !failed[r.MessageId] {
			del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: aws.String(r.ReceiptHandle)})
		}
	}
	return del
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// serveAPI plays API Gateway's HTTP API ($default stage, payload format
// 2.0): each request becomes one invocation of the function its route
// names (awsconfig.RouteFunction: web).
func (d *Deployment) serveAPI(w http.ResponseWriter, r *http.Request) {
	fn := awsconfig.RouteFunction(r.Method, r.URL.Path)
	d.meter.HTTPRequestTo(fn)
	body, hdr, ok := readRequest(w, r, 10<<20) // HTTP API's payload limit
	if !ok {
		return
	}
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "$default", RawPath: r.URL.Path,
		RawQueryString: r.URL.RawQuery, Headers: hdr, Body: string(body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{Stage: "$default", DomainName: r.Host, RequestID: requestID(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path,
				Protocol: r.Proto, SourceIP: "127.0.0.1", UserAgent: r.UserAgent()}}}
	var resp events.APIGatewayV2HTTPResponse
	// An invocation runs to its end when the client hangs up, as API
	// Gateway lets it (and an aborted emulator request would end dynalite).
	if err := d.call(context.WithoutCancel(r.Context()), fn, fn, ev, &resp); err != nil {
		// API Gateway answers a failed invocation with 500.
		http.Error(w, `{"message":"Internal Server Error"}`, http.StatusInternalServerError)
		return
	}
	writeResponse(w, resp)
}

// serveURL plays the executor API's Lambda function URL (AuthType NONE,
// payload format 2.0): every request, whatever its path, becomes one
// invocation of the function that has the URL (awsconfig.URLFunction),
// which answers the paths it does not serve itself. It is metered as the
// invocation alone: a function URL has no per-request price.
func (d *Deployment) serveURL(w http.ResponseWriter, r *http.Request) {
	d.meter.URLRequest()
	body, hdr, ok := readRequest(w, r, 6<<20) // a synchronous invocation's payload limit
	if !ok {
		return
	}
	now := time.Now()
	ev := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery,
		Headers: hdr, Body: string(body),
		RequestContext: events.LambdaFunctionURLRequestContext{DomainName: r.Host, RequestID: requestID(),
			Time: now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path,
				Protocol: r.Proto, SourceIP: "127.0.0.1", UserAgent: r.UserAgent()}}}
	fn := awsconfig.URLFunction()
	var resp events.LambdaFunctionURLResponse
	if err := d.call(context.WithoutCancel(r.Context()), fn, fn, ev, &resp); err != nil {
		// A function URL answers a failed invocation with 502.
		http.Error(w, `{"Message":null}`, http.StatusBadGateway)
		return
	}
	writeResponse(w, events.APIGatewayV2HTTPResponse{StatusCode: resp.StatusCode, Headers: resp.Headers,
		Body: resp.Body, IsBase64Encoded: resp.IsBase64Encoded, Cookies: resp.Cookies})
}

// readRequest reads r's body (at most limit bytes) and its headers as a
// payload 2.0 event carries them: lower-case names, repeated values
// joined with commas.
func readRequest(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, map[string]string, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return nil, nil, false
	}
	hdr := make(map[string]string, len(r.Header))
	for k, v := range r.Header {
		hdr[strings.ToLower(k)] = strings.Join(v, ",")
	}
	return body, hdr, true
}

// writeResponse writes a payload 2.0 response.
func writeResponse(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	w.WriteHeader(resp.StatusCode)
	if resp.IsBase64Encoded {
		b, derr := decodeBase64(resp.Body)
		if derr == nil {
			_, _ = w.Write(b)
		}
		return
	}
	_, _ = io.WriteString(w, resp.Body)
}

func decodeBase64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }
