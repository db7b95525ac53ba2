package dynamostore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// SetLogIDHash replaces db's occurrence hash behind log ids (to force
// collisions in a test).
func SetLogIDHash(db *DB, hash func(occurrenceID string) uint64) { db.idHash = hash }

// LogPageItem reads the stored page item that holds log id.
func LogPageItem(ctx context.Context, db *DB, id int64) (map[string]types.AttributeValue, error) {
	return db.getItem(ctx, db.t.Logs, pageKey(pageOfLog(id)))
}

// TablesOf is db's table names.
func TablesOf(db *DB) Tables { return db.t }
