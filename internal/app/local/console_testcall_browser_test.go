package local

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/chromedp/chromedp"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/target"
	browsertest "github.com/xjobdev/xjob/internal/testenv/browser"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
)

// TestConsoleTestCallInBrowser drives the job form's "Test call" in
// headless Chromium: an HTTP target on loopback is called once as the
// unsaved form stands and its status and first bytes are shown; a
// metadata URL is refused in place with the field named; an AWS target
// sends one message to a queue on fauxqs, and an ARN the operator did
// not list is refused naming --aws-target-arns. No job and no log is
// written by any of it.
func TestConsoleTestCallInBrowser(t *testing.T) {
	ctx := browser(t)
	q := emulator.SQS(t)
	bg := context.Background()
	queueURL, arn := emulator.Queue(t, "xjob-test-call")
	info, _ := runLocal(t, func(c *Config) {
		c.AWSTargetARNs = arn
		awsCfg := emulator.Config()
		c.AWSConfig = &awsCfg
		c.AWSEndpoints = map[string]string{target.ServiceSQS: emulator.Fauxqs(t)}
	})
	h := newHook(t, 0)
	base, group, run := consoleAsAdmin(t, ctx, info, "hooks", "Hooks")
	visible := browsertest.Visible
	choose := func(glue string) chromedp.Tasks {
		return chromedp.Tasks{chromedp.Navigate(fmt.Sprintf("%sjobs/new?group=%d", base, group)), visible("#jobDesc"),
			chromedp.SetValue("#jobDesc", "tried", chromedp.ByQuery), chromedp.SetValue("#scheduleConf", "* * * * * ?", chromedp.ByQuery),
			chromedp.SetValue("#glueType", glue, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelector("#glueType").dispatchEvent(new Event("change", {bubbles: true}))`, nil),
			visible("#test-call")}
	}
	var status, output string
	run("HTTP test call", choose("HTTP"), chromedp.SetValue("#targetMethod", "POST", chromedp.ByQuery),
		chromedp.SetValue("#targetUrl", h.srv.URL+"/probe", chromedp.ByQuery),
		chromedp.SetValue("#targetBody", `{"param":{{param|json}}}`, chromedp.ByQuery),
		chromedp.Click("#test-call", chromedp.ByQuery), visible("#test-call-output"),
		chromedp.Text("#test-call-status", &status, chromedp.ByQuery), chromedp.Text("#test-call-output", &output, chromedp.ByQuery))
	if status != "Succeeded" || !strings.Contains(output, "HTTP 200 OK · POST "+h.srv.URL+"/probe") || !strings.Contains(output, "done /probe") {
		t.Fatalf("HTTP test call shows %q: %q", status, output)
	}
	if c := h.callsTo("/probe"); len(c) != 1 || c[0].Body != `{"param":""}` {
		t.Fatalf("calls = %+v", c)
	}

	var problems string
	run("refused test call", chromedp.SetValue("#targetUrl", "http://169.254.169.254/latest/", chromedp.ByQuery),
		chromedp.Click("#test-call", chromedp.ByQuery), visible("#test-call-problems"),
		chromedp.Text("#test-call-problems", &problems, chromedp.ByQuery))
	if !strings.Contains(problems, "link-local") {
		t.Fatalf("refused test call shows %q", problems)
	}

	run("AWS test call", choose("AWS"), chromedp.SetValue("#awsArn", arn, chromedp.ByQuery),
		chromedp.SetValue("#awsInput", "tried {{logId}}", chromedp.ByQuery),
		chromedp.Click("#test-call", chromedp.ByQuery), visible("#test-call-output"),
		chromedp.Text("#test-call-status", &status, chromedp.ByQuery), chromedp.Text("#test-call-output", &output, chromedp.ByQuery))
	if status != "Succeeded" || !strings.Contains(output, "sent, MessageId ") {
		t.Fatalf("AWS test call shows %q: %q", status, output)
	}
	got, err := q.ReceiveMessage(bg, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), WaitTimeSeconds: 5})
	if err != nil || len(got.Messages) != 1 || aws.ToString(got.Messages[0].Body) != "tried 0" {
		t.Fatalf("received %+v, %v", got, err)
	}
	run("unknown ARN", chromedp.SetValue("#awsArn", arn+"-other", chromedp.ByQuery),
		chromedp.Click("#test-call", chromedp.ByQuery), visible("#test-call-problems"),
		chromedp.Text("#test-call-problems", &problems, chromedp.ByQuery))
	if !strings.Contains(problems, "--aws-target-arns (XJOB_AWS_TARGET_ARNS)") {
		t.Fatalf("unknown ARN shows %q", problems)
	}

	var jobs struct{ Items []xjob.Job }
	v1(t, info, "GET", fmt.Sprintf("/v1/jobs?group=%d", group), "", &jobs)
	var logs logPage
	v1(t, info, "GET", "/v1/logs?limit=10", "", &logs)
	if len(jobs.Items) != 0 || len(logs.Items) != 0 {
		t.Fatalf("a test call wrote jobs %+v or logs %+v", jobs.Items, logs.Items)
	}
}
