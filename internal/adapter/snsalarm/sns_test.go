package snsalarm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/snsalarm"
	"github.com/xjobdev/xjob/internal/scheduler/alarm"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

func TestMain(m *testing.M) { emulator.Main(m) }

// TestSNSPublishesPayload publishes an alarm to a topic on fauxqs (which
// emulates SNS as well as SQS) with a raw-delivery SQS subscription, and
// reads back exactly the webhook payload.
func TestSNSPublishesPayload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	endpoint := emulator.Fauxqs(t)
	snsc := sns.NewFromConfig(emulator.Config(), func(o *sns.Options) { o.BaseEndpoint = aws.String(endpoint) })
	sqsc := emulator.SQS(t)

	topic, err := snsc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(emulator.UniqueName("alarm"))})
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	q, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(emulator.UniqueName("alarm-sub"))})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	attrs, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("queue arn: %v", err)
	}
	if _, err := snsc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint:   aws.String(attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]),
		Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}

	clk := clock.NewFake(time.UnixMilli(1772366400000))
	a := snsalarm.SNS{API: snsc, TopicARN: aws.ToString(topic.TopicArn), Clock: clk}
	al := driver.Alarm{
		Job: xjob.Job{ID: 7, GroupID: 2, Description: "nightly report", AlarmEmail: "a@example.com"},
		Log: xjob.Log{ID: 99, HandleCode: 500, HandleMsg: "boom"},
	}
	if err := a.Alarm(ctx, al); err != nil {
		t.Fatalf("Alarm: %v", err)
	}
	out, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 5, MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if len(out.Messages) != 1 {
		t.Fatalf("got %d messages, want 1", len(out.Messages))
	}
	var got alarm.Payload
	if err := json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &got); err != nil {
		t.Fatalf("decode %q: %v", aws.ToString(out.Messages[0].Body), err)
	}
	want := alarm.NewPayload(al, clk.Now().UnixMilli())
	if got.Job.ID != want.Job.ID || got.Log.ID != want.Log.ID || got.Log.HandleMsg != "boom" || got.SentAt != want.SentAt ||
		got.Event != alarm.EventJobFailed || len(got.Job.AlarmEmails) != 1 {
		t.Errorf("payload %+v, want %+v", got, want)
	}
}

func TestSNSRequiresTopic(t *testing.T) {
	t.Parallel()
	if err := (snsalarm.SNS{}).Alarm(context.Background(), driver.Alarm{}); err == nil {
		t.Fatal("want an error without API and TopicARN")
	}
}

func TestSubject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		desc string
	}{
		{"plain", "nightly report"},
		{"non-ascii and newline", "日报\nline two"},
		{"long", strings.Repeat("x", 300)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := snsalarm.Subject(driver.Alarm{Job: xjob.Job{ID: 1, Description: tt.desc}, Log: xjob.Log{ID: 2}})
			if len(s) > 100 || !strings.HasPrefix(s, "xjob: job 1 failed (log 2)") {
				t.Errorf("subject %q", s)
			}
			for _, r := range s {
				if r < 0x20 || r > 0x7e {
					t.Errorf("subject %q has %q", s, r)
				}
			}
		})
	}
}
