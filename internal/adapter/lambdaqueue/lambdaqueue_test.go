package lambdaqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/lambdaqueue"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

func task(job int64, ref string) fire.DispatchTask {
	return fire.DispatchTask{Occurrence: fire.Occurrence{JobID: job, Type: xjob.TriggerCron, Ref: ref}}
}

// TestChunk: every chunk is under the limit, in order, and holds every
// task once; a task that alone exceeds it is refused.
func TestChunk(t *testing.T) {
	t.Parallel()
	big := task(1, strings.Repeat("r", 600))
	for _, tc := range []struct {
		name    string
		tasks   []fire.DispatchTask
		limit   int
		chunks  int
		wantErr bool
	}{
		{"none", nil, 1000, 0, false},
		{"one", []fire.DispatchTask{task(1, "a")}, 1000, 1, false},
		{"split", []fire.DispatchTask{big, big, big}, 1000, 3, false},
		{"pairs", []fire.DispatchTask{big, big, big, big}, 2000, 2, false},
		{"too big", []fire.DispatchTask{big}, 500, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := lambdaqueue.Chunk(lambdaqueue.Event{Lane: fire.LaneSlow, Receives: 2}, tc.tasks, tc.limit)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if len(out) != tc.chunks {
				t.Fatalf("%d chunks, want %d", len(out), tc.chunks)
			}
			n := 0
			for _, b := range out {
				if len(b) > tc.limit {
					t.Errorf("chunk of %d bytes over %d", len(b), tc.limit)
				}
				var ev lambdaqueue.Event
				if err := json.Unmarshal(b, &ev); err != nil || ev.Lane != fire.LaneSlow || ev.Receives != 2 {
					t.Errorf("chunk %s: %+v %v", b, ev, err)
				}
				n += len(ev.Tasks)
			}
			if !tc.wantErr && n != len(tc.tasks) {
				t.Errorf("%d tasks in chunks, want %d", n, len(tc.tasks))
			}
		})
	}
}

// recorder records Invoke calls (the Lambda client's seam; the Invoke API
// itself is the emulated deployment's, tested in package awsstack).
type recorder struct {
	mu     sync.Mutex
	events []lambdaqueue.Event
	status int32
}

func (r *recorder) Invoke(_ context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	if in.InvocationType != types.InvocationTypeEvent {
		return nil, errors.New("not an Event invocation")
	}
	var ev lambdaqueue.Event
	if err := json.Unmarshal(in.Payload, &ev); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return &lambda.InvokeOutput{StatusCode: r.status}, nil
}

// deferQueue records what is deferred.
type deferQueue struct {
	driver.Queue[lambdaqueue.Deferred]
	sent []driver.Outgoing[lambdaqueue.Deferred]
}

func (d *deferQueue) Send(_ context.Context, msgs []driver.Outgoing[lambdaqueue.Deferred]) error {
	d.sent = append(d.sent, msgs...)
	return nil
}

// TestSendSplitsDueAndLater: due tasks are one Event invocation, later
// ones are deferred with their VisibleAt and the sender's receive count;
// a non-202 answer is an error; Receive, Ack and Retry refuse.
func TestSendSplitsDueAndLater(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	api := &recorder{status: 202}
	later := &deferQueue{}
	q := lambdaqueue.New(api, "xjob-dispatch", fire.LaneFast, later, clk).WithReceives(3)
	now := clk.Now().UnixMilli()
	err := q.Send(context.Background(), []driver.Outgoing[fire.DispatchTask]{
		{Msg: task(1, "a")}, {Msg: task(2, "b"), VisibleAt: now}, {Msg: task(3, "c"), VisibleAt: now + 5000}})
	if err != nil {
		t.Fatal(err)
	}
	if len(api.events) != 1 || len(api.events[0].Tasks) != 2 || api.events[0].Lane != fire.LaneFast || api.events[0].Receives != 3 {
		t.Errorf("invocations %+v, want one fast-lane event of the 2 due tasks", api.events)
	}
	if len(later.sent) != 1 || later.sent[0].VisibleAt != now+5000 || later.sent[0].Msg.Task.Occurrence.JobID != 3 ||
		later.sent[0].Msg.Receives != 3 || later.sent[0].Msg.Lane != fire.LaneFast {
		t.Errorf("deferred %+v, want job 3 at +5 s", later.sent)
	}
	body, _ := json.Marshal(later.sent[0].Msg)
	if !lambdaqueue.IsDeferred(body) || lambdaqueue.IsDeferred([]byte(`{"v":1,"shard":0,"second":5,"items":[]}`)) {
		t.Errorf("IsDeferred does not tell a deferred task %s from a ring bucket", body)
	}
	api.status = 500
	if err := q.Send(context.Background(), []driver.Outgoing[fire.DispatchTask]{{Msg: task(4, "d")}}); err == nil {
		t.Error("a non-202 invocation answer was not an error")
	}
	if _, err := q.Receive(context.Background(), driver.ReceiveParams{Max: 1}); !errors.Is(err, lambdaqueue.ErrSendOnly) {
		t.Errorf("Receive: %v", err)
	}
	if err := q.Ack(context.Background(), nil); !errors.Is(err, lambdaqueue.ErrSendOnly) {
		t.Errorf("Ack: %v", err)
	}
	noDefer := lambdaqueue.New(api, "xjob-dispatch", fire.LaneSlow, nil, clk)
	if err := noDefer.Send(context.Background(), []driver.Outgoing[fire.DispatchTask]{{Msg: task(5, "e"), VisibleAt: now + 1}}); err == nil {
		t.Error("a later task without a defer queue was accepted")
	}
}
