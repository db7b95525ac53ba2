package lambdaapp_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/driver"
)

// dyingAPI is the real DynamoDB client of a process that is killed after
// a number of writes to one table: every later write fails.
type dyingAPI struct {
	dynamostore.API
	table string
	left  atomic.Int64
}

var errKilled = errors.New("process killed")

func (c *dyingAPI) hit(table *string) error {
	if *table == c.table && c.left.Add(-1) < 0 {
		return errKilled
	}
	return nil
}

func (c *dyingAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := c.hit(in.TableName); err != nil {
		return nil, err
	}
	return c.API.PutItem(ctx, in, o...)
}

func (c *dyingAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := c.hit(in.TableName); err != nil {
		return nil, err
	}
	return c.API.UpdateItem(ctx, in, o...)
}

// An apply killed in the middle leaves its change set staged or
// half-written on DynamoDB, and a reader of the jobs table sees that. The
// next start of the web function (which serves the console, /v1 and the
// CLI) and the registry function's next maintenance run resume it: a set
// killed before its commit point is gone, one killed after it is there
// whole; nothing in between.
func TestKilledApplyResumedAtNextStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		table  func(dynamostore.Tables) string
		writes int64 // writes to table that succeed before the kill
		resume string
		want   int // jobs of the set after the resume
	}{
		{"before commit, web start", func(t dynamostore.Tables) string { return t.Console }, 2, "web", 0},
		{"after commit, web start", func(t dynamostore.Tables) string { return t.Jobs }, 7, "web", 40},
		{"after commit, maintenance", func(t dynamostore.Tables) string { return t.Jobs }, 7, "registry", 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setupEnv(t)
			ctx := context.Background()
			g, err := e.store.GroupInsert(ctx, xjob.Group{AppName: "killed-apply", Title: "Killed"})
			if err != nil {
				t.Fatal(err)
			}
			var cs driver.ChangeSet
			for i := range 40 {
				j := xjob.Job{GroupID: g.ID, Name: fmt.Sprintf("set-%02d", i), Description: "d", Author: "a",
					ScheduleType: xjob.ScheduleNone, GlueType: xjob.GlueBean, Handler: "h",
					Param: string(make([]byte, 12<<10))} // 40 × 12 KB: two chunks
				if i > 0 {
					j.ChildJobIDs = []int64{-int64(i)}
				}
				cs.JobInserts = append(cs.JobInserts, j)
			}
			tables := dynamostore.TablesWithPrefix(e.prefix)
			dying := &dyingAPI{API: emulator.DynamoDB(t), table: tc.table(tables)}
			dying.left.Store(tc.writes)
			dead, err := dynamostore.New(dying, dynamostore.Options{Tables: tables, Shards: e.shards})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dead.ChangeApply(ctx, cs); !errors.Is(err, errKilled) {
				t.Fatalf("apply in the killed process: %v", err)
			}
			count := func() int {
				page, err := e.store.JobList(ctx, driver.JobListParams{GroupID: g.ID, Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				return len(page.Jobs)
			}
			if n := count(); tc.want == 40 && (n == 0 || n == 40) {
				t.Fatalf("%d jobs written before the kill, want part of the set (the case this test is about)", n)
			}
			switch tc.resume {
			case "web":
				e.app("web", "web-next-start") // its init resumes
			case "registry":
				res, err := invoke(e, "registry", 30*time.Second, e.app("registry", "registry").Registry, scheduledEvent())
				if err != nil {
					t.Fatalf("maintenance: %v (%+v)", err, res)
				}
			}
			if n := count(); n != tc.want {
				t.Fatalf("after the %s resumed: %d jobs, want %d (the old set or the new one)", tc.resume, n, tc.want)
			}
		})
	}
}
