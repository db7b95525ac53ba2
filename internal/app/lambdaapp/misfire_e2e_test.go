package lambdaapp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

// After a stop, a FIRE_ONCE_NOW job's missed buckets reach the ring late
// and at once, each in its own Lambda environment: between them they run
// the job once, as a MISFIRE trigger. A DO_NOTHING job's are skipped.
func TestRingFiresOnceNowOnceAcrossEnvironments(t *testing.T) {
	e := setupEnv(t)
	f := newRingFixture(t, e, 2)
	ctx := context.Background()
	once, nothing := f.jobs[0], f.jobs[1]
	once.MisfireStrategy = xjob.MisfireFireOnceNow
	once, err := e.store.JobUpdate(ctx, driver.JobUpdateParams{Job: once, ExpectVersion: once.Version})
	if err != nil {
		t.Fatal(err)
	}
	// Eight seconds of fires that passed 30 s ago, one bucket each.
	first := time.Now().Add(-30 * time.Second).Truncate(time.Second)
	const buckets = 8
	done := make(chan error, buckets)
	for i := range buckets {
		at := first.Add(time.Duration(i) * time.Second)
		body, _ := json.Marshal(fire.RingBucket{Second: at.Unix(), Items: []fire.RingItem{
			{JobID: once.ID, FireTime: at.UnixMilli(), Revision: once.Revision},
			{JobID: nothing.ID, FireTime: at.UnixMilli(), Revision: nothing.Revision},
		}})
		m := events.SQSMessage{MessageId: fmt.Sprint("late-", i), Body: string(body),
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}, EventSource: "aws:sqs"}
		app := e.app("ring", fmt.Sprint("ring-env-", i%4))
		go func() {
			resp, err := invoke(e, "ring", 30*time.Second, app.Ring, events.SQSEvent{Records: []events.SQSMessage{m}})
			if err == nil && len(resp.BatchItemFailures) != 0 {
				err = fmt.Errorf("bucket not acknowledged: %+v", resp)
			}
			done <- err
		}()
	}
	for range buckets {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	runs := f.runsOf()
	if len(runs) != 1 {
		t.Fatalf("executor ran %v, want one run of the FIRE_ONCE_NOW job", runs)
	}
	for id, n := range runs {
		l, err := e.store.LogGet(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 || l.JobID != once.ID || l.TriggerType != xjob.TriggerMisfire {
			t.Fatalf("run %d ×%d: job %d, %s; want job %d once, MISFIRE", id, n, l.JobID, l.TriggerType, once.ID)
		}
	}
}

// After a stop longer than the fires the scan had pushed ahead, a
// FIRE_ONCE_NOW job's missed fires reach the functions by two roads: its
// pushed buckets arrive late at the ring, and the scan function finds the
// job's own next fire time missed and sends a MISFIRE to dispatch. Between
// them they run the job once, whichever road comes first (job a: the ring;
// job b: the scan). A DO_NOTHING job runs nothing.
func TestScanAndRingFireOnceNowOnceAfterLongStop(t *testing.T) {
	e := setupEnv(t)
	f := newRingFixture(t, e, 3)
	ctx := context.Background()
	first := time.Now().Add(-30 * time.Second).Truncate(time.Second)
	for i, m := range []xjob.MisfireStrategy{xjob.MisfireFireOnceNow, xjob.MisfireFireOnceNow, xjob.MisfireDoNothing} {
		j := f.jobs[i]
		// Running, its fires planned through first+7 s: its next fire is missed too.
		j.MisfireStrategy, j.TriggerStatus, j.TriggerNextTime = m, xjob.StatusRunning, first.Add(8*time.Second).UnixMilli()
		j, err := e.store.JobUpdate(ctx, driver.JobUpdateParams{Job: j, ExpectVersion: j.Version})
		if err != nil {
			t.Fatal(err)
		}
		f.jobs[i] = j
	}
	a, b, nothing := f.jobs[0], f.jobs[1], f.jobs[2]
	late := func(jobs ...xjob.Job) {
		t.Helper()
		for i := range int64(8) {
			at := first.Add(time.Duration(i) * time.Second)
			bk := fire.RingBucket{Second: at.Unix()}
			for _, j := range jobs {
				bk.Items = append(bk.Items, fire.RingItem{JobID: j.ID, FireTime: at.UnixMilli(), Revision: j.Revision})
			}
			body, _ := json.Marshal(bk)
			m := events.SQSMessage{MessageId: fmt.Sprint("late-", jobs[0].ID, "-", i), Body: string(body),
				Attributes: map[string]string{"ApproximateReceiveCount": "1"}, EventSource: "aws:sqs"}
			resp, err := invoke(e, "ring", 30*time.Second, e.app("ring", fmt.Sprint("ring-env-", i%2)).Ring,
				events.SQSEvent{Records: []events.SQSMessage{m}})
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("ring invocation: %+v, %v", resp, err)
			}
		}
	}
	late(a, nothing)
	scan := func(ctx context.Context, ev events.EventBridgeEvent) (struct{}, error) {
		return struct{}{}, e.app("scan", "scan").Scan(ctx, ev)
	}
	if _, err := invoke(e, "scan", 20*time.Second, scan, scheduledEvent()); err != nil {
		t.Fatalf("scan invocation: %v", err)
	}
	late(b)
	// The scan's MISFIRE tasks, through the dispatch function.
	for _, url := range []string{e.vars[awsconfig.EnvDispatchFastURL], e.vars[awsconfig.EnvDispatchSlowURL]} {
		out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ev events.SQSEvent
		for _, m := range out.Messages {
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: *m.MessageId, Body: *m.Body,
				Attributes: map[string]string{"ApproximateReceiveCount": "1"}, EventSource: "aws:sqs"})
		}
		if len(ev.Records) == 0 {
			continue
		}
		if resp, err := invoke(e, "dispatch", 30*time.Second, e.app("dispatch", "dispatch").DispatchSQS, ev); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("dispatch invocation: %+v, %v", resp, err)
		}
	}
	perJob := map[int64]int{}
	for id, n := range f.runsOf() {
		l, err := e.store.LogGet(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if l.TriggerType != xjob.TriggerMisfire {
			t.Errorf("run of log %d: job %d %s, want MISFIRE runs only", id, l.JobID, l.TriggerType)
		}
		perJob[l.JobID] += n
	}
	if perJob[a.ID] != 1 || perJob[b.ID] != 1 || perJob[nothing.ID] != 0 {
		t.Fatalf("runs per job %v, want jobs %d and %d once, job %d (DO_NOTHING) never", perJob, a.ID, b.ID, nothing.ID)
	}
}
