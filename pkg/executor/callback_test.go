package executor

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/xjobdev/xjob/pkg/protocol"
)

func queued(e *Executor) int {
	e.cb.mu.Lock()
	defer e.cb.mu.Unlock()
	return len(e.cb.queue)
}

func TestCallbackBatching(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	_ = f.e.Register("ok", func(context.Context, *Job) error { return nil })
	// Not started yet: results queue up with no sender.
	for i := int64(1); i <= 3; i++ {
		expect(t, "run", f.trigger(t, i, i, "ok", "", 0), ok)
	}
	eventually(t, "three results queued", func() bool { return queued(f.e) == 3 })
	f.start(t)
	reqs := f.admin.waitFor(t, "one callback", func(r []adminRequest) bool { return len(delivered(r)) == 3 })
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want one batch: %+v", len(reqs), reqs)
	}
	items := delivered(reqs)
	sort.Slice(items, func(i, j int) bool { return items[i].LogID < items[j].LogID })
	for i, it := range items {
		if it.LogID != int64(i+1) || it.HandleCode != 200 {
			t.Fatalf("item %d: %+v", i, it)
		}
	}
}

func spoolFiles(t *testing.T, e *Executor) []string {
	t.Helper()
	names, err := e.cb.spooled()
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestCallbackSpoolAfterOutage(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.CallbackRetryInterval = 30 * time.Second })
	_ = f.e.Register("ok", func(context.Context, *Job) error { return nil })
	f.start(t)
	f.admin.failing.Store(true)

	for i := int64(1); i <= 3; i++ {
		f.trigger(t, 7, i, "ok", "", 0)
	}
	// Every result was refused by the admin and sits in the spool.
	eventually(t, "all results spooled", func() bool {
		n := 0
		for _, name := range spoolFiles(t, f.e) {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			var batch []protocol.HandleCallbackParam
			if err := jsonUnmarshal(b, &batch); err != nil {
				t.Fatal(err)
			}
			n += len(batch)
		}
		return n == 3
	})
	if got := delivered(f.admin.waitFor(t, "-", func([]adminRequest) bool { return true })); len(got) != 0 {
		t.Fatalf("delivered during outage: %+v", got)
	}

	f.admin.failing.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.clk.WaitForSleepers(ctx, 2); err != nil { // retry loop + idle worker
		t.Fatal(err)
	}
	f.clk.Advance(30 * time.Second)
	f.admin.waitCallbacks(t, 1, 2, 3)
	eventually(t, "spool emptied", func() bool { return len(spoolFiles(t, f.e)) == 0 })

	// Another retry round and a shutdown must not send anything again.
	if err := f.clk.WaitForSleepers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(30 * time.Second)
	if err := f.e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	for _, p := range delivered(f.admin.waitFor(t, "-", func([]adminRequest) bool { return true })) {
		seen[p.LogID]++
	}
	for id := int64(1); id <= 3; id++ {
		if seen[id] != 1 {
			t.Errorf("logId %d delivered %d times", id, seen[id])
		}
	}
}

func TestCallbackSpoolSurvivesRestart(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	_ = f.e.Register("ok", func(context.Context, *Job) error { return nil })
	f.admin.failing.Store(true)
	f.start(t)
	f.trigger(t, 7, 1, "ok", "", 0)
	eventually(t, "spooled", func() bool { return len(spoolFiles(t, f.e)) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	// A new process on the same directories delivers the spooled result.
	f.admin.failing.Store(false)
	f2 := setup(t, func(c *Config) {
		c.LogDir = f.e.cfg.LogDir
		c.AdminAddresses = []string{f.admin.srv.URL}
		c.CallbackRetryInterval = 30 * time.Second
	})
	f2.start(t)
	if err := f2.clk.WaitForSleepers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	f2.clk.Advance(30 * time.Second)
	f.admin.waitCallbacks(t, 1)
	eventually(t, "spool emptied", func() bool { return len(spoolFiles(t, f2.e)) == 0 })
}

func TestCallbackShutdownFlush(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	_ = f.e.Register("ok", func(context.Context, *Job) error { return nil })
	f.trigger(t, 7, 1, "ok", "", 0) // never started: only the shutdown flush can send it
	eventually(t, "queued", func() bool { return queued(f.e) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	f.admin.waitCallbacks(t, 1)
}

func TestCallbackCorruptSpoolFileSetAside(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	if err := os.MkdirAll(f.e.cfg.SpoolDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(f.e.cfg.SpoolDir, "xjob-callback-0000000000001-000001.json")
	if err := os.WriteFile(bad, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.e.cb.spool([]protocol.HandleCallbackParam{{LogID: 9, LogDateTim: 1, HandleCode: 200}}); err != nil {
		t.Fatal(err)
	}
	n, err := f.e.cb.resend(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("resend = %d, %v", n, err)
	}
	f.admin.waitCallbacks(t, 9)
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Fatalf("corrupt file still in the retry path: %v", err)
	}
}

func TestCallbackAdminFailover(t *testing.T) {
	t.Parallel()
	down := newTestAdmin(t)
	down.failing.Store(true)
	f := setup(t, nil)
	f.e.admin.addrs = []string{withSlash(down.srv.URL), withSlash(f.admin.srv.URL)}
	_ = f.e.Register("ok", func(context.Context, *Job) error { return nil })
	f.start(t)
	f.trigger(t, 7, 1, "ok", "", 0)
	f.admin.waitCallbacks(t, 1)
	down.waitFor(t, "attempt on first admin", func(r []adminRequest) bool { return len(r) == 1 })
	if n := len(spoolFiles(t, f.e)); n != 0 {
		t.Fatalf("%d spool files after a second admin accepted", n)
	}
}
