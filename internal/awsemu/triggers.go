package awsemu

import (
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
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/xjobdev/xjob/internal/awsconfig"
)

// invoke runs one Lambda invocation of fn: the context carries the
// function's deadline and a request id, the handler time is metered.
func invoke[Out any](ctx context.Context, d *Deployment, fn string, timeout time.Duration, h func(context.Context) (Out, error)) (Out, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: requestID()})
	end := d.meter.Begin(fn)
	out, err := h(ctx)
	end()
	if err != nil {
		d.fail(fmt.Errorf("%s invocation: %w", fn, err))
	}
	return out, err
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
			app, err := d.app("scan", key)
			if err != nil {
				d.fail(err)
				return
			}
			ev := scheduledEvent(time.Now())
			d.wg.Go(func() {
				_, _ = invoke(ctx, d, "scan", ScanTimeout, func(ctx context.Context) (struct{}, error) {
					return struct{}{}, app.Scan(ctx, ev)
				})
			})
			if !d.opts.NoMaintenance {
				d.wg.Go(func() {
					reg, err := d.app("registry", "registry")
					if err != nil {
						d.fail(err)
						return
					}
					_, _ = invoke(ctx, d, "registry", MaintenanceTimeout, func(ctx context.Context) (any, error) {
						return reg.Maintain(ctx, ev)
					})
				})
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
	handle       func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
}

// startMappings starts the ring mapping and one per dispatch lane.
func (d *Deployment) startMappings(ctx context.Context) {
	ring, _ := d.app("ring", "ring")
	disp, _ := d.app("dispatch", "dispatch")
	ms := []mapping{
		{fn: "ring", url: d.vars[awsconfig.EnvRingQueueURL], pollers: d.opts.RingPollers, handle: ring.Ring},
		{fn: "dispatch", url: d.vars[awsconfig.EnvDispatchFastURL], pollers: d.opts.FastPollers, handle: disp.DispatchSQS},
		{fn: "dispatch", url: d.vars[awsconfig.EnvDispatchSlowURL], pollers: d.opts.SlowPollers, handle: disp.DispatchSQS},
	}
	for _, m := range ms {
		m.arn = d.arns[m.url]
		_, client, _ := d.clients("esm:" + m.fn)
		for range m.pollers {
			d.wg.Go(func() { d.poll(ctx, client, m) })
		}
	}
}

// poll is one poller of mapping m, until ctx ends.
func (d *Deployment) poll(ctx context.Context, client *sqs.Client, m mapping) {
	wait := int32(d.opts.PollWait.Round(time.Second) / time.Second)
	for ctx.Err() == nil {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(m.url),
			MaxNumberOfMessages: 10, WaitTimeSeconds: wait,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			if ctx.Err() == nil {
				d.fail(fmt.Errorf("esm %s receive: %w", m.fn, err))
				sleep(ctx, time.Second)
			}
			continue
		}
		if len(out.Messages) == 0 {
			continue
		}
		ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(out.Messages))}
		for _, msg := range out.Messages {
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: aws.ToString(msg.MessageId),
				ReceiptHandle: aws.ToString(msg.ReceiptHandle), Body: aws.ToString(msg.Body), Attributes: msg.Attributes,
				Md5OfBody: aws.ToString(msg.MD5OfBody), EventSource: "aws:sqs", EventSourceARN: m.arn, AWSRegion: Region})
		}
		timeout := RingTimeout
		if m.fn == "dispatch" {
			timeout = DispatchTimeout
		}
		// An invocation runs to its end even when the deployment closes,
		// as Lambda lets it; only new polls stop.
		resp, err := invoke(context.WithoutCancel(ctx), d, m.fn, timeout, func(ctx context.Context) (events.SQSEventResponse, error) {
			return m.handle(ctx, ev)
		})
		if err != nil {
			continue // the whole batch comes back after the visibility timeout
		}
		del := deletable(ev, resp)
		if len(del) == 0 {
			continue
		}
		if _, err := client.DeleteMessageBatch(context.WithoutCancel(ctx), &sqs.DeleteMessageBatchInput{
			QueueUrl: aws.String(m.url), Entries: del}); err != nil {
			d.fail(fmt.Errorf("esm %s delete: %w", m.fn, err))
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

// IsCallbackPath says which function the HTTP API routes a path to: the
// callback function takes xxl-job's callback paths, registry the rest.
func IsCallbackPath(path string) bool {
	return path == "/api/callback" || path == "/xxl-job-admin/api/callback"
}

// serveAPI plays API Gateway's HTTP API ($default stage, payload format
// 2.0): each request becomes one invocation of callback or registry.
func (d *Deployment) serveAPI(w http.ResponseWriter, r *http.Request) {
	d.meter.HTTPRequest()
	body, err := io.ReadAll(io.LimitReader(r.Body, 10<<20)) // HTTP API's payload limit
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	hdr := make(map[string]string, len(r.Header))
	for k, v := range r.Header {
		hdr[strings.ToLower(k)] = strings.Join(v, ",")
	}
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "$default", RawPath: r.URL.Path,
		RawQueryString: r.URL.RawQuery, Headers: hdr, Body: string(body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{Stage: "$default", DomainName: r.Host, RequestID: requestID(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path,
				Protocol: r.Proto, SourceIP: "127.0.0.1", UserAgent: r.UserAgent()}}}
	var resp events.APIGatewayV2HTTPResponse
	if IsCallbackPath(r.URL.Path) {
		app, aerr := d.app("callback", "callback")
		if aerr != nil {
			http.Error(w, aerr.Error(), http.StatusInternalServerError)
			return
		}
		resp, err = invoke(r.Context(), d, "callback", CallbackTimeout, func(ctx context.Context) (events.APIGatewayV2HTTPResponse, error) {
			return app.Callback(ctx, ev)
		})
	} else {
		app, aerr := d.app("registry", "registry")
		if aerr != nil {
			http.Error(w, aerr.Error(), http.StatusInternalServerError)
			return
		}
		raw, _ := json.Marshal(ev)
		var out any
		out, err = invoke(r.Context(), d, "registry", RegistryTimeout, func(ctx context.Context) (any, error) {
			return app.Registry(ctx, raw)
		})
		if err == nil {
			b, _ := json.Marshal(out)
			err = json.Unmarshal(b, &resp)
		}
	}
	if err != nil {
		// API Gateway answers a failed invocation with 500.
		http.Error(w, `{"message":"Internal Server Error"}`, http.StatusInternalServerError)
		return
	}
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
