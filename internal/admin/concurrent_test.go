package admin_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/pkg/driver"
)

// TestConcurrentUpdateWithoutVersion: updates that name no version apply to
// the latest version however many run at once (the docs' promise); an
// update naming a stale version is still a conflict.
func TestConcurrentUpdateWithoutVersion(t *testing.T) {
	e := setup(t)
	j := e.create(e.spec(xjob.ScheduleCron, "0 0 * * * ?"))
	const writers = 64
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := j
			n.Description = fmt.Sprintf("writer %d", i)
			_, errs[i] = e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: n})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	got, err := e.svc.GetJob(e.ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version < j.Version+writers {
		t.Errorf("version %d after %d updates of version %d", got.Version, writers, j.Version)
	}
	stale := j
	stale.Description = "stale"
	if _, err := e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: stale, Version: j.Version}); !errors.Is(err, xjob.ErrConflict) {
		t.Fatalf("update naming stale version %d: %v, want a conflict", j.Version, err)
	}
}

// TestConcurrentChildEdgesCannotCloseACycle: two concurrent edits that
// each add one edge of a cycle (A→B and B→A) each pass a check that reads
// the other's old children; within one process they are serialised, so
// exactly one of them wins and the other is refused as a cycle.
func TestConcurrentChildEdgesCannotCloseACycle(t *testing.T) {
	e := setup(t)
	for round := range 30 {
		a := e.create(e.spec(xjob.ScheduleCron, "0 0 * * * ?"))
		b := e.create(e.spec(xjob.ScheduleCron, "0 0 * * * ?"))
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, edge := range [][2]xjob.Job{{a, b}, {b, a}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := edge[0]
				n.ChildJobIDs = []int64{edge[1].ID}
				_, errs[i] = e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: n})
			}()
		}
		wg.Wait()
		if errs[0] == nil && errs[1] == nil {
			t.Fatalf("round %d: both %d→%d and %d→%d were stored: a cycle", round, a.ID, b.ID, b.ID, a.ID)
		}
		if errs[0] != nil && errs[1] != nil {
			t.Fatalf("round %d: both edges refused: %v; %v", round, errs[0], errs[1])
		}
	}
}

// TestChildEdgesAcrossProcessesCannotCloseACycle: the same two edits made
// by two admin services sharing one store (two Lambda invocations, two
// processes on one file) are serialised by the store's child-graph lease:
// exactly one edge is stored.
func TestChildEdgesAcrossProcessesCannotCloseACycle(t *testing.T) {
	e := setup(t)
	other := e.otherService()
	// A waiting edit polls on the fake clock: wake it whenever it sleeps,
	// one poll at a time, so the holder's 30 s lease cannot run out under
	// it while it edits.
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			default:
				if e.clk.Sleepers() > 0 {
					e.clk.Advance(25 * time.Millisecond)
				}
				runtime.Gosched()
			}
		}
	}()
	for round := range 20 {
		a := e.create(e.spec(xjob.ScheduleCron, "0 0 * * * ?"))
		b := e.create(e.spec(xjob.ScheduleCron, "0 0 * * * ?"))
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, edit := range []struct {
			svc      *admin.Service
			from, to xjob.Job
		}{{e.svc, a, b}, {other, b, a}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := edit.from
				n.ChildJobIDs = []int64{edit.to.ID}
				_, errs[i] = edit.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: n})
			}()
		}
		wg.Wait()
		if errs[0] == nil && errs[1] == nil {
			t.Fatalf("round %d: both %d→%d and %d→%d were stored: a cycle", round, a.ID, b.ID, b.ID, a.ID)
		}
		if errs[0] != nil && errs[1] != nil {
			t.Fatalf("round %d: both edges refused: %v; %v", round, errs[0], errs[1])
		}
	}
}

// TestChildGraphLeaseHeldTooLong: an edit that cannot get the lease within
// its wait (another editor holds it) is refused as a conflict and writes
// nothing.
func TestChildGraphLeaseHeldTooLong(t *testing.T) {
	e := setup(t)
	a := e.create(e.spec(xjob.ScheduleCron, "0 0 * * * ?"))
	b := e.create(e.spec(xjob.ScheduleCron, "0 0 * * * ?"))
	if _, err := e.db.LeaseAcquire(e.ctx, driver.LeaseAcquireParams{Name: "admin-child-graph", Owner: "stuck",
		Now: e.clk.Now().UnixMilli(), TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		n := a
		n.ChildJobIDs = []int64{b.ID}
		_, err := e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: n})
		errc <- err
	}()
	// Move the clock only while the edit sleeps between tries, so its 10 s
	// wait runs out long before the stuck holder's one-minute lease.
	var err error
	for waiting := true; waiting; {
		select {
		case err = <-errc:
			waiting = false
		default:
			if e.clk.Sleepers() > 0 {
				e.clk.Advance(100 * time.Millisecond)
			}
			runtime.Gosched()
		}
	}
	if !errors.Is(err, xjob.ErrConflict) {
		t.Fatalf("edit while the lease is held: %v, want a conflict", err)
	}
	got, err := e.svc.GetJob(e.ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ChildJobIDs) != 0 || got.Version != a.Version {
		t.Fatalf("refused edit wrote: children %v version %d (was %d)", got.ChildJobIDs, got.Version, a.Version)
	}
}

// otherService is a second admin service on the env's database file,
// through its own store: another process, as far as the store can tell.
func (e *env) otherService() *admin.Service {
	e.t.Helper()
	db, err := sqlitestore.Open(e.ctx, e.path, sqlitestore.Options{Shards: 4, Clock: e.clk})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = db.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cb, err := callback.New(callback.Config{Store: db, Queues: db, Alarmer: alarm.Log{Logger: quiet}, Clock: e.clk, Logger: quiet})
	if err != nil {
		e.t.Fatal(err)
	}
	ec, err := execclient.New(execclient.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(ec.Close)
	svc, err := admin.New(admin.Config{Store: db, Queues: db, Executors: ec, Finisher: cb, Clock: e.clk, Logger: quiet})
	if err != nil {
		e.t.Fatal(err)
	}
	return svc
}

// TestBulkStartSharesRingBuckets: a bulk start pushes the started jobs'
// first fires together, one ring message per shard and second, not one per
// job and second.
func TestBulkStartSharesRingBuckets(t *testing.T) {
	e := setup(t)
	const jobs = 12
	var ids []int64
	for range jobs {
		spec := e.spec(xjob.ScheduleCron, "* * * * * ?")
		spec.TriggerStatus = xjob.StatusStopped
		ids = append(ids, e.create(spec).ID)
	}
	errs, err := e.svc.BulkJobs(e.ctx, admin.BulkStart, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start %d: %v", ids[i], err)
		}
	}
	e.clk.Advance(time.Minute) // every pushed bucket is visible
	ds, err := e.db.Ring().Receive(e.ctx, driver.ReceiveParams{Max: 1000, Visibility: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	items, seconds := 0, map[int64]bool{}
	type key struct {
		shard  int
		second int64
	}
	buckets := map[key]int{}
	for _, d := range ds {
		items += len(d.Msg.Items)
		seconds[d.Msg.Second] = true
		buckets[key{d.Msg.Shard, d.Msg.Second}]++
	}
	if items < jobs*4 {
		t.Fatalf("%d ring items for %d every-second jobs and a 5 s horizon, want ≥ %d", items, jobs, jobs*4)
	}
	for k, n := range buckets {
		if n > 1 {
			t.Errorf("shard %d second %d: %d ring messages, want 1", k.shard, k.second, n)
		}
	}
	if len(ds) > 4*len(seconds) {
		t.Errorf("%d ring messages over %d seconds with 4 shards", len(ds), len(seconds))
	}
}
