package sqlitestore

import (
	"testing"

	"github.com/xjobdev/xjob"
)

// Commits leave their pages in the WAL (the connections' own checkpoints
// only bound it), and the checkpointer's passive checkpoint copies all of
// them into the file while the store is in use.
func TestCheckpointCopiesTheWAL(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	ctx := t.Context()
	for i := range 50 {
		if _, err := db.JobInsert(ctx, xjob.Job{GroupID: 1, Description: "d", TriggerNextTime: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	copied, frames, err := db.checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if frames == 0 || copied != frames {
		t.Fatalf("checkpoint copied %d of %d WAL frames, want all of some", copied, frames)
	}
	if _, err := db.JobInsert(ctx, xjob.Job{GroupID: 1, Description: "after"}); err != nil {
		t.Fatalf("write after a checkpoint: %v", err)
	}
}

// The writer counts its commits and the pages they wrote, and a
// checkpoint counts the frames it copied, so that the bench can say what
// a trigger costs the writer.
func TestWriterStatsCountPagesAndBackfill(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	ctx := t.Context()
	before := db.WriterStats()
	for i := range 20 {
		if _, err := db.JobInsert(ctx, xjob.Job{GroupID: 1, Description: "d", TriggerNextTime: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	d := db.WriterStats().Sub(before)
	if d.Commits < 1 || d.Requests != 20 || d.Pages < d.Commits {
		t.Fatalf("20 inserts counted %d commits, %d requests, %d pages", d.Commits, d.Requests, d.Pages)
	}
	if d.Waited <= 0 || d.MaxWait <= 0 {
		t.Fatalf("requests waited %v (longest %v)", d.Waited, d.MaxWait)
	}
	copied, _, err := db.checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d = db.WriterStats().Sub(before)
	if d.Checkpoints < 1 || d.Backfilled < int64(copied) || copied == 0 {
		t.Fatalf("checkpoint copied %d frames, counted %d in %d checkpoints", copied, d.Backfilled, d.Checkpoints)
	}
}

// A checkpoint counts the frames copied since the last one of the same
// WAL, and all it copied of a WAL that started over.
func TestCountBackfilled(t *testing.T) {
	t.Parallel()
	type ck struct {
		salt   uint32
		copied int
	}
	for _, tc := range []struct {
		name string
		cks  []ck
		want int64
	}{
		{"one", []ck{{1, 10}}, 10},
		{"same WAL grows", []ck{{1, 10}, {1, 25}}, 25},
		{"same WAL, nothing new", []ck{{1, 10}, {1, 10}}, 10},
		{"WAL started over", []ck{{1, 10}, {2, 4}}, 14},
		{"WAL started over and grew past", []ck{{1, 10}, {2, 30}}, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var db DB
			for _, c := range tc.cks {
				db.countBackfilled(c.salt, c.copied)
			}
			if s := db.WriterStats(); s.Backfilled != tc.want || s.Checkpoints != int64(len(tc.cks)) {
				t.Fatalf("counted %d frames in %d checkpoints, want %d in %d", s.Backfilled, s.Checkpoints, tc.want, len(tc.cks))
			}
		})
	}
}
