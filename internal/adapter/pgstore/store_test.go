package pgstore

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

	"github.com/jackc/pgx/v5"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/testenv/pgserver"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

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

// queryPlan is EXPLAIN's text for q with args, with sequential scans
// priced out: a test table is too small for the planner to prefer an
// index on its own, and the question is whether it can use one.
func queryPlan(t *testing.T, db *DB, q string, args ...any) string {
	t.Helper()
	var lines []string
	err := pgx.BeginFunc(t.Context(), db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), `SET LOCAL enable_seqscan = off`); err != nil {
			return err
		}
		rows, err := tx.Query(t.Context(), `EXPLAIN `+q, args...)
		lines, err = scanAll(rows, err, func(r pgx.Row) (string, error) {
			var s string
			return s, r.Scan(&s)
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// The scan's read walks the partial due index in order (no sort), and
// the log lists' failure filters search their partial indexes.
func TestQueriesUseTheirIndexes(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	for _, tc := range []struct {
		name, q string
		args    []any
		index   string
	}{
		{"jobs due", sqlJobsDue, []any{1, 2, 3, 4, 5}, "jobs_due"},
		{"failed logs of a group", `SELECT id FROM logs WHERE group_id = $1 AND ` + sqlLogFailed +
			` ORDER BY trigger_time DESC, id DESC LIMIT $2`, []any{3, 11}, "logs_group_failed"},
		{"failed logs", `SELECT id FROM logs WHERE ` + sqlLogFailed + ` ORDER BY trigger_time DESC, id DESC LIMIT $1`, []any{11}, "logs_failed"},
		{"occurrence lookup", `SELECT id FROM logs WHERE (occurrence_time, occurrence_id) IN (SELECT * FROM unnest($1::bigint[], $2::text[]))`,
			[]any{[]int64{1}, []string{"x"}}, "logs_occurrence"},
		{"queue claim", `SELECT id FROM queue_messages WHERE queue = $1 AND visible_at <= $2 ORDER BY visible_at, id LIMIT $3`,
			[]any{"ring", 5, 10}, "queue_visible"},
	} {
		plan := queryPlan(t, db, tc.q, tc.args...)
		t.Logf("%s:\n%s", tc.name, plan)
		if !strings.Contains(plan, " "+tc.index+" ") || strings.Contains(plan, "Sort") {
			t.Errorf("%s: plan does not read %s in order:\n%s", tc.name, tc.index, plan)
		}
	}
}

// TestTwoHandlesOneWinner races two nodes' DBs on one database: every
// conditional write has exactly one winner.
func TestTwoHandlesOneWinner(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	a, b := openAt(t, dsn, Options{Shards: 4}), openAt(t, dsn, Options{Shards: 4})
	ctx := t.Context()
	stores := []*DB{a, b, a, b}
	for round := range 20 {
		job, err := a.JobInsert(ctx, xjob.Job{GroupID: 1, TriggerStatus: xjob.StatusRunning, TriggerNextTime: 1})
		if err != nil {
			t.Fatal(err)
		}
		occ := fmt.Sprintf("occ-%d", round)
		lease := fmt.Sprintf("lease-%d", round)
		type outcome struct{ create, advance, acquire, claim error }
		res := make(chan outcome, len(stores))
		start := make(chan struct{})
		for i, s := range stores {
			go func() {
				<-start
				var o outcome
				_, o.create = s.LogCreate(ctx, xjob.Log{OccurrenceID: occ, JobID: job.ID, TriggerTime: int64(i)})
				o.advance = s.JobAdvance(ctx, driver.JobAdvanceParams{ID: job.ID, ExpectVersion: job.Version, TriggerNextTime: int64(100 + i)})
				_, o.acquire = s.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: lease, Owner: fmt.Sprint("p", i), Now: 1, TTL: time.Minute})
				// A second occurrence claimed in batches: one creates it, the
				// others see it held.
				cs, err := s.LogCreateMany(ctx, []xjob.Log{{OccurrenceID: occ + "-batch", JobID: job.ID, TriggerTime: 1, ClaimUntil: 1000}})
				switch {
				case err != nil:
					o.claim = err
				case cs[0].Outcome == driver.ClaimHeld:
					o.claim = xjob.ErrConflict
				case cs[0].Outcome != driver.ClaimCreated:
					o.claim = fmt.Errorf("outcome %d", cs[0].Outcome)
				}
				res <- o
			}()
		}
		close(start)
		var wins [4]int
		for range stores {
			o := <-res
			for k, pair := range []struct{ err, lost error }{{o.create, xjob.ErrConflict}, {o.advance, xjob.ErrConflict},
				{o.acquire, xjob.ErrLeaseHeld}, {o.claim, xjob.ErrConflict}} {
				switch {
				case pair.err == nil:
					wins[k]++
				case !errors.Is(pair.err, pair.lost):
					t.Fatalf("round %d: unexpected error %v", round, pair.err)
				}
			}
		}
		if wins != [4]int{1, 1, 1, 1} {
			t.Fatalf("round %d: winners (create, advance, acquire, claim) = %v, want one each", round, wins)
		}
	}
}

// Receivers on two nodes never hold the same message at once, and a
// stale token cannot ack a redelivery.
func TestQueueTwoHandles(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	clk := clock.NewFake(epoch)
	a, b := openAt(t, dsn, Options{Clock: clk}), openAt(t, dsn, Options{Clock: clk})
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
	if n := countMessages(t, a, "ring"); n != 50 {
		t.Fatalf("stale ack deleted a redelivered message: %d left", n)
	}
	if err := b.Ring().Ack(ctx, []string{again.Token}); err != nil {
		t.Fatal(err)
	}
	if err := a.Ring().Ack(ctx, []string{"garbage"}); err == nil {
		t.Fatal("ack of a malformed token succeeded")
	}
}

func countMessages(t *testing.T, db *DB, queue string) int {
	t.Helper()
	var n int
	if err := db.pool.QueryRow(t.Context(), `SELECT count(*) FROM queue_messages WHERE queue = $1`, queue).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
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

// A send or retry through another node's DB wakes a long-polling
// receiver at once: its poll interval here is an hour, so only the
// notification (notify.go) can.
func TestReceiveWaitSeesOtherNodesSend(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	a := openAt(t, dsn, Options{PollInterval: time.Hour})
	b := openAt(t, dsn, Options{PollInterval: time.Hour})
	ctx := t.Context()
	wait := func(meanwhile func()) []driver.Delivery[fire.RingBucket] {
		t.Helper()
		done := make(chan []driver.Delivery[fire.RingBucket], 1)
		go func() {
			ds, err := a.Ring().Receive(ctx, driver.ReceiveParams{Max: 1, Wait: time.Minute, Visibility: time.Hour})
			if err != nil {
				t.Error(err)
			}
			done <- ds
		}()
		meanwhile()
		select {
		case ds := <-done:
			return ds
		case <-time.After(30 * time.Second):
			t.Fatal("the long poll on a did not wake")
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

// After a crash the next node releases what the dead one held: the
// messages come back at once, and the dead node's tokens no longer ack.
func TestReleaseClaims(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := clock.NewFake(time.UnixMilli(1_800_000_000_000))
	db := setup(t, Options{Clock: clk})
	q := db.Ring()
	later := clk.Now().Add(time.Minute).UnixMilli()
	if err := q.Send(ctx, []driver.Outgoing[fire.RingBucket]{{Msg: fire.RingBucket{Second: 1}}, {Msg: fire.RingBucket{Second: 2}, VisibleAt: later}}); err != nil {
		t.Fatal(err)
	}
	held, err := q.Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Hour})
	if err != nil || len(held) != 1 {
		t.Fatalf("receive = %v, %v", held, err)
	}
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

// A dead node's messages come back when a live node releases them; the
// live node's own claims stay hidden.
func TestReleaseNodeClaims(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	clk := clock.NewFake(epoch)
	dead, live := openAt(t, dsn, Options{Clock: clk, Node: "dead"}), openAt(t, dsn, Options{Clock: clk, Node: "live"})
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
	if n, err := live.ReleaseNodeClaims(ctx, "dead"); err != nil || n != 1 {
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

// The logs a dead node claimed and never triggered (a ring bucket's,
// prepared a second before their instant) are taken over at once after a
// live node releases the dead node's claims, not after the claim TTL;
// the live node's own claims and triggered logs stay as they are.
func TestReleaseNodeClaimsExpiresLogClaims(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	clk := clock.NewFake(epoch)
	dead, live := openAt(t, dsn, Options{Clock: clk, Node: "dead"}), openAt(t, dsn, Options{Clock: clk, Node: "live"})
	ctx := t.Context()
	now := clk.Now().UnixMilli()
	claim := func(occ string, job int64) xjob.Log {
		return xjob.Log{OccurrenceID: occ, JobID: job, TriggerType: xjob.TriggerCron, TriggerTime: now, ClaimUntil: now + 30_000}
	}
	if _, err := dead.LogCreateMany(ctx, []xjob.Log{claim("j1/t1/s0", 1), claim("j2/t1/s0", 2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := live.LogCreate(ctx, claim("j3/t1/s0", 3)); err != nil {
		t.Fatal(err)
	}
	before, err := live.LogCreateMany(ctx, []xjob.Log{claim("j1/t1/s0", 1)})
	if err != nil || before[0].Outcome != driver.ClaimHeld {
		t.Fatalf("before the release: %+v, %v; want the dead node's claim in flight", before, err)
	}
	if _, err := live.ReleaseNodeClaims(ctx, "dead"); err != nil {
		t.Fatal(err)
	}
	res, err := live.LogCreateMany(ctx, []xjob.Log{claim("j1/t1/s0", 1), claim("j2/t1/s0", 2), claim("j3/t1/s0", 3)})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []driver.ClaimOutcome{driver.ClaimTakenOver, driver.ClaimTakenOver, driver.ClaimHeld} {
		if res[i].Outcome != want {
			t.Errorf("log %d after releasing the dead node's claims: %v, want %v", i+1, res[i].Outcome, want)
		}
	}
}

// JobGetMany serves unchanged jobs from memory; a write by another node
// bumps the version, and the next read sees it, as it sees the
// slow-dispatch counters that change without a bump.
func TestJobGetManyCacheFollowsOtherNodes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := newDatabase(t)
	a, b := openAt(t, dsn, Options{Shards: 1}), openAt(t, dsn, Options{Shards: 1})
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
	if got := read("after the other node's edit"); got.Param != "changed elsewhere" || got.Version != 2 {
		t.Fatalf("after the other node's edit: %+v", got)
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

// The scan's committed advances are carried into the JobGetMany cache; a
// conflicting one is not, and the cached job always equals the row.
func TestJobGetManyCacheFollowsAdvances(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := setup(t, Options{Shards: 1})
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

// A queued message this version cannot read does not hold back the
// messages received with it and is not lost: it is set aside for
// SetAside, said in the log, and received again after that.
func TestQueueSetsAsideWhatItCannotRead(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	var logBuf strings.Builder
	var mu sync.Mutex
	db := setup(t, Options{Clock: clk, Logger: slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logBuf}, nil))})
	ctx := t.Context()
	raw := newQueue[json.RawMessage](db, "ring")
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
	lines := func() int {
		mu.Lock()
		defer mu.Unlock()
		return strings.Count(logBuf.String(), "set aside")
	}
	ds := receive()
	if len(ds) != 1 || ds[0].Msg.Second != 8 || ds[0].Msg.Shard != 1 {
		t.Fatalf("received %+v, want only the readable bucket", ds)
	}
	if err := db.Ring().Ack(ctx, []string{ds[0].Token}); err != nil {
		t.Fatal(err)
	}
	if n := lines(); n != 2 {
		t.Fatalf("%d set-aside log lines, want 2", n)
	}
	clk.Advance(SetAside - time.Second)
	if ds := receive(); len(ds) != 0 {
		t.Fatalf("set-aside messages back early: %+v", ds)
	}
	clk.Advance(2 * time.Second)
	receive()
	if left := countMessages(t, db, "ring"); left != 2 {
		t.Fatalf("%d messages left in the ring queue, want the 2 unreadable ones kept", left)
	}
	if n := lines(); n != 4 {
		t.Fatalf("%d set-aside log lines after SetAside, want 4 (both tried again)", n)
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

// A store outlives a restart of its server: calls fail while it is down
// (without the password in their errors) and succeed once it is back,
// on the pool's new connections.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	srv := pgserver.Start(t)
	db := openAt(t, srv.NewDatabase(t), Options{ConnectTimeout: time.Second})
	ctx := t.Context()
	if err := db.ReportAdd(ctx, xjobDay("2027-01-01", 1)); err != nil {
		t.Fatal(err)
	}
	srv.StopServer()
	err := db.ReportAdd(ctx, xjobDay("2027-01-01", 1))
	if err == nil {
		t.Fatal("a write to a stopped server succeeded")
	}
	if strings.Contains(err.Error(), srv.Password) {
		t.Fatalf("the error shows the password: %v", err)
	}
	if err := srv.StartServer(); err != nil {
		t.Fatal(err)
	}
	// The pool drops the dead connections as it meets them.
	var last error
	for range 10 {
		if last = db.ReportAdd(ctx, xjobDay("2027-01-01", 1)); last == nil {
			break
		}
	}
	if last != nil {
		t.Fatalf("after restart: %v", last)
	}
	days, err := db.ReportList(ctx, reportRange("2027-01-01"))
	if err != nil || len(days) != 1 || days[0].SucCount < 2 {
		t.Fatalf("after restart: %+v, %v", days, err)
	}
}

// Ids allocated after explicit ones are above them, whether the explicit
// id came first on a fresh table or after allocated ones, for jobs and
// for groups, alone or in a change set.
func TestAllocatedIDsPassExplicitOnes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		explicit []int64 // 0: an allocated id
	}{
		{"explicit 1 on a fresh table", []int64{1, 0, 0}},
		{"explicit after allocated", []int64{0, 0, 7, 0}},
		{"explicit below the sequence", []int64{0, 0, 0, 0, 2, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := setup(t, Options{})
			ctx := t.Context()
			var maxJob, maxGroup int64
			for _, id := range tc.explicit {
				if id == 2 { // already taken by an allocated id
					if _, err := db.JobInsert(ctx, xjob.Job{ID: id, GroupID: 1}); !errors.Is(err, xjob.ErrConflict) {
						t.Fatalf("explicit job id %d taken: %v, want ErrConflict", id, err)
					}
					continue
				}
				j, err := db.JobInsert(ctx, xjob.Job{ID: id, GroupID: 1})
				if err != nil {
					t.Fatalf("job %d: %v", id, err)
				}
				res, err := db.ChangeApply(ctx, driver.ChangeSet{GroupInserts: []xjob.Group{{ID: id, AppName: "app-x", AddressList: []string{}}}})
				if err != nil {
					t.Fatalf("group %d: %v", id, err)
				}
				g := res.GroupIDs[0]
				if id == 0 && (j.ID <= maxJob || g <= maxGroup) {
					t.Fatalf("allocated job %d / group %d not above %d / %d", j.ID, g, maxJob, maxGroup)
				}
				maxJob, maxGroup = max(maxJob, j.ID), max(maxGroup, g)
			}
		})
	}
}
