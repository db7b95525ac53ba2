// Package sqsqueue implements xjob's durable queues (driver.Queues: the ring
// and the fast and slow dispatch lanes) on Amazon SQS standard queues, one
// queue each, with JSON message bodies.
//
// Mapping of the driver.Queue contract onto SQS:
//
//   - Send: SendMessageBatch, 10 entries per request, each with its own
//     DelaySeconds = ceil((VisibleAt − now) / 1 s), capped at SQS's 900 s.
//     Rounding up means a message never becomes visible early. A bucket
//     due more than 15 minutes out is not sent yet by the scan.
//   - A paced queue (Queues.PaceRing: the ring) reads VisibleAt as a
//     deadline instead: DelaySeconds = floor((VisibleAt − now) / 1 s), so
//     a bucket is never visible after it, and Send waits (within
//     Pacing.MaxWait per call) for the millisecond phase of the clock at
//     which that floor loses less than Pacing.Window, so the bucket
//     arrives a chosen lead before its second rather than anywhere in the
//     second before it: the ring's consumer, which completes the wait to
//     the exact millisecond in process, is then billed for that lead and
//     not for up to a second.
//   - Receive: ReceiveMessage with MaxNumberOfMessages (≤ 10),
//     VisibilityTimeout and WaitTimeSeconds (long poll, ≤ 20 s), rounded up
//     to whole seconds. Token is the receipt handle; Receives is SQS's
//     ApproximateReceiveCount (approximate on AWS, exact on one consumer).
//   - Ack: DeleteMessageBatch, 10 per request. A handle whose message is
//     already gone is not an error (ReceiptHandleIsInvalid is ignored).
//   - Retry: ChangeMessageVisibility to the delay, so the message returns
//     (with its receive count grown) without being re-sent.
//
// Queue URLs come from configuration (Lambda environment); this package
// never creates queues. Redrive to a dead-letter queue is queue
// configuration too (infra), driven by ApproximateReceiveCount.
package sqsqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

var _ driver.Queues = (*Queues)(nil)

// API is the part of the SQS client the queues call; *sqs.Client
// implements it (an interface so callers can wrap it, e.g. to count
// requests).
type API interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// SQS limits the adapter works within.
const (
	MaxBatch       = 10               // entries per SendMessageBatch / DeleteMessageBatch / ReceiveMessage
	MaxDelay       = 15 * time.Minute // DelaySeconds ceiling
	MaxWait        = 20 * time.Second // WaitTimeSeconds ceiling
	MaxVisibility  = 12 * time.Hour   // VisibilityTimeout ceiling
	sendAttempts   = 3                // tries of entries SQS failed within a batch
	sendRetryPause = 50 * time.Millisecond
)

// URLs are the queue URLs, from configuration.
type URLs struct {
	Ring, DispatchFast, DispatchSlow string
}

// Queues are the ring and dispatch lanes on SQS.
type Queues struct {
	ring       *Queue[fire.RingBucket]
	fast, slow driver.Queue[fire.DispatchTask]
	clk        clock.Clock
	api        API
}

// New returns the queues at urls. clk is what VisibleAt is measured
// against (nil: the real clock).
func New(api API, urls URLs, clk clock.Clock) *Queues {
	clk = fallback.Clock(clk)
	return &Queues{api: api, clk: clk,
		ring: NewQueue[fire.RingBucket](api, urls.Ring, clk),
		fast: NewQueue[fire.DispatchTask](api, urls.DispatchFast, clk),
		slow: NewQueue[fire.DispatchTask](api, urls.DispatchSlow, clk)}
}

// Ring returns the ring queue.
func (q *Queues) Ring() driver.Queue[fire.RingBucket] { return q.ring }

// Dispatch returns one lane's queue; an unknown lane gets a queue whose
// every call fails (there is no queue URL for it).
func (q *Queues) Dispatch(lane fire.Lane) driver.Queue[fire.DispatchTask] {
	switch lane {
	case fire.LaneFast:
		return q.fast
	case fire.LaneSlow:
		return q.slow
	}
	return NewQueue[fire.DispatchTask](q.api, "", q.clk)
}

// SetLanes carries the dispatch lanes on fast and slow instead of SQS
// queues (the Lambda wiring's asynchronous invocations of the dispatch
// function, package lambdaqueue); the ring stays on SQS.
func (q *Queues) SetLanes(fast, slow driver.Queue[fire.DispatchTask]) { q.fast, q.slow = fast, slow }

// PaceRing makes the ring queue's sends paced by p (see Pacing).
func (q *Queues) PaceRing(p Pacing) { q.ring.pace = &p }

// Pacing is how a queue whose messages must arrive just before their
// VisibleAt (the ring's buckets) lives with SQS's whole-second delays.
// VisibleAt is a deadline: every message is visible by then (the delay is
// rounded down), and Send, before each batch, waits for the millisecond
// phase at which a message is visible at most Window before it. The
// phase is that of the batch's first delayed message; the ring's buckets
// all share it (their VisibleAt is a second minus the scan's lead). A
// batch that would need more than what remains of MaxWait in this call
// is sent at once, its messages visible up to a second before VisibleAt:
// as early as an unpaced bucket, never late.
type Pacing struct {
	Window  time.Duration
	MaxWait time.Duration
}

// Queue is one SQS queue of JSON-encoded T. It implements driver.Queue[T].
type Queue[T any] struct {
	api  API
	url  string
	clk  clock.Clock
	pace *Pacing // nil: VisibleAt is a lower bound (DelaySeconds)
}

// NewQueue returns the queue at url carrying T.
func NewQueue[T any](api API, url string, clk clock.Clock) *Queue[T] {
	clk = fallback.Clock(clk)
	return &Queue[T]{api: api, url: url, clk: clk}
}

func (q *Queue[T]) check() error {
	if q.url == "" {
		return errors.New("no queue URL configured")
	}
	return nil
}

// DelaySeconds is the SQS delay that makes a message sent at now visible
// no earlier than visibleAt (Unix ms): rounded up, 0 for the past, capped
// at 900.
func DelaySeconds(visibleAt int64, now time.Time) int32 {
	ms := visibleAt - now.UnixMilli()
	if ms <= 0 {
		return 0
	}
	return int32(min((ms+999)/1000, int64(MaxDelay/time.Second)))
}

// DelayBy is the SQS delay that makes a message sent at now visible no
// later than visibleAt (Unix ms): rounded down, 0 for the past, capped at
// 900.
func DelayBy(visibleAt int64, now time.Time) int32 {
	ms := visibleAt - now.UnixMilli()
	if ms <= 0 {
		return 0
	}
	return int32(min(ms/1000, int64(MaxDelay/time.Second)))
}

// AlignWait is how long to wait from now before sending a message due
// visible by visibleAt (with DelayBy's delay) so that it becomes visible
// at most window before visibleAt: 0 when now is such a phase already
// (or the message is due now), otherwise the wait to the start of the
// next such phase, which leaves the most of it to the batches after.
func AlignWait(visibleAt int64, now time.Time, window time.Duration) time.Duration {
	ms := visibleAt - now.UnixMilli()
	w := window.Milliseconds()
	if ms <= 0 || w >= 1000 {
		return 0
	}
	if ms > MaxDelay.Milliseconds() {
		return 0 // capped: no phase helps
	}
	r := ms % 1000 // what the rounding down would lose
	if r < w {
		return 0
	}
	return time.Duration(r-w+1) * time.Millisecond
}

// ceilSeconds rounds d up to whole seconds within [0, limit].
func ceilSeconds(d, limit time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	d = min(d, limit)
	return int32((d + time.Second - 1) / time.Second)
}

// Send enqueues msgs in batches of 10, each with its own delay; entries
// SQS reports as failed are re-sent (with their delays recomputed) a few
// times before Send gives up.
func (q *Queue[T]) Send(ctx context.Context, msgs []driver.Outgoing[T]) error {
	if len(msgs) == 0 {
		return nil
	}
	if err := q.check(); err != nil {
		return fmt.Errorf("sqs send: %w", err)
	}
	bodies := make([]string, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m.Msg)
		if err != nil {
			return fmt.Errorf("sqs send: encode: %w", err)
		}
		bodies[i] = string(b)
	}
	var waited time.Duration // pacing's waits in this call
	for start := 0; start < len(msgs); start += MaxBatch {
		pending := make([]int, 0, MaxBatch)
		for i := start; i < min(start+MaxBatch, len(msgs)); i++ {
			pending = append(pending, i)
		}
		for attempt := 1; len(pending) > 0; attempt++ {
			now := q.clk.Now()
			delay := DelaySeconds
			if q.pace != nil {
				delay = DelayBy
				if w := q.align(msgs, pending, now); w > 0 && waited+w <= q.pace.MaxWait {
					if err := q.clk.SleepUntil(ctx, now.Add(w)); err != nil {
						return fmt.Errorf("sqs send: %w", err)
					}
					waited += w
					now = q.clk.Now()
				}
			}
			entries := make([]types.SendMessageBatchRequestEntry, len(pending))
			for k, i := range pending {
				entries[k] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)),
					MessageBody: aws.String(bodies[i]), DelaySeconds: delay(msgs[i].VisibleAt, now)}
			}
			out, err := q.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &q.url, Entries: entries})
			if err != nil {
				return fmt.Errorf("sqs send: %w", err)
			}
			if len(out.Failed) == 0 {
				break
			}
			if attempt == sendAttempts {
				f := out.Failed[0]
				return fmt.Errorf("sqs send: %d of %d messages failed, first: %s %s", len(out.Failed), len(entries),
					aws.ToString(f.Code), aws.ToString(f.Message))
			}
			pending = pending[:0]
			for _, f := range out.Failed {
				i, _ := strconv.Atoi(aws.ToString(f.Id))
				pending = append(pending, i)
			}
			if err := pause(ctx, sendRetryPause*time.Duration(attempt)); err != nil {
				return fmt.Errorf("sqs send: %w", err)
			}
		}
	}
	return nil
}

// align is the pacing wait of a batch (pending indexes msgs): that of its
// first message still ahead of now.
func (q *Queue[T]) align(msgs []driver.Outgoing[T], pending []int, now time.Time) time.Duration {
	for _, i := range pending {
		if msgs[i].VisibleAt > now.UnixMilli() {
			return AlignWait(msgs[i].VisibleAt, now, q.pace.Window)
		}
	}
	return 0
}

func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Receive returns up to Max (at most 10) messages, hiding them for
// Visibility (the queue's default when 0); with Wait > 0 it long-polls up
// to that long (at most 20 s). A body that does not decode is returned as
// an error, with the message left to its visibility timeout and, after
// maxReceiveCount, the dead-letter queue.
func (q *Queue[T]) Receive(ctx context.Context, p driver.ReceiveParams) ([]driver.Delivery[T], error) {
	if err := q.check(); err != nil {
		return nil, fmt.Errorf("sqs receive: %w", err)
	}
	in := &sqs.ReceiveMessageInput{
		QueueUrl:                    &q.url,
		MaxNumberOfMessages:         int32(min(max(p.Max, 1), MaxBatch)),
		WaitTimeSeconds:             ceilSeconds(p.Wait, MaxWait),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
	}
	if p.Visibility > 0 {
		in.VisibilityTimeout = ceilSeconds(p.Visibility, MaxVisibility)
	}
	out, err := q.api.ReceiveMessage(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("sqs receive: %w", err)
	}
	ds := make([]driver.Delivery[T], 0, len(out.Messages))
	for _, m := range out.Messages {
		var d driver.Delivery[T]
		if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &d.Msg); err != nil {
			// A newer version's message (fire.VersionError) or a corrupt
			// one: not delivered, not deleted. It comes back after the
			// visibility timeout and, past the queue's receive limit, waits
			// in its dead-letter queue (whose alarm says so); the messages
			// received with it go on.
			continue
		}
		d.Token = aws.ToString(m.ReceiptHandle)
		d.Receives, _ = strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
		ds = append(ds, d)
	}
	return ds, nil
}

// Ack deletes delivered messages, 10 per DeleteMessageBatch. A receipt
// handle of a message already deleted is not an error.
func (q *Queue[T]) Ack(ctx context.Context, tokens []string) error {
	if len(tokens) == 0 {
		return nil
	}
	if err := q.check(); err != nil {
		return fmt.Errorf("sqs ack: %w", err)
	}
	for start := 0; start < len(tokens); start += MaxBatch {
		chunk := tokens[start:min(start+MaxBatch, len(tokens))]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for i, tok := range chunk {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(tok)}
		}
		out, err := q.api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &q.url, Entries: entries})
		if err != nil {
			return fmt.Errorf("sqs ack: %w", err)
		}
		for _, f := range out.Failed {
			if !strings.Contains(aws.ToString(f.Code), "ReceiptHandleIsInvalid") {
				return fmt.Errorf("sqs ack: %s %s", aws.ToString(f.Code), aws.ToString(f.Message))
			}
		}
	}
	return nil
}

// Retry makes a delivered message visible again after delay (rounded up
// to whole seconds) by changing its visibility timeout.
func (q *Queue[T]) Retry(ctx context.Context, token string, delay time.Duration) error {
	if err := q.check(); err != nil {
		return fmt.Errorf("sqs retry: %w", err)
	}
	_, err := q.api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &q.url,
		ReceiptHandle: aws.String(token), VisibilityTimeout: ceilSeconds(delay, MaxVisibility)})
	if err != nil {
		return fmt.Errorf("sqs retry: %w", err)
	}
	return nil
}
