package local

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// session drives one signed-in browser against one xjob local.
type session struct {
	t    *testing.T
	ctx  context.Context
	info Info
	base string
}

func newSession(t *testing.T) *session {
	t.Helper()
	ctx := browser(t)
	info, _ := runLocal(t, nil)
	return &session{t: t, ctx: ctx, info: info, base: info.URL + "/console/"}
}

func (s *session) run(what string, actions ...chromedp.Action) {
	s.t.Helper()
	if err := chromedp.Run(s.ctx, actions...); err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
}

func (s *session) login(user, pw string) {
	s.t.Helper()
	s.run("sign in "+user, chromedp.Navigate(s.base+"login"), visible("#username"),
		chromedp.SetValue("#username", user, chromedp.ByQuery), chromedp.SetValue("#password", pw, chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery), visible("#stat-jobs"))
}

// eval runs js (awaiting a promise) and decodes its value into out.
func (s *session) eval(what, js string, out any) {
	s.t.Helper()
	s.run(what, chromedp.Evaluate(js, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
}

// refusal waits for the in-place message after the form around sel and
// returns its text.
func (s *session) refusal(what, sel string) string {
	s.t.Helper()
	var text string
	box := fmt.Sprintf(`document.querySelector(%q).closest("form, details").nextElementSibling`, sel)
	s.run(what, chromedp.Poll(box+`?.classList.contains("xhr-error")`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Evaluate(box+`.innerText`, &text))
	return text
}

func visible(sel string) chromedp.Action { return chromedp.WaitVisible(sel, chromedp.ByQuery) }

func (s *session) group(app, title string, manual bool) int64 {
	s.t.Helper()
	var g struct{ ID int64 }
	body := fmt.Sprintf(`{"appname":%q,"title":%q,"addressType":0}`, app, title)
	if manual {
		body = fmt.Sprintf(`{"appname":%q,"title":%q,"addressType":1,"addressList":["http://127.0.0.1:9"]}`, app, title)
	}
	if st := v1(s.t, s.info, "POST", "/v1/groups", body, &g); st != 201 {
		s.t.Fatalf("create group %s: %d", app, st)
	}
	return g.ID
}

func (s *session) job(group int64, desc, schedType, conf, handler string) int64 {
	s.t.Helper()
	var j struct{ ID int64 }
	body := fmt.Sprintf(`{"jobGroup":%d,"jobDesc":%q,"author":"t","scheduleType":%q,"scheduleConf":%q,`+
		`"glueType":"BEAN","executorHandler":%q}`, group, desc, schedType, conf, handler)
	if st := v1(s.t, s.info, "POST", "/v1/jobs", body, &j); st != 201 {
		s.t.Fatalf("create job %s: %d", desc, st)
	}
	return j.ID
}

// TestConsoleRefusalsInBrowser: every refused action shows the server's
// message in place, in the user's language, and writes nothing: Run
// once with an address outside the group (409) or a malformed one (400),
// deleting a group its jobs use (409), Start on a NONE job (409); bulk
// Start names the NONE jobs it skipped. Forms: a non-numeric timeout is
// shown with every other problem, under user-facing names; the change
// password form's problems show under it, for an admin and a normal
// user. The log detail renders xxl-job's trigger markup. A normal user
// counts its own groups only (dashboard and /v1/report) and sees only
// the menus it can use.
func TestConsoleRefusalsInBrowser(t *testing.T) {
	s := newSession(t)
	g := s.group("refuse-app", "Refusals", true)
	other := s.group("other-app", "Other", true)
	none := s.job(g, "manual only", "NONE", "", "h")
	cron := s.job(g, "every hour", "CRON", "0 0 * * * ?", "h")
	otherJob := s.job(other, "other group job", "CRON", "0 0 * * * ?", "h")
	s.job(other, "other group job 2", "CRON", "0 0 * * * ?", "h")
	v1(s.t, s.info, "POST", "/v1/users", fmt.Sprintf(`{"username":"normal","password":"normal-password","role":0,"groupIds":[%d]}`, g), nil)
	s.login("admin", s.info.AdminPassword)

	status := func(form string) int {
		var st int
		s.eval("post "+form, fmt.Sprintf(`(() => { const f = document.querySelector(%q);
			return fetch(f.action, {method: "POST", body: new URLSearchParams(new FormData(f))}).then(r => r.status); })()`, form), &st)
		return st
	}
	logsOf := func(job int64) int {
		var out struct{ Items []struct{ ID int64 } }
		v1(t, s.info, "GET", fmt.Sprintf("/v1/logs?job=%d", job), "", &out)
		return len(out.Items)
	}

	// Run once with an address outside the group: 409, the message in place, no log.
	s.run("trigger page", chromedp.Navigate(fmt.Sprintf("%sjobs/%d/trigger", s.base, cron)), visible("#trigger-go"),
		chromedp.SetValue("#trigger-addresses", "http://10.9.9.9:9999/", chromedp.ByQuery))
	if st := status("#trigger-form"); st != 409 {
		t.Fatalf("run once outside the group: %d, want 409", st)
	}
	s.run("run once outside", chromedp.Click("#trigger-go", chromedp.ByQuery))
	if text := s.refusal("run once outside", "#trigger-go"); !strings.Contains(text, "is not an address of group refuse-app") ||
		!strings.HasPrefix(text, "Refused: Executor addresses:") {
		t.Fatalf("run once outside the group shows %q", text)
	}
	// A malformed address: 400, in place; the old message is replaced.
	s.run("bad address", chromedp.SetValue("#trigger-addresses", "ftp://host/", chromedp.ByQuery))
	if st := status("#trigger-form"); st != 400 {
		t.Fatalf("run once with a malformed address: %d, want 400", st)
	}
	s.run("bad address", chromedp.Click("#trigger-go", chromedp.ByQuery),
		chromedp.Poll(`document.querySelector(".xhr-error")?.innerText.includes("http(s) URL")`, nil,
			chromedp.WithPollingTimeout(10*time.Second)))
	if n := logsOf(cron); n != 0 {
		t.Fatalf("refused runs wrote %d logs", n)
	}

	// Delete a group its jobs use: 409, in place, group kept.
	s.run("groups", chromedp.Navigate(s.base+"groups"), visible(fmt.Sprintf("#group-%d", g)),
		chromedp.Evaluate(`window.confirm = () => true`, nil))
	if st := status(fmt.Sprintf("#group-%d form", g)); st != 409 {
		t.Fatalf("delete a group in use: %d, want 409", st)
	}
	s.run("delete group", chromedp.Click(fmt.Sprintf("#group-%d .group-delete", g), chromedp.ByQuery))
	if text := s.refusal("delete group", fmt.Sprintf("#group-%d .group-delete", g)); !strings.Contains(text, "still has jobs") {
		t.Fatalf("deleting a group in use shows %q", text)
	}
	if st := v1(t, s.info, "GET", fmt.Sprintf("/v1/groups/%d", g), "", nil); st != 200 {
		t.Fatalf("the group in use is gone: %d", st)
	}

	// Start on a NONE job: 409, in place.
	jobs := fmt.Sprintf("%sjobs?group=%d", s.base, g)
	s.run("jobs", chromedp.Navigate(jobs), visible(fmt.Sprintf("#job-%d", none)))
	if st := status(fmt.Sprintf("#job-%d .actions form", none)); st != 409 {
		t.Fatalf("start a NONE job: %d, want 409", st)
	}
	s.run("start none", chromedp.Click(fmt.Sprintf("#job-%d .act-toggle", none), chromedp.ByQuery))
	if text := s.refusal("start none", fmt.Sprintf("#job-%d .act-toggle", none)); !strings.Contains(text, "NONE cannot be started") {
		t.Fatalf("Start on a NONE job shows %q", text)
	}
	// Bulk Start names the NONE job it skipped and starts the other.
	var skipped string
	s.run("bulk start", chromedp.Navigate(jobs), visible("#select-all"), chromedp.Click("#select-all", chromedp.ByQuery),
		chromedp.Click("#bulk-start", chromedp.ByQuery), visible("#skipped"), chromedp.Text("#skipped", &skipped, chromedp.ByQuery))
	if !strings.Contains(skipped, "Skipped") || !strings.Contains(skipped, fmt.Sprintf("#%d manual only", none)) ||
		strings.Contains(skipped, fmt.Sprintf("#%d ", cron)) {
		t.Fatalf("bulk start names the skipped: %q", skipped)
	}
	// The same refusal in Chinese.
	s.run("chinese", chromedp.Click("#lang-zh-CN", chromedp.ByQuery), visible(`html[lang="zh-CN"] main`), chromedp.Navigate(jobs), visible(fmt.Sprintf("#job-%d", none)),
		chromedp.Click(fmt.Sprintf("#job-%d .act-toggle", none), chromedp.ByQuery))
	if text := s.refusal("start none zh", fmt.Sprintf("#job-%d .act-toggle", none)); !strings.Contains(text, "不能启动") ||
		!strings.Contains(text, "调度类型") {
		t.Fatalf("Start on a NONE job in Chinese shows %q", text)
	}
	s.run("english", chromedp.Click("#lang-en", chromedp.ByQuery), visible(`html[lang="en"] main`))

	// The job form: "abc" in Timeout and a bad cron both shown, as typed, by their labels.
	var banner, timeout string
	s.run("job form", chromedp.Navigate(fmt.Sprintf("%sjobs/new?group=%d", s.base, g)), visible("#jobDesc"),
		chromedp.SetValue("#jobDesc", "form check", chromedp.ByQuery),
		chromedp.SetValue("#scheduleConf", "61 * * * * ?", chromedp.ByQuery),
		chromedp.SetValue("#executorHandler", "h", chromedp.ByQuery),
		chromedp.SetValue("#executorTimeout", "abc", chromedp.ByQuery), chromedp.Click("#save-job", chromedp.ByQuery),
		visible("#form-errors"), chromedp.Text("#form-errors", &banner, chromedp.ByQuery),
		chromedp.Value("#executorTimeout", &timeout, chromedp.ByQuery))
	if !strings.Contains(banner, "Timeout: “abc” is not a number") || !strings.Contains(banner, "Cron / seconds:") ||
		strings.Contains(banner, "..") || strings.Contains(banner, "executorTimeout") || timeout != "abc" {
		t.Fatalf("form with two problems: banner %q, timeout field %q", banner, timeout)
	}

	// Change password as an admin: the message is under that form, not under "New user".
	var pwErr string
	s.run("admin password", chromedp.Navigate(s.base+"users"), visible("#pw-current"),
		chromedp.SetValue("#pw-current", "wrong-password", chromedp.ByQuery),
		chromedp.SetValue("#pw-new", "another-long-password", chromedp.ByQuery), chromedp.Click("#pw-save", chromedp.ByQuery),
		visible("#password-form .ferr"), chromedp.Text("#password-form", &pwErr, chromedp.ByQuery))
	var strayErr bool
	s.run("stray", chromedp.Evaluate(`!!document.querySelector("#new-password")?.parentElement.querySelector(".ferr")`, &strayErr))
	if !strings.Contains(pwErr, "is wrong") || strayErr {
		t.Fatalf("admin password change: form %q, error under New user: %v", pwErr, strayErr)
	}

	// Log detail: xxl-job's trigger markup drawn, not shown as text (the
	// manual group's only address refuses connections: the trigger fails).
	var id struct{ LogID int64 }
	v1(t, s.info, "POST", fmt.Sprintf("/v1/jobs/%d/trigger", cron), `{}`, &id)
	var logs struct{ Items []struct{ ID int64 } }
	for deadline := time.Now().Add(15 * time.Second); len(logs.Items) == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the manual trigger left no log")
		}
		v1(t, s.info, "GET", fmt.Sprintf("/v1/logs?job=%d", cron), "", &logs)
	}
	var msg string
	var marks int
	s.run("log detail", chromedp.Navigate(fmt.Sprintf("%slogs/%d", s.base, logs.Items[0].ID)), visible("#trigger-msg"),
		chromedp.Poll(`document.querySelector("#trigger-msg").innerText.includes("Trigger result")`, nil,
			chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Text("#trigger-msg", &msg, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#trigger-msg span.mark").length`, &marks))
	if strings.Contains(msg, "<span") || strings.Contains(msg, "<br") || marks != 1 || !strings.Contains(msg, ">>>>Trigger<<<<") {
		t.Fatalf("trigger message: %d marks, text %q", marks, msg)
	}
	if os.Getenv("XJOB_SCREENSHOTS") == "1" {
		shot(t, s.ctx, "console-log-detail.png")
	}

	// A normal user: its groups' numbers only, its menus only, its password message.
	v1(t, s.info, "POST", fmt.Sprintf("/v1/jobs/%d/trigger", otherJob), `{}`, nil) // a failure the user must not count
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var failed struct{ Items []struct{ ID int64 } }
		v1(t, s.info, "GET", fmt.Sprintf("/v1/logs?job=%d&status=fail", otherJob), "", &failed)
		if len(failed.Items) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other group's trigger never failed")
		}
	}
	s.run("sign out", chromedp.Click("#logout", chromedp.ByQuery), visible("#username"))
	s.login("normal", "normal-password")
	var statJobs, nav string
	s.run("normal dashboard", chromedp.Text("#stat-jobs", &statJobs, chromedp.ByQuery), chromedp.Text("nav", &nav, chromedp.ByQuery))
	if statJobs != "2" {
		t.Fatalf("normal user's job count: %q, want its group's 2 (of 4)", statJobs)
	}
	if strings.Contains(nav, "Executors") || strings.Contains(nav, "Users") || !strings.Contains(nav, "Password") {
		t.Fatalf("normal user's menu: %q", nav)
	}
	var raw string
	s.eval("normal report", `fetch("/v1/report").then(r => r.text())`, &raw)
	if !strings.Contains(raw, `"failCount":1`) {
		t.Fatalf("normal user's /v1/report: %s", raw)
	}
	s.run("normal password", chromedp.Navigate(s.base+"users"), visible("#pw-current"),
		chromedp.SetValue("#pw-current", "normal-password", chromedp.ByQuery),
		chromedp.SetValue("#pw-new", "short", chromedp.ByQuery), chromedp.Click("#pw-save", chromedp.ByQuery),
		visible("#password-form .ferr"), chromedp.Text("#password-form .ferr", &pwErr, chromedp.ByQuery))
	if !strings.Contains(pwErr, "characters") {
		t.Fatalf("normal user's short password: %q", pwErr)
	}
}

// englishWord finds Latin words on a Chinese page; allowed are the proper
// names xxl-job users know in Latin script, time zone labels and units.
var englishWord = regexp.MustCompile(`[A-Za-z][A-Za-z.]+`)

var latinAllowed = map[string]bool{"xjob": true, "GLUE": true, "BEAN": true, "CRON": true, "Cron": true, "Shell": true,
	"Python": true, "Java": true, "PHP": true, "Node.js": true, "PowerShell": true, "UTC": true, "IANA": true,
	"EN": true, "http": true, "https": true, "HTTP": true, "Quartz": true, "Tab": true,
	"AWS": true, "ARN": true, "Lambda": true, "SQS": true, "SNS": true, "EventBridge": true, "Step": true, "Functions": true, "FIFO": true, "JSON": true}

// latinText lists the visible text of the page outside names and code
// (elements marked translate="no", code, pre, svg), with select options.
const latinText = `(() => {
	const out = [];
	const skip = el => !el || el.closest('[translate=no], code, pre, script, style, svg, datalist, .code-editor');
	const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	for (let n; (n = w.nextNode());) {
		const el = n.parentElement, text = n.textContent.trim();
		if (!text || skip(el)) continue;
		if (el.tagName === 'OPTION' ? !el.closest('select').checkVisibility() : !el.checkVisibility()) continue;
		out.push(text);
	}
	for (const el of document.querySelectorAll('[title], [aria-label], input[placeholder]')) {
		if (skip(el) || el.closest('[title]') !== el && el.hasAttribute('title')) continue;
		for (const a of ['title', 'aria-label', 'placeholder']) if (el.getAttribute(a)) out.push(el.getAttribute(a));
	}
	return out;
})()`

// TestConsoleChineseInBrowser walks every page in Simplified and
// Traditional Chinese and fails on any visible English word. It saves
// the Chinese job list screenshot when XJOB_SCREENSHOTS=1.
func TestConsoleChineseInBrowser(t *testing.T) {
	s := newSession(t)
	g := s.group("zh-app", "中文执行器", false)
	slowExecutor(t, s.info.URL, s.info.AccessToken, "zh-app")
	cron := s.job(g, "每小时任务", "CRON", "0 0 * * * ?", "quickJobHandler")
	s.job(g, "手动任务", "NONE", "", "quickJobHandler")
	var glue struct{ ID int64 }
	v1(t, s.info, "POST", "/v1/jobs", fmt.Sprintf(`{"jobGroup":%d,"jobDesc":"脚本任务","author":"t","scheduleType":"NONE",`+
		`"glueType":"GLUE_SHELL","glueSource":"echo 1"}`, g), &glue)
	v1(t, s.info, "POST", "/v1/users", fmt.Sprintf(`{"username":"normal","password":"normal-password","role":0,"groupIds":[%d]}`, g), nil)
	v1(t, s.info, "POST", fmt.Sprintf("/v1/jobs/%d/trigger", cron), `{}`, nil)
	var logs struct{ Items []struct{ ID int64 } }
	for deadline := time.Now().Add(15 * time.Second); len(logs.Items) == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the trigger left no log")
		}
		v1(t, s.info, "GET", fmt.Sprintf("/v1/logs?job=%d", cron), "", &logs)
	}
	pages := []string{"", "jobs", "jobs/new", fmt.Sprintf("jobs/%d/edit", cron), fmt.Sprintf("jobs/%d/trigger", cron),
		fmt.Sprintf("jobs/%d/glue", glue.ID), "logs", fmt.Sprintf("logs/%d", logs.Items[0].ID), "groups", "users", "help"}
	s.login("admin", s.info.AdminPassword)
	for _, lang := range []string{"zh-CN", "zh-TC"} {
		s.run("switch to "+lang, chromedp.Click("#lang-"+lang, chromedp.ByQuery), visible(`html[lang="`+lang+`"] main`))
		for _, page := range pages {
			var texts []string
			s.run(lang+" "+page, chromedp.Navigate(s.base+page), visible("main"),
				chromedp.Evaluate(`document.querySelectorAll("details").forEach(d => d.open = true)`, nil),
				chromedp.Sleep(300*time.Millisecond), // the popups' fragments load
				chromedp.Evaluate(latinText, &texts))
			for _, text := range texts {
				for _, w := range englishWord.FindAllString(text, -1) {
					if !latinAllowed[strings.TrimSuffix(w, ".")] {
						t.Errorf("%s /console/%s shows English %q in %q", lang, page, w, text)
					}
				}
			}
		}
		if lang == "zh-CN" && os.Getenv("XJOB_SCREENSHOTS") == "1" {
			s.run("zh jobs", chromedp.Navigate(fmt.Sprintf("%sjobs?group=%d", s.base, g)), visible("table.jobs"))
			shot(t, s.ctx, "console-jobs-zh.png")
		}
	}
	// The normal user's pages too (its menu, its password page).
	s.run("sign out", chromedp.Click("#logout", chromedp.ByQuery), visible("#username"))
	s.login("normal", "normal-password")
	for _, page := range []string{"", "jobs", "logs", "users", "help"} {
		var texts []string
		s.run("normal "+page, chromedp.Navigate(s.base+page), visible("main"), chromedp.Evaluate(latinText, &texts))
		for _, text := range texts {
			for _, w := range englishWord.FindAllString(text, -1) {
				if !latinAllowed[strings.TrimSuffix(w, ".")] {
					t.Errorf("normal user /console/%s shows English %q in %q", page, w, text)
				}
			}
		}
	}
}

// unlabelled lists the form controls without an accessible name.
const unlabelled = `[...document.querySelectorAll('input, select, textarea, button')]
	.filter(e => e.type !== 'hidden')
	.filter(e => e.tagName === 'BUTTON' ? !(e.textContent.trim() || e.getAttribute('aria-label'))
		: !((e.labels && e.labels.length) || e.getAttribute('aria-label') || e.getAttribute('aria-labelledby')))
	.map(e => e.outerHTML.slice(0, 100))`

// lowContrast lists visible text whose contrast with its background,
// both from the computed styles (backgrounds composited up the tree), is
// under WCAG AA: 4.5:1, or 3:1 for large text.
const lowContrast = `(() => {
	const rgba = c => { const m = c.match(/rgba?\(([^)]+)\)/); return m ? m[1].split(',').map(Number) : null; };
	const lum = p => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
		return 0.2126 * f(p[0]) + 0.7152 * f(p[1]) + 0.0722 * f(p[2]); };
	const over = (c, b) => { const a = c.length < 4 ? 1 : c[3]; return [0, 1, 2].map(k => c[k] * a + b[k] * (1 - a)); };
	const background = el => {
		const layers = [];
		for (let e = el; e; e = e.parentElement) {
			const c = rgba(getComputedStyle(e).backgroundColor);
			if (c && (c.length < 4 || c[3] > 0)) { layers.push(c); if (c.length < 4 || c[3] >= 1) break; }
		}
		let out = [255, 255, 255];
		for (let i = layers.length - 1; i >= 0; i--) out = over(layers[i], out);
		return out;
	};
	const bad = [];
	const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	for (let n; (n = w.nextNode());) {
		const el = n.parentElement;
		// A textarea's text is drawn by the GLUE editor's highlighted copy (checked instead).
		if (!n.textContent.trim() || !el || el.closest('svg, script, style, option, textarea')) continue;
		if (!el.checkVisibility({visibilityProperty: true})) continue;
		const st = getComputedStyle(el), bg = background(el), fg = over(rgba(st.color), bg);
		const l1 = lum(fg), l2 = lum(bg), ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
		const size = parseFloat(st.fontSize), bold = parseInt(st.fontWeight) >= 700;
		const need = size >= 24 || (size >= 18.66 && bold) ? 3 : 4.5;
		if (ratio < need) bad.push(ratio.toFixed(2) + ' ' + el.tagName + '.' + el.className + ': ' + n.textContent.trim().slice(0, 40));
	}
	return bad;
})()`

// TestConsoleAccessibilityInBrowser: on every page every form control
// has a label and all text has AA contrast (from computed styles); the
// favicon loads; a keyboard alone goes create job → run once → log
// detail.
func TestConsoleAccessibilityInBrowser(t *testing.T) {
	s := newSession(t)
	g := s.group("kbd-app", "Keyboard", false)
	slowExecutor(t, s.info.URL, s.info.AccessToken, "kbd-app")
	cron := s.job(g, "a11y job", "CRON", "0 0 * * * ?", "quickJobHandler")
	var glue struct{ ID int64 }
	v1(t, s.info, "POST", "/v1/jobs", fmt.Sprintf(`{"jobGroup":%d,"jobDesc":"glue","author":"t","scheduleType":"NONE",`+
		`"glueType":"GLUE_SHELL","glueSource":"echo 1"}`, g), &glue)
	check := func(page string) {
		t.Helper()
		var missing, low []string
		var icon int
		s.run("a11y "+page, chromedp.Navigate(s.base+page), visible("main"), chromedp.Evaluate(unlabelled, &missing),
			chromedp.Evaluate(lowContrast, &low))
		s.eval("favicon", `fetch(document.querySelector("link[rel=icon]").href).then(r => r.ok ? 200 : r.status)`, &icon)
		for _, m := range missing {
			t.Errorf("/console/%s: control without a label: %s", page, m)
		}
		for _, l := range low {
			t.Errorf("/console/%s: low contrast %s", page, l)
		}
		if icon != 200 {
			t.Errorf("/console/%s: favicon %d", page, icon)
		}
	}
	s.run("login page", chromedp.Navigate(s.base+"login"), visible("#username"))
	check("login")
	s.login("admin", s.info.AdminPassword)
	for _, page := range []string{"", "jobs", "jobs/new", fmt.Sprintf("jobs/%d/trigger", cron),
		fmt.Sprintf("jobs/%d/glue", glue.ID), "logs", "groups", "users", "help"} {
		check(page)
	}

	// Keyboard only: Tab to a control, type, Enter.
	tabTo := func(sel string) {
		t.Helper()
		for range 300 {
			var on bool
			s.run("focus", chromedp.Evaluate(fmt.Sprintf(`document.activeElement?.matches(%q) ?? false`, sel), &on))
			if on {
				return
			}
			s.run("tab", chromedp.KeyEvent(kb.Tab))
		}
		t.Fatalf("Tab never reached %s", sel)
	}
	s.run("jobs page", chromedp.Navigate(fmt.Sprintf("%sjobs?group=%d", s.base, g)), visible("table.jobs"))
	tabTo("#new-job")
	s.run("enter", chromedp.KeyEvent(kb.Enter), visible("#jobDesc"))
	tabTo("#jobDesc")
	s.run("type desc", chromedp.KeyEvent("keyboard job"))
	tabTo("#executorHandler")
	s.run("type handler", chromedp.KeyEvent("quickJobHandler"))
	tabTo("#save-job")
	s.run("save", chromedp.KeyEvent(kb.Enter), visible("p.flash"))
	var jobs struct {
		Items []struct {
			ID          int64
			Description string `json:"jobDesc"`
		}
	}
	v1(t, s.info, "GET", fmt.Sprintf("/v1/jobs?group=%d", g), "", &jobs)
	var kbd int64
	for _, j := range jobs.Items {
		if j.Description == "keyboard job" {
			kbd = j.ID
		}
	}
	if kbd == 0 {
		t.Fatalf("the keyboard's job was not saved: %+v", jobs.Items)
	}
	tabTo(fmt.Sprintf("#job-%d .act-trigger", kbd))
	s.run("run once", chromedp.KeyEvent(kb.Enter), visible("#trigger-go"))
	tabTo("#trigger-go")
	s.run("trigger", chromedp.KeyEvent(kb.Enter), visible("p.flash"))
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		var ok bool
		s.run("log row", chromedp.Navigate(fmt.Sprintf("%slogs?job=%d", s.base, kbd)), visible("main"),
			chromedp.Evaluate(`document.querySelector("tr.log-row .badge.ok") !== null`, &ok))
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the keyboard's run never succeeded")
		}
	}
	tabTo("a.log-detail")
	var param string
	s.run("log detail", chromedp.KeyEvent(kb.Enter), visible("#log-param"), chromedp.Text("h1", &param, chromedp.ByQuery))
	if !strings.Contains(param, "keyboard job") {
		t.Fatalf("log detail heading %q", param)
	}
}

// TestConsoleConveniencesInBrowser: xxl-job-admin's conveniences. The
// cron builder fills the schedule field and the preview follows in the
// job's zone; a NONE job hides its schedule field, a GLUE job's handler
// is read-only and it starts from a hello-world source; the job list's
// "next fires" and "registry" popups load; the log list names jobs; the
// users table names groups.
func TestConsoleConveniencesInBrowser(t *testing.T) {
	s := newSession(t)
	g := s.group("conv-app", "Conveniences", true)
	cron := s.job(g, "named job", "CRON", "0 30 6 * * ?", "h")
	v1(t, s.info, "POST", "/v1/users", fmt.Sprintf(`{"username":"member","password":"member-password","role":0,"groupIds":[%d]}`, g), nil)
	s.login("admin", s.info.AdminPassword)

	var conf, times string
	s.run("cron builder", chromedp.Navigate(fmt.Sprintf("%sjobs/new?group=%d", s.base, g)), visible("#jobDesc"),
		chromedp.SetValue("#timeZone", "Asia/Shanghai", chromedp.ByQuery),
		chromedp.Click("#cron-builder summary", chromedp.ByQuery), visible("#cron-hour-mode"),
		chromedp.SetValue("#cron-second-mode", "at", chromedp.ByQuery), chromedp.SetValue("#cron-second-value", "0", chromedp.ByQuery),
		chromedp.SetValue("#cron-minute-mode", "at", chromedp.ByQuery), chromedp.SetValue("#cron-minute-value", "15", chromedp.ByQuery),
		chromedp.SetValue("#cron-hour-mode", "at", chromedp.ByQuery), chromedp.SetValue("#cron-hour-value", "3", chromedp.ByQuery),
		chromedp.Click("#cron-apply", chromedp.ByQuery),
		// Wait for the builder's own preview: five fires at 03:15:00 in the
		// job's zone. A bare "03:15:00" also matches the preview of the form's
		// default schedule when the test runs a few minutes before 03:15 UTC.
		chromedp.Poll(`(document.querySelector("#preview-times").innerText.match(/03:15:00 CST/g) || []).length === 5`,
			nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Value("#scheduleConf", &conf, chromedp.ByQuery), chromedp.Text("#preview-times", &times, chromedp.ByQuery))
	if conf != "0 15 3 * * ?" || strings.Count(times, "03:15:00 CST") != 5 {
		t.Fatalf("cron builder: %q, preview %q", conf, times)
	}
	var confHidden, readOnly bool
	s.run("none and glue", chromedp.SetValue("#scheduleType", "NONE", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#scheduleType").dispatchEvent(new Event("change", {bubbles: true}))`, nil),
		chromedp.Evaluate(`document.querySelector("label.conf").hidden`, &confHidden),
		chromedp.SetValue("#glueType", "GLUE_SHELL", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#glueType").dispatchEvent(new Event("change", {bubbles: true}))`, nil),
		chromedp.Evaluate(`document.querySelector("#executorHandler").readOnly`, &readOnly),
		chromedp.SetValue("#jobDesc", "hello glue", chromedp.ByQuery), chromedp.Click("#save-job", chromedp.ByQuery),
		visible("p.flash"))
	if !confHidden || !readOnly {
		t.Fatalf("NONE hides the schedule field: %v; GLUE handler read-only: %v", confHidden, readOnly)
	}
	var jobs struct {
		Items []struct {
			Description  string `json:"jobDesc"`
			GlueSource   string `json:"glueSource"`
			ScheduleConf string `json:"scheduleConf"`
		}
	}
	v1(t, s.info, "GET", fmt.Sprintf("/v1/jobs?group=%d", g), "", &jobs)
	var glueSrc string
	for _, j := range jobs.Items {
		if j.Description == "hello glue" {
			glueSrc = j.GlueSource + "|" + j.ScheduleConf
		}
	}
	if !strings.Contains(glueSrc, "hello world") || !strings.HasSuffix(glueSrc, "|") {
		t.Fatalf("new GLUE job: source and schedule %q", glueSrc)
	}

	var next5, registry string
	row := fmt.Sprintf("#job-%d", cron)
	s.run("popups", chromedp.Navigate(fmt.Sprintf("%sjobs?group=%d", s.base, g)), visible(row),
		chromedp.Click(row+" details.pop summary", chromedp.ByQuery),
		chromedp.Poll(`document.querySelectorAll("`+row+` details.pop li").length === 5`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Text(row+" details.pop", &next5, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("`+row+` details.pop")[1].open = true`, nil),
		chromedp.Poll(`document.querySelectorAll("`+row+` details.pop")[1].innerText.includes("127.0.0.1:9")`, nil,
			chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Evaluate(`document.querySelectorAll("`+row+` details.pop")[1].innerText`, &registry))
	if strings.Count(next5, "06:30:00 UTC") != 5 || !strings.Contains(registry, "127.0.0.1:9") {
		t.Fatalf("next fires popup: %q; registry popup %q", next5, registry)
	}

	v1(t, s.info, "POST", fmt.Sprintf("/v1/jobs/%d/trigger", cron), `{}`, nil)
	var name, users string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		var ok bool
		s.run("log list", chromedp.Navigate(fmt.Sprintf("%slogs?job=%d", s.base, cron)), visible("main"),
			chromedp.Evaluate(`document.querySelector("tr.log-row .job-name") !== null`, &ok))
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no log row")
		}
	}
	// The log filter's job search: typing part of a description offers
	// the job; submitting the text filters by that job.
	var options int
	var jobField string
	s.run("job search", chromedp.Navigate(fmt.Sprintf("%slogs?group=%d", s.base, g)), visible("#f-job"),
		chromedp.Focus("#f-job", chromedp.ByQuery), chromedp.KeyEvent("named"), // not SendKeys: it races htmx on the node
		chromedp.Poll(`document.querySelectorAll("#job-options option").length === 1 && 1`, &options,
			chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.SetValue("#f-job", "named job", chromedp.ByQuery), chromedp.Submit("#f-job", chromedp.ByQuery),
		visible(fmt.Sprintf(`#f-job[value="%d"]`, cron)), chromedp.Value("#f-job", &jobField, chromedp.ByQuery))
	if options != 1 || jobField != itoa(cron) {
		t.Fatalf("job search offered %d jobs (want the one named job); the filter reads %q", options, jobField)
	}
	s.run("names", chromedp.Text("tr.log-row .job-name", &name, chromedp.ByQuery),
		chromedp.Navigate(s.base+"users"), visible("#users"), chromedp.Text("#users", &users, chromedp.ByQuery))
	if !strings.Contains(name, "named job") || !strings.Contains(users, "Conveniences") {
		t.Fatalf("log list job %q; users table %q", name, users)
	}
}

// TestConsoleRollingLogContrast: the log detail page while its rolling
// log follows a run (the "following" status line) and once it ended has
// AA contrast; the status line on the dark log was 3.01:1.
func TestConsoleRollingLogContrast(t *testing.T) {
	s := newSession(t)
	g := s.group("roll-app", "Rolling", false)
	slowExecutor(t, s.info.URL, s.info.AccessToken, "roll-app")
	eventually(t, 15*time.Second, "the executor's registration", func() bool {
		var es struct{ Items []struct{ Address string } }
		v1(t, s.info, "GET", fmt.Sprintf("/v1/groups/%d/executors", g), "", &es)
		return len(es.Items) == 1
	})
	job := s.job(g, "rolling", "NONE", "", "slowJobHandler")
	var trig struct{ LogID int64 }
	if st := v1(t, s.info, "POST", fmt.Sprintf("/v1/jobs/%d/trigger", job), `{}`, &trig); st != 200 && st != 202 {
		t.Fatalf("trigger: %d", st)
	}
	var logs struct{ Items []struct{ ID int64 } }
	eventually(t, 15*time.Second, "the trigger's log", func() bool {
		v1(t, s.info, "GET", fmt.Sprintf("/v1/logs?job=%d", job), "", &logs)
		return len(logs.Items) > 0
	})
	s.login("admin", s.info.AdminPassword)
	var low []string
	s.run("rolling log", chromedp.Navigate(fmt.Sprintf("%slogs/%d", s.base, logs.Items[0].ID)), visible("#rolling .following"),
		chromedp.Evaluate(lowContrast, &low))
	for _, l := range low {
		t.Errorf("log detail while following: low contrast %s", l)
	}
}

// TestConsolePageStructure: every list page has one h1, no table header
// cell is empty, and the first Tab reaches a skip link that moves focus
// to the page's content.
func TestConsolePageStructure(t *testing.T) {
	s := newSession(t)
	g := s.group("struct-app", "Structure", true)
	job := s.job(g, "structure", "NONE", "", "h")
	var trig struct{ LogID int64 }
	v1(t, s.info, "POST", fmt.Sprintf("/v1/jobs/%d/trigger", job), `{}`, &trig)
	var logs struct{ Items []struct{ ID int64 } }
	eventually(t, 15*time.Second, "the trigger's log", func() bool {
		v1(t, s.info, "GET", fmt.Sprintf("/v1/logs?job=%d", job), "", &logs)
		return len(logs.Items) > 0
	})
	s.login("admin", s.info.AdminPassword)
	for _, page := range []string{"", "jobs", fmt.Sprintf("logs?job=%d", job), "groups", "users"} {
		var h1, emptyTH int
		var first, afterEnter string
		s.run("structure of /console/"+page, chromedp.Navigate(s.base+page), visible("main"),
			chromedp.Evaluate(`document.querySelectorAll("h1").length`, &h1),
			chromedp.Evaluate(`[...document.querySelectorAll("th")].filter(th => !th.textContent.trim() && !th.querySelector("input")).length`, &emptyTH),
			chromedp.KeyEvent(kb.Tab), chromedp.Evaluate(`document.activeElement.id`, &first),
			chromedp.KeyEvent(kb.Enter), chromedp.Evaluate(`document.activeElement.id`, &afterEnter))
		if h1 != 1 || emptyTH != 0 {
			t.Errorf("/console/%s: %d h1, %d empty header cells; want 1 and 0", page, h1, emptyTH)
		}
		if first != "skip" || afterEnter != "main" {
			t.Errorf("/console/%s: the first Tab reaches %q, Enter then %q; want the skip link, then main", page, first, afterEnter)
		}
	}
}

// TestConsoleFailureReasonsInLists: a failed trigger says why in the log
// list and the dashboard's recent failures, not only "Fail 500" / "500/0"
// until the detail is opened.
func TestConsoleFailureReasonsInLists(t *testing.T) {
	s := newSession(t)
	g := s.group("fail-app", "Failing", true) // its one address refuses connections
	job := s.job(g, "failing", "NONE", "", "h")
	var trig struct{ LogID int64 }
	v1(t, s.info, "POST", fmt.Sprintf("/v1/jobs/%d/trigger", job), `{}`, &trig)
	var logs struct {
		Items []struct {
			ID          int64
			TriggerCode int `json:"triggerCode"`
		}
	}
	eventually(t, 15*time.Second, "the failed trigger", func() bool {
		v1(t, s.info, "GET", fmt.Sprintf("/v1/logs?job=%d", job), "", &logs)
		return len(logs.Items) > 0 && logs.Items[0].TriggerCode != 0
	})
	s.login("admin", s.info.AdminPassword)
	var list, dash string
	s.run("log list", chromedp.Navigate(fmt.Sprintf("%slogs?job=%d", s.base, job)), visible("tr.log-row .reason"),
		chromedp.Text("tr.log-row .reason", &list, chromedp.ByQuery),
		chromedp.Navigate(s.base), visible("#failures .reason"), chromedp.Text("#failures .reason", &dash, chromedp.ByQuery))
	if !strings.Contains(list, "remoting error") {
		t.Errorf("the log list's reason: %q", list)
	}
	if !strings.Contains(dash, "remoting error") {
		t.Errorf("the dashboard's recent failure: %q", dash)
	}
}
