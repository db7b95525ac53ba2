package target

import (
	"errors"
	"strings"
	"testing"
)

const (
	fnARN    = "arn:aws:lambda:us-east-1:123456789012:function:report"
	queueARN = "arn:aws:sqs:us-east-1:123456789012:jobs"
	topicARN = "arn:aws:sns:eu-west-1:123456789012:alerts"
	busARN   = "arn:aws:events:us-east-1:123456789012:event-bus/default"
	smARN    = "arn:aws:states:us-east-1:123456789012:stateMachine:nightly"
)

func TestParseARN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		arn, service, name, err string
	}{
		{fnARN, ServiceLambda, "report", ""},
		{fnARN + ":live", ServiceLambda, "report:live", ""},
		{queueARN, ServiceSQS, "jobs", ""},
		{queueARN + ".fifo", ServiceSQS, "jobs.fifo", ""},
		{topicARN, ServiceSNS, "alerts", ""},
		{busARN, ServiceEvents, "default", ""},
		{smARN, ServiceStates, "nightly", ""},
		{"arn:aws-cn:sqs:cn-north-1:123456789012:q", ServiceSQS, "q", ""},
		{"", "", "", "not an ARN"},
		{"arn:aws:sqs:us-east-1:123456789012", "", "", "not an ARN"},
		{"arn:aws:s3:::bucket", "", "", "not a region"},
		{"arn:aws:s3:us-east-1:123456789012:bucket", "", "", "not a target"},
		{"arn:aws:sqs:us-east-1:1234:q", "", "", "12 digits"},
		{"arn:gcp:sqs:us-east-1:123456789012:q", "", "", "unknown partition"},
		{"arn:aws:lambda:us-east-1:123456789012:layer:x", "", "", "Lambda function"},
		{"arn:aws:lambda:us-east-1:123456789012:function:a/b", "", "", "Lambda function"},
		{"arn:aws:events:us-east-1:123456789012:rule/x", "", "", "event bus"},
		{"arn:aws:states:us-east-1:123456789012:execution:x:y", "", "", "state machine"},
		{"arn:aws:sqs:us-east-1:123456789012:q*", "", "", "SQS queue"},
	}
	for _, tc := range tests {
		t.Run(tc.arn, func(t *testing.T) {
			t.Parallel()
			a, err := ParseARN(tc.arn)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseARN(%q) = %v, want an error with %q", tc.arn, err, tc.err)
				}
				return
			}
			if err != nil || a.Service != tc.service || a.Name() != tc.name || a.String() != tc.arn {
				t.Fatalf("ParseARN(%q) = %+v (name %q), %v", tc.arn, a, a.Name(), err)
			}
		})
	}
}

func TestAllowList(t *testing.T) {
	t.Parallel()
	al, err := ParseAllowList(fnARN + ", " + queueARN + "\n" + fnARN + "  " + smARN)
	if err != nil {
		t.Fatal(err)
	}
	if al.Len() != 3 || !al.Allows(fnARN) || !al.Allows(smARN) || al.Allows(fnARN+":live") || al.Allows(topicARN) {
		t.Fatalf("allow list %v", al.ARNs())
	}
	if _, err := ParseAllowList(fnARN + ",arn:aws:s3:::b"); err == nil || !strings.Contains(err.Error(), "allowed target ARN") {
		t.Fatalf("bad entry: %v", err)
	}
	if empty, err := ParseAllowList(" , "); err != nil || empty.Len() != 0 || empty.Allows("") {
		t.Fatalf("empty list: %v %v", empty.ARNs(), err)
	}
}

func TestParseAWSRefusesBadSpecs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, field, msg string
	}{
		{"empty", ``, "arn", "is required"},
		{"unknown key", `{"arn":"` + fnARN + `","payload":"{}"}`, "", "not an AWS target spec"},
		{"no arn", `{"input":"{}"}`, "arn", "is required"},
		{"bad arn", `{"arn":"arn:aws:s3:::b"}`, "arn", "not a region"},
		{"lambda not json", `{"arn":"` + fnARN + `","input":"{{param}}"}`, "input", "takes JSON"},
		{"events not json", `{"arn":"` + busARN + `","input":"x"}`, "input", "takes JSON"},
		{"unknown placeholder", `{"arn":"` + queueARN + `","input":"{{nope}}"}`, "input", "unknown placeholder"},
		{"invocation type", `{"arn":"` + fnARN + `","invocationType":"DryRun"}`, "invocationType", "must be"},
		{"invocation type off lambda", `{"arn":"` + queueARN + `","invocationType":"Event"}`, "invocationType", "only to Lambda"},
		{"subject off sns", `{"arn":"` + queueARN + `","subject":"hi"}`, "subject", "only to SNS"},
		{"subject line break", `{"arn":"` + topicARN + `","subject":"a\nb"}`, "subject", "line breaks"},
		{"source off events", `{"arn":"` + smARN + `","source":"x"}`, "source", "only to EventBridge"},
		{"aws source", `{"arn":"` + busARN + `","source":"aws.ec2"}`, "source", "AWS's own"},
		{"fifo without group", `{"arn":"` + queueARN + `.fifo"}`, "messageGroupId", "required by a FIFO"},
		{"group off fifo", `{"arn":"` + queueARN + `","messageGroupId":"g"}`, "messageGroupId", "only to FIFO"},
		{"input too long", `{"arn":"` + queueARN + `","input":"` + strings.Repeat("a", MaxInputLen+1) + `"}`, "input", "at most"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseAWS(tc.src)
			var p Problems
			if !errors.As(err, &p) {
				t.Fatalf("ParseAWS = %v, want Problems", err)
			}
			for _, q := range p {
				if q.Field == tc.field && strings.Contains(q.Message, tc.msg) {
					return
				}
			}
			t.Fatalf("problems %v, want %s: …%s…", p, tc.field, tc.msg)
		})
	}
}

func TestAWSRender(t *testing.T) {
	t.Parallel()
	v := Vars{JobID: 7, LogID: 42, Param: `say "hi"`, ShardIndex: 0, ShardTotal: 1, ScheduleTime: 1772366400000, TriggerTime: 1772366400005}
	tests := []struct {
		name, src string
		want      AWSRequest
		err       string
	}{
		{"lambda default input", `{"arn":"` + fnARN + `"}`, AWSRequest{InvocationType: InvokeSync,
			Input: `{"jobId": 7, "logId": 42, "param": "say \"hi\"", "scheduleTime": "2026-03-01T12:00:00.000Z", "shardIndex": 0, "shardTotal": 1}`}, ""},
		{"lambda async", `{"arn":"` + fnARN + `","invocationType":"Event","input":"{\"p\": {{param|json}}}"}`,
			AWSRequest{InvocationType: InvokeAsync, Input: `{"p": "say \"hi\""}`}, ""},
		{"sqs raw", `{"arn":"` + queueARN + `","input":"{{param}} at {{scheduleTimeMs}}"}`, AWSRequest{Input: `say "hi" at 1772366400000`}, ""},
		{"fifo group", `{"arn":"` + queueARN + `.fifo","input":"x","messageGroupId":"job-{{jobId}}"}`, AWSRequest{Input: "x", MessageGroupID: "job-7"}, ""},
		{"sns subject", `{"arn":"` + topicARN + `","input":"x","subject":"run {{logId}}"}`, AWSRequest{Input: "x", Subject: "run 42"}, ""},
		{"events defaults", `{"arn":"` + busARN + `","input":"{}"}`, AWSRequest{Input: "{}", Source: DefaultEventSource, DetailType: DefaultDetailType}, ""},
		{"states param breaks json", `{"arn":"` + smARN + `","input":"{\"p\": \"{{param}}\"}"}`, AWSRequest{}, "takes JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseAWS(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.Render(v)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Render = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.ARN, tc.want.Token = r.ARN, "xjob-7-42"
			if r != tc.want {
				t.Fatalf("Render =\n%+v\nwant\n%+v", r, tc.want)
			}
		})
	}
}
