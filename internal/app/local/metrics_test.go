package local

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/promtext"
)

// GET /metrics serves Prometheus' text format behind the admin token: a
// scrape without it is refused, one with it sees a scheduled run counted,
// its fire delay in the histogram and the executor online.
func TestLocalPrometheusMetrics(t *testing.T) {
	t.Parallel()
	info, _ := runLocal(t, func(c *Config) { c.AccessToken = scenarioAccessToken })
	scrape := func(token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", info.URL+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := scrape(""); code != http.StatusUnauthorized {
		t.Fatalf("scrape without the admin token: HTTP %d, want 401", code)
	}

	sc := scenario{t, info}
	ex := newStandin(t, info.URL)
	ex.register(t, "prom")
	g := sc.group("prom")
	j := sc.job(g, map[string]any{"scheduleType": "ONCE", "triggerStatus": 1,
		"scheduleConf": time.Now().Add(2 * time.Second).Truncate(time.Second).Format(time.RFC3339)})
	eventually(t, scenarioWait, "the scheduled run's result", func() bool {
		logs := sc.logs(j.ID)
		return len(logs) == 1 && logs[0].HandleCode == xjob.CodeSuccess
	})
	code, text := scrape(info.AdminToken)
	if code != http.StatusOK {
		t.Fatalf("scrape: HTTP %d", code)
	}
	got := promtext.Samples(t, text)
	for series, want := range map[string]float64{
		`xjob_triggers_total{result="success",type="CRON"}`: 1,
		`xjob_results_total{result="success"}`:              1,
		`xjob_fire_delay_seconds_count`:                     1,
		`xjob_callback_latency_seconds_count`:               1,
		`xjob_executors_online{app="prom"}`:                 1,
		`xjob_runs_today{result="success"}`:                 1,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present %t), want %v", series, v, ok, want)
		}
	}
	for _, series := range []string{
		`xjob_queue_depth{queue="fast"}`, `xjob_scan_tick_duration_seconds_count`, `process_start_time_seconds`,
	} {
		if _, ok := got[series]; !ok {
			t.Errorf("scrape lacks %s", series)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}
