package dynamostore_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// requestAPI counts a store's Queries (of the parked list and of the time
// index apart) and UpdateItems, and runs onMark once, before forwarding
// the first UpdateItem that marks the parked list empty.
type requestAPI struct {
	*dynamodb.Client
	parkedQueries, indexQueries, updates atomic.Int64
	onMark                               func()
	once                                 sync.Once
}

func (a *requestAPI) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	switch {
	case in.IndexName != nil:
		a.indexQueries.Add(1)
	case queriesList(in, "r"):
		a.parkedQueries.Add(1)
	}
	return a.Client.Query(ctx, in, opts...)
}

func (a *requestAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	a.updates.Add(1)
	for _, name := range in.ExpressionAttributeNames {
		if name == "parkEmpty" && a.onMark != nil {
			a.once.Do(a.onMark)
		}
	}
	return a.Client.UpdateItem(ctx, in, opts...)
}

// queriesList says whether in reads a partition of the list kind ("f"
// failed, "r" parked): its key condition names the partition kind<n>.
func queriesList(in *dynamodb.QueryInput, kind string) bool {
	for _, v := range in.ExpressionAttributeValues {
		if sv, ok := v.(*types.AttributeValueMemberS); ok && strings.HasPrefix(sv.Value, kind) {
			_, err := strconv.Atoi(strings.TrimPrefix(sv.Value, kind))
			return err == nil
		}
	}
	return false
}

// runningFixture is a store (through a requestAPI) and a way to create a
// running log at a trigger time.
type runningFixture struct {
	t    *testing.T
	opts dynamostore.Options
	api  *requestAPI
	db   *dynamostore.DB
}

func newRunningFixture(t *testing.T) *runningFixture {
	t.Helper()
	f := &runningFixture{t: t, opts: dynamostore.Options{LogPartitions: 4,
		Tables: dynamostore.TablesWithPrefix(emulator.UniqueName("t")), Clock: clock.NewFake(time.UnixMilli(testNow))}}
	f.db, f.api = f.store()
	if err := f.db.CreateTables(t.Context()); err != nil {
		t.Fatal(err)
	}
	return f
}

// store is another store on the fixture's tables (another invocation).
func (f *runningFixture) store() (*dynamostore.DB, *requestAPI) {
	a := &requestAPI{Client: emulator.DynamoDB(f.t)}
	db, err := dynamostore.New(a, f.opts)
	if err != nil {
		f.t.Fatal(err)
	}
	return db, a
}

func (f *runningFixture) running(db *dynamostore.DB, job, at int64) xjob.Log {
	f.t.Helper()
	ctx := f.t.Context()
	l, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: "j" + strconv.FormatInt(job, 10) + "/t" + strconv.FormatInt(at, 10) + "/s0",
		JobID: job, GroupID: 1, TriggerType: xjob.TriggerCron, ScheduledTime: at, TriggerTime: at})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := db.LogTriggered(ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: "http://e", TriggerCode: xjob.CodeSuccess}); err != nil {
		f.t.Fatal(err)
	}
	return l
}

func ids(logs []xjob.Log) []int64 {
	out := make([]int64, len(logs))
	for i, l := range logs {
		out[i] = l.ID
	}
	slices.Sort(out)
	return out
}

// An idle deployment's lost check reads the parked list once, marks it
// empty and from then on reads only the time index, writing nothing;
// a park makes the next calls walk the list again until its logs finish.
func TestLogsRunningIdleSkipsParkedList(t *testing.T) {
	t.Parallel()
	f := newRunningFixture(t)
	ctx := t.Context()
	const s = testNow - 600_000
	var l xjob.Log
	steps := []struct {
		name                         string
		before                       func()
		at                           int64
		want                         int // running logs returned
		parkedQueries, updates, time int64
	}{
		{"first call walks the list and marks it empty", nil, s, 0, 4, 1, 16},
		{"idle: the time index only, no write", nil, s + 60_000, 0, 0, 0, 16},
		{"idle again", nil, s + 120_000, 0, 0, 0, 16},
		{"a running log is parked: bump and watermark", func() { l = f.running(f.db, 1, s+130_000) }, s + 180_000, 1, 0, 2, 16},
		{"the parked list is walked while it holds the log", nil, s + 240_000, 1, 4, 0, 16},
		{"its log finished: dropped, list marked empty", func() {
			if _, err := f.db.LogFinish(ctx, driver.LogFinishParams{ID: l.ID, HandleTime: s + 250_000, HandleCode: xjob.CodeSuccess}); err != nil {
				t.Fatal(err)
			}
		}, s + 300_000, 0, 4, 1, 16},
		{"idle once more", nil, s + 360_000, 0, 0, 0, 16},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		p0, u0, i0 := f.api.parkedQueries.Load(), f.api.updates.Load(), f.api.indexQueries.Load()
		got, err := f.db.LogsRunning(ctx, st.at, 100)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if len(got) != st.want {
			t.Errorf("%s: %d running logs, want %d", st.name, len(got), st.want)
		}
		p, u, i := f.api.parkedQueries.Load()-p0, f.api.updates.Load()-u0, f.api.indexQueries.Load()-i0
		if p != st.parkedQueries || u != st.updates || i != st.time {
			t.Errorf("%s: parked-list Queries %d, UpdateItems %d, time index Queries %d; want %d, %d, %d",
				st.name, p, u, i, st.parkedQueries, st.updates, st.time)
		}
	}
}

// A call that parks a log while another is marking the list empty (after
// that one walked it) leaves the list walked by the next call, which finds
// the log although the watermark has passed its page.
func TestLogsRunningParkDuringEmptyMark(t *testing.T) {
	t.Parallel()
	f := newRunningFixture(t)
	ctx := t.Context()
	const s = testNow - 600_000
	other, _ := f.store()
	l := f.running(f.db, 1, s+1000)
	f.api.onMark = func() {
		got, err := other.LogsRunning(ctx, s+5000, 100) // parks l, moves the watermark past it
		if err != nil || !slices.Equal(ids(got), []int64{l.ID}) {
			t.Errorf("concurrent call: %v %v, want log %d", ids(got), err, l.ID)
		}
	}
	if got, err := f.db.LogsRunning(ctx, s, 100); err != nil || len(got) != 0 {
		t.Fatalf("call behind the log: %v %v", ids(got), err)
	}
	p0 := f.api.parkedQueries.Load()
	got, err := f.db.LogsRunning(ctx, s+6000, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), []int64{l.ID}) {
		t.Fatalf("running %v, want the parked log %d", ids(got), l.ID)
	}
	if f.api.parkedQueries.Load() == p0 {
		t.Fatal("the parked list was not walked")
	}
}

// Concurrent lost checks (several invocations) while logs are created:
// every running log is found by a later call, however the parks, walks
// and empty marks interleaved.
func TestLogsRunningConcurrentParks(t *testing.T) {
	t.Parallel()
	f := newRunningFixture(t)
	ctx := t.Context()
	const s = testNow - 600_000
	const workers, rounds = 3, 6
	var (
		mu   sync.Mutex
		want []int64
		wg   sync.WaitGroup
	)
	for w := range workers {
		db, _ := f.store()
		wg.Go(func() {
			for r := range rounds {
				at := s + int64(r)*10_000 + int64(w)*1000
				l := f.running(db, int64(w*rounds+r+1), at)
				mu.Lock()
				want = append(want, l.ID)
				mu.Unlock()
				if _, err := db.LogsRunning(ctx, at+500, 100); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, step := range []string{"first", "second"} {
		got, err := f.db.LogsRunning(ctx, s+int64(rounds)*10_000, 1000)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		if !slices.Equal(ids(got), want) {
			t.Fatalf("%s call after: running %v, want %v", step, ids(got), want)
		}
	}
}
