package callback_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// recorder is an Alarmer that records what it is told (alarmers are
// user-pluggable; this one only observes).
type recorder struct {
	mu     sync.Mutex
	alarms []driver.Alarm
	err    error
}

func (r *recorder) Alarm(_ context.Context, a driver.Alarm) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.alarms = append(r.alarms, a)
	return r.err
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.alarms)
}

type env struct {
	t     *testing.T
	ctx   context.Context
	db    *sqlitestore.DB
	clk   *clock.Fake
	alarm *recorder
	svc   *callback.Service
	group xjob.Group
}

func setup(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(start)
	db, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "xjob.db"), sqlitestore.Options{Shards: 4, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	rec := &recorder{}
	svc, err := callback.New(callback.Config{Store: db, Queues: db, Alarmer: rec, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	g, err := db.GroupInsert(ctx, xjob.Group{AppName: "xjob-demo", Title: "demo", AddressType: xjob.AddressAuto})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, db: db, clk: clk, alarm: rec, svc: svc, group: g}
}

// job stores a job with the given retry count and children.
func (e *env) job(retries int, children ...int64) xjob.Job {
	e.t.Helper()
	j := xjob.Job{GroupID: e.group.ID, Description: "demo job", Author: "ops", Handler: "demoHandler",
		FailRetryCount: retries, ChildJobIDs: children}
	j.ApplyDefaults()
	if err := j.Validate(); err != nil {
		e.t.Fatal(err)
	}
	j.CreatedAt, j.UpdatedAt = clock.Millis(e.clk), clock.Millis(e.clk)
	j, err := e.db.JobInsert(e.ctx, j)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// triggered stores a log as dispatch leaves it after POST /run, and counts
// it in the report as dispatch does.
func (e *env) triggered(j xjob.Job, triggerCode, retries int, sharding string) xjob.Log {
	e.t.Helper()
	l, err := e.db.LogCreate(e.ctx, xjob.Log{
		OccurrenceID: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerManual, Ref: strconv.FormatInt(time.Now().UnixNano(), 10)}.ID(0),
		JobID:        j.ID, GroupID: j.GroupID, TriggerType: xjob.TriggerManual,
		TriggerTime: clock.Millis(e.clk), ExecutorHandler: j.Handler, ExecutorParam: "p=1",
		ExecutorShardingParam: sharding, ExecutorFailRetryCount: retries,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.db.LogTriggered(e.ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: "http://127.0.0.1:9999/",
		TriggerCode: triggerCode, TriggerMsg: "trigger"}); err != nil {
		e.t.Fatal(err)
	}
	d := xjob.ReportDay{Day: callback.Day(l.TriggerTime), RunningCount: 1}
	if triggerCode != xjob.CodeSuccess {
		d = xjob.ReportDay{Day: d.Day, FailCount: 1}
	}
	if err := e.db.ReportAdd(e.ctx, d); err != nil {
		e.t.Fatal(err)
	}
	return e.get(l.ID)
}

func (e *env) get(id int64) xjob.Log {
	e.t.Helper()
	l, err := e.db.LogGet(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

func (e *env) callback(id int64, code int, msg string) error {
	e.t.Helper()
	errs := e.svc.Callback(e.ctx, []protocol.HandleCallbackParam{{LogID: id, LogDateTim: clock.Millis(e.clk), HandleCode: code, HandleMsg: msg}})
	if len(errs) != 1 {
		e.t.Fatalf("got %d results for one item", len(errs))
	}
	return errs[0]
}

// tasks drains the fast dispatch lane, retries included: it first moves
// the clock past the retry delay.
func (e *env) tasks() []fire.DispatchTask {
	e.t.Helper()
	e.clk.Advance(callback.DefaultRetryDelay)
	return e.visible()
}

// visible drains what the fast dispatch lane holds visible now.
func (e *env) visible() []fire.DispatchTask {
	e.t.Helper()
	q := e.db.Dispatch(fire.LaneFast)
	var out []fire.DispatchTask
	for {
		ds, err := q.Receive(e.ctx, driver.ReceiveParams{Max: 10, Visibility: time.Hour})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(ds) == 0 {
			return out
		}
		var tokens []string
		for _, d := range ds {
			out = append(out, d.Msg)
			tokens = append(tokens, d.Token)
		}
		if err := q.Ack(e.ctx, tokens); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) report() xjob.ReportDay {
	e.t.Helper()
	day := callback.Day(clock.Millis(e.clk))
	days, err := e.db.ReportList(e.ctx, driver.ReportListParams{From: day, To: day})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(days) == 0 {
		return xjob.ReportDay{Day: day}
	}
	return days[0]
}

func TestCallbackSuccess(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.job(3)
	l := e.triggered(j, 200, 3, "")
	e.clk.Advance(2 * time.Second)
	if err := e.callback(l.ID, 200, "done"); err != nil {
		t.Fatalf("callback: %v", err)
	}
	got := e.get(l.ID)
	if got.HandleCode != 200 || got.HandleMsg != "done" || got.HandleTime != clock.Millis(e.clk) {
		t.Fatalf("log = %+v", got)
	}
	if got.AlarmStatus != xjob.AlarmDefault || e.alarm.count() != 0 {
		t.Fatalf("success alarmed: status %d, %d alarms", got.AlarmStatus, e.alarm.count())
	}
	if ts := e.tasks(); len(ts) != 0 {
		t.Fatalf("success enqueued %v", ts)
	}
	if r := e.report(); r.RunningCount != 0 || r.SucCount != 1 || r.FailCount != 0 {
		t.Fatalf("report %+v", r)
	}
}

func TestCallbackRetriesCountDownThenAlarm(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.job(2)
	l := e.triggered(j, 200, 2, "")
	for round, wantLeft := range []int{1, 0, -1} {
		if err := e.callback(l.ID, 500, "boom"); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		// xxl-job alarms every failure, retried or not.
		if n := e.alarm.count(); n != round+1 {
			t.Fatalf("round %d: %d alarms, want %d", round, n, round+1)
		}
		if st := e.get(l.ID).AlarmStatus; st != xjob.AlarmSuccess {
			t.Fatalf("round %d: alarm status %d", round, st)
		}
		ts := e.tasks()
		if wantLeft < 0 {
			if len(ts) != 0 {
				t.Fatalf("retries exhausted but enqueued %+v", ts)
			}
			break
		}
		if len(ts) != 1 {
			t.Fatalf("round %d: %d tasks, want 1 retry", round, len(ts))
		}
		task := ts[0]
		want := fire.Occurrence{JobID: j.ID, Type: xjob.TriggerRetry, Ref: strconv.FormatInt(l.ID, 10)}
		if task.Occurrence != want || *task.FailRetryCount != wantLeft || *task.Param != "p=1" || task.ShardTotal != 0 {
			t.Fatalf("round %d: task %+v (left %d)", round, task, *task.FailRetryCount)
		}
		// Dispatch would trigger the retry with the decremented count.
		l = e.triggered(j, 200, *task.FailRetryCount, "")
	}
	if r := e.report(); r.RunningCount != 0 || r.FailCount != 3 || r.SucCount != 0 {
		t.Fatalf("report %+v", r)
	}
}

func TestCallbackRejections(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.job(1)
	l := e.triggered(j, 200, 1, "")
	if err := e.callback(l.ID, 500, "first"); err != nil {
		t.Fatal(err)
	}
	e.tasks()
	alarms := e.alarm.count()

	tests := []struct {
		name string
		id   int64
		code int
		want error
		msg  string
	}{
		{"duplicate", l.ID, 200, callback.ErrRepeatCallback, "log repeate callback."},
		{"unknown log", l.ID + 1000, 200, callback.ErrLogNotFound, "log item not found."},
		{"zero log id", 0, 200, callback.ErrLogNotFound, "log item not found."},
	}
	for _, tt := range tests {
		err := e.callback(tt.id, tt.code, "again")
		if !errors.Is(err, tt.want) || err.Error() != tt.msg {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.msg)
		}
	}
	var ve *xjob.ValidationError
	if err := e.callback(l.ID, 0, ""); !errors.As(err, &ve) {
		t.Errorf("handle code 0: err = %v, want a validation error", err)
	}
	got := e.get(l.ID)
	if got.HandleCode != 500 || got.HandleMsg != "first" {
		t.Fatalf("first result overwritten: %+v", got)
	}
	if ts := e.tasks(); len(ts) != 0 || e.alarm.count() != alarms {
		t.Fatalf("rejected callbacks had effects: %d tasks, %d alarms", len(ts), e.alarm.count()-alarms)
	}
}

func TestCallbackBatchIsPerItem(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.job(0)
	a, b := e.triggered(j, 200, 0, ""), e.triggered(j, 200, 0, "")
	errs := e.svc.Callback(e.ctx, []protocol.HandleCallbackParam{
		{LogID: a.ID, HandleCode: 200}, {LogID: 99999, HandleCode: 200}, {LogID: b.ID, HandleCode: 502, HandleMsg: "timeout"},
	})
	if errs[0] != nil || !errors.Is(errs[1], callback.ErrLogNotFound) || errs[2] != nil {
		t.Fatalf("errs = %v", errs)
	}
	if e.get(b.ID).HandleCode != 502 {
		t.Fatal("item after a rejected one not recorded")
	}
}

// A large batch is recorded concurrently; a log id repeated within it is
// decided by its first item, as one by one.
func TestCallbackLargeBatchFirstItemWins(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.job(0)
	var items []protocol.HandleCallbackParam
	var ids []int64
	for range 60 {
		l := e.triggered(j, 200, 0, "")
		ids = append(ids, l.ID)
		items = append(items, protocol.HandleCallbackParam{LogID: l.ID, HandleCode: 200, HandleMsg: "first"})
	}
	items = append(items, protocol.HandleCallbackParam{LogID: ids[7], HandleCode: 500, HandleMsg: "second"})
	errs := e.svc.Callback(e.ctx, items)
	for i, err := range errs[:60] {
		if err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
	}
	if !errors.Is(errs[60], callback.ErrRepeatCallback) {
		t.Fatalf("repeat in the batch: %v, want ErrRepeatCallback", errs[60])
	}
	for _, id := range ids {
		if l := e.get(id); l.HandleCode != 200 || l.HandleMsg != "first" {
			t.Fatalf("log %d = %d %q, want the batch's first result", id, l.HandleCode, l.HandleMsg)
		}
	}
}

func TestChildrenOnSuccessOnly(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c1, c2 := e.job(0), e.job(0)
	parent := e.job(0, c1.ID, c2.ID)

	ok := e.triggered(parent, 200, 0, "")
	if err := e.callback(ok.ID, 200, "parent done"); err != nil {
		t.Fatal(err)
	}
	ts := e.tasks()
	if len(ts) != 2 {
		t.Fatalf("%d tasks, want 2 children", len(ts))
	}
	ref := strconv.FormatInt(ok.ID, 10)
	for i, c := range []xjob.Job{c1, c2} {
		want := fire.Occurrence{JobID: c.ID, Type: xjob.TriggerParent, Ref: ref}
		if ts[i].Occurrence != want || ts[i].Param != nil || ts[i].FailRetryCount != nil {
			t.Errorf("child task %d = %+v, want occurrence %+v with the child's own param", i, ts[i], want)
		}
	}
	msg := e.get(ok.ID).HandleMsg
	if !strings.HasPrefix(msg, "parent done") || !strings.Contains(msg, "Trigger child job") ||
		!strings.Contains(msg, "2/2 [Job ID="+strconv.FormatInt(c2.ID, 10)+"]") {
		t.Fatalf("handle msg %q lacks the child summary", msg)
	}

	for _, code := range []int{500, 502} {
		failed := e.triggered(parent, 200, 0, "")
		if err := e.callback(failed.ID, code, "nope"); err != nil {
			t.Fatal(err)
		}
		if ts := e.tasks(); len(ts) != 0 {
			t.Fatalf("code %d triggered %+v", code, ts)
		}
		if m := e.get(failed.ID).HandleMsg; m != "nope" {
			t.Fatalf("failure got a child summary: %q", m)
		}
	}
}

func TestHandleMsgTruncated(t *testing.T) {
	t.Parallel()
	e := setup(t)
	l := e.triggered(e.job(0), 200, 0, "")
	if err := e.callback(l.ID, 200, strings.Repeat("é", 10000)); err != nil { // 20 000 bytes
		t.Fatal(err)
	}
	msg := e.get(l.ID).HandleMsg
	if len(msg) > callback.MaxHandleMsg+3 || !strings.HasSuffix(msg, "é...") {
		t.Fatalf("stored %d bytes ending %q", len(msg), msg[len(msg)-8:])
	}
}

func TestShardedRetryKeepsShard(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.job(1)
	l := e.triggered(j, 200, 1, fire.ShardingParam(2, 3))
	if err := e.callback(l.ID, 500, "shard failed"); err != nil {
		t.Fatal(err)
	}
	ts := e.tasks()
	if len(ts) != 1 || ts[0].ShardIndex != 2 || ts[0].ShardTotal != 3 || *ts[0].FailRetryCount != 0 {
		t.Fatalf("tasks %+v", ts)
	}
	if err := ts[0].Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentDuplicateCallbacks(t *testing.T) {
	t.Parallel()
	for _, code := range []int{200, 500} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			child := e.job(0)
			j := e.job(1, child.ID)
			l := e.triggered(j, 200, 1, "")
			const n = 8
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { errs[i] = e.callback(l.ID, code, "r"+strconv.Itoa(i)) })
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, callback.ErrRepeatCallback):
					t.Fatalf("unexpected error %v", err)
				}
			}
			if won != 1 {
				t.Fatalf("%d callbacks won, want 1", won)
			}
			ts := e.tasks()
			wantType, wantAlarms := xjob.TriggerParent, 0
			if code != 200 {
				wantType, wantAlarms = xjob.TriggerRetry, 1
			}
			if len(ts) != 1 || ts[0].Occurrence.Type != wantType {
				t.Fatalf("tasks %+v, want one %s", ts, wantType)
			}
			if e.alarm.count() != wantAlarms {
				t.Fatalf("%d alarms, want %d", e.alarm.count(), wantAlarms)
			}
			r := e.report()
			if r.RunningCount != 0 || r.SucCount+r.FailCount != 1 {
				t.Fatalf("report %+v counts the log more than once", r)
			}
		})
	}
}

func TestFailureAlarmStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		deleteJob  bool
		alarmErr   error
		wantStatus xjob.AlarmStatus
		wantAlarms int
		wantTasks  int
	}{
		{name: "alarm ok", wantStatus: xjob.AlarmSuccess, wantAlarms: 1, wantTasks: 1},
		{name: "alarm fails", alarmErr: errors.New("smtp down"), wantStatus: xjob.AlarmFailed, wantAlarms: 1, wantTasks: 1},
		{name: "job deleted", deleteJob: true, wantStatus: xjob.AlarmNoNeed, wantAlarms: 0, wantTasks: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			e.alarm.err = tt.alarmErr
			j := e.job(1)
			l := e.triggered(j, 200, 1, "")
			if tt.deleteJob {
				if err := e.db.JobDelete(e.ctx, j.ID); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.callback(l.ID, 500, "boom"); err != nil {
				t.Fatalf("callback: %v", err)
			}
			if st := e.get(l.ID).AlarmStatus; st != tt.wantStatus {
				t.Fatalf("alarm status %d, want %d", st, tt.wantStatus)
			}
			if e.alarm.count() != tt.wantAlarms {
				t.Fatalf("%d alarms", e.alarm.count())
			}
			if ts := e.tasks(); len(ts) != tt.wantTasks {
				t.Fatalf("%d tasks", len(ts))
			}
			if tt.wantAlarms == 1 {
				a := e.alarm.alarms[0]
				if a.Job.ID != j.ID || a.Log.ID != l.ID || a.Log.HandleCode != 500 {
					t.Fatalf("alarm %+v", a)
				}
			}
		})
	}
}

func TestCompleteTriggerFailureAndSweep(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.job(1)
	// Dispatch recorded a failed trigger and crashed before completing it.
	l := e.triggered(j, 500, 1, "")
	if n, err := e.svc.Sweep(e.ctx); err != nil || n != 0 {
		t.Fatalf("sweep inside the grace period: %d, %v", n, err)
	}
	e.clk.Advance(callback.DefaultSweepGrace)
	if n, err := e.svc.Sweep(e.ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	ts := e.tasks()
	if len(ts) != 1 || ts[0].Occurrence.Type != xjob.TriggerRetry || e.alarm.count() != 1 {
		t.Fatalf("%d tasks %+v, %d alarms", len(ts), ts, e.alarm.count())
	}
	if st := e.get(l.ID).AlarmStatus; st != xjob.AlarmSuccess {
		t.Fatalf("alarm status %d", st)
	}
	if n, err := e.svc.Sweep(e.ctx); err != nil || n != 0 {
		t.Fatalf("second sweep: %d, %v", n, err)
	}
	// The failed trigger stays counted once, as dispatch counted it.
	if r := e.report(); r.FailCount != 1 || r.RunningCount != 0 {
		t.Fatalf("report %+v", r)
	}
}

func TestCompleteTwiceAlarmsOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.job(1)
	l := e.triggered(j, 500, 1, "")
	for range 2 {
		if err := e.svc.Complete(e.ctx, l); err != nil { // l still says alarm status 0
			t.Fatal(err)
		}
	}
	if e.alarm.count() != 1 {
		t.Fatalf("%d alarms, want 1", e.alarm.count())
	}
	// A repeated retry enqueue names the same occurrence, which dispatch
	// creates once.
	want := fire.Occurrence{JobID: j.ID, Type: xjob.TriggerRetry, Ref: strconv.FormatInt(l.ID, 10)}
	for _, task := range e.tasks() {
		if task.Occurrence != want {
			t.Fatalf("retry occurrence %+v", task.Occurrence)
		}
	}
}

func TestFinishAfterFailedTriggerCountsOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	l := e.triggered(e.job(0), 500, 0, "")
	// The executor ran it anyway and reported success.
	if err := e.callback(l.ID, 200, "ran"); err != nil {
		t.Fatal(err)
	}
	if r := e.report(); r.FailCount != 0 || r.SucCount != 1 || r.RunningCount != 0 {
		t.Fatalf("report %+v", r)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	if _, err := callback.New(callback.Config{}); err == nil {
		t.Fatal("empty config accepted")
	}
}

// BenchmarkCallback measures one executor result end to end on SQLite:
// read, conditional finish, report counters, completion (no children).
func BenchmarkCallback(b *testing.B) {
	ctx := context.Background()
	clk := clock.NewFake(start)
	db, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "xjob.db"), sqlitestore.Options{Shards: 4, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	svc, err := callback.New(callback.Config{Store: db, Queues: db, Alarmer: &recorder{}, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]int64, b.N)
	for i := range ids {
		l, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: "bench/" + strconv.Itoa(i), JobID: 1,
			TriggerType: xjob.TriggerManual, TriggerTime: clock.Millis(clk)})
		if err != nil {
			b.Fatal(err)
		}
		if err := db.LogTriggered(ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: "http://e:1/", TriggerCode: 200}); err != nil {
			b.Fatal(err)
		}
		ids[i] = l.ID
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		errs := svc.Callback(ctx, []protocol.HandleCallbackParam{{LogID: ids[i], HandleCode: 200, HandleMsg: "ok"}})
		if errs[0] != nil {
			b.Fatal(errs[0])
		}
	}
}

// TestRejectedItemsLogOneLine: a batch of many unknown log ids writes one
// summary warning (count, reasons, a few ids), not one line per item.
func TestRejectedItemsLogOneLine(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var buf bytes.Buffer
	svc, err := callback.New(callback.Config{Store: e.db, Queues: e.db, Alarmer: e.alarm, Clock: e.clk,
		Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	j := e.job(0)
	ok := e.triggered(j, 200, 0, "")
	items := []protocol.HandleCallbackParam{{LogID: ok.ID, HandleCode: 200}}
	for i := range 2000 {
		items = append(items, protocol.HandleCallbackParam{LogID: int64(1_000_000 + i), HandleCode: 500})
	}
	items = append(items, protocol.HandleCallbackParam{LogID: ok.ID, HandleCode: 200}) // a repeat
	errs := svc.Callback(e.ctx, items)
	if errs[0] != nil {
		t.Fatalf("known log rejected: %v", errs[0])
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want 1 summary:\n%s", len(lines), strings.Join(lines[:min(5, len(lines))], "\n"))
	}
	for _, want := range []string{"rejected=2001", "items=2002", "logIds=\"[1000000 1000001 1000002 1000003 1000004]\"", "2000×", "1×"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("summary %q lacks %q", lines[0], want)
		}
	}
}
