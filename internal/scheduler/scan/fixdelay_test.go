package scan_test

import (
	"context"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/scheduler/scan"
	"github.com/xjobdev/xjob/pkg/driver"
)

// A FIX_DELAY job parked at its fallback, read by the scan at the
// fallback's second while its run's result moves it to end + delay: the
// scan's advance and the result's are both conditional on the version
// read, and the fallback goes out only if the scan's wins — never beside
// the fire the result planned.
func TestFixDelayFallbackAndResultFireOnce(t *testing.T) {
	t.Parallel()
	ran := t0.Add(-40 * time.Second).UnixMilli()
	fallback := t0.UnixMilli()
	for _, tc := range []struct {
		name       string
		resultWins bool
	}{
		{"the result moved the job first", true},
		{"no result: the fallback fires", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ctx := context.Background()
			j := xjob.Job{GroupID: 1, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixDelay, ScheduleConf: "5",
				TimeoutSeconds: 30, Handler: "h", TriggerStatus: xjob.StatusRunning, MisfireStrategy: xjob.MisfireDoNothing,
				TriggerLastTime: ran, TriggerNextTime: fallback}
			j.ApplyDefaults()
			if err := j.Validate(); err != nil {
				t.Fatal(err)
			}
			j, err := e.db.JobInsert(ctx, j)
			if err != nil {
				t.Fatal(err)
			}
			// The scan's read: j as it is now.
			if tc.resultWins {
				// The result, read before the scan's tick and written
				// after the scan read the job.
				if err := e.db.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: j.Version,
					TriggerLastTime: ran, TriggerNextTime: fallback + 4_000}); err != nil {
					t.Fatal(err)
				}
			}
			p, err := scan.NewPusher(scan.Config{Jobs: e.db, Queues: e.db,
				Tunables: scan.Tunables{Shards: shards, RingLead: 0, PushWithin: 2 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			st, err := p.Push(ctx, []xjob.Job{j}, fallback)
			if err != nil {
				t.Fatal(err)
			}
			tasks := e.drainDispatch(t)
			e.clk.Advance(10 * time.Second)
			ring := e.drainRing(t)
			got, err := e.db.JobGet(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if tc.resultWins {
				if len(tasks) != 0 || len(ring) != 0 || st.Conflicts != 1 {
					t.Fatalf("pushed %+v and %+v (stats %+v), want nothing: the result planned the job", tasks, ring, st)
				}
				if got.TriggerNextTime != fallback+4_000 {
					t.Fatalf("next = %d, want the result's %d", got.TriggerNextTime, fallback+4_000)
				}
				return
			}
			if len(tasks) != 1 || tasks[0].Occurrence.FireTime != fallback || len(ring) != 0 {
				t.Fatalf("pushed %+v and %+v, want the fallback once", tasks, ring)
			}
			if got.TriggerLastTime != fallback || got.TriggerNextTime <= fallback {
				t.Fatalf("job last %d next %d, want it advanced past the fallback %d", got.TriggerLastTime, got.TriggerNextTime, fallback)
			}
		})
	}
}
