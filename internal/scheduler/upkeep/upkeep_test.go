package upkeep

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

var start = time.Date(2026, 3, 10, 8, 30, 0, 0, time.UTC)

// recorder is an Alarmer that records the logs it is told about.
type recorder struct {
	mu   sync.Mutex
	logs []int64
}

func (r *recorder) Alarm(_ context.Context, a driver.Alarm) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, a.Log.ID)
	return nil
}

type env struct {
	t     *testing.T
	ctx   context.Context
	db    *sqlitestore.DB
	clk   *clock.Fake
	reg   *registry.Service
	svc   *Service
	alarm *recorder
}

// setup opens a SQLite store on a fake clock and builds the upkeep over
// the real registry (liveness) and callback service (completion path).
func setup(t *testing.T, cfg Config) *env {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(start)
	db, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "xjob.db"), sqlitestore.Options{Shards: 2, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	rec := &recorder{}
	cb, err := callback.New(callback.Config{Store: db, Queues: db, Alarmer: rec, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(registry.Config{Store: db, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Clock, cfg.Liveness = db, clk, reg
	if cfg.Completer == nil {
		cfg.Completer = cb
	}
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, db: db, clk: clk, reg: reg, svc: svc, alarm: rec}
}

func (e *env) beat(app, addr string) {
	e.t.Helper()
	p := protocol.RegistryParam{RegistryGroup: xjob.RegistryGroupExecutor, RegistryKey: app, RegistryValue: addr}
	if err := e.reg.Register(e.ctx, p); err != nil {
		e.t.Fatal(err)
	}
}

// running stores a log triggered successfully on addr at the current time.
func (e *env) running(jobID int64, addr string, retries int) xjob.Log {
	e.t.Helper()
	l, err := e.db.LogCreate(e.ctx, xjob.Log{
		OccurrenceID: fire.Occurrence{JobID: jobID, Type: xjob.TriggerManual, Ref: strconv.FormatInt(time.Now().UnixNano(), 10)}.ID(0),
		JobID:        jobID, TriggerType: xjob.TriggerManual, TriggerTime: clock.Millis(e.clk), ExecutorFailRetryCount: retries,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.db.LogTriggered(e.ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: addr, TriggerCode: 200}); err != nil {
		e.t.Fatal(err)
	}
	l, err = e.db.LogGet(e.ctx, l.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

func TestCheckLost(t *testing.T) {
	t.Parallel()
	e := setup(t, Config{})
	g, err := e.db.GroupInsert(e.ctx, xjob.Group{AppName: "app-a", Title: "A"})
	if err != nil {
		t.Fatal(err)
	}
	j := xjob.Job{GroupID: g.ID, Description: "d", Author: "a", Handler: "h", FailRetryCount: 1}
	j.ApplyDefaults()
	if j, err = e.db.JobInsert(e.ctx, j); err != nil {
		t.Fatal(err)
	}
	const alive, gone = "http://alive:9999/", "http://gone:9999/"
	e.beat("app-a", alive)
	e.beat("app-a", gone)
	onAlive := e.running(j.ID, alive, 1)
	onGone := e.running(j.ID, gone, 1)
	// Heartbeats continue for alive only, for eleven minutes.
	for range 22 {
		e.clk.Advance(30 * time.Second)
		e.beat("app-a", alive)
	}
	young := e.running(j.ID, gone, 1) // gone, but not running for 10 min yet

	res, err := e.svc.CheckLost(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Checked != 2 || res.Marked != 1 {
		t.Fatalf("result %+v, want 2 checked, 1 marked", res)
	}
	get := func(id int64) xjob.Log {
		l, err := e.db.LogGet(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := get(onGone.ID); l.HandleCode != xjob.CodeFail || l.HandleMsg != LostMsg || l.HandleTime != clock.Millis(e.clk) {
		t.Fatalf("lost log %+v", l)
	}
	for _, id := range []int64{onAlive.ID, young.ID} {
		if l := get(id); l.Handled() {
			t.Fatalf("log %d marked although it is not lost: %+v", id, l)
		}
	}
	// The completion path took over: alarm sent, retry enqueued.
	if l := get(onGone.ID); l.AlarmStatus != xjob.AlarmSuccess || !slices.Equal(e.alarm.logs, []int64{onGone.ID}) {
		t.Fatalf("alarm status %d, alarms %v", l.AlarmStatus, e.alarm.logs)
	}
	e.clk.Advance(callback.DefaultRetryDelay) // retries wait the retry delay
	ds, err := e.db.Dispatch(fire.LaneFast).Receive(e.ctx, driver.ReceiveParams{Max: 10, Visibility: time.Minute})
	if err != nil || len(ds) != 1 || ds[0].Msg.Occurrence.Type != xjob.TriggerRetry ||
		ds[0].Msg.Occurrence.Ref != strconv.FormatInt(onGone.ID, 10) {
		t.Fatalf("dispatch queue %+v, %v; want one retry of the lost log", ds, err)
	}
	res, err = e.svc.CheckLost(e.ctx)
	if err != nil || res.Marked != 0 {
		t.Fatalf("second check %+v, %v", res, err)
	}
}

func TestCheckLostNeedsLivenessAndCompleter(t *testing.T) {
	t.Parallel()
	e := setup(t, Config{})
	s, err := New(Config{Store: e.db, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckLost(e.ctx); err == nil {
		t.Fatal("CheckLost without Liveness and Completer succeeded")
	}
}

func TestPurgeLogs(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	midnight := time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC)
	ages := []time.Time{
		midnight.Add(-40 * day),
		midnight.Add(-30*day - time.Millisecond), // just before the 30-day cutoff
		midnight.Add(-30 * day),                  // at the cutoff: kept
		midnight.Add(-8 * day),
		midnight.Add(-7*day - time.Hour),
		midnight.Add(-time.Hour),
		start,
	}
	tests := []struct {
		name      string
		retention int
		batch     int
		wantGone  int
	}{
		{"default 30 days", 0, 0, 2},
		{"7 days in batches of 2", 7, 2, 5},
		{"below 7 disables", 6, 0, 0},
		{"negative disables", -1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, Config{RetentionDays: tt.retention, BatchSize: tt.batch})
			for i, at := range ages {
				if _, err := e.db.LogCreate(e.ctx, xjob.Log{OccurrenceID: "o" + strconv.Itoa(i), JobID: 1,
					TriggerType: xjob.TriggerManual, TriggerTime: at.UnixMilli()}); err != nil {
					t.Fatal(err)
				}
			}
			n, err := e.svc.PurgeLogs(e.ctx)
			if err != nil || n != tt.wantGone {
				t.Fatalf("purged %d, %v; want %d", n, err, tt.wantGone)
			}
			page, err := e.db.LogList(e.ctx, driver.LogListParams{Status: xjob.LogAll, Limit: 100})
			if err != nil || len(page.Logs) != len(ages)-tt.wantGone {
				t.Fatalf("%d logs left, %v", len(page.Logs), err)
			}
		})
	}
}

// expiring is a store that retires logs itself (driver.LogExpirer).
type expiring struct {
	*sqlitestore.DB
	ttl time.Duration
}

func (e expiring) LogExpiry() time.Duration { return e.ttl }

// A store that retires its logs itself is not purged: its expiry is the
// retention, and a purge would pay for deletes that expiry makes for free.
// One that says it does not (expiry 0) is purged as any other.
func TestPurgeLogsLeavesExpiringStores(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		ttl      time.Duration
		wantGone int
	}{{30 * 24 * time.Hour, 0}, {0, 1}} {
		e := setup(t, Config{})
		if _, err := e.db.LogCreate(e.ctx, xjob.Log{OccurrenceID: "old", JobID: 1, TriggerType: xjob.TriggerManual,
			TriggerTime: start.Add(-40 * 24 * time.Hour).UnixMilli()}); err != nil {
			t.Fatal(err)
		}
		svc, err := New(Config{Store: expiring{e.db, tt.ttl}, Clock: e.clk})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := svc.PurgeLogs(e.ctx); err != nil || n != tt.wantGone {
			t.Fatalf("expiry %s: purged %d, %v; want %d", tt.ttl, n, err, tt.wantGone)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	e := setup(t, Config{})
	c := e.svc.Config()
	if c.LostAfter != 10*time.Minute || c.RetentionDays != 30 || c.BatchSize != 1000 {
		t.Fatalf("defaults %+v", c)
	}
	if _, err := New(Config{}); err == nil {
		t.Fatal("missing store accepted")
	}
	if _, err := New(Config{Store: e.db, LostAfter: -time.Second}); err == nil {
		t.Fatal("negative LostAfter accepted")
	}
}

func TestRetentionCutoff(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 31, 17, 45, 0, 0, time.UTC)
	tests := []struct {
		name   string
		now    time.Time
		days   int
		want   time.Time
		wantOK bool
	}{
		{"default 30 days", now, 30, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), true},
		{"floor 7 days", now, 7, time.Date(2026, 3, 24, 0, 0, 0, 0, time.UTC), true},
		{"6 disables", now, 6, time.Time{}, false},
		{"0 disables", now, 0, time.Time{}, false},
		{"negative disables", now, -1, time.Time{}, false},
		{"crosses a year", time.Date(2026, 1, 3, 0, 0, 1, 0, time.UTC), 7, time.Date(2025, 12, 27, 0, 0, 0, 0, time.UTC), true},
		{"non-UTC now uses the UTC day", time.Date(2026, 4, 1, 1, 0, 0, 0, time.FixedZone("CEST", 2*3600)), 7,
			time.Date(2026, 3, 24, 0, 0, 0, 0, time.UTC), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := RetentionCutoff(tt.now, tt.days)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if ok && got != tt.want.UnixMilli() {
				t.Fatalf("cutoff %v, want %v", time.UnixMilli(got).UTC(), tt.want)
			}
		})
	}
}

func TestLost(t *testing.T) {
	t.Parallel()
	live := map[string]bool{"http://a:9999/": true}
	logs := []xjob.Log{
		{ID: 1, TriggerCode: 200, ExecutorAddress: "http://a:9999/"},                  // executor alive
		{ID: 2, TriggerCode: 200, ExecutorAddress: "http://b:9999/"},                  // executor gone
		{ID: 3, TriggerCode: 200, ExecutorAddress: "http://b:9999/", HandleCode: 200}, // already handled
		{ID: 4, TriggerCode: 500, ExecutorAddress: "http://b:9999/"},                  // never ran
		{ID: 5, TriggerCode: 200, ExecutorAddress: ""},                                // no address recorded
	}
	got := Lost(logs, live)
	var ids []int64
	for _, l := range got {
		ids = append(ids, l.ID)
	}
	if len(ids) != 2 || ids[0] != 2 || ids[1] != 5 {
		t.Fatalf("lost = %v, want [2 5]", ids)
	}
}
