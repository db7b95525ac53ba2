package scan_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/scheduler/lease"
	"github.com/xjobdev/xjob/internal/scheduler/scan"
	"github.com/xjobdev/xjob/internal/testenv/syncbuf"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// t0 is a whole second, so ticks plan on it.
var t0 = time.UnixMilli(1_800_000_000_000).UTC()

const shards = 2

type env struct {
	db  *sqlitestore.DB
	clk *clock.Fake
}

func setup(t *testing.T) env {
	t.Helper()
	clk := clock.NewFake(t0)
	db, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "xjob.db"), sqlitestore.Options{Shards: shards, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return env{db: db, clk: clk}
}

func (e env) scanner(t *testing.T, owner string, jobs driver.JobStore) *scan.Scanner {
	t.Helper()
	if jobs == nil {
		jobs = e.db
	}
	s, err := scan.New(scan.Config{
		Tunables: scan.Tunables{Shards: shards, RingLead: 0},
		Jobs:     jobs, Leases: e.db, Queues: e.db, Clock: e.clk, Owner: owner,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// addJob stores a running FIX_RATE job whose next fire is at next.
func (e env) addJob(t *testing.T, rate string, next time.Time, misfire xjob.MisfireStrategy) xjob.Job {
	t.Helper()
	j := xjob.Job{GroupID: 1, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixRate,
		ScheduleConf: rate, Handler: "h", TriggerStatus: xjob.StatusRunning, MisfireStrategy: misfire,
		TriggerNextTime: next.UnixMilli()}
	j.ApplyDefaults()
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	j, err := e.db.JobInsert(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// drainRing returns every ring occurrence visible by `until`, acked.
func (e env) drainRing(t *testing.T) []fire.RingItem {
	t.Helper()
	ctx := context.Background()
	var items []fire.RingItem
	for {
		ds, err := e.db.Ring().Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			items = append(items, d.Msg.Items...)
			if err := e.db.Ring().Ack(ctx, []string{d.Token}); err != nil {
				t.Fatal(err)
			}
		}
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].FireTime != items[j].FireTime {
			return items[i].FireTime < items[j].FireTime
		}
		return items[i].JobID < items[j].JobID
	})
	return items
}

func (e env) drainDispatch(t *testing.T) []fire.DispatchTask {
	t.Helper()
	ctx := context.Background()
	var tasks []fire.DispatchTask
	for _, lane := range []fire.Lane{fire.LaneFast, fire.LaneSlow} {
		q := e.db.Dispatch(lane)
		for {
			ds, err := q.Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) == 0 {
				break
			}
			for _, d := range ds {
				tasks = append(tasks, d.Msg)
				_ = q.Ack(ctx, []string{d.Token})
			}
		}
	}
	return tasks
}

func TestTickPushesWindowAndAdvances(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	j := e.addJob(t, "2", t0.Add(1*time.Second), xjob.MisfireDoNothing)
	s := e.scanner(t, "a", nil)

	st, err := s.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Jobs != 1 || st.RingFires != 3 || st.NowFires != 0 {
		t.Fatalf("stats = %+v, want 1 job, 3 ring fires (t+1, t+3, t+5)", st)
	}
	got, _ := e.db.JobGet(ctx, j.ID)
	if want := t0.Add(7 * time.Second).UnixMilli(); got.TriggerNextTime != want || got.TriggerLastTime != t0.Add(5*time.Second).UnixMilli() {
		t.Fatalf("next=%d last=%d, want next=%d", got.TriggerNextTime, got.TriggerLastTime, want)
	}
	if got.Version != j.Version+1 || got.Revision != j.Revision {
		t.Fatalf("version %d→%d revision %d→%d: advance must bump version only", j.Version, got.Version, j.Revision, got.Revision)
	}

	// The next tick finds nothing new: the job left the window.
	e.clk.Advance(time.Second)
	st, err = s.Tick(ctx)
	if err != nil || st.Jobs != 0 {
		t.Fatalf("second tick: %+v %v, want no due job", st, err)
	}
	e.clk.Advance(10 * time.Second)
	items := e.drainRing(t)
	if len(items) != 3 {
		t.Fatalf("ring holds %d items, want 3", len(items))
	}
	for i, want := range []time.Duration{1, 3, 5} {
		if items[i].FireTime != t0.Add(want*time.Second).UnixMilli() || items[i].Revision != j.Revision {
			t.Errorf("item %d = %+v", i, items[i])
		}
	}
}

func TestTickLateAndMisfired(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	late := e.addJob(t, "60", t0.Add(-3*time.Second), xjob.MisfireDoNothing)
	skip := e.addJob(t, "60", t0.Add(-time.Hour), xjob.MisfireDoNothing)
	once := e.addJob(t, "60", t0.Add(-time.Hour), xjob.MisfireFireOnceNow)
	st, err := e.scanner(t, "a", nil).Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Misfires != 2 || st.NowFires != 2 {
		t.Fatalf("stats = %+v, want 2 misfires and 2 fires now", st)
	}
	tasks := e.drainDispatch(t)
	byJob := map[int64]fire.DispatchTask{}
	for _, tk := range tasks {
		byJob[tk.Occurrence.JobID] = tk
	}
	if tk, ok := byJob[late.ID]; !ok || tk.Occurrence.Type != xjob.TriggerCron || tk.Occurrence.FireTime != late.TriggerNextTime {
		t.Errorf("late job task = %+v, want CRON at its planned time", tk)
	}
	if _, ok := byJob[skip.ID]; ok {
		t.Error("DO_NOTHING misfire was dispatched")
	}
	if tk, ok := byJob[once.ID]; !ok || tk.Occurrence.Type != xjob.TriggerMisfire {
		t.Errorf("FIRE_ONCE_NOW task = %+v, want MISFIRE", tk)
	}
	// A misfired job is planned from now (xxl-job's rule); a late one goes
	// on on its own FIX_RATE grid, 60 s after the late fire.
	for id, want := range map[int64]int64{late.ID: t0.Add(57 * time.Second).UnixMilli(),
		skip.ID: t0.Add(60 * time.Second).UnixMilli(), once.ID: t0.Add(60 * time.Second).UnixMilli()} {
		j, _ := e.db.JobGet(ctx, id)
		if j.TriggerNextTime != want {
			t.Errorf("job %d next = %d, want %d", id, j.TriggerNextTime, want)
		}
	}
}

func TestTickStopsJobWithoutNextTime(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	j := e.addJob(t, "5", t0.Add(time.Second), xjob.MisfireDoNothing)
	// Corrupt the stored schedule behind validation's back, as a bad
	// migration or an older version could.
	j.ScheduleConf = "not-a-number"
	if _, err := e.db.JobUpdate(ctx, driver.JobUpdateParams{Job: j, ExpectVersion: j.Version}); err != nil {
		t.Fatal(err)
	}
	st, err := e.scanner(t, "a", nil).Tick(ctx)
	if err != nil || st.Stopped != 1 {
		t.Fatalf("tick = %+v, %v; want the job stopped", st, err)
	}
	got, _ := e.db.JobGet(ctx, j.ID)
	if got.TriggerStatus != xjob.StatusStopped {
		t.Fatalf("job status = %d, want stopped", got.TriggerStatus)
	}
}

func TestSecondScannerIsLockedOut(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	// A job due in every shard: a shard with nothing due is not leased.
	for seen := map[int]bool{}; len(seen) < shards; {
		seen[e.addJob(t, "1", t0.Add(time.Second), xjob.MisfireDoNothing).Shard] = true
	}
	a, b := e.scanner(t, "a", nil), e.scanner(t, "b", nil)
	sa, err := a.Tick(ctx)
	if err != nil || sa.Shards != shards {
		t.Fatalf("a: %+v %v, want all shards", sa, err)
	}
	sb, err := b.Tick(ctx)
	if err != nil || sb.Shards != 0 || sb.Jobs != 0 {
		t.Fatalf("b: %+v %v, want no shard while a holds them", sb, err)
	}
	// a dies without releasing; after the TTL b takes over.
	e.clk.Advance(11 * time.Second)
	sb, err = b.Tick(ctx)
	if err != nil || sb.Shards != shards {
		t.Fatalf("b after expiry: %+v %v, want all shards", sb, err)
	}
	// a comes back: its leases were taken over, it must back off.
	sa, err = a.Tick(ctx)
	if err != nil || sa.Shards != 0 {
		t.Fatalf("a after takeover: %+v %v, want none", sa, err)
	}
	// Release hands over at once (b planned the jobs ahead: new ones are
	// due in every shard).
	b.ReleaseAll(ctx)
	for seen := map[int]bool{}; len(seen) < shards; {
		seen[e.addJob(t, "1", e.clk.Now().Add(time.Second), xjob.MisfireDoNothing).Shard] = true
	}
	if sa, err = a.Tick(ctx); err != nil || sa.Shards != shards {
		t.Fatalf("a after release: %+v %v", sa, err)
	}
}

// A scanner leases only the shards that have something due within its
// horizon: an idle shard costs one read, not a lease write and a release.
func TestIdleShardIsNotLeased(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	sc := e.scanner(t, "a", nil)
	st, err := sc.Tick(ctx)
	if err != nil || st.Shards != 0 || st.Pages != shards {
		t.Fatalf("idle tick: %+v %v; want every shard read once and none leased", st, err)
	}
	for shard := range shards {
		if _, err := e.db.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: lease.Name(shard), Owner: "other",
			Now: e.clk.Now().UnixMilli(), TTL: 10 * time.Second}); err != nil {
			t.Fatalf("shard %d lease after an idle tick: %v, want it free", shard, err)
		}
	}
	j := e.addJob(t, "1", t0.Add(time.Second), xjob.MisfireDoNothing)
	st, err = sc.Tick(ctx)
	if err != nil || st.Shards != 0 || st.Jobs != 0 {
		t.Fatalf("tick while another holds the busy shard %d: %+v %v; want it skipped", j.Shard, st, err)
	}
}

// failAdvance is a fault-injecting decorator around the real store: it
// simulates a process that dies after pushing to the ring and before
// advancing the job.
type failAdvance struct{ driver.JobStore }

var errCrash = errors.New("simulated crash")

func (failAdvance) JobAdvance(context.Context, driver.JobAdvanceParams) error { return errCrash }

func (failAdvance) JobAdvanceMany(context.Context, []driver.JobAdvanceParams) ([]error, error) {
	return nil, errCrash
}

func TestCrashBeforeAdvanceRepushesSameOccurrences(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	j := e.addJob(t, "2", t0.Add(time.Second), xjob.MisfireDoNothing)
	if _, err := e.scanner(t, "a", failAdvance{e.db}).Tick(ctx); !errors.Is(err, errCrash) {
		t.Fatalf("tick err = %v, want the crash", err)
	}
	got, _ := e.db.JobGet(ctx, j.ID)
	if got.Version != j.Version || got.TriggerNextTime != j.TriggerNextTime {
		t.Fatalf("job moved on despite the crash: %+v", got)
	}
	// The process restarts (same owner, so it gets its lease back at once)
	// within the same second and plans the same fires again.
	if _, err := e.scanner(t, "a", nil).Tick(ctx); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(10 * time.Second)
	items := e.drainRing(t)
	if len(items) != 6 {
		t.Fatalf("ring holds %d items, want 3 pushed twice", len(items))
	}
	for i := 0; i < len(items); i += 2 {
		a := fire.Occurrence{JobID: items[i].JobID, Type: xjob.TriggerCron, FireTime: items[i].FireTime}
		b := fire.Occurrence{JobID: items[i+1].JobID, Type: xjob.TriggerCron, FireTime: items[i+1].FireTime}
		if a.ID(0) != b.ID(0) {
			t.Errorf("re-plan pushed %s where the crashed tick pushed %s: dispatch could not deduplicate", b.ID(0), a.ID(0))
		}
	}
}

// TestScanReadsOnlyDueJobs counts what the store hands the scanner, not
// what the scanner says it read: of 205 running jobs the tick reads the 5
// due within the pre-read window and no other job, by any read of the job
// store. (A shard the scanner does not hold yet is first probed for one
// due job before it is leased, so a due job may be read twice.)
func TestScanReadsOnlyDueJobs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	for range 200 {
		e.addJob(t, "3600", t0.Add(time.Hour), xjob.MisfireDoNothing)
	}
	due := map[int64]bool{}
	for range 5 {
		due[e.addJob(t, "3600", t0.Add(2*time.Second), xjob.MisfireDoNothing).ID] = true
	}
	reads := &readLog{JobStore: e.db}
	st, err := e.scanner(t, "a", reads).Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := reads.ids()
	read := map[int64]bool{}
	for _, id := range got {
		read[id] = true
		if !due[id] {
			t.Errorf("the scanner read job %d, which is not due", id)
		}
	}
	if len(read) != len(due) || len(got) > len(due)+shards {
		t.Errorf("the store handed the scanner jobs %v, want the %d due ones (each once, and once more at most per shard probe)", got, len(due))
	}
	if st.Jobs != len(due) {
		t.Errorf("tick says it read %d jobs, want %d", st.Jobs, len(due))
	}
}

// readLog records every job the job store returns to a reader.
type readLog struct {
	driver.JobStore
	mu   sync.Mutex
	read []int64
}

func (r *readLog) note(jobs ...xjob.Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, j := range jobs {
		r.read = append(r.read, j.ID)
	}
}

func (r *readLog) ids() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.read)
}

func (r *readLog) JobsDue(ctx context.Context, p driver.JobsDueParams) ([]xjob.Job, error) {
	jobs, err := r.JobStore.JobsDue(ctx, p)
	r.note(jobs...)
	return jobs, err
}

func (r *readLog) JobGet(ctx context.Context, id int64) (xjob.Job, error) {
	j, err := r.JobStore.JobGet(ctx, id)
	r.note(j)
	return j, err
}

func (r *readLog) JobGetMany(ctx context.Context, ids []int64) ([]xjob.Job, error) {
	jobs, err := r.JobStore.JobGetMany(ctx, ids)
	r.note(jobs...)
	return jobs, err
}

func (r *readLog) JobList(ctx context.Context, p driver.JobListParams) (driver.JobPage, error) {
	page, err := r.JobStore.JobList(ctx, p)
	r.note(page.Jobs...)
	return page, err
}

func (r *readLog) JobListByName(ctx context.Context, name string) ([]xjob.Job, error) {
	jobs, err := r.JobStore.JobListByName(ctx, name)
	r.note(jobs...)
	return jobs, err
}

func TestPagingCoversEveryDueJob(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	const n = 57
	for range n {
		e.addJob(t, "3600", t0.Add(2*time.Second), xjob.MisfireDoNothing)
	}
	s, err := scan.New(scan.Config{
		Tunables: scan.Tunables{Shards: shards, PageSize: 10, RingLead: 0},
		Jobs:     e.db, Leases: e.db, Queues: e.db, Clock: e.clk, Owner: "a",
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Tick(ctx)
	if err != nil || st.Jobs != n || st.RingFires != n {
		t.Fatalf("tick = %+v %v, want %d jobs and fires", st, err, n)
	}
	e.clk.Advance(10 * time.Second)
	if items := e.drainRing(t); len(items) != n {
		t.Fatalf("ring holds %d, want %d", len(items), n)
	}
}

// logLines are the JSON lines of logs whose msg is msg.
func logLines(logs *syncbuf.Buffer, msg string) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(logs.String(), "\n") {
		var v map[string]any
		if json.Unmarshal([]byte(l), &v) == nil && v["msg"] == msg {
			out = append(out, v)
		}
	}
	return out
}

// A scanner that fell behind counts the late fire times per misfire
// strategy in the metrics, writes one warning for the tick (not one per
// job) and, at debug level, the span each job passed over.
func TestRunReportsLateFiresOncePerTick(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	for range 3 {
		e.addJob(t, "1", t0.Add(-60*time.Second), xjob.MisfireDoNothing) // [t0-60s, t0+1s]: 62 times
	}
	once := e.addJob(t, "10", t0.Add(-60*time.Second), xjob.MisfireFireOnceNow) // t0-60s … t0: 7 times
	late := e.addJob(t, "1", t0.Add(-3*time.Second), xjob.MisfireDoNothing)     // 4 s late: t0-2s … t0 collapsed, t0+1s fires
	var logs syncbuf.Buffer
	var m metric.Metrics
	s, err := scan.New(scan.Config{
		Jobs: e.db, Leases: e.db, Queues: e.db, Clock: e.clk, Owner: "a", Metrics: &m,
		Logger:   slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Tunables: scan.Tunables{Shards: shards, RingLead: 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, t0.Add(2*time.Second)) }()
	if err := e.clk.WaitForSleepers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Second) // one tick, at t0+1s
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	snap := m.Snapshot()
	if want := (xjob.MisfireCounts{DoNothing: 3 * 62, FireOnceNow: 7}); snap.Misfired != want || snap.Collapsed != 3 {
		t.Errorf("metrics misfired = %+v collapsed %d, want %+v and 3", snap.Misfired, snap.Collapsed, want)
	}
	warns := logLines(&logs, "scan: behind schedule, late fire times passed over")
	if len(warns) != 1 {
		t.Fatalf("%d warning lines, want 1 for the tick", len(warns))
	}
	w := warns[0]
	if w["level"] != "WARN" || w["misfiredDoNothing"] != float64(186) || w["misfiredFireOnceNow"] != float64(7) ||
		w["misfiredJobs"] != float64(4) || w["collapsed"] != float64(3) {
		t.Errorf("warning = %v", w)
	}
	spans := map[int64][2]int64{}
	for _, l := range logLines(&logs, "scan: fires passed over") {
		spans[int64(l["job"].(float64))] = [2]int64{int64(l["from"].(float64)), int64(l["to"].(float64))}
	}
	now := t0.Add(time.Second).UnixMilli()
	if len(spans) != 5 {
		t.Errorf("passed-over spans for %d jobs, want 5: %v", len(spans), spans)
	}
	if got, want := spans[once.ID], [2]int64{t0.Add(-50 * time.Second).UnixMilli(), now}; got != want {
		t.Errorf("FIRE_ONCE_NOW span = %v, want %v (its first late time fires as MISFIRE)", got, want)
	}
	if got, want := spans[late.ID], [2]int64{t0.Add(-2 * time.Second).UnixMilli(), now - 1}; got != want {
		t.Errorf("collapsed span = %v, want %v", got, want)
	}
}

// The admin's push covers only the fires due within PushWithin and leaves
// the job due for the scan, which plans the rest in full buckets; a job
// whose next fire is later is not the push's at all.
func TestPushOnlyWithinPushWithin(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	p, err := scan.NewPusher(scan.Config{Jobs: e.db, Queues: e.db,
		Tunables: scan.Tunables{Shards: shards, RingLead: 0, Advance: 10 * time.Second, PushWithin: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Horizon(); got != 2000 {
		t.Fatalf("Horizon = %d ms, want 2000", got)
	}
	j := e.addJob(t, "1", t0.Add(time.Second), xjob.MisfireDoNothing)
	st, err := p.Push(ctx, []xjob.Job{j}, t0.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if st.RingFires != 2 {
		t.Fatalf("push stats %+v, want 2 ring fires (t+1, t+2)", st)
	}
	got, _ := e.db.JobGet(ctx, j.ID)
	if got.TriggerNextTime != t0.Add(3*time.Second).UnixMilli() {
		t.Fatalf("next = %d, want t+3 s, due for the scan's next tick", got.TriggerNextTime)
	}
	e.clk.Advance(10 * time.Second)
	if items := e.drainRing(t); len(items) != 2 || items[0].FireTime != t0.Add(time.Second).UnixMilli() ||
		items[1].FireTime != t0.Add(2*time.Second).UnixMilli() {
		t.Fatalf("ring = %+v, want the fires at t+1 s and t+2 s", items)
	}
}

// In a cluster each scanner holds only the shards it owns, and hands one
// over at its next tick once it is another's: the new owner takes it at
// once, without waiting for the lease to expire.
func TestScannerHoldsOnlyOwnedShards(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	for seen := map[int]bool{}; len(seen) < shards; {
		seen[e.addJob(t, "1", t0.Add(time.Second), xjob.MisfireDoNothing).Shard] = true
	}
	var mu sync.Mutex
	even := true // a owns the even shards, b the odd ones; then they swap
	ownsA := func(s int) bool { mu.Lock(); defer mu.Unlock(); return (s%2 == 0) == even }
	ownsB := func(s int) bool { return !ownsA(s) }
	newScanner := func(owner string, owns func(int) bool) *scan.Scanner {
		s, err := scan.New(scan.Config{
			Tunables: scan.Tunables{Shards: shards, RingLead: 0},
			Jobs:     e.db, Leases: e.db, Queues: e.db, Clock: e.clk, Owner: owner, Owns: owns,
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := newScanner("a", ownsA), newScanner("b", ownsB)
	want := func(s *scan.Scanner, parity int) {
		t.Helper()
		held := s.Held()
		if len(held) != shards/2 {
			t.Fatalf("holds %v, want the %d shards of parity %d", held, shards/2, parity)
		}
		for _, sh := range held {
			if sh%2 != parity {
				t.Fatalf("holds %v, want only shards of parity %d", held, parity)
			}
		}
	}
	for _, s := range []*scan.Scanner{a, b} {
		if _, err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want(a, 0)
	want(b, 1)
	mu.Lock()
	even = false
	mu.Unlock()
	// a releases first, b takes the released ones on its tick and
	// releases its own, which a takes on its next, without the clock
	// moving: nothing waited for an expiry.
	for range 2 {
		for _, s := range []*scan.Scanner{a, b} {
			if _, err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	want(a, 1)
	want(b, 0)
}
