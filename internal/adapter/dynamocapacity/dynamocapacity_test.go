package dynamocapacity

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/scheduler/capacity"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
)

func TestMain(m *testing.M) { emulator.Main(m) }

// provisionedLogPages creates the deployment's log pages table (and its
// time index) on provisioned capacity, as the stacks do with
// TableBillingMode PROVISIONED, and returns its name.
func provisionedLogPages(t *testing.T, api *dynamodb.Client) string {
	t.Helper()
	prefix := emulator.UniqueName("cap")
	var in *dynamodb.CreateTableInput
	for _, s := range dynamostore.TableSpecs(dynamostore.TablesWithPrefix(prefix)) {
		if aws.ToString(s.TableName) == prefix+"-"+dynamostore.TableLogs {
			in = s
		}
	}
	if in == nil {
		t.Fatal("no log pages table in the schema")
	}
	one := &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(1)}
	in.BillingMode, in.ProvisionedThroughput = types.BillingModeProvisioned, one
	for i := range in.GlobalSecondaryIndexes {
		in.GlobalSecondaryIndexes[i].ProvisionedThroughput = one
	}
	if _, err := api.CreateTable(context.Background(), in); err != nil {
		t.Fatalf("create table: %v", err)
	}
	return aws.ToString(in.TableName)
}

// active waits for the table and its indexes to be ACTIVE again after a
// switch (dynalite completes it on its next turn, as DynamoDB does within
// minutes) and returns its state.
func active(t *testing.T, tbl *Table) capacity.State {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := tbl.State(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Active {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("table not ACTIVE after a switch: %+v", st)
		}
		time.Sleep(10 * time.Millisecond) // polling the emulator's own completion, not the code under test's time
	}
}

// TestSwitches: against dynalite, a provisioned table reads as
// provisioned and active; a switch to on demand reads back with its time
// (what the keeper's 12 h spacing is computed from); a switch back sizes
// the table and its index; one that leaves the index out is refused.
func TestSwitches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	api := emulator.DynamoDB(t)
	name := provisionedLogPages(t, api)
	tbl := New(api, name)

	st := active(t, tbl)
	if st.Mode != capacity.Provisioned || !st.LastToOnDemand.IsZero() {
		t.Fatalf("new provisioned table: %+v", st)
	}
	before := time.Now().Add(-time.Second)
	if err := tbl.Apply(ctx, capacity.Switch{To: capacity.OnDemand}); err != nil {
		t.Fatal(err)
	}
	st = active(t, tbl)
	if st.Mode != capacity.OnDemand || st.LastToOnDemand.Before(before) {
		t.Fatalf("after the switch to on demand: %+v (want LastToOnDemand after %v)", st, before)
	}

	if err := tbl.Apply(ctx, capacity.Switch{To: capacity.Provisioned, Capacity: map[string]capacity.Units{"": {Read: 3, Write: 8}}}); err == nil {
		t.Fatal("a switch to provisioned without the index's capacity was accepted")
	}
	if err := tbl.Apply(ctx, capacity.Switch{To: capacity.Provisioned}); !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("a switch to provisioned without capacity: %v, want ErrNoCapacity", err)
	}
	want := map[string]capacity.Units{"": {Read: 3, Write: 8}, "byTime": {Read: 1, Write: 3}}
	if err := tbl.Apply(ctx, capacity.Switch{To: capacity.Provisioned, Capacity: want}); err != nil {
		t.Fatal(err)
	}
	st = active(t, tbl)
	if st.Mode != capacity.Provisioned {
		t.Fatalf("after the switch back: %+v", st)
	}
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]capacity.Units{"": units(out.Table.ProvisionedThroughput)}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		got[aws.ToString(g.IndexName)] = units(g.ProvisionedThroughput)
	}
	for part, u := range want {
		if got[part] != u {
			t.Errorf("%q provisioned %+v, want %+v", part, got[part], u)
		}
	}
}

func units(p *types.ProvisionedThroughputDescription) capacity.Units {
	if p == nil {
		return capacity.Units{}
	}
	return capacity.Units{Read: aws.ToInt64(p.ReadCapacityUnits), Write: aws.ToInt64(p.WriteCapacityUnits)}
}

// TestStateErrors: a missing table is an error naming it.
func TestStateErrors(t *testing.T) {
	t.Parallel()
	_, err := New(emulator.DynamoDB(t), emulator.UniqueName("missing")).State(context.Background())
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("missing table: %v, want ResourceNotFoundException", err)
	}
}
