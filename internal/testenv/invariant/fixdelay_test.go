package invariant_test

import (
	"context"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// timedRun is a /run the executor took and when, on the fake clock.
type timedRun struct {
	logID int64
	at    time.Time
}

// timedRuns is the runs e took with when each came.
func (e *executor) timedRuns() []timedRun {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]timedRun, len(e.got))
	for i, p := range e.got {
		out[i] = timedRun{logID: p.LogID, at: e.at[i]}
	}
	return out
}

// addFixDelayJob stores a running FIX_DELAY job of a group served by ex,
// first due at first.
func (s *system) addFixDelayJob(ex *executor, delay string, timeout int, first time.Time) xjob.Job {
	s.t.Helper()
	ctx := context.Background()
	g, err := s.db.GroupInsert(ctx, xjob.Group{AppName: "delay-app", Title: "delay",
		AddressType: xjob.AddressManual, AddressList: []string{ex.srv.URL}})
	if err != nil {
		s.t.Fatal(err)
	}
	j := xjob.Job{GroupID: g.ID, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixDelay, ScheduleConf: delay,
		TimeoutSeconds: timeout, Handler: "demo", TriggerStatus: xjob.StatusRunning, TriggerNextTime: first.UnixMilli()}
	j.ApplyDefaults()
	if err := j.Validate(); err != nil {
		s.t.Fatal(err)
	}
	if j, err = s.db.JobInsert(ctx, j); err != nil {
		s.t.Fatal(err)
	}
	return j
}

// A FIX_DELAY job whose runs take longer than its delay: every run starts
// the delay after the previous one ended, never during it and never
// bunched, although every ring bucket, dispatch task and result is
// delivered twice.
func TestFixDelayRunsNeverOverlap(t *testing.T) {
	t.Parallel()
	forAdvances(t, func(t *testing.T, s *system) {
		const runTime, delay = 7 * time.Second, 3 * time.Second
		ex := newExecutor(t, s.clk)
		job := s.addFixDelayJob(ex, "3", 60, t0.Add(2*time.Second))
		sc := s.scanner("a", nil)
		ended := map[int64]time.Time{}
		for end := t0.Add(90 * time.Second); s.clk.Now().Before(end); {
			if _, err := sc.Tick(context.Background()); err != nil {
				t.Fatal(err)
			}
			s.fireRing(2)
			s.dispatchAll(2)
			for _, r := range ex.timedRuns() {
				if _, done := ended[r.logID]; done || s.clk.Now().Sub(r.at) < runTime {
					continue
				}
				for range 2 { // the executor retries its callback
					s.cb.Callback(context.Background(), []protocol.HandleCallbackParam{{LogID: r.logID, HandleCode: xjob.CodeSuccess}})
				}
				ended[r.logID] = s.clk.Now()
			}
			// Whole seconds: the ring waits for each fire's millisecond,
			// and results on whole seconds put the fires there.
			s.clk.Advance(time.Second)
		}
		runs := ex.timedRuns()
		if len(runs) < 7 {
			t.Fatalf("%d runs in 90 s, want one every ~10 s", len(runs))
		}
		for i, r := range runs {
			l, err := s.db.LogGet(context.Background(), r.logID)
			if err != nil || l.JobID != job.ID {
				t.Fatalf("run %d: log %+v, %v", i, l, err)
			}
			if i == 0 {
				continue
			}
			prev, ok := ended[runs[i-1].logID]
			if !ok {
				t.Fatalf("run %d started at t0+%s before run %d ended", i, r.at.Sub(t0), i-1)
			}
			if gap := r.at.Sub(prev); gap != delay {
				t.Errorf("run %d started %s after the previous run ended, want %s", i, gap, delay)
			}
		}
	})
}

// A FIX_DELAY run that never reports: the job fires again once its
// timeout and delay have passed since the fire, and again after that,
// one run at a time.
func TestFixDelayLostRunFiresAgainAfterTimeoutPlusDelay(t *testing.T) {
	t.Parallel()
	forAdvances(t, func(t *testing.T, s *system) {
		ex := newExecutor(t, s.clk)
		first := t0.Add(2 * time.Second)
		job := s.addFixDelayJob(ex, "3", 10, first)
		sc := s.scanner("a", nil)
		for end := t0.Add(45 * time.Second); s.clk.Now().Before(end); {
			if _, err := sc.Tick(context.Background()); err != nil {
				t.Fatal(err)
			}
			s.fireRing(1)
			s.dispatchAll(1)
			s.clk.Advance(time.Second)
		}
		runs := ex.timedRuns()
		// Fired at +2 s, then 13 s (timeout + delay) after each fire: +15, +28, +41.
		want := []time.Duration{2 * time.Second, 15 * time.Second, 28 * time.Second, 41 * time.Second}
		if len(runs) != len(want) {
			t.Fatalf("%d runs, want %d", len(runs), len(want))
		}
		for i, r := range runs {
			l, err := s.db.LogGet(context.Background(), r.logID)
			if err != nil || l.JobID != job.ID {
				t.Fatalf("run %d: log %+v, %v", i, l, err)
			}
			if got := time.UnixMilli(l.ScheduledTime).Sub(t0); got != want[i] {
				t.Errorf("run %d scheduled at t0+%s, want t0+%s", i, got, want[i])
			}
		}
	})
}
