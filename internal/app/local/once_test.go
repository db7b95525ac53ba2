package local

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
)

// One-time schedules end to end: a ONCE job whose instant is
// inside the scan's 5 s pre-read window is accepted and fires at its
// instant, once; afterwards KEEP leaves it stopped and DELETE deletes it
// once its run has a final result (here after its retry failed too).
func TestLocalOnceJobs(t *testing.T) {
	t.Parallel()
	info, _ := runLocal(t, func(c *Config) { c.AccessToken = scenarioAccessToken })
	sc := scenario{t, info}
	ex := newStandin(t, info.URL)
	g := sc.group("once", ex.address())

	// 3.5-4.5 s ahead: inside the pre-read window, with room for the setup
	// requests on a busy machine (an instant already past is refused).
	at := time.Now().Add(4500 * time.Millisecond).Truncate(time.Second)
	keep := sc.job(g, map[string]any{"scheduleType": "ONCE", "scheduleConf": at.Format(time.RFC3339Nano),
		"triggerStatus": 1, "executorHandler": handlerOK})
	del := sc.job(g, map[string]any{"scheduleType": "ONCE", "scheduleConf": at.In(time.FixedZone("", 3600)).Format(time.RFC3339Nano),
		"triggerStatus": 1, "afterCompletion": "DELETE", "executorHandler": handlerFail, "executorFailRetryCount": 1})

	var next struct {
		Next []string `json:"next"`
	}
	if code := sc.call("GET", fmt.Sprintf("/v1/jobs/%d/next", keep.ID), nil, &next); code != http.StatusOK ||
		len(next.Next) != 1 || !mustTime(t, next.Next[0]).Equal(at) {
		t.Fatalf("job next = HTTP %d %v, want exactly %s", code, next.Next, at)
	}

	var logs []xjob.Log
	eventually(t, scenarioWait, "the KEEP job's run", func() bool {
		logs = sc.logs(keep.ID)
		return len(logs) == 1 && completed(logs[0])
	})
	if logs[0].ScheduledTime != at.UnixMilli() || logs[0].TriggerType != xjob.TriggerCron {
		t.Errorf("KEEP run = %s at %d, want CRON at %d", logs[0].TriggerType, logs[0].ScheduledTime, at.UnixMilli())
	}
	var got xjob.Job
	if code := sc.call("GET", fmt.Sprintf("/v1/jobs/%d", keep.ID), nil, &got); code != http.StatusOK ||
		got.TriggerStatus != xjob.StatusStopped || got.AfterCompletion != xjob.AfterKeep {
		t.Errorf("KEEP job after its run: HTTP %d status %d afterCompletion %q, want a stopped KEEP job", code, got.TriggerStatus, got.AfterCompletion)
	}

	eventually(t, scenarioWait, "the DELETE job deleted after its retry failed", func() bool {
		return sc.call("GET", fmt.Sprintf("/v1/jobs/%d", del.ID), nil, nil) == http.StatusNotFound
	})
	logs = sc.logs(del.ID)
	if len(logs) != 2 || logs[0].TriggerType != xjob.TriggerCron || logs[1].TriggerType != xjob.TriggerRetry {
		t.Errorf("DELETE job logs = %v, want its run and one retry", logs)
	}

	// A past instant cannot be started; a stopped job may hold one.
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	var bad map[string]any
	if code := sc.call("POST", "/v1/jobs", map[string]any{"jobGroup": g.ID, "jobDesc": "late", "author": "t",
		"scheduleType": "ONCE", "scheduleConf": past, "executorHandler": handlerOK, "triggerStatus": 1}, &bad); code != http.StatusBadRequest {
		t.Errorf("running ONCE job in the past: HTTP %d %v, want 400", code, bad)
	}
	if code := sc.call("POST", "/v1/jobs", map[string]any{"jobGroup": g.ID, "jobDesc": "late", "author": "t",
		"scheduleType": "CRON", "scheduleConf": "0 0 * * * ?", "afterCompletion": "DELETE", "executorHandler": handlerOK}, &bad); code != http.StatusBadRequest {
		t.Errorf("DELETE on a CRON job: HTTP %d %v, want 400", code, bad)
	}
	// Each ran once: the window push and the scan did not double a fire.
	if n := len(ex.received()); n != 3 {
		t.Errorf("executor received %d runs, want 3 (KEEP run, DELETE run, its retry)", n)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return v
}
