package local

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xjobdev/xjob"
	browsertest "github.com/xjobdev/xjob/internal/testenv/browser"
)

// gatedHook is an HTTP target whose calls hang until the test opens the
// gate, so a FIX_DELAY job's run stays out as long as the test needs.
type gatedHook struct {
	srv   *httptest.Server
	gate  chan struct{}
	mu    sync.Mutex
	calls []time.Time
}

func newGatedHook(t *testing.T) *gatedHook {
	t.Helper()
	h := &gatedHook{gate: make(chan struct{})}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.calls = append(h.calls, time.Now())
		h.mu.Unlock()
		select {
		case <-h.gate:
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte("drained"))
	}))
	t.Cleanup(func() {
		h.open()
		h.srv.Close()
	})
	return h
}

func (h *gatedHook) open() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.gate:
	default:
		close(h.gate)
	}
}

func (h *gatedHook) callTimes() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.calls...)
}

// TestConsoleFixDelayJobInBrowser creates a FIX_DELAY job in the console
// form in headless Chromium: a bad delay is refused under its field with
// nothing written; the form's preview says fires follow the previous run;
// while the job's first run hangs, the job list shows its next fire as
// "after the current run" and the job does not fire again; once the run
// ends, the next fire comes the delay later.
func TestConsoleFixDelayJobInBrowser(t *testing.T) {
	ctx := browser(t)
	info, _ := runLocal(t, nil)
	h := newGatedHook(t)
	base, group, run := consoleAsAdmin(t, ctx, info, "drains", "Drains")
	visible := browsertest.Visible

	var note, errs string
	form := func(conf string) chromedp.Tasks {
		return chromedp.Tasks{chromedp.Navigate(fmt.Sprintf("%sjobs/new?group=%d", base, group)), visible("#jobDesc"),
			chromedp.SetValue("#glueType", "HTTP", chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelector("#glueType").dispatchEvent(new Event("change", {bubbles: true}))`, nil),
			visible("#targetUrl"),
			chromedp.SetValue("#jobDesc", "drain", chromedp.ByQuery), chromedp.SetValue("#scheduleConf", conf, chromedp.ByQuery),
			chromedp.SetValue("#scheduleType", "FIX_DELAY", chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelector("#scheduleType").dispatchEvent(new Event("change", {bubbles: true}))`, nil),
			chromedp.SetValue("#targetUrl", h.srv.URL+"/drain", chromedp.ByQuery),
			chromedp.SetValue("#executorTimeout", "120", chromedp.ByQuery)}
	}
	run("bad delay", form("1.5"), chromedp.Click("#save-job", chromedp.ByQuery), visible("#form-errors"),
		chromedp.Text("#form-errors", &errs, chromedp.ByQuery))
	if !strings.Contains(errs, "FIX_DELAY needs a whole number of seconds") {
		t.Fatalf("the form's errors: %q", errs)
	}
	var jobs struct{ Items []xjob.Job }
	v1(t, info, "GET", fmt.Sprintf("/v1/jobs?group=%d", group), "", &jobs)
	if len(jobs.Items) != 0 {
		t.Fatalf("a refused job was written: %+v", jobs.Items)
	}

	run("good delay", form("2"), visible("#preview-note"), chromedp.Text("#preview-note", &note, chromedp.ByQuery),
		chromedp.Click("#start-now", chromedp.ByQuery), chromedp.Click("#save-job", chromedp.ByQuery), visible("table.jobs"))
	if !strings.Contains(note, "after the previous run ends") {
		t.Fatalf("the preview says %q", note)
	}
	v1(t, info, "GET", fmt.Sprintf("/v1/jobs?group=%d", group), "", &jobs)
	if len(jobs.Items) != 1 || jobs.Items[0].ScheduleType != xjob.ScheduleFixDelay || jobs.Items[0].ScheduleConf != "2" {
		t.Fatalf("jobs = %+v", jobs.Items)
	}
	id := jobs.Items[0].ID
	browsertest.ReloadUntil(t, ctx, "after the current run", fmt.Sprintf("%sjobs?group=%d", base, group),
		fmt.Sprintf(`(document.querySelector("#job-%d .after-run") || {}).textContent === "after the current run"`, id))
	if n := len(h.callTimes()); n != 1 {
		t.Fatalf("%d calls while the first run is out, want 1", n)
	}
	var next struct{ Next []string }
	if st := v1(t, info, "GET", fmt.Sprintf("/v1/jobs/%d/next", id), "", &next); st != 200 || next.Next == nil || len(next.Next) != 0 {
		t.Fatalf("next fires while the run is out: %d %+v", st, next)
	}

	released := time.Now()
	h.open()
	browsertest.ReloadUntil(t, ctx, "the second run", fmt.Sprintf("%slogs?job=%d", base, id),
		`document.querySelectorAll("tr.log-row").length >= 2`)
	// The second run's log row is written when its fire is claimed, which
	// local mode may do a few hundred milliseconds ahead of the call: the
	// row can show before the executor is reached.
	eventually(t, 10*time.Second, "the second call", func() bool { return len(h.callTimes()) >= 2 })
	calls := h.callTimes()
	if gap := calls[1].Sub(released); gap < 2*time.Second {
		t.Fatalf("the second run came %s after the first ended, want the 2 s delay", gap)
	}
}
