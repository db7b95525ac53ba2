package lambdaapp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/app/lambdaapp"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/executor"
	"github.com/xjobdev/xjob/pkg/protocol"
)

func TestMain(m *testing.M) { emulator.Main(m) }

const (
	accessToken = "e2e-access"
	adminToken  = "e2e-admin"
	appName     = "lambda-e2e"
)

// env is one emulated deployment: tables, queues, topic and the
// environment the templates would give each function.
type env struct {
	t      *testing.T
	vars   map[string]string
	arns   map[string]string // queue URL → ARN
	sqs    *sqs.Client       // un-metered (event source mappings have their own meter key)
	store  *dynamostore.DB   // un-metered, for assertions
	alarmQ string            // queue subscribed to the alarm topic
	meter  *awsstack.Meter
	ddbURL string
	sqsURL string
	logger *slog.Logger
	apps   map[string]*lambdaapp.App
	appsMu sync.Mutex
	shards int
	// claimTTL, when set, is every App's dispatch claim TTL (and so the
	// delay of a task in flight elsewhere).
	claimTTL time.Duration
	prefix   string
	tablesMu sync.Mutex
	tables   map[string]map[string]bool // function → tables it called (short names)
}

func setupEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{t: t, meter: awsstack.NewMeter(), ddbURL: emulator.Dynalite(t), sqsURL: emulator.Fauxqs(t),
		sqs: emulator.SQS(t), arns: map[string]string{}, apps: map[string]*lambdaapp.App{}, shards: 2}
	e.logger = slog.New(slog.DiscardHandler)
	if os.Getenv("XJOB_TEST_LOG") != "" {
		e.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	prefix := emulator.UniqueName("lam") + "-"
	e.prefix, e.tables = prefix, map[string]map[string]bool{}
	st, err := dynamostore.New(emulator.DynamoDB(t), dynamostore.Options{Tables: dynamostore.TablesWithPrefix(prefix), Shards: e.shards})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTables(ctx); err != nil {
		t.Fatalf("create tables: %v", err)
	}
	e.store = st
	queue := func(name, visibility string) string {
		out, err := e.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(emulator.UniqueName(name)),
			Attributes: map[string]string{"VisibilityTimeout": visibility}})
		if err != nil {
			t.Fatalf("create queue %s: %v", name, err)
		}
		a, err := e.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatalf("queue arn: %v", err)
		}
		e.arns[*out.QueueUrl] = a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
		return *out.QueueUrl
	}
	ring, fast, slow := queue("ring", "3"), queue("fast", "5"), queue("slow", "5")
	e.alarmQ = queue("alarms", "5")
	snsc := sns.NewFromConfig(emulator.Config(), func(o *sns.Options) { o.BaseEndpoint = aws.String(e.sqsURL) })
	topic, err := snsc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(emulator.UniqueName("alarm"))})
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if _, err := snsc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String(e.arns[e.alarmQ]), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	e.vars = map[string]string{
		awsconfig.EnvTablePrefix: prefix, awsconfig.EnvShards: fmt.Sprint(e.shards),
		awsconfig.EnvRingQueueURL: ring, awsconfig.EnvDispatchFastURL: fast, awsconfig.EnvDispatchSlowURL: slow,
		awsconfig.EnvAccessToken: accessToken, awsconfig.EnvAdminToken: adminToken,
		awsconfig.EnvAlarmTopicARN: *topic.TopicArn,
		// The test's executors run on loopback (refused by default).
		awsconfig.EnvAllowCIDRs: awsstack.LoopbackCIDRs,
	}
	return e
}

// app builds a function's App as its main would (config from the
// environment, clients built once), on metered emulator clients. key names
// the execution environment; each gets its own clients.
func (e *env) app(fn, key string) *lambdaapp.App {
	e.appsMu.Lock()
	defer e.appsMu.Unlock()
	if a := e.apps[key]; a != nil {
		return a
	}
	cfg, err := lambdaapp.LoadConfig(fn, func(k string) string { return e.vars[k] })
	if err != nil {
		e.t.Fatalf("config %s: %v", fn, err)
	}
	mw := e.meter.Middleware(fn)
	d := lambdaapp.Deps{
		DynamoDB: dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) {
			o.BaseEndpoint = aws.String(e.ddbURL)
			o.APIOptions = append(o.APIOptions, mw, e.tableRecorder(fn))
		}),
		SQS: sqs.NewFromConfig(emulator.Config(), func(o *sqs.Options) {
			o.BaseEndpoint = aws.String(e.sqsURL)
			o.APIOptions = append(o.APIOptions, mw)
		}),
		SNS: sns.NewFromConfig(emulator.Config(), func(o *sns.Options) {
			o.BaseEndpoint = aws.String(e.sqsURL)
			o.APIOptions = append(o.APIOptions, mw)
		}),
		Logger:     e.logger.With("fn", key),
		MetricsOut: io.Discard,
		Owner:      key,
		Scan:       wiring.ScanTunables{TickBudget: 2 * time.Second, LeaseTTL: 4 * time.Second},
		// A failed bucket returns within a second or two, as the queue's
		// 3 s visibility timeout brought it back before.
		RingRetry: time.Second,
		ClaimTTL:  e.claimTTL,
	}
	a, err := lambdaapp.New(cfg, d)
	if err != nil {
		e.t.Fatalf("new %s: %v", fn, err)
	}
	e.apps[key] = a
	return a
}

// retire shuts execution environments down as Lambda does (SIGTERM: the
// App's shutdown flush); a later invocation gets a new one.
func (e *env) retire(t *testing.T, keys ...string) {
	t.Helper()
	for _, key := range keys {
		e.appsMu.Lock()
		a := e.apps[key]
		delete(e.apps, key)
		e.appsMu.Unlock()
		if a == nil {
			t.Fatalf("retire: no environment %q", key)
		}
		a.Shutdown(context.Background())
	}
}

// tableRecorder records the tables function fn's DynamoDB requests name,
// for the least-privilege check (awsconfig.Function.Tables).
func (e *env) tableRecorder(fn string) func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("xjobTables",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				var names []string
				switch p := in.Parameters.(type) {
				case *dynamodb.GetItemInput:
					names = append(names, aws.ToString(p.TableName))
				case *dynamodb.PutItemInput:
					names = append(names, aws.ToString(p.TableName))
				case *dynamodb.UpdateItemInput:
					names = append(names, aws.ToString(p.TableName))
				case *dynamodb.DeleteItemInput:
					names = append(names, aws.ToString(p.TableName))
				case *dynamodb.QueryInput:
					names = append(names, aws.ToString(p.TableName))
				case *dynamodb.ScanInput:
					names = append(names, aws.ToString(p.TableName))
				case *dynamodb.BatchGetItemInput:
					names = slices.AppendSeq(names, maps.Keys(p.RequestItems))
				case *dynamodb.BatchWriteItemInput:
					names = slices.AppendSeq(names, maps.Keys(p.RequestItems))
				}
				e.tablesMu.Lock()
				if e.tables[fn] == nil {
					e.tables[fn] = map[string]bool{}
				}
				for _, n := range names {
					e.tables[fn][strings.TrimPrefix(strings.TrimPrefix(n, e.prefix), "-")] = true
				}
				e.tablesMu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	}
}

// invoke runs one Lambda invocation of fn: the payload goes through JSON
// as the runtime's would, the context carries a deadline and a request id.
func invoke[In, Out any](e *env, fn string, timeout time.Duration, h func(context.Context, In) (Out, error), payload any) (Out, error) {
	var in In
	b, err := json.Marshal(payload)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		e.t.Fatalf("%s payload: %v", fn, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: emulator.UniqueName("req")})
	end := e.meter.Begin(fn)
	out, err := h(ctx, in)
	end()
	return out, err
}

func scheduledEvent() events.EventBridgeEvent {
	return events.EventBridgeEvent{Version: "0", ID: emulator.UniqueName("ev"), DetailType: "Scheduled Event",
		Source: "aws.events", Time: time.Now().UTC().Truncate(time.Minute).Add(30 * time.Second), Region: emulator.Region,
		Detail: json.RawMessage(`{}`)}
}

// apiGateway is the HTTP API in front of web: it turns
// each request into a payload-2.0 event and routes it as the templates do.
func (e *env) apiGateway() *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.meter.HTTPRequest()
		body, _ := io.ReadAll(r.Body)
		hdr := map[string]string{}
		for k, v := range r.Header {
			hdr[strings.ToLower(k)] = strings.Join(v, ",")
		}
		ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "$default", RawPath: r.URL.Path,
			RawQueryString: r.URL.RawQuery, Headers: hdr, Body: string(body),
			RequestContext: events.APIGatewayV2HTTPRequestContext{Stage: "$default", DomainName: r.Host,
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, SourceIP: "127.0.0.1"}}}
		fn := awsconfig.RouteFunction(r.Method, r.URL.Path)
		resp, err := invoke(e, fn, 30*time.Second, e.app(fn, fn).HTTP, ev)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		for _, c := range resp.Cookies { // payload 2.0 returns Set-Cookie here
			w.Header().Add("Set-Cookie", c)
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.WriteString(w, resp.Body)
	}))
	e.t.Cleanup(srv.Close)
	return srv
}

// functionURL is the executor API's Lambda function URL (AuthType NONE):
// every request, whatever its path, becomes one payload-2.0 invocation of
// the function that has the URL, with no API Gateway request metered.
// web, when set, is the web function's address, where the function
// redirects job declarations (XJOB_WEB_URL, as the templates set it).
func (e *env) functionURL(web string) *httptest.Server {
	if web != "" {
		e.vars[awsconfig.EnvWebURL] = web
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.meter.URLRequest()
		body, _ := io.ReadAll(r.Body)
		hdr := map[string]string{}
		for k, v := range r.Header {
			hdr[strings.ToLower(k)] = strings.Join(v, ",")
		}
		ev := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery,
			Headers: hdr, Body: string(body),
			RequestContext: events.LambdaFunctionURLRequestContext{DomainName: r.Host,
				HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, SourceIP: "127.0.0.1"}}}
		fn := awsconfig.URLFunction()
		resp, err := invoke(e, fn, 30*time.Second, e.app(fn, fn).URL, ev)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.WriteString(w, resp.Body)
	}))
	e.t.Cleanup(srv.Close)
	return srv
}

// esm is an SQS event source mapping: it long-polls a queue, hands batches
// of up to 10 records to the handler and deletes the records that are not
// batch item failures. redeliverOnce leaves the first successful record
// undeleted and visible again at once, as if the delete had been lost.
type esm struct {
	e             *env
	fn, url       string
	handle        func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	redeliverOnce bool
	mu            sync.Mutex
	injected      string // message id left for redelivery
	redelivered   int    // deliveries of it after the first
}

func (s *esm) run(ctx context.Context, wg *sync.WaitGroup) {
	client := sqs.NewFromConfig(emulator.Config(), func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(s.e.sqsURL)
		o.APIOptions = append(o.APIOptions, s.e.meter.Middleware("esm:"+s.fn))
	})
	wg.Go(func() {
		for ctx.Err() == nil {
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(s.url), MaxNumberOfMessages: 10,
				WaitTimeSeconds: 1, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
			if err != nil || len(out.Messages) == 0 {
				continue
			}
			ev := events.SQSEvent{}
			for _, m := range out.Messages {
				ev.Records = append(ev.Records, events.SQSMessage{MessageId: *m.MessageId, ReceiptHandle: *m.ReceiptHandle,
					Body: *m.Body, Attributes: m.Attributes, EventSource: "aws:sqs", EventSourceARN: s.e.arns[s.url], AWSRegion: emulator.Region})
			}
			resp, err := invoke(s.e, s.fn, 30*time.Second, s.handle, ev)
			if err != nil {
				continue // the whole batch comes back
			}
			failed := map[string]bool{}
			for _, f := range resp.BatchItemFailures {
				failed[f.ItemIdentifier] = true
			}
			var del []sqstypes.DeleteMessageBatchRequestEntry
			for i, r := range ev.Records {
				if failed[r.MessageId] {
					continue
				}
				s.mu.Lock()
				if r.MessageId == s.injected {
					s.redelivered++
				}
				inject := s.redeliverOnce && s.injected == ""
				if inject {
					s.injected = r.MessageId
				}
				s.mu.Unlock()
				if inject {
					_, _ = client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(s.url),
						ReceiptHandle: aws.String(r.ReceiptHandle), VisibilityTimeout: 0})
					continue
				}
				del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: aws.String(r.ReceiptHandle)})
			}
			if len(del) > 0 {
				_, _ = client.DeleteMessageBatch(context.WithoutCancel(ctx), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(s.url), Entries: del})
			}
		}
	})
}

// recorder is the executor on loopback: the SDK executor behind a
// middleware that records every /run (duplicates included).
type recorder struct {
	srv  *httptest.Server
	exec *executor.Executor
	mu   sync.Mutex
	runs map[int64]int // log id → /run calls
	// blocked receives the log id of each run of handler "block", which
	// runs until it is killed.
	blocked chan int64
	// afterKill, when set, runs after the executor handled /kill and
	// before its answer leaves (a test holds the answer back with it).
	afterKill func()
}

func newExecutor(t *testing.T, admin string) *recorder {
	t.Helper()
	r := &recorder{runs: map[int64]int{}, blocked: make(chan int64, 16)}
	var ready sync.WaitGroup
	ready.Add(1)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ready.Wait()
		if req.URL.Path == "/run" {
			body, _ := io.ReadAll(req.Body)
			var p protocol.TriggerParam
			if json.Unmarshal(body, &p) == nil {
				r.mu.Lock()
				r.runs[p.LogID]++
				r.mu.Unlock()
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		if req.URL.Path == "/kill" && r.afterKill != nil {
			held := httptest.NewRecorder()
			r.exec.ServeHTTP(held, req)
			r.afterKill()
			maps.Copy(w.Header(), held.Header())
			w.WriteHeader(held.Code)
			_, _ = w.Write(held.Body.Bytes())
			return
		}
		r.exec.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	e, err := executor.New(executor.Config{AdminAddresses: []string{admin}, AccessToken: accessToken, AppName: appName,
		Address: r.srv.URL + "/", LogDir: t.TempDir(), CallbackRetryInterval: 500 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	must(t, e.Register("ok", func(_ context.Context, job *executor.Job) error { job.Succeed("ok " + job.Param); return nil }))
	must(t, e.Register("boom", func(context.Context, *executor.Job) error { return fmt.Errorf("boom") }))
	must(t, e.Register("block", func(ctx context.Context, job *executor.Job) error {
		r.blocked <- job.LogID
		<-ctx.Done()
		return ctx.Err()
	}))
	r.exec = e
	ready.Done()
	must(t, e.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = e.Shutdown(ctx)
	})
	return r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func adminCall(t *testing.T, base, method, path string, body, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, rb)
	}
	if out != nil {
		must(t, json.Unmarshal(rb, out))
	}
}

// settle waits up to limit for cond, for checks that report what is still
// wrong themselves afterwards.
func settle(limit time.Duration, cond func() bool) {
	for deadline := time.Now().Add(limit); !cond() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
}

func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (e *env) logs(t *testing.T, jobID int64) []xjob.Log {
	t.Helper()
	page, err := e.store.LogList(context.Background(), driver.LogListParams{JobID: jobID, Limit: 1000})
	if err != nil {
		t.Fatalf("log list: %v", err)
	}
	return page.Logs
}

// TestLambdaEndToEnd runs the five handlers in-process as Lambda calls them,
// against dynalite and fauxqs, with an SDK executor on loopback.
func TestLambdaEndToEnd(t *testing.T) {
	e := setupEnv(t)
	ctx := context.Background()
	gw := e.apiGateway()
	// The executor's admin address is the function URL (registration and
	// results, the callback function); the admin API is the HTTP API's.
	fu := e.functionURL(gw.URL)
	rec := newExecutor(t, fu.URL)

	// Setup through the admin API (web function).
	var g xjob.Group
	adminCall(t, gw.URL, "POST", "/v1/groups", map[string]any{"appname": appName, "title": "e2e", "addressType": 0}, &g)
	// okJobs fire every second: enough triggers per ring bucket and per
	// SQS batch for the cost table to show per-trigger figures.
	okJobs := make([]xjob.Job, 12)
	for i := range okJobs {
		adminCall(t, gw.URL, "POST", "/v1/jobs", map[string]any{"jobGroup": g.ID, "jobDesc": fmt.Sprint("every second ", i), "author": "t",
			"scheduleType": "FIX_RATE", "scheduleConf": "1", "executorHandler": "ok", "triggerStatus": 1}, &okJobs[i])
	}
	okJob := okJobs[0]
	var boomJob xjob.Job
	adminCall(t, gw.URL, "POST", "/v1/jobs", map[string]any{"jobGroup": g.ID, "jobDesc": "fails", "author": "t",
		"scheduleType": "FIX_RATE", "scheduleConf": "4", "executorHandler": "boom", "triggerStatus": 1}, &boomJob)
	setup := e.meter.Snapshot() // cost accounting covers the pipeline, not the setup

	// Event source mappings: ring and both dispatch lanes, each injecting
	// one redelivery of a message it handled successfully.
	pollCtx, stopPolls := context.WithCancel(ctx)
	var polls sync.WaitGroup
	ringESM := &esm{e: e, fn: "ring", url: e.vars[awsconfig.EnvRingQueueURL], handle: e.app("ring", "ring").Ring, redeliverOnce: true}
	dispatchFn := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		return e.app("dispatch", "dispatch").DispatchSQS(ctx, ev)
	}
	fastESM := &esm{e: e, fn: "dispatch", url: e.vars[awsconfig.EnvDispatchFastURL], handle: dispatchFn, redeliverOnce: true}
	slowESM := &esm{e: e, fn: "dispatch", url: e.vars[awsconfig.EnvDispatchSlowURL], handle: dispatchFn}
	for _, s := range []*esm{ringESM, fastESM, slowESM} {
		s.run(pollCtx, &polls)
	}
	defer func() { stopPolls(); polls.Wait() }()

	// Scan: two scheduled invocations in two execution environments that
	// overlap, as EventBridge's minute does with a long invocation; the
	// second takes the shards over when the first releases them.
	scanStart := time.Now()
	var scans sync.WaitGroup
	for i, at := range []time.Duration{0, 5 * time.Second} {
		scans.Go(func() {
			time.Sleep(at)
			h := func(ctx context.Context, ev events.EventBridgeEvent) (struct{}, error) {
				return struct{}{}, e.app("scan", fmt.Sprintf("scan-%d", i)).Scan(ctx, ev)
			}
			if _, err := invoke(e, "scan", 8*time.Second, h, scheduledEvent()); err != nil {
				t.Errorf("scan invocation %d: %v", i, err)
			}
		})
	}
	scans.Wait()
	scanEnd := time.Now()

	// Manual trigger: a direct invocation of the dispatch function.
	manual := map[string]any{"jobId": okJob.ID, "executorParam": "by hand", "addressList": []string{rec.srv.URL + "/"}}
	beforeManual := e.meter.Snapshot()
	out, err := invoke(e, "dispatch", 10*time.Second, e.app("dispatch", "dispatch").Dispatch, manual)
	if err != nil {
		t.Fatalf("manual trigger: %v", err)
	}
	// The dispatch function, which serves the admin's triggers, reads
	// the group strongly consistent (the ring's dispatcher does not): a
	// trigger right after a group edit goes where the edit says.
	if st := e.meter.Snapshot().Sub(beforeManual).Ops["dispatch"]["dynamodb:GetItem"]; st.Requests == 0 || st.Reported+st.Derived < float64(st.Requests) {
		t.Errorf("dispatch GetItem: %d requests, %.1f read units; want each strongly consistent (1 unit)", st.Requests, st.Reported+st.Derived)
	}
	var mr lambdaapp.ManualResult
	b, _ := json.Marshal(out)
	must(t, json.Unmarshal(b, &mr))
	if len(mr.LogIDs) != 1 || mr.TriggerCodes[0] != 200 {
		t.Fatalf("manual trigger result %+v", mr)
	}

	// Every fire of each every-second job between the first and the last
	// is there, once, and succeeded through the callback function.
	var okLogs []xjob.Log
	checkFrom := time.Now().UnixMilli()
	for _, j := range okJobs {
		var (
			logs  []xjob.Log
			fires []int64
		)
		// A bucket or task whose handler failed under load comes back
		// after its queue's visibility timeout (3–5 s here) and fills its
		// gap late: wait for the sequence to close before judging it, so
		// that only a fire that never comes counts as lost.
		read := func() (done bool) {
			logs, fires, done = e.logs(t, j.ID), fires[:0], true
			// The ring keeps firing the planned horizon meanwhile: judge
			// only the fires due before the check began.
			logs = slices.DeleteFunc(logs, func(l xjob.Log) bool { return l.ScheduledTime > checkFrom })
			for _, l := range logs {
				done = done && l.HandleCode == 200
				if l.TriggerType == xjob.TriggerCron {
					fires = append(fires, l.ScheduledTime)
				}
			}
			slices.Sort(fires)
			for i := 1; i < len(fires); i++ {
				done = done && fires[i]-fires[i-1] == 1000
			}
			return done && len(logs) >= 5
		}
		done := false
		settle(30*time.Second, func() bool { done = read(); return done })
		if !done {
			for _, l := range logs {
				if l.HandleCode != 200 {
					t.Errorf("job %d: log %d (fire %d) has handle code %d after 30 s: %+v", j.ID, l.ID, l.ScheduledTime, l.HandleCode, l)
				}
			}
		}
		for i := 1; i < len(fires); i++ {
			if d := fires[i] - fires[i-1]; d != 1000 {
				t.Errorf("job %d: fires %d and %d are %d ms apart (lost or duplicate fire): %v", j.ID, i-1, i, d, fires)
			}
		}
		if want := int(scanEnd.Sub(scanStart)/time.Second) - 8; len(fires) < want {
			t.Errorf("job %d: %d scheduled fires over %s of scanning, want ≥ %d", j.ID, len(fires), scanEnd.Sub(scanStart).Round(time.Second), want)
		}
		if j.ID == okJob.ID {
			okLogs = logs
		}
	}
	if !slices.ContainsFunc(okLogs, func(l xjob.Log) bool { return l.ID == mr.LogIDs[0] && l.ExecutorParam == "by hand" }) {
		t.Errorf("manual trigger log %d missing or without its param", mr.LogIDs[0])
	}

	// The failing job: a 500 result, alarmed through SNS.
	eventually(t, 15*time.Second, "an alarmed failure", func() bool {
		return slices.ContainsFunc(e.logs(t, boomJob.ID), func(l xjob.Log) bool {
			return l.HandleCode == 500 && l.AlarmStatus == xjob.AlarmSuccess
		})
	})
	msgs, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.alarmQ), WaitTimeSeconds: 2})
	if err != nil || len(msgs.Messages) == 0 || !strings.Contains(*msgs.Messages[0].Body, `"event":"job.failed"`) {
		t.Errorf("alarm on the SNS subscription: %v %+v", err, msgs)
	}

	// Redeliveries happened and reached no executor twice. The ring
	// dispatches the fast lane itself, so the fast queue sees only what the
	// ring could not finish (usually nothing): its redelivery is injected
	// in TestRingSpillsWhatItCannotFinish.
	eventually(t, 10*time.Second, "injected redeliveries", func() bool {
		ringESM.mu.Lock()
		defer ringESM.mu.Unlock()
		return ringESM.redelivered > 0
	})
	stopPolls()
	polls.Wait()
	rec.mu.Lock()
	for id, n := range rec.runs {
		if n != 1 {
			t.Errorf("log %d reached the executor %d times", id, n)
		}
	}
	runs := len(rec.runs)
	rec.mu.Unlock()

	// The HTTP function's /metrics shows the fleet's runs of today from
	// the shared daily report, though it ran none of them itself: once
	// Lambda retires the pipeline's environments, which hold their counts
	// back (a write per environment and minute) and write them on the
	// way out (SIGTERM).
	e.retire(t, "ring", "dispatch", "callback")
	var scraped []byte
	runsOK := func() bool {
		req, _ := http.NewRequest("GET", gw.URL+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			scraped = []byte(err.Error())
			return false
		}
		defer resp.Body.Close()
		scraped, _ = io.ReadAll(resp.Body)
		scraped = append([]byte(resp.Status+" "), scraped...)
		m := regexp.MustCompile(`(?m)^xjob_runs_today\{result="success"\} (\d+)`).FindSubmatch(scraped)
		return m != nil && string(m[1]) != "0"
	}
	if settle(15*time.Second, runsOK); !runsOK() {
		t.Errorf("/metrics of the HTTP function lacks today's successful runs (%.300s):\n%s", scraped,
			regexp.MustCompile(`(?m)^xjob_runs_today.*$|^# HELP xjob_runs.*$`).FindAll(scraped, -1))
	}

	// Maintenance: the registry function's scheduled event.
	res, err := invoke(e, "registry", 30*time.Second, e.app("registry", "registry").Registry, scheduledEvent())
	if err != nil {
		t.Fatalf("maintenance: %v", err)
	}
	t.Logf("maintenance: %+v", res)
	eg, err := e.store.GroupGet(ctx, g.ID)
	if err != nil || !slices.Contains(eg.AddressList, rec.srv.URL+"/") {
		t.Errorf("group after maintenance: %+v %v", eg, err)
	}

	// Every AWS action a function called (setup included) is declared for
	// it, or is a consume action on a queue it is fed from (the templates
	// grant those for its event source mapping; the ring sets a failed
	// bucket's retry delay with one).
	all := e.meter.Snapshot()
	for _, fn := range awsconfig.Functions {
		for _, act := range iamActions(all, fn.Name) {
			if !slices.Contains(fn.Actions, act) && !(len(fn.Consumes) > 0 && slices.Contains(consumeActions, act)) {
				t.Errorf("%s calls %s, which awsconfig does not declare", fn.Name, act)
			}
		}
		t.Logf("%-8s observed IAM actions: %v", fn.Name, iamActions(all, fn.Name))
		e.tablesMu.Lock()
		used := slices.Sorted(maps.Keys(e.tables[fn.Name]))
		e.tablesMu.Unlock()
		for _, tb := range used {
			if !slices.Contains(fn.Tables, tb) {
				t.Errorf("%s calls table %s, which awsconfig does not grant it", fn.Name, tb)
			}
		}
		t.Logf("%-8s observed tables: %v", fn.Name, used)
	}
	triggers := len(e.logs(t, boomJob.ID))
	for _, j := range okJobs {
		triggers += len(e.logs(t, j.ID))
	}
	t.Logf("executor runs %d, trigger logs %d", runs, triggers)
	// Executors' requests reached the function URL only: each HTTP API
	// request of the run is one of the test's admin calls, one web
	// invocation.
	if run := all.Sub(setup); run.Invokes["callback"].Invocations == 0 || run.Invokes["web"].Invocations != run.HTTPRequests {
		t.Errorf("callback invocations %d; web invocations %d for %d HTTP API requests", run.Invokes["callback"].Invocations,
			run.Invokes["web"].Invocations, run.HTTPRequests)
	}
	costTable(t, all.Sub(setup), triggers)
}
