package dispatch_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/dispatch"
	"github.com/xjobdev/xjob/pkg/driver"
)

// countingStore counts the reads DispatchMany is meant to share, around
// the real store.
type countingStore struct {
	driver.Store
	mu           sync.Mutex
	jobGet       int
	jobGetMany   int
	jobIDs       []int64 // the ids JobGetMany was asked for
	groupGets    map[int64]int
	registryList int
	writes       map[string]int // write method → calls
}

func (c *countingStore) wrote(method string) {
	c.mu.Lock()
	c.writes[method]++
	c.mu.Unlock()
}

func (c *countingStore) LogCreate(ctx context.Context, l xjob.Log) (xjob.Log, error) {
	c.wrote("LogCreate")
	return c.Store.LogCreate(ctx, l)
}

func (c *countingStore) LogCreateMany(ctx context.Context, ls []xjob.Log) ([]driver.LogCreated, error) {
	c.wrote("LogCreateMany")
	return c.Store.LogCreateMany(ctx, ls)
}

func (c *countingStore) LogTriggered(ctx context.Context, p driver.LogTriggeredParams) error {
	c.wrote("LogTriggered")
	return c.Store.LogTriggered(ctx, p)
}

func (c *countingStore) LogTriggeredMany(ctx context.Context, ps []driver.LogTriggeredParams) ([]error, error) {
	c.wrote("LogTriggeredMany")
	return c.Store.LogTriggeredMany(ctx, ps)
}

func (c *countingStore) ReportAdd(ctx context.Context, d xjob.ReportDay) error {
	c.wrote("ReportAdd")
	return c.Store.ReportAdd(ctx, d)
}

func (c *countingStore) JobGet(ctx context.Context, id int64) (xjob.Job, error) {
	c.mu.Lock()
	c.jobGet++
	c.mu.Unlock()
	return c.Store.JobGet(ctx, id)
}

func (c *countingStore) JobGetMany(ctx context.Context, ids []int64) ([]xjob.Job, error) {
	c.mu.Lock()
	c.jobGetMany++
	c.jobIDs = append(c.jobIDs, ids...)
	c.mu.Unlock()
	return c.Store.JobGetMany(ctx, ids)
}

func (c *countingStore) GroupGet(ctx context.Context, id int64) (xjob.Group, error) {
	c.mu.Lock()
	c.groupGets[id]++
	c.mu.Unlock()
	return c.Store.GroupGet(ctx, id)
}

func (c *countingStore) RegistryList(ctx context.Context, p driver.RegistryListParams) ([]xjob.RegistryEntry, error) {
	c.mu.Lock()
	c.registryList++
	c.mu.Unlock()
	return c.Store.RegistryList(ctx, p)
}

func (c *countingStore) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.jobGet, c.jobGetMany, c.jobIDs, c.groupGets, c.registryList, c.writes = 0, 0, nil, map[int64]int{}, 0, map[string]int{}
}

// executors are shared by the environments a batch test compares, so
// trigger messages (which name addresses) are comparable.
type executors struct{ ok, ok2, fail, override *executor }

func newExecutors(t *testing.T) executors {
	return executors{newExecutor(t, 200), newExecutor(t, 200), newExecutor(t, 500), newExecutor(t, 200)}
}

// mixedBatch stores the jobs of a batch with every kind of task in e and
// returns the tasks by name, in batch order; it also returns the number
// of distinct groups the batch's live tasks read.
func mixedBatch(t *testing.T, e env, ex executors) (names []string, tasks []fire.DispatchTask, groups int) {
	t.Helper()
	ctx := context.Background()
	manual := e.group(t, ex.ok.srv.URL)
	broadcast := e.group(t, ex.ok.srv.URL, ex.ok2.srv.URL)
	failing := e.group(t, ex.fail.srv.URL)
	auto, err := e.db.GroupInsert(ctx, xjob.Group{AppName: "auto-app", Title: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.RegistryUpsert(ctx, xjob.RegistryEntry{Group: xjob.RegistryGroupExecutor, Key: "auto-app",
		Value: ex.ok2.srv.URL, UpdatedAt: t0.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	add := func(name string, task fire.DispatchTask) {
		names, tasks = append(names, name), append(tasks, task)
	}

	a := e.job(t, manual, nil)
	add("first", cronTask(a))
	later := cronTask(a)
	later.Occurrence.FireTime += 1000
	add("same job, next fire", later)
	add("same group, other job", cronTask(e.job(t, manual, nil)))
	add("deleted job", fire.DispatchTask{Occurrence: fire.Occurrence{JobID: 999_999, Type: xjob.TriggerCron, FireTime: 1}})
	edited := cronTask(e.job(t, manual, nil))
	edited.Revision++
	add("edited since planned", edited)
	dup := cronTask(e.job(t, manual, nil))
	if _, err := e.d.Dispatch(ctx, dup); err != nil {
		t.Fatal(err)
	}
	add("duplicate", dup)
	add("broadcast", cronTask(e.job(t, broadcast, func(j *xjob.Job) { j.RouteStrategy = xjob.RouteShardingBroadcast })))
	param := "manual-param"
	add("manual override", fire.DispatchTask{Occurrence: fire.Occurrence{JobID: e.job(t, manual, func(j *xjob.Job) {
		j.TriggerStatus = xjob.StatusStopped
	}).ID, Type: xjob.TriggerManual, Ref: "req-1"}, Param: &param, AddressList: []string{ex.override.srv.URL}})
	add("executor failure", cronTask(e.job(t, failing, nil)))
	add("automatic group", cronTask(e.job(t, auto, nil)))
	add("automatic group, other job", cronTask(e.job(t, auto, func(j *xjob.Job) { j.RouteStrategy = xjob.RouteLast })))
	inflight := cronTask(e.job(t, manual, nil))
	if _, err := e.db.LogCreate(ctx, xjob.Log{OccurrenceID: inflight.Occurrence.ID(0), JobID: inflight.Occurrence.JobID,
		TriggerType: xjob.TriggerCron, ScheduledTime: t0.UnixMilli(), TriggerTime: t0.UnixMilli(),
		ClaimUntil: t0.Add(time.Minute).UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	add("in flight elsewhere", inflight)
	add("malformed", fire.DispatchTask{Occurrence: fire.Occurrence{JobID: 1, Type: "WHENEVER"}})
	return names, tasks, 4
}

// result is what a task's outcome means, without store-assigned ids.
type result struct {
	Dropped    bool
	Reason     string
	Duplicates int
	Err        string
	Logs       []logView
}

type logView struct {
	OccurrenceID, Address, Param, Sharding, Msg string
	Code                                        int
}

func view(out dispatch.Outcome, err error) result {
	r := result{Dropped: out.Dropped, Reason: out.Reason, Duplicates: out.Duplicates}
	var verr *xjob.ValidationError
	switch {
	case err == nil:
	case errors.As(err, &verr):
		r.Err = "invalid"
	case errors.Is(err, dispatch.ErrInFlight):
		r.Err = "in flight"
	default:
		r.Err = "other: " + err.Error()
	}
	for _, l := range out.Logs {
		r.Logs = append(r.Logs, logView{OccurrenceID: l.OccurrenceID, Address: l.ExecutorAddress, Param: l.ExecutorParam,
			Sharding: l.ExecutorShardingParam, Msg: l.TriggerMsg, Code: l.TriggerCode})
	}
	return r
}

func TestDispatchManyEqualsDispatchOneByOne(t *testing.T) {
	t.Parallel()
	ex := newExecutors(t)
	ctx := context.Background()

	one := setup(t)
	names, tasks, _ := mixedBatch(t, one, ex)
	want := make([]result, len(tasks))
	for i, task := range tasks {
		want[i] = view(one.d.Dispatch(ctx, task))
	}

	many := setup(t)
	_, tasks, _ = mixedBatch(t, many, ex)
	outs, errs := many.d.DispatchMany(ctx, tasks)
	if len(outs) != len(tasks) || len(errs) != len(tasks) {
		t.Fatalf("DispatchMany returned %d outcomes and %d errors for %d tasks", len(outs), len(errs), len(tasks))
	}
	for i, name := range names {
		t.Run(name, func(t *testing.T) {
			if got := view(outs[i], errs[i]); !reflect.DeepEqual(got, want[i]) {
				t.Errorf("DispatchMany:\n%+v\nDispatch:\n%+v", got, want[i])
			}
		})
	}
	// The batch covers what it claims to.
	kinds := map[string]func(r result) bool{
		"dropped":   func(r result) bool { return r.Dropped },
		"duplicate": func(r result) bool { return r.Duplicates > 0 },
		"broadcast": func(r result) bool { return len(r.Logs) == 2 },
		"failed":    func(r result) bool { return len(r.Logs) == 1 && r.Logs[0].Code == xjob.CodeFail },
		"in flight": func(r result) bool { return r.Err == "in flight" },
		"invalid":   func(r result) bool { return r.Err == "invalid" },
		"override":  func(r result) bool { return len(r.Logs) == 1 && r.Logs[0].Param == "manual-param" },
	}
	for kind, is := range kinds {
		found := false
		for _, r := range want {
			found = found || is(r)
		}
		if !found {
			t.Errorf("the mixed batch has no %s task", kind)
		}
	}
}

func TestDispatchManyReadsEachJobAndGroupOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counter := &countingStore{groupGets: map[int64]int{}, writes: map[string]int{}}
	e := setupWith(t, func(s driver.Store) driver.Store { counter.Store = s; return counter })
	_, tasks, groups := mixedBatch(t, e, newExecutors(t))
	counter.reset()
	if _, errs := e.d.DispatchMany(ctx, tasks); len(errs) != len(tasks) {
		t.Fatalf("%d errors for %d tasks", len(errs), len(tasks))
	}
	counter.mu.Lock()
	defer counter.mu.Unlock()
	if counter.jobGetMany != 1 || counter.jobGet != 0 {
		t.Errorf("job reads: %d JobGetMany, %d JobGet; want one JobGetMany", counter.jobGetMany, counter.jobGet)
	}
	if len(counter.groupGets) != groups {
		t.Errorf("read %d groups, want %d", len(counter.groupGets), groups)
	}
	for id, n := range counter.groupGets {
		if n != 1 {
			t.Errorf("group %d read %d times, want once", id, n)
		}
	}
	if counter.registryList != 1 {
		t.Errorf("registry listed %d times, want once (one automatic group)", counter.registryList)
	}
}

// A batch is one unit of durable work: its occurrences are claimed in
// one LogCreateMany and its replies recorded in one LogTriggeredMany,
// with one report update per day and group, however many tasks and
// broadcast shards it has;
// delivered again, it reaches no executor twice.
func TestDispatchManyWritesOncePerBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counter := &countingStore{groupGets: map[int64]int{}, writes: map[string]int{}}
	e := setupWith(t, func(s driver.Store) driver.Store { counter.Store = s; return counter })
	ex := newExecutors(t)
	_, tasks, _ := mixedBatch(t, e, ex)
	counter.reset()
	outs, _ := e.d.DispatchMany(ctx, tasks)
	logs := 0
	counters := map[string]bool{} // the report's (day, group) counters touched
	for _, o := range outs {
		logs += len(o.Logs)
		for _, l := range o.Logs {
			counters[time.UnixMilli(l.TriggerTime).UTC().Format(time.DateOnly)+"/"+strconv.FormatInt(l.GroupID, 10)] = true
		}
	}
	if logs < 3 {
		t.Fatalf("the mixed batch triggered %d logs; the test needs several", logs)
	}
	counter.mu.Lock()
	want := map[string]int{"LogCreateMany": 1, "LogTriggeredMany": 1, "ReportAdd": len(counters)}
	if !reflect.DeepEqual(counter.writes, want) {
		t.Errorf("writes for %d logs: %v, want %v", logs, counter.writes, want)
	}
	counter.mu.Unlock()

	runs := len(ex.ok.got()) + len(ex.ok2.got()) + len(ex.fail.got()) + len(ex.override.got())
	counter.reset()
	outs, errs := e.d.DispatchMany(ctx, tasks)
	for i, o := range outs {
		if len(o.Logs) != 0 || (errs[i] != nil && !errors.As(errs[i], new(*xjob.ValidationError)) && !errors.Is(errs[i], dispatch.ErrInFlight)) {
			t.Errorf("redelivered task %d: %+v, %v; want no trigger", i, o, errs[i])
		}
	}
	if again := len(ex.ok.got()) + len(ex.ok2.got()) + len(ex.fail.got()) + len(ex.override.got()); again != runs {
		t.Errorf("executors ran %d times after the redelivery, %d before", again, runs)
	}
	counter.mu.Lock()
	defer counter.mu.Unlock()
	if counter.writes["LogTriggeredMany"] != 0 || counter.writes["LogCreateMany"] != 1 {
		t.Errorf("redelivery writes: %v, want one LogCreateMany and nothing else", counter.writes)
	}
}

// triggeredFails is a store whose LogTriggeredMany fails as a whole, as
// when the database goes away between the executor calls and the record.
type triggeredFails struct{ driver.Store }

func (triggeredFails) LogTriggeredMany(context.Context, []driver.LogTriggeredParams) ([]error, error) {
	return nil, errors.New("connection refused")
}

// A batch whose replies cannot be recorded fails each of its tasks with
// the store's error; the dispatcher does not panic (it indexed the
// missing per-reply outcomes from the second task on, which took an
// xjob server node down when its database restarted).
func TestDispatchManyRecordFailureFailsEachTask(t *testing.T) {
	t.Parallel()
	e := setupWith(t, func(s driver.Store) driver.Store { return triggeredFails{s} })
	ex := newExecutor(t, 200)
	g := e.group(t, ex.srv.URL)
	tasks := []fire.DispatchTask{cronTask(e.job(t, g, nil)), cronTask(e.job(t, g, nil)), cronTask(e.job(t, g, nil))}
	_, errs := e.d.DispatchMany(context.Background(), tasks)
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("task %d: %v, want the record's failure", i, err)
		}
	}
}

func TestDispatchManyStoreFailureFailsEveryLiveTask(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ex := newExecutor(t, 200)
	g := e.group(t, ex.srv.URL)
	tasks := []fire.DispatchTask{cronTask(e.job(t, g, nil)), cronTask(e.job(t, g, nil)),
		{Occurrence: fire.Occurrence{JobID: 1, Type: "WHENEVER"}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, errs := e.d.DispatchMany(ctx, tasks)
	var verr *xjob.ValidationError
	for i, err := range errs[:2] {
		if err == nil || e.d.Dispose(err, 1).Ack {
			t.Errorf("task %d: err %v; want a store error to retry", i, err)
		}
	}
	if !errors.As(errs[2], &verr) {
		t.Errorf("malformed task: err %v, want a ValidationError", errs[2])
	}
	if n := len(ex.got()); n != 0 {
		t.Errorf("executor ran %d tasks after a failed read", n)
	}
}

// An occurrence delivered twice in one batch (SQS at-least-once) reaches
// its executor once; the second copy is a duplicate, not a task in flight
// elsewhere to retry later.
func TestDispatchManyOccurrenceTwiceInOneBatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ex := newExecutor(t, 200)
	task := cronTask(e.job(t, e.group(t, ex.srv.URL), nil))
	outs, errs := e.d.DispatchMany(context.Background(), []fire.DispatchTask{task, task})
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("errors %v", errs)
	}
	if len(outs[0].Logs) != 1 || outs[1].Duplicates != 1 || len(outs[1].Logs) != 0 {
		t.Fatalf("outcomes %+v, want one trigger and one duplicate", outs)
	}
	if n := len(ex.got()); n != 1 {
		t.Fatalf("executor ran %d times, want once", n)
	}
}

// A batch given the jobs its caller just read (the ring's re-check) reads
// only the others (here: the deleted job's), and triggers exactly as
// DispatchMany does.
func TestLoadKnownReadsOnlyUnknownJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ex := newExecutors(t)
	ref := setup(t)
	names, refTasks, _ := mixedBatch(t, ref, ex)
	refOuts, refErrs := ref.d.DispatchMany(ctx, refTasks)

	counter := &countingStore{groupGets: map[int64]int{}, writes: map[string]int{}}
	e := setupWith(t, func(s driver.Store) driver.Store { counter.Store = s; return counter })
	_, tasks, _ := mixedBatch(t, e, ex)
	var ids []int64
	for _, task := range tasks {
		ids = append(ids, task.Occurrence.JobID)
	}
	jobs, err := e.db.JobGetMany(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	known := map[int64]*xjob.Job{}
	for i := range jobs {
		known[jobs[i].ID] = &jobs[i]
	}
	var unknown []int64
	for _, task := range tasks {
		if _, ok := known[task.Occurrence.JobID]; !ok && task.Validate() == nil && !slices.Contains(unknown, task.Occurrence.JobID) {
			unknown = append(unknown, task.Occurrence.JobID)
		}
	}
	if len(unknown) == 0 {
		t.Fatal("the mixed batch has no task of a deleted job")
	}
	counter.reset()
	idx := make([]int, len(tasks))
	for i := range idx {
		idx[i] = i
	}
	outs, errs := e.d.LoadKnown(ctx, tasks, known).Run(ctx, idx, nil)
	counter.mu.Lock()
	if counter.jobGet != 0 || counter.jobGetMany != 1 || !slices.Equal(counter.jobIDs, unknown) {
		t.Errorf("job reads: %d JobGet, %d JobGetMany of %v; want one JobGetMany of %v", counter.jobGet, counter.jobGetMany, counter.jobIDs, unknown)
	}
	counter.mu.Unlock()
	for i, name := range names {
		if got, want := view(outs[i], errs[i]), view(refOuts[i], refErrs[i]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: LoadKnown:\n%+v\nDispatchMany:\n%+v", name, got, want)
		}
	}
}
