package awsstack_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/internal/testenv/tool"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/executor"
)

// TestUpgradeKeepsRingFires is the upgrade of docs/aws.md on the emulated
// deployment: the ring holds buckets the previous release wrote (its
// format, without a version) when the current functions take over. Every
// occurrence in them fires, and fires once:
//
//   - stopped jobs stand for fires only the old ring messages carry (the
//     old scan had moved the jobs past them): they fire from the old
//     buckets alone, so an old bucket is read, not dropped;
//   - running every-second jobs are planned again by the new scan and the
//     web function, so the same occurrences arrive in old and new buckets:
//     each fires once, one trigger log and one executor run, by its
//     deterministic occurrence id.
func TestUpgradeKeepsRingFires(t *testing.T) {
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	ctx := context.Background()
	d := awsstack.StartFor(t, ctx, awsstack.Options{Shards: 2, RingPollers: 2,
		PollWait: time.Second, NoMaintenance: true, Logger: slog.New(slog.DiscardHandler)})

	const app = "upgrade"
	var (
		mu   sync.Mutex
		runs = map[int64]int{} // log id → executor runs
	)
	addr, stop := sdkExecutor(t, d, app, nil, map[string]executor.HandlerFunc{"count": func(_ context.Context, j *executor.Job) error {
		mu.Lock()
		runs[j.LogID]++
		mu.Unlock()
		return nil
	}})
	defer stop()
	api, err := adminclient.New(d.URL(), d.AdminToken())
	if err != nil {
		t.Fatal(err)
	}
	g, err := api.GroupCreate(ctx, xjob.Group{AppName: app, Title: "upgrade", AddressType: xjob.AddressManual,
		AddressList: []string{addr}})
	if err != nil {
		t.Fatalf("group: %v", err)
	}
	var running, stopped []xjob.Job
	for i := range 6 {
		j := xjob.Job{GroupID: g.ID, Description: fmt.Sprint("upgrade ", i), Author: "t", ScheduleType: xjob.ScheduleCron,
			ScheduleConf: "* * * * * ?", Handler: "count", TriggerStatus: xjob.StatusStopped}
		if i%2 == 0 {
			j.TriggerStatus = xjob.StatusRunning
		}
		j.ApplyDefaults()
		j, err := api.JobCreate(ctx, j)
		if err != nil {
			t.Fatalf("job: %v", err)
		}
		if i%2 == 0 {
			running = append(running, j)
		} else {
			stopped = append(stopped, j)
		}
	}
	all := append(append([]xjob.Job(nil), running...), stopped...)

	// The previous release's buckets: one per shard and second, in its
	// format (no "v"), each sent to become visible a second ahead of its
	// second, as its scan sent them.
	const seconds = 5
	first := time.Now().Truncate(time.Second).Add(4 * time.Second)
	for s := range seconds {
		at := first.Add(time.Duration(s) * time.Second)
		items := map[int][]string{}
		for _, j := range all {
			items[j.Shard] = append(items[j.Shard], fmt.Sprintf(`{"j":%d,"t":%d,"r":%d}`, j.ID, at.UnixMilli(), j.Revision))
		}
		for shard, its := range items {
			body := fmt.Sprintf(`{"shard":%d,"second":%d,"items":[%s]}`, shard, at.Unix(), strings.Join(its, ","))
			if err := d.SendRing(ctx, time.Until(at)-time.Second, body); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Every (job, second) of the window gets its successful run.
	logsOf := func(j xjob.Job) map[int64][]xjob.Log {
		page, err := d.Store().LogList(ctx, driver.LogListParams{JobID: j.ID, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64][]xjob.Log{}
		for _, l := range page.Logs {
			out[l.ScheduledTime] = append(out[l.ScheduledTime], l)
		}
		return out
	}
	done := func() bool {
		for _, j := range all {
			logs := logsOf(j)
			for s := range seconds {
				ls := logs[first.Add(time.Duration(s)*time.Second).UnixMilli()]
				if len(ls) == 0 || ls[0].HandleCode != xjob.CodeSuccess {
					return false
				}
			}
		}
		return true
	}
	for deadline := time.Now().Add(first.Sub(time.Now()) + 25*time.Second); !done(); time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not every occurrence of the old buckets ran within 25 s of the window; invocation errors: %v", d.Errors())
		}
	}
	for _, j := range running {
		if _, err := api.JobStop(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // a repeat delivered late would run now

	mu.Lock()
	defer mu.Unlock()
	for _, j := range all {
		logs := logsOf(j)
		for s := range seconds {
			at := first.Add(time.Duration(s) * time.Second).UnixMilli()
			ls := logs[at]
			if len(ls) != 1 {
				t.Errorf("job %d (status %d), second %d: %d trigger logs, want 1", j.ID, j.TriggerStatus, s, len(ls))
				continue
			}
			if n := runs[ls[0].ID]; n != 1 {
				t.Errorf("job %d (status %d), second %d: log %d ran %d times on the executor, want 1", j.ID, j.TriggerStatus, s, ls[0].ID, n)
			}
		}
	}
	for _, j := range stopped {
		if n := len(logsOf(j)); n != seconds {
			t.Errorf("stopped job %d: fires at %d instants, want the old buckets' %d", j.ID, n, seconds)
		}
	}
	if errs := d.Errors(); len(errs) > 0 {
		t.Errorf("invocation errors: %v", errs)
	}
}
