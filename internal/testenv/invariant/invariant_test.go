package invariant_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/dispatch"
	"github.com/xjobdev/xjob/internal/scheduler/lease"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/internal/scheduler/ring"
	"github.com/xjobdev/xjob/internal/scheduler/route"
	"github.com/xjobdev/xjob/internal/scheduler/scan"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

var t0 = time.UnixMilli(1_800_000_000_000).UTC()

const shards = 2

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// executor is a protocol-speaking stand-in for a user's executor: it
// accepts every /run and records it, and when it came on clk.
type executor struct {
	srv *httptest.Server
	clk clock.Clock
	mu  sync.Mutex
	got []protocol.TriggerParam
	at  []time.Time
}

func newExecutor(t *testing.T, clk clock.Clock) *executor {
	e := &executor{clk: clk}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/run" {
			var p protocol.TriggerParam
			if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
				t.Errorf("executor: bad /run body: %v", err)
			}
			e.mu.Lock()
			e.got, e.at = append(e.got, p), append(e.at, e.clk.Now())
			e.mu.Unlock()
		}
		_, _ = io.WriteString(w, `{"code":200}`)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *executor) runs() []protocol.TriggerParam {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]protocol.TriggerParam(nil), e.got...)
}

// system is the scheduling center wired as xjob local wires it, driven
// step by step on a fake clock.
type system struct {
	t     *testing.T
	db    *sqlitestore.DB
	clk   *clock.Fake
	exec  *executor
	ring  *ring.Ring
	disp  *dispatch.Dispatcher
	cb    *callback.Service
	group xjob.Group
	met   *metric.Metrics
	jobs  []xjob.Job // jobs a test set up before its action
	// horizon is the scan's pre-read and tick period (window tests).
	horizon horizon
}

func setup(t *testing.T) *system {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	db, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "xjob.db"), sqlitestore.Options{Shards: shards, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ex := newExecutor(t, clk)
	g, err := db.GroupInsert(ctx, xjob.Group{AppName: "demo-app", Title: "demo",
		AddressType: xjob.AddressManual, AddressList: []string{ex.srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	client, err := execclient.New(execclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(registry.Config{Store: db, Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	cb, err := callback.New(callback.Config{Store: db, Queues: db, Alarmer: alarm.Log{Logger: quiet}, Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	met := &metric.Metrics{}
	d, err := dispatch.New(dispatch.Config{
		Store: db, Executors: client, Router: route.New(route.Options{Clock: clk, Prober: client}),
		Addresses: reg, Completer: cb, Clock: clk, Logger: quiet, Metrics: met,
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ring.New(ring.Config{Jobs: db, Queues: db, Clock: clk, Logger: quiet, Leases: db, Metrics: met})
	if err != nil {
		t.Fatal(err)
	}
	return &system{t: t, db: db, clk: clk, exec: ex, ring: r, disp: d, cb: cb, group: g, met: met}
}

func (s *system) scanner(owner string, jobs driver.JobStore) *scan.Scanner {
	s.t.Helper()
	if jobs == nil {
		jobs = s.db
	}
	sc, err := scan.New(scan.Config{
		Tunables: scan.Tunables{Shards: shards, RingLead: 0, Advance: s.horizon.advance},
		Jobs:     jobs, Leases: s.db, Queues: s.db, Clock: s.clk, Owner: owner, Logger: quiet, Metrics: s.met,
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return sc
}

// addJob stores a running FIX_RATE job with its first fire at first.
func (s *system) addJob(rate string, first time.Time) xjob.Job {
	s.t.Helper()
	j := xjob.Job{GroupID: s.group.ID, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixRate,
		ScheduleConf: rate, Handler: "demo", TriggerStatus: xjob.StatusRunning, TriggerNextTime: first.UnixMilli()}
	j.ApplyDefaults()
	j, err := s.db.JobInsert(context.Background(), j)
	if err != nil {
		s.t.Fatal(err)
	}
	return j
}

// fireRing fires every visible ring bucket, delivering each `copies`
// times (SQS at-least-once) before acking it.
func (s *system) fireRing(copies int) {
	s.t.Helper()
	ctx := context.Background()
	q := s.db.Ring()
	for {
		ds, err := q.Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Hour})
		if err != nil {
			s.t.Fatal(err)
		}
		if len(ds) == 0 {
			return
		}
		for _, d := range ds {
			for range copies {
				if _, err := s.ring.Fire(ctx, d.Msg); err != nil {
					s.t.Fatal(err)
				}
			}
			if err := q.Ack(ctx, []string{d.Token}); err != nil {
				s.t.Fatal(err)
			}
		}
	}
}

// dispatchAll dispatches every visible task `copies` times, then acks it.
func (s *system) dispatchAll(copies int) {
	s.t.Helper()
	ctx := context.Background()
	for _, lane := range []fire.Lane{fire.LaneFast, fire.LaneSlow} {
		q := s.db.Dispatch(lane)
		for {
			ds, err := q.Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Hour})
			if err != nil {
				s.t.Fatal(err)
			}
			if len(ds) == 0 {
				break
			}
			for _, d := range ds {
				for range copies {
					if _, err := s.disp.Dispatch(ctx, d.Msg); err != nil {
						s.t.Fatal(err)
					}
				}
				if err := q.Ack(ctx, []string{d.Token}); err != nil {
					s.t.Fatal(err)
				}
			}
		}
	}
}

// executedFires maps job id → scheduled fire times the executor ran, with
// a count per fire time.
func (s *system) executedFires() map[int64]map[int64]int {
	s.t.Helper()
	out := map[int64]map[int64]int{}
	for _, p := range s.exec.runs() {
		l, err := s.db.LogGet(context.Background(), p.LogID)
		if err != nil {
			s.t.Fatalf("executor ran log %d the store does not know: %v", p.LogID, err)
		}
		if out[l.JobID] == nil {
			out[l.JobID] = map[int64]int{}
		}
		out[l.JobID][l.ScheduledTime]++
	}
	return out
}

// expectEveryFireOnce checks that job ran exactly once at each of
// first, first+step, … up to and including last.
func (s *system) expectEveryFireOnce(job xjob.Job, first time.Time, step time.Duration, last time.Time) {
	s.t.Helper()
	got := s.executedFires()[job.ID]
	want := 0
	for at := first; !at.After(last); at = at.Add(step) {
		want++
		if n := got[at.UnixMilli()]; n != 1 {
			s.t.Errorf("job %d fire at %s ran %d times, want 1", job.ID, at.Sub(t0), n)
		}
	}
	extra := 0
	for at, n := range got {
		if at > last.UnixMilli() {
			extra += n
		}
	}
	if total := len(got); total-extra > want {
		s.t.Errorf("job %d ran fires off its schedule: %v", job.ID, got)
	}
}

// run ticks the pipeline once a second for d: scan, ring, dispatch.
func (s *system) run(sc *scan.Scanner, d time.Duration, copies int) {
	s.t.Helper()
	for end := s.clk.Now().Add(d); s.clk.Now().Before(end); {
		if _, err := sc.Tick(context.Background()); err != nil {
			s.t.Fatal(err)
		}
		s.fireRing(copies)
		s.dispatchAll(copies)
		s.clk.Advance(time.Second)
	}
}

// Invariant 1: the process stops after pushing to the ring and before
// advancing the job; nothing it pushed or was about to push is lost.
func TestNoLostFireWhenScanStopsBetweenPushAndAdvance(t *testing.T) {
	t.Parallel()
	forAdvances(t, func(t *testing.T, s *system) {
		job := s.addJob("2", t0.Add(time.Second))
		if _, err := s.scanner("a", crashOnAdvance{s.db}).Tick(context.Background()); !errors.Is(err, errCrash) {
			t.Fatalf("tick err = %v, want the injected crash", err)
		}
		// The restarted process comes back with a new identity: it must wait
		// for the dead one's lease to expire (10 s) before it may scan.
		s.run(s.scanner("b", nil), 30*time.Second, 1)
		last := t0.Add(29 * time.Second)
		// The crashed tick pushed the fires of its advance (PreRead, 5 s,
		// at least) before it died: t0+1, 3, 5 (and 7, 9 with a 10 s
		// advance). Those run once. The job itself was not advanced, so
		// when b takes the lease at t0+10 it finds the job 9 s late: a
		// misfire, and DO_NOTHING (the job's strategy) skips the missed
		// fires and plans from that tick, FIX_RATE: t0+12, 14, … 28, each
		// once. Nothing else runs.
		pushed := max(5*time.Second, s.horizon.advance)
		want := map[int64]bool{}
		for at := t0.Add(time.Second); !at.After(t0.Add(pushed)); at = at.Add(2 * time.Second) {
			want[at.UnixMilli()] = true
		}
		for at := t0.Add(12 * time.Second); !at.After(last); at = at.Add(2 * time.Second) {
			want[at.UnixMilli()] = true
		}
		got := s.executedFires()[job.ID]
		for at := range want {
			if n := got[at]; n != 1 {
				t.Errorf("fire at t0+%s ran %d times, want 1", time.UnixMilli(at).Sub(t0), n)
			}
		}
		for at, n := range got {
			if !want[at] {
				t.Errorf("fire at t0+%s ran %d times, want none", time.UnixMilli(at).Sub(t0), n)
			}
		}
	})
}

// Invariant 1, with the restart keeping its identity (xjob local reuses
// its owner id across restarts of one installation): no fire is lost at all.
func TestNoLostFireWhenScanRestartsWithSameOwner(t *testing.T) {
	t.Parallel()
	forAdvances(t, func(t *testing.T, s *system) {
		job := s.addJob("2", t0.Add(time.Second))
		if _, err := s.scanner("a", crashOnAdvance{s.db}).Tick(context.Background()); !errors.Is(err, errCrash) {
			t.Fatalf("tick err = %v, want the injected crash", err)
		}
		s.run(s.scanner("a", nil), 30*time.Second, 1)
		s.expectEveryFireOnce(job, t0.Add(time.Second), 2*time.Second, t0.Add(29*time.Second))
	})
}

// Invariant 2: every ring bucket and every dispatch task is delivered
// three times (SQS at-least-once, retried Lambdas); each fire runs once.
func TestNoDuplicateExecutionOnRedelivery(t *testing.T) {
	t.Parallel()
	forAdvances(t, func(t *testing.T, s *system) {
		jobs := []xjob.Job{s.addJob("1", t0.Add(time.Second)), s.addJob("3", t0.Add(2*time.Second))}
		s.run(s.scanner("a", nil), 20*time.Second, 3)
		s.expectEveryFireOnce(jobs[0], t0.Add(time.Second), time.Second, t0.Add(19*time.Second))
		s.expectEveryFireOnce(jobs[1], t0.Add(2*time.Second), 3*time.Second, t0.Add(17*time.Second))

		// Invariant 7: what happened is counted — every run once as a
		// trigger, every redelivery as a duplicate, and the fire delay.
		m := s.met.Snapshot()
		if runs := int64(len(s.exec.runs())); m.Triggers != runs || m.Duplicates < 2*runs {
			t.Errorf("metrics = %+v; want %d triggers and ≥ %d duplicates", m, runs, 2*runs)
		}
		if m.FireDelayP99 > 1 {
			t.Errorf("fire delay p99 = %d ms; on a fake clock every fire is on time (≤ 1 ms)", m.FireDelayP99)
		}
	})
}

// Invariants 2 and 3: two scanners work the same shard at once (a stale
// lease holder that has not noticed it lost the lease). Job advances are
// conditional on the version, pushes are deduplicated by occurrence id:
// every fire runs once.
func TestNoDuplicateExecutionWithTwoScannersRacing(t *testing.T) {
	t.Parallel()
	forAdvances(t, func(t *testing.T, s *system) {
		ctx := context.Background()
		var jobs []xjob.Job
		for range 20 {
			jobs = append(jobs, s.addJob("1", t0.Add(time.Second)))
		}
		a, b := s.scanner("a", nil), s.scanner("b", nil)
		stale := driver.Lease{Name: lease.Name(0), Owner: "x", Token: 1, ExpiresAt: t0.Add(time.Hour).UnixMilli()}
		conflicts := 0
		for range 15 {
			now := s.clk.Now().Truncate(time.Second).UnixMilli()
			for shard := range shards {
				var wg sync.WaitGroup
				var mu sync.Mutex
				for _, sc := range []*scan.Scanner{a, b} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						st, err := sc.TickShard(ctx, shard, now, stale)
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							t.Error(err)
						}
						conflicts += st.Conflicts
					}()
				}
				wg.Wait()
			}
			s.fireRing(1)
			s.dispatchAll(1)
			s.clk.Advance(time.Second)
		}
		for _, j := range jobs {
			s.expectEveryFireOnce(j, t0.Add(time.Second), time.Second, t0.Add(14*time.Second))
		}
		t.Logf("advances lost to the other scanner: %d", conflicts)
	})
}

// Invariant 2 at dispatch: a dispatcher dies after creating the trigger
// log and before calling the executor. A redelivery inside the claim
// window backs off (ErrInFlight); one after it takes the trigger over.
// The executor runs it exactly once.
func TestDispatchTakesOverAbandonedOccurrence(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := context.Background()
	job := s.addJob("60", t0.Add(time.Hour))
	occ := fire.Occurrence{JobID: job.ID, Type: xjob.TriggerCron, FireTime: t0.UnixMilli()}
	// The dead dispatcher's log: created, claimed for 30 s, never triggered.
	if _, err := s.db.LogCreate(ctx, xjob.Log{OccurrenceID: occ.ID(0), JobID: job.ID, GroupID: job.GroupID,
		TriggerType: occ.Type, ScheduledTime: occ.FireTime, TriggerTime: t0.UnixMilli(),
		ClaimUntil: t0.Add(30 * time.Second).UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	task := fire.DispatchTask{Occurrence: occ, Revision: job.Revision}
	if _, err := s.disp.Dispatch(ctx, task); !errors.Is(err, dispatch.ErrInFlight) {
		t.Fatalf("redelivery within the claim: err = %v, want ErrInFlight", err)
	}
	if n := len(s.exec.runs()); n != 0 {
		t.Fatalf("executor ran %d times during the claim", n)
	}
	s.clk.Advance(31 * time.Second)
	out, err := s.disp.Dispatch(ctx, task)
	if err != nil || len(out.Logs) != 1 {
		t.Fatalf("takeover: %+v, %v", out, err)
	}
	if _, err := s.disp.Dispatch(ctx, task); err != nil {
		t.Fatal(err)
	}
	if n := len(s.exec.runs()); n != 1 {
		t.Fatalf("executor ran %d times, want 1", n)
	}
}

// crashOnAdvance wraps the real store and fails every job advance: the
// process "dies" after its ring pushes.
type crashOnAdvance struct{ driver.JobStore }

var errCrash = errors.New("simulated crash")

func (crashOnAdvance) JobAdvance(context.Context, driver.JobAdvanceParams) error { return errCrash }

func (crashOnAdvance) JobAdvanceMany(context.Context, []driver.JobAdvanceParams) ([]error, error) {
	return nil, errCrash
}

// Invariant 1 for a one-shot schedule: the scan pushes the only fire, then
// finds no next time and stops the job; the fire still runs, once.
func TestOneShotCronFiresOnce(t *testing.T) {
	t.Parallel()
	s := setup(t)
	at := t0.Add(3 * time.Second) // 2027-01-15 08:00:03 UTC
	j := xjob.Job{GroupID: s.group.ID, Description: "once", Author: "a", ScheduleType: xjob.ScheduleCron,
		ScheduleConf: "3 0 8 15 1 ? 2027", Handler: "demo", TriggerStatus: xjob.StatusRunning, TriggerNextTime: at.UnixMilli()}
	j.ApplyDefaults()
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	j, err := s.db.JobInsert(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	s.run(s.scanner("a", nil), 10*time.Second, 1)
	if got := s.executedFires()[j.ID]; len(got) != 1 || got[at.UnixMilli()] != 1 {
		t.Fatalf("one-shot job ran %v, want once at %s", got, at)
	}
	stored, _ := s.db.JobGet(context.Background(), j.ID)
	if stored.TriggerStatus != xjob.StatusStopped {
		t.Errorf("job status = %d, want stopped after its only fire", stored.TriggerStatus)
	}
}

// forAdvances runs an invariant test with the scan planning a due job's
// fires PreRead ahead (xxl-job's rule) and 2×PreRead ahead (xjob local's
// Advance: an every-second job is read once per ~6 ticks).
func forAdvances(t *testing.T, fn func(t *testing.T, s *system)) {
	for _, adv := range []time.Duration{0, 10 * time.Second} {
		t.Run("advance="+adv.String(), func(t *testing.T) {
			t.Parallel()
			s := setup(t)
			s.horizon.advance = adv
			fn(t, s)
		})
	}
}
