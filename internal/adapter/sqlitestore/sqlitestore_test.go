package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/driver/drivertest"
)

var epoch = time.UnixMilli(1_700_000_000_000)

// setup opens a DB on a fresh temp file, closed when the test ends.
func setup(t testing.TB, opts Options) *DB {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "xjob.db"), opts)
}

func openAt(t testing.TB, path string, opts Options) *DB {
	t.Helper()
	db, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return db
}

func TestStoreContract(t *testing.T) {
	t.Parallel()
	drivertest.Exercise(t, func(t *testing.T) driver.Store {
		return setup(t, Options{Shards: 4, Clock: clock.NewFake(epoch)})
	})
}

func TestNodeStoreContract(t *testing.T) {
	t.Parallel()
	drivertest.ExerciseNodeStore(t, func(t *testing.T) driver.NodeStore {
		return setup(t, Options{Clock: clock.NewFake(epoch)})
	})
}

func TestQueueContract(t *testing.T) {
	t.Parallel()
	harness := func(t *testing.T, pick func(*DB) driver.Queue[fire.RingBucket]) drivertest.QueueHarness {
		clk := clock.NewFake(epoch)
		db := setup(t, Options{Clock: clk})
		return drivertest.QueueHarness{Queue: pick(db), Now: clk.Now, Advance: clk.Advance,
			Settle: func(ctx context.Context) { _ = clk.WaitForSleepers(ctx, 1) }}
	}
	t.Run("Ring", func(t *testing.T) {
		t.Parallel()
		drivertest.ExerciseQueue(t, func(t *testing.T) drivertest.QueueHarness {
			return harness(t, func(db *DB) driver.Queue[fire.RingBucket] { return db.Ring() })
		})
	})
	// The dispatch lanes share the ring's implementation; run the suite on
	// one through a queue of ring buckets under a lane's table name.
	t.Run("NamedQueue", func(t *testing.T) {
		t.Parallel()
		drivertest.ExerciseQueue(t, func(t *testing.T) drivertest.QueueHarness {
			return harness(t, func(db *DB) driver.Queue[fire.RingBucket] { return newQueue[fire.RingBucket](db, "dispatch-fast") })
		})
	})
}

func TestDispatchLanesAreSeparate(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{Clock: clock.NewFake(epoch)})
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
}

func TestMigrationsIdempotentOnReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "xjob.db")
	ctx := t.Context()
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j, err := db.JobInsert(ctx, xjob.Job{GroupID: 1, Description: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		db = openAt(t, path, Options{})
		got, err := db.JobGet(ctx, j.ID)
		if err != nil || got.Description != "kept" {
			t.Fatalf("after reopen: %+v %v", got, err)
		}
	}
	files, _ := fs.Glob(migrationFS, "migrations/*.sql")
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(files) || n == 0 {
		t.Fatalf("%d migrations recorded, %d embedded", n, len(files))
	}
	var mode string
	if err := db.r.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal mode %q (%v), want wal", mode, err)
	}
}

func TestConcurrentOpenOfNewFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "xjob.db")
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			db, err := Open(context.Background(), path, Options{})
			if err == nil {
				err = db.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
}

func TestJobsDueUsesPartialIndex(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	for _, q := range []string{jobsDueSQL, strings.Replace(jobsDueSQL, "INDEXED BY jobs_due", "", 1)} {
		plan := queryPlan(t, db, q, 1, 2, 3, 4, 5)
		p := strings.Join(plan, "\n")
		if !strings.Contains(p, "USING INDEX jobs_due") || strings.Contains(p, "TEMP B-TREE") {
			t.Fatalf("JobsDue plan does not read the due index in order:\n%s", p)
		}
	}
}

// TestTwoHandlesOneWinner races two *DB handles on one file, as processes
// of local mode do: every conditional write has exactly one winner.
func TestTwoHandlesOneWinner(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "xjob.db")
	a, b := openAt(t, path, Options{Shards: 4}), openAt(t, path, Options{Shards: 4})
	ctx := t.Context()
	stores := []*DB{a, b, a, b}
	for round := range 20 {
		job, err := a.JobInsert(ctx, xjob.Job{GroupID: 1, TriggerStatus: xjob.StatusRunning, TriggerNextTime: 1})
		if err != nil {
			t.Fatal(err)
		}
		occ := fmt.Sprintf("occ-%d", round)
		lease := fmt.Sprintf("lease-%d", round)
		type outcome struct{ create, advance, acquire error }
		res := make(chan outcome, len(stores))
		start := make(chan struct{})
		for i, s := range stores {
			go func() {
				<-start
				var o outcome
				_, o.create = s.LogCreate(ctx, xjob.Log{OccurrenceID: occ, JobID: job.ID, TriggerTime: int64(i)})
				o.advance = s.JobAdvance(ctx, driver.JobAdvanceParams{ID: job.ID, ExpectVersion: job.Version, TriggerNextTime: int64(100 + i)})
				_, o.acquire = s.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: lease, Owner: fmt.Sprint("p", i), Now: 1, TTL: time.Minute})
				res <- o
			}()
		}
		close(start)
		var wins [3]int
		for range stores {
			o := <-res
			for k, pair := range []struct{ err, lost error }{{o.create, xjob.ErrConflict}, {o.advance, xjob.ErrConflict}, {o.acquire, xjob.ErrLeaseHeld}} {
				switch {
				case pair.err == nil:
					wins[k]++
				case !errors.Is(pair.err, pair.lost):
					t.Fatalf("round %d: unexpected error %v", round, pair.err)
				}
			}
		}
		if wins != [3]int{1, 1, 1} {
			t.Fatalf("round %d: winners (create, advance, acquire) = %v, want one each", round, wins)
		}
	}
}

// TestQueueTwoHandlesDeliverOnce: receivers on two handles never hold the
// same message at once, and a stale token cannot ack a redelivery.
func TestQueueTwoHandles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "xjob.db")
	clk := clock.NewFake(epoch)
	a, b := openAt(t, path, Options{Clock: clk}), openAt(t, path, Options{Clock: clk})
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
		q := []*DB{a, b}[i%2].Ring()
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

	// Stale token: the first delivery's token does not ack the second.
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
	var n int
	if err := a.r.QueryRowContext(ctx, `SELECT count(*) FROM queue_messages WHERE queue = 'ring'`).Scan(&n); err != nil || n != 50 {
		t.Fatalf("stale ack deleted a redelivered message: %d left (%v)", n, err)
	}
	if err := b.Ring().Ack(ctx, []string{again.Token}); err != nil {
		t.Fatal(err)
	}
	if err := a.Ring().Ack(ctx, []string{"garbage"}); err == nil {
		t.Fatal("ack of a malformed token succeeded")
	}
}

func TestReceiveWaitHonoursContext(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	db := setup(t, Options{Clock: clk})
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

// TestGroupCommitIsolatesFailures runs one transaction of many requests,
// a quarter of which write and then fail: each failing request is rolled
// back alone (its savepoint), and every other request of the transaction
// commits. The test hands the batch to runBatch itself, as the writer
// goroutine does with the requests it collects, so the requests share
// the transaction by construction rather than by the scheduler's timing;
// the writer goroutine stays idle meanwhile, as nothing else writes.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	ctx := t.Context()
	errBoom := errors.New("boom")
	const n = 64
	batch := make([]*writeReq, n)
	for i := range batch {
		fn := func(ctx context.Context, c *sql.Conn) error {
			_, err := c.ExecContext(ctx, `INSERT INTO report_days (day, running_count, suc_count, fail_count)
				VALUES (?, 0, 1, 0)`, fmt.Sprintf("ok-%02d", i))
			return err
		}
		if i%4 == 0 { // writes a row, then fails
			fn = func(ctx context.Context, c *sql.Conn) error {
				if _, err := c.ExecContext(ctx, `INSERT INTO report_days (day, running_count, suc_count, fail_count)
					VALUES (?, 0, 0, 0)`, fmt.Sprintf("failed-%02d", i)); err != nil {
					return err
				}
				return errBoom
			}
		}
		batch[i] = &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	}
	commits, committed := db.commits.Load(), db.committed.Load()
	if rest := db.runBatch(batch); len(rest) != 0 {
		t.Fatalf("runBatch handed back %d requests", len(rest))
	}
	if c, r := db.commits.Load()-commits, db.committed.Load()-committed; c != 1 || r != n {
		t.Fatalf("%d transactions carried %d requests, want 1 carrying %d", c, r, n)
	}
	for i, r := range batch {
		err := <-r.done
		if want := i%4 == 0; want != errors.Is(err, errBoom) || (!want && err != nil) {
			t.Fatalf("request %d answered %v", i, err)
		}
	}
	days, err := db.ReportList(ctx, driver.ReportListParams{From: "", To: "~"})
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != n-n/4 {
		t.Fatalf("%d days stored, want the %d successful writes only: %+v", len(days), n-n/4, days)
	}
	for _, d := range days {
		if !strings.HasPrefix(d.Day, "ok-") || d.SucCount != 1 {
			t.Fatalf("a failed request's write was committed: %+v", d)
		}
	}
}

// TestWriteAbandonedBeforeStart: a caller whose context ends while its
// write waits gets the context's error and the write never runs; after
// Close, writes fail instead of hanging.
func TestWriteAbandonedBeforeStart(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	ctx := t.Context()
	hold := make(chan struct{})
	running := make(chan struct{})
	go func() {
		_ = db.write(ctx, func(context.Context, *sql.Conn) error {
			close(running)
			<-hold // keep the writer busy
			return nil
		})
	}()
	<-running
	cctx, cancel := context.WithCancel(ctx)
	ran := false
	done := make(chan error, 1)
	go func() {
		done <- db.write(cctx, func(context.Context, *sql.Conn) error { ran = true; return nil })
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned write: %v", err)
	}
	close(hold)
	if err := db.ReportAdd(ctx, xjob.ReportDay{Day: "d", SucCount: 1}); err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Fatal("an abandoned write ran")
	}
	other := setup(t, Options{})
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if err := other.ReportAdd(ctx, xjob.ReportDay{Day: "d"}); !errors.Is(err, errClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

// After a crash the next process releases what the dead one held: the
// messages come back at once, and the dead process's tokens no longer ack.
func TestReleaseClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(time.UnixMilli(1_800_000_000_000))
	db, err := Open(ctx, filepath.Join(t.TempDir(), "x.db"), Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
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
	// The claimed occurrence can be taken over at once; the triggered one is still a duplicate.
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

// JobGetMany serves unchanged jobs from memory; a write in another process
// (another *DB on the same file) bumps the version, and the next read sees
// it, as it sees the slow-dispatch counters that change without a bump.
func TestJobGetManyCacheFollowsOtherProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "xjob.db")
	a, b := openAt(t, path, Options{Shards: 1}), openAt(t, path, Options{Shards: 1})
	j := xjob.Job{GroupID: 1, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "60",
		Handler: "h", TriggerStatus: xjob.StatusRunning, TriggerNextTime: 1_800_000_000_000}
	j.ApplyDefaults()
	j, err := a.JobInsert(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	read := func(what string) xjob.Job {
		t.Helper()
		got, err := a.JobGetMany(ctx, []int64{j.ID, 424242})
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %v, %v", what, got, err)
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
	if got := read("after the other process's edit"); got.Param != "changed elsewhere" || got.Version != 2 {
		t.Fatalf("after the other process's edit: %+v", got)
	}
	if err := b.JobRecordSlow(ctx, j.ID, 7); err != nil {
		t.Fatal(err)
	}
	if got := read("after a slow dispatch"); got.SlowMinute != 7 || got.SlowCount != 1 {
		t.Fatalf("after a slow dispatch: minute %d count %d", got.SlowMinute, got.SlowCount)
	}
	if err := b.JobDelete(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := a.JobGetMany(ctx, []int64{j.ID}); err != nil || len(got) != 0 {
		t.Fatalf("after delete: %v, %v", got, err)
	}
}

// The scan's committed advances are carried into the JobGetMany cache (the
// job is not read whole again); a failed or conflicting advance is not,
// and the cached job always equals the row JobGet reads.
func TestJobGetManyCacheFollowsAdvances(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openAt(t, filepath.Join(t.TempDir(), "xjob.db"), Options{Shards: 1})
	j := xjob.Job{GroupID: 1, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "1",
		Handler: "h", TriggerStatus: xjob.StatusRunning, TriggerNextTime: 1_800_000_000_000}
	j.ApplyDefaults()
	j, err := db.JobInsert(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string) {
		t.Helper()
		many, err := db.JobGetMany(ctx, []int64{j.ID, 424242})
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
	steps := []struct {
		name string
		p    driver.JobAdvanceParams
		ok   bool
	}{
		{"advance", driver.JobAdvanceParams{ID: j.ID, ExpectVersion: 1, TriggerLastTime: 1_800_000_000_000, TriggerNextTime: 1_800_000_010_000}, true},
		{"stale advance (conflict)", driver.JobAdvanceParams{ID: j.ID, ExpectVersion: 1, TriggerLastTime: 1, TriggerNextTime: 2}, false},
		{"second advance", driver.JobAdvanceParams{ID: j.ID, ExpectVersion: 2, TriggerLastTime: 1_800_000_010_000, TriggerNextTime: 1_800_000_020_000}, true},
		{"stop", driver.JobAdvanceParams{ID: j.ID, ExpectVersion: 3, Stop: true}, true},
	}
	for _, st := range steps {
		errs, err := db.JobAdvanceMany(ctx, []driver.JobAdvanceParams{st.p})
		if err != nil || (errs[0] == nil) != st.ok {
			t.Fatalf("%s: %v, %v", st.name, errs, err)
		}
		same("after " + st.name)
	}
}

// Migration 0007 re-keys the occurrence index time first on a file that
// has logs: a repeated occurrence stays one log, and the claim's lookup of
// an occurrence's log searches the index (an expression that drifted from
// the index's would scan the table on every repeat).
func TestOccurrenceIndexByTime(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "xjob.db")
	ctx := t.Context()
	db := openAt(t, path, Options{})
	log := xjob.Log{OccurrenceID: fire.Occurrence{JobID: 7, Type: xjob.TriggerCron, FireTime: 1_800_000_000_000}.ID(0),
		JobID: 7, GroupID: 1, TriggerType: xjob.TriggerCron, ScheduledTime: 1_800_000_000_000, TriggerTime: 1_800_000_000_000,
		ExecutorHandler: "h", ClaimUntil: 1_800_000_030_000}
	// The file as 0006 left it, with a log.
	for _, q := range []string{
		`DROP INDEX logs_occurrence`,
		`CREATE UNIQUE INDEX logs_occurrence ON logs (occurrence_id)`,
		`DELETE FROM schema_migrations WHERE version = '0007_logs_occurrence_by_time'`,
	} {
		if _, err := db.wc.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	first, err := db.LogCreate(ctx, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openAt(t, path, Options{})
	misfire := log
	misfire.TriggerType = xjob.TriggerMisfire // a second scanner's view of the same fire
	if got, err := db.LogCreate(ctx, misfire); !errors.Is(err, xjob.ErrConflict) || got.ID != first.ID {
		t.Fatalf("repeat after the migration: %+v, %v; want log %d and a conflict", got, err, first.ID)
	}
	plan := queryPlan(t, db, sqlLogByOccurrence, "CRON", log.ScheduledTime, log.OccurrenceID)
	if len(plan) != 1 || !strings.Contains(plan[0], "USING INDEX logs_occurrence") {
		t.Errorf("lookup plan %q, want a search of logs_occurrence", plan)
	}
}

// queryPlan is the detail column of EXPLAIN QUERY PLAN for q with args.
func queryPlan(t *testing.T, db *DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.r.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}

// Migration 0009 keeps a file's day counters as group 0: the
// installation's report still sums them with the groups' counters added
// since, and no group's report claims them.
func TestReportGroupsMigration(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "xjob.db")
	ctx := t.Context()
	db := openAt(t, path, Options{})
	// The file as 0008 left it, with a day counted.
	for _, q := range []string{
		`DROP TABLE report_days`,
		`CREATE TABLE report_days (day TEXT PRIMARY KEY, running_count INTEGER NOT NULL,
			suc_count INTEGER NOT NULL, fail_count INTEGER NOT NULL) WITHOUT ROWID`,
		`INSERT INTO report_days VALUES ('2027-01-15', 1, 20, 3)`,
		`DELETE FROM schema_migrations WHERE version = '0009_report_groups'`,
	} {
		if _, err := db.wc.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openAt(t, path, Options{})
	if err := db.ReportAdd(ctx, xjob.ReportDay{Day: "2027-01-15", GroupID: 4, SucCount: 2}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		groups []int64
		want   []xjob.ReportDay
	}{
		{"every group", nil, []xjob.ReportDay{{Day: "2027-01-15", RunningCount: 1, SucCount: 22, FailCount: 3}}},
		{"group 4", []int64{4}, []xjob.ReportDay{{Day: "2027-01-15", SucCount: 2}}},
	} {
		got, err := db.ReportList(ctx, driver.ReportListParams{From: "2027-01-15", To: "2027-01-15", GroupIDs: c.groups})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s after the migration: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// The latest failures of a group, or of every group, search the partial
// indexes of failed logs: through the time indexes they would read every
// log back to the last failure, all of a group's logs when it never fails.
func TestFailedLogsUseTheirIndexes(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	for _, c := range []struct {
		where string
		args  []any
		index string
	}{
		{"group_id = ? AND " + sqlLogFailed, []any{3, 11}, "logs_group_failed"},
		{sqlLogFailed, []any{11}, "logs_failed"},
	} {
		plan := queryPlan(t, db, `SELECT id FROM logs WHERE 1 = 1 AND `+c.where+
			` ORDER BY trigger_time DESC, id DESC LIMIT ?`, c.args...)
		if len(plan) != 1 || !strings.Contains(plan[0]+" ", "USING INDEX "+c.index+" ") {
			t.Errorf("plan of %s: %q, want a read of %s", c.where, plan, c.index)
		}
	}
}

// A queued message this version cannot read (a newer version's, after a
// downgrade, or corrupt) does not hold back the messages received with it
// and is not lost: it is set aside for SetAside, said in the log, and
// received again after that.
func TestQueueSetsAsideWhatItCannotRead(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	var logBuf strings.Builder
	var mu sync.Mutex
	db := setup(t, Options{Clock: clk, Logger: slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logBuf}, nil))})
	ctx := t.Context()
	raw := newQueue[json.RawMessage](db, "ring")
	bodies := []string{`{"v":2,"shard":0,"second":9,"items":[]}`, `{"shard":1,"second":8,"items":[{"j":1,"t":8000,"r":1}]}`, `"not a bucket"`}
	var out []driver.Outgoing[json.RawMessage]
	for _, b := range bodies {
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
	ds := receive()
	if len(ds) != 1 || ds[0].Msg.Second != 8 || ds[0].Msg.Shard != 1 {
		t.Fatalf("received %+v, want only the readable bucket", ds)
	}
	if err := db.Ring().Ack(ctx, []string{ds[0].Token}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	lines := strings.Count(logBuf.String(), "set aside")
	mu.Unlock()
	if lines != 2 {
		t.Fatalf("%d set-aside log lines, want 2:\n%s", lines, logBuf.String())
	}
	clk.Advance(SetAside - time.Second)
	if ds := receive(); len(ds) != 0 {
		t.Fatalf("set-aside messages back early: %+v", ds)
	}
	clk.Advance(2 * time.Second)
	receive()
	var left int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM queue_messages WHERE queue = 'ring'`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 2 {
		t.Fatalf("%d messages left in the ring queue, want the 2 unreadable ones kept", left)
	}
	mu.Lock()
	lines = strings.Count(logBuf.String(), "set aside")
	mu.Unlock()
	if lines != 4 {
		t.Fatalf("%d set-aside log lines after SetAside, want 4 (both tried again)", lines)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
