package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/app/local"
	"github.com/xjobdev/xjob/internal/target"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
)

func TestMain(m *testing.M) { emulator.Main(m) }

// TestAWSJobFromTheCLI: `xjob job create --type aws --arn …` makes a job
// that sends to a queue on fauxqs when triggered; `job update --input`
// changes the input and keeps the ARN; an ARN the server does not allow
// is refused naming its setting, and a server without the list refuses
// AWS jobs.
func TestAWSJobFromTheCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := emulator.SQS(t)
	queueURL, arn := emulator.Queue(t, "xjob-cli")
	s := startLocalWith(t, func(c *local.Config) {
		c.AWSTargetARNs = arn
		awsCfg := emulator.Config()
		c.AWSConfig = &awsCfg
		c.AWSEndpoints = map[string]string{target.ServiceSQS: emulator.Fauxqs(t)}
	})
	mustRun(t, s, "group", "create", "--appname", "aws-jobs", "--title", "AWS")
	created := mustRun(t, s, "job", "create", "--group", "1", "--desc", "enqueue", "--author", "ann", "--type", "aws",
		"--arn", arn, "--input", "first {{param}}", "--param", "p", "-o", "json")
	var j xjob.Job
	if err := json.Unmarshal([]byte(created), &j); err != nil || j.GlueType != xjob.GlueAWS ||
		j.GlueSource != `{"arn":"`+arn+`","input":"first {{param}}"}` {
		t.Fatalf("created %+v, %v", j, err)
	}
	mustRun(t, s, "job", "update", "1", "--input", "second {{param}}")
	mustRun(t, s, "job", "trigger", "1")
	got, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), WaitTimeSeconds: 10})
	if err != nil || len(got.Messages) != 1 || aws.ToString(got.Messages[0].Body) != "second p" {
		t.Fatalf("received %+v, %v", got, err)
	}

	_, errOut, code := s.cli(t, "job", "create", "--group", "1", "--desc", "other", "--author", "ann", "--arn", arn+"-other")
	if code == 0 || !strings.Contains(errOut, "glueSource.arn") || !strings.Contains(errOut, "--aws-target-arns (XJOB_AWS_TARGET_ARNS)") {
		t.Fatalf("unknown ARN: exit %d: %s", code, errOut)
	}
	_, errOut, code = s.cli(t, "job", "update", "1", "--type", "http", "--arn", arn)
	if code == 0 || !strings.Contains(errOut, "describe an AWS job") {
		t.Fatalf("--arn on an HTTP job: exit %d: %s", code, errOut)
	}

	plain := startLocal(t)
	mustRun(t, plain, "group", "create", "--appname", "aws-jobs", "--title", "AWS")
	_, errOut, code = plain.cli(t, "job", "create", "--group", "1", "--desc", "x", "--author", "ann", "--arn", arn)
	if code == 0 || !strings.Contains(errOut, "AWS jobs are not available") {
		t.Fatalf("no allowed ARNs: exit %d: %s", code, errOut)
	}
}
