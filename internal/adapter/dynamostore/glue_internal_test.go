package dynamostore

import (
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/driver"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
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
