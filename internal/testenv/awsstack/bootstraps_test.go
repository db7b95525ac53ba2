package awsstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/app/lambdaapp"
	"github.com/xjobdev/xjob/internal/scheduler/lease"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/internal/testenv/lambdarun"
	"github.com/xjobdev/xjob/internal/testenv/syncbuf"
	"github.com/xjobdev/xjob/internal/testenv/tool"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/executor"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// runRecorder is an SDK executor that counts the /run calls per log id,
// duplicates included.
type runRecorder struct {
	mu   sync.Mutex
	runs map[int64]int
}

func (r *runRecorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/run" {
			body, _ := io.ReadAll(req.Body)
			var p protocol.TriggerParam
			if json.Unmarshal(body, &p) == nil {
				r.mu.Lock()
				r.runs[p.LogID]++
				r.mu.Unlock()
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, req)
	})
}

// TestBootstrapsEndToEnd runs the six real bootstraps (functions/*, built
// for this host) as Lambda runs them — each in its own processes, pulling
// invocations from the Runtime API (internal/testenv/lambdarun) — against dynalite
// and fauxqs: EventBridge ticks start scans (overlapping invocations in
// two environments; the first takes the shard leases and pushes the
// scan horizon, 150 s, so the later ones find nothing due and take no
// lease — the hand-over itself is the scan package's and lease package's
// to test), the ring and dispatch
// mappings feed SQS events, the executor API's function URL turns the
// executor's registry and callback requests into function URL events (the
// callback bootstrap; metered as its invocations, no HTTP API request),
// the HTTP API the admin client's calls into HTTP API events (web), and
// the dispatch function is invoked directly with {"jobId":…}.
// Every fire of every job reaches the executor exactly once.
func TestBootstrapsEndToEnd(t *testing.T) {
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	ctx := context.Background()
	bin := awsstack.BootstrapsFor(t, ctx)
	logs := &syncbuf.Buffer{}
	d, err := awsstack.Start(ctx, awsstack.Options{Shards: 2, RingPollers: 3,
		PollWait: time.Second, ScanPeriod: 4 * time.Second, ScanTimeout: 5500 * time.Millisecond, NoMaintenance: true,
		SecretsRefresh: time.Second, Bootstraps: bin, BootstrapOutput: logs, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			d.Close()
		}
		if t.Failed() {
			t.Logf("bootstrap logs:\n%s", tail(logs.String(), 60))
		}
	}()

	rec := &runRecorder{runs: map[int64]int{}}
	// Registers through the function URL → callback bootstrap.
	addr, stop := sdkExecutor(t, d, "bootstraps", rec.wrap, map[string]executor.HandlerFunc{
		"ok": func(_ context.Context, j *executor.Job) error { j.Succeed("ok " + j.Param); return nil }})
	defer stop()

	api, err := adminclient.New(d.URL(), d.AdminToken())
	if err != nil {
		t.Fatal(err)
	}
	g, err := api.GroupCreate(ctx, xjob.Group{AppName: "bootstraps", Title: "bootstraps", AddressType: xjob.AddressAuto})
	if err != nil {
		t.Fatalf("group: %v", err)
	}
	jobs := make([]xjob.Job, 4)
	for i := range jobs {
		job := xjob.Job{GroupID: g.ID, Description: fmt.Sprint("every second ", i), Author: "t", ScheduleType: xjob.ScheduleFixRate,
			ScheduleConf: "1", Handler: "ok", TriggerStatus: xjob.StatusRunning}
		job.ApplyDefaults()
		if jobs[i], err = api.JobCreate(ctx, job); err != nil {
			t.Fatalf("job: %v", err)
		}
	}
	// Three scan invocations (in two environments, overlapping) and four
	// fires of every job, then the jobs stop.
	if err := await(40*time.Second, func() (bool, string) {
		scans := d.Meter().Snapshot().Invokes["scan"].Invocations
		least := -1
		for _, j := range jobs {
			page, err := d.Store().LogList(ctx, driver.LogListParams{JobID: j.ID, Limit: 1000})
			if err != nil {
				return false, err.Error()
			}
			if least < 0 || len(page.Logs) < least {
				least = len(page.Logs)
			}
		}
		return scans >= 3 && least >= 4, fmt.Sprintf("%d scan invocations, %d fires of the least fired job; invocation errors %v", scans, least, d.Errors())
	}); err != nil {
		t.Fatal(err)
	}
	// The scans took each shard's lease (a fencing token was issued)
	// and, their work done, released it.
	for shard := range 2 {
		l, err := d.Store().LeaseGet(ctx, lease.Name(shard))
		if err != nil || l.Token < 1 {
			t.Errorf("lease of shard %d: %+v, %v: no scan took it", shard, l, err)
		}
	}
	for _, j := range jobs {
		if _, err := api.JobStop(ctx, j.ID); err != nil {
			t.Fatalf("stop job %d: %v", j.ID, err)
		}
	}

	// The direct invocation of the dispatch function (a manual trigger).
	payload := fmt.Sprintf(`{"jobId":%d,"executorParam":"by hand","addressList":[%q]}`, jobs[0].ID, addr)
	out, err := d.Invoke(ctx, "dispatch", "", []byte(payload))
	if err != nil {
		t.Fatalf("direct dispatch invocation: %v", err)
	}
	var mr lambdaapp.ManualResult
	if err := json.Unmarshal(out, &mr); err != nil || len(mr.LogIDs) != 1 || mr.TriggerCodes[0] != xjob.CodeSuccess {
		t.Fatalf("manual trigger result %s (%v)", out, err)
	}
	// The maintenance tick (EventBridge → registry).
	tick := `{"version":"0","id":"t","detail-type":"Scheduled Event","source":"aws.events","time":"` +
		time.Now().UTC().Format(time.RFC3339) + `","region":"us-east-1","detail":{}}`
	if out, err := d.Invoke(ctx, "registry", "", []byte(tick)); err != nil {
		t.Fatalf("maintenance invocation: %v", err)
	} else if !strings.Contains(string(out), `"swept"`) {
		t.Errorf("maintenance result %s", out)
	}

	// Every fire between each job's first and last is there once, and
	// each reached the executor once and succeeded through the callback.
	total := 0
	for _, j := range jobs {
		var fires []int64
		deadline := time.Now().Add(20 * time.Second)
		for {
			page, err := d.Store().LogList(ctx, driver.LogListParams{JobID: j.ID, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			fires = fires[:0]
			done := len(page.Logs) > 0
			for _, l := range page.Logs {
				done = done && l.HandleCode == xjob.CodeSuccess
				if l.TriggerType == xjob.TriggerCron {
					fires = append(fires, l.ScheduledTime)
				}
			}
			if done {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %d: results not all in after 20 s: %d logs; invocation errors %v", j.ID, len(page.Logs), d.Errors())
			}
			time.Sleep(200 * time.Millisecond)
		}
		slices.Sort(fires)
		for i := 1; i < len(fires); i++ {
			if gap := fires[i] - fires[i-1]; gap != 1000 {
				t.Errorf("job %d: fires %d and %d are %d ms apart (lost or duplicate fire)", j.ID, i-1, i, gap)
			}
		}
		if len(fires) < 4 { // awaited above
			t.Errorf("job %d: %d fires", j.ID, len(fires))
		}
		total += len(fires)
	}
	rec.mu.Lock()
	for id, n := range rec.runs {
		if n != 1 {
			t.Errorf("log %d reached the executor %d times", id, n)
		}
	}
	runs := len(rec.runs)
	rec.mu.Unlock()
	if runs != total+1 {
		t.Errorf("executor saw %d distinct runs, want %d fires + 1 manual", runs, total)
	}
	// The bootstraps' invocations carry their CPU time (what the cost
	// meter's CPU share stretches), each less than the invocations' time.
	if lambdarun.CPUMeasured {
		for _, fn := range []string{"ring", "dispatch", "registry"} {
			in := d.Meter().Snapshot().Invokes[fn]
			cpu, ok := in.CPUPerInvoke()
			if !ok || cpu <= 0 || in.CPU > in.Duration+in.Duration/2 {
				t.Errorf("%s: %d invocations of %v, CPU %v over %d: want measured, within their time", fn, in.Invocations, in.Duration, in.CPU, in.CPUCounted)
			}
		}
	}
	rotateAccessToken(ctx, t, d)
	// The function URL takes every path: the admin API is not there, even
	// with the admin token.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.ExecutorURL()+"/v1/jobs", nil)
	req.Header.Set("Authorization", "Bearer "+d.AdminToken())
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /v1/jobs at the function URL: %v %v, want 404", res, err)
	} else {
		res.Body.Close()
	}

	u := d.Meter().Snapshot()
	d.Close()
	closed = true
	for _, fn := range []string{"scan", "ring", "dispatch", "callback", "registry", "web"} {
		if u.Invokes[fn].Invocations == 0 {
			t.Errorf("no invocations of the %s bootstrap", fn)
		}
	}
	// Each function URL request is one callback invocation and nothing
	// else; each HTTP API request (the admin client's) one web invocation.
	if u.URLRequests != u.Invokes["callback"].Invocations || u.HTTPRequests != u.Invokes["web"].Invocations {
		t.Errorf("function URL requests %d for %d callback invocations; HTTP API requests %d for %d web invocations",
			u.URLRequests, u.Invokes["callback"].Invocations, u.HTTPRequests, u.Invokes["web"].Invocations)
	}
	for _, err := range d.Errors() {
		t.Errorf("invocation error: %v", err)
	}
	t.Logf("%d scheduled fires + 1 manual, each run once; invocations %v", total, u.Invokes)
}

// await polls cond (state held by the emulators and the bootstrap
// processes) until it holds, or fails after within with cond's account
// of what it saw.
func await(within time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(within)
	for {
		ok, saw := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not reached after %v: %s", within, saw)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rotateAccessToken rotates the access token as docs/aws.md says, in
// moto's SSM Parameter Store, and checks what the callback bootstrap
// accepts at each step (heartbeats are answered by the function's own
// tokens, read again every second here): first "new" then the old token
// on the parameter's two lines, both accepted; then "new" alone, the old
// one refused; a token never issued refused throughout.
func rotateAccessToken(ctx context.Context, t *testing.T, d *awsstack.Deployment) {
	t.Helper()
	old := d.AccessToken()
	beat := func(token string) protocol.ReturnT {
		body := `{"registryGroup":"EXECUTOR","registryKey":"rotation","registryValue":"http://127.0.0.1:1/"}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, d.ExecutorURL()+"/api/registry", strings.NewReader(body))
		req.Header.Set(protocol.AccessTokenHeader, token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		defer res.Body.Close()
		var rt protocol.ReturnT
		_ = json.NewDecoder(res.Body).Decode(&rt)
		return rt
	}
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("rotation: %s not seen within 15 s", what)
			}
		}
	}
	accepted := func(token string) bool { return beat(token).Code == protocol.SuccessCode }
	if !accepted(old) || accepted("never-issued") {
		t.Fatal("before the rotation: the token in SSM must be the one accepted, and only it")
	}
	if err := d.PutSecret(ctx, awsstack.AccessTokenParam, "rotated-token\n"+old); err != nil {
		t.Fatal(err)
	}
	until("the new token accepted", func() bool { return accepted("rotated-token") })
	if !accepted(old) || accepted("never-issued") {
		t.Error("during the rotation: both the old and the new token must be accepted, nothing else")
	}
	if err := d.PutSecret(ctx, awsstack.AccessTokenParam, "rotated-token"); err != nil {
		t.Fatal(err)
	}
	until("the old token refused", func() bool { return !accepted(old) })
	if !accepted("rotated-token") {
		t.Error("after the rotation: the new token must be accepted")
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
