package ring_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/ring"
	"github.com/xjobdev/xjob/pkg/sqlitestore"
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
	r, err := ring.New(ring.Deps{Jobs: db, Queues: db, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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

func tasks(t *testing.T, db *sqlitestore.DB, lane xjob.Lane) []xjob.DispatchTask {
	t.Helper()
	ds, err := db.Dispatch(lane).Receive(context.Background(), driver.ReceiveParams{Max: 10, Visibility: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var out []xjob.DispatchTask
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
	b := xjob.RingBucket{Second: at / 1000, Items: []xjob.RingItem{
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
	got := tasks(t, db, xjob.LaneFast)
	want := xjob.Occurrence{JobID: keep.ID, Type: xjob.TriggerCron, FireTime: at}
	if len(got) != 1 || got[0].Occurrence != want || got[0].Revision != keep.Revision {
		t.Fatalf("tasks = %+v, want one for %+v", got, want)
	}
}

func TestFireWaitsForEachMillisecond(t *testing.T) {
	t.Parallel()
	db, clk, r := setup(t)
	ctx := context.Background()
	j := addJob(t, db)
	base := t0.Add(2 * time.Second)
	b := xjob.RingBucket{Second: base.Unix(), Items: []xjob.RingItem{
		{JobID: j.ID, FireTime: base.Add(750 * time.Millisecond).UnixMilli(), Revision: j.Revision},
		{JobID: j.ID, FireTime: base.Add(250 * time.Millisecond).UnixMilli(), Revision: j.Revision},
	}}
	done := make(chan ring.Stats, 1)
	go func() {
		st, err := r.Fire(ctx, b)
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// It sleeps until the earlier item's millisecond, not the bucket's second.
	if err := clk.WaitForSleepers(waitCtx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Set(base.Add(249 * time.Millisecond))
	if n := len(tasks(t, db, xjob.LaneFast)); n != 0 {
		t.Fatalf("%d tasks sent 1 ms early", n)
	}
	clk.Set(base.Add(250 * time.Millisecond))
	if err := clk.WaitForSleepers(waitCtx, 1); err != nil {
		t.Fatal(err)
	}
	first := tasks(t, db, xjob.LaneFast)
	if len(first) != 1 || first[0].Occurrence.FireTime != base.Add(250*time.Millisecond).UnixMilli() {
		t.Fatalf("at +250ms: %+v, want the first occurrence only", first)
	}
	clk.Set(base.Add(750 * time.Millisecond))
	st := <-done
	if st.Fired != 2 || st.MaxLate != 0 {
		t.Fatalf("stats = %+v, want 2 fired on time", st)
	}
}

func TestFireSendsSlowJobsToSlowLane(t *testing.T) {
	t.Parallel()
	db, clk, r := setup(t)
	ctx := context.Background()
	j := addJob(t, db)
	minute := t0.UnixMilli() / 60000
	for range xjob.SlowLaneCount + 1 {
		if err := db.JobRecordSlow(ctx, j.ID, minute); err != nil {
			t.Fatal(err)
		}
	}
	clk.Set(t0.Add(time.Second))
	at := t0.Add(time.Second).UnixMilli()
	if _, err := r.Fire(ctx, xjob.RingBucket{Second: at / 1000, Items: []xjob.RingItem{{JobID: j.ID, FireTime: at, Revision: j.Revision}}}); err != nil {
		t.Fatal(err)
	}
	if n := len(tasks(t, db, xjob.LaneSlow)); n != 1 {
		t.Fatalf("slow lane got %d tasks, want 1", n)
	}
	if n := len(tasks(t, db, xjob.LaneFast)); n != 0 {
		t.Fatalf("fast lane got %d tasks, want 0", n)
	}
}
