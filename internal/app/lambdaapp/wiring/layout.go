package wiring

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// LayoutVersion is the table layout these functions read and write. A
// change of layout (item shapes, keys, indexes) that older code would
// misread raises it; functions refuse to start on tables of a layout they
// do not know, instead of misreading them.
const LayoutVersion = 1

// layoutItem is the name of the leases-table item that records the
// layout, the shard count and the log pages a second the tables were
// first used with.
const layoutItem = "xjob#layout"

// defaultLogPages is the log pages a second of tables whose layout item
// predates the logPages attribute: every deployment before it had 16.
const defaultLogPages = 16

// LayoutAPI is what CheckLayout calls.
type LayoutAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// CheckLayout records, on the first start, the layout version, the
// shard count and the log pages a second (dynamostore.Options.LogPages)
// in the leases table (one conditional write), and refuses to start a
// function whose code knows another layout or whose XJOB_SHARDS or
// XJOB_LOG_PAGES differs from the recorded one. A job's shard is fixed
// when it is created and the scan reads shards 0..Shards-1, so a changed
// count would silently strand the jobs of the shards it no longer reads
// (or leave new shards empty while old jobs keep theirs). A job's logs
// are listed from the time index partition LogPages picks for it, so a
// changed LogPages would hide the logs written before from the job's
// log list. A layout item without logPages (written before it was
// recorded) means 16: such tables keep starting with the default and are
// refused another value; the first start with 16 records it.
func CheckLayout(ctx context.Context, api LayoutAPI, leasesTable string, shards, logPages int) error {
	key := map[string]types.AttributeValue{"name": &types.AttributeValueMemberS{Value: layoutItem}}
	samePages := "#p = :p"
	if logPages == defaultLogPages {
		samePages = "(#p = :p OR attribute_not_exists(#p))"
	}
	_, err := api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                &leasesTable,
		Key:                      key,
		UpdateExpression:         aws.String("SET #l = :l, #s = :s, #p = :p"),
		ConditionExpression:      aws.String("attribute_not_exists(#n) OR (#l = :l AND #s = :s AND " + samePages + ")"),
		ExpressionAttributeNames: map[string]string{"#n": "name", "#l": "layout", "#s": "shards", "#p": "logPages"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":l": &types.AttributeValueMemberN{Value: strconv.Itoa(LayoutVersion)},
			":s": &types.AttributeValueMemberN{Value: strconv.Itoa(shards)},
			":p": &types.AttributeValueMemberN{Value: strconv.Itoa(logPages)},
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if err == nil || !errors.As(err, &ccf) {
		if err != nil {
			return fmt.Errorf("table layout: record in %s: %w", leasesTable, err)
		}
		return nil
	}
	out, err := api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &leasesTable, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return fmt.Errorf("table layout: read from %s: %w", leasesTable, err)
	}
	layout, shardsThen := number(out.Item["layout"]), number(out.Item["shards"])
	if layout != LayoutVersion {
		return fmt.Errorf("table layout: the tables hold layout version %d, this code knows version %d: deploy the code that matches the tables (docs/aws.md, upgrades)", layout, LayoutVersion)
	}
	if shardsThen != shards {
		return fmt.Errorf("table layout: XJOB_SHARDS=%d but the tables' jobs are spread over %d shards; a job's shard is fixed when it is created, so changing the count would strand jobs: deploy with Shards=%d", shards, shardsThen, shardsThen)
	}
	pagesThen := defaultLogPages
	if _, ok := out.Item["logPages"]; ok {
		pagesThen = number(out.Item["logPages"])
	}
	return fmt.Errorf("table layout: XJOB_LOG_PAGES=%d but the tables' trigger logs are in %d pages a second; a job's logs are listed from the index partition that count picks, so changing it would hide the logs written before: deploy with LogPages=%d", logPages, pagesThen, pagesThen)
}

func number(v types.AttributeValue) int {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		i, _ := strconv.Atoi(n.Value)
		return i
	}
	return 0
}
