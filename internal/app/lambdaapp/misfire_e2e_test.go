package lambdaapp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/driver"
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
		body, _ := json.Marshal(xjob.RingBucket{Second: at.Unix(), Items: []xjob.RingItem{
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
