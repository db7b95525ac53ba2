package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/syncbuf"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/executor"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// receipt is one POST /run an executor received.
type receipt struct {
	LogID, JobID int64
	At           time.Time
}

// recorder is a protocol-speaking executor on loopback: the SDK executor
// behind a middleware that records every /run it receives, duplicates
// included (the SDK itself would reject some).
type recorder struct {
	srv  *httptest.Server
	exec atomic.Pointer[executor.Executor]
	// onRun, if set, sees each /run once recorded, before the executor
	// does: a test's way to hold a call in flight.
	onRun atomic.Pointer[func(protocol.TriggerParam)]
	mu    sync.Mutex
	runs  []receipt
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/run" {
			body, _ := io.ReadAll(req.Body)
			var p protocol.TriggerParam
			if json.Unmarshal(body, &p) == nil {
				r.mu.Lock()
				r.runs = append(r.runs, receipt{LogID: p.LogID, JobID: p.JobID, At: time.Now()})
				r.mu.Unlock()
				if f := r.onRun.Load(); f != nil {
					(*f)(p)
				}
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		if e := r.exec.Load(); e != nil {
			e.ServeHTTP(w, req)
			return
		}
		http.Error(w, "not ready", http.StatusServiceUnavailable)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// start serves the SDK executor, sending results to admin.
func (r *recorder) start(t *testing.T, admin, accessToken, appName string) {
	t.Helper()
	e, err := executor.New(executor.Config{
		AdminAddresses: []string{admin}, AccessToken: accessToken, AppName: appName, Address: r.srv.URL + "/",
		LogDir: t.TempDir(), CallbackRetryInterval: 500 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Register("rec", func(_ context.Context, job *executor.Job) error { job.Succeed("ok"); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	r.exec.Store(e)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = e.Shutdown(ctx)
	})
}

func (r *recorder) receipts() []receipt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.runs)
}

// api calls the admin JSON API and decodes the reply into out.
func api(t *testing.T, base, token, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	if resp.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// eventually polls cond every 100 ms until it holds or limit passes. These
// tests run the real process on the wall clock, so they wait for it; they
// assert outcomes, never durations beyond generous bounds.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runLocal starts Run on a temp file and a free loopback port and returns
// its Info and a stop function that cancels it and returns Run's result.
func runLocal(t *testing.T, mutate func(*Config)) (Info, func() (error, time.Duration)) {
	t.Helper()
	cfg := Defaults()
	cfg.DB = t.TempDir() + "/xjob.db"
	cfg.Listen = "127.0.0.1:0"
	cfg.Shards = 4
	cfg.Grace = 5 * time.Second
	cfg.Logger = slog.New(slog.DiscardHandler)
	if testing.Verbose() && os.Getenv("XJOB_TEST_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if mutate != nil {
		mutate(&cfg)
	}
	ready := make(chan Info, 1)
	cfg.Ready = func(i Info) { ready <- i }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	var info Info
	select {
	case info = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("Run: %v", err)
	case <-time.After(60 * time.Second):
		// A failure detector, not a timing check: under the race
		// detector, with this package's parallel tests each starting a
		// Run beside the other test binaries on two cores, a start once
		// took over 20 s (CI, TestSecurityRedirectTraps).
		cancel()
		t.Fatal("Run did not become ready")
	}
	stopped := false
	stop := func() (error, time.Duration) {
		if stopped {
			return nil, 0
		}
		stopped = true
		start := time.Now()
		cancel()
		select {
		case err := <-done:
			return err, time.Since(start)
		case <-time.After(cfg.Grace + 10*time.Second):
			t.Fatal("Run did not return after cancel")
			return nil, 0
		}
	}
	t.Cleanup(func() { _, _ = stop() })
	return info, stop
}

type logPage struct {
	Items []xjob.Log `json:"items"`
	Next  string     `json:"next"`
}

func TestLocalRunsJobsEndToEnd(t *testing.T) {
	t.Parallel()
	info, stop := runLocal(t, nil)
	rec := newRecorder(t)
	rec.start(t, info.URL, info.AccessToken, "xjob-e2e")

	var g xjob.Group
	if code := api(t, info.URL, info.AdminToken, "POST", "/v1/groups",
		map[string]any{"appname": "xjob-e2e", "title": "e2e", "addressType": 0}, &g); code != http.StatusCreated {
		t.Fatalf("create group: %d", code)
	}
	var j xjob.Job
	if code := api(t, info.URL, info.AdminToken, "POST", "/v1/jobs", map[string]any{
		"jobGroup": g.ID, "jobDesc": "every second", "author": "test", "scheduleType": "FIX_RATE",
		"scheduleConf": "1", "executorHandler": "rec", "triggerStatus": 1,
	}, &j); code != http.StatusCreated {
		t.Fatalf("create job: %d", code)
	}

	// A running job first fires after the 5 s pre-read window.
	var logs logPage
	// A result may be recorded a moment before the trigger reply of the
	// same log (the executor's callback overtakes the dispatcher's record
	// of /run's reply): wait until every listed log has both.
	eventually(t, 20*time.Second, "3 successful logs", func() bool {
		logs = logPage{}
		api(t, info.URL, info.AdminToken, "GET", fmt.Sprintf("/v1/logs?job=%d&status=success&limit=100", j.ID), nil, &logs)
		for _, l := range logs.Items {
			if l.TriggerCode == xjob.CodeNone {
				return false
			}
		}
		return len(logs.Items) >= 3
	})
	for _, l := range logs.Items {
		if l.TriggerCode != xjob.CodeSuccess || l.HandleCode != xjob.CodeSuccess || l.ScheduledTime == 0 {
			t.Errorf("log %+v", l)
		}
	}
	var snap struct {
		Triggers     int64 `json:"triggers"`
		Successes    int64 `json:"successes"`
		FireDelayP50 int64 `json:"fireDelayP50Ms"`
		FireDelayP99 int64 `json:"fireDelayP99Ms"`
		ScanTicks    int64 `json:"scanTicks"`
	}
	api(t, info.URL, info.AdminToken, "GET", "/v1/metrics", nil, &snap)
	// No assertion on the fire delay's value: with every fire dispatched
	// within a millisecond of its time, the interpolated p50 is 0 ms.
	// Ticks are counted when they end: a loaded machine may have ended
	// only one or two by the third result. One shows they are counted.
	if snap.Triggers < 3 || snap.Successes < 3 || snap.ScanTicks < 1 {
		t.Errorf("metrics: %+v", snap)
	}
	// Lateness as the executor saw it: receive time − scheduled time.
	sched := map[int64]int64{}
	for _, l := range logs.Items {
		sched[l.ID] = l.ScheduledTime
	}
	var late []time.Duration
	for _, r := range rec.receipts() {
		if s, ok := sched[r.LogID]; ok {
			late = append(late, r.At.Sub(time.UnixMilli(s)))
		}
	}
	p50, p99 := percentiles(late)
	t.Logf("fire lateness over %d fires: p50 %s, p99 %s (metric buckets: p50 ≤ %d ms, p99 ≤ %d ms)",
		len(late), p50, p99, snap.FireDelayP50, snap.FireDelayP99)

	if err, _ := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestLocalShutdownWithinGrace runs xjob local on a fake clock with one
// dispatch in flight to an executor that never answers, then cancels it:
// shutdown waits for the in-flight work until the grace has passed on the
// clock, not a moment less, then cuts it short (the executor sees its
// request end) and Run returns.
func TestLocalShutdownWithinGrace(t *testing.T) {
	t.Parallel()
	const grace = 2 * time.Second
	clk := clock.NewFake(time.Now().Truncate(time.Second))
	var logs syncbuf.Buffer
	arrived, cut := make(chan struct{}, 1), make(chan struct{})
	release := make(chan struct{})
	exec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/run" {
			http.NotFound(w, r)
			return
		}
		// Read the body: net/http notices a closed connection (and ends
		// r.Context) only once the handler has read the request.
		_, _ = io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
			close(cut)
		case <-release:
		}
	}))
	t.Cleanup(exec.Close)
	t.Cleanup(func() { close(release) }) // before exec.Close: the handler may still wait
	info, stop := runLocal(t, func(c *Config) {
		c.Clock, c.Grace = clk, grace
		c.executorReadTimeout = time.Hour // the call ends when shutdown cuts it, not on a wall-clock timer
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	var g xjob.Group
	if code := api(t, info.URL, info.AdminToken, "POST", "/v1/groups", map[string]any{"appname": "xjob-grace", "title": "grace",
		"addressType": 1, "addressList": []string{exec.URL + "/"}}, &g); code != http.StatusCreated {
		t.Fatalf("create group: %d", code)
	}
	var j xjob.Job
	if code := api(t, info.URL, info.AdminToken, "POST", "/v1/jobs", map[string]any{"jobGroup": g.ID, "jobDesc": "hangs",
		"author": "test", "scheduleType": "NONE", "executorHandler": "h"}, &j); code != http.StatusCreated {
		t.Fatalf("create job: %d", code)
	}
	if code := api(t, info.URL, info.AdminToken, "POST", fmt.Sprintf("/v1/jobs/%d/trigger", j.ID), map[string]any{}, nil); code/100 != 2 {
		t.Fatalf("trigger: %d", code)
	}
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatal("the trigger never reached the executor")
	}
	returned := make(chan error, 1)
	go func() { err, _ := stop(); returned <- err }()
	// Shutdown logs that it is stopping once its grace runs on the clock.
	for !strings.Contains(logs.String(), `"msg":"xjob local stopping"`) {
		select {
		case err := <-returned:
			t.Fatalf("Run returned %v before shutting down", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	clk.Advance(grace - time.Millisecond)
	select {
	case err := <-returned:
		t.Fatalf("Run returned (%v) with work in flight before the grace had passed", err)
	case <-cut:
		t.Fatal("the in-flight run was cut before the grace had passed")
	case <-time.After(50 * time.Millisecond):
	}
	// The grace passes: the lanes are cut short and Run returns (the HTTP
	// server, idle, needs none of its own grace).
	clk.Advance(time.Millisecond)
	select {
	case <-cut:
	case <-time.After(20 * time.Second):
		t.Fatal("the in-flight run was not cut when the grace had passed")
	}
	select {
	case err := <-returned:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return once the grace had passed")
	}
	if !strings.Contains(logs.String(), `"lanesDrained":false`) {
		t.Errorf("shutdown did not report the lanes cut short:\n%s", logs.String())
	}
}

func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99)
}
