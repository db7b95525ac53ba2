package local

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/xjobdev/xjob"
	browsertest "github.com/xjobdev/xjob/internal/testenv/browser"
	"github.com/xjobdev/xjob/pkg/executor"
)

// browser starts headless Chromium for one local console test.
func browser(t *testing.T) context.Context { return browsertest.Start(t, 110*time.Second) }

// slowExecutor is a loopback executor whose slowJobHandler logs a line
// every 100 ms for a minute (long enough to follow and kill it) and whose
// quickJobHandler succeeds at once.
func slowExecutor(t *testing.T, admin, accessToken, appName string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + ln.Addr().String() + "/"
	ex, err := executor.New(executor.Config{AdminAddresses: []string{admin}, AccessToken: accessToken, AppName: appName,
		Address: addr, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_ = ex.Register("slowJobHandler", func(ctx context.Context, job *executor.Job) error {
		job.Logf("slow run started, param %q", job.Param)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 1; i <= 600; i++ {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
				job.Logf("slow step %d", i)
			}
		}
		return nil
	})
	_ = ex.Register("quickJobHandler", func(_ context.Context, job *executor.Job) error {
		job.Logf("quick run, param %q", job.Param)
		return nil
	})
	if err := ex.Start(); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: ex, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = ex.Shutdown(ctx)
		_ = srv.Close()
	})
}

// v1 calls /v1 with the admin token and decodes the reply into out.
func v1(t *testing.T, info Info, method, path, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, info.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+info.AdminToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if out != nil {
		_ = json.NewDecoder(res.Body).Decode(out)
	}
	return res.StatusCode
}

// TestConsoleInBrowser drives the console in headless Chromium against a
// real xjob local and a loopback executor: sign-in (wrong and right
// password), a bad cron refused inline with nothing written, a good job
// that fires and shows in the logs, a manual trigger with a param, the
// rolling executor log, kill, a normal user refused another group (page
// and /v1), and the Chinese page. It saves the README screenshots to
// docs/ when XJOB_SCREENSHOTS=1.
func TestConsoleInBrowser(t *testing.T) {
	ctx := browser(t)
	info, _ := runLocal(t, nil)
	if info.AdminPassword == "" {
		t.Fatal("first start printed no admin password")
	}
	const app = "browser-app"
	var group struct{ ID int64 }
	if st := v1(t, info, "POST", "/v1/groups", `{"appname":"`+app+`","title":"Browser","addressType":0}`, &group); st != 201 {
		t.Fatalf("create group: %d", st)
	}
	var other struct{ ID int64 }
	v1(t, info, "POST", "/v1/groups", `{"appname":"other-app","title":"Other","addressType":1,"addressList":["http://127.0.0.1:9"]}`, &other)
	v1(t, info, "POST", "/v1/users", fmt.Sprintf(`{"username":"normal","password":"normal-password","role":0,"groupIds":[%d]}`, other.ID), nil)
	slowExecutor(t, info.URL, info.AccessToken, app)

	base := info.URL + "/console/"
	var text string
	visible := browsertest.Visible
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		browsertest.Run(t, ctx, what, actions...)
	}
	login := func(user, pw string) chromedp.Tasks {
		return chromedp.Tasks{chromedp.Navigate(base + "login"), visible("#username"),
			chromedp.SetValue("#username", user, chromedp.ByQuery), chromedp.SetValue("#password", pw, chromedp.ByQuery),
			chromedp.Click("#signin", chromedp.ByQuery)}
	}

	// Sign-in: a wrong password is refused, the printed one works.
	run("wrong password", login("admin", "not-the-password"), visible("#page-error"), chromedp.Text("#page-error", &text, chromedp.ByQuery))
	if !strings.Contains(text, "Wrong") {
		t.Fatalf("wrong password shows %q", text)
	}
	run("sign in", login("admin", info.AdminPassword), visible("#stat-jobs"))

	// A bad cron: inline error, nothing written.
	newJob := func(desc, conf, handler string, start bool) chromedp.Tasks {
		ts := chromedp.Tasks{chromedp.Navigate(fmt.Sprintf("%sjobs/new?group=%d", base, group.ID)), visible("#jobDesc"),
			chromedp.SetValue("#jobDesc", desc, chromedp.ByQuery), chromedp.SetValue("#scheduleConf", conf, chromedp.ByQuery),
			chromedp.SetValue("#executorHandler", handler, chromedp.ByQuery)}
		if start {
			ts = append(ts, chromedp.Click("#start-now", chromedp.ByQuery))
		}
		return append(ts, chromedp.Click("#save-job", chromedp.ByQuery))
	}
	run("bad cron", newJob("browser bad cron", "61 * * * * ?", "quickJobHandler", false), visible("#form-errors"),
		chromedp.Text("#form-errors", &text, chromedp.ByQuery))
	if !strings.Contains(text, "Cron / seconds:") || strings.Contains(text, "..") {
		t.Fatalf("bad cron error: %q", text)
	}
	var jobs struct{ Items []struct{ ID int64 } }
	v1(t, info, "GET", fmt.Sprintf("/v1/jobs?group=%d", group.ID), "", &jobs)
	if len(jobs.Items) != 0 {
		t.Fatalf("a refused job was written: %+v", jobs.Items)
	}
	// The preview follows the cron as it is typed.
	run("preview", chromedp.Evaluate(`document.querySelector("#scheduleConf").value = ""`, nil), chromedp.Focus("#scheduleConf", chromedp.ByQuery), chromedp.KeyEvent("0 0 3 * * ?"),
		visible("#preview-times"), chromedp.Text("#preview-times", &text, chromedp.ByQuery))
	if strings.Count(text, "03:00:00") != 5 {
		t.Fatalf("preview of 0 0 3 * * ?: %q", text)
	}

	// A good job fires every second and shows in the logs; then it is stopped from its row.
	run("good job", newJob("browser every second", "* * * * * ?", "quickJobHandler", true), visible("table.jobs"))
	v1(t, info, "GET", fmt.Sprintf("/v1/jobs?group=%d", group.ID), "", &jobs)
	if len(jobs.Items) != 1 {
		t.Fatalf("jobs after the good one: %+v", jobs.Items)
	}
	good := jobs.Items[0].ID
	reloadUntil := func(what, url, js string) {
		t.Helper()
		browsertest.ReloadUntil(t, ctx, what, url, js)
	}
	const okRow = `document.querySelector("tr.log-row .badge.ok") !== null`
	reloadUntil("fires", fmt.Sprintf("%slogs?job=%d", base, good), okRow)
	run("stop from row", chromedp.Navigate(fmt.Sprintf("%sjobs?group=%d", base, group.ID)), visible("#job-"+itoa(good)),
		chromedp.Click(fmt.Sprintf("#job-%d .act-toggle", good), chromedp.ByQuery), visible("p.flash"))
	v1(t, info, "GET", fmt.Sprintf("/v1/jobs/%d", good), "", &struct{}{})

	// Trigger once with a param; follow the rolling log; kill.
	var slow struct{ ID int64 }
	v1(t, info, "POST", "/v1/jobs", fmt.Sprintf(`{"jobGroup":%d,"jobDesc":"browser slow","author":"t","scheduleType":"NONE",`+
		`"glueType":"BEAN","executorHandler":"slowJobHandler"}`, group.ID), &slow)
	run("trigger with param", chromedp.Navigate(fmt.Sprintf("%sjobs/%d/trigger", base, slow.ID)), visible("#trigger-param"),
		chromedp.SetValue("#trigger-param", "hello-param", chromedp.ByQuery), chromedp.Click("#trigger-go", chromedp.ByQuery),
		visible("p.flash"))
	reloadUntil("triggered", fmt.Sprintf("%slogs?job=%d", base, slow.ID), okRow)
	run("log detail", chromedp.Click("a.log-detail", chromedp.ByQuery), visible("#log-param"), chromedp.Text("#log-param", &text, chromedp.ByQuery))
	if text != "hello-param" {
		t.Fatalf("triggered param: %q", text)
	}
	run("rolling log", chromedp.Poll(`document.querySelector("#rolling").innerText.includes("slow step 3")`, nil,
		chromedp.WithPollingTimeout(15*time.Second)))
	// The rolling log follows its newest lines once they overflow the box.
	run("rolling log follows", chromedp.Poll(`(() => { const el = document.querySelector("#rolling");
		return el.innerText.includes("slow step 60") && el.scrollHeight > el.clientHeight &&
			el.scrollTop + el.clientHeight >= el.scrollHeight - 10; })()`, nil, chromedp.WithPollingTimeout(20*time.Second)))
	if os.Getenv("XJOB_SCREENSHOTS") == "1" {
		shot(t, ctx, "console-log.png")
	}
	run("kill", chromedp.Click("#kill", chromedp.ByQuery), chromedp.Poll(
		`document.querySelector("#handle-result") && document.querySelector("#handle-result").innerText.includes("500")`, nil,
		chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Poll(`document.querySelector("#log-end") !== null`, nil, chromedp.WithPollingTimeout(10*time.Second)))

	// Clear the good job's logs from the logs page's dialog ("all").
	run("clear logs", chromedp.Navigate(fmt.Sprintf("%slogs?job=%d", base, good)), visible("tr.log-row"),
		chromedp.Evaluate(`window.confirm = () => true`, nil), // hx-confirm's dialog, accepted
		chromedp.Click("#clear-logs summary", chromedp.ByQuery), visible("#clear-mode"),
		chromedp.SetValue("#clear-mode", "all", chromedp.ByQuery), chromedp.Click("#clear-submit", chromedp.ByQuery),
		visible("#empty-logs"), chromedp.Text("p.flash", &text, chromedp.ByQuery))
	var left struct{ Items []struct{ ID int64 } }
	v1(t, info, "GET", fmt.Sprintf("/v1/logs?job=%d", good), "", &left)
	if !strings.Contains(text, "Logs deleted") || len(left.Items) != 0 {
		t.Fatalf("clear: flash %q, %d logs left", text, len(left.Items))
	}

	// The GLUE editor: highlighted source, saved versions (from the page
	// and from PUT /v1/jobs/{id}), an older one loaded back.
	var glue xjob.Job
	v1(t, info, "POST", "/v1/jobs", fmt.Sprintf(`{"jobGroup":%d,"jobDesc":"browser glue","author":"t","scheduleType":"NONE",`+
		`"glueType":"GLUE_SHELL","glueSource":"echo one"}`, group.ID), &glue)
	gluePage := fmt.Sprintf("%sjobs/%d/glue", base, glue.ID)
	const glueSrc = `#!/bin/bash\nfor i in 1 2 3; do\n  echo "step $i of $XJOB_PARAM"\n  sleep 1\ndone\nexit 0 # edited`
	run("glue editor", chromedp.Navigate(gluePage), visible(".code-editor #glue-source"),
		chromedp.Evaluate(`(() => { const ta = document.querySelector("#glue-source");
			ta.value = `+"`"+glueSrc+"`"+`; ta.dispatchEvent(new Event("input")); })()`, nil),
		chromedp.Poll(`document.querySelector(".code-editor code .token.comment")?.innerText === "# edited"`, nil,
			chromedp.WithPollingTimeout(5*time.Second)),
		chromedp.SetValue("#glue-remark", "from the page", chromedp.ByQuery), chromedp.Click("#glue-save", chromedp.ByQuery),
		visible("p.flash"))
	v1(t, info, "GET", fmt.Sprintf("/v1/jobs/%d", glue.ID), "", &glue) // the page's save bumped its version
	glue.GlueSource, glue.GlueRemark = "echo three", "through v1"
	body, _ := json.Marshal(glue)
	if st := v1(t, info, "PUT", fmt.Sprintf("/v1/jobs/%d", glue.ID), string(body), nil); st != 200 {
		t.Fatalf("PUT glue job: %d", st)
	}
	run("glue versions", chromedp.Navigate(gluePage), visible(".versions"), chromedp.Text(".versions", &text, chromedp.ByQuery))
	if !strings.Contains(text, "through v1") || !strings.Contains(text, "from the page") {
		t.Fatalf("GLUE versions: %q", text)
	}
	run("glue restore", chromedp.Click(".versions li:nth-child(2) a", chromedp.ByQuery),
		chromedp.Poll(`document.querySelector("#glue-source")?.value === `+"`"+glueSrc+"`", nil, chromedp.WithPollingTimeout(5*time.Second)))
	if os.Getenv("XJOB_SCREENSHOTS") == "1" {
		shot(t, ctx, "console-glue.png")
	}

	// The jobs page (screenshot) and the Chinese page.
	run("jobs page", chromedp.Navigate(fmt.Sprintf("%sjobs?group=%d", base, group.ID)), visible("table.jobs"))
	if os.Getenv("XJOB_SCREENSHOTS") == "1" {
		shot(t, ctx, "console-jobs.png")
	}
	run("chinese", chromedp.Click("#lang-zh-CN", chromedp.ByQuery), visible(`html[lang="zh-CN"] nav`), chromedp.Navigate(base+"jobs"), visible("nav"), chromedp.Text("nav", &text, chromedp.ByQuery))
	if !strings.Contains(text, "调度日志") {
		t.Fatalf("the language choice did not stick: nav %q", text)
	}

	// A normal user is refused the group it lacks, in the page and on /v1.
	run("sign out", chromedp.Click("#logout", chromedp.ByQuery), visible("#username"))
	var status int
	run("normal user", login("normal", "normal-password"), visible("#stat-jobs"),
		chromedp.Navigate(fmt.Sprintf("%sjobs?group=%d", base, group.ID)), chromedp.Text("body", &text, chromedp.ByQuery),
		chromedp.Evaluate(fmt.Sprintf(`fetch("/v1/jobs/%d").then(r => r.status)`, slow.ID), &status,
			func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if !strings.Contains(text, "你没有此执行器的权限") { // the language cookie from the Chinese step
		t.Fatalf("normal user on another group's jobs page sees %q", text)
	}
	if status != http.StatusForbidden {
		t.Fatalf("normal user's session on /v1/jobs/%d: %d, want 403", slow.ID, status)
	}
}

func itoa(v int64) string { return fmt.Sprint(v) }

// shot saves a full-page PNG under docs/ (the README's screenshots).
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "..", "docs", name), png, 0o644); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
}

// TestConsoleKeepsJobName: a job saved in the console keeps its name (the
// key of xjob apply), which the form shows and edits: before, the form had
// no name field and every save wiped it, so the next apply of the same
// manifest planned a duplicate create.
func TestConsoleKeepsJobName(t *testing.T) {
	ctx := browser(t)
	info, _ := runLocal(t, nil)
	var group struct{ ID int64 }
	if st := v1(t, info, "POST", "/v1/groups", `{"appname":"named-app","title":"Named","addressType":1,"addressList":["http://127.0.0.1:9"]}`, &group); st != 201 {
		t.Fatalf("create group: %d", st)
	}
	var job struct {
		ID   int64
		Name string `json:"name"`
	}
	if st := v1(t, info, "POST", "/v1/jobs", fmt.Sprintf(`{"jobGroup":%d,"name":"nightly-report","jobDesc":"report","author":"ops",
		"scheduleType":"CRON","scheduleConf":"0 0 3 * * ?","executorHandler":"quickJobHandler"}`, group.ID), &job); st != 201 {
		t.Fatalf("create job: %d", st)
	}
	base := info.URL + "/console/"
	visible := browsertest.Visible
	var name string
	browsertest.Run(t, ctx, "edit and save", chromedp.Navigate(base+"login"), visible("#username"),
		chromedp.SetValue("#username", "admin", chromedp.ByQuery), chromedp.SetValue("#password", info.AdminPassword, chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery), visible("#stat-jobs"),
		chromedp.Navigate(fmt.Sprintf("%sjobs/%d/edit", base, job.ID)), visible("#jobName"),
		chromedp.Value("#jobName", &name, chromedp.ByQuery),
		chromedp.SetValue("#jobDesc", "report, edited", chromedp.ByQuery), chromedp.Click("#save-job", chromedp.ByQuery),
		chromedp.Poll(`!location.pathname.endsWith("/edit")`, nil, chromedp.WithPollingTimeout(10*time.Second)))
	if name != "nightly-report" {
		t.Fatalf("the form shows name %q", name)
	}
	var got struct {
		Name string `json:"name"`
		Desc string `json:"jobDesc"`
	}
	v1(t, info, "GET", fmt.Sprintf("/v1/jobs/%d", job.ID), "", &got)
	if got.Desc != "report, edited" || got.Name != "nightly-report" {
		t.Fatalf("after a console save: name %q, description %q; want the name kept", got.Name, got.Desc)
	}
	// Renamed in the form: the new name is stored.
	browsertest.Run(t, ctx, "rename", chromedp.Navigate(fmt.Sprintf("%sjobs/%d/edit", base, job.ID)), visible("#jobName"),
		chromedp.SetValue("#jobName", "daily-report", chromedp.ByQuery), chromedp.Click("#save-job", chromedp.ByQuery),
		chromedp.Poll(`!location.pathname.endsWith("/edit")`, nil, chromedp.WithPollingTimeout(10*time.Second)))
	v1(t, info, "GET", fmt.Sprintf("/v1/jobs/%d", job.ID), "", &got)
	if got.Name != "daily-report" {
		t.Fatalf("renamed in the console: name %q", got.Name)
	}
}

// TestConsolePasswordChangeThenAct: after a password change (a new session
// and CSRF token) the next action on the page works; before, the page kept
// the old token in <body hx-headers> and the next POST was refused 403
// until a full reload.
func TestConsolePasswordChangeThenAct(t *testing.T) {
	ctx := browser(t)
	info, _ := runLocal(t, nil)
	base := info.URL + "/console/"
	visible := browsertest.Visible
	change := func(from, to string) chromedp.Tasks {
		return chromedp.Tasks{visible("#pw-current"),
			chromedp.SetValue("#pw-current", from, chromedp.ByQuery), chromedp.SetValue("#pw-new", to, chromedp.ByQuery),
			chromedp.Click("#pw-save", chromedp.ByQuery), visible("p.flash")}
	}
	const next = "a-new-password-1234"
	var flash string
	browsertest.Run(t, ctx, "sign in, change the password twice", chromedp.Navigate(base+"login"), visible("#username"),
		chromedp.SetValue("#username", "admin", chromedp.ByQuery), chromedp.SetValue("#password", info.AdminPassword, chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery), visible("#stat-jobs"),
		chromedp.Navigate(base+"users"), change(info.AdminPassword, next),
		chromedp.Evaluate(`document.querySelector("p.flash").remove()`, nil),
		change(next, info.AdminPassword), chromedp.Text("p.flash", &flash, chromedp.ByQuery))
	if flash == "" {
		t.Fatal("no confirmation after the second change")
	}
	// The second change went through: the original password signs in.
	if st, _ := signIn(t, clientFrom("127.0.0.1"), info.URL, "admin", info.AdminPassword); st != http.StatusSeeOther {
		t.Fatalf("sign-in with the password set by the second change: %d", st)
	}
}

// TestConsoleRefusesDuplicateAppName: a second executor group with an
// app name in use is refused under the field (in English and Chinese)
// and nothing is written; before, it was "Saved." and /v1/apply then
// found "no group" for the name while export listed it twice.
func TestConsoleRefusesDuplicateAppName(t *testing.T) {
	ctx := browser(t)
	info, _ := runLocal(t, nil)
	if st := v1(t, info, "POST", "/v1/groups", `{"appname":"dup-app","title":"First","addressType":0}`, nil); st != 201 {
		t.Fatalf("create group: %d", st)
	}
	base := info.URL + "/console/"
	visible := browsertest.Visible
	var msg, zh string
	var langStatus int
	add := chromedp.Tasks{chromedp.Navigate(base + "groups"), visible("#group-appname"),
		chromedp.SetValue("#group-appname", "dup-app", chromedp.ByQuery), chromedp.SetValue("#group-title", "Second", chromedp.ByQuery),
		chromedp.Click("#save-group", chromedp.ByQuery), visible(".ferr")}
	browsertest.Run(t, ctx, "second group with the same app name", chromedp.Navigate(base+"login"), visible("#username"),
		chromedp.SetValue("#username", "admin", chromedp.ByQuery), chromedp.SetValue("#password", info.AdminPassword, chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery), visible("#stat-jobs"),
		add, chromedp.Text(".ferr", &msg, chromedp.ByQuery),
		// The language switch's form, sent without leaving the page.
		chromedp.Evaluate(`fetch("/console/lang", {method: "POST", body: new URLSearchParams({lang: "zh-CN",
			_csrf: document.querySelector("input[name=_csrf]").value})}).then(r => r.status)`, &langStatus,
			func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }),
		add, chromedp.Text(".ferr", &zh, chromedp.ByQuery))
	if !strings.Contains(msg, "app name of group") || !strings.Contains(zh, "已是执行器") {
		t.Fatalf("the refusal reads %q / %q", msg, zh)
	}
	var groups struct{ Items []struct{ AppName string } }
	v1(t, info, "GET", "/v1/groups", "", &groups)
	n := 0
	for _, g := range groups.Items {
		if g.AppName == "dup-app" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d groups named dup-app after the refusal", n)
	}
}

// TestConsoleRefusalsInFrame: a page a normal user may not see (another
// group's job), or one that is gone (a deleted job), is refused inside
// the console's frame, menu included, rather than as a bare text page;
// and a GLUE job refused by the GLUE policy says so, not "no permission
// for this executor group".
func TestConsoleRefusalsInFrame(t *testing.T) {
	ctx := browser(t)
	info, _ := runLocal(t, nil)
	var mine, other, job struct{ ID int64 }
	v1(t, info, "POST", "/v1/groups", `{"appname":"mine-app","title":"Mine","addressType":1,"addressList":["http://127.0.0.1:9"]}`, &mine)
	v1(t, info, "POST", "/v1/groups", `{"appname":"other-app","title":"Other","addressType":1,"addressList":["http://127.0.0.1:9"]}`, &other)
	v1(t, info, "POST", "/v1/jobs", fmt.Sprintf(`{"jobGroup":%d,"jobDesc":"theirs","author":"ops","scheduleType":"NONE",
		"executorHandler":"h"}`, other.ID), &job)
	if st := v1(t, info, "POST", "/v1/users", fmt.Sprintf(`{"username":"normal","password":"normal-password","role":0,"groupIds":[%d]}`, mine.ID), nil); st != 201 {
		t.Fatalf("create user: %d", st)
	}
	base := info.URL + "/console/"
	visible := browsertest.Visible
	var theirs, gone, glue string
	var menus int
	browsertest.Run(t, ctx, "refusals", chromedp.Navigate(base+"login"), visible("#username"),
		chromedp.SetValue("#username", "normal", chromedp.ByQuery), chromedp.SetValue("#password", "normal-password", chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery), visible("#stat-jobs"),
		chromedp.Navigate(fmt.Sprintf("%sjobs/%d/edit", base, job.ID)), visible("#page-error"),
		chromedp.Text("#page-error", &theirs, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("header nav a").length`, &menus),
		chromedp.Navigate(base+"jobs/999999/glue"), visible("#page-error"), chromedp.Text("#page-error", &gone, chromedp.ByQuery),
		chromedp.Navigate(fmt.Sprintf("%sjobs/new?group=%d", base, mine.ID)), visible("#jobDesc"),
		chromedp.SetValue("#jobDesc", "my glue", chromedp.ByQuery), chromedp.SetValue("#glueType", "GLUE_SHELL", chromedp.ByQuery),
		chromedp.SetValue("#scheduleType", "NONE", chromedp.ByQuery),
		chromedp.Click("#save-job", chromedp.ByQuery), visible(".xhr-error"), chromedp.Text(".xhr-error", &glue, chromedp.ByQuery))
	if !strings.Contains(theirs, "no permission") || menus == 0 {
		t.Errorf("another group's job: %q with %d menu links, want the refusal inside the console's frame", theirs, menus)
	}
	if gone == "" {
		t.Error("a missing job's page shows no message in the frame")
	}
	if !strings.Contains(glue, "Only an admin creates or edits GLUE jobs") {
		t.Errorf("a GLUE job refused by the policy says %q", glue)
	}
}

// TestConsoleRegistryPopupOnce: the registry popup of a job in an
// automatic group lists its live executor once (before: once from the
// group's address list, once from the registry).
func TestConsoleRegistryPopupOnce(t *testing.T) {
	ctx := browser(t)
	info, _ := runLocal(t, nil)
	var group, job struct{ ID int64 }
	v1(t, info, "POST", "/v1/groups", `{"appname":"popup-app","title":"Popup","addressType":0}`, &group)
	v1(t, info, "POST", "/v1/jobs", fmt.Sprintf(`{"jobGroup":%d,"jobDesc":"popup","author":"ops","scheduleType":"NONE",
		"executorHandler":"quickJobHandler"}`, group.ID), &job)
	slowExecutor(t, info.URL, info.AccessToken, "popup-app")
	// The popup loads once: wait until the executor has registered.
	eventually(t, 15*time.Second, "the executor's registration", func() bool {
		var es struct{ Items []struct{ Address string } }
		v1(t, info, "GET", fmt.Sprintf("/v1/groups/%d/executors", group.ID), "", &es)
		return len(es.Items) == 1
	})
	// Saving the group stores its live executors as its address list, as
	// the registry refresh does every 30 s.
	if st := v1(t, info, "PUT", fmt.Sprintf("/v1/groups/%d", group.ID), `{"appname":"popup-app","title":"Popup","addressType":0}`, nil); st != 200 {
		t.Fatalf("update group: %d", st)
	}
	base := info.URL + "/console/"
	visible := browsertest.Visible
	var items int
	row := fmt.Sprintf("#job-%d", job.ID)
	browsertest.Run(t, ctx, "registry popup", chromedp.Navigate(base+"login"), visible("#username"),
		chromedp.SetValue("#username", "admin", chromedp.ByQuery), chromedp.SetValue("#password", info.AdminPassword, chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery), visible("#stat-jobs"),
		chromedp.Navigate(fmt.Sprintf("%sjobs?group=%d", base, group.ID)), visible(row),
		chromedp.Click(row+" details.registry summary", chromedp.ByQuery), visible(row+" ul.executors li"),
		chromedp.Evaluate(fmt.Sprintf(`document.querySelectorAll("%s ul.executors li").length`, row), &items))
	if items != 1 {
		t.Fatalf("the registry popup lists %d entries for one live executor", items)
	}
}

// TestConsoleReportsEveryProblem: a job with a bad alarm e-mail and an
// unknown child job is refused with both problems at once (before, the
// child was reported only once the e-mail was fixed), and nothing is
// written.
func TestConsoleReportsEveryProblem(t *testing.T) {
	ctx := browser(t)
	info, _ := runLocal(t, nil)
	var group struct{ ID int64 }
	v1(t, info, "POST", "/v1/groups", `{"appname":"problem-app","title":"Problems","addressType":1,"addressList":["http://127.0.0.1:9"]}`, &group)
	base := info.URL + "/console/"
	visible := browsertest.Visible
	var banner string
	browsertest.Run(t, ctx, "two problems", chromedp.Navigate(base+"login"), visible("#username"),
		chromedp.SetValue("#username", "admin", chromedp.ByQuery), chromedp.SetValue("#password", info.AdminPassword, chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery), visible("#stat-jobs"),
		chromedp.Navigate(fmt.Sprintf("%sjobs/new?group=%d", base, group.ID)), visible("#jobDesc"),
		chromedp.SetValue("#jobDesc", "two problems", chromedp.ByQuery),
		chromedp.SetValue("#executorHandler", "quickJobHandler", chromedp.ByQuery),
		chromedp.SetValue(`input[name="alarmEmail"]`, "not-an-e-mail", chromedp.ByQuery),
		chromedp.SetValue(`input[name="childJobIds"]`, "999999", chromedp.ByQuery),
		chromedp.Click("#save-job", chromedp.ByQuery), visible("#form-errors"), chromedp.Text("#form-errors", &banner, chromedp.ByQuery))
	if !strings.Contains(banner, "Alarm e-mail") || !strings.Contains(banner, "999999") {
		t.Fatalf("the form reports %q, want the e-mail and the child job", banner)
	}
	var jobs struct{ Items []struct{ ID int64 } }
	v1(t, info, "GET", fmt.Sprintf("/v1/jobs?group=%d", group.ID), "", &jobs)
	if len(jobs.Items) != 0 {
		t.Fatalf("%d jobs written", len(jobs.Items))
	}
}

// TestConsoleCronBuilderKeepsWeekdays: weekdays set in the cron builder
// (MON-FRI) with the day of month left on "every" give "? * MON-FRI";
// before, the builder silently replaced MON-FRI with "?". Both set: both
// stay, and the preview reports the conflict.
func TestConsoleCronBuilderKeepsWeekdays(t *testing.T) {
	ctx := browser(t)
	info, _ := runLocal(t, nil)
	var group struct{ ID int64 }
	v1(t, info, "POST", "/v1/groups", `{"appname":"cron-app","title":"Cron","addressType":1,"addressList":["http://127.0.0.1:9"]}`, &group)
	base := info.URL + "/console/"
	visible := browsertest.Visible
	var weekdays, both string
	set := func(field, mode, value string) chromedp.Tasks {
		return chromedp.Tasks{chromedp.SetValue("#cron-"+field+"-mode", mode, chromedp.ByQuery),
			chromedp.SetValue("#cron-"+field+"-value", value, chromedp.ByQuery)}
	}
	browsertest.Run(t, ctx, "cron builder", chromedp.Navigate(base+"login"), visible("#username"),
		chromedp.SetValue("#username", "admin", chromedp.ByQuery), chromedp.SetValue("#password", info.AdminPassword, chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery), visible("#stat-jobs"),
		chromedp.Navigate(fmt.Sprintf("%sjobs/new?group=%d", base, group.ID)), visible("#jobDesc"),
		chromedp.Click("#cron-builder summary", chromedp.ByQuery), visible("#cron-apply"),
		set("second", "at", "0"), set("minute", "at", "0"), set("hour", "at", "9"), set("week", "at", "MON-FRI"),
		chromedp.Click("#cron-apply", chromedp.ByQuery), chromedp.Value("#scheduleConf", &weekdays, chromedp.ByQuery),
		set("day", "at", "15"), chromedp.Click("#cron-apply", chromedp.ByQuery), chromedp.Value("#scheduleConf", &both, chromedp.ByQuery),
		visible("#preview-error"))
	if weekdays != "0 0 9 ? * MON-FRI" {
		t.Errorf("weekdays from the builder: %q, want 0 0 9 ? * MON-FRI", weekdays)
	}
	if both != "0 0 9 15 * MON-FRI" {
		t.Errorf("day and weekdays both set: %q, want both kept", both)
	}
}
