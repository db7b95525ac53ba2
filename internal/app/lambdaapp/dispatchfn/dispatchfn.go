// Package dispatchfn is the dispatch Lambda function: it triggers the
// tasks of the fast and slow lanes (an asynchronous lane event of package
// lambdaqueue, or an SQS event of the lane queues: one
// Dispatcher.DispatchMany, then Dispose per task) and manual triggers
// invoked directly ({"jobId","executorParam","addressList"}).
package dispatchfn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/adapter/httptarget"
	"github.com/xjobdev/xjob/internal/adapter/lambdaqueue"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/pipeline"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/targets"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/dispatch"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/internal/scheduler/route"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Concurrency bounds the executor calls one dispatch invocation makes at
// once; the executor client's keep-alive pool is sized to match.
const Concurrency = 32

// NewDispatcher builds the dispatcher of the dispatch function (lane queues,
// manual triggers) and of the ring function (its buckets' fast lane):
// executors called through exec, HTTP and AWS jobs run by the built-in
// executor builtin (package targets), as in local mode. With
// eventualGroupReads (the ring's) it reads groups eventually consistent, half
// the read units of a strongly consistent read on every invocation; the
// dispatch function's dispatcher, which also serves the admin's manual
// triggers, reads them strongly consistent, so that a trigger right after
// a group edit goes where the edit says.
func NewDispatcher(b *wiring.Base, exec *execclient.Client, builtin *httptarget.Executor, reg *registry.Service, cb *callback.Service, eventualGroupReads bool) (*dispatch.Dispatcher, error) {
	executors := httptarget.Executors{Remote: exec, Local: builtin}
	store := b.Counted
	if eventualGroupReads {
		store = eventualGroups{Store: b.Counted, db: b.Store}
	}
	d, err := dispatch.New(dispatch.Config{
		Store: store, Executors: executors, Targets: builtin, Router: route.New(route.Options{Clock: b.Clock, Prober: executors}),
		Addresses: reg, Completer: cb, Clock: b.Clock, Logger: b.Log, Metrics: b.Metrics,
		AdminAddress: "xjob-lambda", AnyTriggerAddress: b.Config.AnyTriggerAddress,
		BatchConcurrency: Concurrency, ClaimTTL: b.Deps.ClaimTTL,
		// The ring's fast-lane tasks carry their ring message's id
		// (ringfn), on DynamoDB, which keeps it with the claim.
		ProvisionalClaims: true,
	})
	if err != nil {
		return nil, fmt.Errorf("lambda %s: dispatch: %w", b.Config.Function, err)
	}
	return d, nil
}

// eventualGroups is the ring dispatcher's store: its group reads, one per
// group per ring invocation, are eventually consistent
// (dynamostore.DB.GroupGetEventual: half the read units); everything else
// goes to Store.
type eventualGroups struct {
	driver.Store
	db *dynamostore.DB
}

// GroupGet reads the group eventually consistent (a missing one strongly).
func (s eventualGroups) GroupGet(ctx context.Context, id int64) (xjob.Group, error) {
	return s.db.GroupGetEventual(ctx, id)
}

// Function is the dispatch function.
type Function struct {
	b          *wiring.Base
	dispatcher *dispatch.Dispatcher
	targets    *targets.Executor    // HTTP and AWS jobs' calls, drained at each invocation's end
	lanes      map[string]fire.Lane // SQS queue name → dispatch lane
	callback   *callback.Service
	results    string // the results queue's name ("": none)
}

// New builds the dispatch function on b.
func New(b *wiring.Base) (*Function, error) {
	cb, err := pipeline.Callback(b)
	if err != nil {
		return nil, err
	}
	reg, err := pipeline.Registry(b)
	if err != nil {
		return nil, err
	}
	// The pool keeps one connection per concurrent executor call of an
	// invocation, so a warm function reuses them all.
	exec, err := pipeline.Executors(b, Concurrency)
	if err != nil {
		return nil, err
	}
	tg, err := targets.New(b, cb, Concurrency)
	if err != nil {
		return nil, err
	}
	d, err := NewDispatcher(b, exec, tg.Executor, reg, cb, false)
	if err != nil {
		return nil, err
	}
	f := &Function{b: b, dispatcher: d, targets: tg, lanes: map[string]fire.Lane{}, callback: cb}
	if url := b.Config.ResultsQueueURL; url != "" {
		f.results = wiring.QueueName(url)
	}
	for url, lane := range map[string]fire.Lane{b.Config.DispatchFastURL: fire.LaneFast, b.Config.DispatchSlowURL: fire.LaneSlow} {
		if url != "" {
			f.lanes[wiring.QueueName(url)] = lane
		}
	}
	return f, nil
}

// Build is New as a wiring.Builder: the dispatch main's whole wiring.
func Build(b *wiring.Base) (any, error) {
	f, err := New(b)
	if err != nil {
		return nil, err
	}
	return f.Handle, nil
}

// ManualTrigger is the direct invocation payload of the dispatch function,
// the shape of xxl-job's trigger API:
//
//	aws lambda invoke --function-name <stack>-dispatch \
//	  --cli-binary-format raw-in-base64-out \
//	  --payload '{"jobId":1,"executorParam":"x","addressList":["http://10.0.0.5:9999/"]}' out.json
//
// addressList may also be one comma-separated string, as xxl-job sends it.
type ManualTrigger struct {
	JobID         int64           `json:"jobId"`
	ExecutorParam *string         `json:"executorParam,omitempty"`
	AddressList   json.RawMessage `json:"addressList,omitempty"`
}

// ManualResult is the dispatch function's reply to a direct invocation.
type ManualResult struct {
	JobID        int64   `json:"jobId"`
	OccurrenceID string  `json:"occurrenceId"`
	LogIDs       []int64 `json:"logIds"`
	TriggerCodes []int   `json:"triggerCodes"`
	Duplicates   int     `json:"duplicates,omitempty"`
	Dropped      bool    `json:"dropped,omitempty"`
	Reason       string  `json:"reason,omitempty"`
}

// Handle is the dispatch function's handler. An SQS event (either lane)
// dispatches each task and reports the ones to retry as batch item
// failures, after setting their delay (Dispose's RetryAfter) with
// ChangeMessageVisibility. Any other payload must be a ManualTrigger: it
// is dispatched synchronously and answered with a ManualResult. The
// occurrence's ref is the invocation's request id, so Lambda's own retry
// of an asynchronous invocation (same request id) triggers the job once.
func (f *Function) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	defer f.b.FlushReports(ctx)
	var probe struct {
		Records []json.RawMessage `json:"Records"`
		JobID   json.RawMessage   `json:"jobId"`
		Tasks   json.RawMessage   `json:"tasks"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("dispatch: payload is not a JSON object: %w", err)
	}
	switch {
	case probe.Records != nil:
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("dispatch: SQS event: %w", err)
		}
		return f.HandleSQS(ctx, ev)
	case probe.Tasks != nil:
		var ev lambdaqueue.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("dispatch: lane event: %w", err)
		}
		return nil, f.HandleLane(ctx, ev)
	case probe.JobID != nil:
		var m ManualTrigger
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("dispatch: manual trigger payload: %w", err)
		}
		return f.Manual(ctx, m)
	default:
		return nil, errors.New(`dispatch: unrecognised payload: want an SQS event or {"jobId":…,"executorParam":…,"addressList":[…]}`)
	}
}

// DispatchSQS handles one SQS batch of dispatch tasks from either lane as
// one DispatchMany (the batch's jobs, groups and addresses read once), and
// reports each record whose task must be retried as a batch item failure.
func (f *Function) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	defer f.b.FlushReports(ctx)
	defer f.targets.Drain(ctx)
	if len(ev.Records) > 0 && f.results != "" && wiring.QueueName(ev.Records[0].EventSourceARN) == f.results {
		return f.HandleResults(ctx, ev)
	}
	tasks := make([]fire.DispatchTask, 0, len(ev.Records))
	records := make([]events.SQSMessage, 0, len(ev.Records))
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, r := range ev.Records {
		var task fire.DispatchTask
		if err := json.Unmarshal([]byte(r.Body), &task); err != nil {
			if f.b.KeepUnread(ctx, "dispatch: task", r, err) {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
			continue
		}
		tasks, records = append(tasks, task), append(records, r)
	}
	if len(tasks) == 0 {
		return resp, nil
	}
	outs, errs := f.dispatcher.DispatchMany(ctx, tasks)
	for i, r := range records {
		task, out, err := tasks[i], outs[i], errs[i]
		receives := wiring.ReceiveCount(r)
		d := f.dispatcher.Dispose(err, receives)
		if d.Ack {
			if err != nil {
				f.b.Log.WarnContext(ctx, "dispatch: task dropped", "occurrence", task.Occurrence.ID(0), "err", err)
			} else if out.Dropped {
				f.b.Log.InfoContext(ctx, "dispatch: task no longer applies", "occurrence", task.Occurrence.ID(0), "reason", out.Reason)
			} else if out.Duplicates > 0 {
				f.b.Log.InfoContext(ctx, "dispatch: task already triggered", "occurrence", task.Occurrence.ID(0))
			}
			continue
		}
		f.b.Log.WarnContext(ctx, "dispatch: task will be retried", "occurrence", task.Occurrence.ID(0),
			"retryAfter", d.RetryAfter, "receives", receives, "err", err)
		if lane, ok := f.lanes[wiring.QueueName(r.EventSourceARN)]; ok && d.RetryAfter > 0 {
			if rerr := f.b.Queues.Dispatch(lane).Retry(ctx, r.ReceiptHandle, d.RetryAfter); rerr != nil {
				f.b.Log.WarnContext(ctx, "dispatch: retry delay not set; the visibility timeout applies", "err", rerr)
			}
		}
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
	}
	return resp, nil
}

// MaxLaneReceives bounds the deliveries of a task of a lane event that
// keeps failing for a reason a retry may change: past it the event fails,
// Lambda retries it (its own two retries) and then sends it to the
// dispatch function's on-failure destination, the dead-letter queue, as
// SQS's redrive did after the lanes' maxReceiveCount.
const MaxLaneReceives = 5

// HandleLane dispatches one asynchronous lane event (package lambdaqueue)
// as one DispatchMany. A task to retry goes back to its lane with its
// delay (Dispose's RetryAfter): through the ring queue, which keeps the
// delay, and with its delivery count grown. The event fails (and Lambda
// retries it whole) only when that hand-back fails or a task has been
// delivered MaxLaneReceives times; the tasks of it that were triggered
// are then no-ops by their occurrence claims.
func (f *Function) HandleLane(ctx context.Context, ev lambdaqueue.Event) error {
	defer f.b.FlushReports(ctx)
	defer f.targets.Drain(ctx)
	if ev.Lane != fire.LaneFast && ev.Lane != fire.LaneSlow {
		return fmt.Errorf("dispatch: lane event of unknown lane %q", ev.Lane)
	}
	valid := make([]fire.DispatchTask, 0, len(ev.Tasks))
	for _, t := range ev.Tasks {
		if err := t.Validate(); err != nil {
			f.b.Log.WarnContext(ctx, "dispatch: invalid task dropped", "err", err)
			continue
		}
		valid = append(valid, t)
	}
	if len(valid) == 0 {
		return nil
	}
	receives := ev.Receives + 1
	outs, errs := f.dispatcher.DispatchMany(ctx, valid)
	var again []driver.Outgoing[fire.DispatchTask]
	var exhausted int
	for i, task := range valid {
		out, err := outs[i], errs[i]
		d := f.dispatcher.Dispose(err, receives)
		if d.Ack {
			if err != nil {
				f.b.Log.WarnContext(ctx, "dispatch: task dropped", "occurrence", task.Occurrence.ID(0), "err", err)
			} else if out.Dropped {
				f.b.Log.InfoContext(ctx, "dispatch: task no longer applies", "occurrence", task.Occurrence.ID(0), "reason", out.Reason)
			} else if out.Duplicates > 0 {
				f.b.Log.InfoContext(ctx, "dispatch: task already triggered", "occurrence", task.Occurrence.ID(0))
			}
			continue
		}
		if receives >= MaxLaneReceives {
			f.b.Log.ErrorContext(ctx, "dispatch: task failed on every delivery", "occurrence", task.Occurrence.ID(0), "receives", receives, "err", err)
			exhausted++
			continue
		}
		f.b.Log.WarnContext(ctx, "dispatch: task will be retried", "occurrence", task.Occurrence.ID(0),
			"retryAfter", d.RetryAfter, "receives", receives, "err", err)
		again = append(again, driver.Outgoing[fire.DispatchTask]{Msg: task, VisibleAt: f.b.Clock.Now().Add(d.RetryAfter).UnixMilli()})
	}
	if len(again) > 0 {
		lane := f.b.Lanes[ev.Lane]
		if lane == nil {
			return fmt.Errorf("dispatch: %d tasks to retry and no lanes on asynchronous invocations", len(again))
		}
		if err := lane.WithReceives(receives).Send(context.WithoutCancel(ctx), again); err != nil {
			return fmt.Errorf("dispatch: retry %d tasks: %w", len(again), err)
		}
	}
	if exhausted > 0 {
		return fmt.Errorf("dispatch: %d tasks failed %d deliveries", exhausted, receives)
	}
	return nil
}

// DispatchManual triggers one job now, as the admin's "trigger once" does,
// and waits for the executor's reply to /run.
func (f *Function) Manual(ctx context.Context, m ManualTrigger) (ManualResult, error) {
	defer f.b.FlushReports(ctx)
	defer f.targets.Drain(ctx)
	addrs, err := parseAddressList(m.AddressList)
	if err != nil {
		return ManualResult{}, err
	}
	ref := ""
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		ref = lc.AwsRequestID
	}
	if ref == "" {
		ref = wiring.RandomHex(16)
	}
	task := fire.DispatchTask{
		Occurrence:  fire.Occurrence{JobID: m.JobID, Type: xjob.TriggerManual, Ref: ref},
		Param:       m.ExecutorParam,
		AddressList: addrs,
		EnqueuedAt:  f.b.Clock.Now().UnixMilli(),
	}
	if err := task.Validate(); err != nil {
		return ManualResult{}, fmt.Errorf("dispatch: manual trigger: %w", err)
	}
	out, err := f.dispatcher.Dispatch(ctx, task)
	if err != nil {
		return ManualResult{}, fmt.Errorf("dispatch: manual trigger job %d: %w", m.JobID, err)
	}
	res := ManualResult{JobID: m.JobID, OccurrenceID: task.Occurrence.ID(0), LogIDs: []int64{}, TriggerCodes: []int{},
		Duplicates: out.Duplicates, Dropped: out.Dropped, Reason: out.Reason}
	for _, l := range out.Logs {
		res.LogIDs = append(res.LogIDs, l.ID)
		res.TriggerCodes = append(res.TriggerCodes, l.TriggerCode)
	}
	return res, nil
}

// parseAddressList accepts a JSON array of addresses or one
// comma-separated string (xxl-job's form).
func parseAddressList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, errors.New(`dispatch: manual trigger: addressList must be an array of addresses or a comma-separated string`)
	}
	for _, addr := range bytes.Split([]byte(s), []byte(",")) {
		if addr = bytes.TrimSpace(addr); len(addr) > 0 {
			list = append(list, string(addr))
		}
	}
	return list, nil
}

// HandleResults applies one SQS batch of the results queue (executor
// results the callback function recorded, one record per request or part
// of one) with one callback.Service.Apply: each log page the batch names
// is read and written once, whatever the executors' request sizes. A
// record with an item that failed for a reason a retry can change is a
// batch item failure and comes back; verdicts (not found, repeat) are
// logged and acknowledged. A malformed record is dropped.
func (f *Function) HandleResults(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	defer f.b.FlushReports(ctx)
	recs := make([]callback.Recorded, 0, len(ev.Records))
	ids := make([]string, 0, len(ev.Records))
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, r := range ev.Records {
		var rec callback.Recorded
		if err := json.Unmarshal([]byte(r.Body), &rec); err != nil {
			if f.b.KeepUnread(ctx, "results: record", r, err) {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
			continue
		}
		recs, ids = append(recs, rec), append(ids, r.MessageId)
	}
	for i, again := range f.callback.Apply(ctx, recs) {
		if again {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ids[i]})
		}
	}
	if n := len(resp.BatchItemFailures); n > 0 {
		f.b.Log.WarnContext(ctx, "results: records will be applied again", "records", n, "of", len(recs))
	}
	return resp, nil
}
