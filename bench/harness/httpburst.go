package harness

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/adminclient"
)

// HTTPBurstSpec: Jobs HTTP jobs (glue type HTTP, no executor) whose only
// fire is the same second, calling one endpoint on loopback.
type HTTPBurstSpec struct {
	Name string // "http-burst" unless set
	Jobs int
	// Lead is how far ahead the common second is chosen; creation through
	// the API must finish before it.
	Lead time.Duration
}

// HTTPBurst is Burst for HTTP jobs: the scheduler makes each call itself
// (its built-in executor, as many workers as its dispatch lanes), against
// a loopback endpoint that answers 200 at once and records a receipt per
// call, so that its last fire and p99 read beside the executor burst's.
// The endpoint records into an Executor's receipts, so the analysis is
// Burst's; the Executor itself is called by nothing and sends no callback
// (the built-in executor records results in process).
func HTTPBurst(ctx context.Context, env *Env, s HTTPBurstSpec) (*Result, error) {
	b, stop, err := startBurst(ctx, env, cmp.Or(s.Name, "http-burst"), s.Jobs)
	if err != nil {
		return nil, err
	}
	defer stop()
	hit, stopHit, err := startHitEndpoint(b.rec)
	if err != nil {
		return nil, err
	}
	defer stopHit()
	at := time.Now().Add(s.Lead).Truncate(time.Second).UTC()
	t := time.Now()
	jobs, err := createHTTPJobs(ctx, b.api, "bench-admin-token", hit, s.Jobs, at.Format("5 4 15 * * ?"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.res.Scenario, err)
	}
	env.logf("%s: created %d HTTP jobs due at %s in %s", b.res.Scenario, len(jobs), at.Format("15:04:05"), time.Since(t).Round(time.Millisecond))
	b.jobs, b.at, b.spread, b.received = jobs, at, 1, "HTTP calls received"
	b.second = func(int) time.Time { return at }
	return fireBurst(ctx, env, b)
}

// startHitEndpoint serves GET /hit?job=J&log=L on loopback: 200 at once,
// and a receipt in rec, as rec's /run would record one.
func startHitEndpoint(rec *Executor) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("HTTP target endpoint: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hit", func(w http.ResponseWriter, r *http.Request) {
		at := time.Now().UnixMicro()
		job, err1 := strconv.ParseInt(r.URL.Query().Get("job"), 10, 64)
		log, err2 := strconv.ParseInt(r.URL.Query().Get("log"), 10, 64)
		if err1 != nil || err2 != nil {
			http.Error(w, "bad query", http.StatusBadRequest)
			return
		}
		rec.mu.Lock()
		rec.receipts = append(rec.receipts, Receipt{JobID: job, LogID: log, At: at})
		rec.seen[log] = true
		rec.mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/hit", func() { _ = srv.Close() }, nil
}

// createHTTPJobs creates n running HTTP jobs on cron, each calling hit
// with its job and log id, 16 requests at a time, in a group of their own
// (an HTTP job needs no executor).
func createHTTPJobs(ctx context.Context, api *adminclient.Client, token, hit string, n int, cron string) ([]int64, error) {
	return createHTTPJobsAs(ctx, api, token, hit, n, cron, xjob.StatusRunning)
}

// createHTTPJobsAs is createHTTPJobs with the jobs created in status:
// stopped, for a bulk start (startJobs) to push their first fires in a
// few ring messages, as W1's jobs are started, rather than one push per
// job created running.
func createHTTPJobsAs(ctx context.Context, api *adminclient.Client, token, hit string, n int, cron string, status xjob.TriggerStatus) ([]int64, error) {
	grp, err := api.GroupCreate(ctx, xjob.Group{AppName: "xjob-bench-http", Title: "bench HTTP", AddressType: xjob.AddressAuto})
	if err != nil {
		return nil, fmt.Errorf("create group: %w", err)
	}
	return postJobs(ctx, api, token, n, "HTTP job", func(int) xjob.Job {
		spec := benchJobSpec(grp.ID, cron)
		spec.Handler, spec.GlueType, spec.TriggerStatus = "", xjob.GlueHTTP, status
		spec.GlueSource = `{"url":"` + hit + `?job={{jobId}}&log={{logId}}"}`
		return spec
	})
}
