package dynamostore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// SetLogIDHash replaces db's occurrence hash behind log ids (to force
// collisions in a test).
func SetLogIDHash(db *DB, hash func(occurrenceID string) uint64) { db.idHash = hash }

// LogPageItem reads the stored page item that holds log id.
func LogPageItem(ctx context.Context, db *DB, id int64) (map[string]types.AttributeValue, error) {
	return db.getItem(ctx, db.t.Logs, pageKey(pageOfLog(id)))
}

// LeaseItem reads the stored item of lease name.
func LeaseItem(ctx context.Context, db *DB, name string) (map[string]types.AttributeValue, error) {
	return db.getItem(ctx, db.t.Leases, item{AttrName: s(name)})
}

// ExpireLeaseItem deletes the stored item of lease name, as DynamoDB's
// TTL does once its AttrPurgeAt has passed (dynalite has no TTL).
func ExpireLeaseItem(ctx context.Context, db *DB, name string) error {
	_, err := db.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &db.t.Leases, Key: item{AttrName: s(name)}})
	return err
}

// TablesOf is db's table names.
func TablesOf(db *DB) Tables { return db.t }

// JobItem reads the stored item of job id (a GLUE source item: id −ref).
func JobItem(ctx context.Context, db *DB, id int64) (map[string]types.AttributeValue, error) {
	return db.getItem(ctx, db.t.Jobs, jobKey(id))
}

// SetInlineGlue stores source inline in job id's item and removes its
// source item reference: the job item as written before sources moved out.
func SetInlineGlue(ctx context.Context, db *DB, id int64, source string) error {
	var u update
	u.Set(attrGlueSource, s(source))
	u.Remove(attrGlueRef)
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Jobs, Key: jobKey(id),
		UpdateExpression: aws.String(u.String()), ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	return err
}
