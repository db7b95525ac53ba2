package dynamostore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// counterMetricJobs is the counters item holding the jobs that have their
// own per-job metrics (a number set).
const counterMetricJobs = "metric-jobs"

// MetricJobs reports, for each of jobs, whether it has its own per-job
// metric: whether it is one of the first max jobs to ask, across every
// process of the deployment, so that the metrics' cardinality is max
// (plus "other") however many Lambda environments emit them. A job takes
// a place with one conditional write (set not full, or already holds it);
// a job that lost it never gets one, since the set only grows.
func (db *DB) MetricJobs(ctx context.Context, jobs []int64, max int) (map[int64]bool, error) {
	out := make(map[int64]bool, len(jobs))
	for _, job := range jobs {
		id := strconv.FormatInt(job, 10)
		var e expr
		cond := "attribute_not_exists(" + e.name("jobs") + ") OR size(" + e.name("jobs") + ") < " + e.val(n(int64(max))) +
			" OR contains(" + e.name("jobs") + ", " + e.val(&types.AttributeValueMemberN{Value: id}) + ")"
		upd := "ADD " + e.name("jobs") + " " + e.val(&types.AttributeValueMemberNS{Value: []string{id}})
		_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Counters,
			Key: item{AttrName: s(counterMetricJobs)}, UpdateExpression: aws.String(upd), ConditionExpression: &cond,
			ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
		switch {
		case err == nil:
			out[job] = true
		case condFailed(err):
			out[job] = false
		default:
			return nil, fmt.Errorf("dynamo metric jobs: %w", err)
		}
	}
	return out, nil
}
