package wiring_test

import (
	"context"
	"fmt"
	"strconv"
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
		if err := wiring.CheckLayout(ctx, ddb, tables.Leases, 4, 16); err != nil {
			t.Fatalf("start %d with 4 shards: %v", i+1, err)
		}
	}
	err = wiring.CheckLayout(ctx, ddb, tables.Leases, 8, 16)
	if err == nil || !strings.Contains(err.Error(), "XJOB_SHARDS=8") || !strings.Contains(err.Error(), "Shards=4") {
		t.Fatalf("8 shards on tables of 4: %v, want a refusal naming both counts", err)
	}
	if _, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tables.Leases),
		Key:              map[string]types.AttributeValue{"name": &types.AttributeValueMemberS{Value: "xjob#layout"}},
		UpdateExpression: aws.String("SET layout = :l"), ExpressionAttributeValues: map[string]types.AttributeValue{
			":l": &types.AttributeValueMemberN{Value: "99"}}}); err != nil {
		t.Fatal(err)
	}
	if err := wiring.CheckLayout(ctx, ddb, tables.Leases, 4, 16); err == nil || !strings.Contains(err.Error(), "layout version 99") {
		t.Fatalf("unknown layout: %v, want a refusal", err)
	}
}

// layoutTables creates fresh tables on dynalite and returns their leases
// table.
func layoutTables(t *testing.T, ddb *dynamodb.Client) string {
	t.Helper()
	tables := dynamostore.TablesWithPrefix(emulator.UniqueName("layout"))
	st, err := dynamostore.New(ddb, dynamostore.Options{Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTables(t.Context()); err != nil {
		t.Fatal(err)
	}
	return tables.Leases
}

// TestCheckLayoutLogPages on dynalite: the log pages a second are
// recorded at the first start and another value is refused with both in
// the message; a layout item written before logPages was recorded means
// 16, so such tables start with the default (which records it) and are
// refused any other value.
func TestCheckLayoutLogPages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		legacy bool  // a layout item without logPages (layout 1, 4 shards) is there first
		starts []int // LogPages of successive starts (4 shards)
		refuse int   // index of the first start refused (-1: none)
		then   int   // the LogPages named as the tables' in the refusal
	}{
		{"fresh, same again", false, []int{1, 1}, -1, 0},
		{"fresh 1 then 16", false, []int{1, 16}, 1, 1},
		{"fresh 4 then 8", false, []int{4, 8}, 1, 4},
		{"fresh 16 then 4", false, []int{16, 16, 4}, 2, 16},
		{"legacy keeps the default", true, []int{16, 16}, -1, 0},
		{"legacy refuses 1", true, []int{1}, 0, 16},
		{"legacy recorded then refuses 8", true, []int{16, 8}, 1, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			ddb := emulator.DynamoDB(t)
			leases := layoutTables(t, ddb)
			key := map[string]types.AttributeValue{"name": &types.AttributeValueMemberS{Value: "xjob#layout"}}
			if tt.legacy {
				if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(leases), Item: map[string]types.AttributeValue{
					"name": key["name"], "layout": &types.AttributeValueMemberN{Value: "1"}, "shards": &types.AttributeValueMemberN{Value: "4"}}}); err != nil {
					t.Fatal(err)
				}
			}
			for i, pages := range tt.starts {
				err := wiring.CheckLayout(ctx, ddb, leases, 4, pages)
				if i != tt.refuse {
					if err != nil {
						t.Fatalf("start %d with LogPages %d: %v", i+1, pages, err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("XJOB_LOG_PAGES=%d", pages)) ||
					!strings.Contains(err.Error(), fmt.Sprintf("LogPages=%d", tt.then)) {
					t.Fatalf("start %d with LogPages %d: %v, want a refusal naming %d and the tables' %d", i+1, pages, err, pages, tt.then)
				}
				break
			}
			// The item records what the accepted starts ran with.
			out, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(leases), Key: key, ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			want := tt.starts[0]
			if tt.refuse == 0 { // nothing recorded over the legacy item: it still means 16
				if _, ok := out.Item["logPages"]; ok {
					t.Fatalf("a refused start recorded logPages %v", out.Item["logPages"])
				}
				return
			}
			if v, ok := out.Item["logPages"].(*types.AttributeValueMemberN); !ok || v.Value != strconv.Itoa(want) {
				t.Fatalf("layout item logPages %v, want %d", out.Item["logPages"], want)
			}
		})
	}
}
