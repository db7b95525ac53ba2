package local

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/xjobdev/xjob"
	browsertest "github.com/xjobdev/xjob/internal/testenv/browser"
)

// TestConsoleHTTPJobInBrowser drives the job form for an HTTP job in
// headless Chromium: choosing HTTP shows the target fields, a metadata
// URL is refused under its field with nothing written, a good target with
// a secret header is saved and fires against a loopback endpoint, and the
// edit form shows the secret only as a reference, which saving back keeps.
func TestConsoleHTTPJobInBrowser(t *testing.T) {
	ctx := browser(t)
	info, _ := runLocal(t, nil)
	h := newHook(t, 0)
	base, group, run := consoleAsAdmin(t, ctx, info, "hooks", "Hooks")
	visible := browsertest.Visible
	var text string
	var hidden bool

	form := func(desc, url string) chromedp.Tasks {
		return chromedp.Tasks{chromedp.Navigate(fmt.Sprintf("%sjobs/new?group=%d", base, group)), visible("#jobDesc"),
			chromedp.Evaluate(`document.querySelector("#http-target").hidden`, &hidden),
			chromedp.SetValue("#glueType", "HTTP", chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelector("#glueType").dispatchEvent(new Event("change", {bubbles: true}))`, nil),
			visible("#targetUrl"),
			chromedp.SetValue("#jobDesc", desc, chromedp.ByQuery), chromedp.SetValue("#scheduleConf", "* * * * * ?", chromedp.ByQuery),
			chromedp.SetValue("#targetMethod", "POST", chromedp.ByQuery), chromedp.SetValue("#targetUrl", url, chromedp.ByQuery),
			chromedp.SetValue("#targetSecretHeaders", "Authorization: Bearer b-secret", chromedp.ByQuery),
			chromedp.SetValue("#targetBody", `{"log":{{logId}}}`, chromedp.ByQuery)}
	}
	run("metadata URL", form("bad hook", "http://169.254.169.254/latest/"), chromedp.Click("#save-job", chromedp.ByQuery),
		visible("#form-errors"), chromedp.Text("#http-target", &text, chromedp.ByQuery))
	if !hidden {
		t.Fatal("the target fields show before HTTP is chosen")
	}
	if !strings.Contains(text, "link-local") {
		t.Fatalf("the target's error: %q", text)
	}
	var jobs struct{ Items []xjob.Job }
	v1(t, info, "GET", fmt.Sprintf("/v1/jobs?group=%d", group), "", &jobs)
	if len(jobs.Items) != 0 {
		t.Fatalf("a refused job was written: %+v", jobs.Items)
	}

	run("good hook", form("good hook", h.srv.URL+"/console"), chromedp.Click("#start-now", chromedp.ByQuery),
		chromedp.Click("#save-job", chromedp.ByQuery), visible("table.jobs"))
	v1(t, info, "GET", fmt.Sprintf("/v1/jobs?group=%d", group), "", &jobs)
	if len(jobs.Items) != 1 || jobs.Items[0].GlueType != xjob.GlueHTTP {
		t.Fatalf("jobs = %+v", jobs.Items)
	}
	id := jobs.Items[0].ID
	browsertest.ReloadUntil(t, ctx, "fires", fmt.Sprintf("%slogs?job=%d", base, id), `document.querySelector("tr.log-row .badge.ok") !== null`)
	if c := h.callsTo("/console"); len(c) == 0 || c[0].Auth != "Bearer b-secret" {
		t.Fatalf("calls = %+v", c)
	}

	run("edit shows a reference", chromedp.Navigate(fmt.Sprintf("%sjobs/%d/edit", base, id)), visible("#targetSecretHeaders"),
		chromedp.Value("#targetSecretHeaders", &text, chromedp.ByQuery))
	if strings.Contains(text, "b-secret") || !strings.HasPrefix(text, "Authorization: ref:") {
		t.Fatalf("the edit form shows %q", text)
	}
	n := len(h.callsTo("/console"))
	run("save back", chromedp.SetValue("#jobDesc", "good hook, edited", chromedp.ByQuery), chromedp.Click("#save-job", chromedp.ByQuery),
		visible("table.jobs"))
	browsertest.ReloadUntil(t, ctx, "fires after the edit", fmt.Sprintf("%slogs?job=%d", base, id),
		fmt.Sprintf(`document.querySelectorAll("tr.log-row .badge.ok").length > %d`, n))
	c := h.callsTo("/console")
	if c[len(c)-1].Auth != "Bearer b-secret" {
		t.Fatalf("after saving back the secret is %q", c[len(c)-1].Auth)
	}
}

// consoleAsAdmin creates a group (appname, title) through /v1, signs the
// browser ctx in to info's console as admin, and returns the console's
// root URL, the group's id and a run that fails t naming the step: how
// the console tests of target jobs, test calls and FIX_DELAY jobs begin.
func consoleAsAdmin(t *testing.T, ctx context.Context, info Info, appname, title string) (string, int64, func(what string, actions ...chromedp.Action)) {
	t.Helper()
	var group struct{ ID int64 }
	body := fmt.Sprintf(`{"appname":%q,"title":%q,"addressType":0}`, appname, title)
	if st := v1(t, info, "POST", "/v1/groups", body, &group); st != 201 {
		t.Fatalf("create group: %d", st)
	}
	base := info.URL + "/console/"
	visible := browsertest.Visible
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		browsertest.Run(t, ctx, what, actions...)
	}
	run("sign in", chromedp.Navigate(base+"login"), visible("#username"),
		chromedp.SetValue("#username", "admin", chromedp.ByQuery), chromedp.SetValue("#password", info.AdminPassword, chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery), visible("#stat-jobs"))
	return base, group.ID, run
}
