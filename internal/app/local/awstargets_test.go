package local

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/target"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
)

func TestMain(m *testing.M) { emulator.Main(m) }

// TestAWSJobsEndToEnd runs an AWS job in xjob local against fauxqs: the
// operator lists a queue's ARN, a job naming it sends a message at every
// fire with the result in the log, and a job naming another ARN is
// refused at save with the flag named and nothing written.
func TestAWSJobsEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := emulator.SQS(t)
	queueURL, arn := emulator.Queue(t, "xjob-aws-job")
	info, _ := runLocal(t, func(c *Config) {
		c.AWSTargetARNs = arn
		awsCfg := emulator.Config()
		c.AWSConfig = &awsCfg
		c.AWSEndpoints = map[string]string{target.ServiceSQS: emulator.Fauxqs(t)}
	})
	base, tok := info.URL, info.AdminToken
	var g xjob.Group
	if code := api(t, base, tok, "POST", "/v1/groups", map[string]any{"appname": "aws-jobs", "title": "aws", "addressType": 0}, &g); code != http.StatusCreated {
		t.Fatalf("create group: %d", code)
	}
	job := func(arn string) map[string]any {
		return map[string]any{"jobGroup": g.ID, "jobDesc": "queue it", "author": "test", "scheduleType": "FIX_RATE", "scheduleConf": "1",
			"glueType": "AWS", "executorParam": "nightly", "triggerStatus": 1,
			"glueSource": `{"arn":"` + arn + `","input":"{{param}} #{{logId}}"}`}
	}
	var refused struct {
		Problems []xjob.FieldProblem `json:"problems"`
	}
	if code := apiRaw(t, base, tok, "POST", "/v1/jobs", job(arn+"x"), &refused); code != http.StatusBadRequest ||
		len(refused.Problems) != 1 || refused.Problems[0].Field != "glueSource.arn" || !strings.Contains(refused.Problems[0].Message, "--aws-target-arns (XJOB_AWS_TARGET_ARNS)") {
		t.Fatalf("unknown ARN: %d %+v", code, refused)
	}
	var page struct {
		Items []xjob.Job `json:"items"`
	}
	if api(t, base, tok, "GET", "/v1/jobs", nil, &page); len(page.Items) != 0 {
		t.Fatalf("a refused job was written: %+v", page.Items)
	}
	var j xjob.Job
	if code := api(t, base, tok, "POST", "/v1/jobs", job(arn), &j); code != http.StatusCreated {
		t.Fatalf("create AWS job: %d", code)
	}
	var logs logPage
	eventually(t, 20*time.Second, "a successful AWS run", func() bool {
		logs = logPage{}
		api(t, base, tok, "GET", fmt.Sprintf("/v1/logs?job=%d&status=success&limit=10", j.ID), nil, &logs)
		return len(logs.Items) > 0
	})
	l := logs.Items[0]
	if l.ExecutorAddress != target.Address || !strings.Contains(l.HandleMsg, "sent, MessageId ") || !strings.Contains(l.TriggerMsg, "built-in (AWS job)") {
		t.Fatalf("log = %+v", l)
	}
	got, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), WaitTimeSeconds: 5, MaxNumberOfMessages: 10})
	if err != nil || len(got.Messages) == 0 || !strings.HasPrefix(aws.ToString(got.Messages[0].Body), "nightly #") {
		t.Fatalf("received %+v, %v", got, err)
	}
}
