package drivertest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

// RestoreTarget is a store that restores records: what `xjob db copy`
// writes to.
type RestoreTarget interface {
	driver.Store
	driver.RestoreStore
}

// ExerciseRestoreStore runs the contract of driver.RestoreStore against
// stores from newStore, which must have been opened with shards scan
// shards: restored records read back field for field, the other ports
// carry on from them (conditional writes on the restored versions, the
// due index, the occurrence index, later ids above the restored ones),
// and a batch that cannot be written whole is not written at all.
func ExerciseRestoreStore(t *testing.T, shards int, newStore func(t *testing.T) RestoreTarget) {
	t.Helper()
	restoredJob := func(id int64) xjob.Job {
		j := sampleJob(1, t0+60_000)
		j.ID, j.Shard = id, fire.ShardOf(id, shards)
		j.Name = ""
		j.Version, j.Revision = 7, 3
		j.TriggerLastTime = t0
		j.SlowMinute, j.SlowCount = t0/60_000, 4
		return j
	}
	t.Run("JobsKeepEveryField", func(t *testing.T) {
		t.Parallel()
		st, ctx := newStore(t), t.Context()
		a, b := restoredJob(40), restoredJob(41)
		b.TriggerStatus, b.TriggerNextTime, b.Version = xjob.StatusStopped, 0, 2
		requireNoErr(t, st.JobRestore(ctx, []xjob.Job{a, b}), "restore")
		for _, want := range []xjob.Job{a, b} {
			got, err := st.JobGet(ctx, want.ID)
			requireNoErr(t, err, "get")
			requireJob(t, "restored job", got, want)
		}
		due, err := st.JobsDue(ctx, driver.JobsDueParams{Shard: a.Shard, Before: a.TriggerNextTime, Limit: 10})
		requireNoErr(t, err, "due")
		if len(due) != 1 || due[0].ID != a.ID {
			t.Fatalf("due jobs of shard %d: %v, want job %d: a restored running job is in the due index", a.Shard, ids(due, jobID), a.ID)
		}
		// Conditional writes carry on from the restored version.
		a.Description = "edited"
		_, err = st.JobUpdate(ctx, driver.JobUpdateParams{Job: a, ExpectVersion: 1})
		requireIs(t, err, xjob.ErrConflict, "update at version 1 of a job restored at 7")
		up, err := st.JobUpdate(ctx, driver.JobUpdateParams{Job: a, ExpectVersion: 7})
		requireNoErr(t, err, "update at the restored version")
		if up.Version != 8 || up.Revision != 3 {
			t.Fatalf("updated job at version %d revision %d, want 8 and 3", up.Version, up.Revision)
		}
		next, err := st.JobInsert(ctx, sampleJob(1, t0))
		requireNoErr(t, err, "insert after a restore")
		if next.ID <= b.ID {
			t.Fatalf("an allocated id %d is not above the restored id %d", next.ID, b.ID)
		}
	})
	t.Run("JobsAllOrNone", func(t *testing.T) {
		t.Parallel()
		st, ctx := newStore(t), t.Context()
		taken, err := st.JobInsert(ctx, sampleJob(1, t0))
		requireNoErr(t, err, "insert")
		err = st.JobRestore(ctx, []xjob.Job{restoredJob(taken.ID + 10), restoredJob(taken.ID)})
		requireIs(t, err, xjob.ErrConflict, "restore over a taken id")
		_, err = st.JobGet(ctx, taken.ID+10)
		requireIs(t, err, xjob.ErrNotFound, "the batch's other job after a refused restore")
		// A job placed under another shard count is refused whole too.
		wrong := restoredJob(taken.ID + 20)
		wrong.Shard = (wrong.Shard + 1) % (shards + 1)
		if err := st.JobRestore(ctx, []xjob.Job{restoredJob(taken.ID + 21), wrong}); err == nil {
			t.Fatal("a job whose shard is not its id's under this store's count was restored")
		}
		_, err = st.JobGet(ctx, taken.ID+21)
		requireIs(t, err, xjob.ErrNotFound, "the batch's other job after a refused restore")
	})
	restoredLog := func(id int64, occurrence string) xjob.Log {
		l := sampleLog(occurrence, 40, 1, t0)
		l.ID, l.Version = id, 3
		l.TriggerCode, l.TriggerMsg, l.ExecutorAddress = xjob.CodeSuccess, "ok", "http://10.0.0.1:9999"
		return l
	}
	t.Run("LogsKeepEveryField", func(t *testing.T) {
		t.Parallel()
		st, ctx := newStore(t), t.Context()
		running := restoredLog(500, "j40/t1/s0")
		done := restoredLog(501, "j40/t2/s0")
		done.HandleTime, done.HandleCode, done.HandleMsg, done.AlarmStatus = t0+5, xjob.CodeFail, "boom", xjob.AlarmSuccess
		manual := restoredLog(502, "m-1")
		manual.TriggerType, manual.ScheduledTime = xjob.TriggerManual, 0
		requireNoErr(t, st.LogRestore(ctx, []xjob.Log{running, done, manual}), "restore")
		for _, want := range []xjob.Log{running, done, manual} {
			got, err := st.LogGet(ctx, want.ID)
			requireNoErr(t, err, "get")
			requireLog(t, "restored log", got, want)
		}
		// The occurrence index holds the restored logs: a redelivery of a
		// restored occurrence is a duplicate, not a second run.
		dup, err := st.LogCreate(ctx, sampleLog(running.OccurrenceID, 40, 1, t0+1))
		requireIs(t, err, xjob.ErrConflict, "create of a restored occurrence")
		if dup.ID != running.ID {
			t.Fatalf("create of a restored occurrence returned log %d, want %d", dup.ID, running.ID)
		}
		// The result of a restored running log is recorded once, on its version.
		fin, err := st.LogFinish(ctx, driver.LogFinishParams{ID: running.ID, HandleTime: t0 + 9, HandleCode: xjob.CodeSuccess, HandleMsg: "done"})
		requireNoErr(t, err, "finish a restored running log")
		if fin.Version <= running.Version {
			t.Fatalf("finished log at version %d, want above the restored %d", fin.Version, running.Version)
		}
		next, err := st.LogCreate(ctx, sampleLog("j40/t3/s0", 40, 1, t0+2))
		requireNoErr(t, err, "create after a restore")
		if next.ID <= manual.ID {
			t.Fatalf("an allocated id %d is not above the restored id %d", next.ID, manual.ID)
		}
	})
	t.Run("LogsAllOrNone", func(t *testing.T) {
		t.Parallel()
		st, ctx := newStore(t), t.Context()
		taken, err := st.LogCreate(ctx, sampleLog("j40/t1/s0", 40, 1, t0))
		requireNoErr(t, err, "create")
		for _, batch := range [][]xjob.Log{
			{restoredLog(taken.ID+10, "j40/t9/s0"), restoredLog(taken.ID, "j40/t8/s0")},           // a taken id
			{restoredLog(taken.ID+10, "j40/t9/s0"), restoredLog(taken.ID+11, taken.OccurrenceID)}, // a taken occurrence
		} {
			err := st.LogRestore(ctx, batch)
			if !errors.Is(err, xjob.ErrConflict) {
				t.Fatalf("restore over a taken id or occurrence: %v, want ErrConflict", err)
			}
			_, err = st.LogGet(ctx, taken.ID+10)
			requireIs(t, err, xjob.ErrNotFound, "the batch's other log after a refused restore")
		}
	})
	// A page as large as a copy writes is one unit too: a conflict on its
	// last log leaves none of the others.
	t.Run("LargeBatch", func(t *testing.T) {
		t.Parallel()
		st, ctx := newStore(t), t.Context()
		const n = 1200
		page := make([]xjob.Log, n)
		for i := range page {
			page[i] = restoredLog(int64(1000+i), fmt.Sprintf("j40/t%d/s0", i))
		}
		last := page[n-1]
		page[n-1] = restoredLog(999, page[0].OccurrenceID)
		requireIs(t, st.LogRestore(ctx, page), xjob.ErrConflict, "restore of a page whose last log repeats its first occurrence")
		if c, err := st.LogCount(ctx, driver.LogCountParams{}); err != nil || c != 0 {
			t.Fatalf("%d logs after a refused page (%v), want 0", c, err)
		}
		page[n-1] = last
		requireNoErr(t, st.LogRestore(ctx, page), "restore a large page")
		if c, err := st.LogCount(ctx, driver.LogCountParams{}); err != nil || c != n {
			t.Fatalf("%d logs after restoring %d (%v)", c, n, err)
		}
	})
}
