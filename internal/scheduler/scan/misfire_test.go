package scan_test

import (
	"context"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/lease"
)

// The scan's MISFIRE fire of a FIRE_ONCE_NOW job joins the misfire episode
// the ring started for the job's late occurrences (its fire time is the
// episode's key, so dispatch sees one occurrence id); without an episode
// the scan starts one, keyed by the job's missed next fire time, which the
// ring's late occurrences then join. DO_NOTHING sends nothing.
func TestScanMisfireJoinsEpisode(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	ringFirst := e.addJob(t, "2", t0.Add(-30*time.Second), xjob.MisfireFireOnceNow)
	scanFirst := e.addJob(t, "2", t0.Add(-30*time.Second), xjob.MisfireFireOnceNow)
	nothing := e.addJob(t, "2", t0.Add(-30*time.Second), xjob.MisfireDoNothing)
	overdue := t0.Add(-5 * time.Second).UnixMilli()
	// A ring process received the job's pushed fire at t0−40 s late.
	ep, err := lease.MisfireEpisode(ctx, e.db, ringFirst.ID, t0.Add(-40*time.Second).UnixMilli(), overdue)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.scanner(t, "a", nil).Tick(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[int64]fire.Occurrence{}
	for _, task := range e.drainDispatch(t) {
		if _, dup := got[task.Occurrence.JobID]; dup {
			t.Fatalf("job %d sent twice", task.Occurrence.JobID)
		}
		got[task.Occurrence.JobID] = task.Occurrence
	}
	want := map[int64]fire.Occurrence{
		ringFirst.ID: {JobID: ringFirst.ID, Type: xjob.TriggerMisfire, FireTime: ep.Key},
		scanFirst.ID: {JobID: scanFirst.ID, Type: xjob.TriggerMisfire, FireTime: scanFirst.TriggerNextTime},
	}
	if len(got) != len(want) || got[ringFirst.ID] != want[ringFirst.ID] || got[scanFirst.ID] != want[scanFirst.ID] {
		t.Fatalf("dispatched %+v, want %+v (and nothing for DO_NOTHING job %d)", got, want, nothing.ID)
	}
	// The ring's late occurrences of scanFirst, pushed before its next
	// fire time, join the episode the scan started.
	late, err := lease.MisfireEpisode(ctx, e.db, scanFirst.ID, t0.Add(-50*time.Second).UnixMilli(), overdue+300)
	if err != nil {
		t.Fatal(err)
	}
	if late.Key != scanFirst.TriggerNextTime {
		t.Fatalf("ring's late occurrence keyed %d, want the scan's episode %d", late.Key, scanFirst.TriggerNextTime)
	}
}
