package local

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// xjob local stopped for a minute and started again on the same file, on a
// fake clock: the stop is longer than the fires the scan had pushed ahead
// (10 s) plus the misfire threshold, so the missed fires of each job reach
// the restarted process both as late ring buckets and as the job's own
// next fire time, which the scan finds missed. A FIRE_ONCE_NOW job runs
// exactly one MISFIRE for them, a DO_NOTHING job none, and both run every
// fire before the stop and after the restart.
func TestRestartAfterLongStopMisfiresOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.UnixMilli(1_800_000_000_000)
	clk := clock.NewFake(t0)
	cfg := Defaults()
	db, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "x.db"), sqlitestore.Options{Shards: cfg.Shards, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	var (
		mu   sync.Mutex
		runs []int64
	)
	exe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/run" {
			var p protocol.TriggerParam
			if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
				t.Errorf("bad /run: %v", err)
			}
			mu.Lock()
			runs = append(runs, p.LogID)
			mu.Unlock()
		}
		_, _ = io.WriteString(w, `{"code":200}`)
	}))
	defer exe.Close()
	g, err := db.GroupInsert(ctx, xjob.Group{AppName: "app", Title: "app", AddressType: xjob.AddressManual, AddressList: []string{exe.URL}})
	if err != nil {
		t.Fatal(err)
	}
	add := func(m xjob.MisfireStrategy) xjob.Job {
		j := xjob.Job{GroupID: g.ID, Description: string(m), Author: "a", ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "2",
			Handler: "h", TriggerStatus: xjob.StatusRunning, MisfireStrategy: m, TriggerNextTime: t0.Add(time.Second).UnixMilli()}
		j.ApplyDefaults()
		j, err := db.JobInsert(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	once, nothing := add(xjob.MisfireFireOnceNow), add(xjob.MisfireDoNothing)

	// run is one life of xjob local: wired on the file, its loops driven
	// once a (fake) second for d, then stopped.
	run := func(d time.Duration) {
		_, p, err := wire(ctx, node{cfg: cfg, db: db, clk: clk, logger: slog.New(slog.DiscardHandler), owner: "test", baseURL: "http://127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		defer p.exec.Close()
		for end := clk.Now().Add(d); clk.Now().Before(end); clk.Advance(time.Second) {
			if _, err := p.scanner.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			for {
				ds, err := db.Ring().Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				if len(ds) == 0 {
					break
				}
				for _, d := range ds {
					if _, err := p.ring.Fire(ctx, d.Msg); err != nil {
						t.Fatal(err)
					}
					if err := db.Ring().Ack(ctx, []string{d.Token}); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, lane := range []fire.Lane{fire.LaneFast, fire.LaneSlow} {
				ds, err := db.Dispatch(lane).Receive(ctx, driver.ReceiveParams{Max: 100, Visibility: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range ds {
					if _, err := p.dispatcher.Dispatch(ctx, d.Msg); err != nil {
						t.Fatal(err)
					}
					if err := db.Dispatch(lane).Ack(ctx, []string{d.Token}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		p.scanner.ReleaseAll(ctx)
	}
	run(6 * time.Second)
	clk.Advance(time.Minute)
	restart := clk.Now()
	run(10 * time.Second)

	type fire struct {
		typ xjob.TriggerType
		at  int64
	}
	got := map[int64][]fire{}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range runs {
		l, err := db.LogGet(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got[l.JobID] = append(got[l.JobID], fire{l.TriggerType, l.ScheduledTime})
	}
	for _, job := range []xjob.Job{once, nothing} {
		misfires, before, after := 0, 0, 0
		seen := map[int64]bool{}
		for _, f := range got[job.ID] {
			if seen[f.at] {
				t.Errorf("%s: fire at %s ran twice", job.Description, time.UnixMilli(f.at).Sub(t0))
			}
			seen[f.at] = true
			switch {
			case f.typ == xjob.TriggerMisfire:
				misfires++
			case f.at <= t0.Add(5*time.Second).UnixMilli():
				before++
			case f.at >= restart.UnixMilli():
				after++
			default:
				t.Errorf("%s: missed fire at %s ran as scheduled", job.Description, time.UnixMilli(f.at).Sub(t0))
			}
		}
		want := 0
		if job.MisfireStrategy == xjob.MisfireFireOnceNow {
			want = 1
		}
		if misfires != want || before != 3 || after < 4 {
			t.Errorf("%s: %d MISFIRE runs (want %d), %d fires before the stop (want 3), %d after the restart (want ≥ 4): %v",
				job.Description, misfires, want, before, after, got[job.ID])
		}
	}
}
