package lambdaapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/scheduler/ring"
)

// Handler is the handler Lambda calls for the App's function (its
// Config.Function): what the function's main serves with lambda.Start, and
// what the emulated deployment invokes in-process through the same JSON
// boundary (lambda.NewHandler).
func (a *App) Handler() any {
	switch a.cfg.Function {
	case "scan":
		return a.Scan
	case "ring":
		return a.Ring
	case "dispatch":
		return a.Dispatch
	case "callback":
		return a.Callback
	case "registry":
		return a.Registry
	}
	// New validates the name through LoadConfig; an App built with an
	// unknown one answers every invocation with this error.
	return func(context.Context, json.RawMessage) (any, error) {
		return nil, fmt.Errorf("lambdaapp: no handler for function %q", a.cfg.Function)
	}
}

// ScanHorizon is how far ahead the scan function pre-reads. It runs once
// a minute (EventBridge), not in a resident per-second loop, so it must
// reach past the next invocation: 150 s covers the next minute, the
// schedule's jitter, and one invocation lost altogether (no asynchronous
// retries), with every bucket's SQS delay well inside the 900 s limit.
// A due job's fires are planned further, DefaultScanAdvance. Fires of
// jobs created, started or rescheduled in between are pushed by the admin
// (admin, through scan.Pusher); the ring drops occurrences whose schedule revision
// changed since they were pushed.
const ScanHorizon = 150 * time.Second

// DefaultScanAdvance is how far ahead the scan plans the fires of a job it
// reads due (scan.Config.Advance; XJOB_SCAN_ADVANCE). The job is then due
// again only when its first unplanned fire comes within ScanHorizon, so
// it is read and advanced (one write unit plus two on the due index) about
// once per DefaultScanAdvance − ScanHorizon ≈ 11.5 minutes instead of every
// minute: for a job that fires every minute that is one advance per ~11
// fires instead of one per fire. Edits stay correct as with any horizon:
// a stop, delete or reschedule bumps the job's revision and the ring
// drops the occurrences planned under the old one. The cost is more ring
// messages per second (each tick's advanced jobs fill buckets up to 14
// minutes out, so a shard-second's fires arrive in several messages), a
// few cents per million triggers.
const DefaultScanAdvance = 14 * time.Minute

// MaxScanAdvance keeps every bucket's SQS delay under SQS's 900 s ceiling
// (sqsqueue caps DelaySeconds there: a later bucket would come too early
// and hold a ring invocation).
const MaxScanAdvance = 14 * time.Minute

// scanBudget bounds the paging of one scan invocation: the due jobs of a
// shard are read and advanced within it (well inside the function's
// timeout); the rest waits for the next minute, which is still ahead of
// its fires thanks to the horizon. scanLease outlives the budget (a page
// is only processed while the lease covers the budget) and expires before
// the next minute, so a scan that died holding it delays nobody.
const (
	scanBudget = 20 * time.Second
	scanLease  = 45 * time.Second
)

// Scan is the scan function's handler: one EventBridge scheduled event per
// minute runs one tick over every shard that has a job due within
// ScanHorizon and whose lease it can take (several concurrently), planning
// each due job's fires up to the scan advance ahead, then releases the
// leases for the next minute's invocation.
func (a *App) Scan(ctx context.Context, _ events.EventBridgeEvent) error {
	defer a.scanner.ReleaseAll(context.WithoutCancel(ctx))
	st, err := a.scanner.Tick(ctx)
	if err != nil {
		return fmt.Errorf("scan: %w", err)
	}
	a.log.DebugContext(ctx, "scan tick", "shards", st.Shards, "jobs", st.Jobs, "ring", st.RingFires, "now", st.NowFires,
		"misfires", st.Misfires, "conflicts", st.Conflicts, "truncated", st.Truncated, "took", st.Duration)
	return nil
}

// Ring is the ring function's handler: each record is one bucket (shard,
// second). The records of one second are fired as one bucket (as the
// local ring's poller merges them), so an instant's fast-lane fires are
// one dispatch batch however many messages the scan and the admin spread
// them over; seconds fire concurrently, each waiting to its occurrences'
// exact milliseconds. The fast lane is dispatched here, in process
// (dispatch.LaneSink): a fire it cannot finish now (claim held elsewhere,
// store error, saturated lane) is sent to the fast queue, where the
// dispatch function retries it. The slow lane goes to the slow queue.
//
// A bucket is acknowledged only once every hand-off of it returned. One
// that failed is a batch item failure, made visible again after its
// receive count × ringRetryStep (capped by the queue's visibility
// timeout); its fires already triggered are dropped as repeats by their
// occurrence ids when it comes back.
func (a *App) Ring(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	defer a.flushReports(ctx)
	type record struct {
		msg    events.SQSMessage
		bucket xjob.RingBucket
	}
	var recs []record
	for _, r := range ev.Records {
		var b xjob.RingBucket
		if err := json.Unmarshal([]byte(r.Body), &b); err != nil {
			a.log.ErrorContext(ctx, "ring: malformed bucket dropped", "messageId", r.MessageId, "err", err)
			continue
		}
		recs = append(recs, record{msg: r, bucket: b})
	}
	seconds := ring.MergeBySecond(recs, func(r record) xjob.RingBucket { return r.bucket })
	failed := make([]bool, len(seconds))
	var wg sync.WaitGroup
	for i, g := range seconds {
		wg.Go(func() {
			st, err := a.ring.Fire(ctx, g.Bucket)
			if err == nil {
				a.log.DebugContext(ctx, "ring: bucket fired", "second", g.Bucket.Second, "messages", len(g.Records),
					"fired", st.Fired, "dropped", st.Dropped, "maxLate", st.MaxLate)
				return
			}
			failed[i] = true
			a.log.WarnContext(ctx, "ring: bucket will be retried", "second", g.Bucket.Second, "messages", len(g.Records), "err", err)
			for _, rec := range g.Records {
				r := rec.msg
				after := min(time.Duration(receiveCount(r))*a.ringRetry, 6*RingTimeout)
				if rerr := a.queues.Ring().Retry(context.WithoutCancel(ctx), r.ReceiptHandle, after); rerr != nil {
					a.log.WarnContext(ctx, "ring: retry delay not set; the visibility timeout applies", "messageId", r.MessageId, "err", rerr)
				}
			}
		})
	}
	wg.Wait()
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, g := range seconds {
		if !failed[i] {
			continue
		}
		for _, r := range g.Records {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.msg.MessageId})
		}
	}
	return resp, nil
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

// Dispatch is the dispatch function's handler. An SQS event (either lane)
// dispatches each task and reports the ones to retry as batch item
// failures, after setting their delay (Dispose's RetryAfter) with
// ChangeMessageVisibility. Any other payload must be a ManualTrigger: it
// is dispatched synchronously and answered with a ManualResult. The
// occurrence's ref is the invocation's request id, so Lambda's own retry
// of an asynchronous invocation (same request id) triggers the job once.
func (a *App) Dispatch(ctx context.Context, raw json.RawMessage) (any, error) {
	defer a.flushReports(ctx)
	var probe struct {
		Records []json.RawMessage `json:"Records"`
		JobID   json.RawMessage   `json:"jobId"`
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
		return a.DispatchSQS(ctx, ev)
	case probe.JobID != nil:
		var m ManualTrigger
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("dispatch: manual trigger payload: %w", err)
		}
		return a.DispatchManual(ctx, m)
	default:
		return nil, errors.New(`dispatch: unrecognised payload: want an SQS event or {"jobId":…,"executorParam":…,"addressList":[…]}`)
	}
}

// DispatchSQS handles one SQS batch of dispatch tasks from either lane as
// one DispatchMany (the batch's jobs, groups and addresses read once), and
// reports each record whose task must be retried as a batch item failure.
func (a *App) DispatchSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	defer a.flushReports(ctx)
	tasks := make([]xjob.DispatchTask, 0, len(ev.Records))
	records := make([]events.SQSMessage, 0, len(ev.Records))
	for _, r := range ev.Records {
		var task xjob.DispatchTask
		if err := json.Unmarshal([]byte(r.Body), &task); err != nil {
			a.log.ErrorContext(ctx, "dispatch: malformed task dropped", "messageId", r.MessageId, "err", err)
			continue
		}
		tasks, records = append(tasks, task), append(records, r)
	}
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	if len(tasks) == 0 {
		return resp, nil
	}
	outs, errs := a.dispatcher.DispatchMany(ctx, tasks)
	for i, r := range records {
		task, out, err := tasks[i], outs[i], errs[i]
		receives := receiveCount(r)
		d := a.dispatcher.Dispose(err, receives)
		if d.Ack {
			if err != nil {
				a.log.WarnContext(ctx, "dispatch: task dropped", "occurrence", task.Occurrence.ID(0), "err", err)
			} else if out.Dropped {
				a.log.InfoContext(ctx, "dispatch: task no longer applies", "occurrence", task.Occurrence.ID(0), "reason", out.Reason)
			}
			continue
		}
		a.log.WarnContext(ctx, "dispatch: task will be retried", "occurrence", task.Occurrence.ID(0),
			"retryAfter", d.RetryAfter, "receives", receives, "err", err)
		if lane, ok := a.lanes[queueName(r.EventSourceARN)]; ok && d.RetryAfter > 0 {
			if rerr := a.queues.Dispatch(lane).Retry(ctx, r.ReceiptHandle, d.RetryAfter); rerr != nil {
				a.log.WarnContext(ctx, "dispatch: retry delay not set; the visibility timeout applies", "err", rerr)
			}
		}
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
	}
	return resp, nil
}

// DispatchManual triggers one job now, as the admin's "trigger once" does,
// and waits for the executor's reply to /run.
func (a *App) DispatchManual(ctx context.Context, m ManualTrigger) (ManualResult, error) {
	defer a.flushReports(ctx)
	addrs, err := parseAddressList(m.AddressList)
	if err != nil {
		return ManualResult{}, err
	}
	ref := ""
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		ref = lc.AwsRequestID
	}
	if ref == "" {
		ref = randomHex(16)
	}
	task := xjob.DispatchTask{
		Occurrence:  xjob.Occurrence{JobID: m.JobID, Type: xjob.TriggerManual, Ref: ref},
		Param:       m.ExecutorParam,
		AddressList: addrs,
		EnqueuedAt:  a.clk.Now().UnixMilli(),
	}
	if err := task.Validate(); err != nil {
		return ManualResult{}, fmt.Errorf("dispatch: manual trigger: %w", err)
	}
	out, err := a.dispatcher.Dispatch(ctx, task)
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
	for _, a := range bytes.Split([]byte(s), []byte(",")) {
		if a = bytes.TrimSpace(a); len(a) > 0 {
			list = append(list, string(a))
		}
	}
	return list, nil
}

// receiveCount is how many times SQS has delivered r, this delivery
// included (1 when the attribute is missing).
func receiveCount(r events.SQSMessage) int {
	n, _ := strconv.Atoi(r.Attributes["ApproximateReceiveCount"])
	return max(n, 1)
}
