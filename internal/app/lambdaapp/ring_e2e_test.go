package lambdaapp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
)

// ringFixture is a deployment with a manual group on a recording
// executor and stopped jobs (stopped so that nothing but the test's own
// buckets fires them: the ring and dispatch check the revision, not the
// status).
type ringFixture struct {
	e    *env
	rec  *recorder
	jobs []xjob.Job
}

func newRingFixture(t *testing.T, e *env, jobs int) *ringFixture {
	t.Helper()
	ctx := context.Background()
	gw := e.apiGateway() // the executor's callbacks and heartbeats
	rec := newExecutor(t, gw.URL)
	g, err := e.store.GroupInsert(ctx, xjob.Group{AppName: appName, Title: "ring", AddressType: xjob.AddressManual,
		AddressList: []string{rec.srv.URL + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	f := &ringFixture{e: e, rec: rec}
	for i := range jobs {
		j := xjob.Job{GroupID: g.ID, Description: fmt.Sprint("ring ", i), Author: "t", ScheduleType: xjob.ScheduleFixRate,
			ScheduleConf: "3600", Handler: "ok", TriggerStatus: xjob.StatusStopped}
		j.ApplyDefaults()
		j, err := e.store.JobInsert(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		f.jobs = append(f.jobs, j)
	}
	return f
}

// bucket is the ring message the scan would send for the jobs' fires at
// at (same millisecond for all).
func (f *ringFixture) bucket(at time.Time) events.SQSMessage {
	b := fire.RingBucket{Second: at.Unix()}
	for _, j := range f.jobs {
		b.Items = append(b.Items, fire.RingItem{JobID: j.ID, FireTime: at.UnixMilli(), Revision: j.Revision})
	}
	body, _ := json.Marshal(b)
	return events.SQSMessage{MessageId: "bucket-" + fmt.Sprint(at.UnixMilli()), Body: string(body),
		Attributes: map[string]string{"ApproximateReceiveCount": "1"}, EventSource: "aws:sqs"}
}

// fire invokes the ring function on the bucket, as its event source
// mapping would, and requires it to be acknowledged.
func (f *ringFixture) fire(t *testing.T, m events.SQSMessage) {
	t.Helper()
	resp, err := invoke(f.e, "ring", 30*time.Second, f.e.app("ring", "ring").Ring, events.SQSEvent{Records: []events.SQSMessage{m}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("ring invocation: %+v, %v; want the bucket acknowledged", resp, err)
	}
}

// runsOf returns the executor's /run count per log id.
func (f *ringFixture) runsOf() map[int64]int {
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	out := map[int64]int{}
	for id, n := range f.rec.runs {
		out[id] = n
	}
	return out
}

// queueDepth is the fast queue's visible, in-flight and delayed messages.
func (e *env) queueDepth(t *testing.T, url string) int {
	t.Helper()
	out, err := e.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		t.Fatalf("queue attributes: %v", err)
	}
	n := 0
	for _, v := range out.Attributes {
		var k int
		if _, err := fmt.Sscan(v, &k); err != nil {
			t.Fatalf("queue attribute %q: %v", v, err)
		}
		n += k
	}
	return n
}

// The ring function dispatches its bucket's fast lane itself: every fire
// of the instant reaches the executor once, through one dispatch batch in
// the ring invocation, and nothing is sent to the fast queue (no dispatch
// function runs at all).
func TestRingDispatchesFastLaneInProcess(t *testing.T) {
	e := setupEnv(t)
	f := newRingFixture(t, e, 5)
	before := e.meter.Snapshot()
	at := time.Now().Add(time.Second).Truncate(time.Second).Add(300 * time.Millisecond)
	f.fire(t, f.bucket(at))
	if late := time.Since(at); late < 0 {
		t.Fatalf("ring returned %s before the instant", -late)
	}

	for _, j := range f.jobs {
		logs := e.logs(t, j.ID)
		if len(logs) != 1 || logs[0].TriggerCode != 200 || logs[0].ScheduledTime != at.UnixMilli() || logs[0].TriggerType != xjob.TriggerCron {
			t.Errorf("job %d: logs %+v, want one cron trigger at %d with code 200", j.ID, logs, at.UnixMilli())
		}
	}
	runs := f.runsOf()
	if len(runs) != len(f.jobs) {
		t.Errorf("executor ran %d logs, want %d: %v", len(runs), len(f.jobs), runs)
	}
	for id, n := range runs {
		if n != 1 {
			t.Errorf("log %d reached the executor %d times", id, n)
		}
	}
	used := e.meter.Snapshot().Sub(before)
	for _, op := range []string{"sqs:SendMessage", "sqs:SendMessageBatch"} {
		if n := used.Ops["ring"][op].Requests; n != 0 {
			t.Errorf("ring sent %d %s requests, want none (the fast lane is dispatched in process)", n, op)
		}
	}
	if n := used.Invokes["dispatch"].Invocations; n != 0 {
		t.Errorf("dispatch function invoked %d times, want 0", n)
	}
	// The group is the ring's one GetItem, eventually consistent: half a
	// read unit (dynamostore.DB.GroupGetEventual).
	if st := used.Ops["ring"]["dynamodb:GetItem"]; st.Requests != 1 || st.Reported+st.Derived > 0.5 {
		t.Errorf("ring GetItem: %d requests, %.1f read units; want the group's one eventually consistent read, 0.5 units", st.Requests, st.Reported+st.Derived)
	}
	if n := e.queueDepth(t, e.vars[awsconfig.EnvDispatchFastURL]); n != 0 {
		t.Errorf("fast queue holds %d messages, want 0", n)
	}
	// A repeat of the bucket (SQS at-least-once) triggers nothing again.
	f.fire(t, f.bucket(at))
	if again := f.runsOf(); len(again) != len(runs) || slices.ContainsFunc(slices.Collect(maps.Values(again)), func(n int) bool { return n != 1 }) {
		t.Errorf("after the bucket's repeat the executor ran %v, want each log once", again)
	}
}

// A fire the ring cannot finish (its claim is held by another dispatcher,
// ErrInFlight) is not lost with the acknowledged bucket: the ring sends it
// to the fast queue with the claim TTL as delay, and the dispatch function
// fires it once the claim has expired, exactly once even though the fast
// queue delivers it again.
func TestRingSpillsWhatItCannotFinish(t *testing.T) {
	e := setupEnv(t)
	e.claimTTL = 2 * time.Second
	f := newRingFixture(t, e, 3)
	ctx := context.Background()
	at := time.Now().Add(time.Second).Truncate(time.Second).Add(300 * time.Millisecond)
	held := f.jobs[1]
	occ := fire.Occurrence{JobID: held.ID, Type: xjob.TriggerCron, FireTime: at.UnixMilli()}
	// Another dispatcher claimed the occurrence and has not triggered it:
	// its claim outlives the ring's dispatch.
	heldLog, err := e.store.LogCreate(ctx, xjob.Log{OccurrenceID: occ.ID(0), JobID: held.ID, GroupID: held.GroupID,
		TriggerType: xjob.TriggerCron, ScheduledTime: at.UnixMilli(), TriggerTime: at.UnixMilli(),
		ClaimUntil: at.Add(3 * time.Second).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}

	before := e.meter.Snapshot()
	f.fire(t, f.bucket(at))
	runs := f.runsOf()
	if len(runs) != 2 || runs[heldLog.ID] != 0 {
		t.Fatalf("executor ran %v right after the ring, want the 2 free fires and not the held one (log %d)", runs, heldLog.ID)
	}
	used := e.meter.Snapshot().Sub(before)
	if n := used.Ops["ring"]["sqs:SendMessageBatch"].Entries + used.Ops["ring"]["sqs:SendMessage"].Entries; n != 1 {
		t.Errorf("ring sent %d messages, want 1 (the held fire, to the fast queue)", n)
	}
	if n := e.queueDepth(t, e.vars[awsconfig.EnvDispatchFastURL]); n != 1 {
		t.Errorf("fast queue holds %d messages, want the held fire", n)
	}

	// The dispatch function consumes the fast queue; its event source
	// mapping delivers the first task it handled once more.
	pollCtx, stop := context.WithCancel(ctx)
	var polls sync.WaitGroup
	var (
		mu   sync.Mutex
		seen []fire.DispatchTask
	)
	fastESM := &esm{e: e, fn: "dispatch", url: e.vars[awsconfig.EnvDispatchFastURL], redeliverOnce: true,
		handle: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			for _, r := range ev.Records {
				var task fire.DispatchTask
				if json.Unmarshal([]byte(r.Body), &task) == nil {
					mu.Lock()
					seen = append(seen, task)
					mu.Unlock()
				}
			}
			return e.app("dispatch", "dispatch").DispatchSQS(ctx, ev)
		}}
	fastESM.run(pollCtx, &polls)
	defer func() { stop(); polls.Wait() }()

	eventually(t, 20*time.Second, "the held fire triggered by the dispatch function", func() bool {
		l, err := e.store.LogGet(ctx, heldLog.ID)
		return err == nil && l.TriggerCode == 200 && l.HandleCode == 200
	})
	eventually(t, 15*time.Second, "the fast queue's injected redelivery", func() bool {
		fastESM.mu.Lock()
		defer fastESM.mu.Unlock()
		return fastESM.redelivered > 0
	})
	stop()
	polls.Wait()
	mu.Lock()
	for _, task := range seen {
		if task.Occurrence != occ {
			t.Errorf("fast queue carried %+v, want only the held occurrence %+v", task.Occurrence, occ)
		}
	}
	mu.Unlock()
	runs = f.runsOf()
	if len(runs) != 3 {
		t.Errorf("executor ran %v, want 3 logs", runs)
	}
	for id, n := range runs {
		if n != 1 {
			t.Errorf("log %d reached the executor %d times, want once", id, n)
		}
	}
	if logs := e.logs(t, held.ID); len(logs) != 1 || logs[0].ID != heldLog.ID {
		t.Errorf("held job's logs %+v, want only log %d", logs, heldLog.ID)
	}
}

// A bucket whose hand-off fails (here: its jobs cannot be read) is a
// batch item failure, and the ring function sets its return itself
// (receives × the retry step) instead of leaving it to the queue's
// visibility timeout, which must cover the in-process dispatch.
func TestRingRetriesFailedBucket(t *testing.T) {
	e := setupEnv(t)
	ctx := context.Background()
	ringURL := e.vars[awsconfig.EnvRingQueueURL]
	body, _ := json.Marshal(fire.RingBucket{Second: time.Now().Unix(), Items: []fire.RingItem{{JobID: 1, FireTime: time.Now().UnixMilli(), Revision: 1}}})
	if _, err := e.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(ringURL), MessageBody: aws.String(string(body))}); err != nil {
		t.Fatal(err)
	}
	receive := func(wait int32) []sqstypes.Message {
		out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(ringURL), WaitTimeSeconds: wait,
			VisibilityTimeout: 60, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	ms := receive(2)
	if len(ms) != 1 {
		t.Fatalf("received %d bucket messages, want 1", len(ms))
	}
	m := ms[0]
	// A ring function whose tables do not exist: every bucket fails.
	e.vars[awsconfig.EnvTablePrefix] = emulator.UniqueName("missing") + "-"
	broken := e.app("ring", "ring-broken")
	resp, err := invoke(e, "ring", 30*time.Second, broken.Ring, events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: *m.MessageId, ReceiptHandle: *m.ReceiptHandle, Body: *m.Body, Attributes: m.Attributes, EventSource: "aws:sqs"}}})
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != *m.MessageId {
		t.Fatalf("ring invocation: %+v, %v; want the bucket as a batch item failure", resp, err)
	}
	// Received with a 60 s visibility, it comes back after the ring's 1 s
	// retry step (the test's RingRetry).
	start := time.Now()
	var again []sqstypes.Message
	for time.Since(start) < 10*time.Second && len(again) == 0 {
		again = receive(1)
	}
	if len(again) != 1 || *again[0].MessageId != *m.MessageId {
		t.Fatalf("bucket not back within 10 s of a failed hand-off (got %d messages)", len(again))
	}
	if n := again[0].Attributes["ApproximateReceiveCount"]; n != "2" {
		t.Errorf("receive count %s, want 2", n)
	}
}

// The records of one second that arrive in one event (the scan's buckets
// of several shards, the admin's per-job pushes) are fired as one bucket:
// one re-check of their jobs and one dispatch batch, whose reads (the
// group, its addresses) are shared and which takes the jobs the ring read.
func TestRingMergesRecordsOfOneSecond(t *testing.T) {
	e := setupEnv(t)
	f := newRingFixture(t, e, 4)
	at := time.Now().Add(time.Second).Truncate(time.Second).Add(300 * time.Millisecond)
	var records []events.SQSMessage
	for i, j := range f.jobs {
		body, _ := json.Marshal(fire.RingBucket{Shard: i % 2, Second: at.Unix(),
			Items: []fire.RingItem{{JobID: j.ID, FireTime: at.UnixMilli(), Revision: j.Revision}}})
		records = append(records, events.SQSMessage{MessageId: fmt.Sprint("push-", i), Body: string(body),
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}, EventSource: "aws:sqs"})
	}
	before := e.meter.Snapshot()
	resp, err := invoke(e, "ring", 30*time.Second, e.app("ring", "ring").Ring, events.SQSEvent{Records: records})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("ring invocation: %+v, %v; want every record acknowledged", resp, err)
	}
	if runs := f.runsOf(); len(runs) != len(f.jobs) {
		t.Errorf("executor ran %v, want %d logs", runs, len(f.jobs))
	}
	// JobGetMany is the only BatchGetItem of a ring bucket: the ring's
	// re-check, once for the second, not once per record; the dispatch
	// batch takes the jobs it read (LoadKnown) rather than reading them
	// again.
	if n := e.meter.Snapshot().Sub(before).Ops["ring"]["dynamodb:BatchGetItem"].Requests; n != 1 {
		t.Errorf("ring read jobs with %d BatchGetItem requests, want 1 (the %d records fired as one bucket, jobs read once)", n, len(records))
	}
}

// Ring messages carry their format version. A bucket written before
// messages had one (no "v", as the previous release wrote them while they
// wait out their delay across an upgrade) fires like a current one; a
// bucket of a newer format (a rollback, a staggered deploy) is neither
// fired nor acknowledged: it is a batch item failure, so it stays in the
// queue, and the dead-letter queue after it, for the code that reads it.
func TestRingReadsEveryRingVersion(t *testing.T) {
	e := setupEnv(t)
	f := newRingFixture(t, e, 4)
	at := time.Now().Add(time.Second).Truncate(time.Second).Add(300 * time.Millisecond)
	item := func(j xjob.Job) string {
		return fmt.Sprintf(`{"j":%d,"t":%d,"r":%d}`, j.ID, at.UnixMilli(), j.Revision)
	}
	bodies := map[string]string{
		"unversioned": fmt.Sprintf(`{"shard":0,"second":%d,"items":[%s,%s]}`, at.Unix(), item(f.jobs[0]), item(f.jobs[1])),
		"v1":          fmt.Sprintf(`{"v":1,"shard":1,"second":%d,"items":[%s]}`, at.Unix(), item(f.jobs[2])),
		"v2":          fmt.Sprintf(`{"v":2,"shard":2,"second":%d,"items":[%s]}`, at.Unix(), item(f.jobs[3])),
	}
	var records []events.SQSMessage
	for id, body := range bodies {
		records = append(records, events.SQSMessage{MessageId: id, Body: body,
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}, EventSource: "aws:sqs"})
	}
	resp, err := invoke(e, "ring", 30*time.Second, e.app("ring", "ring").Ring, events.SQSEvent{Records: records})
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "v2" {
		t.Fatalf("ring invocation: %+v, %v; want only the v2 bucket as a batch item failure", resp, err)
	}
	for i, j := range f.jobs {
		want := 1
		if i == 3 {
			want = 0
		}
		if logs := e.logs(t, j.ID); len(logs) != want {
			t.Errorf("job %d: %d trigger logs, want %d", i, len(logs), want)
		}
	}
	runs := f.runsOf()
	if len(runs) != 3 || slices.ContainsFunc(slices.Collect(maps.Values(runs)), func(n int) bool { return n != 1 }) {
		t.Errorf("executor ran %v, want three logs once each", runs)
	}
}

// Dispatch lane messages carry their format version as ring messages do:
// a task written before tasks had one (no "v") and a version 1 task are
// triggered; a task of a newer format is neither triggered nor
// acknowledged (a batch item failure, so it stays in the queue for the
// code that reads it); a record that is no task at all is dropped.
func TestDispatchReadsEveryTaskVersion(t *testing.T) {
	e := setupEnv(t)
	f := newRingFixture(t, e, 3)
	now := time.Now().UnixMilli()
	task := func(j xjob.Job, v string) string {
		return fmt.Sprintf(`{%s"occurrence":{"jobId":%d,"triggerType":"CRON","fireTime":%d},"revision":%d,"enqueuedAt":%d}`,
			v, j.ID, now, j.Revision, now)
	}
	bodies := map[string]string{
		"unversioned": task(f.jobs[0], ""),
		"v1":          task(f.jobs[1], `"v":1,`),
		"v2":          task(f.jobs[2], `"v":2,`),
		"malformed":   `{"occurrence":"not a task"}`,
	}
	var records []events.SQSMessage
	for id, body := range bodies {
		records = append(records, events.SQSMessage{MessageId: id, Body: body, EventSourceARN: e.arns[e.vars[awsconfig.EnvDispatchFastURL]],
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}, EventSource: "aws:sqs"})
	}
	resp, err := invoke(e, "dispatch", 30*time.Second, e.app("dispatch", "dispatch").DispatchSQS, events.SQSEvent{Records: records})
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "v2" {
		t.Fatalf("dispatch invocation: %+v, %v; want only the v2 task as a batch item failure", resp, err)
	}
	for i, j := range f.jobs {
		want := 1
		if i == 2 {
			want = 0
		}
		if logs := e.logs(t, j.ID); len(logs) != want {
			t.Errorf("job %d: %d trigger logs, want %d", i, len(logs), want)
		}
	}
}
