package dynamostore_test

import (
	"errors"
	"math"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"

	"github.com/xjobdev/xjob/pkg/awstest"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/driver/drivertest"
	"github.com/xjobdev/xjob/pkg/dynamostore"
)

func TestMain(m *testing.M) { awstest.Main(m) }

// setup returns a store on fresh tables of the shared dynalite server.
func setup(t *testing.T, opts dynamostore.Options) *dynamostore.DB {
	t.Helper()
	opts.Tables = dynamostore.TablesWithPrefix(awstest.UniqueName("t"))
	db, err := dynamostore.New(awstest.DynamoDB(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTables(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestStoreContract(t *testing.T) {
	t.Parallel()
	drivertest.Exercise(t, func(t *testing.T) driver.Store {
		// Small id blocks and two partitions exercise the merge and the
		// block refill within the suite's few logs.
		return setup(t, dynamostore.Options{Shards: 4, LogPartitions: 3, LogIDBlock: 2})
	})
}

func TestCreateTablesIdempotent(t *testing.T) {
	t.Parallel()
	db := setup(t, dynamostore.Options{})
	if err := db.CreateTables(t.Context()); err != nil {
		t.Fatalf("second CreateTables: %v", err)
	}
}

// A dispatcher that crashed between writing the occurrence marker and the
// log leaves a marker without a log: the next delivery of the occurrence
// writes the log under the marker's id and wins.
func TestLogCreateRepairsOrphanMarker(t *testing.T) {
	t.Parallel()
	opts := dynamostore.Options{Tables: dynamostore.TablesWithPrefix(awstest.UniqueName("t"))}
	api := awstest.DynamoDB(t)
	db, err := dynamostore.New(api, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := db.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = api.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(opts.Tables.Occurrences), Item: map[string]types.AttributeValue{
		dynamostore.AttrOccurrenceID: &types.AttributeValueMemberS{Value: "j1/t5/s0"},
		"logId":                      &types.AttributeValueMemberN{Value: "777"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: "j1/t5/s0", JobID: 1, GroupID: 2, TriggerType: xjob.TriggerCron, TriggerTime: 5})
	if err != nil || l.ID != 777 {
		t.Fatalf("create over an orphan marker: id %d, %v", l.ID, err)
	}
	again, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: "j1/t5/s0", JobID: 1, GroupID: 2, TriggerType: xjob.TriggerCron, TriggerTime: 6})
	if !errors.Is(err, xjob.ErrConflict) || again.ID != 777 || again.TriggerTime != 5 {
		t.Fatalf("duplicate create: %+v, %v", again, err)
	}
	// The TTL attribute is written (trigger time + 30 days, in seconds).
	out, err := api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(opts.Tables.Logs),
		Key: map[string]types.AttributeValue{dynamostore.AttrID: &types.AttributeValueMemberN{Value: "777"}}})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := out.Item[dynamostore.AttrPurgeAt].(*types.AttributeValueMemberN); !ok || v.Value != "2592000" {
		t.Fatalf("purgeAt = %#v, want 2592000", out.Item[dynamostore.AttrPurgeAt])
	}
}

func TestSortKeyOrder(t *testing.T) {
	t.Parallel()
	pairs := [][2]int64{{math.MinInt64, 0}, {-5, 3}, {-1, math.MaxInt64}, {0, 0}, {0, 1}, {1, -1}, {1_700_000_000_000, 2}, {math.MaxInt64, math.MaxInt64}}
	for i := 1; i < len(pairs); i++ {
		a, b := dynamostore.SortKey(pairs[i-1][0], pairs[i-1][1]), dynamostore.SortKey(pairs[i][0], pairs[i][1])
		if a >= b || len(a) != len(b) {
			t.Fatalf("SortKey%v = %q not below SortKey%v = %q", pairs[i-1], a, pairs[i], b)
		}
	}
}

func TestNewRequiresTables(t *testing.T) {
	t.Parallel()
	if _, err := dynamostore.New(nil, dynamostore.Options{}); err == nil {
		t.Fatal("New without table names succeeded")
	}
}
