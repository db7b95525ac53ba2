package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/dispatch"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/internal/scheduler/route"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// sinkFixture is a dispatcher on SQLite whose one manual group's executor
// is exec, and a maker of tasks for fresh jobs of that group.
type sinkFixture struct {
	ctx  context.Context
	t0   time.Time
	clk  *clock.Fake
	db   *sqlitestore.DB
	disp *dispatch.Dispatcher
	// fenced is disp with the store as its Fence (a cluster node's).
	fenced *dispatch.Dispatcher
	quiet  *slog.Logger
	task   func() fire.DispatchTask
}

func newSinkFixture(t *testing.T, exec http.HandlerFunc) *sinkFixture {
	t.Helper()
	ctx := context.Background()
	t0 := time.UnixMilli(1_800_000_000_000).UTC()
	clk := clock.NewFake(t0)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "x.db"), sqlitestore.Options{Shards: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ex := httptest.NewServer(exec)
	t.Cleanup(ex.Close)
	client, err := execclient.New(execclient.Options{ConnectTimeout: time.Second, ReadTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(registry.Config{Store: db, Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	cb, err := callback.New(callback.Config{Store: db, Queues: db, Alarmer: alarm.Log{Logger: quiet}, Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	cfg := dispatch.Config{
		Store: db, Executors: client,
		Router: route.New(route.Options{Clock: clk, Prober: client}), Addresses: reg, Completer: cb, Clock: clk, Logger: quiet,
	}
	disp, err := dispatch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Fence = db
	fenced, err := dispatch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := db.GroupInsert(ctx, xjob.Group{AppName: "demo-app", Title: "demo", AddressType: xjob.AddressManual, AddressList: []string{ex.URL}})
	if err != nil {
		t.Fatal(err)
	}
	f := &sinkFixture{ctx: ctx, t0: t0, clk: clk, db: db, disp: disp, fenced: fenced, quiet: quiet}
	f.task = func() fire.DispatchTask {
		j := xjob.Job{GroupID: g.ID, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "60",
			Handler: "demo", TriggerStatus: xjob.StatusRunning, TriggerNextTime: t0.Add(time.Hour).UnixMilli()}
		j.ApplyDefaults()
		j, err := db.JobInsert(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		return fire.DispatchTask{Occurrence: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerCron, FireTime: t0.UnixMilli()}, Revision: j.Revision}
	}
	return f
}

// countRuns is an executor that accepts every /run, counting them in runs.
func countRuns(runs *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		_, _ = io.WriteString(w, `{"code":200}`)
	}
}

// queued receives what the sink left on lane's durable queue (visible now).
func (f *sinkFixture) queued(t *testing.T, lane fire.Lane) []driver.Delivery[fire.DispatchTask] {
	t.Helper()
	ds, err := f.db.Dispatch(lane).Receive(f.ctx, driver.ReceiveParams{Max: 10, Visibility: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// A ring hand-off is one batch: the tasks that trigger run on the lane's
// workers, a task in flight elsewhere goes to the durable lane queue after
// the claim TTL, and tasks that no longer apply end there.
func TestLaneSinkDeliversABatch(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	f := newSinkFixture(t, func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		_, _ = io.WriteString(w, `{"code":200}`)
	})
	ctx, t0, clk, db, disp, quiet, task := f.ctx, f.t0, f.clk, f.db, f.disp, f.quiet, f.task
	tasks := []fire.DispatchTask{task(), task(), task(), task(),
		{Occurrence: fire.Occurrence{JobID: 999_999, Type: xjob.TriggerCron, FireTime: t0.UnixMilli()}}}
	inflight := tasks[3]
	if _, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: inflight.Occurrence.ID(0), JobID: inflight.Occurrence.JobID,
		TriggerType: xjob.TriggerCron, ScheduledTime: t0.UnixMilli(), TriggerTime: t0.UnixMilli(),
		ClaimUntil: t0.Add(time.Minute).UnixMilli()}); err != nil {
		t.Fatal(err)
	}

	sink, err := dispatch.NewLaneSink(disp, dispatch.LaneSinkOptions{Base: ctx, Queues: db, Logger: quiet,
		Calls: map[fire.Lane]int{fire.LaneFast: 2, fire.LaneSlow: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Deliver(ctx, fire.LaneFast, tasks); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("executor ran %d tasks, want 3", n)
	}
	if ds := f.queued(t, fire.LaneFast); len(ds) != 0 {
		t.Fatalf("queued %d tasks visible at once, want none before the claim TTL", len(ds))
	}
	clk.Advance(31 * time.Second)
	if ds := f.queued(t, fire.LaneFast); len(ds) != 1 || ds[0].Msg.Occurrence != inflight.Occurrence {
		t.Fatalf("queued %+v, want only the task in flight elsewhere", ds)
	}
}

// noticeHandler is a slog handler that closes ch at the first record whose
// message is msg: how a test learns that the sink took a decision.
type noticeHandler struct {
	msg  string
	ch   chan struct{}
	once *sync.Once
}

func (h noticeHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h noticeHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.ch) })
	}
	return nil
}
func (h noticeHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h noticeHandler) WithGroup(string) slog.Handler      { return h }

// A saturated lane (no chunk slot frees within the spill time) must not
// hold the ring's bucket: the tasks not started go to the durable lane
// queue, visible at once, while the chunk already started completes.
func TestLaneSinkSpillsWhenSaturated(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var runs atomic.Int64
	f := newSinkFixture(t, func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		<-release
		_, _ = io.WriteString(w, `{"code":200}`)
	})
	saturated := make(chan struct{})
	log := slog.New(noticeHandler{msg: "dispatch lane saturated; queueing", ch: saturated, once: &sync.Once{}})
	sink, err := dispatch.NewLaneSink(f.disp, dispatch.LaneSinkOptions{Base: f.ctx, Queues: f.db, Logger: log,
		Calls: map[fire.Lane]int{fire.LaneFast: 4}, Chunk: 1, Chunks: 1, SpillAfter: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tasks := []fire.DispatchTask{f.task(), f.task(), f.task()}
	done := make(chan error, 1)
	go func() { done <- sink.Deliver(f.ctx, fire.LaneFast, tasks) }()
	<-saturated // the first chunk holds the only slot
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("executor ran %d tasks, want the first chunk's 1", n)
	}
	ds := f.queued(t, fire.LaneFast)
	var got []fire.Occurrence
	for _, d := range ds {
		got = append(got, d.Msg.Occurrence)
	}
	if want := []fire.Occurrence{tasks[1].Occurrence, tasks[2].Occurrence}; !slices.Equal(got, want) {
		t.Errorf("queued %v, want the two tasks not started %v", got, want)
	}
}

// With no Base (the AWS ring function), a chunk runs on its Deliver's
// context without the cancellation: when that context ends mid-dispatch,
// the started chunk is still claimed, called and recorded (cutting it
// after the executor call would leave a claim whose take-over could run
// the executor twice), and Deliver reports the tasks it never started so
// that the bucket comes back.
func TestLaneSinkFinishesStartedChunkAfterCancel(t *testing.T) {
	t.Parallel()
	called := make(chan struct{}, 4)
	release := make(chan struct{})
	f := newSinkFixture(t, func(w http.ResponseWriter, r *http.Request) {
		called <- struct{}{}
		<-release
		_, _ = io.WriteString(w, `{"code":200}`)
	})
	sink, err := dispatch.NewLaneSink(f.disp, dispatch.LaneSinkOptions{Queues: f.db, Logger: f.quiet,
		Calls: map[fire.Lane]int{fire.LaneFast: 4}, Chunk: 1, Chunks: 1, SpillAfter: time.Minute, SpillBudget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	tasks := []fire.DispatchTask{f.task(), f.task()}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- sink.Deliver(ctx, fire.LaneFast, tasks) }()
	<-called // the first chunk is at the executor; the second waits for the slot
	cancel()
	close(release)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Deliver = %v, want the cancellation reported (a task was never started)", err)
	}
	logs := func(task fire.DispatchTask) []xjob.Log {
		page, err := f.db.LogList(f.ctx, driver.LogListParams{JobID: task.Occurrence.JobID, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return page.Logs
	}
	if ls := logs(tasks[0]); len(ls) != 1 || ls[0].TriggerCode != 200 {
		t.Errorf("started task's logs %+v: want one, recorded as triggered (200)", ls)
	}
	if ls := logs(tasks[1]); len(ls) != 0 {
		t.Errorf("task never started has logs %+v, want none", ls)
	}
	if ds := f.queued(t, fire.LaneFast); len(ds) != 0 {
		t.Errorf("queued %d tasks, want none: the bucket comes back instead", len(ds))
	}
}

// A lane the sink does not serve is an error, never a silent drop.
func TestLaneSinkRefusesUnservedLane(t *testing.T) {
	t.Parallel()
	f := newSinkFixture(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"code":200}`) })
	sink, err := dispatch.NewLaneSink(f.disp, dispatch.LaneSinkOptions{Queues: f.db, Logger: f.quiet,
		Calls: map[fire.Lane]int{fire.LaneFast: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Deliver(f.ctx, fire.LaneSlow, []fire.DispatchTask{f.task()}); err == nil {
		t.Fatal("Deliver on an unserved lane succeeded")
	}
	if _, err := dispatch.NewLaneSink(f.disp, dispatch.LaneSinkOptions{Queues: f.db}); err == nil {
		t.Fatal("NewLaneSink without lanes succeeded")
	}
}

// A prepared hand-off of at most ClaimAhead tasks is claimed when it is
// prepared: its logs exist, claimed until ClaimTTL past the instant and
// stamped with the instant, before any executor call; at the instant only
// the calls and the record remain. A larger one has its first ClaimAhead
// tasks claimed ahead, the rest at the instant; one prepared when its
// instant has come claims nothing ahead.
func TestLaneSinkClaimsPreparedHandOffAhead(t *testing.T) {
	t.Parallel()
	runs := new(atomic.Int64)
	f := newSinkFixture(t, countRuns(runs))
	at := f.t0.Add(time.Second)
	sink, err := dispatch.NewLaneSink(f.disp, dispatch.LaneSinkOptions{Base: f.ctx, Queues: f.db, Logger: f.quiet,
		Calls: map[fire.Lane]int{fire.LaneFast: 2}, Chunk: 2, ClaimAhead: 3})
	if err != nil {
		t.Fatal(err)
	}
	handOffAt := func(n int, at time.Time) []fire.DispatchTask {
		tasks := make([]fire.DispatchTask, n)
		for i := range tasks {
			tasks[i] = f.task()
			tasks[i].Occurrence.FireTime = at.UnixMilli()
		}
		return tasks
	}
	handOff := func(n int) []fire.DispatchTask { return handOffAt(n, at) }
	logs := func(tasks []fire.DispatchTask) []xjob.Log {
		var out []xjob.Log
		for _, task := range tasks {
			page, err := f.db.LogList(f.ctx, driver.LogListParams{JobID: task.Occurrence.JobID, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, page.Logs...)
		}
		return out
	}
	small, large, due := handOff(3), handOff(4), handOffAt(2, f.t0)
	runSmall := sink.Prepare(f.ctx, fire.LaneFast, small, nil)
	runLarge := sink.Prepare(f.ctx, fire.LaneFast, large, nil)
	runDue := sink.Prepare(f.ctx, fire.LaneFast, due, nil)
	if n := runs.Load(); n != 0 {
		t.Fatalf("executor called %d times while preparing, want 0", n)
	}
	claimed := logs(small)
	if len(claimed) != 3 {
		t.Fatalf("small hand-off: %d logs after Prepare, want 3 claimed ahead", len(claimed))
	}
	for _, l := range claimed {
		if l.TriggerTime != at.UnixMilli() || l.ClaimUntil != at.Add(30*time.Second).UnixMilli() || l.TriggerCode != 0 {
			t.Errorf("claimed ahead: trigger time %d, claim until %d, code %d; want the instant %d, claimed 30 s past it, not triggered",
				l.TriggerTime, l.ClaimUntil, l.TriggerCode, at.UnixMilli())
		}
	}
	if ls := logs(large); len(ls) != 3 {
		t.Fatalf("large hand-off: %d logs after Prepare, want its first 3 (ClaimAhead) claimed ahead, the 4th not", len(ls))
	}
	if ls := logs(due); len(ls) != 0 {
		t.Fatalf("hand-off prepared at its instant: %d logs after Prepare, want none (its calls must not wait for claims)", len(ls))
	}
	if err := runDue(f.ctx); err != nil {
		t.Fatalf("due hand-off: %v", err)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("executor ran %d tasks of the due hand-off, want 2", n)
	}
	runs.Store(0)
	f.clk.Set(at)
	for name, run := range map[string]func(context.Context) error{"small": runSmall, "large": runLarge} {
		if err := run(f.ctx); err != nil {
			t.Fatalf("%s hand-off: %v", name, err)
		}
	}
	if n := runs.Load(); n != 7 {
		t.Errorf("executor ran %d tasks, want 7", n)
	}
	for _, l := range logs(append(small, large...)) {
		if l.TriggerCode != xjob.CodeSuccess || l.TriggerTime != at.UnixMilli() {
			t.Errorf("log %d: code %d, trigger time %d; want 200 at the instant %d", l.ID, l.TriggerCode, l.TriggerTime, at.UnixMilli())
		}
	}
	if ds := f.queued(t, fire.LaneFast); len(ds) != 0 {
		t.Errorf("queued %d tasks, want none", len(ds))
	}
}

// A hand-off claimed ahead whose process never runs it (it died between)
// loses no fire and runs none twice: the bucket's next delivery finds the
// claims held until they expire, then takes them over and calls the
// executor once.
func TestLaneSinkAbandonedClaimIsTakenOver(t *testing.T) {
	t.Parallel()
	runs := new(atomic.Int64)
	f := newSinkFixture(t, countRuns(runs))
	at := f.t0.Add(time.Second)
	opts := dispatch.LaneSinkOptions{Base: f.ctx, Queues: f.db, Logger: f.quiet,
		Calls: map[fire.Lane]int{fire.LaneFast: 2}, ClaimAhead: 10}
	dead, err := dispatch.NewLaneSink(f.disp, opts)
	if err != nil {
		t.Fatal(err)
	}
	task := f.task()
	task.Occurrence.FireTime = at.UnixMilli()
	_ = dead.Prepare(f.ctx, fire.LaneFast, []fire.DispatchTask{task}, nil) // never run

	next, err := dispatch.NewLaneSink(f.disp, opts)
	if err != nil {
		t.Fatal(err)
	}
	f.clk.Set(at.Add(time.Second))
	if err := next.Deliver(f.ctx, fire.LaneFast, []fire.DispatchTask{task}); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("executor ran %d times while the claim was held, want 0", n)
	}
	f.clk.Set(at.Add(31 * time.Second))
	ds := f.queued(t, fire.LaneFast)
	if len(ds) != 1 || ds[0].Msg.Occurrence != task.Occurrence {
		t.Fatalf("queued %+v, want the held task back once its claim expired", ds)
	}
	if err := next.Deliver(f.ctx, fire.LaneFast, []fire.DispatchTask{ds[0].Msg}); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("executor ran %d times after the take-over, want 1", n)
	}
}

// runsByLog is an executor that counts each log id's /run calls, and has
// no log file of any run (/log fails), so that a take-over asks it and
// calls /run again, as a real executor that never got the run would.
func runsByLog(t *testing.T) (http.HandlerFunc, func() map[int64]int) {
	var (
		mu   sync.Mutex
		runs = map[int64]int{}
	)
	h := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/log" {
			_, _ = io.WriteString(w, `{"code":500,"msg":"no such log"}`)
			return
		}
		var p struct {
			LogID int64 `json:"logId"`
		}
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.LogID == 0 {
			t.Errorf("bad /run: %v", err)
		}
		mu.Lock()
		runs[p.LogID]++
		mu.Unlock()
		_, _ = io.WriteString(w, `{"code":200}`)
	}
	return h, func() map[int64]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(runs)
	}
}

// A cluster node claims a hand-off ahead of its second; before the
// second, the other nodes see it leave and release its claims (here the
// store's ReleaseClaims, which ends every untriggered claim as
// ReleaseNodeClaims ends one node's). Whether another node then takes
// the fires over at the second (taken) or nobody has yet, the executor
// runs each fire once: with a Fence the node marks its claims as calling
// at the second, the mark keeps none of the ended ones, and it leaves
// them (their tasks come back, find them triggered or take them over).
// Trusting its claims, the node calls what the other took over: the
// duplicate TestClusterOnPostgres saw.
func TestLaneSinkFenceLeavesReleasedClaims(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fence bool
		taken bool // another node takes the fires over at the second
		want  int  // /run calls per log
	}{
		{"fenced, taken over", true, true, 1},
		{"fenced, released only", true, false, 1},
		{"trusted, taken over", false, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			exec, runs := runsByLog(t)
			f := newSinkFixture(t, exec)
			at := f.t0.Add(time.Second)
			opts := dispatch.LaneSinkOptions{Base: f.ctx, Queues: f.db, Logger: f.quiet,
				Calls: map[fire.Lane]int{fire.LaneFast: 2}, Chunk: 2, ClaimAhead: 10}
			disp := f.disp
			if tc.fence {
				disp = f.fenced
			}
			leaving, err := dispatch.NewLaneSink(disp, opts)
			if err != nil {
				t.Fatal(err)
			}
			tasks := make([]fire.DispatchTask, 3)
			for i := range tasks {
				tasks[i] = f.task()
				tasks[i].Occurrence.FireTime = at.UnixMilli()
			}
			run := leaving.Prepare(f.ctx, fire.LaneFast, tasks, nil)
			if _, err := f.db.ReleaseClaims(f.ctx); err != nil {
				t.Fatal(err)
			}
			f.clk.Set(at)
			if tc.taken {
				other, err := dispatch.NewLaneSink(f.disp, opts)
				if err != nil {
					t.Fatal(err)
				}
				if err := other.Deliver(f.ctx, fire.LaneFast, tasks); err != nil {
					t.Fatal(err)
				}
			}
			if err := run(f.ctx); err != nil {
				t.Fatal(err)
			}
			// What the leaving node left comes back after InFlightRetry
			// (the claim TTL here) and ends: dropped as triggered, or
			// taken over and run.
			f.clk.Set(at.Add(31 * time.Second))
			if ds := f.queued(t, fire.LaneFast); len(ds) > 0 {
				if !tc.fence {
					t.Fatalf("trusted claims queued %d tasks, want none", len(ds))
				}
				back := make([]fire.DispatchTask, len(ds))
				for i, d := range ds {
					back[i] = d.Msg
				}
				if err := leaving.Deliver(f.ctx, fire.LaneFast, back); err != nil {
					t.Fatal(err)
				}
			}
			got := runs()
			if len(got) != len(tasks) {
				t.Errorf("executor ran %d logs, want %d: %v", len(got), len(tasks), got)
			}
			for id, n := range got {
				if n != tc.want {
					t.Errorf("log %d: /run called %d times, want %d", id, n, tc.want)
				}
			}
			for _, task := range tasks {
				page, err := f.db.LogList(f.ctx, driver.LogListParams{JobID: task.Occurrence.JobID, Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Logs) != 1 || page.Logs[0].TriggerCode != xjob.CodeSuccess {
					t.Errorf("job %d: logs %+v, want one, triggered", task.Occurrence.JobID, page.Logs)
				}
			}
		})
	}
}

// recordsHandler keeps every record whose message is msg, with its
// attributes: how a test reads what the sink logged.
type recordsHandler struct {
	msg  string
	mu   *sync.Mutex
	seen *[]map[string]any
}

func (h recordsHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordsHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message != h.msg {
		return nil
	}
	attrs := map[string]any{}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.Any()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.seen = append(*h.seen, attrs)
	return nil
}
func (h recordsHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordsHandler) WithGroup(string) slog.Handler      { return h }

// A prepared hand-off of TimelineFires or more logs its timeline once
// delivered (when its claims ahead ended, when its chunks' calls and
// records ended, relative to its instant), and a smaller one logs none:
// the line is how a burst's tail is told apart (claims or calls).
func TestLaneSinkLogsBurstTimeline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fires int
		want  bool
	}{
		{"burst", 5, true},
		{"below the threshold", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runs := new(atomic.Int64)
			f := newSinkFixture(t, countRuns(runs))
			var (
				mu   sync.Mutex
				seen []map[string]any
			)
			log := slog.New(recordsHandler{msg: "lane sink burst timeline", mu: &mu, seen: &seen})
			sink, err := dispatch.NewLaneSink(f.disp, dispatch.LaneSinkOptions{Base: f.ctx, Queues: f.db, Logger: log,
				Calls: map[fire.Lane]int{fire.LaneFast: 2}, Chunk: 2, ClaimAhead: 4, TimelineFires: 4})
			if err != nil {
				t.Fatal(err)
			}
			at := f.t0.Add(time.Second)
			tasks := make([]fire.DispatchTask, tc.fires)
			for i := range tasks {
				tasks[i] = f.task()
				tasks[i].Occurrence.FireTime = at.UnixMilli()
			}
			run := sink.Prepare(f.ctx, fire.LaneFast, tasks, nil)
			f.clk.Set(at.Add(20 * time.Millisecond))
			if err := run(f.ctx); err != nil {
				t.Fatal(err)
			}
			if n := runs.Load(); n != int64(tc.fires) {
				t.Fatalf("executor ran %d tasks, want %d", n, tc.fires)
			}
			mu.Lock()
			defer mu.Unlock()
			if !tc.want {
				if len(seen) != 0 {
					t.Fatalf("logged %d timelines for %d fires, want none below TimelineFires", len(seen), tc.fires)
				}
				return
			}
			if len(seen) != 1 {
				t.Fatalf("logged %d timelines, want 1", len(seen))
			}
			got := seen[0]
			want := map[string]any{"fires": int64(tc.fires), "claimedAhead": int64(4), "chunksAhead": int64(2),
				"preparedMs": int64(-1000), "claimsEndedMs": int64(-1000),
				"callsEndedFirstMs": int64(20), "callsEndedLastMs": int64(20), "recordedLastMs": int64(20), "deliveredMs": int64(20)}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (line %v)", k, got[k], v, got)
				}
			}
		})
	}
}

// A fenced dispatcher's claims made at the instant (a lane's tasks, not
// a prepared hand-off) are marked as calling too: each log is called
// once and recorded, and its version shows the claim and the mark.
func TestFenceMarksClaimsMadeAtTheInstant(t *testing.T) {
	t.Parallel()
	exec, runs := runsByLog(t)
	f := newSinkFixture(t, exec)
	tasks := []fire.DispatchTask{f.task(), f.task()}
	outs, errs := f.fenced.DispatchMany(f.ctx, tasks)
	for i := range tasks {
		if errs[i] != nil {
			t.Fatalf("task %d: %v", i, errs[i])
		}
		l, err := f.db.LogGet(f.ctx, outs[i].Logs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if l.TriggerCode != xjob.CodeSuccess {
			t.Errorf("log %d: trigger code %d, want %d", l.ID, l.TriggerCode, xjob.CodeSuccess)
		}
		if outs[i].Logs[0].Version < 2 {
			t.Errorf("log %d: version %d in the outcome, want the mark's (≥ 2)", l.ID, outs[i].Logs[0].Version)
		}
	}
	for id, n := range runs() {
		if n != 1 {
			t.Errorf("log %d: /run called %d times, want 1", id, n)
		}
	}
}
