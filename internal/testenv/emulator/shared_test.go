package emulator_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/xjobdev/xjob/internal/testenv/emulator"
)

func TestMain(m *testing.M) { emulator.Main(m) }

func TestEmulatorsAnswer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	if _, err := emulator.DynamoDB(t).ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("dynalite list tables: %v", err)
	}
	c := emulator.SQS(t)
	name := emulator.UniqueName("probe")
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("fauxqs create queue: %v", err)
	}
	if _, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)}); err != nil {
		t.Fatalf("fauxqs get queue url %s: %v", aws.ToString(q.QueueUrl), err)
	}
	if a, b := emulator.UniqueName("x"), emulator.UniqueName("x"); a == b {
		t.Fatalf("UniqueName repeated %q", a)
	}
}
