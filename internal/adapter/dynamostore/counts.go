package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// countGroups is the groups a count covers: the given ones, or every
// group (the groups table is small; a job's group cannot be deleted while
// the job exists, so the groups' jobs are all jobs).
func (db *DB) countGroups(ctx context.Context, ids []int64) ([]int64, error) {
	if len(ids) > 0 {
		return ids, nil
	}
	gs, err := db.GroupList(ctx, driver.GroupListParams{})
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(gs))
	for i, g := range gs {
		out[i] = g.ID
	}
	return out, nil
}

// JobCount counts a group's jobs with a COUNT query on the keys-only
// byGroup index when there is no filter to apply to the jobs themselves,
// and pages through JobList otherwise.
func (db *DB) JobCount(ctx context.Context, p driver.JobCountParams) (int, error) {
	groups, err := db.countGroups(ctx, p.GroupIDs)
	if err != nil {
		return 0, fmt.Errorf("dynamo job count: %w", err)
	}
	filtered := p.Status != nil || p.Description != "" || p.Handler != "" || p.Author != ""
	total := 0
	for _, g := range groups {
		if filtered {
			lp := driver.JobListParams{GroupID: g, Status: p.Status, Description: p.Description, Handler: p.Handler,
				Author: p.Author, Limit: 1000}
			for {
				page, err := db.JobList(ctx, lp)
				if err != nil {
					return 0, fmt.Errorf("dynamo job count: %w", err)
				}
				total += len(page.Jobs)
				if page.Next == "" {
					break
				}
				lp.Cursor = page.Next
			}
			continue
		}
		var e expr
		in := &dynamodb.QueryInput{TableName: &db.t.Jobs, IndexName: aws.String(IndexJobsByGroup),
			KeyConditionExpression: aws.String(e.name(AttrGroupID) + " = " + e.val(n(g))), Select: types.SelectCount}
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
		for {
			res, err := db.api.Query(ctx, in)
			if err != nil {
				return 0, fmt.Errorf("dynamo job count: %w", err)
			}
			total += int(res.Count)
			if len(res.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = res.LastEvaluatedKey
		}
	}
	return total, nil
}

// eachLog pages through LogList per group (or once over every group)
// and hands each log to fn until fn returns false.
func (db *DB) eachLog(ctx context.Context, groups []int64, p driver.LogListParams, fn func(xjob.Log) bool) error {
	if len(groups) == 0 {
		groups = []int64{0}
	}
	for _, g := range groups {
		lp := p
		lp.GroupID, lp.Limit, lp.Cursor = g, 1000, ""
		for {
			page, err := db.LogList(ctx, lp)
			if err != nil {
				return err
			}
			for _, l := range page.Logs {
				if !fn(l) {
					return nil
				}
			}
			if page.Next == "" {
				break
			}
			lp.Cursor = page.Next
		}
	}
	return nil
}

// LogCount walks the time index as LogList does, stopping at p.Limit.
func (db *DB) LogCount(ctx context.Context, p driver.LogCountParams) (int, error) {
	total := 0
	err := db.eachLog(ctx, p.GroupIDs, driver.LogListParams{JobID: p.JobID, Status: p.Status, From: p.From, To: p.To},
		func(xjob.Log) bool {
			total++
			return p.Limit <= 0 || total < p.Limit
		})
	if err != nil {
		return 0, fmt.Errorf("dynamo log count: %w", err)
	}
	return total, nil
}
