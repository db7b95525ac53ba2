package dynamostore_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
)

// consistencyAPI records the consistency of every GetItem a store makes.
type consistencyAPI struct {
	*dynamodb.Client
	mu     sync.Mutex
	strong []bool
}

func (c *consistencyAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.mu.Lock()
	c.strong = append(c.strong, in.ConsistentRead != nil && *in.ConsistentRead)
	c.mu.Unlock()
	return c.Client.GetItem(ctx, in, opts...)
}

func (c *consistencyAPI) take() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.strong
	c.strong = nil
	return out
}

// TestGroupGetEventual: the dispatcher's group read is one eventually
// consistent GetItem when the group is there, and a group it does not
// find is read again strongly consistent before it is called missing.
func TestGroupGetEventual(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a := &consistencyAPI{Client: emulator.DynamoDB(t)}
	db, err := dynamostore.New(a, dynamostore.Options{Tables: dynamostore.TablesWithPrefix(emulator.UniqueName("t"))})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	g, err := db.GroupInsert(ctx, xjob.Group{AppName: "eventual-app", Title: "Eventual", AddressList: []string{"http://10.0.0.1:9999"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		id      int64
		want    error
		strongs []bool // the GetItems' consistency, in order
	}{
		{"present: one eventual read", g.ID, nil, []bool{false}},
		{"missing: an eventual read, then a strong one", g.ID + 1000, xjob.ErrNotFound, []bool{false, true}},
	}
	for _, tc := range cases {
		a.take()
		got, err := db.GroupGetEventual(ctx, tc.id)
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: err %v, want %v", tc.name, err, tc.want)
		}
		if tc.want == nil && (got.ID != g.ID || got.AppName != g.AppName || len(got.AddressList) != 1 || got.AddressList[0] != g.AddressList[0]) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, g)
		}
		reads := a.take()
		if len(reads) != len(tc.strongs) {
			t.Fatalf("%s: %d GetItems %v, want %v", tc.name, len(reads), reads, tc.strongs)
		}
		for i := range reads {
			if reads[i] != tc.strongs[i] {
				t.Errorf("%s: GetItem %d strongly consistent %v, want %v", tc.name, i, reads[i], tc.strongs[i])
			}
		}
	}
}
