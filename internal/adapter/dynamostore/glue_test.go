package dynamostore_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/pkg/driver"
)

// A long GLUE source lives in an item of its own, so that the job item
// (which the due index projects, and every advance rewrites there) stays
// small; every read returns the job whole, a new source replaces the old
// item, and a job item that still holds its source inline (as written
// before) is read as it is and moves it out on its next write.
func TestGlueSourceItems(t *testing.T) {
	t.Parallel()
	db, ctx := setup(t, dynamostore.Options{Shards: 2}), t.Context()
	g, err := db.GroupInsert(ctx, xjob.Group{AppName: "glue-app", Title: "glue"})
	if err != nil {
		t.Fatal(err)
	}
	long := func(c string) string { return "#!/bin/sh\n" + strings.Repeat("echo "+c+"\n", 2000) }
	ref := func(id int64) int64 {
		t.Helper()
		it, err := dynamostore.JobItem(ctx, db, id)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := it["glueRef"].(*types.AttributeValueMemberN); ok && v.Value != "0" {
			r, err := strconv.ParseInt(v.Value, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if src, ok := it["glueSource"].(*types.AttributeValueMemberS); ok && src.Value != "" {
				t.Fatalf("job %d holds its source inline and in item %d", id, -r)
			}
			// A release that does not know source items reads a GLUE
			// type no executor runs, not an empty source.
			if gt, _ := it["glueType"].(*types.AttributeValueMemberS); gt == nil || gt.Value != "GLUE_SHELL+apart" {
				t.Fatalf("job %d's stored glueType %#v while its source is apart", id, it["glueType"])
			}
			return r
		}
		return 0
	}
	sourceItem := func(r int64) bool {
		_, err := dynamostore.JobItem(ctx, db, -r)
		if err != nil && !errors.Is(err, xjob.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	wantSource := func(what string, j xjob.Job, want string) {
		t.Helper()
		if j.GlueType != xjob.GlueShell {
			t.Fatalf("%s: GLUE type %q", what, j.GlueType)
		}
		if j.GlueSource != want {
			t.Fatalf("%s: source of %d bytes, want %d", what, len(j.GlueSource), len(want))
		}
	}
	a := long("a")
	j, err := db.JobInsert(ctx, xjob.Job{GroupID: g.ID, Name: "glue", Description: "glue", Author: "t",
		ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 * * * * ?", MisfireStrategy: xjob.MisfireDoNothing,
		RouteStrategy: xjob.RouteFirst, BlockStrategy: xjob.BlockSerialExecution, GlueType: xjob.GlueShell, GlueSource: a,
		TriggerStatus: xjob.StatusRunning, TriggerNextTime: testNow})
	if err != nil {
		t.Fatal(err)
	}
	first := ref(j.ID)
	if first == 0 || !sourceItem(first) {
		t.Fatalf("a %d-byte source is not in an item of its own (ref %d)", len(a), first)
	}
	got, err := db.JobGet(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantSource("JobGet", got, a)
	many, err := db.JobGetMany(ctx, []int64{j.ID})
	if err != nil || len(many) != 1 {
		t.Fatalf("JobGetMany: %d jobs, %v", len(many), err)
	}
	wantSource("JobGetMany", many[0], a)
	list, err := db.JobList(ctx, driver.JobListParams{})
	if err != nil || len(list.Jobs) != 1 {
		t.Fatalf("JobList: %+v, %v (a source item listed as a job?)", list.Jobs, err)
	}
	wantSource("JobList", list.Jobs[0], a)
	due, err := db.JobsDue(ctx, driver.JobsDueParams{Shard: j.Shard, Before: testNow, Limit: 10})
	if err != nil || len(due) != 1 {
		t.Fatalf("JobsDue: %d jobs, %v", len(due), err)
	}
	wantSource("JobsDue", due[0], a)
	if n, err := db.JobCount(ctx, driver.JobCountParams{}); err != nil || n != 1 {
		t.Fatalf("JobCount = %d, %v; want 1", n, err)
	}
	if err := db.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: got.Version, TriggerLastTime: testNow,
		TriggerNextTime: testNow + 60_000}); err != nil || ref(j.ID) != first {
		t.Fatalf("advance: %v, source item %d, want %d kept", err, ref(j.ID), first)
	}

	// A new source: a new item, the old one deleted.
	got, _ = db.JobGet(ctx, j.ID)
	b := long("b")
	got.GlueSource = b
	updated, err := db.JobUpdate(ctx, driver.JobUpdateParams{Job: got, ExpectVersion: got.Version})
	if err != nil {
		t.Fatal(err)
	}
	wantSource("JobUpdate's job", updated, b)
	second := ref(j.ID)
	if second == 0 || second == first || !sourceItem(second) || sourceItem(first) {
		t.Fatalf("after a new source: item %d (kept %v), old %d (kept %v)", second, sourceItem(second), first, sourceItem(first))
	}
	// A lost update leaves no source item behind and the job as it was.
	lost := updated
	lost.GlueSource = long("lost")
	if _, err := db.JobUpdate(ctx, driver.JobUpdateParams{Job: lost, ExpectVersion: updated.Version - 1}); !errors.Is(err, xjob.ErrConflict) {
		t.Fatalf("stale update: %v, want conflict", err)
	}
	if got, _ = db.JobGet(ctx, j.ID); got.GlueSource != b || ref(j.ID) != second {
		t.Fatalf("after a lost update: source of %d bytes, item %d", len(got.GlueSource), ref(j.ID))
	}
	// A short source goes back inline.
	got.GlueSource = "echo short"
	if _, err := db.JobUpdate(ctx, driver.JobUpdateParams{Job: got, ExpectVersion: got.Version}); err != nil {
		t.Fatal(err)
	}
	if r := ref(j.ID); r != 0 || sourceItem(second) {
		t.Fatalf("after a short source: item %d, old item kept %v", r, sourceItem(second))
	}
	if got, _ = db.JobGet(ctx, j.ID); got.GlueSource != "echo short" {
		t.Fatalf("short source %q", got.GlueSource)
	}

	// An item written before sources moved out keeps working.
	c := long("c")
	if err := dynamostore.SetInlineGlue(ctx, db, j.ID, c); err != nil {
		t.Fatal(err)
	}
	if got, err = db.JobGet(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	wantSource("an inline long source", got, c)
	if _, err := db.JobUpdate(ctx, driver.JobUpdateParams{Job: got, ExpectVersion: got.Version}); err != nil {
		t.Fatal(err)
	}
	third := ref(j.ID)
	if third == 0 || !sourceItem(third) {
		t.Fatal("an inline long source was not moved out by the job's next write")
	}
	if err := db.JobDelete(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if sourceItem(third) {
		t.Fatal("the source item outlived its job")
	}
}
