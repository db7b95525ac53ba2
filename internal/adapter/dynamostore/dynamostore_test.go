package dynamostore_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/clock"

	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/driver/drivertest"
)

func TestMain(m *testing.M) { emulator.Main(m) }

// testNow is the fake clock's instant of the tests whose logs it keeps
// within their retention (2026-11-18 UTC).
const testNow = 1_795_000_000_000

// setup returns a store on fresh tables of the shared dynalite server, on
// a fake clock at testNow unless opts names a clock.
func setup(t *testing.T, opts dynamostore.Options) *dynamostore.DB {
	t.Helper()
	opts.Tables = dynamostore.TablesWithPrefix(emulator.UniqueName("t"))
	if opts.Clock == nil {
		opts.Clock = clock.NewFake(time.UnixMilli(testNow))
	}
	db, err := dynamostore.New(emulator.DynamoDB(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTables(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestStoreContract(t *testing.T) {
	t.Parallel()
	drivertest.Exercise(t, func(t *testing.T) driver.Store {
		// Small id blocks and two partitions exercise the merge and the
		// block refill within the suite's few logs.
		// The suite's log fixtures count from 2023-11-14 (1.7e12 ms):
		// the clock stands there, so that none is past its retention.
		return setup(t, dynamostore.Options{Shards: 4, LogPartitions: 3, Clock: clock.NewFake(time.UnixMilli(1_700_000_000_000))})
	})
}

func TestCreateTablesIdempotent(t *testing.T) {
	t.Parallel()
	db := setup(t, dynamostore.Options{})
	if err := db.CreateTables(t.Context()); err != nil {
		t.Fatalf("second CreateTables: %v", err)
	}
}

// Occurrences that prefer the same id (here: three occurrences of job 1
// in one second, as broadcast shards with equal preferred slots would)
// get the next free one in their page; every repeat of an occurrence
// finds its own log, never another occurrence's.
func TestLogCreateCollisions(t *testing.T) {
	t.Parallel()
	opts := dynamostore.Options{Tables: dynamostore.TablesWithPrefix(emulator.UniqueName("t")), Clock: clock.NewFake(time.UnixMilli(testNow))}
	api := emulator.DynamoDB(t)
	db, err := dynamostore.New(api, opts)
	if err != nil {
		t.Fatal(err)
	}
	dynamostore.SetLogIDHash(db, func(string) uint64 { return 42 })
	ctx := t.Context()
	if err := db.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	const sched = 1_795_000_000_000
	occs := []string{"j1/t1795000000000/s0", "j2/t1795000000000/s0", "j3/t1795000000000/s0"}
	ids := map[int64]string{}
	for _, occ := range occs {
		l, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: occ, JobID: 1, GroupID: 2, TriggerType: xjob.TriggerCron,
			ScheduledTime: sched, TriggerTime: sched + 5})
		if err != nil {
			t.Fatalf("create %s: %v", occ, err)
		}
		if prev, ok := ids[l.ID]; ok {
			t.Fatalf("%s and %s share log id %d", prev, occ, l.ID)
		}
		ids[l.ID] = occ
	}
	for _, occ := range occs {
		again, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: occ, JobID: 1, GroupID: 2, TriggerType: xjob.TriggerCron,
			ScheduledTime: sched, TriggerTime: sched + 9})
		if !errors.Is(err, xjob.ErrConflict) || ids[again.ID] != occ || again.TriggerTime != sched+5 {
			t.Fatalf("repeat of %s: %+v, %v", occ, again, err)
		}
	}
	// The logs share one page, whose TTL attribute is its latest trigger
	// time + 30 days, in seconds.
	for id := range ids {
		it, err := dynamostore.LogPageItem(ctx, db, id)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := it[dynamostore.AttrPurgeAt].(*types.AttributeValueMemberN); !ok || v.Value != strconv.FormatInt((sched+5)/1000+30*86400, 10) {
			t.Fatalf("purgeAt = %#v", it[dynamostore.AttrPurgeAt])
		}
	}
}

func TestSortKeyOrder(t *testing.T) {
	t.Parallel()
	pairs := [][2]int64{{math.MinInt64, 0}, {-5, 3}, {-1, math.MaxInt64}, {0, 0}, {0, 1}, {1, -1}, {1_700_000_000_000, 2}, {math.MaxInt64, math.MaxInt64}}
	for i := 1; i < len(pairs); i++ {
		a, b := dynamostore.SortKey(pairs[i-1][0], pairs[i-1][1]), dynamostore.SortKey(pairs[i][0], pairs[i][1])
		if a >= b || len(a) != len(b) {
			t.Fatalf("SortKey%v = %q not below SortKey%v = %q", pairs[i-1], a, pairs[i], b)
		}
	}
}

func TestNewRequiresTables(t *testing.T) {
	t.Parallel()
	if _, err := dynamostore.New(nil, dynamostore.Options{}); err == nil {
		t.Fatal("New without table names succeeded")
	}
}

// LogsRunning reads byTime once past its watermark and parks what is still
// running; later calls find parked logs through the running index until
// they finish, and read only the logs created since.
func TestLogsRunningWatermark(t *testing.T) {
	t.Parallel()
	db, ctx := setup(t, dynamostore.Options{LogPartitions: 2}), t.Context()
	ids := map[int64]int64{} // trigger time → log id
	create := func(at int64) {
		t.Helper()
		l, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: "j1/t" + strconv.FormatInt(at, 10) + "/s0", JobID: 1, GroupID: 2,
			TriggerType: xjob.TriggerCron, ScheduledTime: at, TriggerTime: at})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.LogTriggered(ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: "http://e", TriggerCode: xjob.CodeSuccess}); err != nil {
			t.Fatal(err)
		}
		ids[at] = l.ID
	}
	finish := func(at int64) {
		t.Helper()
		if _, err := db.LogFinish(ctx, driver.LogFinishParams{ID: ids[at], HandleTime: at + 1, HandleCode: xjob.CodeSuccess}); err != nil {
			t.Fatal(err)
		}
	}
	const s = 1_795_000_000_000
	create(s + 1000)
	create(s + 2000)
	create(s + 3000)
	finish(s + 2000)
	steps := []struct {
		name   string
		before func()
		at     int64
		limit  int
		want   []int64 // trigger times
	}{
		{"first pass stops at before", nil, s + 2500, 100, []int64{s + 1000}},
		{"parked and fresh", nil, s + 5000, 100, []int64{s + 1000, s + 3000}},
		{"a parked log that finished drops out", func() { finish(s + 1000) }, s + 5000, 100, []int64{s + 3000}},
		{"logs created after the watermark", func() { create(s + 6000) }, s + 7000, 100, []int64{s + 3000, s + 6000}},
		{"limit", nil, s + 7000, 1, []int64{s + 3000}},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		got, err := db.LogsRunning(ctx, st.at, st.limit)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		var times []int64
		for _, l := range got {
			times = append(times, l.TriggerTime)
		}
		if !slices.Equal(times, st.want) {
			t.Fatalf("%s: running at %v, want %v", st.name, times, st.want)
		}
	}
}

// A page whose logs were triggered far apart (a late delivery of one job's
// fire into the page of its second) is still found by a list bounded
// below its latest log, and by the retention: readers look the widest
// recorded page span past their bound.
func TestLogPageWideSpan(t *testing.T) {
	t.Parallel()
	db, ctx := setup(t, dynamostore.Options{}), t.Context()
	const fireAt = 1_795_000_000_000
	late := int64(fireAt + 10*60_000)
	// Two jobs of one shard among 16 share a page of the same fire second.
	other := int64(2)
	for fire.ShardOf(other, 16) != fire.ShardOf(1, 16) {
		other++
	}
	a, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: "j1/t1795000000000/s0", JobID: 1, GroupID: 2,
		TriggerType: xjob.TriggerCron, ScheduledTime: fireAt, TriggerTime: fireAt})
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: fmt.Sprintf("j%d/t1795000000000/s0", other), JobID: other, GroupID: 2,
		TriggerType: xjob.TriggerCron, ScheduledTime: fireAt, TriggerTime: late})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID>>22 != b.ID>>22 || a.ID&15 != b.ID&15 {
		t.Fatalf("logs %d and %d are not in one page", a.ID, b.ID)
	}
	page, err := db.LogList(ctx, driver.LogListParams{To: fireAt + 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Logs) != 1 || page.Logs[0].ID != a.ID {
		t.Fatalf("list up to fire+1s: %+v, want log %d", page.Logs, a.ID)
	}
	page, err = db.LogList(ctx, driver.LogListParams{JobID: other})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Logs) != 1 || page.Logs[0].ID != b.ID {
		t.Fatalf("list of job %d: %+v, want log %d", other, page.Logs, b.ID)
	}
	n, err := db.LogDeleteBefore(ctx, fireAt+1000, 100)
	if err != nil || n != 1 {
		t.Fatalf("delete before fire+1s: %d, %v; want 1", n, err)
	}
	if _, err := db.LogGet(ctx, a.ID); !errors.Is(err, xjob.ErrNotFound) {
		t.Fatalf("log %d after its deletion: %v", a.ID, err)
	}
	if _, err := db.LogGet(ctx, b.ID); err != nil {
		t.Fatalf("log %d after the deletion of an older one in its page: %v", b.ID, err)
	}
}
