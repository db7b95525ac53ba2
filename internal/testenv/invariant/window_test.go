package invariant_test

import (
	"context"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/scan"
	"github.com/xjobdev/xjob/pkg/driver"
)

// The admin pushes the fires of a job it creates, starts or edits that
// fall within the scan's horizon: the scan, ticking once a
// second, has already planned that window, so without the push a job
// created at :07 with a 10 s cron would first fire at :20.

// failingAdvance is the real store whose job advances fail: the admin
// "dies" after pushing the fires and before advancing the job, so the scan
// finds the job still due and pushes the same fires again.
type failingAdvance struct{ *sqlitestore.DB }

func (failingAdvance) JobAdvanceMany(context.Context, []driver.JobAdvanceParams) ([]error, error) {
	return nil, errCrash
}

// horizon is the scan's pre-read in a window test; the scan ticks once per
// horizon (xjob local: 5 s read every second; AWS with a longer horizon:
// 20 s read every 20 s here), so only the admin's push can fire a new job
// inside the horizon on time.
type horizon struct {
	preRead, every time.Duration
	// advance, when set, plans a due job's fires this far ahead (xjob
	// local: 10 s), so the scan reads an every-second job once per ~6 ticks.
	advance time.Duration
	// push, when set, is how soon a fire must be for the admin to push it
	// (xjob local: 2 s, the scan ticking every second plans the rest).
	push time.Duration
}

func (h horizon) String() string {
	if h.advance > 0 {
		return h.preRead.String() + "+advance" + h.advance.String() + "+push" + h.push.String()
	}
	return h.preRead.String()
}

func (s *system) admin(store driver.Store) *admin.Service {
	s.t.Helper()
	if store == nil {
		store = s.db
	}
	cb, err := callback.New(callback.Config{Store: s.db, Queues: s.db, Alarmer: alarm.Log{Logger: quiet}, Clock: s.clk, Logger: quiet})
	if err != nil {
		s.t.Fatal(err)
	}
	ec, err := execclient.New(execclient.Options{})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(ec.Close)
	a, err := admin.New(admin.Config{Store: store, Queues: s.db, Executors: ec, Finisher: cb, Clock: s.clk, Logger: quiet,
		Scan: scan.Tunables{Shards: shards, PreRead: s.horizon.preRead, Advance: s.horizon.advance, PushWithin: s.horizon.push}})
	if err != nil {
		s.t.Fatal(err)
	}
	return a
}

func (s *system) cronJob(conf string, status xjob.TriggerStatus) xjob.Job {
	return xjob.Job{GroupID: s.group.ID, Description: "window", Author: "a", ScheduleType: xjob.ScheduleCron,
		ScheduleConf: conf, Handler: "demo", TriggerStatus: status}
}

// fires returns the scheduled fire times job ran, as offsets from t0.
func (s *system) fires(job xjob.Job) map[time.Duration]int {
	out := map[time.Duration]int{}
	for at, n := range s.executedFires()[job.ID] {
		out[time.UnixMilli(at).Sub(t0)] += n
	}
	return out
}

func TestWindowPush(t *testing.T) {
	t.Parallel()
	sec := time.Second
	tests := []struct {
		name string
		// act runs at t0+7.3 s, after the scan ticked every second since t0.
		act       func(s *system) xjob.Job
		store     func(s *system) driver.Store
		wantFires map[time.Duration]int // over t0 .. t0+25 s
	}{
		{"created running at :07 fires at :10 once", func(s *system) xjob.Job {
			j, err := s.admin(nil).CreateJob(context.Background(), s.cronJob("0/10 * * * * ?", xjob.StatusRunning))
			if err != nil {
				s.t.Fatal(err)
			}
			return j
		}, nil, map[time.Duration]int{10 * sec: 1, 20 * sec: 1}},
		{"scan pushes the same fire again: still once", func(s *system) xjob.Job {
			j, err := s.admin(failingAdvance{s.db}).CreateJob(context.Background(), s.cronJob("0/10 * * * * ?", xjob.StatusRunning))
			if err != nil {
				s.t.Fatal(err)
			}
			if j.TriggerNextTime != t0.Add(10*sec).UnixMilli() {
				s.t.Fatalf("after a failed advance next = %s, want t0+10s (the scan plans it)", time.UnixMilli(j.TriggerNextTime).Sub(t0))
			}
			return j
		}, nil, map[time.Duration]int{10 * sec: 1, 20 * sec: 1}},
		{"started at :07 fires at :10", func(s *system) xjob.Job {
			a := s.admin(nil)
			j, err := a.CreateJob(context.Background(), s.cronJob("0/10 * * * * ?", xjob.StatusStopped))
			if err != nil {
				s.t.Fatal(err)
			}
			if j, err = a.StartJob(context.Background(), j.ID); err != nil {
				s.t.Fatal(err)
			}
			return j
		}, nil, map[time.Duration]int{10 * sec: 1, 20 * sec: 1}},
		{"edited at :07 fires on the new schedule only", func(s *system) xjob.Job {
			// Running since t0 on 0/5 (its :10 fire is already on the ring);
			// the edit to 0/4 drops :10 by revision and pushes :08 and :12.
			j := s.jobs[0]
			j.ScheduleConf = "0/4 * * * * ?"
			j, err := s.admin(nil).UpdateJob(context.Background(), admin.UpdateJobParams{Job: j})
			if err != nil {
				s.t.Fatal(err)
			}
			return j
		}, nil, map[time.Duration]int{5 * sec: 1, 8 * sec: 1, 12 * sec: 1, 16 * sec: 1, 20 * sec: 1, 24 * sec: 1}},
		{"route edited at :07 keeps every fire", func(s *system) xjob.Job {
			j := s.jobs[0]
			j.RouteStrategy = xjob.RouteRound // bumps the revision: the ring drops :10 unless re-pushed
			j, err := s.admin(nil).UpdateJob(context.Background(), admin.UpdateJobParams{Job: j})
			if err != nil {
				s.t.Fatal(err)
			}
			return j
		}, nil, map[time.Duration]int{5 * sec: 1, 10 * sec: 1, 15 * sec: 1, 20 * sec: 1, 25 * sec: 1}},
		{"ONCE inside the window fires once", func(s *system) xjob.Job {
			j := s.cronJob("", xjob.StatusRunning)
			j.ScheduleType, j.ScheduleConf = xjob.ScheduleOnce, t0.Add(9*time.Second).Format(time.RFC3339)
			j, err := s.admin(nil).CreateJob(context.Background(), j)
			if err != nil {
				s.t.Fatal(err)
			}
			return j
		}, nil, map[time.Duration]int{9 * sec: 1}},
	}
	for _, h := range []horizon{{5 * sec, sec, 0, 0}, {5 * sec, sec, 10 * sec, 2 * sec}, {20 * sec, 20 * sec, 0, 0}} {
		for _, tt := range tests {
			t.Run(h.String()+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				windowCase(t, h, tt.act, tt.wantFires)
			})
		}
	}
}

// windowCase runs act at t0+7.3 s between scan ticks of horizon h, then the
// pipeline to t0+25 s, and checks the fires of the job act returns.
func windowCase(t *testing.T, h horizon, act func(s *system) xjob.Job, wantFires map[time.Duration]int) {
	sec := time.Second
	s := setup(t)
	s.horizon = h
	// A job running since t0 for the edit cases, created by the admin too.
	pre, err := s.admin(nil).CreateJob(context.Background(), s.cronJob("0/5 * * * * ?", xjob.StatusRunning))
	if err != nil {
		t.Fatal(err)
	}
	s.jobs = []xjob.Job{pre}
	sc, err := scan.New(scan.Config{
		Tunables: scan.Tunables{Shards: shards, PreRead: h.preRead, Advance: h.advance, RingLead: 0},
		Jobs:     s.db, Leases: s.db, Queues: s.db, Clock: s.clk, Owner: "a", Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	step := func(until time.Duration) {
		for ; s.clk.Now().Sub(t0) < until; s.clk.Advance(sec) {
			if s.clk.Now().Sub(t0)%h.every == 0 {
				if _, err := sc.Tick(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			s.fireRing(1)
			s.dispatchAll(1)
		}
	}
	step(7 * sec) // the clock is now t0+7 s
	s.clk.Advance(300 * time.Millisecond)
	job := act(s)
	s.clk.Advance(700 * time.Millisecond)
	step(26 * sec)
	if job.ID == pre.ID {
		got := s.fires(job)
		for at := range got {
			if at < 8*sec { // before the edit: not this test's business
				delete(got, at)
			}
		}
		want := map[time.Duration]int{}
		for at, n := range wantFires {
			if at >= 8*sec {
				want[at] = n
			}
		}
		expectFires(t, got, want)
		return
	}
	expectFires(t, s.fires(job), wantFires)
}

func expectFires(t *testing.T, got, want map[time.Duration]int) {
	t.Helper()
	for at, n := range want {
		if got[at] != n {
			t.Errorf("fire at t0+%s ran %d times, want %d (all: %v)", at, got[at], n, got)
		}
	}
	for at, n := range got {
		if _, ok := want[at]; !ok && at <= 25*time.Second {
			t.Errorf("unexpected fire at t0+%s (%d runs; all: %v)", at, n, got)
		}
	}
}
