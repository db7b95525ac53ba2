package ring_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/ring"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

var t0 = time.UnixMilli(1_800_000_000_000).UTC()

func setup(t *testing.T) (*sqlitestore.DB, *clock.Fake, *ring.Ring) {
	t.Helper()
	clk := clock.NewFake(t0)
	db, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), sqlitestore.Options{Shards: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r, err := ring.New(ring.Config{Jobs: db, Queues: db, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return db, clk, r
}

func addJob(t *testing.T, db *sqlitestore.DB) xjob.Job {
	t.Helper()
	j := xjob.Job{GroupID: 1, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "1",
		Handler: "h", TriggerStatus: xjob.StatusRunning, TriggerNextTime: t0.UnixMilli()}
	j.ApplyDefaults()
	j, err := db.JobInsert(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func tasks(t *testing.T, db *sqlitestore.DB, lane fire.Lane) []fire.DispatchTask {
	t.Helper()
	ds, err := db.Dispatch(lane).Receive(context.Background(), driver.ReceiveParams{Max: 10, Visibility: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var out []fire.DispatchTask
	for _, d := range ds {
		out = append(out, d.Msg)
	}
	return out
}

func TestFireDropsStaleOccurrences(t *testing.T) {
	t.Parallel()
	db, clk, r := setup(t)
	ctx := context.Background()
	keep, stopped, edited, deleted := addJob(t, db), addJob(t, db), addJob(t, db), addJob(t, db)

	stopped.TriggerStatus = xjob.StatusStopped
	stopped.Revision++
	if _, err := db.JobUpdate(ctx, driver.JobUpdateParams{Job: stopped, ExpectVersion: stopped.Version}); err != nil {
		t.Fatal(err)
	}
	edited.ScheduleConf = "7"
	edited.Revision++
	if _, err := db.JobUpdate(ctx, driver.JobUpdateParams{Job: edited, ExpectVersion: edited.Version}); err != nil {
		t.Fatal(err)
	}
	if err := db.JobDelete(ctx, deleted.ID); err != nil {
		t.Fatal(err)
	}
	// The scan advancing the kept job bumps its version, not its revision:
	// the occurrence must still fire.
	if err := db.JobAdvance(ctx, driver.JobAdvanceParams{ID: keep.ID, ExpectVersion: keep.Version, TriggerNextTime: t0.Add(9 * time.Second).UnixMilli()}); err != nil {
		t.Fatal(err)
	}

	at := t0.Add(time.Second).UnixMilli()
	b := fire.RingBucket{Second: at / 1000, Items: []fire.RingItem{
		{JobID: keep.ID, FireTime: at, Revision: keep.Revision},
		{JobID: stopped.ID, FireTime: at, Revision: stopped.Revision - 1},
		{JobID: edited.ID, FireTime: at, Revision: edited.Revision - 1},
		{JobID: deleted.ID, FireTime: at, Revision: deleted.Revision},
	}}
	clk.Set(time.UnixMilli(at))
	st, err := r.Fire(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if st.Fired != 1 || st.Dropped != 3 {
		t.Fatalf("stats = %+v, want 1 fired and 3 dropped", st)
	}
	got := tasks(t, db, fire.LaneFast)
	want := fire.Occurrence{JobID: keep.ID, Type: xjob.TriggerCron, FireTime: at}
	if len(got) != 1 || got[0].Occurrence != want || got[0].Revision != keep.Revision {
		t.Fatalf("tasks = %+v, want one for %+v", got, want)
	}
}

// delivery is one Sink.Deliver call a test sink saw.
type delivery struct {
	lane  fire.Lane
	tasks []fire.DispatchTask
	// reply, when the test set replies, is what Deliver waits for and returns.
	reply chan error
}

// chanSink passes every Deliver call to the test. With wait set, Deliver
// blocks until the test answers on the call's reply channel, as local
// mode's sink blocks until its dispatches are done.
type chanSink struct {
	calls chan delivery
	wait  bool
}

func newChanSink(wait bool) *chanSink { return &chanSink{calls: make(chan delivery, 64), wait: wait} }

func (s *chanSink) Deliver(ctx context.Context, lane fire.Lane, tasks []fire.DispatchTask) error {
	d := delivery{lane: lane, tasks: tasks}
	if s.wait {
		d.reply = make(chan error, 1)
	}
	s.calls <- d
	if !s.wait {
		return nil
	}
	select {
	case err := <-d.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *chanSink) next(t *testing.T) delivery {
	t.Helper()
	select {
	case d := <-s.calls:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery")
		return delivery{}
	}
}

func (s *chanSink) none(t *testing.T) {
	t.Helper()
	select {
	case d := <-s.calls:
		t.Fatalf("unexpected delivery %+v", d)
	default:
	}
}

func setupSink(t *testing.T, s ring.Sink) (*sqlitestore.DB, *clock.Fake, *ring.Ring) {
	t.Helper()
	db, clk, _ := setup(t)
	r, err := ring.New(ring.Config{Jobs: db, Queues: db, Sink: s, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return db, clk, r
}

func TestFireWaitsForEachMillisecond(t *testing.T) {
	t.Parallel()
	sink := newChanSink(false)
	db, clk, r := setupSink(t, sink)
	ctx := context.Background()
	j := addJob(t, db)
	base := t0.Add(2 * time.Second)
	b := fire.RingBucket{Second: base.Unix(), Items: []fire.RingItem{
		{JobID: j.ID, FireTime: base.Add(750 * time.Millisecond).UnixMilli(), Revision: j.Revision},
		{JobID: j.ID, FireTime: base.Add(250 * time.Millisecond).UnixMilli(), Revision: j.Revision},
	}}
	done := fireAsync(t, r, b)
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// It sleeps until the earlier item's millisecond, not the bucket's second.
	if err := clk.WaitForSleepers(waitCtx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Set(base.Add(249 * time.Millisecond))
	if err := clk.WaitForSleepers(waitCtx, 1); err != nil {
		t.Fatal(err)
	}
	sink.none(t) // nothing 1 ms early
	clk.Set(base.Add(250 * time.Millisecond))
	first := sink.next(t)
	if len(first.tasks) != 1 || first.tasks[0].Occurrence.FireTime != base.Add(250*time.Millisecond).UnixMilli() {
		t.Fatalf("at +250ms: %+v, want the first occurrence only", first)
	}
	if err := clk.WaitForSleepers(waitCtx, 1); err != nil {
		t.Fatal(err)
	}
	sink.none(t)
	clk.Set(base.Add(750 * time.Millisecond))
	second := sink.next(t)
	if len(second.tasks) != 1 || second.tasks[0].Occurrence.FireTime != base.Add(750*time.Millisecond).UnixMilli() {
		t.Fatalf("at +750ms: %+v, want the second occurrence", second)
	}
	st := <-done
	if st.Fired != 2 || st.MaxLate != 0 {
		t.Fatalf("stats = %+v, want 2 fired on time", st)
	}
}

// A sink that takes long (local mode dispatches before it returns) must
// not make a later instant of the bucket late, and Fire — whose return
// lets Serve acknowledge the bucket — returns only once every hand-off has.
func TestFireOverlapsSlowHandOffs(t *testing.T) {
	t.Parallel()
	sink := newChanSink(true)
	db, clk, r := setupSink(t, sink)
	ctx := context.Background()
	j := addJob(t, db)
	base := t0.Add(2 * time.Second)
	b := fire.RingBucket{Second: base.Unix(), Items: []fire.RingItem{
		{JobID: j.ID, FireTime: base.Add(100 * time.Millisecond).UnixMilli(), Revision: j.Revision},
		{JobID: j.ID, FireTime: base.Add(600 * time.Millisecond).UnixMilli(), Revision: j.Revision},
	}}
	type result struct {
		st  ring.Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := r.Fire(ctx, b)
		done <- result{st, err}
	}()
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := clk.WaitForSleepers(waitCtx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Set(base.Add(100 * time.Millisecond))
	first := sink.next(t) // still dispatching
	if err := clk.WaitForSleepers(waitCtx, 1); err != nil {
		t.Fatal(err) // Fire already waits for the next instant
	}
	clk.Set(base.Add(600 * time.Millisecond))
	second := sink.next(t)
	second.reply <- nil
	select {
	case res := <-done:
		t.Fatalf("Fire returned %+v before its first hand-off was done", res)
	default:
	}
	first.reply <- nil
	res := <-done
	if res.err != nil || res.st.Fired != 2 || res.st.MaxLate != 0 {
		t.Fatalf("Fire = %+v, %v; want 2 fired on time", res.st, res.err)
	}
}

// A failed hand-off fails the bucket (Serve leaves it unacknowledged, so it
// comes back), and the fires handed off successfully are still counted.
func TestFireReportsFailedHandOff(t *testing.T) {
	t.Parallel()
	sink := newChanSink(true)
	db, clk, r := setupSink(t, sink)
	ctx := context.Background()
	fast, slow := addJob(t, db), addJob(t, db)
	markSlow(t, db, slow)
	at := t0.Add(time.Second).UnixMilli()
	clk.Set(time.UnixMilli(at))
	type result struct {
		st  ring.Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := r.Fire(ctx, fire.RingBucket{Second: at / 1000, Items: []fire.RingItem{
			{JobID: fast.ID, FireTime: at, Revision: fast.Revision},
			{JobID: slow.ID, FireTime: at, Revision: slow.Revision},
		}})
		done <- result{st, err}
	}()
	for range 2 {
		d := sink.next(t)
		if d.lane == fire.LaneSlow {
			d.reply <- errors.New("lane unavailable")
		} else {
			d.reply <- nil
		}
	}
	res := <-done
	if res.err == nil || res.st.Fired != 1 {
		t.Fatalf("Fire = %+v, %v; want 1 fired and an error", res.st, res.err)
	}
}

func TestFireSendsSlowJobsToSlowLane(t *testing.T) {
	t.Parallel()
	db, clk, r := setup(t)
	ctx := context.Background()
	j := addJob(t, db)
	markSlow(t, db, j)
	clk.Set(t0.Add(time.Second))
	at := t0.Add(time.Second).UnixMilli()
	if _, err := r.Fire(ctx, fire.RingBucket{Second: at / 1000, Items: []fire.RingItem{{JobID: j.ID, FireTime: at, Revision: j.Revision}}}); err != nil {
		t.Fatal(err)
	}
	if n := len(tasks(t, db, fire.LaneSlow)); n != 1 {
		t.Fatalf("slow lane got %d tasks, want 1", n)
	}
	if n := len(tasks(t, db, fire.LaneFast)); n != 0 {
		t.Fatalf("fast lane got %d tasks, want 0", n)
	}
}

// Split hands each lane to its own sink (the AWS ring function: the fast
// lane in process, the slow lane to its queue), and a lane without a sink
// fails the bucket instead of losing its fires. The fast lane's tasks keep
// the name of the message their items came in (provisional claims); the
// tasks sent to a lane queue do not: that queue's message carries them.
func TestSplitRoutesEachLane(t *testing.T) {
	t.Parallel()
	db, clk, _ := setup(t)
	ctx := context.Background()
	fastSink := newChanSink(false)
	r, err := ring.New(ring.Config{Jobs: db, Queues: db, Clock: clk, Logger: slog.New(slog.DiscardHandler),
		Sink: ring.Split{fire.LaneFast: fastSink, fire.LaneSlow: ring.QueueSink{Queues: db}}})
	if err != nil {
		t.Fatal(err)
	}
	fast, slow := addJob(t, db), addJob(t, db)
	markSlow(t, db, slow)
	at := t0.Add(time.Second).UnixMilli()
	clk.Set(time.UnixMilli(at))
	bucket := fire.RingBucket{Second: at / 1000, Items: []fire.RingItem{
		{JobID: fast.ID, FireTime: at, Revision: fast.Revision, Delivery: "m1"},
		{JobID: slow.ID, FireTime: at, Revision: slow.Revision, Delivery: "m1"},
	}}
	st, err := r.Fire(ctx, bucket)
	if err != nil || st.Fired != 2 {
		t.Fatalf("Fire = %+v, %v; want 2 fired", st, err)
	}
	if d := fastSink.next(t); d.lane != fire.LaneFast || len(d.tasks) != 1 || d.tasks[0].Occurrence.JobID != fast.ID || d.tasks[0].Delivery != "m1" {
		t.Fatalf("fast sink got %+v, want the fast job in m1's name", d)
	}
	fastSink.none(t)
	if got := tasks(t, db, fire.LaneSlow); len(got) != 1 || got[0].Occurrence.JobID != slow.ID || got[0].Delivery != "" {
		t.Fatalf("slow queue got %+v, want the slow job, in no message's name", got)
	}
	if got := tasks(t, db, fire.LaneFast); len(got) != 0 {
		t.Fatalf("fast queue got %+v, want nothing (the fast lane went to its sink)", got)
	}

	onlyFast, err := ring.New(ring.Config{Jobs: db, Queues: db, Clock: clk, Logger: slog.New(slog.DiscardHandler),
		Sink: ring.Split{fire.LaneFast: fastSink}})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := onlyFast.Fire(ctx, bucket); err == nil || st.Fired != 1 {
		t.Fatalf("Fire without a slow sink = %+v, %v; want the fast one fired and an error", st, err)
	}
}

// prepSink is a chanSink that can prepare: it records the clock at each
// Prepare, and its prepared hand-offs deliver through the chanSink.
type prepSink struct {
	*chanSink
	clk      *clock.Fake
	prepared chan time.Time
}

func (s *prepSink) Prepare(_ context.Context, lane fire.Lane, tasks []fire.DispatchTask, _ map[int64]*xjob.Job) func(context.Context) error {
	s.prepared <- s.clk.Now()
	return func(ctx context.Context) error { return s.Deliver(ctx, lane, tasks) }
}

// A Preparer sink gets each instant's hand-off as soon as the bucket's
// jobs are checked — its reads leave the path from the instant to the
// executor — and delivers it at the instant, not before.
func TestFirePreparesBeforeTheInstant(t *testing.T) {
	t.Parallel()
	sink := &prepSink{chanSink: newChanSink(false), prepared: make(chan time.Time, 8)}
	db, clk, r := setupSink(t, sink)
	sink.clk = clk
	ctx := context.Background()
	j := addJob(t, db)
	received := clk.Now()
	at := t0.Add(2 * time.Second)
	b := fire.RingBucket{Second: at.Unix(), Items: []fire.RingItem{{JobID: j.ID, FireTime: at.UnixMilli(), Revision: j.Revision}}}
	done := fireAsync(t, r, b)
	select {
	case p := <-sink.prepared:
		if !p.Equal(received) {
			t.Fatalf("prepared at %v, want at receipt %v", p, received)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not prepared")
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := clk.WaitForSleepers(waitCtx, 1); err != nil {
		t.Fatal(err)
	}
	sink.none(t) // prepared, not delivered
	clk.Set(at)
	d := sink.next(t)
	if len(d.tasks) != 1 || d.tasks[0].EnqueuedAt != at.UnixMilli() {
		t.Fatalf("delivered %+v, want the occurrence, enqueued at its instant", d)
	}
	if st := <-done; st.Fired != 1 {
		t.Fatalf("stats = %+v, want 1 fired", st)
	}
}

// gatedPrepSink is a prepSink whose Prepare of the instant at gateAt
// waits for gate: a sink whose preparing is slow.
type gatedPrepSink struct {
	*prepSink
	gateAt int64
	gate   chan struct{}
	jobs   chan map[int64]*xjob.Job
}

func (s *gatedPrepSink) Prepare(ctx context.Context, lane fire.Lane, tasks []fire.DispatchTask, jobs map[int64]*xjob.Job) func(context.Context) error {
	if tasks[0].Occurrence.FireTime == s.gateAt {
		<-s.gate
	}
	s.jobs <- jobs
	return s.prepSink.Prepare(ctx, lane, tasks, jobs)
}

// Instants are prepared in order in the background, not before the first
// sleep: a slow preparation of a later instant does not hold an earlier
// one, and a sink that prepares gets the jobs the ring read.
func TestFirePreparesInOrderInTheBackground(t *testing.T) {
	t.Parallel()
	sink := &gatedPrepSink{prepSink: &prepSink{chanSink: newChanSink(false), prepared: make(chan time.Time, 8)},
		gate: make(chan struct{}), jobs: make(chan map[int64]*xjob.Job, 8)}
	db, clk, r := setupSink(t, sink)
	sink.clk = clk
	ctx := context.Background()
	j := addJob(t, db)
	first, second := t0.Add(1*time.Second), t0.Add(1500*time.Millisecond)
	sink.gateAt = second.UnixMilli()
	b := fire.RingBucket{Second: first.Unix(), Items: []fire.RingItem{
		{JobID: j.ID, FireTime: second.UnixMilli(), Revision: j.Revision},
		{JobID: j.ID, FireTime: first.UnixMilli(), Revision: j.Revision},
	}}
	done := fireAsync(t, r, b)
	if jobs := <-sink.jobs; jobs[j.ID] == nil || jobs[j.ID].Revision != j.Revision {
		t.Fatalf("prepared with jobs %v, want the bucket's job as the ring read it", jobs)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := clk.WaitForSleepers(waitCtx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Set(first)
	if d := sink.next(t); d.tasks[0].Occurrence.FireTime != first.UnixMilli() {
		t.Fatalf("delivered %+v first, want the first instant while the second is still being prepared", d)
	}
	close(sink.gate)
	if err := clk.WaitForSleepers(waitCtx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Set(second)
	if d := sink.next(t); d.tasks[0].Occurrence.FireTime != second.UnixMilli() {
		t.Fatalf("delivered %+v, want the second instant", d)
	}
	if st := <-done; st.Fired != 2 {
		t.Fatalf("stats = %+v, want 2 fired", st)
	}
}

// fireAsync runs r.Fire(b) in the background; the channel gets its stats
// (a Fire error fails the test).
func fireAsync(t *testing.T, r *ring.Ring, b fire.RingBucket) <-chan ring.Stats {
	t.Helper()
	done := make(chan ring.Stats, 1)
	go func() {
		st, err := r.Fire(context.Background(), b)
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	return done
}

// markSlow records enough slow triggers of j in t0's minute to put it in
// the slow lane.
func markSlow(t *testing.T, db *sqlitestore.DB, j xjob.Job) {
	t.Helper()
	for range fire.SlowLaneCount + 1 {
		if err := db.JobRecordSlow(context.Background(), j.ID, t0.UnixMilli()/60000); err != nil {
			t.Fatal(err)
		}
	}
}

// One instant's fast and slow jobs, interleaved in the bucket, reach each
// lane in the bucket's order, and a sink that appends to the fast lane's
// tasks cannot write over the slow lane's (they share one array).
func TestFireSplitsAnInstantInOrder(t *testing.T) {
	t.Parallel()
	sink := newChanSink(false)
	db, clk, r := setupSink(t, sink)
	at := t0.Add(time.Second).UnixMilli()
	var items []fire.RingItem
	var wantFast, wantSlow []int64
	for i := range 6 {
		j := addJob(t, db)
		if i%2 == 1 {
			markSlow(t, db, j)
			wantSlow = append(wantSlow, j.ID)
		} else {
			wantFast = append(wantFast, j.ID)
		}
		items = append(items, fire.RingItem{JobID: j.ID, FireTime: at, Revision: j.Revision})
	}
	clk.Set(time.UnixMilli(at))
	st, err := r.Fire(context.Background(), fire.RingBucket{Second: at / 1000, Items: items})
	if err != nil || st.Fired != 6 {
		t.Fatalf("Fire = %+v, %v; want 6 fired", st, err)
	}
	got := map[fire.Lane][]fire.DispatchTask{}
	for range 2 {
		d := sink.next(t)
		got[d.lane] = d.tasks
	}
	ids := func(ts []fire.DispatchTask) []int64 {
		var out []int64
		for _, task := range ts {
			out = append(out, task.Occurrence.JobID)
		}
		return out
	}
	if !slices.Equal(ids(got[fire.LaneFast]), wantFast) || !slices.Equal(ids(got[fire.LaneSlow]), wantSlow) {
		t.Fatalf("fast %v, slow %v; want %v and %v", ids(got[fire.LaneFast]), ids(got[fire.LaneSlow]), wantFast, wantSlow)
	}
	_ = append(got[fire.LaneFast], fire.DispatchTask{Occurrence: fire.Occurrence{JobID: -1}})
	if !slices.Equal(ids(got[fire.LaneSlow]), wantSlow) {
		t.Fatalf("appending to the fast lane's tasks changed the slow lane's: %v", ids(got[fire.LaneSlow]))
	}
}

// A bucket whose hand-off outlasts the visibility timeout is kept hidden
// while Serve still fires it, and acknowledged once: it is received once,
// not read and claimed again by the next receive (which would happen
// every visibility for as long as the hand-off runs).
func TestServeKeepsABucketInHandHidden(t *testing.T) {
	t.Parallel()
	sink := newChanSink(true)
	db, clk, _ := setup(t)
	acks := &ackedRing{Queue: db.Ring(), acked: make(chan []string, 8)}
	r, err := ring.New(ring.Config{Jobs: db, Queues: ackQueues{db, acks}, Sink: sink, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	at := t0.Add(2 * time.Second)
	sendOneFireAt(t, ctx, db, at)
	clk.Set(at)
	const visibility = 10 * time.Second
	done := make(chan error, 1)
	go func() {
		done <- r.Serve(ctx, ring.ServeOptions{Workers: 8, Visibility: visibility, Wait: time.Second})
	}()
	first := sink.next(t)
	if len(first.tasks) != 1 {
		t.Fatalf("first hand-off %+v, want the one fire", first)
	}
	// The hand-off runs for three visibilities. Each step waits until the
	// keeper and the receive loop sleep again, so that every extension is
	// made before the clock moves on.
	waitCtx, cancelWait := context.WithTimeout(ctx, 10*time.Second)
	defer cancelWait()
	for range 30 {
		if err := clk.WaitForSleepers(waitCtx, 2); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	if err := clk.WaitForSleepers(waitCtx, 2); err != nil {
		t.Fatal(err)
	}
	sink.none(t) // not received and handed off again
	if ds, err := db.Ring().Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Minute}); err != nil || len(ds) != 0 {
		t.Fatalf("receive while the hand-off runs: %+v, %v; want the bucket still hidden", ds, err)
	}
	first.reply <- nil
	select {
	case tokens := <-acks.acked:
		if len(tokens) != 1 {
			t.Fatalf("acknowledged %v, want the one delivery", tokens)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the bucket was not acknowledged")
	}
	// Acknowledged with the token it was received with, extended or not:
	// it does not come back after its visibility.
	clk.Advance(2 * visibility)
	if ds, err := db.Ring().Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Minute}); err != nil || len(ds) != 0 {
		t.Fatalf("receive after the hand-off: %+v, %v; want nothing (acknowledged)", ds, err)
	}
	sink.none(t)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// sendOneFireAt queues, and returns, a ring bucket of one new job's fire
// at at.
func sendOneFireAt(t *testing.T, ctx context.Context, db *sqlitestore.DB, at time.Time) fire.RingBucket {
	t.Helper()
	j := addJob(t, db)
	b := fire.RingBucket{Second: at.Unix(), Items: []fire.RingItem{{JobID: j.ID, FireTime: at.UnixMilli(), Revision: j.Revision}}}
	if err := db.Ring().Send(ctx, []driver.Outgoing[fire.RingBucket]{{Msg: b}}); err != nil {
		t.Fatal(err)
	}
	return b
}

// A receiver that stops while it fires a bucket it kept hidden stops
// extending it: the bucket comes back one visibility after the last
// extension, for another receiver to fire (FireAgain), not later.
func TestServeStoppedGivesABucketBack(t *testing.T) {
	t.Parallel()
	sink := newChanSink(true)
	db, clk, r := setupSink(t, sink)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	at := t0.Add(2 * time.Second)
	b := sendOneFireAt(t, ctx, db, at)
	clk.Set(at)
	const visibility = 10 * time.Second
	serveCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- r.Serve(serveCtx, ring.ServeOptions{Workers: 8, Visibility: visibility, Wait: time.Second})
	}()
	sink.next(t)
	waitCtx, cancelWait := context.WithTimeout(ctx, 10*time.Second)
	defer cancelWait()
	for range 6 { // one extension, at +5 s: hidden until +15 s
		if err := clk.WaitForSleepers(waitCtx, 2); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	if err := clk.WaitForSleepers(waitCtx, 2); err != nil {
		t.Fatal(err)
	}
	stop() // the receiver dies mid hand-off
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	receive := func() []driver.Delivery[fire.RingBucket] {
		ds, err := db.Ring().Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	clk.Set(at.Add(15*time.Second - time.Millisecond))
	if ds := receive(); len(ds) != 0 {
		t.Fatalf("received %+v before the extension ran out", ds)
	}
	clk.Set(at.Add(15 * time.Second))
	ds := receive()
	if len(ds) != 1 || ds[0].Receives != 2 || ds[0].Msg.Second != b.Second {
		t.Fatalf("received %+v once the extension ran out, want the bucket, received a second time", ds)
	}
}

// ackedRing is the ring queue, reporting each acknowledgement. It is no
// Extender: Serve keeps its deliveries hidden through Retry.
type ackedRing struct {
	driver.Queue[fire.RingBucket]
	acked chan []string
}

func (q *ackedRing) Ack(ctx context.Context, tokens []string) error {
	err := q.Queue.Ack(ctx, tokens)
	q.acked <- tokens
	return err
}

// ackQueues is a store's queues with ackedRing as the ring queue.
type ackQueues struct {
	driver.Queues
	ring *ackedRing
}

func (q ackQueues) Ring() driver.Queue[fire.RingBucket] { return q.ring }
