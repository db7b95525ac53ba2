package awsstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/lambdaqueue"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/dispatchfn"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/internal/testenv/tool"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/executor"
)

// TestLaneRetryMeetsHeldClaim delivers lane tasks on the asynchronous
// lanes while their occurrence's claim is held by another dispatcher,
// with the executor counting every /run it receives:
//
//   - held: one event invoked twice (Lambda's at-least-once delivery);
//     the second delivery meets the first one's claim while the
//     executor's /run is still open, goes back to its lane through the
//     ring queue (the in-flight retry, a claim TTL later), and on its
//     redelivery finds the fire triggered. One /run, one log.
//   - ring: the ring function's fast-lane dispatch of a bucket holds the
//     claim (its /run open) when a lane event with the same scheduled
//     occurrence arrives; the ring's claim is provisional (its success
//     recorded with it, in its bucket's name), so the lane task, another
//     delivery, is dropped at once: the ring's bucket carries the fire
//     until its call is made. One /run, one log.
//   - orphaned: a claim taken by a dispatcher that died before calling
//     the executor (written straight to the store, 5 s long); the task's
//     first delivery meets it, its redelivery a claim TTL later takes it
//     over. The fire is not lost: one /run, one log.
//   - exhausted: a task on its last delivery (MaxLaneReceives) whose claim
//     stays held fails its invocation; Lambda's two retries fail the same
//     way and the event lands in the dispatch dead-letter queue with the
//     task in its requestPayload, and the dispatch function logs the
//     occurrence at ERROR; the executor is not called. Once the claim has
//     expired, the record's requestPayload invoked again without its
//     receives (docs/aws.md's replay of the dead-letter queue) fires it
//     once.
//
// Each fired job's result reaches /v1/logs (the executor's callback
// through the results queue). It runs with the functions in process and
// as the real bootstrap binaries.
func TestLaneRetryMeetsHeldClaim(t *testing.T) {
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs); waits a claim TTL (30 s)")
	t.Parallel()
	onLaneStacks(t, true, func(t *testing.T, ctx context.Context, d *awsstack.Deployment, logs *lockedBuffer) {
		laneRetryMeetsHeldClaim(t, ctx, d, logs)
	})
}

// lockedBuffer collects the functions' logs, written concurrently.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// line returns the first logged line holding every one of parts.
func (b *lockedBuffer) line(parts ...string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for l := range strings.Lines(b.buf.String()) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return l
		}
	}
	return ""
}

func laneRetryMeetsHeldClaim(t *testing.T, ctx context.Context, d *awsstack.Deployment, logs *lockedBuffer) {
	// The executor counts each /run per job; a held job's first /run
	// waits until its release (at most 2.5 s: the dispatcher's read
	// timeout is 3 s) before the executor answers it.
	type hold struct{ reached, release chan struct{} }
	var mu sync.Mutex
	runs := map[int64]int{}
	holds := map[int64]hold{}
	count := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/run") {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				var run struct {
					JobID int64 `json:"jobId"`
				}
				if json.Unmarshal(body, &run) == nil {
					mu.Lock()
					runs[run.JobID]++
					h, held := holds[run.JobID]
					first := held && runs[run.JobID] == 1
					mu.Unlock()
					if first {
						close(h.reached)
						select {
						case <-h.release:
						case <-time.After(2500 * time.Millisecond):
						}
					}
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	runsOf := func(job int64) int {
		mu.Lock()
		defer mu.Unlock()
		return runs[job]
	}
	addr, stop := sdkExecutor(t, d, "claims-test", count, map[string]executor.HandlerFunc{"ok": succeed})
	defer stop()
	api, err := adminclient.New(d.URL(), d.AdminToken())
	if err != nil {
		t.Fatal(err)
	}
	g, err := api.GroupCreate(ctx, xjob.Group{AppName: "claims-test", Title: "t", AddressType: xjob.AddressManual, AddressList: []string{addr}})
	if err != nil {
		t.Fatalf("group: %v", err)
	}
	newJob := func(desc string) xjob.Job {
		job := xjob.Job{GroupID: g.ID, Description: desc, Author: "t", ScheduleType: xjob.ScheduleNone, Handler: "ok",
			TriggerStatus: xjob.StatusStopped}
		job.ApplyDefaults()
		j, err := api.JobCreate(ctx, job)
		if err != nil {
			t.Fatalf("job: %v", err)
		}
		return j
	}
	ringJob := newJob("ring")
	held, orphaned, exhausted, ringHeld := newJob("held").ID, newJob("orphaned").ID, newJob("exhausted").ID, ringJob.ID
	holdOf := func(job int64) hold {
		mu.Lock()
		defer mu.Unlock()
		h := hold{reached: make(chan struct{}), release: make(chan struct{})}
		holds[job] = h
		return h
	}
	heldHold, ringHold := holdOf(held), holdOf(ringHeld)
	// waitMet waits until the dispatch function has logged that tk's
	// delivery met a held claim and goes back to its lane.
	waitMet := func(tk fire.DispatchTask) {
		t.Helper()
		for end := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if logs.line("will be retried", tk.Occurrence.ID(0), dispatchErrInFlight) != "" {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("the delivery of %s did not meet the held claim while /run was open", tk.Occurrence.ID(0))
			}
		}
	}

	client := awslambda.NewFromConfig(aws.Config{Region: awsstack.Region,
		Credentials: credentials.NewStaticCredentialsProvider("t", "t", "")},
		func(o *awslambda.Options) { o.BaseEndpoint = aws.String(d.InvokeEndpoint()) })
	task := func(job int64, ref string) fire.DispatchTask {
		return fire.DispatchTask{Occurrence: fire.Occurrence{JobID: job, Type: xjob.TriggerManual, Ref: ref}}
	}
	invoke := func(ev lambdaqueue.Event) {
		t.Helper()
		payload, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out, err := client.Invoke(ctx, &awslambda.InvokeInput{FunctionName: aws.String(awsstack.DispatchFunction),
			InvocationType: types.InvocationTypeEvent, Payload: payload})
		if err != nil || out.StatusCode != http.StatusAccepted {
			t.Fatalf("invoke: %v %+v", err, out)
		}
	}
	// claim writes the claim of a dispatcher that took task's occurrence
	// for the executor at addr and died before calling it.
	claim := func(tk fire.DispatchTask, until time.Duration) {
		t.Helper()
		now := time.Now().UnixMilli()
		created, err := d.Store().LogCreateMany(ctx, []xjob.Log{{OccurrenceID: tk.Occurrence.ID(0), JobID: tk.Occurrence.JobID,
			GroupID: g.ID, TriggerType: tk.Occurrence.Type, TriggerTime: now, ExecutorAddress: addr, ExecutorHandler: "ok",
			ClaimUntil: now + until.Milliseconds()}})
		if err != nil || len(created) != 1 {
			t.Fatalf("claim %s: %v %+v", tk.Occurrence.ID(0), err, created)
		}
	}

	// orphaned and exhausted: claims that no dispatcher will finish.
	orphanTask, exhaustedTask := task(orphaned, "orphan-1"), task(exhausted, "exhausted-1")
	claim(orphanTask, 5*time.Second)
	// Long enough for the exhausted task's three attempts, short
	// against the claim TTL the others wait.
	const exhaustedClaim = 15 * time.Second
	claim(exhaustedTask, exhaustedClaim)
	exhaustedUntil := time.Now().Add(exhaustedClaim)
	invoke(lambdaqueue.Event{Lane: fire.LaneFast, Tasks: []fire.DispatchTask{orphanTask}})
	invoke(lambdaqueue.Event{Lane: fire.LaneFast, Tasks: []fire.DispatchTask{exhaustedTask}, Receives: dispatchfn.MaxLaneReceives - 1})

	// ring: a bucket of the job's scheduled fire, due in a few seconds,
	// which the ring function dispatches itself (the fast lane).
	second := time.Now().Truncate(time.Second).Add(4 * time.Second)
	ringTask := fire.DispatchTask{Occurrence: fire.Occurrence{JobID: ringHeld, Type: xjob.TriggerCron, FireTime: second.UnixMilli()},
		Revision: ringJob.Revision}
	bucket, err := json.Marshal(fire.RingBucket{Shard: ringJob.Shard, Second: second.Unix(),
		Items: []fire.RingItem{{JobID: ringHeld, FireTime: second.UnixMilli(), Revision: ringJob.Revision}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SendRing(ctx, time.Until(second)-1500*time.Millisecond, string(bucket)); err != nil {
		t.Fatal(err)
	}

	// held: the first delivery calls the executor, which holds its /run;
	// the second meets the claim and is sent back to its lane.
	heldTask := task(held, "held-1")
	invoke(lambdaqueue.Event{Lane: fire.LaneFast, Tasks: []fire.DispatchTask{heldTask}})
	select {
	case <-heldHold.reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the held job's first delivery never reached the executor")
	}
	invoke(lambdaqueue.Event{Lane: fire.LaneFast, Tasks: []fire.DispatchTask{heldTask}})
	waitMet(heldTask)
	close(heldHold.release)

	// ring: the lane event arrives while the ring's /run is open.
	select {
	case <-ringHold.reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the ring function never called the executor for its bucket")
	}
	invoke(lambdaqueue.Event{Lane: fire.LaneFast, Tasks: []fire.DispatchTask{ringTask}})
	for end := time.Now().Add(2 * time.Second); logs.line("already triggered", ringTask.Occurrence.ID(0)) == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the lane delivery of %s was not dropped while the ring's /run was open", ringTask.Occurrence.ID(0))
		}
	}
	if logs.line("will be retried", ringTask.Occurrence.ID(0)) != "" {
		t.Errorf("the lane delivery of %s met the ring's provisional claim as held; want it dropped", ringTask.Occurrence.ID(0))
	}
	close(ringHold.release)

	// exhausted: three failed attempts, then the dead-letter queue.
	_, fauxqs := d.Endpoints()
	sq := sqs.NewFromConfig(aws.Config{Region: awsstack.Region, Credentials: credentials.NewStaticCredentialsProvider("t", "t", "")},
		func(o *sqs.Options) { o.BaseEndpoint = aws.String(fauxqs) })
	out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(d.DeadLetters()), WaitTimeSeconds: 10})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("dead-letter queue: %v %+v, want the exhausted event", err, out)
	}
	var rec struct {
		RequestContext struct {
			Condition   string `json:"condition"`
			InvokeCount int    `json:"approximateInvokeCount"`
		} `json:"requestContext"`
		RequestPayload lambdaqueue.Event `json:"requestPayload"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &rec); err != nil ||
		rec.RequestContext.Condition != "RetriesExhausted" || rec.RequestContext.InvokeCount != 3 ||
		len(rec.RequestPayload.Tasks) != 1 || rec.RequestPayload.Tasks[0].Occurrence.ID(0) != exhaustedTask.Occurrence.ID(0) {
		t.Errorf("dead letter %s: %v; want the exhausted task after 3 attempts", aws.ToString(out.Messages[0].Body), err)
	}
	if l := logs.line("task failed on every delivery", exhaustedTask.Occurrence.ID(0)); !strings.Contains(l, "ERROR") {
		t.Errorf("the exhausted task is not logged at ERROR: %q", l)
	}
	if n := runsOf(exhausted); n != 0 {
		t.Errorf("exhausted job: /run received %d times before its replay, want 0 (its claim is held)", n)
	}
	// The operator's replay, once the claim has expired: the dead
	// letter's requestPayload, its receives cleared.
	time.Sleep(time.Until(exhaustedUntil) + 100*time.Millisecond)
	replay := rec.RequestPayload
	replay.Receives = 0
	invoke(replay)

	// held and orphaned: each redelivered a claim TTL later, through
	// the ring queue.
	result := func(job int64) []xjob.Log {
		t.Helper()
		end := time.Now().Add(60 * time.Second)
		for {
			page, err := api.LogList(ctx, adminclient.LogListParams{Job: job, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) == 1 && page.Items[0].TriggerCode == xjob.CodeSuccess && page.Items[0].HandleCode != 0 ||
				time.Now().After(end) {
				return page.Items
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	ls := result(orphaned)
	if len(ls) != 1 || ls[0].TriggerCode != xjob.CodeSuccess || ls[0].HandleCode != xjob.CodeSuccess {
		t.Errorf("orphaned claim's job: /v1/logs %+v, want one log taken over, triggered and handled", ls)
	}
	if l := logs.line("will be retried", orphanTask.Occurrence.ID(0), dispatchErrInFlight); l == "" {
		t.Errorf("the orphaned claim's first delivery did not meet its claim")
	}
	if ls := result(held); len(ls) != 1 || ls[0].TriggerCode != xjob.CodeSuccess || ls[0].HandleCode != xjob.CodeSuccess {
		t.Errorf("held job: /v1/logs %+v, want one log, triggered and handled", ls)
	}
	if ls := result(ringHeld); len(ls) != 1 || ls[0].TriggerCode != xjob.CodeSuccess || ls[0].HandleCode != xjob.CodeSuccess ||
		ls[0].ScheduledTime != second.UnixMilli() {
		t.Errorf("ring's job: /v1/logs %+v, want one log of %v, triggered and handled", ls, second)
	}
	// The held job's redelivery (a claim TTL after its second delivery)
	// comes through the ring queue: the ring function invokes the lane
	// with it. Eight lane events in all: the five above, the two
	// redeliveries (orphaned, held) and the replay. Once they have all
	// run, count.
	waitSettled(t, d, 8)
	if n := runsOf(held); n != 1 {
		t.Errorf("held job's /run received %d times, want 1", n)
	}
	if n := runsOf(ringHeld); n != 1 {
		t.Errorf("ring's job: /run received %d times, want 1", n)
	}
	if n := runsOf(orphaned); n != 1 {
		t.Errorf("orphaned claim's job: /run received %d times, want 1", n)
	}
	if ls := result(exhausted); len(ls) != 1 || ls[0].TriggerCode != xjob.CodeSuccess || ls[0].HandleCode != xjob.CodeSuccess {
		t.Errorf("exhausted job: /v1/logs %+v after the replay, want one log, taken over, triggered and handled", ls)
	}
	if n := runsOf(exhausted); n != 1 {
		t.Errorf("exhausted job: /run received %d times after its replay, want 1", n)
	}
}

// dispatchErrInFlight is dispatch.ErrInFlight's text, as the dispatch
// function logs it.
const dispatchErrInFlight = "occurrence is being dispatched elsewhere"

// waitSettled waits until the Invoke API has accepted at least n
// asynchronous invocations and every one of them has settled: the
// redeliveries the ring function handed back to the lane have run.
func waitSettled(t *testing.T, d *awsstack.Deployment, n int64) {
	t.Helper()
	end := time.Now().Add(60 * time.Second)
	for time.Now().Before(end) {
		if acc := d.AsyncInvocations(); acc >= n && d.AsyncSettled() == acc {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("asynchronous invocations: %d accepted, %d settled; want %d, all settled", d.AsyncInvocations(), d.AsyncSettled(), n)
}
