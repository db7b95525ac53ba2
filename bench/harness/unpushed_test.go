package harness

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/internal/testenv/tool"
	"github.com/xjobdev/xjob/pkg/adminclient"
)

// TestStartUnpushed starts jobs created stopped through the admin API the
// way the admin's start writes them, and checks that nothing reached the
// ring before the scan planned them, and that one scan then plans every
// job: the cost runs of once-a-minute workloads rely on both, so that
// their window holds fires the scan planned from the start.
func TestStartUnpushed(t *testing.T) {
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	ctx := context.Background()
	d := awsstack.StartFor(t, ctx, awsstack.Options{Root: "../..", Shards: 2, RingPollers: 1,
		PollWait: time.Second, NoMaintenance: true, Logger: slog.New(slog.DiscardHandler)})
	exe, err := StartExecutor()
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	api, err := adminclient.New(d.URL(), d.AdminToken())
	if err != nil {
		t.Fatal(err)
	}
	const n = 30
	ids, err := createStoppedJobs(ctx, api, d.AdminToken(), []string{exe.Address()}, "", n,
		func(i int) string { return fmt.Sprintf("%d * * * * ?", i%60) })
	if err != nil {
		t.Fatal(err)
	}
	before, err := d.Store().JobGetMany(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	old := map[int64]xjob.Job{}
	for _, j := range before {
		old[j.ID] = j
	}
	snap := d.Meter().Snapshot()
	// The first half from now (at is past), the second from a minute on
	// (still within the scan horizon).
	t0 := time.Now()
	later := t0.Add(time.Minute)
	if err := startUnpushed(ctx, d.Store(), ids[:n/2], t0); err != nil {
		t.Fatal(err)
	}
	if err := startUnpushed(ctx, d.Store(), ids[n/2:], later); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	sent := func(u awsstack.Usage) int {
		total := 0
		for _, ops := range u.Ops {
			for op, st := range ops {
				if strings.HasPrefix(op, "sqs:Send") {
					total += st.Requests
				}
			}
		}
		return total
	}
	if s := sent(d.Meter().Snapshot().Sub(snap)); s != 0 {
		t.Errorf("%d SQS sends while starting: want none (the scan plans the jobs)", s)
	}
	_, versions, err := jobVersions(ctx, d, ids)
	if err != nil {
		t.Fatal(err)
	}
	started, err := d.Store().JobGetMany(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range started {
		o := old[j.ID]
		sched, err := j.Schedule()
		if err != nil {
			t.Fatal(err)
		}
		lo, _ := sched.Next(t0.Add(-time.Millisecond))
		hi, _ := sched.Next(t1)
		if slices.Index(ids, j.ID) >= n/2 {
			lo, _ = sched.Next(later)
			hi = lo
		}
		if j.TriggerStatus != xjob.StatusRunning || j.TriggerLastTime != 0 ||
			j.TriggerNextTime < lo.UnixMilli() || j.TriggerNextTime > hi.UnixMilli() {
			t.Errorf("job %d: status %d last %d next %d, want running, 0, the first fire after the start or after at (%d–%d)",
				j.ID, j.TriggerStatus, j.TriggerLastTime, j.TriggerNextTime, lo.UnixMilli(), hi.UnixMilli())
		}
		if j.Revision != o.Revision+1 || j.Version != o.Version+1 {
			t.Errorf("job %d: revision %d version %d, want %d and %d", j.ID, j.Revision, j.Version, o.Revision+1, o.Version+1)
		}
	}
	snap = d.Meter().Snapshot()
	if err := d.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if s := sent(d.Meter().Snapshot().Sub(snap)); s == 0 {
		t.Error("the scan sent nothing to the ring")
	}
	_, planned, err := jobVersions(ctx, d, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if planned[id] <= versions[id] {
			t.Errorf("job %d not advanced by the scan (version %d)", id, planned[id])
		}
	}
}
