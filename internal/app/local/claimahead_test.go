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

// xjob local claims a fire ahead of its second (localClaimAhead) and dies
// before the second, on a fake clock: its ring bucket is not acknowledged
// and its trigger log stays claimed, not triggered. The restarted process
// takes back the bucket and the claim, and the executor runs the fire
// once, late, as the scheduled fire it was. Delivered again, it runs no
// second time.
func TestClaimedAheadCrashFiresLateOnce(t *testing.T) {
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
		runs []int64 // log ids /run was called with
	)
	exe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/log":
			// A real executor has no log file of a run it never got.
			_, _ = io.WriteString(w, `{"code":500,"msg":"no such log"}`)
			return
		case "/run":
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
	ran := func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		return append([]int64(nil), runs...)
	}
	g, err := db.GroupInsert(ctx, xjob.Group{AppName: "app", Title: "app", AddressType: xjob.AddressManual, AddressList: []string{exe.URL}})
	if err != nil {
		t.Fatal(err)
	}
	at := t0.Add(2 * time.Second)
	job := xjob.Job{GroupID: g.ID, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "3600",
		Handler: "h", TriggerStatus: xjob.StatusRunning, TriggerNextTime: at.UnixMilli()}
	job.ApplyDefaults()
	if job, err = db.JobInsert(ctx, job); err != nil {
		t.Fatal(err)
	}
	logs := func() []xjob.Log {
		page, err := db.LogList(ctx, driver.LogListParams{JobID: job.ID, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return page.Logs
	}
	life := func() *parts {
		_, p, err := wire(ctx, node{cfg: cfg, db: db, clk: clk, logger: slog.New(slog.DiscardHandler), owner: "test", baseURL: "http://127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.exec.Close)
		return p
	}
	receiveRing := func() []driver.Delivery[fire.RingBucket] {
		ds, err := db.Ring().Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: ringVisibility})
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}

	// First life: the scan pushes the fire, the ring receives its bucket
	// at the ring lead and claims the fire ahead; the process dies before
	// the second.
	first := life()
	if _, err := first.scanner.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Set(at.Add(-500 * time.Millisecond))
	ds := receiveRing()
	if len(ds) != 1 || len(ds[0].Msg.Items) != 1 {
		t.Fatalf("ring received %+v, want the one bucket of the fire", ds)
	}
	fireCtx, crash := context.WithCancel(ctx)
	fired := make(chan error, 1)
	go func() {
		_, err := first.ring.Fire(fireCtx, ds[0].Msg)
		fired <- err
	}()
	eventually(t, 10*time.Second, "the fire claimed ahead", func() bool { return len(logs()) == 1 })
	waitCtx, cancelWait := context.WithTimeout(ctx, 10*time.Second)
	defer cancelWait()
	if err := clk.WaitForSleepers(waitCtx, 1); err != nil {
		t.Fatal(err)
	}
	crash()
	if err := <-fired; err == nil {
		t.Fatal("Fire cut before the second returned no error: the bucket would be acknowledged")
	}
	first.scanner.ReleaseAll(ctx)
	if l := logs()[0]; l.TriggerCode != 0 || l.TriggerTime != at.UnixMilli() || l.ClaimUntil <= at.UnixMilli() {
		t.Fatalf("claimed ahead: %+v, want untriggered, stamped with the second, claimed past it", l)
	}
	if n := len(ran()); n != 0 {
		t.Fatalf("executor ran %d times before the second, want 0", n)
	}

	// Second life, after the second: the restart takes back what the dead
	// process held (its queue messages and its claims), so the bucket
	// comes back at once and the fire is taken over: the executor, asked
	// first whether the dead process's /run got there, says no, and the
	// fire runs, late by the restart, once.
	second := life()
	if err := takeBackClaims(ctx, db, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	clk.Set(at.Add(3 * time.Second))
	for range 2 { // the take-over, then a repeat delivery of the bucket
		ds = receiveRing()
		if len(ds) != 1 {
			t.Fatalf("ring received %d buckets after the restart, want the unacknowledged one back", len(ds))
		}
		if _, err := second.ring.FireAgain(ctx, ds[0].Msg, ringVisibility); err != nil {
			t.Fatal(err)
		}
		if err := db.Ring().Retry(ctx, ds[0].Token, 0); err != nil {
			t.Fatal(err)
		}
	}
	got, ls := ran(), logs()
	if len(got) != 1 || len(ls) != 1 || got[0] != ls[0].ID {
		t.Fatalf("executor ran logs %v, stored %d logs; want the claimed-ahead log run once", got, len(ls))
	}
	if l := ls[0]; l.TriggerCode != xjob.CodeSuccess || l.TriggerType != xjob.TriggerCron || l.ScheduledTime != at.UnixMilli() {
		t.Errorf("log %+v, want the scheduled fire triggered", l)
	}
	for _, lane := range []fire.Lane{fire.LaneFast, fire.LaneSlow} {
		ds, err := db.Dispatch(lane).Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: dispatchVisibility})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 0 {
			t.Errorf("%s lane holds %d tasks, want none left to fire", lane, len(ds))
		}
	}
}
