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
