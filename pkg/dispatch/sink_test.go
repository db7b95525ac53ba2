package dispatch_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/alarm"
	"github.com/xjobdev/xjob/pkg/callback"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/dispatch"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/execclient"
	"github.com/xjobdev/xjob/pkg/registry"
	"github.com/xjobdev/xjob/pkg/route"
	"github.com/xjobdev/xjob/pkg/sqlitestore"
)

// A ring hand-off is one batch: the tasks that trigger run on the lane's
// workers, a task in flight elsewhere goes to the durable lane queue after
// the claim TTL, and tasks that no longer apply end there.
func TestLaneSinkDeliversABatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.UnixMilli(1_800_000_000_000).UTC()
	clk := clock.NewFake(t0)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "x.db"), sqlitestore.Options{Shards: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var runs atomic.Int64
	ex := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		_, _ = io.WriteString(w, `{"code":200}`)
	}))
	t.Cleanup(ex.Close)
	client, err := execclient.New(execclient.Options{ConnectTimeout: time.Second, ReadTimeout: time.Second})
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
	disp, err := dispatch.New(dispatch.Config{}, dispatch.Deps{Store: db, Executors: client,
		Router: route.New(route.Options{Clock: clk, Prober: client}), Addresses: reg, Completer: cb, Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	g, err := db.GroupInsert(ctx, xjob.Group{AppName: "demo-app", Title: "demo", AddressType: xjob.AddressManual, AddressList: []string{ex.URL}})
	if err != nil {
		t.Fatal(err)
	}
	task := func() xjob.DispatchTask {
		j := xjob.Job{GroupID: g.ID, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "60",
			Handler: "demo", TriggerStatus: xjob.StatusRunning, TriggerNextTime: t0.Add(time.Hour).UnixMilli()}
		j.ApplyDefaults()
		j, err := db.JobInsert(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		return xjob.DispatchTask{Occurrence: xjob.Occurrence{JobID: j.ID, Type: xjob.TriggerCron, FireTime: t0.UnixMilli()}, Revision: j.Revision}
	}
	tasks := []xjob.DispatchTask{task(), task(), task(), task(),
		{Occurrence: xjob.Occurrence{JobID: 999_999, Type: xjob.TriggerCron, FireTime: t0.UnixMilli()}}}
	inflight := tasks[3]
	if _, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: inflight.Occurrence.ID(0), JobID: inflight.Occurrence.JobID,
		TriggerType: xjob.TriggerCron, ScheduledTime: t0.UnixMilli(), TriggerTime: t0.UnixMilli(),
		ClaimUntil: t0.Add(time.Minute).UnixMilli()}); err != nil {
		t.Fatal(err)
	}

	sink, err := dispatch.NewLaneSink(disp, dispatch.LaneSinkOptions{Base: ctx, Queues: db, Logger: quiet,
		Calls: map[xjob.Lane]int{xjob.LaneFast: 2, xjob.LaneSlow: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Deliver(ctx, xjob.LaneFast, tasks); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("executor ran %d tasks, want 3", n)
	}
	receive := func() []driver.Delivery[xjob.DispatchTask] {
		ds, err := db.Dispatch(xjob.LaneFast).Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	if ds := receive(); len(ds) != 0 {
		t.Fatalf("queued %d tasks visible at once, want none before the claim TTL", len(ds))
	}
	clk.Advance(31 * time.Second)
	if ds := receive(); len(ds) != 1 || ds[0].Msg.Occurrence != inflight.Occurrence {
		t.Fatalf("queued %+v, want only the task in flight elsewhere", ds)
	}
}
