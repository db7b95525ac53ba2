package wiring_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
)

func TestMain(m *testing.M) { emulator.Main(m) }

// TestCheckLayout on dynalite: the first start records the layout and the
// shard count; the same again passes; another shard count is refused with
// the recorded count in the message; tables of a layout the code does not
// know are refused.
func TestCheckLayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ddb := emulator.DynamoDB(t)
	tables := dynamostore.TablesWithPrefix(emulator.UniqueName("layout"))
	st, err := dynamostore.New(ddb, dynamostore.Options{Tables: tables, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := wiring.CheckLayout(ctx, ddb, tables.Leases, 4); err != nil {
			t.Fatalf("start %d with 4 shards: %v", i+1, err)
		}
	}
	err = wiring.CheckLayout(ctx, ddb, tables.Leases, 8)
	if err == nil || !strings.Contains(err.Error(), "XJOB_SHARDS=8") || !strings.Contains(err.Error(), "Shards=4") {
		t.Fatalf("8 shards on tables of 4: %v, want a refusal naming both counts", err)
	}
	if _, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tables.Leases),
		Key:              map[string]types.AttributeValue{"name": &types.AttributeValueMemberS{Value: "xjob#layout"}},
		UpdateExpression: aws.String("SET layout = :l"), ExpressionAttributeValues: map[string]types.AttributeValue{
			":l": &types.AttributeValueMemberN{Value: "99"}}}); err != nil {
		t.Fatal(err)
	}
	if err := wiring.CheckLayout(ctx, ddb, tables.Leases, 4); err == nil || !strings.Contains(err.Error(), "layout version 99") {
		t.Fatalf("unknown layout: %v, want a refusal", err)
	}
}
