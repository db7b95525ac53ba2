package awsstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/lambdaqueue"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/internal/testenv/tool"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/executor"
)

// TestLanesOnAsyncInvocations runs the dispatch lanes as asynchronous
// invocations of the dispatch function through the deployment's Invoke
// API: one event delivered twice triggers its job once (the occurrence
// claim); a slow job's slow-lane invocation never holds a fast-lane task
// (each event is an invocation of its own); a task due later waits in the
// ring queue and is then dispatched; an event that fails on every attempt
// is tried three times (Lambda's two retries) and lands in the
// on-failure dead-letter queue.
//
// It runs twice: with the functions in process, and as the real bootstrap
// binaries behind the Runtime API (the dispatch bootstrap receiving the
// asynchronous events, the senders' Lambda clients pointed at the
// deployment's Invoke API by AWS_ENDPOINT_URL_LAMBDA).
func TestLanesOnAsyncInvocations(t *testing.T) {
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	t.Parallel()
	onLaneStacks(t, false, func(t *testing.T, ctx context.Context, d *awsstack.Deployment, _ *lockedBuffer) {
		lanes(t, ctx, d)
	})
}

// onLaneStacks runs body on a one-shard stack whose dispatch lanes are
// asynchronous invocations retried after 100 ms, twice in parallel: with
// the functions in process and as the real bootstrap binaries. Each run
// gets its own buffer of the functions' logs (in process and the
// bootstraps' output) when keepLogs is set; body's logs is nil otherwise.
func onLaneStacks(t *testing.T, keepLogs bool, body func(t *testing.T, ctx context.Context, d *awsstack.Deployment, logs *lockedBuffer)) {
	t.Helper()
	for _, bootstraps := range []bool{false, true} {
		name := "in process"
		if bootstraps {
			name = "bootstraps"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var logs *lockedBuffer
			handler := slog.DiscardHandler
			if keepLogs {
				logs = &lockedBuffer{}
				handler = slog.NewJSONHandler(logs, nil)
			}
			opts := awsstack.Options{Shards: 1, RingPollers: 1, PollWait: time.Second, NoMaintenance: true,
				AsyncRetryWait: 100 * time.Millisecond, Logger: slog.New(handler)}
			if bootstraps {
				opts.Bootstraps = awsstack.BootstrapsFor(t, ctx)
				if keepLogs {
					opts.BootstrapOutput = logs
				}
			}
			body(t, ctx, awsstack.StartFor(t, ctx, opts), logs)
		})
	}
}

func lanes(t *testing.T, ctx context.Context, d *awsstack.Deployment) {
	if d.InvokeEndpoint() == "" {
		t.Fatal("no Invoke API: the lanes are not asynchronous invocations by default")
	}
	// The slow job's /run answers after release (or 20 s): a dispatch
	// of it holds its invocation that long.
	release := make(chan struct{})
	var slowJob atomic.Int64
	hold := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/run") {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				var run struct {
					JobID int64 `json:"jobId"`
				}
				if json.Unmarshal(body, &run) == nil && run.JobID == slowJob.Load() {
					select {
					case <-release:
					case <-time.After(20 * time.Second):
					}
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	addr, stop := sdkExecutor(t, d, "lanes-test", hold, map[string]executor.HandlerFunc{"ok": succeed})
	defer stop()
	defer close(release)
	api, err := adminclient.New(d.URL(), d.AdminToken())
	if err != nil {
		t.Fatal(err)
	}
	g, err := api.GroupCreate(ctx, xjob.Group{AppName: "lanes-test", Title: "t", AddressType: xjob.AddressManual, AddressList: []string{addr}})
	if err != nil {
		t.Fatalf("group: %v", err)
	}
	newJob := func(desc string) int64 {
		job := xjob.Job{GroupID: g.ID, Description: desc, Author: "t", ScheduleType: xjob.ScheduleNone, Handler: "ok",
			TriggerStatus: xjob.StatusStopped}
		job.ApplyDefaults()
		j, err := api.JobCreate(ctx, job)
		if err != nil {
			t.Fatalf("job: %v", err)
		}
		return j.ID
	}
	fast, slow, later := newJob("fast"), newJob("slow"), newJob("later")
	slowJob.Store(slow)

	client := awslambda.NewFromConfig(aws.Config{Region: awsstack.Region,
		Credentials: credentials.NewStaticCredentialsProvider("t", "t", "")},
		func(o *awslambda.Options) { o.BaseEndpoint = aws.String(d.InvokeEndpoint()) })
	task := func(job int64, ref string) fire.DispatchTask {
		return fire.DispatchTask{Occurrence: fire.Occurrence{JobID: job, Type: xjob.TriggerManual, Ref: ref}}
	}
	logs := func(job int64) []xjob.Log {
		page, err := d.Store().LogList(ctx, driver.LogListParams{JobID: job, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return page.Logs
	}
	waitLogs := func(job int64, n int, within time.Duration) []xjob.Log {
		t.Helper()
		end := time.Now().Add(within)
		for {
			ls := logs(job)
			if len(ls) >= n && ls[0].TriggerCode != 0 || time.Now().After(end) {
				return ls
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// The slow job on the slow lane holds its invocation; the fast job's
	// event, sent after it, is triggered meanwhile.
	slowLane := lambdaqueue.New(client, awsstack.DispatchFunction, fire.LaneSlow, nil, nil)
	if err := slowLane.Send(ctx, []driver.Outgoing[fire.DispatchTask]{{Msg: task(slow, "slow-1")}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the slow dispatch is under way
	payload, err := json.Marshal(lambdaqueue.Event{Lane: fire.LaneFast, Tasks: []fire.DispatchTask{task(fast, "twice")}})
	if err != nil {
		t.Fatal(err)
	}
	// One event delivered twice, as Lambda may.
	for range 2 {
		out, err := client.Invoke(ctx, &awslambda.InvokeInput{FunctionName: aws.String(awsstack.DispatchFunction),
			InvocationType: types.InvocationTypeEvent, Payload: payload})
		if err != nil || out.StatusCode != http.StatusAccepted {
			t.Fatalf("invoke: %v %+v", err, out)
		}
	}
	if ls := waitLogs(fast, 1, 5*time.Second); len(ls) != 1 || ls[0].TriggerCode != xjob.CodeSuccess {
		t.Fatalf("fast job's logs %+v: want one triggered while the slow job's dispatch is held", ls)
	}
	if ls := logs(slow); len(ls) == 1 && ls[0].TriggerCode != 0 {
		t.Errorf("slow job triggered before its release: the fast lane waited for it")
	}
	// The second delivery has run too (both invocations are metered) and
	// added nothing.
	for end := time.Now().Add(5 * time.Second); d.Meter().Snapshot().Invokes["dispatch"].Invocations < 3 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if ls := logs(fast); len(ls) != 1 {
		t.Errorf("one event delivered twice made %d logs, want 1", len(ls))
	}
	release <- struct{}{}
	if ls := waitLogs(slow, 1, 10*time.Second); len(ls) != 1 || ls[0].TriggerCode != xjob.CodeSuccess {
		t.Errorf("slow job's logs %+v: want one, triggered once released", ls)
	}

	// A task due later waits in the ring queue (Lambda has no per-event
	// delay) and is dispatched once due.
	ringQ := d.RingDeferrals()
	deferred := lambdaqueue.New(client, awsstack.DispatchFunction, fire.LaneFast, ringQ, nil)
	due := time.Now().Add(1500 * time.Millisecond)
	if err := deferred.Send(ctx, []driver.Outgoing[fire.DispatchTask]{{Msg: task(later, "later-1"), VisibleAt: due.UnixMilli()}}); err != nil {
		t.Fatal(err)
	}
	if ls := logs(later); len(ls) != 0 {
		t.Errorf("a task due in 1.5 s was dispatched at once: %+v", ls)
	}
	ls := waitLogs(later, 1, 10*time.Second)
	if len(ls) != 1 || ls[0].TriggerCode != xjob.CodeSuccess {
		t.Fatalf("deferred task's logs %+v: want one", ls)
	}
	if at := time.UnixMilli(ls[0].TriggerTime); at.Before(due.Add(-time.Second)) {
		t.Errorf("deferred task triggered at %v, more than SQS's rounding before its due time %v", at, due)
	}

	// An event that fails every attempt: three invocations, then the
	// dead-letter queue.
	before := d.Meter().Snapshot().Invokes["dispatch"].Invocations
	bad := lambdaqueue.New(client, awsstack.DispatchFunction, "sideways", nil, nil)
	if err := bad.Send(ctx, []driver.Outgoing[fire.DispatchTask]{{Msg: task(fast, "bad")}}); err != nil {
		t.Fatal(err)
	}
	_, fauxqs := d.Endpoints()
	sq := sqs.NewFromConfig(aws.Config{Region: awsstack.Region, Credentials: credentials.NewStaticCredentialsProvider("t", "t", "")},
		func(o *sqs.Options) { o.BaseEndpoint = aws.String(fauxqs) })
	out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(d.DeadLetters()), WaitTimeSeconds: 5})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("dead-letter queue: %v %+v, want the failed event", err, out)
	}
	var rec struct {
		RequestContext struct {
			Condition string `json:"condition"`
		} `json:"requestContext"`
		RequestPayload lambdaqueue.Event `json:"requestPayload"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &rec); err != nil || rec.RequestContext.Condition != "RetriesExhausted" ||
		rec.RequestPayload.Lane != "sideways" {
		t.Errorf("dead letter %s: %v", aws.ToString(out.Messages[0].Body), err)
	}
	if n := d.Meter().Snapshot().Invokes["dispatch"].Invocations - before; n != 3 {
		t.Errorf("failed event invoked %d times, want 3 (Lambda's two retries)", n)
	}
}
