package drivertest

import (
	"slices"
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

// ExerciseChangeStore tests driver.ChangeStore: a set is written whole,
// references to its own inserts resolve, and a set with one failed
// condition writes nothing.
func ExerciseChangeStore(t *testing.T, newStore func(t *testing.T) driver.Store) {
	t.Helper()

	t.Run("WholeSetWithReferences", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		old, err := s.GroupInsert(ctx, sampleGroup("changes-old", "Old"))
		requireNoErr(t, err, "group insert")
		keep := sampleJob(old.ID, 1_800_000_000_000)
		keep.ChildJobIDs = nil
		keep, err = s.JobInsert(ctx, keep)
		requireNoErr(t, err, "job insert")
		gone := sampleJob(old.ID, 0)
		gone.Name, gone.ChildJobIDs, gone.TriggerStatus = "gone", nil, xjob.StatusStopped
		gone, err = s.JobInsert(ctx, gone)
		requireNoErr(t, err, "job insert")

		a := sampleJob(-1, 1_800_000_000_000) // in the set's first group insert
		a.Name, a.ID, a.ChildJobIDs = "a", 900, []int64{-2}
		// Long GLUE sources (a backend may keep them apart from the job).
		a.GlueType, a.GlueSource = xjob.GlueShell, strings.Repeat("echo a\n", 3000)
		b := sampleJob(old.ID, 0)
		b.Name, b.ChildJobIDs, b.TriggerStatus = "b", []int64{keep.ID}, xjob.StatusStopped
		upd := keep
		upd.Description, upd.Applied, upd.ChildJobIDs = "updated", `{"spec":{}}`, []int64{-1}
		upd.GlueType, upd.GlueSource = xjob.GlueShell, strings.Repeat("echo upd\n", 3000)
		res, err := s.ChangeApply(ctx, driver.ChangeSet{
			GroupInserts: []xjob.Group{sampleGroup("changes-new", "New")},
			JobInserts:   []xjob.Job{a, b},
			JobUpdates:   []driver.JobUpdateParams{{Job: upd, ExpectVersion: keep.Version}},
			JobDeletes:   []int64{gone.ID},
		})
		requireNoErr(t, err, "change apply")
		if len(res.GroupIDs) != 1 || len(res.JobIDs) != 2 || res.JobIDs[0] != 900 {
			t.Fatalf("result %+v, want one group id and job ids [900 x]", res)
		}
		ga, err := s.JobGet(ctx, 900)
		requireNoErr(t, err, "get a")
		if ga.GroupID != res.GroupIDs[0] || !slices.Equal(ga.ChildJobIDs, []int64{res.JobIDs[1]}) || ga.Applied != a.Applied ||
			ga.GlueSource != a.GlueSource {
			t.Fatalf("a = group %d children %v applied %q, want group %d children [%d]", ga.GroupID, ga.ChildJobIDs,
				ga.Applied, res.GroupIDs[0], res.JobIDs[1])
		}
		if sh, ok := s.(interface{ Shards() int }); ok && ga.Shard != fire.ShardOf(900, sh.Shards()) {
			t.Fatalf("a's shard %d, want %d", ga.Shard, fire.ShardOf(900, sh.Shards()))
		}
		gu, err := s.JobGet(ctx, keep.ID)
		requireNoErr(t, err, "get updated")
		if gu.Description != "updated" || gu.Applied != upd.Applied || !slices.Equal(gu.ChildJobIDs, []int64{900}) ||
			gu.Version <= keep.Version || gu.GlueSource != upd.GlueSource {
			t.Fatalf("updated job %+v", gu)
		}
		_, err = s.JobGet(ctx, gone.ID)
		requireIs(t, err, xjob.ErrNotFound, "deleted job")
		requireNoErr(t, s.ChangeResume(ctx), "resume with nothing staged")
	})

	t.Run("FailedConditionWritesNothing", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		g, err := s.GroupInsert(ctx, sampleGroup("changes-cond", "Cond"))
		requireNoErr(t, err, "group insert")
		j := sampleJob(g.ID, 0)
		j.ChildJobIDs = nil
		j, err = s.JobInsert(ctx, j)
		requireNoErr(t, err, "job insert")
		fresh := sampleJob(g.ID, 0)
		fresh.Name, fresh.ChildJobIDs = "fresh", nil
		stale := j
		stale.Description = "stale edit"
		_, err = s.ChangeApply(ctx, driver.ChangeSet{
			GroupInserts: []xjob.Group{sampleGroup("changes-never", "Never")},
			JobInserts:   []xjob.Job{fresh},
			JobUpdates:   []driver.JobUpdateParams{{Job: stale, ExpectVersion: j.Version + 5}},
		})
		if err == nil {
			t.Fatal("a set with a stale version was written")
		}
		jobs, err := s.JobListByName(ctx, "fresh")
		requireNoErr(t, err, "list")
		groups, err := s.GroupList(ctx, driver.GroupListParams{AppName: "changes-never"})
		requireNoErr(t, err, "group list")
		if len(jobs) != 0 || len(groups) != 0 {
			t.Fatalf("failed set left %d jobs and %d groups", len(jobs), len(groups))
		}
		got, err := s.JobGet(ctx, j.ID)
		requireNoErr(t, err, "get")
		requireJob(t, "job after a failed set", got, j)

		// A taken explicit id fails the set too.
		taken := sampleJob(g.ID, 0)
		taken.ID, taken.Name, taken.ChildJobIDs = j.ID, "taken", nil
		_, err = s.ChangeApply(ctx, driver.ChangeSet{JobInserts: []xjob.Job{fresh, taken}})
		requireIs(t, err, xjob.ErrConflict, "insert under a taken id")
		if jobs, _ := s.JobListByName(ctx, "fresh"); len(jobs) != 0 {
			t.Fatal("a set with a taken id inserted its other job")
		}
	})
}
