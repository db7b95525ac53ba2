package drivertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// SharedStore is a backend's database as one process or node of an
// installation holds it: its stores, its queues, and what a process
// starting after a crash does to the queues' messages and the logs'
// claims the dead one held. The SQL backends implement it.
type SharedStore interface {
	driver.Store
	driver.Queues
	// QueueDepths counts the messages each queue holds (visible or not,
	// received or not), keyed "ring", "fast" and "slow".
	QueueDepths(ctx context.Context) (map[string]int64, error)
	// ReleaseClaims makes every received, unacknowledged message visible
	// again under a new receipt and ends the claims of untriggered logs,
	// as the first process of an installation does after a crash.
	ReleaseClaims(ctx context.Context) (int, error)
}

// NodeClaimStore is a SharedStore that many nodes use at once, so that a
// live node hands back only what one dead node held.
type NodeClaimStore interface {
	SharedStore
	driver.CallFence
	// ReleaseNodeClaims is ReleaseClaims for the messages and log claims
	// of one node, except the claims it marked as calling.
	ReleaseNodeClaims(ctx context.Context, node string) (int, error)
}

// SharedOptions are what a shared-store suite asks of each handle it
// opens.
type SharedOptions struct {
	// Fake is the handles' clock; nil means the wall clock (the one test
	// that needs real time is a long poll across handles).
	Fake *clock.Fake
	// Logger hears what the handles log (nil: the backend's default).
	Logger *slog.Logger

	// wall is the wall clock the suite watches when Fake is nil and it
	// must know that a long poll is waiting (wallClock).
	wall clock.Clock
}

// Clock is o's clock for a backend's options: nil when o has no fake
// clock, rather than a nil *clock.Fake that a backend would take for a
// clock and call.
func (o SharedOptions) Clock() clock.Clock {
	switch {
	case o.Fake != nil:
		return o.Fake
	case o.wall != nil:
		return o.wall
	}
	return nil
}

// wallClock is the wall clock, telling sleeping (buffered, one deep)
// each time something sleeps on it: in the SQL stores only a long poll
// that found nothing sleeps, so a test that reads sleeping knows the poll
// waits, and that what it sends next must reach the poll by its wake
// (the poll interval or a notification), not by its first claim.
type wallClock struct {
	clock.Real
	sleeping chan struct{}
}

func (w wallClock) SleepUntil(ctx context.Context, t time.Time) error {
	select {
	case w.sleeping <- struct{}{}:
	default:
	}
	return w.Real.SleepUntil(ctx, t)
}

// SharedHarness opens a backend for ExerciseSharedStore and
// ExerciseNodeClaims.
type SharedHarness[S SharedStore] struct {
	// Open opens two handles on one fresh, empty database with the same
	// options, as two processes or two nodes, named "a" and "b", would
	// hold it; both are closed when t ends.
	Open func(t *testing.T, o SharedOptions) (a, b S)
	// RawRing is the ring queue of s with its messages as raw bytes, so
	// that the suite can queue messages this version cannot read. A
	// backend that exports no such access leaves it nil, and the suite
	// leaves out the one test that needs it.
	RawRing func(s S) driver.Queue[json.RawMessage]
	// SetAside is how long the backend hides a message it cannot read.
	SetAside time.Duration
	// WakeWithin is how soon a handle's long poll, already waiting, must
	// return a message the other handle sends or retries: a bound on the
	// backend's poll interval or notification (0: 30 s, half the poll's
	// wait, so that only a wake, not the wait's end, passes).
	WakeWithin time.Duration
}

// sharedEpoch is the fake clocks' start in the shared suites.
var sharedEpoch = time.UnixMilli(1_700_000_000_000)

// ExerciseSharedStore runs what every backend whose database several
// processes share must show beyond the single-store suites: conditional
// writes with one winner across handles, queues that deliver a message
// to one handle at a time and wake a handle's long poll on another's
// send, the JobGetMany cache following other handles' writes, the
// release of a dead process's claims, and unreadable messages set aside
// rather than lost.
func ExerciseSharedStore[S SharedStore](t *testing.T, h SharedHarness[S]) {
	t.Helper()
	one := func(t *testing.T, o SharedOptions) S {
		a, _ := h.Open(t, o)
		return a
	}
	t.Run("DispatchLanesAreSeparate", func(t *testing.T) {
		t.Parallel()
		testDispatchLanesAreSeparate(t, one(t, SharedOptions{Fake: clock.NewFake(sharedEpoch)}))
	})
	t.Run("TwoHandlesOneWinner", func(t *testing.T) {
		t.Parallel()
		a, b := h.Open(t, SharedOptions{})
		testTwoHandlesOneWinner(t, a, b)
	})
	t.Run("QueueTwoHandles", func(t *testing.T) {
		t.Parallel()
		clk := clock.NewFake(sharedEpoch)
		a, b := h.Open(t, SharedOptions{Fake: clk})
		testQueueTwoHandles(t, clk, a, b)
	})
	t.Run("ReceiveWaitHonoursContext", func(t *testing.T) {
		t.Parallel()
		clk := clock.NewFake(sharedEpoch)
		testReceiveWaitHonoursContext(t, clk, one(t, SharedOptions{Fake: clk}))
	})
	t.Run("ReceiveWaitSeesOtherHandlesSend", func(t *testing.T) {
		t.Parallel()
		wall := wallClock{sleeping: make(chan struct{}, 1)}
		a, b := h.Open(t, SharedOptions{wall: wall})
		within := h.WakeWithin
		if within <= 0 {
			within = 30 * time.Second
		}
		testReceiveWaitSeesOtherHandlesSend(t, wall.sleeping, within, a, b)
	})
	t.Run("ReleaseClaims", func(t *testing.T) {
		t.Parallel()
		clk := clock.NewFake(time.UnixMilli(1_800_000_000_000))
		testReleaseClaims(t, clk, one(t, SharedOptions{Fake: clk}))
	})
	t.Run("JobGetManyCacheFollowsOtherHandles", func(t *testing.T) {
		t.Parallel()
		a, b := h.Open(t, SharedOptions{})
		testJobGetManyCacheFollowsOtherHandles(t, a, b)
	})
	t.Run("JobGetManyCacheFollowsAdvances", func(t *testing.T) {
		t.Parallel()
		testJobGetManyCacheFollowsAdvances(t, one(t, SharedOptions{}))
	})
	if h.RawRing == nil {
		return
	}
	t.Run("QueueSetsAsideWhatItCannotRead", func(t *testing.T) {
		t.Parallel()
		clk := clock.NewFake(sharedEpoch)
		var log lockedBuffer
		db := one(t, SharedOptions{Fake: clk, Logger: slog.New(slog.NewJSONHandler(&log, nil))})
		testQueueSetsAside(t, clk, db, h.RawRing(db), h.SetAside, &log)
	})
}

// ExerciseNodeClaims runs what a backend that nodes of a cluster share
// must show when one of them dies: a live node releases the dead node's
// received messages and log claims, and only those. Open's handles are
// the nodes "a" (alive) and "b" (the one that dies).
func ExerciseNodeClaims[S NodeClaimStore](t *testing.T, h SharedHarness[S]) {
	t.Helper()
	t.Run("ReleaseNodeClaims", func(t *testing.T) {
		t.Parallel()
		live, dead := h.Open(t, SharedOptions{Fake: clock.NewFake(sharedEpoch)})
		testReleaseNodeClaims(t, live, dead)
	})
	t.Run("ReleaseNodeClaimsExpiresLogClaims", func(t *testing.T) {
		t.Parallel()
		clk := clock.NewFake(sharedEpoch)
		live, dead := h.Open(t, SharedOptions{Fake: clk})
		testReleaseNodeClaimsExpiresLogClaims(t, clk, live, dead)
	})
	t.Run("CallingClaimsOutliveRelease", func(t *testing.T) {
		t.Parallel()
		clk := clock.NewFake(sharedEpoch)
		live, dead := h.Open(t, SharedOptions{Fake: clk})
		testCallingClaimsOutliveRelease(t, clk, live, dead)
	})
}

// testDispatchLanesAreSeparate: a task sent to one dispatch lane is
// received from that lane only, and counted in its depth only.
func testDispatchLanesAreSeparate(t *testing.T, db SharedStore) {
	ctx := t.Context()
	task := fire.DispatchTask{Occurrence: fire.Occurrence{JobID: 3, Type: xjob.TriggerCron, FireTime: 42}, Revision: 2}
	if err := db.Dispatch(fire.LaneSlow).Send(ctx, []driver.Outgoing[fire.DispatchTask]{{Msg: task}}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Dispatch(fire.LaneFast).Receive(ctx, driver.ReceiveParams{Max: 10})
	if err != nil || len(got) != 0 {
		t.Fatalf("fast lane: %v %v", got, err)
	}
	got, err = db.Dispatch(fire.LaneSlow).Receive(ctx, driver.ReceiveParams{Max: 10})
	if err != nil || len(got) != 1 || got[0].Msg.Occurrence != task.Occurrence || got[0].Msg.Revision != 2 {
		t.Fatalf("slow lane: %+v %v", got, err)
	}
	depths, err := db.QueueDepths(ctx)
	if err != nil || !reflect.DeepEqual(depths, map[string]int64{"ring": 0, "fast": 0, "slow": 1}) {
		t.Fatalf("queue depths: %v %v", depths, err)
	}
}

// testTwoHandlesOneWinner races two handles, two goroutines each, on
// every conditional write the pipeline relies on — a log's creation, a
// job's advance alone and in a batch, a lease, an occurrence's claim in a
// batch — and wants exactly one winner of each, the others losing with
// the port's error.
func testTwoHandlesOneWinner(t *testing.T, a, b SharedStore) {
	ctx := t.Context()
	stores := []SharedStore{a, b, a, b}
	const contests = 5
	names := [contests]string{"create", "advance", "advance many", "acquire", "claim"}
	for round := range 20 {
		job, err := a.JobInsert(ctx, xjob.Job{GroupID: 1, TriggerStatus: xjob.StatusRunning, TriggerNextTime: 1})
		if err != nil {
			t.Fatal(err)
		}
		other, err := a.JobInsert(ctx, xjob.Job{GroupID: 1, TriggerStatus: xjob.StatusRunning, TriggerNextTime: 1})
		if err != nil {
			t.Fatal(err)
		}
		occ := fmt.Sprintf("occ-%d", round)
		lease := fmt.Sprintf("lease-%d", round)
		res := make(chan [contests]error, len(stores))
		start := make(chan struct{})
		for i, s := range stores {
			go func() {
				<-start
				var o [contests]error
				_, o[0] = s.LogCreate(ctx, xjob.Log{OccurrenceID: occ, JobID: job.ID, TriggerTime: int64(i)})
				o[1] = s.JobAdvance(ctx, driver.JobAdvanceParams{ID: job.ID, ExpectVersion: job.Version, TriggerNextTime: int64(100 + i)})
				errs, err := s.JobAdvanceMany(ctx, []driver.JobAdvanceParams{{ID: other.ID, ExpectVersion: other.Version, TriggerNextTime: int64(100 + i)}})
				if err == nil {
					err = errs[0]
				}
				o[2] = err
				_, o[3] = s.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: lease, Owner: fmt.Sprint("p", i), Now: 1, TTL: time.Minute})
				// A second occurrence claimed in batches: one creates it,
				// the others see it held.
				cs, err := s.LogCreateMany(ctx, []xjob.Log{{OccurrenceID: occ + "-batch", JobID: job.ID, TriggerTime: 1, ClaimUntil: 1000}})
				switch {
				case err != nil:
					o[4] = err
				case cs[0].Outcome == driver.ClaimHeld:
					o[4] = xjob.ErrConflict
				case cs[0].Outcome != driver.ClaimCreated:
					o[4] = fmt.Errorf("claim outcome %v", cs[0].Outcome)
				}
				res <- o
			}()
		}
		close(start)
		var wins [contests]int
		lost := [contests]error{xjob.ErrConflict, xjob.ErrConflict, xjob.ErrConflict, xjob.ErrLeaseHeld, xjob.ErrConflict}
		for range stores {
			o := <-res
			for k, err := range o {
				switch {
				case err == nil:
					wins[k]++
				case !errors.Is(err, lost[k]):
					t.Fatalf("round %d: %s: unexpected error %v", round, names[k], err)
				}
			}
		}
		if wins != [contests]int{1, 1, 1, 1, 1} {
			t.Fatalf("round %d: winners %v = %v, want one each", round, names, wins)
		}
	}
}

// testQueueTwoHandles: receivers on two handles never hold the same
// message at once, and a stale receipt cannot ack or retry a redelivery.
func testQueueTwoHandles(t *testing.T, clk *clock.Fake, a, b SharedStore) {
	ctx := t.Context()
	var outs []driver.Outgoing[fire.RingBucket]
	for i := range 50 {
		outs = append(outs, driver.Outgoing[fire.RingBucket]{Msg: fire.RingBucket{Second: int64(i)}})
	}
	if err := a.Ring().Send(ctx, outs); err != nil {
		t.Fatal(err)
	}
	seen := make(chan int64, 100)
	done := make(chan error, 4)
	for i := range 4 {
		q := []SharedStore{a, b}[i%2].Ring()
		go func() {
			for {
				ds, err := q.Receive(ctx, driver.ReceiveParams{Max: 3, Visibility: time.Minute})
				if err != nil || len(ds) == 0 {
					done <- err
					return
				}
				for _, d := range ds {
					seen <- d.Msg.Second
				}
			}
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	close(seen)
	got := map[int64]int{}
	for s := range seen {
		got[s]++
	}
	if len(got) != 50 {
		t.Fatalf("received %d distinct messages, want 50", len(got))
	}
	for s, n := range got {
		if n != 1 {
			t.Fatalf("message %d delivered %d times within its visibility", s, n)
		}
	}

	// Stale receipt: the first delivery's token does not ack the second.
	clk.Advance(2 * time.Minute)
	d1, err := a.Ring().Receive(ctx, driver.ReceiveParams{Max: 1, Visibility: time.Second})
	if err != nil || len(d1) != 1 {
		t.Fatalf("receive: %v %v", d1, err)
	}
	clk.Advance(2 * time.Second)
	d2, err := b.Ring().Receive(ctx, driver.ReceiveParams{Max: 50, Visibility: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var again *driver.Delivery[fire.RingBucket]
	for i := range d2 {
		if d2[i].Msg.Second == d1[0].Msg.Second {
			again = &d2[i]
		}
	}
	if again == nil || again.Receives != 3 { // first pass, d1, now
		t.Fatalf("message %d not redelivered: %+v", d1[0].Msg.Second, d2)
	}
	if err := a.Ring().Ack(ctx, []string{d1[0].Token}); err != nil {
		t.Fatal(err)
	}
	if err := a.Ring().Retry(ctx, d1[0].Token, 0); !errors.Is(err, xjob.ErrNotFound) {
		t.Fatalf("retry with stale token: %v", err)
	}
	if depths, err := a.QueueDepths(ctx); err != nil || depths["ring"] != 50 {
		t.Fatalf("stale ack deleted a redelivered message: %v (%v)", depths, err)
	}
	if err := b.Ring().Ack(ctx, []string{again.Token}); err != nil {
		t.Fatal(err)
	}
	if err := a.Ring().Ack(ctx, []string{"garbage"}); err == nil {
		t.Fatal("ack of a malformed token succeeded")
	}
}

// testReceiveWaitHonoursContext: a long poll on an empty queue ends with
// its context's error when the context ends, not at the end of its wait.
func testReceiveWaitHonoursContext(t *testing.T, clk *clock.Fake, db SharedStore) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := db.Ring().Receive(ctx, driver.ReceiveParams{Max: 1, Wait: time.Hour})
		done <- err
	}()
	if err := clk.WaitForSleepers(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("receive after cancel: %v", err)
	}
}

// testReceiveWaitSeesOtherHandlesSend: a long poll on one handle, once
// it waits (sleeping says so), returns a message another handle sends,
// or retries, within the bound, well before its wait ends (real clock:
// how the waiting handle learns of the message, by polling or by a
// notification, is what is tested).
func testReceiveWaitSeesOtherHandlesSend(t *testing.T, sleeping <-chan struct{}, within time.Duration, a, b SharedStore) {
	ctx := t.Context()
	wait := func(meanwhile func()) []driver.Delivery[fire.RingBucket] {
		t.Helper()
		select { // a sleep of an earlier poll
		case <-sleeping:
		default:
		}
		done := make(chan []driver.Delivery[fire.RingBucket], 1)
		go func() {
			ds, err := a.Ring().Receive(ctx, driver.ReceiveParams{Max: 1, Wait: time.Minute, Visibility: time.Hour})
			if err != nil {
				t.Error(err)
			}
			done <- ds
		}()
		select {
		case <-sleeping:
		case ds := <-done:
			t.Fatalf("the long poll on a returned %+v before it waited", ds)
		}
		start := time.Now()
		meanwhile()
		select {
		case ds := <-done:
			if took := time.Since(start); took > within {
				t.Fatalf("the long poll on a woke %v after b's write, want within %v", took, within)
			}
			return ds
		case <-time.After(within):
			t.Fatalf("the long poll on a did not wake within %v", within)
			return nil
		}
	}
	ds := wait(func() {
		if err := b.Ring().Send(ctx, []driver.Outgoing[fire.RingBucket]{{Msg: fire.RingBucket{Second: 9}}}); err != nil {
			t.Fatal(err)
		}
	})
	if len(ds) != 1 || ds[0].Msg.Second != 9 {
		t.Fatalf("long poll on a after b's send: %+v", ds)
	}
	again := wait(func() {
		if err := b.Ring().Retry(ctx, ds[0].Token, 0); err != nil {
			t.Fatal(err)
		}
	})
	if len(again) != 1 || again[0].Msg.Second != 9 || again[0].Receives != 2 {
		t.Fatalf("long poll on a after b's retry: %+v", again)
	}
}

// testReleaseClaims: after a crash the next process releases what the
// dead one held: its received messages come back at once (not the
// delayed ones), its receipts no longer retry, and an occurrence it
// claimed and never triggered can be taken over while a triggered one
// stays a duplicate.
func testReleaseClaims(t *testing.T, clk *clock.Fake, db SharedStore) {
	ctx := t.Context()
	q := db.Ring()
	later := clk.Now().Add(time.Minute).UnixMilli()
	if err := q.Send(ctx, []driver.Outgoing[fire.RingBucket]{{Msg: fire.RingBucket{Second: 1}}, {Msg: fire.RingBucket{Second: 2}, VisibleAt: later}}); err != nil {
		t.Fatal(err)
	}
	held, err := q.Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Hour})
	if err != nil || len(held) != 1 {
		t.Fatalf("receive = %v, %v", held, err)
	}
	// The dead process had claimed one occurrence (log created, never
	// triggered) and triggered another.
	now := clk.Now().UnixMilli()
	claimed, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: "j1/t1/s0", JobID: 1, TriggerType: xjob.TriggerCron,
		TriggerTime: now - 1000, ClaimUntil: now + 29_000})
	if err != nil {
		t.Fatal(err)
	}
	triggered, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: "j2/t1/s0", JobID: 2, TriggerType: xjob.TriggerCron,
		TriggerTime: now - 1000, ClaimUntil: now + 29_000})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.LogTriggered(ctx, driver.LogTriggeredParams{ID: triggered.ID, TriggerCode: 200}); err != nil {
		t.Fatal(err)
	}
	n, err := db.ReleaseClaims(ctx)
	if err != nil || n != 1 {
		t.Fatalf("ReleaseClaims = %d, %v; want the one claimed message (not the delayed one)", n, err)
	}
	res, err := db.LogCreateMany(ctx, []xjob.Log{
		{OccurrenceID: "j1/t1/s0", JobID: 1, TriggerType: xjob.TriggerCron, TriggerTime: now, ClaimUntil: now + 30_000},
		{OccurrenceID: "j2/t1/s0", JobID: 2, TriggerType: xjob.TriggerCron, TriggerTime: now, ClaimUntil: now + 30_000},
	})
	if err != nil || res[0].Outcome != driver.ClaimTakenOver || res[0].Log.ID != claimed.ID || res[1].Outcome != driver.ClaimTriggered {
		t.Fatalf("after release: %+v, %v; want the claimed log taken over and the triggered one a duplicate", res, err)
	}
	again, err := q.Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Hour})
	if err != nil || len(again) != 1 || again[0].Msg.Second != 1 || again[0].Receives != 2 {
		t.Fatalf("after release: %+v, %v; want the released message, second receive", again, err)
	}
	if err := q.Retry(ctx, held[0].Token, 0); !errors.Is(err, xjob.ErrNotFound) {
		t.Fatalf("stale token retry = %v, want ErrNotFound", err)
	}
}

// cacheJob is the job the JobGetMany cache tests read.
func cacheJob(conf string) xjob.Job {
	j := xjob.Job{GroupID: 1, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixRate, ScheduleConf: conf,
		Handler: "h", TriggerStatus: xjob.StatusRunning, TriggerNextTime: 1_800_000_000_000}
	j.ApplyDefaults()
	return j
}

// testJobGetManyCacheFollowsOtherHandles: JobGetMany may serve unchanged
// jobs from memory, but a write through another handle bumps the
// version and the next read sees it, as it sees the slow-dispatch
// counters that change without a bump, advances and a delete; a job
// asked for twice comes once, and what it returns always equals the row
// JobGet reads.
func testJobGetManyCacheFollowsOtherHandles(t *testing.T, a, b SharedStore) {
	ctx := t.Context()
	j, err := a.JobInsert(ctx, cacheJob("60"))
	if err != nil {
		t.Fatal(err)
	}
	read := func(what string) xjob.Job {
		t.Helper()
		got, err := a.JobGetMany(ctx, []int64{j.ID, 424242, j.ID})
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %v, %v", what, got, err)
		}
		one, err := a.JobGet(ctx, j.ID)
		if err != nil || !reflect.DeepEqual(one, got[0]) {
			t.Fatalf("%s: cached %+v\nrow %+v (%v)", what, got[0], one, err)
		}
		return got[0]
	}
	if got := read("first read"); got.Param != j.Param || got.Version != 1 {
		t.Fatalf("first read: %+v", got)
	}
	edited := j
	edited.Param = "changed elsewhere"
	if _, err := b.JobUpdate(ctx, driver.JobUpdateParams{Job: edited, ExpectVersion: 1}); err != nil {
		t.Fatal(err)
	}
	if got := read("after the other handle's edit"); got.Param != "changed elsewhere" || got.Version != 2 {
		t.Fatalf("after the other handle's edit: %+v", got)
	}
	if err := b.JobRecordSlow(ctx, j.ID, 7); err != nil {
		t.Fatal(err)
	}
	if got := read("after a slow dispatch"); got.SlowMinute != 7 || got.SlowCount != 1 {
		t.Fatalf("after a slow dispatch: minute %d count %d", got.SlowMinute, got.SlowCount)
	}
	for _, st := range []driver.JobAdvanceParams{
		{ID: j.ID, ExpectVersion: 2, TriggerLastTime: 1_800_000_000_000, TriggerNextTime: 1_800_000_010_000},
		{ID: j.ID, ExpectVersion: 3, Stop: true},
	} {
		if errs, err := b.JobAdvanceMany(ctx, []driver.JobAdvanceParams{st}); err != nil || errs[0] != nil {
			t.Fatal(errs, err)
		}
		read(fmt.Sprintf("after the other handle's advance %+v", st))
	}
	if err := b.JobDelete(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := a.JobGetMany(ctx, []int64{j.ID}); err != nil || len(got) != 0 {
		t.Fatalf("after delete: %v, %v", got, err)
	}
}

// testJobGetManyCacheFollowsAdvances: the scan's committed advances
// through the reading handle, several of one job in one call included,
// reach what JobGetMany returns; a conflicting one does not, a job asked
// for twice comes once, and JobGetMany always equals the row JobGet
// reads.
func testJobGetManyCacheFollowsAdvances(t *testing.T, db SharedStore) {
	ctx := t.Context()
	j, err := db.JobInsert(ctx, cacheJob("1"))
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string) {
		t.Helper()
		many, err := db.JobGetMany(ctx, []int64{j.ID, 424242, j.ID})
		if err != nil || len(many) != 1 {
			t.Fatalf("%s: %v, %v", what, many, err)
		}
		one, err := db.JobGet(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(many[0], one) {
			t.Fatalf("%s: cached %+v\nrow %+v", what, many[0], one)
		}
	}
	same("first read")
	for _, st := range []struct {
		name string
		ps   []driver.JobAdvanceParams
		ok   []bool
	}{
		{"advance", []driver.JobAdvanceParams{{ID: j.ID, ExpectVersion: 1, TriggerLastTime: 1_800_000_000_000, TriggerNextTime: 1_800_000_010_000}}, []bool{true}},
		{"stale advance (conflict)", []driver.JobAdvanceParams{{ID: j.ID, ExpectVersion: 1, TriggerLastTime: 1, TriggerNextTime: 2}}, []bool{false}},
		{"two advances of one job in one call", []driver.JobAdvanceParams{
			{ID: j.ID, ExpectVersion: 2, TriggerLastTime: 1_800_000_010_000, TriggerNextTime: 1_800_000_020_000},
			{ID: j.ID, ExpectVersion: 3, TriggerLastTime: 1_800_000_020_000, TriggerNextTime: 1_800_000_030_000}}, []bool{true, true}},
		{"stop", []driver.JobAdvanceParams{{ID: j.ID, ExpectVersion: 4, Stop: true}}, []bool{true}},
	} {
		errs, err := db.JobAdvanceMany(ctx, st.ps)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		for i, ok := range st.ok {
			if (errs[i] == nil) != ok {
				t.Fatalf("%s: item %d: %v", st.name, i, errs[i])
			}
		}
		same("after " + st.name)
	}
}

// testQueueSetsAside: a queued message this version cannot read (a newer
// version's, after a downgrade, or corrupt) does not hold back the
// messages received with it and is not lost: it is set aside for
// setAside, said in the log, and received again after that.
func testQueueSetsAside(t *testing.T, clk *clock.Fake, db SharedStore, raw driver.Queue[json.RawMessage], setAside time.Duration, log *lockedBuffer) {
	ctx := t.Context()
	var out []driver.Outgoing[json.RawMessage]
	for _, b := range []string{`{"v":2,"shard":0,"second":9,"items":[]}`, `{"shard":1,"second":8,"items":[{"j":1,"t":8000,"r":1}]}`, `"not a bucket"`} {
		out = append(out, driver.Outgoing[json.RawMessage]{Msg: json.RawMessage(b)})
	}
	if err := raw.Send(ctx, out); err != nil {
		t.Fatal(err)
	}
	receive := func() []driver.Delivery[fire.RingBucket] {
		t.Helper()
		ds, err := db.Ring().Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Minute})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		return ds
	}
	lines := func() int { return strings.Count(log.String(), "set aside") }
	ds := receive()
	if len(ds) != 1 || ds[0].Msg.Second != 8 || ds[0].Msg.Shard != 1 {
		t.Fatalf("received %+v, want only the readable bucket", ds)
	}
	if err := db.Ring().Ack(ctx, []string{ds[0].Token}); err != nil {
		t.Fatal(err)
	}
	if n := lines(); n != 2 {
		t.Fatalf("%d set-aside log lines, want 2:\n%s", n, log.String())
	}
	clk.Advance(setAside - time.Second)
	if ds := receive(); len(ds) != 0 {
		t.Fatalf("set-aside messages back early: %+v", ds)
	}
	clk.Advance(2 * time.Second)
	receive()
	if depths, err := db.QueueDepths(ctx); err != nil || depths["ring"] != 2 {
		t.Fatalf("ring holds %v (%v), want the 2 unreadable messages kept", depths, err)
	}
	if n := lines(); n != 4 {
		t.Fatalf("%d set-aside log lines after the set-aside time, want 4 (both tried again)", n)
	}
}

// testReleaseNodeClaims: a live node that sees a peer die releases only
// that peer's received messages: they come back at once, for a second
// receive, and the dead node's receipts no longer retry; the live node's
// own stay hidden.
func testReleaseNodeClaims(t *testing.T, live, dead NodeClaimStore) {
	ctx := t.Context()
	if err := live.Dispatch(fire.LaneFast).Send(ctx, []driver.Outgoing[fire.DispatchTask]{
		{Msg: fire.DispatchTask{Revision: 1}}, {Msg: fire.DispatchTask{Revision: 2}}}); err != nil {
		t.Fatal(err)
	}
	p := driver.ReceiveParams{Max: 1, Visibility: time.Hour}
	lost, err := dead.Dispatch(fire.LaneFast).Receive(ctx, p)
	if err != nil || len(lost) != 1 {
		t.Fatalf("dead node's receive: %+v, %v", lost, err)
	}
	kept, err := live.Dispatch(fire.LaneFast).Receive(ctx, p)
	if err != nil || len(kept) != 1 {
		t.Fatalf("live node's receive: %+v, %v", kept, err)
	}
	if n, err := live.ReleaseNodeClaims(ctx, "b"); err != nil || n != 1 {
		t.Fatalf("ReleaseNodeClaims = %d, %v; want the dead node's one message", n, err)
	}
	back, err := live.Dispatch(fire.LaneFast).Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Hour})
	if err != nil || len(back) != 1 || back[0].Msg.Revision != lost[0].Msg.Revision || back[0].Receives != 2 {
		t.Fatalf("after release: %+v, %v; want only the dead node's message, second receive", back, err)
	}
	if err := dead.Dispatch(fire.LaneFast).Retry(ctx, lost[0].Token, 0); !errors.Is(err, xjob.ErrNotFound) {
		t.Fatalf("dead node's stale token: %v, want ErrNotFound", err)
	}
}

// testReleaseNodeClaimsExpiresLogClaims: the logs a dead node claimed and
// never triggered (a ring bucket's, prepared a second before their
// instant) are taken over at once after a live node releases the dead
// node's claims, not after the claim TTL; the live node's own claims,
// made alone or in a batch, stay held and the dead node's triggered logs
// stay duplicates.
func testReleaseNodeClaimsExpiresLogClaims(t *testing.T, clk *clock.Fake, live, dead NodeClaimStore) {
	ctx := t.Context()
	now := clk.Now().UnixMilli()
	claim := func(occ string, job int64) xjob.Log {
		return xjob.Log{OccurrenceID: occ, JobID: job, TriggerType: xjob.TriggerCron, TriggerTime: now, ClaimUntil: now + 30_000}
	}
	if _, err := dead.LogCreateMany(ctx, []xjob.Log{claim("j1/t1/s0", 1), claim("j2/t1/s0", 2)}); err != nil {
		t.Fatal(err)
	}
	triggered, err := dead.LogCreate(ctx, claim("j4/t1/s0", 4))
	if err != nil {
		t.Fatal(err)
	}
	if err := dead.LogTriggered(ctx, driver.LogTriggeredParams{ID: triggered.ID, TriggerCode: 200}); err != nil {
		t.Fatal(err)
	}
	if _, err := live.LogCreateMany(ctx, []xjob.Log{claim("j3/t1/s0", 3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := live.LogCreate(ctx, claim("j5/t1/s0", 5)); err != nil {
		t.Fatal(err)
	}
	before, err := live.LogCreateMany(ctx, []xjob.Log{claim("j1/t1/s0", 1)})
	if err != nil || before[0].Outcome != driver.ClaimHeld {
		t.Fatalf("before the release: %+v, %v; want the dead node's claim held", before, err)
	}
	if _, err := live.ReleaseNodeClaims(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	res, err := live.LogCreateMany(ctx, []xjob.Log{claim("j1/t1/s0", 1), claim("j2/t1/s0", 2), claim("j3/t1/s0", 3), claim("j4/t1/s0", 4), claim("j5/t1/s0", 5)})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []driver.ClaimOutcome{driver.ClaimTakenOver, driver.ClaimTakenOver, driver.ClaimHeld, driver.ClaimTriggered, driver.ClaimHeld} {
		if res[i].Outcome != want {
			t.Errorf("log %d after releasing the dead node's claims: %v, want %v", i+1, res[i].Outcome, want)
		}
	}
}

// testCallingClaimsOutliveRelease: a node seen leaving while it is only
// slow keeps the claims it marked as calling (it may be calling them
// now: taking them over would run them twice) and loses the others,
// which a live node takes over at once; the slow node's mark of a lost
// claim then keeps nothing, so it does not call what was taken over.
func testCallingClaimsOutliveRelease(t *testing.T, clk *clock.Fake, live, dead NodeClaimStore) {
	ctx := t.Context()
	now := clk.Now().UnixMilli()
	claim := func(occ string, job int64) xjob.Log {
		return xjob.Log{OccurrenceID: occ, JobID: job, TriggerType: xjob.TriggerCron, TriggerTime: now, ClaimUntil: now + 30_000}
	}
	held, err := dead.LogCreateMany(ctx, []xjob.Log{claim("j1/t1/s0", 1), claim("j2/t1/s0", 2)})
	if err != nil {
		t.Fatal(err)
	}
	calling, ahead := held[0].Log, held[1].Log
	kept, err := dead.LogsCalling(ctx, []driver.LogRef{{ID: calling.ID, Version: calling.Version}})
	if err != nil || len(kept) != 1 {
		t.Fatalf("the slow node marks its first claim: %+v, %v", kept, err)
	}
	if _, err := live.ReleaseNodeClaims(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	res, err := live.LogCreateMany(ctx, []xjob.Log{claim("j1/t1/s0", 1), claim("j2/t1/s0", 2)})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != driver.ClaimHeld || res[1].Outcome != driver.ClaimTakenOver {
		t.Fatalf("after the release: calling claim %v, claim ahead %v; want held, taken over", res[0].Outcome, res[1].Outcome)
	}
	late, err := dead.LogsCalling(ctx, []driver.LogRef{{ID: ahead.ID, Version: ahead.Version}})
	if err != nil || len(late) != 0 {
		t.Fatalf("the slow node marks the claim taken from it: %+v, %v; want nothing kept", late, err)
	}
	// The live node's own claim, marked, is its to call.
	mine, err := live.LogsCalling(ctx, []driver.LogRef{{ID: res[1].Log.ID, Version: res[1].Log.Version}})
	if err != nil || len(mine) != 1 {
		t.Fatalf("the live node marks what it took over: %+v, %v", mine, err)
	}
}

// lockedBuffer is a log sink the handles' goroutines write to while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

var _ io.Writer = (*lockedBuffer)(nil)

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
