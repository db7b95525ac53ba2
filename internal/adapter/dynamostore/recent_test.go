package dynamostore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/driver"
)

// countingAPI counts the page reads (GetItem) a store makes through the
// emulator's client.
type countingAPI struct {
	*dynamodb.Client
	gets atomic.Int64
}

func (c *countingAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets.Add(1)
	return c.Client.GetItem(ctx, in, opts...)
}

// TestRecentPageSavesTheRead: a log change that follows this store's own
// write of the page (the ring's record of a reply after its claim) starts
// from the page it wrote, without reading it again; when another store
// changed the page in between, the outcome is still the page's.
func TestRecentPageSavesTheRead(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	opts := dynamostore.Options{Tables: dynamostore.TablesWithPrefix(emulator.UniqueName("t"))}
	a := &countingAPI{Client: emulator.DynamoDB(t)}
	db, err := dynamostore.New(a, opts)
	if err != nil {
		t.Fatal(err)
	}
	other, err := dynamostore.New(emulator.DynamoDB(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	const sched = 1_795_000_000_000
	create := func(db *dynamostore.DB, job int64) xjob.Log {
		t.Helper()
		res, err := db.LogCreateMany(ctx, []xjob.Log{{OccurrenceID: fire.Occurrence{JobID: job, FireTime: sched}.ID(16), JobID: job, GroupID: 1,
			TriggerType: xjob.TriggerCron, ScheduledTime: sched, TriggerTime: sched, ClaimUntil: sched + 30_000}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("create: %v %v", err, res)
		}
		return res[0].Log
	}
	// Jobs 16 apart share a page (job id mod 16).
	l1 := create(db, 16)
	before := a.gets.Load()
	if err := db.LogTriggered(ctx, driver.LogTriggeredParams{ID: l1.ID, TriggerCode: xjob.CodeSuccess, ExecutorAddress: "http://e"}); err != nil {
		t.Fatal(err)
	}
	if n := a.gets.Load() - before; n != 0 {
		t.Errorf("record after the claim read the page %d times, want 0", n)
	}
	before = a.gets.Load()
	if _, err := db.LogFinish(ctx, driver.LogFinishParams{ID: l1.ID, HandleTime: sched + 5, HandleCode: xjob.CodeSuccess}); err != nil {
		t.Fatal(err)
	}
	if n := a.gets.Load() - before; n != 0 {
		t.Errorf("result after the record read the page %d times, want 0", n)
	}

	// Another store adds a log to the page: a change this store makes from
	// its remembered page still finds it (nothing to change there is not
	// an answer: the page is read).
	l2 := create(other, 32)
	if err := db.LogTriggered(ctx, driver.LogTriggeredParams{ID: l2.ID, TriggerCode: xjob.CodeSuccess}); err != nil {
		t.Fatalf("record of a log the remembered page lacks: %v", err)
	}
	// …and records it once: the other store's record of the same reply
	// loses to it.
	if err := other.LogTriggered(ctx, driver.LogTriggeredParams{ID: l2.ID, TriggerCode: xjob.CodeSuccess}); !errors.Is(err, xjob.ErrConflict) {
		t.Fatalf("second record: %v, want a conflict", err)
	}
	// A stale remembered page loses its write and the change is applied
	// to the page as stored: the other store's result stays first.
	if _, err := other.LogFinish(ctx, driver.LogFinishParams{ID: l2.ID, HandleTime: sched + 6, HandleCode: xjob.CodeSuccess, HandleMsg: "first"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LogFinish(ctx, driver.LogFinishParams{ID: l2.ID, HandleTime: sched + 7, HandleCode: xjob.CodeFail, HandleMsg: "second"}); !errors.Is(err, xjob.ErrConflict) {
		t.Fatalf("result over a stale page: %v, want a conflict", err)
	}
	got, err := db.LogGet(ctx, l2.ID)
	if err != nil || got.HandleMsg != "first" || got.TriggerCode != xjob.CodeSuccess {
		t.Fatalf("log = %+v, %v", got, err)
	}
	// A sparse page this store only read (its last write lost), whose logs
	// all have their trigger recorded, is remembered by the consistent read
	// (LogGetMany, as a callback's before its results): the change that
	// follows does not read it again.
	if _, err := db.LogGetMany(ctx, []int64{l2.ID}); err != nil {
		t.Fatal(err)
	}
	before = a.gets.Load()
	if err := db.LogSetAlarm(ctx, driver.LogSetAlarmParams{ID: l2.ID, From: xjob.AlarmDefault, To: xjob.AlarmNoNeed}); err != nil {
		t.Fatal(err)
	}
	if n := a.gets.Load() - before; n != 0 {
		t.Errorf("change after a read of a settled page read it %d times, want 0", n)
	}
	// A page read with a log still waiting for its trigger record (its
	// ring is about to write it) is not: the change reads it first.
	l3 := create(other, 48)
	if _, err := db.LogGetMany(ctx, []int64{l3.ID}); err != nil {
		t.Fatal(err)
	}
	before = a.gets.Load()
	if err := db.LogSetAlarm(ctx, driver.LogSetAlarmParams{ID: l3.ID, From: xjob.AlarmDefault, To: xjob.AlarmNoNeed}); err != nil {
		t.Fatal(err)
	}
	if n := a.gets.Load() - before; n != 1 {
		t.Errorf("change after a read of a page awaiting a trigger record read it %d times, want 1", n)
	}
}

// A page read is remembered only when sparse and settled; a dense page,
// whatever its logs, is read again before a change.
func TestReadPageRememberedWhenSettled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		logs      int
		triggered bool
		wantReads int64
	}{
		{"one triggered log", 1, true, 0},
		{"four triggered logs", 4, true, 0},
		{"five triggered logs", 5, true, 1},
		{"one untriggered log", 1, false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			opts := dynamostore.Options{Tables: dynamostore.TablesWithPrefix(emulator.UniqueName("t"))}
			writer, err := dynamostore.New(emulator.DynamoDB(t), opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := writer.CreateTables(ctx); err != nil {
				t.Fatal(err)
			}
			a := &countingAPI{Client: emulator.DynamoDB(t)}
			reader, err := dynamostore.New(a, opts)
			if err != nil {
				t.Fatal(err)
			}
			const sched = 1_795_000_000_000
			var ids []int64
			// Scheduled fires of one second whose jobs share a shard
			// among 16 share a page.
			for job := int64(1); len(ids) < tc.logs; job++ {
				if fire.ShardOf(job, 16) != fire.ShardOf(1, 16) {
					continue
				}
				occ := fire.Occurrence{JobID: job, Type: xjob.TriggerCron, FireTime: sched}
				res, err := writer.LogCreateMany(ctx, []xjob.Log{{OccurrenceID: occ.ID(0), JobID: job, GroupID: 1,
					TriggerType: xjob.TriggerCron, ScheduledTime: sched, TriggerTime: sched, ClaimUntil: sched + 30_000}})
				if err != nil || res[0].Err != nil {
					t.Fatalf("create: %v %v", err, res)
				}
				ids = append(ids, res[0].Log.ID)
			}
			if tc.triggered {
				for _, id := range ids {
					if err := writer.LogTriggered(ctx, driver.LogTriggeredParams{ID: id, TriggerCode: xjob.CodeSuccess}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := reader.LogGetMany(ctx, ids[:1]); err != nil {
				t.Fatal(err)
			}
			before := a.gets.Load()
			if _, err := reader.LogFinish(ctx, driver.LogFinishParams{ID: ids[0], HandleTime: sched + 5, HandleCode: xjob.CodeSuccess}); err != nil {
				t.Fatal(err)
			}
			if n := a.gets.Load() - before; n != tc.wantReads {
				t.Errorf("result after the read read the page %d times, want %d", n, tc.wantReads)
			}
		})
	}
}

// A claim takes its page not to exist and writes it without reading it
// first; when the page does exist (another store claimed in it) the
// write loses and the claim is made from a read, with the outcomes of
// the page as stored.
func TestClaimWritesANewPageWithoutReading(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	opts := dynamostore.Options{Tables: dynamostore.TablesWithPrefix(emulator.UniqueName("t"))}
	a := &countingAPI{Client: emulator.DynamoDB(t)}
	db, err := dynamostore.New(a, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := dynamostore.New(emulator.DynamoDB(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	const sched = 1_795_000_000_000
	sibling := int64(2) // a job whose fires share job 1's pages
	for fire.ShardOf(sibling, 16) != fire.ShardOf(1, 16) {
		sibling++
	}
	claim := func(job int64, at int64) xjob.Log {
		occ := fire.Occurrence{JobID: job, Type: xjob.TriggerCron, FireTime: at}
		return xjob.Log{OccurrenceID: occ.ID(0), JobID: job, GroupID: 1, TriggerType: xjob.TriggerCron, ScheduledTime: at,
			TriggerTime: at, ClaimUntil: at + 30_000}
	}
	tests := []struct {
		name      string
		before    []xjob.Log // claimed by another store first
		claim     []xjob.Log
		wantReads int64
		want      []driver.ClaimOutcome
	}{
		{"new page", nil, []xjob.Log{claim(1, sched), claim(sibling, sched)}, 0, []driver.ClaimOutcome{driver.ClaimCreated, driver.ClaimCreated}},
		{"page another store created", []xjob.Log{claim(1, sched+1000)}, []xjob.Log{claim(1, sched+1000), claim(sibling, sched+1000)}, 1,
			[]driver.ClaimOutcome{driver.ClaimHeld, driver.ClaimCreated}},
	}
	for _, tc := range tests {
		if len(tc.before) > 0 {
			if _, err := other.LogCreateMany(ctx, tc.before); err != nil {
				t.Fatal(err)
			}
		}
		before := a.gets.Load()
		res, err := db.LogCreateMany(ctx, tc.claim)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if n := a.gets.Load() - before; n != tc.wantReads {
			t.Errorf("%s: claim read the page %d times, want %d", tc.name, n, tc.wantReads)
		}
		for i, r := range res {
			if r.Err != nil || r.Outcome != tc.want[i] {
				t.Errorf("%s: claim %d = %v %v, want %v", tc.name, i, r.Outcome, r.Err, tc.want[i])
			}
		}
		ids := []int64{res[0].Log.ID, res[1].Log.ID}
		if got, err := other.LogGetMany(ctx, ids); err != nil || len(got) != 2 || ids[0] == ids[1] {
			t.Errorf("%s: stored logs %+v, %v", tc.name, got, err)
		}
	}
}
