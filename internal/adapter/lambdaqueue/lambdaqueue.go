// Package lambdaqueue carries xjob's dispatch lanes (the fast and slow
// lanes of driver.Queues) on asynchronous Lambda invocations of the
// dispatch function instead of SQS queues: a Send is one Invoke with
// InvocationType Event per chunk of tasks, and nothing polls. An idle
// deployment then pays nothing for its lanes (an SQS event source mapping
// bills its pollers' long polls whether or not a task comes), and under
// load the lanes' SQS send, receive and delete requests are gone.
//
// Mapping of the driver.Queue contract:
//
//   - Send of tasks due now (VisibleAt ≤ now): Invoke, InvocationType
//     Event, payload an Event (the lane and its tasks), chunked under
//     MaxPayload. Lambda queues the event; a failed invocation is retried
//     by Lambda (the templates' EventInvokeConfig: two retries) and then
//     goes to the function's on-failure destination, a dead-letter queue
//     with an alarm. An event may be delivered more than once: the
//     dispatcher's occurrence claims make a second delivery a no-op.
//   - Send of tasks due later (a retry's delay): Lambda has no
//     per-event delay, so they go to Defer, the ring queue in the Lambda
//     wiring (SQS's per-message delay), as Deferred messages; the ring
//     function hands each back to Send when it arrives.
//   - Receive, Ack, Retry: ErrSendOnly. Nobody receives from these lanes:
//     Lambda delivers their events to the dispatch function.
package lambdaqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

var _ driver.Queue[fire.DispatchTask] = (*Queue)(nil)

// API is the part of the Lambda client the lanes call; *lambda.Client
// implements it.
type API interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// MaxPayload bounds one event's encoded size: Lambda's limit for an
// asynchronous invocation's payload is 256 KB (and 1 MB where raised);
// the margin keeps the envelope and a chunk's last task under it.
const MaxPayload = 240 << 10

// ErrSendOnly is the error of Receive, Ack and Retry: a lane carried by
// asynchronous invocations is delivered by Lambda, never received from.
var ErrSendOnly = errors.New("lambdaqueue: a lane on asynchronous invocations is send-only")

// Event is the dispatch function's asynchronous invocation payload: tasks
// of one lane, due now. Receives counts the deliveries of these tasks so
// far (0 for a first send; a deferred retry carries its count on), the
// SQS receive count's stand-in for the dispatcher's backoff.
type Event struct {
	Lane     fire.Lane           `json:"lane"`
	Tasks    []fire.DispatchTask `json:"tasks"`
	Receives int                 `json:"receives,omitempty"`
}

// Deferred is one task due later, on its way through the ring queue: the
// ring function gives it back to the lane's Send when it arrives (again
// deferred when SQS's 15-minute delay cap made it arrive early).
type Deferred struct {
	V         int               `json:"v"`
	Lane      fire.Lane         `json:"lane"`
	Task      fire.DispatchTask `json:"deferredTask"`
	VisibleAt int64             `json:"visibleAt"`
	Receives  int               `json:"receives,omitempty"`
}

// IsDeferred says whether a ring queue message body is a Deferred task
// rather than a ring bucket.
func IsDeferred(body []byte) bool {
	var probe struct {
		Task json.RawMessage `json:"deferredTask"`
	}
	return json.Unmarshal(body, &probe) == nil && probe.Task != nil
}

// Queue is one lane on asynchronous invocations of function Function.
type Queue struct {
	api      API
	function string
	lane     fire.Lane
	clk      clock.Clock
	deferTo  driver.Queue[Deferred]
	receives int
}

// New returns lane's queue: due tasks invoke function (name or ARN),
// later ones go to deferTo (nil: a send of a later task fails).
func New(api API, function string, lane fire.Lane, deferTo driver.Queue[Deferred], clk clock.Clock) *Queue {
	return &Queue{api: api, function: function, lane: lane, deferTo: deferTo, clk: fallback.Clock(clk)}
}

// WithReceives returns a copy of q whose sends carry receives (a retry of
// tasks already delivered that many times).
func (q *Queue) WithReceives(receives int) *Queue {
	c := *q
	c.receives = receives
	return &c
}

// Send invokes the function with the due tasks, in chunks under
// MaxPayload, and defers the others.
func (q *Queue) Send(ctx context.Context, msgs []driver.Outgoing[fire.DispatchTask]) error {
	if q.function == "" {
		return errors.New("lambdaqueue: no dispatch function configured")
	}
	now := q.clk.Now().UnixMilli()
	var due []fire.DispatchTask
	var later []driver.Outgoing[Deferred]
	for _, m := range msgs {
		if m.VisibleAt > now {
			later = append(later, driver.Outgoing[Deferred]{
				Msg:       Deferred{V: fire.RingVersion, Lane: q.lane, Task: m.Msg, VisibleAt: m.VisibleAt, Receives: q.receives},
				VisibleAt: m.VisibleAt})
			continue
		}
		due = append(due, m.Msg)
	}
	if len(later) > 0 {
		if q.deferTo == nil {
			return fmt.Errorf("lambdaqueue %s lane: %d tasks due later and no queue to defer them to", q.lane, len(later))
		}
		if err := q.deferTo.Send(ctx, later); err != nil {
			return fmt.Errorf("lambdaqueue %s lane: defer: %w", q.lane, err)
		}
	}
	chunks, err := Chunk(Event{Lane: q.lane, Receives: q.receives}, due, MaxPayload)
	if err != nil {
		return err
	}
	for _, payload := range chunks {
		out, err := q.api.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(q.function),
			InvocationType: types.InvocationTypeEvent, Payload: payload})
		if err != nil {
			return fmt.Errorf("lambdaqueue %s lane: invoke %s: %w", q.lane, q.function, err)
		}
		if out.StatusCode != http.StatusAccepted {
			return fmt.Errorf("lambdaqueue %s lane: invoke %s: status %d, want 202", q.lane, q.function, out.StatusCode)
		}
	}
	return nil
}

// Chunk encodes tasks as Events like head, each at most limit bytes
// encoded; a task that alone exceeds it is an error.
func Chunk(head Event, tasks []fire.DispatchTask, limit int) ([][]byte, error) {
	var out [][]byte
	envelope, err := json.Marshal(Event{Lane: head.Lane, Tasks: []fire.DispatchTask{}, Receives: head.Receives})
	if err != nil {
		return nil, fmt.Errorf("lambdaqueue: encode event: %w", err)
	}
	size := len(envelope)
	var cur []fire.DispatchTask
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		b, err := json.Marshal(Event{Lane: head.Lane, Tasks: cur, Receives: head.Receives})
		if err != nil {
			return fmt.Errorf("lambdaqueue: encode event: %w", err)
		}
		out, cur, size = append(out, b), nil, len(envelope)
		return nil
	}
	for _, t := range tasks {
		b, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("lambdaqueue: encode task: %w", err)
		}
		if len(envelope)+len(b) > limit {
			return nil, fmt.Errorf("lambdaqueue: task %s is %d bytes, over an event's %d", t.Occurrence.ID(0), len(b), limit)
		}
		if size+len(b)+1 > limit {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		cur, size = append(cur, t), size+len(b)+1
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// Receive fails: see ErrSendOnly.
func (q *Queue) Receive(context.Context, driver.ReceiveParams) ([]driver.Delivery[fire.DispatchTask], error) {
	return nil, ErrSendOnly
}

// Ack fails: see ErrSendOnly.
func (q *Queue) Ack(context.Context, []string) error { return ErrSendOnly }

// Retry fails: see ErrSendOnly.
func (q *Queue) Retry(context.Context, string, time.Duration) error { return ErrSendOnly }
