package awsstack_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/internal/testenv/browser"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/internal/testenv/tool"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/executor"
)

// TestConsoleInBrowserOnAWS drives the console in headless Chromium
// against the emulated AWS deployment, every page an API Gateway event to
// the web function: the first user is created with the admin token as
// docs/aws.md shows; the bare admin URL leads to the console's sign-in;
// the user signs in, creates a job in the form, runs it once from its
// trigger page, and reads the run's log, which the web function fetches
// from the executor.
func TestConsoleInBrowserOnAWS(t *testing.T) {
	ctx := browser.Start(t, 90*time.Second)
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	d, err := awsstack.Start(context.Background(), awsstack.Options{Shards: 2, RingPollers: 1,
		PollWait: time.Second, NoMaintenance: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		if errors.Is(err, emulator.ErrNotInstalled) {
			tool.Missing(t, err)
		}
		t.Fatal(err)
	}
	defer d.Close()

	// An executor the job runs on, in a group of its address.
	const app = "aws-browser"
	addr, stop := sdkExecutor(t, d, app, nil, map[string]executor.HandlerFunc{"quickJobHandler": func(_ context.Context, job *executor.Job) error {
		job.Logf("quick run on aws, param %q", job.Param)
		return nil
	}})
	defer stop()
	api, err := adminclient.New(d.URL(), d.AdminToken())
	if err != nil {
		t.Fatal(err)
	}
	g, err := api.GroupCreate(context.Background(), xjob.Group{AppName: app, Title: "AWS browser",
		AddressType: xjob.AddressManual, AddressList: []string{addr}})
	if err != nil {
		t.Fatalf("group: %v", err)
	}

	// The first user, as docs/aws.md creates it.
	req, _ := http.NewRequest("POST", d.URL()+"/v1/users", strings.NewReader(`{"username":"admin","password":"first-admin-password","role":1}`))
	req.Header.Set("Authorization", "Bearer "+d.AdminToken())
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/users: %d, want 201", res.StatusCode)
	}

	// The bare admin URL leads to the console, which asks for a sign-in.
	var where string
	browser.Run(t, ctx, "open the admin URL", chromedp.Navigate(d.URL()+"/"), browser.Visible("#username"), chromedp.Location(&where))
	if !strings.HasPrefix(where, d.URL()+"/console/login") {
		t.Fatalf("the admin URL led to %s, want the console's sign-in page", where)
	}
	browser.Run(t, ctx, "sign in", chromedp.SetValue("#username", "admin", chromedp.ByQuery),
		chromedp.SetValue("#password", "first-admin-password", chromedp.ByQuery), chromedp.Click("#signin", chromedp.ByQuery),
		browser.Visible("#stat-jobs"))

	// A job from the form (not started), run once from its trigger page.
	base := d.URL() + "/console/"
	browser.Run(t, ctx, "new job", chromedp.Navigate(fmt.Sprintf("%sjobs/new?group=%d", base, g.ID)), browser.Visible("#jobDesc"),
		chromedp.SetValue("#jobDesc", "aws browser job", chromedp.ByQuery), chromedp.SetValue("#scheduleConf", "0 0 3 * * ?", chromedp.ByQuery),
		chromedp.SetValue("#executorHandler", "quickJobHandler", chromedp.ByQuery), chromedp.Click("#save-job", chromedp.ByQuery),
		browser.Visible("table.jobs"))
	jobs, err := api.JobList(context.Background(), adminclient.JobListParams{Group: g.ID})
	if err != nil || len(jobs.Items) != 1 || jobs.Items[0].Description != "aws browser job" {
		t.Fatalf("jobs after the form: %+v, %v", jobs.Items, err)
	}
	id := jobs.Items[0].ID
	browser.Run(t, ctx, "trigger", chromedp.Navigate(fmt.Sprintf("%sjobs/%d/trigger", base, id)), browser.Visible("#trigger-param"),
		chromedp.SetValue("#trigger-param", "from-the-browser", chromedp.ByQuery), chromedp.Click("#trigger-go", chromedp.ByQuery),
		browser.Visible("p.flash"))
	browser.ReloadUntil(t, ctx, "the run's result", fmt.Sprintf("%slogs?job=%d", base, id),
		`document.querySelector("tr.log-row .badge.ok") !== null`)
	browser.Run(t, ctx, "the run's log", chromedp.Click("a.log-detail", chromedp.ByQuery), browser.Visible("#log-param"),
		chromedp.Poll(`document.querySelector("#rolling").innerText.includes('quick run on aws, param "from-the-browser"')`, nil,
			chromedp.WithPollingTimeout(15*time.Second)))
	d.Close()
	if errs := d.Errors(); len(errs) > 0 {
		t.Errorf("invocation errors: %v", errs)
	}
}
