package executor

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// t0 is the fake clock's start: 2024-03-01 10:00:00 UTC.
var t0 = time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)

// adminRequest is one request the test admin received.
type adminRequest struct {
	path   string
	body   string
	header http.Header
	failed bool // the admin answered it with a failure
}

// testAdmin is an httptest server playing the scheduling center's /api/*
// endpoints: it records every request and answers 200, or HTTP 500 while
// failing is set.
type testAdmin struct {
	srv     *httptest.Server
	failing atomic.Bool
	mu      sync.Mutex
	reqs    []adminRequest
	changed chan struct{}
	hold    chan struct{} // when non-nil, the first callback blocks until it is closed
	held    chan struct{} // closed when the first callback is being held
}

func newTestAdmin(t *testing.T) *testAdmin {
	a := &testAdmin{changed: make(chan struct{})}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *testAdmin) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	failing := a.failing.Load()
	a.mu.Lock()
	first := true
	for _, q := range a.reqs {
		if q.path == r.URL.Path {
			first = false
		}
	}
	hold, held := a.hold, a.held
	a.reqs = append(a.reqs, adminRequest{path: r.URL.Path, body: string(body), header: r.Header.Clone(), failed: failing})
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
	if first && hold != nil && strings.HasSuffix(r.URL.Path, "/api/callback") {
		close(held)
		<-hold
	}
	if failing {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"code":200,"msg":null,"content":null}`)
}

// waitFor blocks until cond holds over the recorded requests.
func (a *testAdmin) waitFor(t *testing.T, what string, cond func([]adminRequest) bool) []adminRequest {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		a.mu.Lock()
		reqs := append([]adminRequest(nil), a.reqs...)
		ch := a.changed
		a.mu.Unlock()
		if cond(reqs) {
			return reqs
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("admin never saw %s; got %+v", what, reqs)
		}
	}
}

// delivered returns the callback items of accepted requests, in order.
func delivered(reqs []adminRequest) []protocol.HandleCallbackParam {
	var out []protocol.HandleCallbackParam
	for _, r := range reqs {
		if r.failed || !strings.HasSuffix(r.path, "/api/callback") {
			continue
		}
		var batch []protocol.HandleCallbackParam
		if err := json.Unmarshal([]byte(r.body), &batch); err != nil {
			panic(err)
		}
		out = append(out, batch...)
	}
	return out
}

// waitCallbacks waits until results for all logIDs were accepted and returns them by logId.
func (a *testAdmin) waitCallbacks(t *testing.T, logIDs ...int64) map[int64]protocol.HandleCallbackParam {
	t.Helper()
	got := map[int64]protocol.HandleCallbackParam{}
	a.waitFor(t, "callbacks", func(reqs []adminRequest) bool {
		for _, p := range delivered(reqs) {
			got[p.LogID] = p
		}
		for _, id := range logIDs {
			if _, ok := got[id]; !ok {
				return false
			}
		}
		return true
	})
	return got
}

type fixture struct {
	e     *Executor
	clk   *clock.Fake
	srv   *httptest.Server
	admin *testAdmin
	exits chan string // reason of every worker exit
}

// setup starts an executor on a fake clock with a test admin. mod may
// adjust the config before New.
func setup(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	admin := newTestAdmin(t)
	clk := clock.NewFake(t0)
	cfg := Config{
		AdminAddresses:        []string{admin.srv.URL},
		AccessToken:           "tok",
		LogDir:                t.TempDir(),
		LogRetentionDays:      -1,
		Location:              time.UTC,
		CallbackRetryInterval: time.Hour,
		Clock:                 clk,
		Logger:                slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if mod != nil {
		mod(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{e: e, clk: clk, admin: admin, exits: make(chan string, 100)}
	e.onWorkerExit = func(_ int64, reason string) { f.exits <- reason }
	f.srv = httptest.NewServer(e)
	t.Cleanup(func() {
		f.srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Shutdown(ctx)
	})
	return f
}

func (f *fixture) start(t *testing.T) {
	t.Helper()
	if err := f.e.Start(); err != nil {
		t.Fatal(err)
	}
}

// post sends body to the executor and returns the reply body.
func (f *fixture) post(t *testing.T, uri, body string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+uri, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(protocol.AccessTokenHeader, "tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// trigger posts a BEAN /run for jobID/logID with handler and strategy.
func (f *fixture) trigger(t *testing.T, jobID, logID int64, handler, strategy string, timeout int) string {
	t.Helper()
	tp := protocol.TriggerParam{
		JobID: jobID, ExecutorHandler: handler, ExecutorBlockStrategy: strategy, ExecutorTimeout: timeout,
		LogID: logID, LogDateTime: t0.UnixMilli(), GlueType: "BEAN", BroadcastTotal: 1,
	}
	b, _ := json.Marshal(tp)
	return f.post(t, "/run", string(b))
}

// gate is a handler that reports its start and blocks until released or cancelled.
type gate struct {
	started chan int64
	release chan struct{}
}

func newGate() *gate { return &gate{started: make(chan int64, 100), release: make(chan struct{}, 100)} }

func (g *gate) handle(ctx context.Context, job *Job) error {
	g.started <- job.LogID
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) waitStart(t *testing.T, want int64) {
	t.Helper()
	select {
	case got := <-g.started:
		if got != want {
			t.Fatalf("started logId %d, want %d", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("logId %d never started", want)
	}
}

const ok = `{"code":200}`

func expect(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// eventually waits (without a fixed sleep) until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
