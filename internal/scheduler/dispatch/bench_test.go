package dispatch_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/dispatch"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/internal/scheduler/route"
	"github.com/xjobdev/xjob/pkg/clock"
)

// BenchmarkLaneSinkHandOff is the ring's hand-off of one instant's fires
// as local mode wires it (claimed ahead, direct executor client), on
// SQLite and a loopback executor: Prepare (reads given the ring's jobs,
// the claims), then the calls and the record. One op is one hand-off of
// benchHandOff fires; allocs/op divided by that is the allocations a
// trigger costs on this path, the executor's own included.
func BenchmarkLaneSinkHandOff(b *testing.B) {
	ctx := context.Background()
	t0 := time.UnixMilli(1_800_000_000_000).UTC()
	clk := clock.NewFake(t0)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "x.db"), sqlitestore.Options{Shards: 1, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	ex := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"code":200}`)
	}))
	b.Cleanup(ex.Close)
	client, err := execclient.New(execclient.Options{ConnectTimeout: time.Second, ReadTimeout: 5 * time.Second, Direct: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(client.Close)
	reg, err := registry.New(registry.Config{Store: db, Clock: clk, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	cb, err := callback.New(callback.Config{Store: db, Queues: db, Alarmer: alarm.Log{Logger: quiet}, Clock: clk, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	disp, err := dispatch.New(dispatch.Config{Store: db, Executors: client,
		Router: route.New(route.Options{Clock: clk, Prober: client}), Addresses: reg, Completer: cb, Clock: clk, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	g, err := db.GroupInsert(ctx, xjob.Group{AppName: "demo-app", Title: "demo", AddressType: xjob.AddressManual, AddressList: []string{ex.URL}})
	if err != nil {
		b.Fatal(err)
	}
	const benchHandOff = 64
	jobs := map[int64]*xjob.Job{}
	var ids []int64
	for range benchHandOff {
		j := xjob.Job{GroupID: g.ID, Description: "d", Author: "a", ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "1",
			Handler: "demoJobHandler", TriggerStatus: xjob.StatusRunning, TriggerNextTime: t0.Add(time.Hour).UnixMilli()}
		j.ApplyDefaults()
		j, err := db.JobInsert(ctx, j)
		if err != nil {
			b.Fatal(err)
		}
		jobs[j.ID] = &j
		ids = append(ids, j.ID)
	}
	sink, err := dispatch.NewLaneSink(disp, dispatch.LaneSinkOptions{Base: ctx, Queues: db, Logger: quiet,
		Calls: map[fire.Lane]int{fire.LaneFast: 8}, ClaimAhead: 16384})
	if err != nil {
		b.Fatal(err)
	}
	tasks := make([]fire.DispatchTask, benchHandOff)
	b.ReportAllocs()
	second := int64(0)
	for b.Loop() {
		second++
		// Every op is a new second of the same jobs: new occurrences, as
		// a steady run's every-second jobs give the ring.
		at := t0.UnixMilli() + second*1000
		for i, id := range ids {
			tasks[i] = fire.DispatchTask{Occurrence: fire.Occurrence{JobID: id, Type: xjob.TriggerCron, FireTime: at},
				Revision: jobs[id].Revision, EnqueuedAt: at}
		}
		clk.Set(time.UnixMilli(at - 500))
		run := sink.Prepare(ctx, fire.LaneFast, tasks, jobs)
		if err := run(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchHandOff), "ns/trigger")
}
