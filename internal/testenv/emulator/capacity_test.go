package emulator_test

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	stypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/xjobdev/xjob/internal/testenv/emulator"
)

// The capacity benchmarks measure how many requests a second the emulators
// answer on this machine, with 16 concurrent clients (the order of the
// emulated deployment's pollers and batch workers). They explain the rates
// `make cost` runs at: a workload whose requests per second exceed these
// is measured on the emulators' queueing, not on xjob's latency.
//
//	go test -run '^$' -bench Capacity -benchtime 3s ./internal/testenv/emulator

const capacityClients = 16

// BenchmarkCapacityDynalitePutItem: single-item puts of a ~300-byte item,
// each with a condition, as the store's writes are; into a table without
// indexes and into one with three keys-only indexes (as the log table of
// the per-log layout had).
func BenchmarkCapacityDynalitePutItem(b *testing.B) {
	for _, indexes := range []int{0, 3} {
		b.Run(fmt.Sprintf("indexes=%d", indexes), func(b *testing.B) { benchmarkPutItem(b, indexes) })
	}
}

func benchmarkPutItem(b *testing.B, indexes int) {
	c := emulator.DynamoDB(b)
	ctx := b.Context()
	table := emulator.UniqueName("cap")
	in := &dynamodb.CreateTableInput{TableName: aws.String(table),
		AttributeDefinitions: []dtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: dtypes.ScalarAttributeTypeN}},
		KeySchema:            []dtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: dtypes.KeyTypeHash}},
		BillingMode:          dtypes.BillingModePayPerRequest}
	if indexes > 0 {
		in.AttributeDefinitions = append(in.AttributeDefinitions, dtypes.AttributeDefinition{AttributeName: aws.String("tkey"), AttributeType: dtypes.ScalarAttributeTypeS})
	}
	for i := range indexes {
		pk := "p" + strconv.Itoa(i)
		in.AttributeDefinitions = append(in.AttributeDefinitions, dtypes.AttributeDefinition{AttributeName: aws.String(pk), AttributeType: dtypes.ScalarAttributeTypeN})
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, dtypes.GlobalSecondaryIndex{IndexName: aws.String("i" + pk),
			KeySchema: []dtypes.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: dtypes.KeyTypeHash},
				{AttributeName: aws.String("tkey"), KeyType: dtypes.KeyTypeRange}},
			Projection: &dtypes.Projection{ProjectionType: dtypes.ProjectionTypeKeysOnly}})
	}
	if _, err := c.CreateTable(ctx, in); err != nil {
		b.Fatal(err)
	}
	if err := dynamodb.NewTableExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, time.Minute); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	body := fmt.Sprintf("%0300d", 0)
	b.SetParallelism(capacityClients)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := next.Add(1)
			item := map[string]dtypes.AttributeValue{
				"id":   &dtypes.AttributeValueMemberN{Value: strconv.FormatInt(id, 10)},
				"body": &dtypes.AttributeValueMemberS{Value: body},
			}
			if indexes > 0 {
				item["tkey"] = &dtypes.AttributeValueMemberS{Value: fmt.Sprintf("%020d", id)}
			}
			for i := range indexes {
				item["p"+strconv.Itoa(i)] = &dtypes.AttributeValueMemberN{Value: strconv.FormatInt(id%8, 10)}
			}
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item,
				ConditionExpression: aws.String("attribute_not_exists(id)")})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}

// BenchmarkCapacityFauxqsSendReceive: one SendMessageBatch of 10 small
// messages, then receives and DeleteMessageBatch until the 10 are back:
// what a ring or lane hand-off and its event-source poller cost.
func BenchmarkCapacityFauxqsSendReceive(b *testing.B) {
	c := emulator.SQS(b)
	ctx := b.Context()
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(emulator.UniqueName("cap"))})
	if err != nil {
		b.Fatal(err)
	}
	var requests atomic.Int64
	b.SetParallelism(capacityClients)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		entries := make([]stypes.SendMessageBatchRequestEntry, 10)
		for i := range entries {
			entries[i] = stypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)),
				MessageBody: aws.String(`{"jobId":1,"fireTime":1764000000000}`)}
		}
		for pb.Next() {
			if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: entries}); err != nil {
				b.Error(err)
				return
			}
			requests.Add(1)
			for got := 0; got < 10; {
				out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				if err != nil {
					b.Error(err)
					return
				}
				requests.Add(1)
				if len(out.Messages) == 0 {
					continue
				}
				del := make([]stypes.DeleteMessageBatchRequestEntry, len(out.Messages))
				for i, m := range out.Messages {
					del[i] = stypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
				}
				if _, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q.QueueUrl, Entries: del}); err != nil {
					b.Error(err)
					return
				}
				requests.Add(1)
				got += len(out.Messages)
			}
		}
	})
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(requests.Load())/s, "requests/s")
	b.ReportMetric(float64(10*b.N)/s, "messages/s")
}
