package awstarget_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/xjobdev/xjob/internal/adapter/awstarget"
	"github.com/xjobdev/xjob/internal/target"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/internal/testenv/lambdarun"
	"github.com/xjobdev/xjob/internal/testenv/tool"
)

// The test binary is also the Lambda function the tests invoke: started
// with roleEnv set, it runs lambda.Start with echo below, so the real
// aws-lambda-go runtime answers the Invoke API through lambdarun.
const (
	roleEnv = "AWSTARGET_TEST_BOOTSTRAP"
	dirEnv  = "AWSTARGET_TEST_DIR"
)

type echoRequest struct {
	Fail  bool   `json:"fail"`
	Param string `json:"param"`
	LogID int64  `json:"logId"`
	Hang  bool   `json:"hang"`
}

func echo(ctx context.Context, r echoRequest) (map[string]any, error) {
	b, _ := json.Marshal(r)
	_ = os.WriteFile(filepath.Join(os.Getenv(dirEnv), "last"), b, 0o644)
	switch {
	case r.Fail:
		return nil, errors.New("asked to fail")
	case r.Hang:
		<-ctx.Done()
	}
	return map[string]any{"echo": r.Param, "logId": r.LogID}, nil
}

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) != "" {
		lambda.Start(echo)
		return
	}
	code := m.Run()
	emulator.Stop()
	stopMoto()
	os.Exit(code)
}

var (
	motoOnce sync.Once
	motoProc *emulator.Process
	motoErr  error
)

// moto returns the endpoint of this binary's moto server (SNS,
// EventBridge, Step Functions), started on first use.
func moto(t *testing.T) string {
	t.Helper()
	tool.SkipIfShort(t, "moto (make moto)")
	motoOnce.Do(func() { motoProc, motoErr = emulator.StartMoto(60 * time.Second) })
	if errors.Is(motoErr, emulator.ErrNotInstalled) {
		tool.Missing(t, motoErr)
	}
	if motoErr != nil {
		t.Fatal(motoErr)
	}
	return motoProc.Endpoint()
}

func stopMoto() {
	if motoProc != nil {
		motoProc.Stop()
	}
}

func render(t *testing.T, spec string, v target.Vars) target.AWSRequest {
	t.Helper()
	s, err := target.ParseAWS(spec)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Render(v)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var vars = target.Vars{JobID: 7, LogID: 42, Param: "nightly", ShardTotal: 1, ScheduleTime: 1772366400000, TriggerTime: 1772366400000}

// lambdaSetup runs the test binary as function "echo" behind a Lambda
// Invoke API on loopback; dir receives what the function noted.
func lambdaSetup(t *testing.T, wrap func(http.Handler) http.Handler) (*awstarget.Caller, string) {
	t.Helper()
	tool.SkipIfShort(t, "a Lambda bootstrap process")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f, err := lambdarun.Start(lambdarun.Options{Name: "echo", Path: self, Max: 2, Env: []string{roleEnv + "=1", dirEnv + "=" + dir}})
	if err != nil {
		t.Fatal(err)
	}
	api := &lambdarun.InvokeAPI{Functions: map[string]*lambdarun.Function{"echo": f}, Timeout: 5 * time.Second}
	var h http.Handler = api
	if wrap != nil {
		h = wrap(api)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); api.Wait(); f.Close() })
	return awstarget.New(awstarget.Config{AWS: emulator.Config(), Endpoints: map[string]string{target.ServiceLambda: srv.URL}}), dir
}

const fnARN = "arn:aws:lambda:us-east-1:123456789012:function:echo"

// TestLambdaInvoke invokes a real bootstrap through the SDK's Lambda
// client: synchronously its response is the result, its error fails the
// run with the error in the result; asynchronously Lambda's acceptance
// is the result and the function runs after; a missing function fails
// with the service's error.
func TestLambdaInvoke(t *testing.T) {
	t.Parallel()
	c, dir := lambdaSetup(t, nil)
	ctx := context.Background()
	tests := []struct {
		name, spec string
		ok         bool
		want       []string
	}{
		{"sync", `{"arn":"` + fnARN + `"}`, true, []string{"Lambda echo · ", "status 200", `"echo":"nightly"`, `"logId":42`}},
		{"function error", `{"arn":"` + fnARN + `","input":"{\"fail\": true}"}`, false, []string{"function error Unhandled", "asked to fail"}},
		{"missing function", `{"arn":"arn:aws:lambda:us-east-1:123456789012:function:nope"}`, false, []string{"ResourceNotFoundException", "Function not found: nope"}},
	}
	for _, tc := range tests {
		res := c.Call(ctx, render(t, tc.spec, vars))
		if res.OK != tc.ok {
			t.Fatalf("%s: ok = %v, want %v: %s", tc.name, res.OK, tc.ok, res.Msg)
		}
		for _, w := range tc.want {
			if !strings.Contains(res.Msg, w) {
				t.Fatalf("%s: result %q lacks %q", tc.name, res.Msg, w)
			}
		}
	}
	_ = os.Remove(filepath.Join(dir, "last"))
	res := c.Call(ctx, render(t, `{"arn":"`+fnARN+`","invocationType":"Event","input":"{\"param\": {{param|json}}, \"logId\": {{logId}}}"}`, vars))
	if !res.OK || !strings.Contains(res.Msg, "queued by Lambda (Event, status 202)") {
		t.Fatalf("async: %+v", res)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "last"))
		if string(b) == `{"fail":false,"param":"nightly","logId":42,"hang":false}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the asynchronous invocation never reached the function; it noted %q", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLambdaInvokeCut: a call whose context ends (the job's timeout) is
// cut and the result names the cause, not the SDK's wording.
func TestLambdaInvokeCut(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	c, _ := lambdaSetup(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cancel(errors.New("timed out after 30s: the call was cut"))
			h.ServeHTTP(w, r)
		})
	})
	res := c.Call(ctx, render(t, `{"arn":"`+fnARN+`","input":"{\"hang\": true}"}`, vars))
	if res.OK || !strings.Contains(res.Msg, "timed out after 30s: the call was cut") {
		t.Fatalf("cut call: %+v", res)
	}
}

// TestSQSSend sends to a standard and a FIFO queue on fauxqs and reads the
// messages back.
func TestSQSSend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := emulator.SQS(t)
	c := awstarget.New(awstarget.Config{AWS: emulator.Config(), Endpoints: map[string]string{target.ServiceSQS: emulator.Fauxqs(t)}})
	for _, fifo := range []bool{false, true} {
		name := emulator.UniqueName("target")
		attrs := map[string]string{}
		spec := `{"arn":"%s","input":"{{param}} #{{logId}}"}`
		if fifo {
			name += ".fifo"
			attrs["FifoQueue"] = "true"
			spec = `{"arn":"%s","input":"{{param}} #{{logId}}","messageGroupId":"job-{{jobId}}"}`
		}
		out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		arn := queueARN(t, q, out.QueueUrl)
		res := c.Call(ctx, render(t, strings.Replace(spec, "%s", arn, 1), vars))
		if !res.OK || !strings.Contains(res.Msg, "SQS "+name+" · ") || !strings.Contains(res.Msg, "sent, MessageId ") {
			t.Fatalf("fifo=%v: %+v", fifo, res)
		}
		got, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: out.QueueUrl, WaitTimeSeconds: 2,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId}})
		if err != nil || len(got.Messages) != 1 || aws.ToString(got.Messages[0].Body) != "nightly #42" {
			t.Fatalf("fifo=%v: received %+v, %v", fifo, got, err)
		}
		if g := got.Messages[0].Attributes["MessageGroupId"]; fifo && g != "job-7" {
			t.Fatalf("message group %q", g)
		}
	}
	res := c.Call(ctx, render(t, `{"arn":"arn:aws:sqs:us-east-1:000000000000:no-such-queue"}`, vars))
	if res.OK || !strings.Contains(res.Msg, "does not exist") {
		t.Fatalf("missing queue: %+v", res)
	}
}

func queueARN(t *testing.T, q *sqs.Client, url *string) string {
	t.Helper()
	a, err := q.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: url,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	return a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
}

// motoQueue creates a queue on moto, which SNS subscriptions and
// EventBridge rules deliver to, and returns its URL and ARN.
func motoQueue(t *testing.T, ep string) (*sqs.Client, *string, string) {
	t.Helper()
	q := sqs.NewFromConfig(emulator.Config(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(ep) })
	out, err := q.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(emulator.UniqueName("sink"))})
	if err != nil {
		t.Fatal(err)
	}
	return q, out.QueueUrl, queueARN(t, q, out.QueueUrl)
}

func receiveOne(t *testing.T, q *sqs.Client, url *string) string {
	t.Helper()
	got, err := q.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: 5})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("received %+v, %v", got, err)
	}
	return aws.ToString(got.Messages[0].Body)
}

// TestSNSPublish publishes to a topic on moto's server with a raw SQS
// subscription and reads the message back.
func TestSNSPublish(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ep := moto(t)
	s := sns.NewFromConfig(emulator.Config(), func(o *sns.Options) { o.BaseEndpoint = aws.String(ep) })
	topic, err := s.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(emulator.UniqueName("topic"))})
	if err != nil {
		t.Fatal(err)
	}
	q, url, qarn := motoQueue(t, ep)
	if _, err := s.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(qarn),
		Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatal(err)
	}
	c := awstarget.New(awstarget.Config{AWS: emulator.Config(), Endpoints: map[string]string{target.ServiceSNS: ep}})
	res := c.Call(ctx, render(t, `{"arn":"`+aws.ToString(topic.TopicArn)+`","input":"run {{logId}}: {{param}}","subject":"xjob {{jobId}}"}`, vars))
	if !res.OK || !strings.Contains(res.Msg, "published, MessageId ") {
		t.Fatalf("publish: %+v", res)
	}
	if body := receiveOne(t, q, url); body != "run 42: nightly" {
		t.Fatalf("delivered %q", body)
	}
	res = c.Call(ctx, render(t, `{"arn":"arn:aws:sns:us-east-1:123456789012:no-such-topic"}`, vars))
	if res.OK || !strings.Contains(res.Msg, "NotFound") {
		t.Fatalf("missing topic: %+v", res)
	}
}

// TestEventBridgePutEvents puts an event on moto's default bus, which a
// rule forwards to a queue, and reads the event back.
func TestEventBridgePutEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ep := moto(t)
	eb := eventbridge.NewFromConfig(emulator.Config(), func(o *eventbridge.Options) { o.BaseEndpoint = aws.String(ep) })
	q, url, qarn := motoQueue(t, ep)
	source := emulator.UniqueName("xjob.test")
	rule := emulator.UniqueName("rule")
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(rule), EventPattern: aws.String(`{"source":["` + source + `"]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(rule),
		Targets: []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(qarn)}}}); err != nil {
		t.Fatal(err)
	}
	c := awstarget.New(awstarget.Config{AWS: emulator.Config(), Endpoints: map[string]string{target.ServiceEvents: ep}})
	res := c.Call(ctx, render(t, `{"arn":"arn:aws:events:us-east-1:123456789012:event-bus/default","source":"`+source+`","detailType":"nightly run"}`, vars))
	if !res.OK || !strings.Contains(res.Msg, "EventBridge default · ") || !strings.Contains(res.Msg, "event put, EventId ") {
		t.Fatalf("put events: %+v", res)
	}
	var ev struct {
		Source     string         `json:"source"`
		DetailType string         `json:"detail-type"`
		Detail     map[string]any `json:"detail"`
	}
	body := receiveOne(t, q, url)
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		t.Fatalf("event %q: %v", body, err)
	}
	if ev.Source != source || ev.DetailType != "nightly run" || ev.Detail["param"] != "nightly" || ev.Detail["logId"] != 42.0 ||
		ev.Detail["scheduleTime"] != "2026-03-01T12:00:00.000Z" {
		t.Fatalf("event %s", body)
	}
}

// TestStepFunctionsStartExecution starts an execution of a state machine
// on moto's server, named after the run, with the rendered input.
func TestStepFunctionsStartExecution(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ep := moto(t)
	sf := sfn.NewFromConfig(emulator.Config(), func(o *sfn.Options) { o.BaseEndpoint = aws.String(ep) })
	sm, err := sf.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String(emulator.UniqueName("sm")),
		Definition: aws.String(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`),
		RoleArn:    aws.String("arn:aws:iam::123456789012:role/sfn")})
	if err != nil {
		t.Fatal(err)
	}
	c := awstarget.New(awstarget.Config{AWS: emulator.Config(), Endpoints: map[string]string{target.ServiceStates: ep}})
	res := c.Call(ctx, render(t, `{"arn":"`+aws.ToString(sm.StateMachineArn)+`","input":"{\"p\": {{param|json}}}"}`, vars))
	if !res.OK || !strings.Contains(res.Msg, "execution started: ") {
		t.Fatalf("start execution: %+v", res)
	}
	execARN := res.Msg[strings.Index(res.Msg, "execution started: ")+len("execution started: "):]
	d, err := sf.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(execARN)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(d.Name) != "xjob-7-42" || aws.ToString(d.Input) != `{"p": "nightly"}` {
		t.Fatalf("execution %q input %q", aws.ToString(d.Name), aws.ToString(d.Input))
	}
}
