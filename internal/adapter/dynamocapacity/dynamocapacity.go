// Package dynamocapacity is the capacity keeper's DynamoDB adapter
// (capacity.Table): DescribeTable for the table's billing mode and its
// last switch to on demand, UpdateTable for a switch. Both are control
// plane requests, which DynamoDB does not bill; the function's role is
// granted them on the stack's own tables only.
package dynamocapacity

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob/internal/scheduler/capacity"
)

// API is the part of the DynamoDB client the adapter calls.
type API interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
}

// Table is one table behind the capacity.Table port.
type Table struct {
	api  API
	name string
}

// New returns the port to the table named name.
func New(api API, name string) *Table { return &Table{api: api, name: name} }

// State reads the table's billing mode (a table without a billing mode
// summary is provisioned: tables created before on demand existed), its
// last switch to on demand, and whether it and every index are ACTIVE.
func (t *Table) State(ctx context.Context) (capacity.State, error) {
	out, err := t.api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.name)})
	if err != nil {
		return capacity.State{}, fmt.Errorf("capacity: describe %s: %w", t.name, err)
	}
	d := out.Table
	if d == nil {
		return capacity.State{}, fmt.Errorf("capacity: describe %s: no table in the answer", t.name)
	}
	st := capacity.State{Mode: capacity.Provisioned, Active: d.TableStatus == types.TableStatusActive}
	if b := d.BillingModeSummary; b != nil {
		if b.BillingMode == types.BillingModePayPerRequest {
			st.Mode = capacity.OnDemand
		}
		if b.LastUpdateToPayPerRequestDateTime != nil {
			st.LastToOnDemand = *b.LastUpdateToPayPerRequestDateTime
		}
	}
	for _, g := range d.GlobalSecondaryIndexes {
		if g.IndexStatus != types.IndexStatusActive {
			st.Active = false
		}
	}
	return st, nil
}

// ErrNoCapacity is a switch to provisioned that does not size the table
// or one of its indexes (DynamoDB requires both).
var ErrNoCapacity = errors.New("capacity: a switch to provisioned sizes the table and every index")

// Apply switches the table: to PAY_PER_REQUEST, or to PROVISIONED with
// s.Capacity for the table ("") and each index named there. The stack's
// auto scaling targets, which DynamoDB keeps while the table is on demand
// (their scaling activities fail then, harmlessly), take over the
// capacity from these starting values.
func (t *Table) Apply(ctx context.Context, s capacity.Switch) error {
	in := &dynamodb.UpdateTableInput{TableName: aws.String(t.name)}
	if s.To == capacity.OnDemand {
		in.BillingMode = types.BillingModePayPerRequest
	} else {
		tu, ok := s.Capacity[""]
		if !ok {
			return ErrNoCapacity
		}
		in.BillingMode = types.BillingModeProvisioned
		in.ProvisionedThroughput = throughput(tu)
		for _, name := range slices.Sorted(maps.Keys(s.Capacity)) {
			if name == "" {
				continue
			}
			in.GlobalSecondaryIndexUpdates = append(in.GlobalSecondaryIndexUpdates, types.GlobalSecondaryIndexUpdate{
				Update: &types.UpdateGlobalSecondaryIndexAction{IndexName: aws.String(name), ProvisionedThroughput: throughput(s.Capacity[name])}})
		}
	}
	if _, err := t.api.UpdateTable(ctx, in); err != nil {
		return fmt.Errorf("capacity: switch %s to %s: %w", t.name, s.To, err)
	}
	return nil
}

func throughput(u capacity.Units) *types.ProvisionedThroughput {
	return &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(u.Read), WriteCapacityUnits: aws.Int64(u.Write)}
}
