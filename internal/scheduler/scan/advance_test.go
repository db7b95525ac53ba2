package scan_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/ring"
	"github.com/xjobdev/xjob/internal/scheduler/scan"
	"github.com/xjobdev/xjob/pkg/driver"
)

// fireLog is a ring sink that records every task handed to a lane.
type fireLog struct {
	mu    sync.Mutex
	fires map[int64][]int64 // job → fire times (Unix ms), in hand-off order
}

func (f *fireLog) Deliver(_ context.Context, _ fire.Lane, tasks []fire.DispatchTask) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range tasks {
		f.fires[t.Occurrence.JobID] = append(f.fires[t.Occurrence.JobID], t.Occurrence.FireTime)
	}
	return nil
}

// TestFarAdvanceKeepsEditsAndStops: with the AWS planning rule (a once-a-
// minute scan reading 150 s ahead and planning a due job's fires 14
// minutes ahead), a job rescheduled and a job stopped after their fires
// were planned fire exactly as their stored schedule says at each instant:
// the planned fires of the old schedule are dropped by the ring, the new
// schedule's first fires are pushed by the admin, the scan plans the rest,
// and nothing fires twice or goes missing.
func TestFarAdvanceKeepsEditsAndStops(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	cfg := scan.Tunables{Shards: shards, RingLead: 0, PreRead: 150 * time.Second, Advance: 14 * time.Minute}
	sc, err := scan.New(scan.Config{Tunables: cfg, Jobs: e.db, Leases: e.db, Queues: e.db, Clock: e.clk, Owner: "scan"})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cb, err := callback.New(callback.Config{Store: e.db, Queues: e.db, Alarmer: alarm.Log{Logger: quiet}, Clock: e.clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ec, err := execclient.New(execclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ec.Close)
	adm, err := admin.New(admin.Config{Store: e.db, Queues: e.db, Executors: ec, Finisher: cb, Clock: e.clk, Logger: quiet, Scan: cfg})
	if err != nil {
		t.Fatal(err)
	}
	sink := &fireLog{fires: map[int64][]int64{}}
	rg, err := ring.New(ring.Config{Jobs: e.db, Queues: e.db, Sink: sink, Clock: e.clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	g, err := adm.CreateGroup(ctx, xjob.Group{AppName: "xjob-advance", Title: "advance", AddressType: xjob.AddressManual,
		AddressList: []string{"http://127.0.0.1:9"}})
	if err != nil {
		t.Fatal(err)
	}
	everyMinute := func() xjob.Job {
		j, err := adm.CreateJob(ctx, xjob.Job{GroupID: g.ID, Description: "d", Author: "a", Handler: "h",
			ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 * * * * ?", TriggerStatus: xjob.StatusRunning})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	edited, stopped, kept := everyMinute(), everyMinute(), everyMinute()

	dropped := 0
	// step runs the deployment for one second: the scan on the minute, then
	// every ring bucket visible by now, fired and acknowledged.
	step := func() {
		e.clk.Advance(time.Second)
		if e.clk.Now().Second() == 0 {
			if _, err := sc.Tick(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for {
			ds, err := e.db.Ring().Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) == 0 {
				return
			}
			for _, d := range ds {
				st, err := rg.Fire(ctx, d.Msg)
				if err != nil {
					t.Fatal(err)
				}
				dropped += st.Dropped
				if err := e.db.Ring().Ack(ctx, []string{d.Token}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if _, err := sc.Tick(ctx); err != nil { // t0 is on a minute
		t.Fatal(err)
	}
	// Let the plan reach 14 minutes out, then edit and stop at t0+3m10s.
	for range 3*60 + 10 {
		step()
	}
	editAt := e.clk.Now()
	ej, err := adm.GetJob(ctx, edited.ID)
	if err != nil {
		t.Fatal(err)
	}
	ej.ScheduleConf = "30 * * * * ?"
	if _, err := adm.UpdateJob(ctx, admin.UpdateJobParams{Job: ej}); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.StopJob(ctx, stopped.ID); err != nil {
		t.Fatal(err)
	}
	end := t0.Add(20 * time.Minute)
	for e.clk.Now().Before(end) {
		step()
	}

	want := func(from, to time.Time, second int) []int64 {
		var out []int64
		for m := from.Truncate(time.Minute); !m.After(to); m = m.Add(time.Minute) {
			if at := m.Add(time.Duration(second) * time.Second); at.After(from) && !at.After(to) {
				out = append(out, at.UnixMilli())
			}
		}
		return out
	}
	check := func(name string, job int64, wantFires []int64) {
		t.Helper()
		got := sink.fires[job]
		if len(got) != len(wantFires) {
			t.Fatalf("%s: %d fires %v, want %d %v", name, len(got), got, len(wantFires), wantFires)
		}
		for i := range got {
			if got[i] != wantFires[i] {
				t.Fatalf("%s: fire %d at %d, want %d (all: %v)", name, i, got[i], wantFires[i], got)
			}
		}
	}
	// The edit and the stop came when both jobs' fires were planned to
	// their grid points, at least PreRead past the tick at t0+3m (where on
	// the grid depends on the job's group): each job had at least the fires
	// at t0+4m and t0+5m planned, and the ring dropped them as stale.
	if dropped < 4 {
		t.Errorf("ring dropped %d stale occurrences, want the ≥ 4 planned before the edit and the stop", dropped)
	}
	beforeEdit := want(t0, editAt, 0) // fires at t0+1m, +2m, +3m
	check("kept", kept.ID, want(t0, end, 0))
	check("stopped", stopped.ID, beforeEdit)
	check("edited", edited.ID, append(beforeEdit, want(editAt, end, 30)...))
}
