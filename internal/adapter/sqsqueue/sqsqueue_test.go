package sqsqueue_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqsqueue"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/driver/drivertest"
)

func TestMain(m *testing.M) { emulator.Main(m) }

// newQueueURL creates a fresh queue on the shared fauxqs server.
func newQueueURL(t *testing.T, c *sqs.Client) string {
	t.Helper()
	out, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(emulator.UniqueName("q"))})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	return aws.ToString(out.QueueUrl)
}

// TestQueueContract runs the queue suite on fauxqs, on real time: Advance
// sleeps, and the suite's subtests run in parallel, so it takes about as
// long as its slowest subtest (~8 s).
func TestQueueContract(t *testing.T) {
	t.Parallel()
	drivertest.ExerciseQueue(t, func(t *testing.T) drivertest.QueueHarness {
		c := emulator.SQS(t)
		q := sqsqueue.NewQueue[fire.RingBucket](c, newQueueURL(t, c), clock.Real{})
		return drivertest.QueueHarness{Queue: q, Now: time.Now, Advance: time.Sleep}
	})
}

func TestDispatchLanesAreSeparate(t *testing.T) {
	t.Parallel()
	c := emulator.SQS(t)
	qs := sqsqueue.New(c, sqsqueue.URLs{Ring: newQueueURL(t, c), DispatchFast: newQueueURL(t, c), DispatchSlow: newQueueURL(t, c)}, nil)
	ctx := t.Context()
	task := fire.DispatchTask{Occurrence: fire.Occurrence{JobID: 3, Type: xjob.TriggerCron, FireTime: 42}, Revision: 2}
	if err := qs.Dispatch(fire.LaneSlow).Send(ctx, []driver.Outgoing[fire.DispatchTask]{{Msg: task}}); err != nil {
		t.Fatal(err)
	}
	got, err := qs.Dispatch(fire.LaneFast).Receive(ctx, driver.ReceiveParams{Max: 10})
	if err != nil || len(got) != 0 {
		t.Fatalf("fast lane: %v %v", got, err)
	}
	got, err = qs.Dispatch(fire.LaneSlow).Receive(ctx, driver.ReceiveParams{Max: 10, Wait: 5 * time.Second})
	if err != nil || len(got) != 1 || got[0].Msg.Occurrence != task.Occurrence || got[0].Msg.Revision != 2 {
		t.Fatalf("slow lane: %+v %v", got, err)
	}
	if err := qs.Dispatch("other").Send(ctx, []driver.Outgoing[fire.DispatchTask]{{Msg: task}}); err == nil {
		t.Fatal("send on a lane without a queue URL succeeded")
	}
}

// TestSendBatchesOfTen sends more than one batch and reads every message back.
func TestSendBatchesOfTen(t *testing.T) {
	t.Parallel()
	c := emulator.SQS(t)
	q := sqsqueue.NewQueue[fire.RingBucket](c, newQueueURL(t, c), nil)
	ctx := t.Context()
	var out []driver.Outgoing[fire.RingBucket]
	for i := range 23 {
		out = append(out, driver.Outgoing[fire.RingBucket]{Msg: fire.RingBucket{Shard: 1, Second: int64(i)}})
	}
	if err := q.Send(ctx, out); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for len(seen) < len(out) && time.Now().Before(deadline) {
		ds, err := q.Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Minute, Wait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			seen[d.Msg.Second] = true
		}
	}
	if len(seen) != len(out) {
		t.Fatalf("received %d distinct messages of %d", len(seen), len(out))
	}
}

func TestDelaySeconds(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_000_000)
	cases := []struct {
		name      string
		visibleAt int64
		want      int32
	}{
		{"zero", 0, 0},
		{"past", now.UnixMilli() - 5000, 0},
		{"now", now.UnixMilli(), 0},
		{"1 ms rounds up", now.UnixMilli() + 1, 1},
		{"exact second", now.UnixMilli() + 3000, 3},
		{"3.001 s", now.UnixMilli() + 3001, 4},
		{"capped at 900", now.UnixMilli() + 3_600_000, 900},
	}
	for _, c := range cases {
		if got := sqsqueue.DelaySeconds(c.visibleAt, now); got != c.want {
			t.Errorf("%s: DelaySeconds = %d, want %d", c.name, got, c.want)
		}
	}
}

// Ring buckets go on the wire with their format version; a body without
// one (written before buckets carried it) is received as version 1, and
// a newer one is not delivered but left in the queue, to come back after
// its visibility timeout (and reach the dead-letter queue), while the
// messages received with it are delivered.
func TestRingVersionOnTheWire(t *testing.T) {
	t.Parallel()
	c := emulator.SQS(t)
	ctx := t.Context()
	url := newQueueURL(t, c)
	q := sqsqueue.NewQueue[fire.RingBucket](c, url, nil)
	if err := q.Send(ctx, []driver.Outgoing[fire.RingBucket]{{Msg: fire.RingBucket{Shard: 1, Second: 7}}}); err != nil {
		t.Fatal(err)
	}
	raw, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, WaitTimeSeconds: 1})
	if err != nil || len(raw.Messages) != 1 || !strings.HasPrefix(aws.ToString(raw.Messages[0].Body), `{"v":1,`) {
		t.Fatalf("sent bucket on the wire: %+v, %v; want a body starting with \"v\":1", raw.Messages, err)
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: raw.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}

	send := func(body string) {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	receive := func() ([]driver.Delivery[fire.RingBucket], error) {
		return q.Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Second, Wait: 2 * time.Second})
	}
	send(`{"shard":2,"second":8,"items":[{"j":1,"t":8000,"r":1}]}`)
	var ds []driver.Delivery[fire.RingBucket]
	for deadline := time.Now().Add(10 * time.Second); len(ds) == 0 && time.Now().Before(deadline); {
		if ds, err = receive(); err != nil {
			t.Fatal(err)
		}
	}
	if len(ds) != 1 || ds[0].Msg.Second != 8 || len(ds[0].Msg.Items) != 1 {
		t.Fatalf("unversioned bucket received as %+v", ds)
	}
	if err := q.Ack(ctx, []string{ds[0].Token}); err != nil {
		t.Fatal(err)
	}

	// A newer version's bucket is neither delivered nor deleted, and does
	// not hold back a bucket received with it.
	send(`{"v":2,"shard":3,"second":9}`)
	send(`{"v":1,"shard":4,"second":10,"items":[]}`)
	var got []driver.Delivery[fire.RingBucket]
	for deadline := time.Now().Add(10 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
		if got, err = receive(); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 1 || got[0].Msg.Shard != 4 {
		t.Fatalf("received %+v, want only the version 1 bucket", got)
	}
	if err := q.Ack(ctx, []string{got[0].Token}); err != nil {
		t.Fatal(err)
	}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, v := range attrs.Attributes {
		n, _ := strconv.Atoi(v)
		kept += n
	}
	if kept != 1 {
		t.Fatalf("%d messages left in the queue, want the version 2 bucket kept", kept)
	}
}

func TestDelayBy(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_000_000)
	cases := []struct {
		name      string
		visibleAt int64
		want      int32
	}{
		{"zero", 0, 0},
		{"past", now.UnixMilli() - 5000, 0},
		{"within the second", now.UnixMilli() + 999, 0},
		{"exact second", now.UnixMilli() + 3000, 3},
		{"3.999 s rounds down", now.UnixMilli() + 3999, 3},
		{"capped at 900", now.UnixMilli() + 3_600_000, 900},
	}
	for _, c := range cases {
		if got := sqsqueue.DelayBy(c.visibleAt, now); got != c.want {
			t.Errorf("%s: DelayBy = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestAlignWait: after the wait, a message sent with DelayBy's delay is
// visible at most the window before its deadline, and never after it.
func TestAlignWait(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_000_000)
	const window = 100 * time.Millisecond
	cases := []struct {
		name  string
		ahead int64 // visibleAt − now, ms
		want  time.Duration
	}{
		{"due now", 0, 0},
		{"past", -300, 0},
		{"in phase", 5_050, 0},
		{"in phase, edge", 5_099, 0},
		{"just out of phase", 5_100, time.Millisecond},
		{"out of phase", 5_700, 601 * time.Millisecond},
		{"within the second, out of phase", 700, 601 * time.Millisecond},
		{"whole seconds", 5_000, 0},
		{"beyond the 900 s cap", 1_000_500, 0},
	}
	for _, c := range cases {
		v := now.UnixMilli() + c.ahead
		got := sqsqueue.AlignWait(v, now, window)
		if got != c.want {
			t.Errorf("%s: AlignWait = %s, want %s", c.name, got, c.want)
		}
		if c.ahead <= 0 || c.ahead > 900_000 {
			continue
		}
		sent := now.Add(got)
		visible := sent.UnixMilli() + int64(sqsqueue.DelayBy(v, sent))*1000
		if visible > v || visible <= v-window.Milliseconds() {
			t.Errorf("%s: visible at deadline%+d ms, want within (-%d, 0]", c.name, visible-v, window.Milliseconds())
		}
	}
}

// TestPacedSendWaitsForPhase: a paced queue holds a batch until the clock's
// phase lets its bucket arrive within the window before its deadline, and
// sends at once (never late, only early) when that wait would pass MaxWait.
func TestPacedSendWaitsForPhase(t *testing.T) {
	t.Parallel()
	c := emulator.SQS(t)
	ctx := t.Context()
	start := time.UnixMilli(1_700_000_000_000)
	delayed := func(url string) string {
		out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)]
	}
	bucket := []driver.Outgoing[fire.RingBucket]{{Msg: fire.RingBucket{Shard: 1, Second: 1}, VisibleAt: start.UnixMilli() + 5_700}}

	t.Run("waits for the phase", func(t *testing.T) {
		clk := clock.NewFake(start)
		url := newQueueURL(t, c)
		qs := sqsqueue.New(c, sqsqueue.URLs{Ring: url}, clk)
		qs.PaceRing(sqsqueue.Pacing{Window: 100 * time.Millisecond, MaxWait: time.Second})
		done := make(chan error, 1)
		go func() { done <- qs.Ring().Send(ctx, bucket) }()
		if err := clk.WaitForSleepers(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if n := delayed(url); n != "0" {
			t.Fatalf("%s messages sent before the phase, want 0", n)
		}
		clk.Advance(601 * time.Millisecond)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := delayed(url); n != "1" {
			t.Fatalf("%s delayed messages after the send, want 1", n)
		}
	})
	t.Run("past MaxWait it sends at once", func(t *testing.T) {
		clk := clock.NewFake(start)
		url := newQueueURL(t, c)
		qs := sqsqueue.New(c, sqsqueue.URLs{Ring: url}, clk)
		qs.PaceRing(sqsqueue.Pacing{Window: 100 * time.Millisecond, MaxWait: 500 * time.Millisecond})
		if err := qs.Ring().Send(ctx, bucket); err != nil { // a fake clock never moves: a wait would block
			t.Fatal(err)
		}
		if n := delayed(url); n != "1" {
			t.Fatalf("%s delayed messages, want 1", n)
		}
	})
}
