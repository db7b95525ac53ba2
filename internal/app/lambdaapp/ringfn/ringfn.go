// Package ringfn is the ring Lambda function: each SQS record of the ring
// queue is one bucket (shard, second). The records of one second are fired
// as one bucket (as the local ring's poller merges them), so an instant's
// fast-lane fires are one dispatch batch however many messages the scan
// and the admin spread them over; seconds fire concurrently, each waiting
// to its occurrences' exact milliseconds. The fast lane is dispatched in
// process (dispatch.LaneSink: one batch per instant, read and claimed when
// the bucket arrives, called at the instant); a fire it cannot finish now
// (claim held elsewhere, store error, saturated lane) is sent to the fast
// queue, where the dispatch function retries it. The slow lane goes to the
// slow queue.
package ringfn

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/xjobdev/xjob/internal/adapter/lambdaqueue"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/dispatchfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/pipeline"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/targets"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/dispatch"
	"github.com/xjobdev/xjob/internal/scheduler/ring"
	"github.com/xjobdev/xjob/pkg/driver"
)

// The ring function dispatches its buckets' fast lane in process
// (dispatch.LaneSink). A hand-off (an instant's fast-lane fires, one
// dispatch batch) is cut into chunks of ringChunk tasks, ringChunks of them
// in flight at once, each one claim (LogCreateMany) and one record
// (LogTriggeredMany) for all its tasks: the write batches the packed log
// layout makes cheap, so a chunk holds a whole instant of a busy bucket
// (W1, 1,000 jobs every second over 4 shards, is ~250 fires a bucket).
// The first ringClaimAhead tasks of a prepared hand-off (a busy second of
// W1, all its buckets merged) are claimed when the ring receives it, about
// a second early, so that at the instant only the executor calls remain:
// on DynamoDB a claim is a read and a conditional put per page, tens of
// milliseconds that would otherwise sit between the clock and the
// executor. ringFastCalls executor calls run at once (xxl-job's fast
// trigger pool has 200 threads): the claimed-ahead tasks and the two
// chunks in flight are at most three waves of calls, each bounded by the
// executor client's connect + read timeouts (3 s + 3 s). That bound is
// what RingTimeout counts on.
const (
	ringChunk      = dispatch.DefaultSinkChunk // 256
	ringChunks     = 2
	ringClaimAhead = 4 * ringChunk
	ringFastCalls  = 512
)

// RingTimeout is the ring function's timeout in the templates (infra
// checks them against it; the ring queue's visibility timeout is 6 × it,
// AWS's guidance for SQS event sources, checked too). An invocation holds
// its buckets while it
//
//	waits to their instants              ≤  3 s  (a bucket arrives ≤ 1 s + the scan's ring lead early, and spans its second)
//	starts the fast lane's chunks        ≤ 10 s  (dispatch.DefaultSpillBudget; the rest goes to the fast queue)
//	runs the last chunk it started       ≤ 30 s  (route probes, claim, ≤ 3 waves of /run calls of ≤ 6 s, record,
//	                                              completions: the dispatch function's own timeout)
//	queues what it could not finish      ≤  2 s  (one SendMessageBatch per 10 tasks)
//	flushes the run-report counters      ≤  2 s  (wiring.Base.FlushReports)
//
// ≈ 47 s, so 50 s. HTTP and AWS jobs' calls end within it too: the
// invocation waits for them before it returns (Lambda would freeze them),
// and cuts one still running 3 s before the timeout (targets.Executor.Drain).
// A healthy bucket takes the wait plus milliseconds; the
// timeout only bounds the worst case (unreachable executors). Were it
// still exceeded, Lambda would end the invocation with the bucket
// unacknowledged: it comes back after the visibility timeout, the fires
// already triggered are dropped as repeats and claims left mid-dispatch
// are taken over once they expire, after the take-over's probe asks the
// executor whether the run got there: the cost is lateness, not a lost
// fire, and a run repeats only in the one case package dispatch documents
// (/run reached an executor that no longer knows the log id).
const RingTimeout = 50 * time.Second

// ringRetryStep spaces the returns of a bucket whose hand-off failed (a
// store or queue error): it becomes visible again after receives ×
// ringRetryStep, capped by the queue's visibility timeout (6 ×
// RingTimeout), rather than after the whole visibility timeout. 30 s,
// 60 s, 90 s, 120 s: a bucket reaches the dead-letter queue (5 receives)
// after about 5 minutes.
const ringRetryStep = 30 * time.Second

// Function is the ring function.
type Function struct {
	b       *wiring.Base
	ring    *ring.Ring
	targets *targets.Executor // HTTP and AWS jobs' calls, drained at each invocation's end
	retry   time.Duration
}

// New builds the ring function on b: the dispatcher of its fast lane (and
// the callback and registry services it completes and routes with).
func New(b *wiring.Base) (*Function, error) {
	cb, err := pipeline.Callback(b)
	if err != nil {
		return nil, err
	}
	reg, err := pipeline.Registry(b)
	if err != nil {
		return nil, err
	}
	// The pool keeps one connection per concurrent executor call.
	exec, err := pipeline.Executors(b, ringFastCalls)
	if err != nil {
		return nil, err
	}
	// HTTP and AWS jobs' calls, as many at once as executor calls.
	tg, err := targets.New(b, cb, ringFastCalls)
	if err != nil {
		return nil, err
	}
	// Groups are read eventually consistent: once per group and
	// invocation, far from the admin's edits.
	d, err := dispatchfn.NewDispatcher(b, exec, tg.Executor, reg, cb, true)
	if err != nil {
		return nil, err
	}
	// The ring dispatches its buckets' fast lane itself, one batch per
	// instant, and sends what it cannot finish to the fast queue (the
	// dispatch function retries it); the slow lane goes to its queue, where
	// the dispatch function's own concurrency keeps slow jobs apart.
	// Dispatches run on the invocation's context without its cancellation
	// (LaneSink's nil Base), so a started chunk is always recorded;
	// RingTimeout leaves room for it.
	fastSink, err := dispatch.NewLaneSink(d, dispatch.LaneSinkOptions{Queues: b.Queues, Logger: b.Log,
		Calls: map[fire.Lane]int{fire.LaneFast: ringFastCalls}, Chunk: ringChunk, Chunks: ringChunks, ClaimAhead: ringClaimAhead})
	if err != nil {
		return nil, fmt.Errorf("lambda ring: sink: %w", err)
	}
	// Leases: a FIRE_ONCE_NOW job's late buckets reach several
	// environments at once, and fire it once between them.
	r, err := ring.New(ring.Config{Jobs: b.Store, Queues: b.Queues, Clock: b.Clock, Logger: b.Log, Metrics: b.Metrics, Leases: b.Store,
		Sink: ring.Split{fire.LaneFast: fastSink, fire.LaneSlow: ring.QueueSink{Queues: b.Queues}}})
	if err != nil {
		return nil, fmt.Errorf("lambda ring: %w", err)
	}
	return &Function{b: b, ring: r, targets: tg, retry: cmp.Or(b.Deps.RingRetry, ringRetryStep)}, nil
}

// Build is New as a wiring.Builder: the ring main's whole wiring.
func Build(b *wiring.Base) (any, error) {
	f, err := New(b)
	if err != nil {
		return nil, err
	}
	return f.Handle, nil
}

// record is one SQS record of the ring queue and its bucket.
type record struct {
	msg    events.SQSMessage
	bucket fire.RingBucket
}

// decode reads the buckets of records. A record that does not decode is
// wiring.Base.KeepUnread's: one of a newer ring format is returned in
// kept, to report as a batch item failure; one that is no bucket at all
// is dropped.
func (f *Function) decode(ctx context.Context, records []events.SQSMessage) (recs []record, kept []events.SQSMessage) {
	for _, r := range records {
		if lambdaqueue.IsDeferred([]byte(r.Body)) {
			if f.redeliver(ctx, r) {
				kept = append(kept, r)
			}
			continue
		}
		var b fire.RingBucket
		err := json.Unmarshal([]byte(r.Body), &b)
		if err != nil {
			if f.b.KeepUnread(ctx, "ring: bucket", r, err) {
				kept = append(kept, r)
			}
			continue
		}
		// Its fires are claimed in this message's name (provisional
		// claims: see package dispatch): a redelivery of the message may
		// take their claims over, another message may not. A bucket
		// written before buckets had IDs is named by its SQS message id,
		// which its redeliveries share (not its return from the
		// dead-letter queue, which is a new message).
		delivery := b.ID
		if delivery == "" {
			delivery = "sqs:" + r.MessageId
		}
		for i := range b.Items {
			b.Items[i].Delivery = delivery
		}
		recs = append(recs, record{msg: r, bucket: b})
	}
	return recs, kept
}

// redeliver gives a lane task deferred through the ring queue (package
// lambdaqueue: a retry's delay) back to its lane, now due; it reports
// whether the record must come back (the hand-back failed).
func (f *Function) redeliver(ctx context.Context, r events.SQSMessage) bool {
	var d lambdaqueue.Deferred
	if err := json.Unmarshal([]byte(r.Body), &d); err != nil {
		return f.b.KeepUnread(ctx, "ring: deferred task", r, err)
	}
	lane := f.b.Lanes[d.Lane]
	if lane == nil {
		f.b.Log.ErrorContext(ctx, "ring: deferred task of a lane not on asynchronous invocations", "lane", d.Lane, "messageId", r.MessageId)
		return true
	}
	err := lane.WithReceives(d.Receives).Send(ctx, []driver.Outgoing[fire.DispatchTask]{{Msg: d.Task, VisibleAt: d.VisibleAt}})
	if err != nil {
		f.b.Log.WarnContext(ctx, "ring: deferred task will be retried", "occurrence", d.Task.Occurrence.ID(0), "err", err)
		return true
	}
	return false
}

// Handle fires an SQS batch of ring buckets. A bucket is acknowledged only
// once every hand-off of it returned. One that failed is a batch item
// failure, made visible again after its receive count × ringRetryStep
// (capped by the queue's visibility timeout); its fires already triggered
// are dropped as repeats by their occurrence ids when it comes back. A
// bucket of a newer format is a batch item failure too (see decode).
func (f *Function) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	defer f.b.FlushReports(ctx)
	// The target calls its fires started end (or are cut) before the
	// invocation does, after every bucket's hand-off.
	defer f.targets.Drain(ctx)
	recs, kept := f.decode(ctx, ev.Records)
	seconds := ring.MergeBySecond(recs, func(r record) fire.RingBucket { return r.bucket })
	failed := make([]bool, len(seconds))
	var (
		wg      sync.WaitGroup
		statsMu sync.Mutex
		maxLate time.Duration
	)
	for i, g := range seconds {
		wg.Go(func() {
			st, err := f.ring.Fire(ctx, g.Bucket)
			statsMu.Lock()
			maxLate = max(maxLate, st.MaxLate)
			statsMu.Unlock()
			if err == nil {
				f.b.Log.DebugContext(ctx, "ring: bucket fired", "second", g.Bucket.Second, "messages", len(g.Records),
					"fired", st.Fired, "dropped", st.Dropped, "maxLate", st.MaxLate)
				return
			}
			failed[i] = true
			f.b.Log.WarnContext(ctx, "ring: bucket will be retried", "second", g.Bucket.Second, "messages", len(g.Records), "err", err)
			for _, rec := range g.Records {
				r := rec.msg
				after := min(time.Duration(wiring.ReceiveCount(r))*f.retry, 6*RingTimeout)
				if rerr := f.b.Queues.Ring().Retry(context.WithoutCancel(ctx), r.ReceiptHandle, after); rerr != nil {
					f.b.Log.WarnContext(ctx, "ring: retry delay not set; the visibility timeout applies", "messageId", r.MessageId, "err", rerr)
				}
			}
		})
	}
	wg.Wait()
	if len(seconds) > 0 {
		// The fires it handed on are the Triggers and TriggerFailures
		// counters' already (AWS/Lambda and the growth counters say the
		// rest): a Fires metric per ring would be one more to pay for.
		f.b.EMF.Put(map[string]float64{wiring.MetricLatenessMax: float64(maxLate.Milliseconds())})
	}
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, r := range kept {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
	}
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
