package invariant_test

import (
	"context"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// executedTypes counts the runs the executor received per trigger type
// for job, and returns the scheduled times of its MISFIRE runs.
func (s *system) executedTypes(job int64) (map[xjob.TriggerType]int, []int64) {
	s.t.Helper()
	types := map[xjob.TriggerType]int{}
	var misfires []int64
	for _, p := range s.exec.runs() {
		l, err := s.db.LogGet(context.Background(), p.LogID)
		if err != nil {
			s.t.Fatalf("executor ran log %d the store does not know: %v", p.LogID, err)
		}
		if l.JobID != job {
			continue
		}
		types[l.TriggerType]++
		if l.TriggerType == xjob.TriggerMisfire {
			misfires = append(misfires, l.ScheduledTime)
		}
	}
	return types, misfires
}

// setMisfire gives job the misfire strategy m.
func (s *system) setMisfire(job xjob.Job, m xjob.MisfireStrategy) xjob.Job {
	s.t.Helper()
	job.MisfireStrategy = m
	job, err := s.db.JobUpdate(context.Background(), driver.JobUpdateParams{Job: job, ExpectVersion: job.Version})
	if err != nil {
		s.t.Fatal(err)
	}
	return job
}

// Invariant: a fire whose instant passed while xjob was stopped is
// handled by its job's misfire strategy on restart, once. The scan and the
// ring run over one store, as xjob local runs them; the stop (60 s) is
// longer than the fires the scan had pushed ahead plus the misfire
// threshold, so the missed fires reach the scheduler by both roads: the
// pushed occurrences arrive late at the ring, and the scan finds each
// job's own next fire time missed. FIRE_ONCE_NOW runs exactly one MISFIRE,
// whichever road is taken first; DO_NOTHING runs none (both roads skip and
// count). Every fire before the stop and after the restart runs once.
func TestMisfireAfterLongStopFiresOnce(t *testing.T) {
	t.Parallel()
	for _, order := range []string{"scan first", "ring first"} {
		t.Run(order, func(t *testing.T) {
			t.Parallel()
			forAdvances(t, func(t *testing.T, s *system) {
				once := s.setMisfire(s.addJob("2", t0.Add(time.Second)), xjob.MisfireFireOnceNow)
				nothing := s.addJob("2", t0.Add(time.Second))
				sc := s.scanner("a", nil)
				s.run(sc, 6*time.Second, 1) // t0 … t0+5: fires at +1, +3, +5
				sc.ReleaseAll(context.Background())

				// Stopped for a minute; the ring queue holds the fires pushed ahead.
				s.clk.Advance(time.Minute)
				restart := s.clk.Now()
				sc = s.scanner("a", nil)
				if order == "ring first" {
					s.fireRing(1)
					s.dispatchAll(1)
				}
				s.run(sc, 10*time.Second, 1)

				types, misfires := s.executedTypes(once.ID)
				if types[xjob.TriggerMisfire] != 1 {
					t.Fatalf("FIRE_ONCE_NOW ran %d MISFIRE runs (at %v), want 1; runs by type %v",
						types[xjob.TriggerMisfire], misfires, types)
				}
				if types, _ := s.executedTypes(nothing.ID); types[xjob.TriggerMisfire] != 0 {
					t.Fatalf("DO_NOTHING ran %v", types)
				}
				for _, job := range []xjob.Job{once, nothing} {
					got := s.executedFires()[job.ID]
					for at, n := range got {
						if n != 1 {
							t.Errorf("job %d: fire at t0+%s ran %d times", job.ID, time.UnixMilli(at).Sub(t0), n)
						}
						if at > t0.Add(5*time.Second).UnixMilli() && at < restart.UnixMilli()-5000 &&
							(job.ID == nothing.ID || at != misfires[0]) {
							t.Errorf("job %d: missed fire at t0+%s ran as scheduled", job.ID, time.UnixMilli(at).Sub(t0))
						}
					}
					for _, sec := range []int{1, 3, 5} {
						if got[t0.Add(time.Duration(sec)*time.Second).UnixMilli()] != 1 {
							t.Errorf("job %d: fire at t0+%ds before the stop did not run", job.ID, sec)
						}
					}
					if n := countAfter(got, restart.Add(time.Second)); n < 4 {
						t.Errorf("job %d: %d fires after the restart, want every one of them (≥ 4): %v", job.ID, n, got)
					}
				}
				if m := s.met.Snapshot().Misfired; m.DoNothing == 0 || m.FireOnceNow == 0 {
					t.Errorf("misfires not counted per strategy: %+v", m)
				}
			})
		})
	}
}

// Invariant: a FIRE_ONCE_NOW job whose missed fires only the scan sees (the
// ring had fired everything pushed before the stop) runs one MISFIRE.
func TestMisfireOnlyTheScanSeesFiresOnce(t *testing.T) {
	t.Parallel()
	s := setup(t)
	once := s.setMisfire(s.addJob("2", t0.Add(time.Second)), xjob.MisfireFireOnceNow)
	sc := s.scanner("a", nil)
	s.run(sc, 6*time.Second, 1)
	// The ring fires what was pushed on time (through t0+5+PreRead), then
	// xjob stops before the scan's next tick.
	s.clk.Advance(5 * time.Second)
	s.fireRing(1)
	s.dispatchAll(1)
	sc.ReleaseAll(context.Background())
	s.clk.Advance(time.Minute)
	s.run(s.scanner("a", nil), 5*time.Second, 1)
	types, misfires := s.executedTypes(once.ID)
	if types[xjob.TriggerMisfire] != 1 {
		t.Fatalf("ran %d MISFIRE runs (at %v), want 1; runs by type %v", types[xjob.TriggerMisfire], misfires, types)
	}
}

// countAfter counts the runs of fires at or after from.
func countAfter(got map[int64]int, from time.Time) int {
	n := 0
	for at, c := range got {
		if at >= from.UnixMilli() {
			n += c
		}
	}
	return n
}
