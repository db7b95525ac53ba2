package local

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
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
	out, err := q.CreateQueue(bg, &sqs.CreateQueueInput{QueueName: aws.String(emulator.UniqueName("xjob-test-call"))})
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := q.GetQueueAttributes(bg, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	arn := attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	info, _ := runLocal(t, func(c *Config) {
		c.AWSTargetARNs = arn
		awsCfg := emulator.Config()
		c.AWSConfig = &awsCfg
		c.AWSEndpoints = map[string]string{target.ServiceSQS: emulator.Fauxqs(t)}
	})
	h := newHook(t, 0)
	var group struct{ ID int64 }
	if st := v1(t, info, "POST", "/v1/groups", `{"appname":"hooks","title":"Hooks","addressType":0}`, &group); st != 201 {
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
	choose := func(glue string) chromedp.Tasks {
		return chromedp.Tasks{chromedp.Navigate(fmt.Sprintf("%sjobs/new?group=%d", base, group.ID)), visible("#jobDesc"),
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
	got, err := q.ReceiveMessage(bg, &sqs.ReceiveMessageInput{QueueUrl: out.QueueUrl, WaitTimeSeconds: 5})
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
	v1(t, info, "GET", fmt.Sprintf("/v1/jobs?group=%d", group.ID), "", &jobs)
	var logs logPage
	v1(t, info, "GET", "/v1/logs?limit=10", "", &logs)
	if len(jobs.Items) != 0 || len(logs.Items) != 0 {
		t.Fatalf("a test call wrote jobs %+v or logs %+v", jobs.Items, logs.Items)
	}
}
