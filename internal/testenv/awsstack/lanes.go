package awsstack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/adapter/lambdaqueue"
	"github.com/xjobdev/xjob/internal/adapter/sqsqueue"
	"github.com/xjobdev/xjob/internal/testenv/lambdarun"
	"github.com/xjobdev/xjob/pkg/driver"
)

// DispatchFunction is the emulated deployment's XJOB_DISPATCH_FUNCTION:
// the dispatch function's name, which its Invoke API serves.
const DispatchFunction = TablePrefix + "-dispatch"

// Lambda's asynchronous invocation: the templates' EventInvokeConfig of
// the dispatch function (MaximumRetryAttempts 2), and the waits Lambda
// documents between a failed invocation and its retries (1 then 2
// minutes; Options.AsyncRetryWait scales them for tests).
const (
	asyncRetries = 2
)

// lambdaClient returns a Lambda client for the deployment's Invoke API.
// It is not metered: Lambda bills the invocation it starts, which the
// meter counts where it runs (Invoke).
func (d *Deployment) lambdaClient() *awslambda.Client {
	return awslambda.NewFromConfig(d.config(), func(o *awslambda.Options) { o.BaseEndpoint = aws.String(d.lambdaURL) })
}

// serveInvoke plays the Lambda service's Invoke API for the dispatch
// function's asynchronous invocations (the lanes, package lambdaqueue):
//
//	POST /2015-03-31/functions/{name or ARN}/invocations
//	  X-Amz-Invocation-Type Event → 202 at once; the invocation runs after
//
// As Lambda does, an invocation that fails (an error, a timeout) is
// retried asyncRetries times, after AsyncRetryWait and twice that, and
// then its event goes to the on-failure destination, the dispatch
// dead-letter queue, as an invocation record. Only asynchronous
// invocations of the dispatch function are served: nothing else calls
// Invoke.
func (d *Deployment) serveInvoke(w http.ResponseWriter, r *http.Request) {
	name, ok := lambdarun.InvokedFunction(w, r)
	if !ok {
		return
	}
	if name != DispatchFunction {
		lambdarun.InvokeError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name)
		return
	}
	if t := r.Header.Get("X-Amz-Invocation-Type"); t != "Event" {
		lambdarun.InvokeError(w, http.StatusBadRequest, "InvalidParameterValueException", "only Event invocations are emulated, not "+t)
		return
	}
	// An asynchronous invocation's payload limit.
	payload, err := io.ReadAll(io.LimitReader(r.Body, 256<<10+1))
	if err != nil || len(payload) > 256<<10 {
		lambdarun.InvokeError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", "payload over 256 KB")
		return
	}
	d.asyncAccepted.Add(1)
	d.wg.Go(func() { d.runAsync(d.runCtx, "dispatch", payload) })
	w.WriteHeader(http.StatusAccepted)
}

// runAsync runs one asynchronous invocation with Lambda's retries, and
// sends its event to the dead-letter queue when every attempt failed. A
// retry not yet due when the deployment closes is dropped (Lambda would
// still run it).
func (d *Deployment) runAsync(ctx context.Context, fn string, payload []byte) {
	defer d.asyncDone.Add(1)
	wait := d.opts.AsyncRetryWait
	var err error
	for attempt := 0; attempt <= asyncRetries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait *= 2
		}
		if _, err = d.Invoke(context.WithoutCancel(ctx), fn, fn, payload); err == nil {
			return
		}
	}
	rec, _ := json.Marshal(map[string]any{
		"version": "1.0", "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"requestContext": map[string]any{"functionArn": "arn:aws:lambda:" + Region + ":000000000000:function:" + DispatchFunction,
			"condition": "RetriesExhausted", "approximateInvokeCount": asyncRetries + 1},
		"responsePayload": map[string]string{"errorMessage": err.Error()},
		"requestPayload":  json.RawMessage(payload),
	})
	_, sq, _ := d.clients("")
	if _, serr := sq.SendMessage(context.WithoutCancel(ctx), &sqs.SendMessageInput{QueueUrl: aws.String(d.dlq),
		MessageBody: aws.String(string(rec))}); serr != nil {
		d.fail(fmt.Errorf("dispatch on-failure destination: %w", serr))
	}
}

// DeadLetters returns the dispatch function's on-failure destination
// queue (the lanes' dead-letter queue).
func (d *Deployment) DeadLetters() string { return d.dlq }

// AsyncInvocations counts the asynchronous invocations the Invoke API
// accepted (Lambda's retries not included).
func (d *Deployment) AsyncInvocations() int64 { return d.asyncAccepted.Load() }

// AsyncSettled counts the asynchronous invocations that have settled:
// succeeded, or failed every attempt and gone to the dead-letter queue
// (or dropped at Close). When it equals AsyncInvocations, no lane event
// is running or waiting for a retry.
func (d *Deployment) AsyncSettled() int64 { return d.asyncDone.Load() }

// InvokeEndpoint is the base address of the deployment's Lambda Invoke
// API, for a Lambda client's BaseEndpoint.
func (d *Deployment) InvokeEndpoint() string { return d.lambdaURL }

// RingDeferrals is the ring queue as the functions defer lane tasks to it
// (lambdaqueue.Deferred messages), unmetered: for tests that send one.
func (d *Deployment) RingDeferrals() driver.Queue[lambdaqueue.Deferred] {
	_, sq, _ := d.clients("")
	return sqsqueue.NewQueue[lambdaqueue.Deferred](sq, d.vars[awsconfig.EnvRingQueueURL], nil)
}
