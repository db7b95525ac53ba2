package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/xjobdev/xjob"
)

// consoleRetired is the console table partition of retired declarations:
// one item per declaration key (sort key), holding the declaration as it
// was when a person deleted its job. They are few (one per deleted
// declared job) and read once per executor start and declaration.
const consoleRetired = "declared-retired"

func retiredKey(key string) item { return item{AttrPK: s(consoleRetired), AttrSK: s(key)} }

// DeclarationRetire records key's retired declaration (see driver.JobStore).
func (db *DB) DeclarationRetire(ctx context.Context, key, declared string) error {
	it := retiredKey(key)
	it["declared"] = s(declared)
	if _, err := db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Console, Item: it}); err != nil {
		return fmt.Errorf("dynamo declaration retire %q: %w", key, err)
	}
	return nil
}

// DeclarationRetired returns key's retired declaration (see driver.JobStore).
func (db *DB) DeclarationRetired(ctx context.Context, key string) (string, bool, error) {
	it, err := db.getItem(ctx, db.t.Console, retiredKey(key))
	switch {
	case errors.Is(err, xjob.ErrNotFound):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("dynamo declaration retired %q: %w", key, err)
	}
	return it.str("declared"), true, nil
}
