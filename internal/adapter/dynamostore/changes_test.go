package dynamostore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/driver"
)

// crashAPI is the real client that stops answering writes to one table
// after a number of them, as a process killed mid-way would.
type crashAPI struct {
	dynamostore.API
	table string
	left  atomic.Int64
}

var errCrashed = errors.New("process killed")

func (c *crashAPI) hit(table *string) error {
	if *table == c.table && c.left.Add(-1) < 0 {
		return errCrashed
	}
	return nil
}

func (c *crashAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := c.hit(in.TableName); err != nil {
		return nil, err
	}
	return c.API.PutItem(ctx, in, o...)
}

func (c *crashAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := c.hit(in.TableName); err != nil {
		return nil, err
	}
	return c.API.UpdateItem(ctx, in, o...)
}

// A set that a crash interrupts is, after ChangeResume in the next
// process, either not there at all (crash before the commit point) or
// there whole (crash after it).
func TestChangeApplyCrashResume(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		table     func(dynamostore.Tables) string
		writes    int64 // writes to table that succeed before the crash
		wantAfter int   // jobs named crash-* after resume
	}{
		{"before commit", func(t dynamostore.Tables) string { return t.Console }, 2, 0}, // head and one chunk
		{"after commit", func(t dynamostore.Tables) string { return t.Jobs }, 7, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			opts := dynamostore.Options{Tables: dynamostore.TablesWithPrefix(emulator.UniqueName("t"))}
			api := emulator.DynamoDB(t)
			db, err := dynamostore.New(api, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.CreateTables(ctx); err != nil {
				t.Fatal(err)
			}
			g, err := db.GroupInsert(ctx, xjob.Group{AppName: "crash-app", Title: "Crash"})
			if err != nil {
				t.Fatal(err)
			}
			var cs driver.ChangeSet
			for i := range 40 {
				j := xjob.Job{GroupID: g.ID, Name: "crash-" + string(rune('a'+i%26)) + string(rune('a'+i/26)),
					Description: "d", Author: "a", ScheduleType: xjob.ScheduleNone, GlueType: xjob.GlueBean,
					Handler: "h", Param: string(make([]byte, 12<<10))} // 40 × 12 KB: two chunks
				if i > 0 {
					j.ChildJobIDs = []int64{-int64(i)}
				}
				cs.JobInserts = append(cs.JobInserts, j)
			}
			crash := &crashAPI{API: api, table: tc.table(opts.Tables)}
			crash.left.Store(tc.writes)
			dead, err := dynamostore.New(crash, opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dead.ChangeApply(ctx, cs); !errors.Is(err, errCrashed) {
				t.Fatalf("apply through a crashing client: %v", err)
			}
			next, err := dynamostore.New(api, opts) // the next process
			if err != nil {
				t.Fatal(err)
			}
			if pending, err := next.ChangePending(ctx); err != nil || !pending {
				t.Fatalf("pending after the crash: %v, %v; want a set to resume", pending, err)
			}
			if err := next.ChangeResume(ctx); err != nil {
				t.Fatalf("resume: %v", err)
			}
			if pending, err := next.ChangePending(ctx); err != nil || pending {
				t.Fatalf("pending after resume: %v, %v; want none", pending, err)
			}
			page, err := next.JobList(ctx, driver.JobListParams{GroupID: g.ID, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Jobs) != tc.wantAfter {
				t.Fatalf("after resume %d jobs, want %d (all or nothing)", len(page.Jobs), tc.wantAfter)
			}
			for _, j := range page.Jobs {
				if j.Name != "crash-aa" && len(j.ChildJobIDs) != 1 {
					t.Fatalf("job %s has children %v after resume", j.Name, j.ChildJobIDs)
				}
			}
			if err := next.ChangeResume(ctx); err != nil {
				t.Fatalf("second resume: %v", err)
			}
		})
	}
}
