package mysqlstore

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
	"github.com/xjobdev/xjob/internal/testenv/mariadb"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// twoNodes opens two DBs on one fresh database, as two nodes of a cluster.
func twoNodes(t *testing.T, opts Options) (*DB, *DB) {
	t.Helper()
	dsn := mariadb.Shared(t).NewDatabase(t)
	a := openAt(t, dsn, opts)
	opts.Node = "b"
	return a, openAt(t, dsn, opts)
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
	depths, err := db.QueueDepths(ctx)
	if err != nil || !reflect.DeepEqual(depths, map[string]int64{"ring": 0, "fast": 0, "slow": 1}) {
		t.Fatalf("queue depths: %v %v", depths, err)
	}
}

// TestTwoNodesOneWinner races two nodes on one database: every
// conditional write has exactly one winner.
func TestTwoNodesOneWinner(t *testing.T) {
	t.Parallel()
	a, b := twoNodes(t, Options{Shards: 4})
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
				errs, err := s.JobAdvanceMany(ctx, []driver.JobAdvanceParams{{ID: job.ID, ExpectVersion: job.Version, TriggerNextTime: int64(100 + i)}})
				o.advance = errors.Join(err, errs[0])
				_, o.acquire = s.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: lease, Owner: fmt.Sprint("p", i), Now: 1, TTL: time.Minute})
				claims, err := s.LogCreateMany(ctx, []xjob.Log{{OccurrenceID: occ + "-many", JobID: job.ID, TriggerTime: 5, ClaimUntil: 10}})
				if err == nil && claims[0].Outcome != driver.ClaimCreated {
					err = xjob.ErrConflict
				}
				o.claim = err
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

// Receivers on two nodes never hold the same message at once, and a stale
// token cannot ack a redelivery.
func TestQueueTwoNodes(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	a, b := twoNodes(t, Options{Clock: clk})
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

// A long poll on one node sees a message another node sends within the
// poll interval (real clock: the poll is what is tested).
func TestReceiveWaitSeesOtherNodesSend(t *testing.T) {
	t.Parallel()
	a, b := twoNodes(t, Options{PollInterval: 20 * time.Millisecond})
	ctx := t.Context()
	done := make(chan []driver.Delivery[fire.RingBucket], 1)
	go func() {
		ds, _ := a.Ring().Receive(ctx, driver.ReceiveParams{Max: 1, Wait: 10 * time.Second})
		done <- ds
	}()
	time.Sleep(50 * time.Millisecond) // let the receiver wait first
	start := time.Now()
	if err := b.Ring().Send(ctx, []driver.Outgoing[fire.RingBucket]{{Msg: fire.RingBucket{Second: 7}}}); err != nil {
		t.Fatal(err)
	}
	ds := <-done
	if len(ds) != 1 || ds[0].Msg.Second != 7 {
		t.Fatalf("long poll got %+v", ds)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the other node's send arrived after %v", took)
	}
}

// After a whole-cluster restart the first node releases what the dead
// ones held: messages come back at once, old tokens no longer ack, and
// untriggered claims can be taken over.
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

// A node that sees a peer die releases only that peer's messages.
func TestReleaseNodeClaims(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := clock.NewFake(epoch)
	a, b := twoNodes(t, Options{Clock: clk, Node: "a"})
	if err := a.Dispatch(fire.LaneFast).Send(ctx, []driver.Outgoing[fire.DispatchTask]{
		{Msg: fire.DispatchTask{Revision: 1}}, {Msg: fire.DispatchTask{Revision: 2}}}); err != nil {
		t.Fatal(err)
	}
	p := driver.ReceiveParams{Max: 1, Visibility: time.Hour}
	ha, err := a.Dispatch(fire.LaneFast).Receive(ctx, p)
	if err != nil || len(ha) != 1 {
		t.Fatal(ha, err)
	}
	hb, err := b.Dispatch(fire.LaneFast).Receive(ctx, p)
	if err != nil || len(hb) != 1 {
		t.Fatal(hb, err)
	}
	n, err := a.ReleaseNodeClaims(ctx, "b")
	if err != nil || n != 1 {
		t.Fatalf("release node b: %d, %v", n, err)
	}
	got, err := a.Dispatch(fire.LaneFast).Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Hour})
	if err != nil || len(got) != 1 || got[0].Msg.Revision != hb[0].Msg.Revision {
		t.Fatalf("after releasing b: %+v, %v; want b's message only", got, err)
	}
	if err := b.Dispatch(fire.LaneFast).Retry(ctx, hb[0].Token, 0); !errors.Is(err, xjob.ErrNotFound) {
		t.Fatalf("dead node's token still retries: %v", err)
	}
}

// The logs a dead node claimed and never triggered (a ring bucket's,
// prepared a second before their instant) are taken over at once after a
// live node releases the dead node's claims, not after the claim TTL;
// the live node's own claims stay held.
func TestReleaseNodeClaimsExpiresLogClaims(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := clock.NewFake(epoch)
	live, dead := twoNodes(t, Options{Clock: clk, Node: "a"})
	now := clk.Now().UnixMilli()
	claim := func(occ string, job int64) xjob.Log {
		return xjob.Log{OccurrenceID: occ, JobID: job, TriggerType: xjob.TriggerCron, TriggerTime: now, ClaimUntil: now + 30_000}
	}
	if _, err := dead.LogCreateMany(ctx, []xjob.Log{claim("j1/t1/s0", 1), claim("j2/t1/s0", 2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := live.LogCreateMany(ctx, []xjob.Log{claim("j3/t1/s0", 3)}); err != nil {
		t.Fatal(err)
	}
	before, err := live.LogCreateMany(ctx, []xjob.Log{claim("j1/t1/s0", 1)})
	if err != nil || before[0].Outcome != driver.ClaimHeld {
		t.Fatalf("before the release: %+v, %v; want the dead node's claim held", before, err)
	}
	if _, err := live.ReleaseNodeClaims(ctx, "b"); err != nil {
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

// JobGetMany serves unchanged jobs from memory; a write on another node
// bumps the version, and the next read sees it, as it sees the
// slow-dispatch counters that change without a bump.
func TestJobGetManyCacheFollowsOtherNodes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, b := twoNodes(t, Options{Shards: 1})
	j := xjob.Job{GroupID: 1, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "60",
		Handler: "h", TriggerStatus: xjob.StatusRunning, TriggerNextTime: 1_800_000_000_000}
	j.ApplyDefaults()
	j, err := a.JobInsert(ctx, j)
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
	read("first read")
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
	for _, st := range []driver.JobAdvanceParams{
		{ID: j.ID, ExpectVersion: 2, TriggerLastTime: 1_800_000_000_000, TriggerNextTime: 1_800_000_010_000},
		{ID: j.ID, ExpectVersion: 3, Stop: true},
	} {
		if errs, err := a.JobAdvanceMany(ctx, []driver.JobAdvanceParams{st}); err != nil || errs[0] != nil {
			t.Fatal(errs, err)
		}
		read(fmt.Sprintf("after advance %+v", st))
	}
	if err := b.JobDelete(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := a.JobGetMany(ctx, []int64{j.ID}); err != nil || len(got) != 0 {
		t.Fatalf("after delete: %v, %v", got, err)
	}
}

// A queued message this version cannot read does not hold back the
// others and is not lost: it is set aside for SetAside, said in the log,
// and received again after that.
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
	ds := receive()
	if len(ds) != 1 || ds[0].Msg.Second != 8 || ds[0].Msg.Shard != 1 {
		t.Fatalf("received %+v, want only the readable bucket", ds)
	}
	if err := db.Ring().Ack(ctx, []string{ds[0].Token}); err != nil {
		t.Fatal(err)
	}
	lines := func() int { mu.Lock(); defer mu.Unlock(); return strings.Count(logBuf.String(), "set aside") }
	if n := lines(); n != 2 {
		t.Fatalf("%d set-aside log lines, want 2", n)
	}
	clk.Advance(SetAside - time.Second)
	if ds := receive(); len(ds) != 0 {
		t.Fatalf("set-aside messages back early: %+v", ds)
	}
	clk.Advance(2 * time.Second)
	receive()
	if depths, err := db.QueueDepths(ctx); err != nil || depths["ring"] != 2 {
		t.Fatalf("ring holds %v (%v), want the 2 unreadable messages kept", depths, err)
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

// The hot reads go through their indexes in order: no table scan, no
// filesort (EXPLAIN on a table with rows enough for the optimizer to
// care).
func TestHotQueriesUseTheirIndexes(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{Shards: 4})
	ctx := t.Context()
	var logs []xjob.Log
	for i := range 400 {
		j, err := db.JobInsert(ctx, xjob.Job{GroupID: int64(i % 7), TriggerStatus: xjob.TriggerStatus(i % 2), TriggerNextTime: int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, xjob.Log{OccurrenceID: fmt.Sprintf("j%d/t1/s0", j.ID), JobID: j.ID, GroupID: j.GroupID,
			TriggerType: xjob.TriggerCron, ScheduledTime: 1000, TriggerTime: int64(i)})
	}
	if _, err := db.LogCreateMany(ctx, logs); err != nil {
		t.Fatal(err)
	}
	if _, err := db.db.ExecContext(ctx, `ANALYZE TABLE jobs, logs`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, query, index string
		args               []any
	}{
		{"jobs due", sqlJobsDue, "jobs_due", []any{1, 300, -1, -1, 0, 100}},
		{"occurrences", `SELECT id FROM logs WHERE (occurrence_time, occurrence_id) IN ((?,?),(?,?))`, "logs_occurrence",
			[]any{1000, "j1/t1/s0", 1000, "j2/t1/s0"}},
		{"queue claim", `SELECT id FROM queue_messages FORCE INDEX (queue_visible) WHERE queue = ? AND visible_at <= ?
			ORDER BY visible_at, id LIMIT ? FOR UPDATE SKIP LOCKED`, "queue_visible", []any{"ring", 5, 10}},
		{"running", `SELECT id FROM logs WHERE ` + sqlLogRunning + ` AND trigger_time <= ? ORDER BY trigger_time, id LIMIT ?`,
			"logs_running", []any{5, 10}},
		{"failed unalarmed", `SELECT id FROM logs WHERE ` + sqlLogFailed + ` AND alarm_status = 0 AND trigger_time <= ?
			ORDER BY trigger_time, id LIMIT ?`, "logs_failed", []any{5, 10}},
		{"a job's logs", `SELECT id FROM logs WHERE 1 = 1 AND job_id = ? ORDER BY trigger_time DESC, id DESC LIMIT ?`,
			"logs_job_time", []any{5, 10}},
	} {
		key, extra := explain(t, db, c.query, c.args...)
		if key != c.index || strings.Contains(extra, "filesort") {
			t.Errorf("%s: reads key %q (%s), want %s without a filesort", c.name, key, extra, c.index)
		}
	}
}

// explain returns the key and Extra of the first row of EXPLAIN q.
func explain(t *testing.T, db *DB, q string, args ...any) (key, extra string) {
	t.Helper()
	rows, err := db.db.QueryContext(t.Context(), `EXPLAIN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		t.Fatalf("EXPLAIN %s: no row", q)
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	for i, c := range cols {
		s := ""
		if b, ok := vals[i].([]byte); ok {
			s = string(b)
		}
		switch c {
		case "key":
			key = s
		case "Extra":
			extra = s
		}
	}
	return key, extra
}
