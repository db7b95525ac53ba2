package dynamostore

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/driver"
)

// A reader holding a job item from before an update that replaced the
// job's GLUE source (an eventually consistent read, or a read just before
// the write) finds the old source item gone, reads the job again and
// returns its current source, never an empty one.
func TestGlueSourceReplacedWhileRead(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := New(emulator.DynamoDB(t), Options{Tables: TablesWithPrefix(emulator.UniqueName("t"))})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	old, fresh := strings.Repeat("echo old\n", 500), strings.Repeat("echo new\n", 500)
	j, err := db.JobInsert(ctx, xjob.Job{GroupID: 1, Name: "g", GlueType: xjob.GlueShell, GlueSource: old})
	if err != nil {
		t.Fatal(err)
	}
	stale, err := db.getItem(ctx, db.t.Jobs, jobKey(j.ID))
	if err != nil {
		t.Fatal(err)
	}
	j.GlueSource = fresh
	if _, err := db.JobUpdate(ctx, driver.JobUpdateParams{Job: j, ExpectVersion: j.Version}); err != nil {
		t.Fatal(err)
	}
	got, err := db.decodeJobsGlue(ctx, []item{stale}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].GlueSource != fresh {
		t.Fatalf("a stale job item read with a source of %d bytes, want the current %d", len(got[0].GlueSource), len(fresh))
	}
}

// A job item with a source inline and a reference both was last written
// by a release that does not know source items (after a rollback): its
// inline source is the newer, and wins; the next write drops the item.
func TestGlueInlineWinsOverReference(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := New(emulator.DynamoDB(t), Options{Tables: TablesWithPrefix(emulator.UniqueName("t"))})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	j, err := db.JobInsert(ctx, xjob.Job{GroupID: 1, Name: "g", GlueType: xjob.GlueShell, GlueSource: strings.Repeat("echo a\n", 500)})
	if err != nil {
		t.Fatal(err)
	}
	it, err := db.getItem(ctx, db.t.Jobs, jobKey(j.ID))
	if err != nil {
		t.Fatal(err)
	}
	ref := it.int(attrGlueRef)
	var u update
	u.Set(attrGlueSource, s("echo edited by an older release"))
	u.Set(attrGlueType, s(string(xjob.GlueShell)))
	if _, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Jobs, Key: jobKey(j.ID),
		UpdateExpression: aws.String(u.String()), ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values}); err != nil {
		t.Fatal(err)
	}
	got, err := db.JobGet(ctx, j.ID)
	if err != nil || got.GlueSource != "echo edited by an older release" {
		t.Fatalf("source %q, %v; want the inline one", got.GlueSource, err)
	}
	if _, err := db.JobUpdate(ctx, driver.JobUpdateParams{Job: got, ExpectVersion: got.Version}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.getItem(ctx, db.t.Jobs, jobKey(-ref)); !errors.Is(err, xjob.ErrNotFound) {
		t.Fatalf("the unused source item after the next write: %v, want deleted", err)
	}
}
