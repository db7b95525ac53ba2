package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

var _ driver.AuthStore = (*DB)(nil)

// Console table partitions of AuthStore: one item per attempt key and per
// revoked session, each its own partition (a burst of sign-ins against one
// user presses on that user's items only). Both carry AttrPurgeAt, so the
// table's TTL removes them once they no longer matter; reads never rely on
// TTL having run (it lags), they compare expiresAt themselves.
const (
	consoleAttemptPrefix = "attempt#"
	consoleRevokedPrefix = "revoked#"
	attrExpiresAt        = "expiresAt"
	attrCount            = "count"
)

func attemptKey(key string) item                       { return item{AttrPK: s(consoleAttemptPrefix + key), AttrSK: s("a")} }
func revokedKey(id string) item                        { return item{AttrPK: s(consoleRevokedPrefix + id), AttrSK: s("s")} }
func purgeSeconds(ms int64) int64                      { return ms/1000 + 1 }
func attemptWindowEnd(p driver.AttemptAddParams) int64 { return p.Now + p.Window.Milliseconds() }

// maxAttemptRounds bounds AttemptAdd's retries when windows start
// concurrently (each round is lost only to another add that succeeded).
const maxAttemptRounds = 8

// AttemptAdd adds one to a live window (a conditional ADD, atomic under
// concurrency), or starts a window with a conditional put when there is
// none or it ended; a put lost to a concurrent one goes round again.
func (db *DB) AttemptAdd(ctx context.Context, p driver.AttemptAddParams) (int, error) {
	for range maxAttemptRounds {
		var up update
		up.Add(attrCount, 1)
		cond := up.name(attrExpiresAt) + " > " + up.val(n(p.Now))
		out, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Console, Key: attemptKey(p.Key),
			UpdateExpression: aws.String(up.String()), ConditionExpression: &cond,
			ExpressionAttributeNames: up.names, ExpressionAttributeValues: up.values, ReturnValues: types.ReturnValueUpdatedNew})
		if err == nil {
			return int(item(out.Attributes).int(attrCount)), nil
		}
		if !condFailed(err) {
			return 0, fmt.Errorf("dynamo attempt add: %w", err)
		}
		it := attemptKey(p.Key)
		end := attemptWindowEnd(p)
		it[attrCount], it[attrExpiresAt], it[AttrPurgeAt] = n(1), n(end), n(purgeSeconds(end))
		var e expr
		putCond := "attribute_not_exists(" + e.name(AttrPK) + ") OR " + e.name(attrExpiresAt) + " <= " + e.val(n(p.Now))
		_, err = db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Console, Item: it,
			ConditionExpression: &putCond, ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
		if err == nil {
			return 1, nil
		}
		if !condFailed(err) {
			return 0, fmt.Errorf("dynamo attempt add: %w", err)
		}
	}
	return 0, fmt.Errorf("dynamo attempt add %q: %w", p.Key, xjob.ErrConflict)
}

// AttemptReset deletes key's window.
func (db *DB) AttemptReset(ctx context.Context, key string) error {
	if _, err := db.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &db.t.Console, Key: attemptKey(key)}); err != nil {
		return fmt.Errorf("dynamo attempt reset: %w", err)
	}
	return nil
}

// SessionRevoke puts id's record, kept (by TTL) until its cookie's end.
func (db *DB) SessionRevoke(ctx context.Context, id string, expires int64) error {
	it := revokedKey(id)
	it[attrExpiresAt], it[AttrPurgeAt] = n(expires), n(purgeSeconds(expires))
	if _, err := db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Console, Item: it}); err != nil {
		return fmt.Errorf("dynamo session revoke: %w", err)
	}
	return nil
}

// SessionRevoked reads id's record (strongly consistent: a sign-out in one
// Lambda environment holds in the next request to any other).
func (db *DB) SessionRevoked(ctx context.Context, id string) (bool, error) {
	_, err := db.getItem(ctx, db.t.Console, revokedKey(id))
	switch {
	case errors.Is(err, xjob.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("dynamo session revoked: %w", err)
	}
	return true, nil
}
