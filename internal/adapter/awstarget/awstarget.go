// Package awstarget makes the calls of AWS jobs (glue type AWS, package
// internal/target) through aws-sdk-go-v2: Lambda Invoke, SQS SendMessage,
// SNS Publish, EventBridge PutEvents and Step Functions StartExecution.
// The built-in executor (internal/adapter/httptarget) queues, times and
// reports the calls; this package only makes one and words its result.
//
// Clients are built once per service and region (the ARN's region), from
// one aws.Config: the process's credentials chain, and its endpoint
// settings (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS, …), or Endpoints for
// emulators.
package awstarget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/target"
	"github.com/xjobdev/xjob/pkg/clock"
)

// Config wires a Caller.
type Config struct {
	// AWS is the SDK configuration: credentials, retryer, and the
	// default region (an ARN's region overrides it).
	AWS aws.Config
	// Endpoints maps a service (target.ServiceSQS, …) to a base endpoint,
	// for emulators; empty uses AWS's (or AWS_ENDPOINT_URL*).
	Endpoints map[string]string
	// Clock times a call for its log line (default the wall clock).
	Clock clock.Clock
}

// Caller makes AWS target calls. It is safe for concurrent use.
type Caller struct {
	cfg Config

	mu      sync.Mutex
	clients map[clientKey]any
	queues  map[string]string // queue ARN → URL
}

type clientKey struct{ service, region string }

// New builds a Caller.
func New(cfg Config) *Caller {
	cfg.Clock = fallback.Clock(cfg.Clock)
	return &Caller{cfg: cfg, clients: map[clientKey]any{}, queues: map[string]string{}}
}

// Result is a call's outcome as the log shows it: OK false fails the run
// (retries and alarms apply).
type Result struct {
	OK  bool
	Msg string
}

// Call makes r's call, bounded by ctx.
func (c *Caller) Call(ctx context.Context, r target.AWSRequest) Result {
	started := c.cfg.Clock.Now()
	ok, msg, err := c.call(ctx, r)
	took := c.cfg.Clock.Now().Sub(started).Round(time.Millisecond)
	head := fmt.Sprintf("%s · %v", r.Kind(), took)
	if err != nil {
		if ctx.Err() != nil {
			if cause := context.Cause(ctx); cause != nil {
				err = cause
			}
		}
		return Result{Msg: head + " · " + describe(err)}
	}
	return Result{OK: ok, Msg: head + " · " + msg}
}

func (c *Caller) call(ctx context.Context, r target.AWSRequest) (bool, string, error) {
	switch r.ARN.Service {
	case target.ServiceLambda:
		return c.invoke(ctx, r)
	case target.ServiceSQS:
		return c.send(ctx, r)
	case target.ServiceSNS:
		out, err := client(c, r, sns.NewFromConfig, func(o *sns.Options, ep string) { o.BaseEndpoint = &ep }).Publish(ctx, &sns.PublishInput{
			TopicArn: aws.String(r.ARN.String()), Message: aws.String(r.Input), Subject: optional(r.Subject),
			MessageGroupId: optional(r.MessageGroupID), MessageDeduplicationId: fifoToken(r)})
		if err != nil {
			return false, "", fmt.Errorf("publish: %w", err)
		}
		return true, "published, MessageId " + aws.ToString(out.MessageId), nil
	case target.ServiceEvents:
		out, err := client(c, r, eventbridge.NewFromConfig, func(o *eventbridge.Options, ep string) { o.BaseEndpoint = &ep }).PutEvents(ctx,
			&eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{EventBusName: aws.String(r.ARN.String()),
				Source: aws.String(r.Source), DetailType: aws.String(r.DetailType), Detail: aws.String(r.Input)}}})
		if err != nil {
			return false, "", fmt.Errorf("put events: %w", err)
		}
		if out.FailedEntryCount > 0 || len(out.Entries) != 1 {
			e := ebtypes.PutEventsResultEntry{}
			if len(out.Entries) > 0 {
				e = out.Entries[0]
			}
			return false, fmt.Sprintf("event refused: %s %s", aws.ToString(e.ErrorCode), aws.ToString(e.ErrorMessage)), nil
		}
		return true, "event put, EventId " + aws.ToString(out.Entries[0].EventId), nil
	case target.ServiceStates:
		out, err := client(c, r, sfn.NewFromConfig, func(o *sfn.Options, ep string) { o.BaseEndpoint = &ep }).StartExecution(ctx,
			&sfn.StartExecutionInput{StateMachineArn: aws.String(r.ARN.String()), Name: aws.String(r.Token), Input: aws.String(r.Input)})
		if err != nil {
			return false, "", fmt.Errorf("start execution: %w", err)
		}
		return true, "execution started: " + aws.ToString(out.ExecutionArn), nil
	}
	return false, "", fmt.Errorf("service %q is not a target", r.ARN.Service)
}

// invoke calls a Lambda function: synchronously, its response (or its
// error) is the result; asynchronously, Lambda's acceptance is.
func (c *Caller) invoke(ctx context.Context, r target.AWSRequest) (bool, string, error) {
	it := lambdatypes.InvocationTypeRequestResponse
	if r.InvocationType == target.InvokeAsync {
		it = lambdatypes.InvocationTypeEvent
	}
	out, err := client(c, r, lambda.NewFromConfig, func(o *lambda.Options, ep string) { o.BaseEndpoint = &ep }).Invoke(ctx,
		&lambda.InvokeInput{FunctionName: aws.String(r.ARN.String()), InvocationType: it, Payload: []byte(r.Input)})
	if err != nil {
		return false, "", fmt.Errorf("invoke: %w", err)
	}
	if it == lambdatypes.InvocationTypeEvent {
		return out.StatusCode == 202, fmt.Sprintf("queued by Lambda (Event, status %d)", out.StatusCode), nil
	}
	msg := fmt.Sprintf("status %d", out.StatusCode)
	ok := out.FunctionError == nil
	if !ok {
		msg += " · function error " + aws.ToString(out.FunctionError)
	}
	n := min(len(out.Payload), target.ResultBytes)
	return ok, msg + "\n" + target.Head(out.Payload[:n], len(out.Payload) > n), nil
}

// send sends an SQS message; the queue's URL is looked up once per ARN.
func (c *Caller) send(ctx context.Context, r target.AWSRequest) (bool, string, error) {
	cl := client(c, r, sqs.NewFromConfig, func(o *sqs.Options, ep string) { o.BaseEndpoint = &ep })
	arn := r.ARN.String()
	c.mu.Lock()
	url := c.queues[arn]
	c.mu.Unlock()
	if url == "" {
		out, err := cl.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(r.ARN.Resource), QueueOwnerAWSAccountId: aws.String(r.ARN.Account)})
		if err != nil {
			return false, "", fmt.Errorf("queue URL: %w", err)
		}
		url = aws.ToString(out.QueueUrl)
		c.mu.Lock()
		c.queues[arn] = url
		c.mu.Unlock()
	}
	out, err := cl.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(r.Input),
		MessageGroupId: optional(r.MessageGroupID), MessageDeduplicationId: fifoToken(r)})
	if err != nil {
		return false, "", fmt.Errorf("send: %w", err)
	}
	return true, "sent, MessageId " + aws.ToString(out.MessageId), nil
}

// client returns the cached client of r's service and region, building it
// on first use with the configured endpoint.
func client[T any, O any](c *Caller, r target.AWSRequest, build func(aws.Config, ...func(*O)) T, endpoint func(*O, string)) T {
	key := clientKey{r.ARN.Service, r.ARN.Region}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[key]; ok {
		return cl.(T)
	}
	cfg := c.cfg.AWS.Copy()
	cfg.Region = r.ARN.Region
	var opts []func(*O)
	if ep := c.cfg.Endpoints[r.ARN.Service]; ep != "" {
		opts = append(opts, func(o *O) { endpoint(o, ep) })
	}
	cl := build(cfg, opts...)
	c.clients[key] = cl
	return cl
}

// fifoToken deduplicates a FIFO message per run: a call sent twice for
// one run is delivered once.
func fifoToken(r target.AWSRequest) *string {
	if r.MessageGroupID == "" {
		return nil
	}
	return aws.String(r.Token)
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// describe words an SDK error as the log shows it: the service's code
// and message when there is one (AccessDenied, ResourceNotFound, …).
func describe(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	return err.Error()
}

// CallAWS is Call as the built-in executor takes it
// (httptarget.AWSCaller).
func (c *Caller) CallAWS(ctx context.Context, r target.AWSRequest) (bool, string) {
	res := c.Call(ctx, r)
	return res.OK, res.Msg
}
