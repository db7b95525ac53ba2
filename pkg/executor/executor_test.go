package executor

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestDecideBlock(t *testing.T) {
	t.Parallel()
	tests := []struct {
		strategy string
		busy     bool
		want     blockAction
	}{
		{"SERIAL_EXECUTION", false, blockEnqueue},
		{"SERIAL_EXECUTION", true, blockEnqueue},
		{"DISCARD_LATER", false, blockEnqueue},
		{"DISCARD_LATER", true, blockDiscard},
		{"COVER_EARLY", false, blockEnqueue},
		{"COVER_EARLY", true, blockCover},
		{"", true, blockEnqueue},
		{"CONCURRENT_EXECUTION", true, blockEnqueue},
	}
	for _, tt := range tests {
		if got := decideBlock(tt.strategy, tt.busy); got != tt.want {
			t.Errorf("decideBlock(%q, %v) = %v, want %v", tt.strategy, tt.busy, got, tt.want)
		}
	}
}

func TestSerialExecution(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	g := newGate()
	_ = f.e.Register("gate", g.handle)
	f.start(t)

	expect(t, "run 1", f.trigger(t, 7, 1, "gate", "SERIAL_EXECUTION", 0), ok)
	g.waitStart(t, 1)
	expect(t, "run 2", f.trigger(t, 7, 2, "gate", "SERIAL_EXECUTION", 0), ok)
	expect(t, "idleBeat busy", f.post(t, "/idleBeat", `{"jobId":7}`),
		`{"code":500,"msg":"job thread is running or has trigger queue."}`)
	expect(t, "idleBeat other job", f.post(t, "/idleBeat", `{"jobId":8}`), ok)

	select {
	case id := <-g.started:
		t.Fatalf("logId %d started while 1 was running", id)
	default:
	}
	g.release <- struct{}{}
	g.waitStart(t, 2)
	g.release <- struct{}{}
	got := f.admin.waitCallbacks(t, 1, 2)
	for _, id := range []int64{1, 2} {
		if got[id].HandleCode != 200 {
			t.Errorf("logId %d: %+v", id, got[id])
		}
	}
}

func TestDiscardLater(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	g := newGate()
	_ = f.e.Register("gate", g.handle)
	f.start(t)

	expect(t, "run 1", f.trigger(t, 7, 1, "gate", "DISCARD_LATER", 0), ok)
	g.waitStart(t, 1)
	expect(t, "run 2", f.trigger(t, 7, 2, "gate", "DISCARD_LATER", 0),
		`{"code":500,"msg":"block strategy effect：Discard Later"}`)
	g.release <- struct{}{}
	f.admin.waitCallbacks(t, 1)
	// Once idle, the next trigger is accepted again.
	eventually(t, "job idle", func() bool { return f.post(t, "/idleBeat", `{"jobId":7}`) == ok })
	expect(t, "run 3", f.trigger(t, 7, 3, "gate", "DISCARD_LATER", 0), ok)
	g.waitStart(t, 3)
	g.release <- struct{}{}
	if got := f.admin.waitCallbacks(t, 1, 3); len(got) != 2 {
		t.Fatalf("callbacks %+v, want logIds 1 and 3 only", got)
	}
}

func TestCoverEarly(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	g := newGate()
	_ = f.e.Register("gate", g.handle)
	f.start(t)

	expect(t, "run 1", f.trigger(t, 7, 1, "gate", "SERIAL_EXECUTION", 0), ok)
	g.waitStart(t, 1)
	expect(t, "run 2 (queued)", f.trigger(t, 7, 2, "gate", "SERIAL_EXECUTION", 0), ok)
	expect(t, "run 3 (cover)", f.trigger(t, 7, 3, "gate", "COVER_EARLY", 0), ok)
	g.waitStart(t, 3)
	g.release <- struct{}{}

	got := f.admin.waitCallbacks(t, 1, 2, 3)
	want := map[int64]struct {
		code int
		msg  string
	}{
		1: {500, "block strategy effect：Cover Early [job running, killed]"},
		2: {500, "block strategy effect：Cover Early [job not executed, in the job queue, killed.]"},
		3: {200, ""},
	}
	for id, w := range want {
		if got[id].HandleCode != w.code || got[id].HandleMsg != w.msg {
			t.Errorf("logId %d: got %d %q, want %d %q", id, got[id].HandleCode, got[id].HandleMsg, w.code, w.msg)
		}
	}
}

func TestKill(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	g := newGate()
	_ = f.e.Register("gate", g.handle)
	f.start(t)

	expect(t, "kill unknown", f.post(t, "/kill", `{"jobId":7}`), `{"code":200,"msg":"job thread already killed."}`)
	f.trigger(t, 7, 1, "gate", "", 0)
	g.waitStart(t, 1)
	f.trigger(t, 7, 2, "gate", "", 0)
	expect(t, "kill", f.post(t, "/kill", `{"jobId":7}`), ok)
	got := f.admin.waitCallbacks(t, 1, 2)
	expect(t, "running", got[1].HandleMsg, "scheduling center kill job. [job running, killed]")
	expect(t, "queued", got[2].HandleMsg, "scheduling center kill job. [job not executed, in the job queue, killed.]")
	if got[1].HandleCode != 500 || got[2].HandleCode != 500 {
		t.Fatalf("codes %+v", got)
	}
	expect(t, "idle after kill", f.post(t, "/idleBeat", `{"jobId":7}`), ok)
	expect(t, "kill again", f.post(t, "/kill", `{"jobId":7}`), `{"code":200,"msg":"job thread already killed."}`)
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	g := newGate()
	_ = f.e.Register("gate", g.handle)
	f.start(t)

	f.trigger(t, 7, 1, "gate", "", 5)
	g.waitStart(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The callback retry loop and the run's timeout sleep on the clock.
	if err := f.clk.WaitForSleepers(ctx, 2); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(4 * time.Second)
	select {
	case <-g.started:
		t.Fatal("unexpected start")
	default:
	}
	f.clk.Advance(time.Second)
	got := f.admin.waitCallbacks(t, 1)
	if got[1].HandleCode != 502 || got[1].HandleMsg != "job execute timeout " {
		t.Fatalf("got %+v, want 502 timeout", got[1])
	}
}

func TestDuplicateLogID(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	g := newGate()
	_ = f.e.Register("gate", g.handle)
	f.start(t)

	f.trigger(t, 7, 1, "gate", "", 0)
	g.waitStart(t, 1)
	expect(t, "queue 2", f.trigger(t, 7, 2, "gate", "", 0), ok)
	expect(t, "repeat 2", f.trigger(t, 7, 2, "gate", "", 0), `{"code":500,"msg":"repeate trigger job, logId:2"}`)
	g.release <- struct{}{}
	g.release <- struct{}{}
	f.admin.waitCallbacks(t, 1, 2)
}

func TestHandlerResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		fn       HandlerFunc
		wantCode int
		wantMsg  string // prefix
	}{
		{"nil", func(context.Context, *Job) error { return nil }, 200, ""},
		{"error", func(context.Context, *Job) error { return errors.New("boom") }, 500, "boom"},
		{"succeed", func(_ context.Context, j *Job) error { j.Succeed("fine"); return nil }, 200, "fine"},
		{"fail", func(_ context.Context, j *Job) error { j.Fail("bad"); return nil }, 500, "bad"},
		{"timeout", func(_ context.Context, j *Job) error { j.FailTimeout("slow"); return nil }, 502, "slow"},
		{"lost", func(_ context.Context, j *Job) error { j.SetResult(0, "x"); return nil }, 500, "job handle result lost."},
		{"panic", func(context.Context, *Job) error { panic("kaboom") }, 500, "panic: kaboom"},
		{"long", func(context.Context, *Job) error { return errors.New(strings.Repeat("x", 60000)) }, 500, strings.Repeat("x", 50000) + "..."},
	}
	f := setup(t, nil)
	for _, tt := range tests {
		_ = f.e.Register(tt.name, tt.fn)
	}
	f.start(t)
	for i, tt := range tests {
		expect(t, tt.name, f.trigger(t, int64(i+1), int64(i+1), tt.name, "", 0), ok)
	}
	var ids []int64
	for i := range tests {
		ids = append(ids, int64(i+1))
	}
	got := f.admin.waitCallbacks(t, ids...)
	for i, tt := range tests {
		r := got[int64(i+1)]
		if r.HandleCode != tt.wantCode || !strings.HasPrefix(r.HandleMsg, tt.wantMsg) {
			t.Errorf("%s: got %d %.80q, want %d %.80q", tt.name, r.HandleCode, r.HandleMsg, tt.wantCode, tt.wantMsg)
		}
		if tt.name == "long" && len(r.HandleMsg) != 50003 {
			t.Errorf("long: len %d, want 50003", len(r.HandleMsg))
		}
	}
}

func TestJobFields(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	seen := make(chan *Job, 1)
	_ = f.e.Register("shard", func(_ context.Context, j *Job) error {
		seen <- j
		return nil
	})
	f.start(t)
	body := `{"jobId":3,"executorHandler":"shard","executorParams":"a=1","executorBlockStrategy":"SERIAL_EXECUTION",` +
		`"executorTimeout":60,"logId":42,"logDateTime":1709287200000,"glueType":"BEAN","glueSource":"",` +
		`"glueUpdatetime":1709280000000,"broadcastIndex":2,"broadcastTotal":5}`
	expect(t, "run", f.post(t, "/run", body), ok)
	j := <-seen
	if j.JobID != 3 || j.LogID != 42 || j.Handler != "shard" || j.Param != "a=1" || j.ShardIndex != 2 ||
		j.ShardTotal != 5 || j.Timeout != time.Minute || !j.LogDateTime.Equal(time.UnixMilli(1709287200000)) {
		t.Fatalf("job %d %d %q %q %d/%d %v %v", j.JobID, j.LogID, j.Handler, j.Param, j.ShardIndex, j.ShardTotal, j.Timeout, j.LogDateTime)
	}
}

func TestIdleReapAndHooks(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	var inits, destroys, runs atomic.Int32
	_ = f.e.Register("hooked",
		func(context.Context, *Job) error { runs.Add(1); return nil },
		WithInit(func(context.Context) error { inits.Add(1); return nil }),
		WithDestroy(func(context.Context) error { destroys.Add(1); return nil }))
	f.start(t)

	f.trigger(t, 7, 1, "hooked", "", 0)
	f.admin.waitCallbacks(t, 1)
	f.trigger(t, 7, 2, "hooked", "", 0)
	f.admin.waitCallbacks(t, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.clk.WaitForSleepers(ctx, 2); err != nil { // retry loop + idle worker
		t.Fatal(err)
	}
	f.clk.Advance(89 * time.Second)
	select {
	case r := <-f.exits:
		t.Fatalf("worker exited early: %s", r)
	default:
	}
	f.clk.Advance(time.Second)
	select {
	case r := <-f.exits:
		expect(t, "exit reason", r, reasonIdle)
	case <-ctx.Done():
		t.Fatal("worker not reaped")
	}
	f.e.mu.Lock()
	n := len(f.e.workers)
	f.e.mu.Unlock()
	if n != 0 || inits.Load() != 1 || destroys.Load() != 1 || runs.Load() != 2 {
		t.Fatalf("workers=%d inits=%d destroys=%d runs=%d", n, inits.Load(), destroys.Load(), runs.Load())
	}
}

func TestInitFailureFailsTrigger(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	var attempts atomic.Int32
	_ = f.e.Register("h", func(context.Context, *Job) error { return nil },
		WithInit(func(context.Context) error {
			if attempts.Add(1) == 1 {
				return errors.New("no db")
			}
			return nil
		}))
	f.start(t)
	f.trigger(t, 7, 1, "h", "", 0)
	got := f.admin.waitCallbacks(t, 1)
	expect(t, "msg", got[1].HandleMsg, "job handler [h] init failed: no db")
	f.trigger(t, 7, 2, "h", "", 0)
	if got := f.admin.waitCallbacks(t, 2); got[2].HandleCode != 200 {
		t.Fatalf("second run %+v", got[2])
	}
}

func TestHandlerChangeReplacesWorker(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	g := newGate()
	_ = f.e.Register("gate", g.handle)
	_ = f.e.Register("other", func(context.Context, *Job) error { return nil })
	f.start(t)
	f.trigger(t, 7, 1, "gate", "", 0)
	g.waitStart(t, 1)
	expect(t, "run other", f.trigger(t, 7, 2, "other", "", 0), ok)
	got := f.admin.waitCallbacks(t, 1, 2)
	expect(t, "replaced", got[1].HandleMsg, reasonReplace+suffixRunKilled)
	if got[2].HandleCode != 200 {
		t.Fatalf("new handler %+v", got[2])
	}
}

func TestShutdownDrainsThenKills(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	g := newGate()
	_ = f.e.Register("gate", g.handle)
	f.start(t)
	f.trigger(t, 7, 1, "gate", "", 0)
	g.waitStart(t, 1)
	f.trigger(t, 7, 2, "gate", "", 0)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.e.Shutdown(ctx) }()
	eventually(t, "closed", func() bool { f.e.mu.Lock(); defer f.e.mu.Unlock(); return f.e.closed })
	expect(t, "run refused", f.trigger(t, 8, 3, "gate", "", 0), `{"code":500,"msg":"executor is shutting down."}`)
	g.release <- struct{}{} // logId 1 finishes normally; 2 starts
	g.waitStart(t, 2)
	cancel() // grace over: 2 is killed
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("shutdown err %v", err)
	}
	got := f.admin.waitCallbacks(t, 1, 2)
	if got[1].HandleCode != 200 || got[2].HandleMsg != reasonShutdown+suffixRunKilled {
		t.Fatalf("callbacks %+v", got)
	}
}

func TestRegisterErrors(t *testing.T) {
	t.Parallel()
	e, err := New(Config{AccessToken: tok16, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	fn := func(context.Context, *Job) error { return nil }
	if err := e.Register("", fn); err == nil {
		t.Error("empty name accepted")
	}
	if err := e.Register("a", nil); err == nil {
		t.Error("nil handler accepted")
	}
	if err := e.Register("a", fn); err != nil {
		t.Fatal(err)
	}
	if err := e.Register("a", fn); err == nil {
		t.Error("duplicate accepted")
	}
}

const tok16 = "0123456789abcdef"

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"defaults", Config{AccessToken: tok16}, true},
		{"no token", Config{}, false},
		{"no token allowed", Config{AllowNoToken: true}, true},
		{"retention 2", Config{AccessToken: tok16, LogRetentionDays: 2}, false},
		{"retention off", Config{AccessToken: tok16, LogRetentionDays: -1}, true},
		{"bad admin", Config{AccessToken: tok16, AdminAddresses: []string{"ftp://x"}}, false},
		{"admin", Config{AccessToken: tok16, AdminAddresses: []string{"http://a:8080/xxl-job-admin", " "}}, true},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err %v", tt.name, err)
		}
	}
	if _, err := New(Config{AccessToken: tok16, AppName: "app", AdminAddresses: []string{"http://a/"}}); err != nil {
		t.Fatal(err)
	}
	e, _ := New(Config{AccessToken: tok16, AppName: "app", AdminAddresses: []string{"http://a/"}})
	if err := e.Start(); err == nil {
		t.Error("Start without an address to register succeeded")
	}
}
