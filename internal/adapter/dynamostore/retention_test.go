package dynamostore_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

const day = 24 * time.Hour

// Dynalite has no TTL: an expired page stays, as it does on AWS until
// TTL gets to it (up to days). No reader may return a log past its
// retention meanwhile, no change may touch one, and no write is spent on
// them; the page's next write drops them for free.
func TestLogRetention(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := clock.NewFake(time.UnixMilli(testNow).Add(-31 * day))
	db := setup(t, dynamostore.Options{Clock: clk, LogPartitions: 2})
	if got := db.LogExpiry(); got != 30*day {
		t.Fatalf("LogExpiry = %s, want the default 30 days", got)
	}
	now := int64(testNow)
	// create stores a log as it is created: the clock at its trigger time
	// (creations in time order: the fake clock moves forward only).
	create := func(occ string, job int64, at time.Duration, triggered, handle int) xjob.Log {
		t.Helper()
		clk.Set(time.UnixMilli(now).Add(at))
		trigger := clock.Millis(clk)
		l, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: occ, JobID: job, GroupID: 2, TriggerType: xjob.TriggerManual, TriggerTime: trigger})
		if err != nil {
			t.Fatal(err)
		}
		if triggered != 0 {
			if err := db.LogTriggered(ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: "http://e", TriggerCode: triggered}); err != nil {
				t.Fatal(err)
			}
		}
		if handle != 0 {
			if _, err := db.LogFinish(ctx, driver.LogFinishParams{ID: l.ID, HandleTime: trigger + 1, HandleCode: handle}); err != nil {
				t.Fatal(err)
			}
		}
		return l
	}
	failedOld := create("failed-old", 1, -31*day, xjob.CodeSuccess, xjob.CodeFail)
	runningOld := create("running-old", 1, -30*day-time.Second, xjob.CodeSuccess, 0)
	runningLive := create("running-live", 1, -29*day, xjob.CodeSuccess, 0)
	failedLive := create("failed-live", 3, -time.Hour, xjob.CodeSuccess, xjob.CodeFail)
	clk.Set(time.UnixMilli(now))
	expired, live := []int64{failedOld.ID, runningOld.ID}, []int64{runningLive.ID, failedLive.ID}

	ids := func(logs []xjob.Log) []int64 {
		out := make([]int64, 0, len(logs))
		for _, l := range logs {
			out = append(out, l.ID)
		}
		slices.Sort(out)
		return out
	}
	wantIDs := func(what string, got []xjob.Log, want ...int64) {
		t.Helper()
		want = slices.Sorted(slices.Values(want))
		if g := ids(got); !slices.Equal(g, want) {
			t.Fatalf("%s: logs %v, want %v", what, g, want)
		}
	}
	for _, id := range expired {
		if _, err := db.LogGet(ctx, id); !errors.Is(err, xjob.ErrNotFound) {
			t.Fatalf("LogGet of expired log %d: %v, want not found", id, err)
		}
		if _, err := dynamostore.LogPageItem(ctx, db, id); err != nil {
			t.Fatalf("the page of expired log %d is gone (%v): the test needs it kept, as TTL's lag keeps it", id, err)
		}
	}
	many, err := db.LogGetMany(ctx, append(slices.Clone(expired), live...))
	if err != nil {
		t.Fatal(err)
	}
	wantIDs("LogGetMany", many, live...)
	page, err := db.LogList(ctx, driver.LogListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs("LogList", page.Logs, live...)
	page, err = db.LogList(ctx, driver.LogListParams{JobID: 1, From: now - 40*day.Milliseconds(), Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs("LogList of job 1 from 40 days back", page.Logs, runningLive.ID)
	if n, err := db.LogCount(ctx, driver.LogCountParams{}); err != nil || n != 2 {
		t.Fatalf("LogCount = %d, %v; want 2", n, err)
	}
	failed, err := db.LogsFailedUnalarmed(ctx, now, 100)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs("LogsFailedUnalarmed", failed, failedLive.ID)
	running, err := db.LogsRunning(ctx, now-10*time.Minute.Milliseconds(), 100)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs("LogsRunning", running, runningLive.ID)
	// Bounds older than the retention find nothing (and no query with
	// reversed bounds, which DynamoDB refuses).
	old := now - 40*day.Milliseconds()
	if page, err := db.LogList(ctx, driver.LogListParams{To: old, Limit: 100}); err != nil || len(page.Logs) != 0 {
		t.Fatalf("LogList up to 40 days back: %+v, %v", page.Logs, err)
	}
	if page, err := db.LogList(ctx, driver.LogListParams{JobID: 1, To: old, Limit: 100}); err != nil || len(page.Logs) != 0 {
		t.Fatalf("LogList of job 1 up to 40 days back: %+v, %v", page.Logs, err)
	}
	if got, err := db.LogsFailedUnalarmed(ctx, old, 100); err != nil || len(got) != 0 {
		t.Fatalf("LogsFailedUnalarmed 40 days back: %+v, %v", got, err)
	}
	if n, err := db.LogDeleteBefore(ctx, old, 100); err != nil || n != 0 {
		t.Fatalf("LogDeleteBefore 40 days back: %d, %v", n, err)
	}

	// Changes treat an expired log as gone, and write nothing for it.
	if _, err := db.LogFinish(ctx, driver.LogFinishParams{ID: runningOld.ID, HandleTime: now, HandleCode: xjob.CodeSuccess}); !errors.Is(err, xjob.ErrNotFound) {
		t.Fatalf("LogFinish of an expired log: %v, want not found", err)
	}
	if err := db.LogSetAlarm(ctx, driver.LogSetAlarmParams{ID: failedOld.ID, From: xjob.AlarmDefault, To: xjob.AlarmSuccess}); !errors.Is(err, xjob.ErrNotFound) {
		t.Fatalf("LogSetAlarm of an expired log: %v, want not found", err)
	}

	// Retention changes. Shorter: reads hide what is older at once.
	shorter := reopen(t, db, dynamostore.Options{LogTTL: 10 * day, Clock: clk, LogPartitions: 2})
	page, err = shorter.LogList(ctx, driver.LogListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs("LogList at 10 days' retention", page.Logs, failedLive.ID)
	// Longer: a page keeps the expiry it was written with (DynamoDB
	// deletes it then), so a log past it stays hidden; pages written from
	// then on get the longer one.
	longer := reopen(t, db, dynamostore.Options{LogTTL: 60 * day, Clock: clk, LogPartitions: 2})
	if _, err := longer.LogGet(ctx, failedOld.ID); !errors.Is(err, xjob.ErrNotFound) {
		t.Fatalf("LogGet at 60 days' retention of a log whose page expired: %v, want not found", err)
	}

	// Explicit deletes keep their contract, over live logs only.
	if n, err := db.LogDeleteBefore(ctx, now, 100); err != nil || n != 2 {
		t.Fatalf("LogDeleteBefore(now) = %d, %v; want the 2 live logs", n, err)
	}
}

// An expired log that shares its page with a new one (hash-placed logs
// whose hashes collide) is dropped by the new one's write: it costs
// nothing more, never widens the page's span, and a store that does not
// expire logs finds it gone.
func TestLogRetentionPrunesOnWrite(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := clock.NewFake(time.UnixMilli(testNow).Add(-40 * day))
	db := setup(t, dynamostore.Options{Clock: clk})
	dynamostore.SetLogIDHash(db, func(string) uint64 { return 7 })
	old, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: "m-old", JobID: 1, TriggerType: xjob.TriggerManual, TriggerTime: clock.Millis(clk)})
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(time.UnixMilli(testNow))
	fresh, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: "m-new", JobID: 1, TriggerType: xjob.TriggerManual, TriggerTime: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if old.ID>>22 != fresh.ID>>22 || old.ID&15 != fresh.ID&15 {
		t.Fatalf("logs %d and %d are not in one page", old.ID, fresh.ID)
	}
	keepAll := reopen(t, db, dynamostore.Options{LogTTL: -1})
	page, err := keepAll.LogList(ctx, driver.LogListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Logs) != 1 || page.Logs[0].OccurrenceID != "m-new" {
		t.Fatalf("logs after the page's next write: %+v, want m-new's alone", page.Logs)
	}
	// The expired log's span (40 days) was never recorded: a list up to
	// 40 days back finds nothing, reading no more than a minute past it.
	if page, err = keepAll.LogList(ctx, driver.LogListParams{To: testNow - 39*day.Milliseconds()}); err != nil || len(page.Logs) != 0 {
		t.Fatalf("list up to 39 days back: %+v, %v", page.Logs, err)
	}
	if keepAll.LogExpiry() != 0 {
		t.Fatalf("LogExpiry with TTLs off = %s, want 0", keepAll.LogExpiry())
	}
}

// reopen is another store on db's tables.
func reopen(t *testing.T, db *dynamostore.DB, opts dynamostore.Options) *dynamostore.DB {
	t.Helper()
	opts.Tables = dynamostore.TablesOf(db)
	other, err := dynamostore.New(emulator.DynamoDB(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return other
}
