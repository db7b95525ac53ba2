package dynamostore_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/driver"
)

// scanCounter counts the Scans a store sends, per table.
type scanCounter struct {
	dynamostore.API
	jobs  string
	scans atomic.Int64
}

func (c *scanCounter) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if aws.ToString(in.TableName) == c.jobs {
		c.scans.Add(1)
	}
	return c.API.Scan(ctx, in, opts...)
}

// storeOn returns a store over tables (created if need be) whose jobs
// table Scans are counted.
func storeOn(t *testing.T, tables dynamostore.Tables) (*dynamostore.DB, *scanCounter) {
	t.Helper()
	c := &scanCounter{API: emulator.DynamoDB(t), jobs: tables.Jobs}
	db, err := dynamostore.New(c, dynamostore.Options{Tables: tables, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTables(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db, c
}

func insertNamed(t *testing.T, db *dynamostore.DB, group int64, name string) xjob.Job {
	t.Helper()
	j, err := db.JobInsert(t.Context(), xjob.Job{GroupID: group, Name: name, ScheduleType: xjob.ScheduleNone,
		RouteStrategy: xjob.RouteFirst, GlueType: xjob.GlueBean, Handler: "h", TriggerStatus: xjob.StatusStopped})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// The paths a user or an executor starts read indexes and claims, never
// the whole jobs table: the job list without a group, the declared-job
// lookup (once its one-time claims backfill is done).
func TestJobListsDoNotScan(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, c := storeOn(t, dynamostore.TablesWithPrefix(emulator.UniqueName("t")))
	if _, err := db.JobListByName(ctx, "none"); err != nil { // backfills an empty table once
		t.Fatal(err)
	}
	var want []int64
	for i := range 9 {
		want = append(want, insertNamed(t, db, int64(1+i%3), "app.job").ID)
	}
	before := c.scans.Load()
	var got []int64
	p := driver.JobListParams{Limit: 4}
	for {
		page, err := db.JobList(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page.Jobs {
			got = append(got, j.ID)
		}
		if page.Next == "" {
			break
		}
		p.Cursor = page.Next
	}
	named, err := db.JobListByName(ctx, "app.job")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(named) != len(want) {
		t.Fatalf("listed %v and %d by name, want %v", got, len(named), want)
	}
	if n := c.scans.Load() - before; n != 0 {
		t.Fatalf("job list and list by name sent %d Scans of the jobs table, want none", n)
	}
}

// A table from before the name claims: its jobs have none. The first
// lookup backfills them with one scan; later lookups, from any store on
// the table, scan no more.
func TestNameClaimsBackfill(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tables := dynamostore.TablesWithPrefix(emulator.UniqueName("t"))
	old, _ := storeOn(t, tables)
	a := insertNamed(t, old, 1, "app.a")
	b := insertNamed(t, old, 2, "app.b")
	// Forget every claim and the backfill record, as on an old table.
	raw := emulator.DynamoDB(t)
	res, err := raw.Scan(ctx, &dynamodb.ScanInput{TableName: &tables.Console})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		if _, err := raw.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &tables.Console,
			Key: map[string]types.AttributeValue{dynamostore.AttrPK: it[dynamostore.AttrPK], dynamostore.AttrSK: it[dynamostore.AttrSK]}}); err != nil {
			t.Fatal(err)
		}
	}

	db, c := storeOn(t, tables)
	for name, id := range map[string]int64{"app.a": a.ID, "app.b": b.ID} {
		got, err := db.JobListByName(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ID != id {
			t.Fatalf("after upgrade, %s = %+v, want job %d", name, got, id)
		}
	}
	if n := c.scans.Load(); n != 1 {
		t.Fatalf("backfill: %d Scans of the jobs table, want 1", n)
	}
	other, c2 := storeOn(t, tables)
	if got, err := other.JobListByName(ctx, "app.a"); err != nil || len(got) != 1 {
		t.Fatalf("second store: %+v %v", got, err)
	}
	if n := c2.scans.Load(); n != 0 {
		t.Fatalf("second store after the backfill: %d Scans, want none", n)
	}
}

// Renames release the claims they take away, and the first lookup of a
// deleted job's name drops its claim: claims do not pile up with a job's
// history.
func TestNameClaimsReleased(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tables := dynamostore.TablesWithPrefix(emulator.UniqueName("t"))
	db, _ := storeOn(t, tables)
	j := insertNamed(t, db, 1, "app.a")
	for _, name := range []string{"app.b", "app.c", ""} {
		j.Name = name
		var err error
		if j, err = db.JobUpdate(ctx, driver.JobUpdateParams{Job: j, ExpectVersion: j.Version}); err != nil {
			t.Fatal(err)
		}
	}
	j.Name = "app.d"
	j, err := db.JobUpdate(ctx, driver.JobUpdateParams{Job: j, ExpectVersion: j.Version})
	if err != nil {
		t.Fatal(err)
	}
	claims := func() int {
		t.Helper()
		res, err := emulator.DynamoDB(t).Scan(ctx, &dynamodb.ScanInput{TableName: &tables.Console})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, it := range res.Items {
			if pk := it[dynamostore.AttrPK].(*types.AttributeValueMemberS).Value; len(pk) > 8 && pk[:8] == "jobname#" {
				n++
			}
		}
		return n
	}
	if n := claims(); n != 1 {
		t.Fatalf("after three renames: %d claims, want 1 (app.d)", n)
	}
	if err := db.JobDelete(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := db.JobListByName(ctx, "app.d"); err != nil || len(got) != 0 {
		t.Fatalf("after delete, app.d = %+v %v, want none", got, err)
	}
	if n := claims(); n != 0 {
		t.Fatalf("after delete and a lookup: %d claims, want none", n)
	}
}

// A lookup that runs between an insert's claim and its job write finds no
// job: it must keep the claim, or the job it is about to store would be
// found by no later lookup (two executors declaring one job at once). Only
// confirmed claims of missing jobs are dropped.
func TestNameClaimOfPendingInsertKept(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tables := dynamostore.TablesWithPrefix(emulator.UniqueName("t"))
	db, _ := storeOn(t, tables)
	raw := emulator.DynamoDB(t)
	claim := func(id int64, confirmed bool) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			dynamostore.AttrPK: &types.AttributeValueMemberS{Value: "jobname#app.p"},
			dynamostore.AttrSK: &types.AttributeValueMemberS{Value: dynamostore.SortKey(0, id)},
			dynamostore.AttrID: &types.AttributeValueMemberN{Value: strconv.FormatInt(id, 10)},
			"claimVer":         &types.AttributeValueMemberN{Value: "1"},
			"gen":              &types.AttributeValueMemberN{Value: "7"},
			"confirmed":        &types.AttributeValueMemberBOOL{Value: confirmed},
		}
	}
	for id, confirmed := range map[int64]bool{900: false, 901: true} {
		if _, err := raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: &tables.Console, Item: claim(id, confirmed)}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := db.JobListByName(ctx, "app.p"); err != nil || len(got) != 0 {
		t.Fatalf("app.p = %+v %v, want none", got, err)
	}
	for id, want := range map[int64]bool{900: true, 901: false} {
		k := claim(id, false)
		res, err := raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: &tables.Console, ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{dynamostore.AttrPK: k[dynamostore.AttrPK], dynamostore.AttrSK: k[dynamostore.AttrSK]}})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(res.Item) > 0; got != want {
			t.Fatalf("claim of missing job %d kept = %v, want %v", id, got, want)
		}
	}
	// The pending insert lands: its job is found.
	j, err := db.JobInsert(ctx, xjob.Job{ID: 900, GroupID: 1, Name: "app.p", ScheduleType: xjob.ScheduleNone,
		RouteStrategy: xjob.RouteFirst, GlueType: xjob.GlueBean, Handler: "h", TriggerStatus: xjob.StatusStopped})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := db.JobListByName(ctx, "app.p"); err != nil || len(got) != 1 || got[0].ID != j.ID {
		t.Fatalf("app.p after the insert = %+v %v, want job %d", got, err, j.ID)
	}
}
