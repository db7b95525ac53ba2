package dynamostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
)

// Name claims find a job by its name without scanning the jobs table.
//
// Each named job has a claim item in the console table: partition
// "jobname#<name>", sort key the job's id. An executor declaring its jobs
// looks a name up with one strongly consistent Query of that partition and
// a consistent BatchGetItem of the claimed jobs, keeping those whose name
// still is the one looked up. A global index on the name would be cheaper
// to keep but its reads lag the writes, and the duplicate check after two
// executors create one declared job at once (the admin keeps the lowest
// id) needs to see the other's job at once.
//
// Invariant: every job with a name has a claim for it; a claim without
// its job, or whose job now has another name, is harmless, as lookups read
// the job. So a claim is written before the job write that gives the name,
// and removed only after the write that takes the name away, and only when
// no later write claimed it again: a claim holds claimVer, the job version
// of the write that made it (never lowered), and the clean-up after the
// write that produced version w deletes the claim only while claimVer < w.
//
// JobDelete leaves the claim: it runs in the callback function too, whose
// role cannot write the console table. A lookup that finds a confirmed
// claim whose job is gone deletes it. An insert's claim is confirmed only
// once its job is stored, so a lookup racing the insert (two executors
// declaring one job) leaves it; and the delete is conditional on the
// claim's gen, a random value each insert renews, so a job inserted again
// under that id since the lookup read (imports give ids) keeps its claim.
//
// Tables from before the claims have none: the first lookup after an
// upgrade backfills them with one scan of the jobs table and records that
// it did (partition "jobname-backfill"); no later lookup scans.
const (
	consoleNamePrefix   = "jobname#"
	consoleNameBackfill = "jobname-backfill"
	attrClaimVer        = "claimVer"
	attrClaimGen        = "gen"
	attrClaimConfirmed  = "confirmed"
	// attrPrevName is set by JobUpdate to the name the job had before the
	// update (SET evaluates against the old item), so that the update's
	// own result says which claim to clean up.
	attrPrevName = "prevName"
)

func claimKey(name string, id int64) item {
	return item{AttrPK: s(consoleNamePrefix + name), AttrSK: s(SortKey(0, id))}
}

// claimName makes sure a claim of name for job id exists with claimVer at
// least ver, renewing its gen, and returns that gen. A job insert
// (inserting, ver 1) keeps a higher claimVer left by a deleted job of the
// same id rather than failing, and leaves the claim unconfirmed until its job is stored
// (confirmName): a lookup meanwhile finds no job and must not drop it.
// Other writes claim for a job that exists, confirmed at once.
func (db *DB) claimName(ctx context.Context, name string, id, ver int64, inserting bool) (int64, error) {
	if name == "" {
		return 0, nil
	}
	gen := int64(rand.Uint32())
	var u update
	u.Set(AttrID, n(id))
	u.Set(attrClaimGen, n(gen))
	var cond *string
	if inserting {
		u.SetExpr(attrClaimVer, "if_not_exists("+u.name(attrClaimVer)+", "+u.val(n(ver))+")")
		u.Remove(attrClaimConfirmed)
	} else {
		u.Set(attrClaimVer, n(ver))
		u.Set(attrClaimConfirmed, &types.AttributeValueMemberBOOL{Value: true})
		cond = aws.String("attribute_not_exists(" + u.name(AttrPK) + ") OR " + u.name(attrClaimVer) + " < " + u.val(n(ver)))
	}
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Console, Key: claimKey(name, id),
		UpdateExpression: aws.String(u.String()), ConditionExpression: cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if err != nil && !condFailed(err) { // failed: a later write's claim is there
		return 0, fmt.Errorf("claim name %q for job %d: %w", name, id, err)
	}
	return gen, nil
}

// confirmName marks an inserted job's claim confirmed, unless another
// insert of the id claimed it since (gen changed).
func (db *DB) confirmName(ctx context.Context, name string, id, gen int64) error {
	if name == "" {
		return nil
	}
	var u update
	u.Set(attrClaimConfirmed, &types.AttributeValueMemberBOOL{Value: true})
	cond := u.name(attrClaimGen) + " = " + u.val(n(gen))
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Console, Key: claimKey(name, id),
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if err != nil && !condFailed(err) {
		return fmt.Errorf("confirm name %q of job %d: %w", name, id, err)
	}
	return nil
}

// releaseName deletes job id's claim of name unless a write that produced
// version ver or later claimed it.
func (db *DB) releaseName(ctx context.Context, name string, id, ver int64) error {
	if name == "" {
		return nil
	}
	var e expr
	cond := e.name(attrClaimVer) + " < " + e.val(n(ver))
	_, err := db.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &db.t.Console, Key: claimKey(name, id),
		ConditionExpression: &cond, ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
	if err != nil && !condFailed(err) {
		return fmt.Errorf("release name %q of job %d: %w", name, id, err)
	}
	return nil
}

// JobListByName returns the jobs named name from their claims (see the
// comment on the claims above), in id order.
func (db *DB) JobListByName(ctx context.Context, name string) ([]xjob.Job, error) {
	if name == "" {
		return nil, nil
	}
	jobs, err := db.jobsByName(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("dynamo job list by name %q: %w", name, err)
	}
	return jobs, nil
}

func (db *DB) jobsByName(ctx context.Context, name string) ([]xjob.Job, error) {
	if err := db.backfillNames(ctx); err != nil {
		return nil, err
	}
	var e expr
	in := &dynamodb.QueryInput{TableName: &db.t.Console, ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String(e.name(AttrPK) + " = " + e.val(s(consoleNamePrefix+name)))}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	claims, err := followPages(nil, func(start map[string]types.AttributeValue) (readPage, error) {
		in.ExclusiveStartKey = start
		res, err := db.api.Query(ctx, in)
		if err != nil {
			return readPage{}, err
		}
		return readPage{res.Items, res.LastEvaluatedKey}, nil
	})
	if err != nil {
		return nil, err
	}
	keys := make([]item, len(claims))
	for i, c := range claims {
		keys[i] = jobKey(c.int(AttrID))
	}
	items, err := db.batchGet(ctx, db.t.Jobs, keys, true)
	if err != nil {
		return nil, err
	}
	all, err := db.decodeJobsGlue(ctx, items, true)
	if err != nil {
		return nil, err
	}
	live := map[int64]bool{}
	for _, j := range all {
		live[j.ID] = true
	}
	for _, c := range claims {
		if live[c.int(AttrID)] {
			continue
		}
		if b, ok := c[attrClaimConfirmed].(*types.AttributeValueMemberBOOL); !ok || !b.Value {
			continue // its insert may not have stored the job yet
		}
		var e expr
		cond := e.name(attrClaimGen) + " = " + e.val(n(c.int(attrClaimGen)))
		_, err := db.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &db.t.Console,
			Key: item{AttrPK: c[AttrPK], AttrSK: c[AttrSK]}, ConditionExpression: &cond,
			ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
		if err != nil && !condFailed(err) {
			return nil, fmt.Errorf("drop the claim of deleted job %d: %w", c.int(AttrID), err)
		}
	}
	jobs := slices.DeleteFunc(all, func(j xjob.Job) bool { return j.Name != name })
	slices.SortFunc(jobs, func(a, b xjob.Job) int { return cmp.Compare(a.ID, b.ID) })
	return jobs, nil
}

// backfillNames claims the names of jobs stored before the claims existed,
// once per table: it scans the jobs table, claims each named job's name
// with the job's version, and records that it did. Concurrent backfills
// (several functions starting after an upgrade) write the same claims.
func (db *DB) backfillNames(ctx context.Context) error {
	if db.namesReady.Load() {
		return nil
	}
	marker := item{AttrPK: s(consoleNameBackfill), AttrSK: s("done")}
	_, err := db.getItem(ctx, db.t.Console, marker)
	if err == nil {
		db.namesReady.Store(true)
		return nil
	}
	if !errors.Is(err, xjob.ErrNotFound) {
		return fmt.Errorf("name claims backfill marker: %w", err)
	}
	items, err := db.scanAll(ctx, &dynamodb.ScanInput{TableName: &db.t.Jobs, ConsistentRead: aws.Bool(true),
		ProjectionExpression:     aws.String("#i, #n, #v"),
		ExpressionAttributeNames: map[string]string{"#i": AttrID, "#n": "jobName", "#v": "version"}})
	if err != nil {
		return fmt.Errorf("name claims backfill: %w", err)
	}
	for _, it := range items {
		if it.int(AttrID) < 0 {
			continue // a GLUE source item (glue.go)
		}
		if _, err := db.claimName(ctx, it.str("jobName"), it.int(AttrID), it.int("version"), false); err != nil {
			return fmt.Errorf("name claims backfill: %w", err)
		}
	}
	marker["jobs"] = n(int64(len(items)))
	if _, err := db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Console, Item: marker}); err != nil {
		return fmt.Errorf("name claims backfill marker: %w", err)
	}
	db.namesReady.Store(true)
	return nil
}
