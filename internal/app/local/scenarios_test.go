package local

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// The scenarios that TestLocalRunsJobsEndToEnd and
// the crash test leave out — retries, child jobs, sharding broadcast and
// the manual trigger with an address override — run against one `xjob
// local` (Run on a temp file and a free port, runLocal in e2e_test.go),
// driven only through its HTTP surfaces: the admin JSON API for people and
// the xxl-job executor API (/api/registry, /api/callback) for executors.
//
// Most scenarios use jobs that are stopped and triggered by hand, so they do
// not wait for the 5 s pre-read window; sharding uses a running CRON job so
// that the scan → ring → dispatch path broadcasts too.

// scenarioAccessToken is the XXL-JOB-ACCESS-TOKEN shared by the scheduler
// and the stand-in executors, so that the executor routes are checked.
const scenarioAccessToken = "scenario-access-token"

// Handler names the stand-in executor understands.
const (
	handlerOK     = "ok"     // /run 200, then callback 200
	handlerFail   = "fail"   // /run 200, then callback 500
	handlerRefuse = "refuse" // /run answers 500: the trigger itself fails
)

// standin is a protocol-speaking executor on loopback, written against the
// wire format rather than the SDK (recorder in e2e_test.go wraps the SDK,
// which always succeeds): its behaviour per run is chosen by the job's
// handler name. Like a real xxl-job executor it answers /run at once and
// reports the result later with POST {admin}api/callback, a JSON array of
// HandleCallbackParam carrying logDateTim.
type standin struct {
	srv   *httptest.Server
	admin string // admin base address, ending in "/"

	mu   sync.Mutex
	runs []protocol.TriggerParam
	errs []string
	wg   sync.WaitGroup // callbacks in flight
}

func newStandin(t *testing.T, admin string) *standin {
	t.Helper()
	s := &standin{admin: strings.TrimSuffix(admin, "/") + "/"}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.srv.Close() // waits for handlers: no callback starts after this
		s.wg.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, e := range s.errs {
			t.Errorf("stand-in executor %s: %s", s.srv.URL, e)
		}
	})
	return s
}

// address is the executor address the scheduler calls.
func (s *standin) address() string { return s.srv.URL + "/" }

func (s *standin) failf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Sprintf(format, args...))
}

func (s *standin) serve(w http.ResponseWriter, r *http.Request) {
	reply := func(ret protocol.ReturnT) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ret)
	}
	if r.Header.Get(protocol.AccessTokenHeader) != scenarioAccessToken {
		s.failf("%s without the access token", r.URL.Path)
		reply(protocol.Fail(protocol.MsgWrongToken))
		return
	}
	switch r.URL.Path {
	case "/" + protocol.PathBeat, "/" + protocol.PathIdleBeat, "/" + protocol.PathKill:
		reply(protocol.OK())
	case "/" + protocol.PathRun:
		var p protocol.TriggerParam
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			s.failf("/run body: %v", err)
			reply(protocol.Fail(err.Error()))
			return
		}
		s.mu.Lock()
		s.runs = append(s.runs, p)
		s.mu.Unlock()
		code := protocol.SuccessCode
		switch p.ExecutorHandler {
		case handlerRefuse:
			reply(protocol.Fail("stand-in refuses the run"))
			return
		case handlerFail:
			code = protocol.FailCode
		}
		reply(protocol.OK())
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.callback(p, code)
		}()
	default:
		reply(protocol.Fail("stand-in: no " + r.URL.Path))
	}
}

// post sends an executor-API request to the admin and checks the ReturnT.
func (s *standin) post(path string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, s.admin+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(protocol.AccessTokenHeader, scenarioAccessToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var ret protocol.ReturnT
	if err := json.Unmarshal(raw, &ret); err != nil {
		return fmt.Errorf("%s: HTTP %d %q: %w", path, resp.StatusCode, raw, err)
	}
	if resp.StatusCode != http.StatusOK || ret.Code != protocol.SuccessCode {
		return fmt.Errorf("%s: HTTP %d %s", path, resp.StatusCode, raw)
	}
	return nil
}

func (s *standin) callback(p protocol.TriggerParam, code int) {
	msg := "stand-in ok"
	if code != protocol.SuccessCode {
		msg = "stand-in failed"
	}
	err := s.post(protocol.PathCallback, []protocol.HandleCallbackParam{{
		LogID: p.LogID, LogDateTim: p.LogDateTime, HandleCode: code, HandleMsg: msg,
	}})
	if err != nil {
		s.failf("callback of log %d: %v", p.LogID, err)
	}
}

// register announces the executor under appName, as its 30 s beat does.
func (s *standin) register(t *testing.T, appName string) {
	t.Helper()
	if err := s.post(protocol.PathRegistry, protocol.RegistryParam{
		RegistryGroup: "EXECUTOR", RegistryKey: appName, RegistryValue: s.address(),
	}); err != nil {
		t.Fatalf("register %s: %v", appName, err)
	}
}

func (s *standin) received() []protocol.TriggerParam {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.runs)
}

// scenario is the scheduler shared by the scenarios, each in its own group.
type scenario struct {
	t    *testing.T
	info Info
}

func (sc scenario) call(method, path string, body, out any) int {
	sc.t.Helper()
	return api(sc.t, sc.info.URL, sc.info.AdminToken, method, path, body, out)
}

// group creates an executor group: manual with addrs, automatic without.
func (sc scenario) group(appName string, addrs ...string) xjob.Group {
	sc.t.Helper()
	body := map[string]any{"appname": appName, "title": appName, "addressType": 0}
	if len(addrs) > 0 {
		body["addressType"], body["addressList"] = 1, addrs
	}
	var g xjob.Group
	if code := sc.call("POST", "/v1/groups", body, &g); code != http.StatusCreated {
		sc.t.Fatalf("create group %s: HTTP %d", appName, code)
	}
	return g
}

// job creates a job in group g; fields override the defaults (a stopped
// job on a one-hour cron, so that only the scenario triggers it).
func (sc scenario) job(g xjob.Group, fields map[string]any) xjob.Job {
	sc.t.Helper()
	body := map[string]any{
		"jobGroup": g.ID, "jobDesc": "scenario", "author": "test", "scheduleType": "CRON",
		"scheduleConf": "0 0 * * * ?", "executorHandler": handlerOK, "triggerStatus": 0,
	}
	for k, v := range fields {
		body[k] = v
	}
	var j xjob.Job
	if code := sc.call("POST", "/v1/jobs", body, &j); code != http.StatusCreated {
		sc.t.Fatalf("create job %v: HTTP %d", fields, code)
	}
	return j
}

// trigger runs job id once by hand (POST /v1/jobs/{id}/trigger) and returns
// the occurrence id of the trigger.
func (sc scenario) trigger(id int64, body map[string]any) string {
	sc.t.Helper()
	var res struct {
		JobID        int64  `json:"jobId"`
		OccurrenceID string `json:"occurrenceId"`
	}
	var payload any // nil: an empty body, as the API allows
	if body != nil {
		payload = body
	}
	if code := sc.call("POST", fmt.Sprintf("/v1/jobs/%d/trigger", id), payload, &res); code != http.StatusAccepted {
		sc.t.Fatalf("trigger job %d: HTTP %d", id, code)
	}
	if res.JobID != id || res.OccurrenceID == "" {
		sc.t.Fatalf("trigger job %d: reply %+v", id, res)
	}
	return res.OccurrenceID
}

// logs returns every trigger log of job id, oldest first.
func (sc scenario) logs(id int64) []xjob.Log {
	sc.t.Helper()
	var all []xjob.Log
	for cursor := ""; ; {
		var page logPage
		path := fmt.Sprintf("/v1/logs?job=%d&limit=100", id)
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		if code := sc.call("GET", path, nil, &page); code != http.StatusOK {
			sc.t.Fatalf("list logs of job %d: HTTP %d", id, code)
		}
		all = append(all, page.Items...)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	slices.SortFunc(all, func(a, b xjob.Log) int { return int(a.ID - b.ID) })
	return all
}

// completed reports whether l went through the completion path: handled
// (or failed at trigger) and, when failed, past the retry decision, which
// precedes the alarm claim (package callback).
func completed(l xjob.Log) bool {
	switch {
	case l.HandleCode == xjob.CodeSuccess:
		return true
	case l.Failed():
		return l.AlarmStatus > xjob.AlarmDefault
	}
	return false
}

const scenarioWait = 15 * time.Second

func TestLocalScenarios(t *testing.T) {
	t.Parallel()
	// A short retry delay: these scenarios check what is retried; when is
	// internal/scheduler/callback's (fake clock), and 5 s per retry would crowd scenarioWait.
	info, _ := runLocal(t, func(c *Config) { c.AccessToken, c.RetryDelay = scenarioAccessToken, 300*time.Millisecond })

	t.Run("RetryAfterFailedCallback", func(t *testing.T) {
		t.Parallel()
		sc := scenario{t, info}
		ex := newStandin(t, info.URL)
		g := sc.group("scn-retry-callback", ex.address())
		j := sc.job(g, map[string]any{"executorHandler": handlerFail, "executorFailRetryCount": 2, "executorParam": "job-param"})
		sc.trigger(j.ID, map[string]any{"executorParam": "manual-param"})

		// The trigger and two retries, each counting down, and no more:
		// the last one's completion ran (alarm claimed) with nothing left.
		var logs []xjob.Log
		eventually(t, scenarioWait, "manual trigger + 2 completed retries", func() bool {
			logs = sc.logs(j.ID)
			return len(logs) == 3 && completed(logs[2])
		})
		wantType := []xjob.TriggerType{xjob.TriggerManual, xjob.TriggerRetry, xjob.TriggerRetry}
		for i, l := range logs {
			if l.TriggerType != wantType[i] || l.ExecutorFailRetryCount != 2-i {
				t.Errorf("log %d: type %s, retry count %d; want %s, %d", i, l.TriggerType, l.ExecutorFailRetryCount, wantType[i], 2-i)
			}
			if l.TriggerCode != xjob.CodeSuccess || l.HandleCode != xjob.CodeFail || l.HandleMsg != "stand-in failed" {
				t.Errorf("log %d: trigger %d, handle %d %q; want trigger 200, handle 500 from the callback", i, l.TriggerCode, l.HandleCode, l.HandleMsg)
			}
			if l.ExecutorParam != "manual-param" {
				t.Errorf("log %d: param %q; a retry keeps the failed run's param", i, l.ExecutorParam)
			}
			if i > 0 && !strings.Contains(l.OccurrenceID, fmt.Sprintf("/RETRY/r%d/", logs[i-1].ID)) {
				t.Errorf("log %d: occurrence %q does not retry log %d", i, l.OccurrenceID, logs[i-1].ID)
			}
		}
		runs := ex.received()
		if len(runs) != 3 {
			t.Fatalf("executor received %d runs, want 3", len(runs))
		}
		for i, p := range runs {
			if p.LogID != logs[i].ID || p.ExecutorParams != "manual-param" || p.JobID != j.ID {
				t.Errorf("run %d: %+v; want log %d with param manual-param", i, p, logs[i].ID)
			}
		}
	})

	t.Run("RetryAfterRefusedRun", func(t *testing.T) {
		t.Parallel()
		sc := scenario{t, info}
		ex := newStandin(t, info.URL)
		g := sc.group("scn-retry-refuse", ex.address())
		j := sc.job(g, map[string]any{"executorHandler": handlerRefuse, "executorFailRetryCount": 1})
		sc.trigger(j.ID, nil)

		var logs []xjob.Log
		eventually(t, scenarioWait, "refused trigger + 1 completed retry", func() bool {
			logs = sc.logs(j.ID)
			return len(logs) == 2 && completed(logs[1])
		})
		for i, l := range logs {
			if l.TriggerCode != xjob.CodeFail || !strings.Contains(l.TriggerMsg, "stand-in refuses the run") {
				t.Errorf("log %d: trigger %d %q; want 500 with the executor's message", i, l.TriggerCode, l.TriggerMsg)
			}
			if l.ExecutorFailRetryCount != 1-i {
				t.Errorf("log %d: retry count %d, want %d", i, l.ExecutorFailRetryCount, 1-i)
			}
		}
		if logs[0].TriggerType != xjob.TriggerManual || logs[1].TriggerType != xjob.TriggerRetry {
			t.Errorf("trigger types %s, %s; want MANUAL, RETRY", logs[0].TriggerType, logs[1].TriggerType)
		}
		if n := len(ex.received()); n != 2 {
			t.Errorf("executor received %d runs, want 2", n)
		}
	})

	t.Run("ChildJobs", func(t *testing.T) {
		t.Parallel()
		sc := scenario{t, info}
		ex := newStandin(t, info.URL)
		g := sc.group("scn-child", ex.address())
		child := sc.job(g, map[string]any{"jobDesc": "child", "executorParam": "child-param"})
		parent := sc.job(g, map[string]any{"jobDesc": "parent", "childJobIds": []int64{child.ID}})
		orphan := sc.job(g, map[string]any{"jobDesc": "child of a failing parent"})
		failing := sc.job(g, map[string]any{"jobDesc": "failing parent", "executorHandler": handlerFail,
			"childJobIds": []int64{orphan.ID}})

		// The failing parent first: once its completion has run and the
		// successful parent's child (queued later on the same lane) has
		// run too, a wrongly queued child of the failure would show.
		sc.trigger(failing.ID, nil)
		var parentLogs, childLogs, failLogs []xjob.Log
		eventually(t, scenarioWait, "failing parent completed", func() bool {
			failLogs = sc.logs(failing.ID)
			return len(failLogs) == 1 && completed(failLogs[0])
		})
		sc.trigger(parent.ID, nil)
		eventually(t, scenarioWait, "child run after the parent's success", func() bool {
			// The child first: it is triggered only after the parent's
			// result is recorded, so a parent read after it sees that result.
			childLogs = sc.logs(child.ID)
			parentLogs = sc.logs(parent.ID)
			return len(childLogs) > 0 && completed(childLogs[0])
		})

		if len(parentLogs) != 1 || parentLogs[0].HandleCode != xjob.CodeSuccess ||
			!strings.Contains(parentLogs[0].HandleMsg, fmt.Sprintf("[Job ID=%d]", child.ID)) {
			t.Errorf("parent logs %+v; want one success naming child %d", parentLogs, child.ID)
		}
		if len(childLogs) != 1 {
			t.Fatalf("child has %d logs, want 1", len(childLogs))
		}
		c := childLogs[0]
		if c.TriggerType != xjob.TriggerParent || c.HandleCode != xjob.CodeSuccess || c.ExecutorParam != "child-param" ||
			!strings.Contains(c.OccurrenceID, fmt.Sprintf("/PARENT/r%d/", parentLogs[0].ID)) {
			t.Errorf("child log %+v; want PARENT of log %d, own param, success", c, parentLogs[0].ID)
		}
		if failLogs[0].HandleCode != xjob.CodeFail {
			t.Errorf("failing parent handle code %d, want 500", failLogs[0].HandleCode)
		}
		if l := sc.logs(orphan.ID); len(l) != 0 {
			t.Errorf("child of a failed parent was triggered: %+v", l)
		}
		for _, p := range ex.received() {
			if p.JobID == orphan.ID {
				t.Errorf("executor ran the child of a failed parent: %+v", p)
			}
		}
	})

	t.Run("ShardingBroadcast", func(t *testing.T) {
		t.Parallel()
		sc := scenario{t, info}
		const total = 3
		const app = "scn-sharding"
		execs := make([]*standin, total)
		for i := range execs {
			// Executors configured with the xxl-job form of the admin address.
			execs[i] = newStandin(t, info.URL+"/xxl-job-admin/")
			execs[i].register(t, app)
		}
		g := sc.group(app)
		var live struct {
			Items []struct {
				Address string `json:"address"`
			} `json:"items"`
		}
		if sc.call("GET", fmt.Sprintf("/v1/groups/%d/executors", g.ID), nil, &live); len(live.Items) != total {
			t.Fatalf("live executors %+v, want %d", live.Items, total)
		}
		j := sc.job(g, map[string]any{"scheduleConf": "* * * * * ?", "triggerStatus": 1,
			"executorRouteStrategy": string(xjob.RouteShardingBroadcast)})

		// Two fires handled by all shards, then stop and let the last
		// in-flight fire settle.
		fires := func(logs []xjob.Log) map[int64][]xjob.Log {
			m := map[int64][]xjob.Log{}
			for _, l := range logs {
				m[l.ScheduledTime] = append(m[l.ScheduledTime], l)
			}
			return m
		}
		complete := func(logs []xjob.Log) int {
			n := 0
			for _, ls := range fires(logs) {
				if len(ls) == total && !slices.ContainsFunc(ls, func(l xjob.Log) bool { return !completed(l) }) {
					n++
				}
			}
			return n
		}
		eventually(t, scenarioWait, "2 broadcast fires handled", func() bool { return complete(sc.logs(j.ID)) >= 2 })
		if code := sc.call("POST", fmt.Sprintf("/v1/jobs/%d/stop", j.ID), nil, nil); code != http.StatusOK {
			t.Fatalf("stop job: HTTP %d", code)
		}
		// A fire already handed to a lane when the job stopped still runs:
		// wait until the logs stop growing, every fire handled.
		var logs []xjob.Log
		prev := -1
		eventually(t, scenarioWait, "every fire handled by all shards, and no more coming", func() bool {
			logs = sc.logs(j.ID)
			settled := len(logs) == prev && complete(logs) == len(fires(logs))
			prev = len(logs)
			if !settled {
				time.Sleep(time.Second)
			}
			return settled
		})

		byLog := map[int64]xjob.Log{}
		for at, ls := range fires(logs) {
			var params []string
			for _, l := range ls {
				byLog[l.ID] = l
				params = append(params, l.ExecutorShardingParam)
				if l.TriggerType != xjob.TriggerCron || l.HandleCode != xjob.CodeSuccess {
					t.Errorf("fire %d log %d: type %s handle %d", at, l.ID, l.TriggerType, l.HandleCode)
				}
			}
			slices.Sort(params)
			if want := []string{"0/3", "1/3", "2/3"}; !slices.Equal(params, want) {
				t.Errorf("fire %d: sharding params %v, want %v", at, params, want)
			}
		}
		// Each executor runs each fire once, with the shard its log names.
		for i, ex := range execs {
			seen := map[int64]bool{}
			for _, p := range ex.received() {
				l, ok := byLog[p.LogID]
				switch {
				case !ok:
					t.Errorf("executor %d: run of unknown log %d", i, p.LogID)
				case seen[l.ScheduledTime]:
					t.Errorf("executor %d: fire %d ran twice", i, l.ScheduledTime)
				case l.ExecutorAddress != ex.address() ||
					l.ExecutorShardingParam != fire.ShardingParam(p.BroadcastIndex, p.BroadcastTotal) || p.BroadcastTotal != total:
					t.Errorf("executor %d: run %d/%d of log %+v", i, p.BroadcastIndex, p.BroadcastTotal, l)
				}
				seen[l.ScheduledTime] = true
			}
			if len(seen) != len(fires(logs)) {
				t.Errorf("executor %d ran %d of %d fires", i, len(seen), len(fires(logs)))
			}
		}
		t.Logf("%d broadcast fires × %d shards", len(fires(logs)), total)
	})

	t.Run("ManualTriggerOverride", func(t *testing.T) {
		t.Parallel()
		sc := scenario{t, info}
		configured, override := newStandin(t, info.URL), newStandin(t, info.URL)
		// An override may only name the group's own addresses.
		g := sc.group("scn-manual", configured.address(), override.address())
		j := sc.job(g, map[string]any{"executorParam": "job-param"}) // stopped
		occ := sc.trigger(j.ID, map[string]any{"executorParam": "override-param", "addressList": []string{override.address()}})

		var logs []xjob.Log
		eventually(t, scenarioWait, "manual trigger handled", func() bool {
			logs = sc.logs(j.ID)
			return len(logs) == 1 && completed(logs[0])
		})
		l := logs[0]
		if l.OccurrenceID != occ || l.TriggerType != xjob.TriggerManual || l.ExecutorAddress != override.address() ||
			l.ExecutorParam != "override-param" || l.HandleCode != xjob.CodeSuccess {
			t.Errorf("log %+v; want occurrence %s, MANUAL on %s with override-param, success", l, occ, override.address())
		}
		runs := override.received()
		if len(runs) != 1 || runs[0].LogID != l.ID || runs[0].ExecutorParams != "override-param" {
			t.Errorf("override executor runs %+v; want log %d with override-param", runs, l.ID)
		}
		if runs := configured.received(); len(runs) != 0 {
			t.Errorf("the group's executor ran %+v despite the override", runs)
		}
		var after xjob.Job
		sc.call("GET", fmt.Sprintf("/v1/jobs/%d", j.ID), nil, &after)
		if after.TriggerStatus != xjob.StatusStopped {
			t.Errorf("job status %d after a manual trigger, want stopped", after.TriggerStatus)
		}
	})
}
