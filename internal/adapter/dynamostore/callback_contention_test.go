package dynamostore_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/adapter/sqsqueue"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// A callback function without reserved concurrency scales out to as many
// execution environments as it has concurrent requests, each with its own
// store and its own quiet-write count (callback.Sparse), so under a fleet
// that sends one result per request every environment writes its few
// results itself, all of them to the same hot log pages of one second.
// Each direct write is one conditional round (driver.OneRound); a page
// that lost it gets one more, and a result whose page lost both goes to
// the results queue, which one applier writes with the others. Every result must end up recorded once: 0 lost, 0 duplicated,
// and the executors never hear of the contention.
func TestCallbackEnvironmentsRecordEveryResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		environments int
		logs         int
	}{
		{"a few environments", 4, 60},
		{"many environments on one second's pages", 32, 320},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			clk := clock.NewFake(time.UnixMilli(testNow))
			first := setup(t, dynamostore.Options{Shards: 4, Clock: clk})
			tables := dynamostore.TablesOf(first)
			sq := emulator.SQS(t)
			queueURL := func() string {
				out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(emulator.UniqueName("q"))})
				if err != nil {
					t.Fatalf("create queue: %v", err)
				}
				return aws.ToString(out.QueueUrl)
			}
			urls := sqsqueue.URLs{Ring: queueURL(), DispatchFast: queueURL(), DispatchSlow: queueURL()}
			results := queueURL()
			quietLog := slog.New(slog.DiscardHandler)

			// One second's fires of tc.logs jobs, triggered (code 200) and
			// counted running, as dispatch leaves them.
			fire := int64(testNow - 2_000)
			batch := make([]xjob.Log, tc.logs)
			for i := range batch {
				job := int64(1 + i)
				batch[i] = xjob.Log{OccurrenceID: fmt.Sprintf("j%d/t%d/s0", job, fire), JobID: job, GroupID: 7,
					TriggerType: xjob.TriggerCron, ScheduledTime: fire, TriggerTime: fire + int64(i%50),
					ExecutorHandler: "demoHandler", ClaimUntil: fire + 30_000}
			}
			created, err := first.LogCreateMany(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]int64, len(created))
			trig := make([]driver.LogTriggeredParams, len(created))
			for i, c := range created {
				if c.Err != nil || c.Outcome != driver.ClaimCreated {
					t.Fatalf("log %d: %+v", i, c)
				}
				ids[i] = c.Log.ID
				trig[i] = driver.LogTriggeredParams{ID: c.Log.ID, ExecutorAddress: "http://127.0.0.1:9/", TriggerCode: xjob.CodeSuccess, TriggerMsg: "ok"}
			}
			if _, err := first.LogTriggeredMany(ctx, trig); err != nil {
				t.Fatal(err)
			}
			day := callback.Day(fire)
			if err := first.ReportAdd(ctx, xjob.ReportDay{Day: day, GroupID: 7, RunningCount: tc.logs}); err != nil {
				t.Fatal(err)
			}

			// The environments: a store, a Service and a Sparse each, over
			// the same tables and the same results queue.
			newService := func(db *dynamostore.DB) *callback.Service {
				svc, err := callback.New(callback.Config{Store: db, Queues: sqsqueue.New(sq, urls, clk),
					Alarmer: alarm.Log{Logger: quietLog}, Clock: clk, Logger: quietLog})
				if err != nil {
					t.Fatal(err)
				}
				return svc
			}
			queued := &countingCallbacker{next: callback.NewRecorder(sqsqueue.NewQueue[callback.Recorded](sq, results, clk), clk)}
			envs := make([]callback.Callbacker, tc.environments)
			for e := range envs {
				db, err := dynamostore.New(emulator.DynamoDB(t), dynamostore.Options{Shards: 4, Tables: tables, Clock: clk})
				if err != nil {
					t.Fatal(err)
				}
				envs[e] = callback.NewSparse(newService(db), queued, callback.SparseOptions{Clock: clk})
			}

			// Every environment takes its share of one-result requests,
			// all at once.
			var wg sync.WaitGroup
			startLine := make(chan struct{})
			failed := make(chan error, tc.logs)
			for e, cb := range envs {
				wg.Go(func() {
					<-startLine
					for i := e; i < len(ids); i += len(envs) {
						item := protocol.HandleCallbackParam{LogID: ids[i], HandleCode: xjob.CodeSuccess, HandleMsg: fmt.Sprintf("result of %d", ids[i])}
						if errs := cb.Callback(ctx, []protocol.HandleCallbackParam{item}); errs[0] != nil {
							failed <- fmt.Errorf("log %d: %w", ids[i], errs[0])
						}
					}
				})
			}
			close(startLine)
			wg.Wait()
			close(failed)
			for err := range failed {
				t.Errorf("an executor heard its result was not taken: %v", err)
			}

			// The results queue's applier (the dispatch function's
			// HandleResults) writes what the environments handed over.
			applier := newService(first)
			q := sqsqueue.NewQueue[callback.Recorded](sq, results, clk)
			for empty := 0; empty < 2; {
				got, err := q.Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: 30 * time.Second, Wait: 200 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) == 0 {
					empty++
					continue
				}
				empty = 0
				recs := make([]callback.Recorded, len(got))
				for i, d := range got {
					recs[i] = d.Msg
				}
				var done []string
				for i, again := range applier.Apply(ctx, recs) {
					if !again {
						done = append(done, got[i].Token)
					}
				}
				if err := q.Ack(ctx, done); err != nil {
					t.Fatal(err)
				}
			}

			logs, err := first.LogGetMany(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			if len(logs) != len(ids) {
				t.Fatalf("read %d logs of %d", len(logs), len(ids))
			}
			lost := 0
			for _, l := range logs {
				if l.HandleCode != xjob.CodeSuccess || l.HandleMsg != fmt.Sprintf("result of %d", l.ID) {
					lost++
					t.Errorf("log %d: handle code %d msg %q, want its own result", l.ID, l.HandleCode, l.HandleMsg)
				}
			}
			// Each recorded result is counted once (running−1, suc+1) by
			// whoever won its write: a duplicate would count twice.
			days, err := first.ReportList(ctx, driver.ReportListParams{From: day, To: day})
			if err != nil {
				t.Fatal(err)
			}
			if len(days) != 1 || days[0].SucCount != tc.logs || days[0].RunningCount != 0 || days[0].FailCount != 0 {
				t.Fatalf("report %+v, want %d successes, none running", days, tc.logs)
			}
			t.Logf("%d environments, %d results: %d handed to the results queue after two lost rounds, %d lost",
				tc.environments, tc.logs, queued.n(), lost)
			if tc.environments >= 32 && queued.n() == 0 {
				t.Error("no environment lost a round: the test did not exercise the fallback")
			}
		})
	}
}

// countingCallbacker counts the items it passes on.
type countingCallbacker struct {
	next  callback.Callbacker
	mu    sync.Mutex
	items int
}

func (c *countingCallbacker) Callback(ctx context.Context, items []protocol.HandleCallbackParam) []error {
	c.mu.Lock()
	c.items += len(items)
	c.mu.Unlock()
	return c.next.Callback(ctx, items)
}

func (c *countingCallbacker) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.items
}
