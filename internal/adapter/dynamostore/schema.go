package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableSpecs returns the CreateTable inputs of every table: the schema the
// adapter relies on, in one place. Tests and local bootstrap create tables
// from it (CreateTables); on AWS the infra templates declare the same
// tables (plus TTL on AttrPurgeAt and point-in-time recovery, which
// CreateTable does not carry), and the infra cross-check test compares them
// with this.
func TableSpecs(t Tables) []*dynamodb.CreateTableInput {
	attr := func(name string, typ types.ScalarAttributeType) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: typ}
	}
	key := func(pk, sk string) []types.KeySchemaElement {
		ks := []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}}
		if sk != "" {
			ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange})
		}
		return ks
	}
	gsi := func(name, pk, sk string, proj types.ProjectionType) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{IndexName: aws.String(name), KeySchema: key(pk, sk),
			Projection: &types.Projection{ProjectionType: proj}}
	}
	table := func(name string, attrs []types.AttributeDefinition, ks []types.KeySchemaElement, gsis ...types.GlobalSecondaryIndex) *dynamodb.CreateTableInput {
		in := &dynamodb.CreateTableInput{TableName: aws.String(name), AttributeDefinitions: attrs, KeySchema: ks,
			BillingMode: types.BillingModePayPerRequest}
		if len(gsis) > 0 {
			in.GlobalSecondaryIndexes = gsis
		}
		return in
	}
	N, S := types.ScalarAttributeTypeN, types.ScalarAttributeTypeS
	return []*dynamodb.CreateTableInput{
		table(t.Jobs,
			[]types.AttributeDefinition{attr(AttrID, N), attr(AttrDueShard, N), attr(AttrDueKey, S), attr(AttrGroupID, N),
				attr(AttrShard, N)},
			key(AttrID, ""),
			gsi(IndexJobsDue, AttrDueShard, AttrDueKey, types.ProjectionTypeAll),
			gsi(IndexJobsByGroup, AttrGroupID, AttrID, types.ProjectionTypeKeysOnly),
			gsi(IndexJobsByShard, AttrShard, AttrID, types.ProjectionTypeKeysOnly)),
		table(t.Groups, []types.AttributeDefinition{attr(AttrID, N)}, key(AttrID, "")),
		logPages(table(t.Logs,
			[]types.AttributeDefinition{attr(AttrPK, S), attr(AttrSK, S), attr(AttrTimePart, N), attr(AttrTimeKey, S)},
			key(AttrPK, AttrSK),
			gsi(IndexLogsByTime, AttrTimePart, AttrTimeKey, types.ProjectionTypeInclude))),
		table(t.Registry, []types.AttributeDefinition{attr(AttrRegistryKey, S), attr(AttrMember, S)}, key(AttrRegistryKey, AttrMember)),
		table(t.Leases, []types.AttributeDefinition{attr(AttrName, S)}, key(AttrName, "")),
		table(t.Reports, []types.AttributeDefinition{attr(AttrDay, S)}, key(AttrDay, "")),
		table(t.Counters, []types.AttributeDefinition{attr(AttrName, S)}, key(AttrName, "")),
		table(t.Console, []types.AttributeDefinition{attr(AttrPK, S), attr(AttrSK, S)}, key(AttrPK, AttrSK)),
	}
}

// logPages finishes the log table's spec: its time index carries each
// page's earliest trigger time and job and group lists, so walks skip
// pages that cannot match without reading them.
func logPages(in *dynamodb.CreateTableInput) *dynamodb.CreateTableInput {
	in.GlobalSecondaryIndexes[0].Projection.NonKeyAttributes = []string{attrPageLo, attrPageJobs, attrPageGroups}
	return in
}

// CreateTables creates the store's tables (on-demand billing) if they do
// not exist and waits until they are ACTIVE. It is for tests and local
// bootstrap; on AWS the infra templates own the tables.
func (db *DB) CreateTables(ctx context.Context) error {
	for _, in := range TableSpecs(db.t) {
		_, err := db.api.CreateTable(ctx, in)
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("dynamo create table %s: %w", aws.ToString(in.TableName), err)
		}
	}
	w := dynamodb.NewTableExistsWaiter(db.api, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, 2*time.Second
	})
	for _, in := range TableSpecs(db.t) {
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, 5*time.Minute); err != nil {
			return fmt.Errorf("dynamo wait for table %s: %w", aws.ToString(in.TableName), err)
		}
	}
	return nil
}
