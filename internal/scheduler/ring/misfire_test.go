package ring_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/driver"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/scheduler/ring"
)

func TestLate(t *testing.T) {
	t.Parallel()
	const th = 5 * time.Second
	for _, tc := range []struct {
		strategy xjob.MisfireStrategy
		late     time.Duration
		want     ring.LateAction
	}{
		{xjob.MisfireDoNothing, 0, ring.FireAsScheduled},
		{xjob.MisfireDoNothing, th, ring.FireAsScheduled},
		{xjob.MisfireDoNothing, th + time.Millisecond, ring.SkipMisfire},
		{xjob.MisfireFireOnceNow, th, ring.FireAsScheduled},
		{xjob.MisfireFireOnceNow, 27 * time.Second, ring.FireMisfire},
		{"", time.Hour, ring.SkipMisfire},
	} {
		if got := ring.Late(tc.strategy, tc.late, th); got != tc.want {
			t.Errorf("Late(%s, %v) = %v, want %v", tc.strategy, tc.late, got, tc.want)
		}
	}
}

// Buckets pushed before a stop and received after it, 27 s late (as a
// restarted xjob local receives them): DO_NOTHING skips and counts the
// occurrence; FIRE_ONCE_NOW fires once, as MISFIRE, for all its missed
// occurrences across buckets.
func TestFireAfterStopMisfires(t *testing.T) {
	t.Parallel()
	db, clk, _ := setup(t)
	ctx := context.Background()
	m := &metric.Metrics{}
	r, err := ring.New(ring.Deps{Jobs: db, Queues: db, Clock: clk, Metrics: m,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	nothing, once := addJob(t, db), addJob(t, db)
	once.MisfireStrategy = xjob.MisfireFireOnceNow
	if once, err = db.JobUpdate(ctx, driver.JobUpdateParams{Job: once, ExpectVersion: once.Version}); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(48 * time.Second).UnixMilli()
	clk.Set(time.UnixMilli(at + 27_000)) // started again 27 s after the fire time
	var total ring.Stats
	for i := range int64(3) { // three seconds of missed fires
		b := xjob.RingBucket{Second: at/1000 + i, Items: []xjob.RingItem{
			{JobID: nothing.ID, FireTime: at + i*1000, Revision: nothing.Revision},
			{JobID: once.ID, FireTime: at + i*1000, Revision: once.Revision},
		}}
		st, err := r.Fire(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		total.Fired += st.Fired
		total.Misfired += st.Misfired
	}
	if total.Misfired != 6 {
		t.Fatalf("misfired %d, want 6", total.Misfired)
	}
	snap := m.Snapshot()
	if snap.Misfired.DoNothing != 3 || snap.Misfired.FireOnceNow != 3 {
		t.Fatalf("metrics %+v", snap.Misfired)
	}
	got := tasks(t, db, xjob.LaneFast)
	seen := map[xjob.Occurrence]bool{}
	for _, task := range got {
		if task.Occurrence.JobID == nothing.ID {
			t.Fatalf("a DO_NOTHING occurrence was dispatched: %+v", task)
		}
		seen[task.Occurrence] = true
	}
	want := xjob.Occurrence{JobID: once.ID, Type: xjob.TriggerMisfire, FireTime: at}
	if len(seen) != 1 || !seen[want] {
		t.Fatalf("dispatched %v, want only %+v (dispatch keeps one by occurrence id)", seen, want)
	}
}
