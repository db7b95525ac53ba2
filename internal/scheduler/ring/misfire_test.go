package ring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/scheduler/ring"
	"github.com/xjobdev/xjob/pkg/driver"
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
	r, err := ring.New(ring.Config{Jobs: db, Queues: db, Clock: clk, Metrics: m,
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
		b := fire.RingBucket{Second: at/1000 + i, Items: []fire.RingItem{
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
	got := tasks(t, db, fire.LaneFast)
	seen := map[fire.Occurrence]bool{}
	for _, task := range got {
		if task.Occurrence.JobID == nothing.ID {
			t.Fatalf("a DO_NOTHING occurrence was dispatched: %+v", task)
		}
		seen[task.Occurrence] = true
	}
	want := fire.Occurrence{JobID: once.ID, Type: xjob.TriggerMisfire, FireTime: at}
	if len(seen) != 1 || !seen[want] {
		t.Fatalf("dispatched %v, want only %+v (dispatch keeps one by occurrence id)", seen, want)
	}
}

// A DO_NOTHING fire the ring drops as a misfire is written as one debug
// line naming the job and the fire time, as the scan writes the fires it
// passes over, so that a dropped fire can be told from a lost one; a
// fire on time writes none.
func TestFireLogsSkippedMisfires(t *testing.T) {
	t.Parallel()
	db, clk, _ := setup(t)
	ctx := context.Background()
	var logs bytes.Buffer
	r, err := ring.New(ring.Config{Jobs: db, Queues: db, Clock: clk,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	late, onTime := addJob(t, db), addJob(t, db)
	at := t0.Add(48 * time.Second).UnixMilli()
	clk.Set(time.UnixMilli(at + 6_000)) // beyond the 5 s threshold for at, within it for at+2 s
	b := fire.RingBucket{Second: at / 1000, Items: []fire.RingItem{
		{JobID: late.ID, FireTime: at, Revision: late.Revision},
		{JobID: onTime.ID, FireTime: at + 2000, Revision: onTime.Revision},
	}}
	if _, err := r.Fire(ctx, b); err != nil {
		t.Fatal(err)
	}
	type line struct {
		Msg      string `json:"msg"`
		Job      int64  `json:"job"`
		From, To int64
		Misfired bool `json:"misfired"`
	}
	var got []line
	for _, raw := range bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n")) {
		var l line
		if len(raw) == 0 {
			continue
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("log line %q: %v", raw, err)
		}
		if l.Msg == "ring: fires passed over" {
			got = append(got, l)
		}
	}
	want := []line{{Msg: "ring: fires passed over", Job: late.ID, From: at, To: at, Misfired: true}}
	if !slices.Equal(got, want) {
		t.Fatalf("passed-over lines %+v, want %+v", got, want)
	}
}

// Two ring processes over one store receive a FIRE_ONCE_NOW job's late
// buckets at once, as ring Lambda environments do after a stop: their
// MISFIRE occurrences are one (one id, so dispatch's claim lets one
// through); a fire that falls due after that episode began and still
// arrives late starts the next. DO_NOTHING still skips and counts.
func TestFireOnceNowOnceAcrossRings(t *testing.T) {
	t.Parallel()
	db, clk, _ := setup(t)
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := &metric.Metrics{}
	var rings [2]*ring.Ring
	for i := range rings {
		r, err := ring.New(ring.Config{Jobs: db, Queues: db, Clock: clk, Metrics: m, Logger: quiet, Leases: db})
		if err != nil {
			t.Fatal(err)
		}
		rings[i] = r
	}
	nothing, once := addJob(t, db), addJob(t, db)
	once.MisfireStrategy = xjob.MisfireFireOnceNow
	once, err := db.JobUpdate(ctx, driver.JobUpdateParams{Job: once, ExpectVersion: once.Version})
	if err != nil {
		t.Fatal(err)
	}
	at := t0.Add(48 * time.Second).UnixMilli()
	bucket := func(i int64) fire.RingBucket {
		return fire.RingBucket{Second: at/1000 + i, Items: []fire.RingItem{
			{JobID: nothing.ID, FireTime: at + i*1000, Revision: nothing.Revision},
			{JobID: once.ID, FireTime: at + i*1000, Revision: once.Revision},
		}}
	}
	// Ten seconds of missed fires, received 27 s after the first, spread
	// over both rings in a mixed order and fired concurrently.
	clk.Set(time.UnixMilli(at + 27_000))
	errs := make(chan error, 10)
	for _, i := range []int64{3, 0, 7, 1, 9, 2, 5, 4, 8, 6} {
		go func() {
			_, err := rings[i%2].Fire(ctx, bucket(i))
			errs <- err
		}()
	}
	for range 10 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if snap := m.Snapshot(); snap.Misfired.DoNothing != 10 || snap.Misfired.FireOnceNow != 10 {
		t.Fatalf("metrics %+v, want 10 skipped and 10 folded", snap.Misfired)
	}
	occurrences := func() map[string]fire.Occurrence {
		got := map[string]fire.Occurrence{}
		for _, task := range tasks(t, db, fire.LaneFast) {
			if task.Occurrence.JobID == nothing.ID {
				t.Fatalf("a DO_NOTHING occurrence was dispatched: %+v", task)
			}
			got[task.Occurrence.ID(0)] = task.Occurrence
		}
		return got
	}
	first := occurrences()
	if len(first) != 1 {
		t.Fatalf("dispatched %v, want one MISFIRE occurrence (one id)", first)
	}
	for _, o := range first {
		if o.Type != xjob.TriggerMisfire || o.FireTime < at || o.FireTime > at+9000 {
			t.Fatalf("occurrence %+v, want a MISFIRE of one of the missed fire times", o)
		}
	}

	// A fire due 23 s after the first (so not yet overdue when the episode
	// began) arrives late too, at the other ring: a new episode, one more
	// fire; its own redelivery to the first ring is the same occurrence.
	clk.Set(time.UnixMilli(at + 40_000))
	late := fire.RingBucket{Second: at/1000 + 23, Items: []fire.RingItem{{JobID: once.ID, FireTime: at + 23_000, Revision: once.Revision}}}
	for _, r := range rings {
		if _, err := r.Fire(ctx, late); err != nil {
			t.Fatal(err)
		}
	}
	second := occurrences()
	want := fire.Occurrence{JobID: once.ID, Type: xjob.TriggerMisfire, FireTime: at + 23_000}
	if len(second) != 1 || second[want.ID(0)] != want {
		t.Fatalf("dispatched %v, want only %+v", second, want)
	}
}

// A bucket its receiver never acknowledged (the node was killed) comes back
// after the visibility timeout it was held for: its fires were pushed, and
// that hold is not a scheduler that was down, so FireAgain fires them as
// scheduled up to threshold + held late; only beyond is it a misfire. Fire,
// for a first delivery, keeps xxl-job's threshold.
func TestFireAgainWidensTheThresholdByTheHold(t *testing.T) {
	t.Parallel()
	const held = 5 * time.Second
	for _, tc := range []struct {
		name     string
		again    bool
		late     time.Duration
		fired    int
		misfired int
	}{
		{"first delivery, 8 s late", false, 8 * time.Second, 0, 1},
		{"again after a 5 s hold, 8 s late", true, 8 * time.Second, 1, 0},
		{"again after a 5 s hold, 10 s late", true, 10 * time.Second, 1, 0},
		{"again after a 5 s hold, 11 s late", true, 11 * time.Second, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, clk, r := setup(t)
			ctx := context.Background()
			job := addJob(t, db)
			at := t0.Add(48 * time.Second).UnixMilli()
			clk.Set(time.UnixMilli(at).Add(tc.late))
			b := fire.RingBucket{Second: at / 1000, Items: []fire.RingItem{{JobID: job.ID, FireTime: at, Revision: job.Revision}}}
			var (
				st  ring.Stats
				err error
			)
			if tc.again {
				st, err = r.FireAgain(ctx, b, held)
			} else {
				st, err = r.Fire(ctx, b)
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.Fired != tc.fired || st.Misfired != tc.misfired {
				t.Fatalf("fired %d misfired %d, want %d and %d", st.Fired, st.Misfired, tc.fired, tc.misfired)
			}
			got := tasks(t, db, fire.LaneFast)
			if len(got) != tc.fired {
				t.Fatalf("dispatched %+v, want %d task", got, tc.fired)
			}
			if tc.fired == 1 && got[0].Occurrence != (fire.Occurrence{JobID: job.ID, Type: xjob.TriggerCron, FireTime: at}) {
				t.Fatalf("dispatched %+v, want the scheduled occurrence", got[0].Occurrence)
			}
		})
	}
}

// Serve knows a bucket came back from a receiver that died with it (its
// second delivery) and fires it with FireAgain's threshold: a killed
// node's pre-read fire is fired by the node that receives it next, not
// passed over as a misfire.
func TestServeFiresABucketADeadReceiverHeld(t *testing.T) {
	t.Parallel()
	db, clk, r := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	job := addJob(t, db)
	at := t0.Add(48 * time.Second).UnixMilli()
	const visibility = 5 * time.Second
	b := fire.RingBucket{Second: at / 1000, Items: []fire.RingItem{{JobID: job.ID, FireTime: at, Revision: job.Revision}}}
	clk.Set(time.UnixMilli(at - 1000)) // received a second early, as the ring does
	if err := db.Ring().Send(ctx, []driver.Outgoing[fire.RingBucket]{{Msg: b}}); err != nil {
		t.Fatal(err)
	}
	if ds, err := db.Ring().Receive(ctx, driver.ReceiveParams{Max: 1, Visibility: visibility}); err != nil || len(ds) != 1 {
		t.Fatalf("the dead receiver's receive: %v, %v", ds, err)
	}
	// It died. The bucket is visible again at at+4 s; under load the next
	// receiver gets it at at+6 s, beyond the 5 s threshold.
	clk.Set(time.UnixMilli(at + 6000))
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ring.ServeOptions{Workers: 1, Visibility: visibility}) }()
	var got []fire.DispatchTask
	for deadline := time.Now().Add(10 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
		got = tasks(t, db, fire.LaneFast)
		time.Sleep(10 * time.Millisecond) // waiting on another goroutine, not on time
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := fire.Occurrence{JobID: job.ID, Type: xjob.TriggerCron, FireTime: at}
	if len(got) != 1 || got[0].Occurrence != want {
		t.Fatalf("dispatched %+v, want %+v", got, want)
	}
}
