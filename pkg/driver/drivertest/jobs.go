package drivertest

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// sampleJob returns a valid running CRON job of group, due at next.
func sampleJob(group int64, next int64) xjob.Job {
	j := xjob.Job{
		GroupID:         group,
		Name:            "sample.job-1",
		Description:     "sample job",
		Author:          "drivertest",
		AlarmEmail:      "ops@example.com",
		ScheduleType:    xjob.ScheduleCron,
		ScheduleConf:    "0 * * * * ?",
		TimeZone:        "Europe/Paris",
		MisfireStrategy: xjob.MisfireFireOnceNow,
		AfterCompletion: xjob.AfterKeep,
		RouteStrategy:   xjob.RouteRound,
		Handler:         "demoHandler",
		Param:           "p=1",
		BlockStrategy:   xjob.BlockDiscardLater,
		TimeoutSeconds:  30,
		FailRetryCount:  2,
		GlueType:        xjob.GlueBean,
		GlueRemark:      "init",
		GlueUpdatedAt:   1_700_000_000_000,
		ChildJobIDs:     []int64{7, 9},
		TriggerStatus:   xjob.StatusRunning,
		TriggerNextTime: next,
		CreatedAt:       1_700_000_000_000,
		UpdatedAt:       1_700_000_000_001,
		Declared:        `{"handler":"demoHandler","scheduleType":"CRON"}`,
		Applied:         `{"spec":{"name":"sample.job-1"}}`,
	}
	return j
}

// normJob makes empty and nil slices compare equal.
func normJob(j xjob.Job) xjob.Job {
	if len(j.ChildJobIDs) == 0 {
		j.ChildJobIDs = nil
	}
	return j
}

func requireJob(t *testing.T, what string, got, want xjob.Job) {
	t.Helper()
	if g, w := normJob(got), normJob(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, g, w)
	}
}

func jobID(j xjob.Job) int64 { return j.ID }

// jobCase is one case of the JobStore contract, run on a fresh store.
type jobCase struct {
	name string
	run  func(t *testing.T, s driver.JobStore)
}

// The JobStore contract, by concern. Each case is a subtest of
// ExerciseJobStore under its name.
var (
	// jobWriteCases: insert (allocated and given ids), read, conditional
	// update and delete.
	jobWriteCases = []jobCase{
		{"InsertGet", jobInsertGet},
		{"InsertWithID", jobInsertWithID},
		{"NotFound", jobNotFound},
		{"IDsUniqueAndIncreasing", jobIDsUniqueAndIncreasing},
		{"GetMany", jobGetMany},
		{"UpdateConditional", jobUpdateConditional},
		{"Delete", jobDelete},
		{"OnceAfterCompletion", jobOnceAfterCompletion},
	}
	// jobNameCases: the keys jobs as code matches jobs by.
	jobNameCases = []jobCase{
		{"ListByName", jobListByName},
		{"ListByNameRenameDelete", jobListByNameRenameDelete},
		{"ListByNameConcurrentInserts", jobListByNameConcurrentInserts},
		{"DeclarationRetired", jobDeclarationRetired},
	}
	// jobScanCases: what the scan and dispatch read and write: due jobs,
	// the version-conditional advance (alone, batched, raced) and the
	// slow-lane marks.
	jobScanCases = []jobCase{
		{"Due", exerciseJobsDue},
		{"Advance", jobAdvance},
		{"ConcurrentAdvanceOneWinner", jobConcurrentAdvanceOneWinner},
		{"AdvanceMany", exerciseAdvanceMany},
		{"ConcurrentAdvanceManyOneWinner", jobConcurrentAdvanceManyOneWinner},
		{"RecordSlow", jobRecordSlow},
		{"FixDelayPlannedOnResult", jobFixDelayPlannedOnResult},
	}
	// jobListCases: the admin's filtered, paged listing.
	jobListCases = []jobCase{
		{"List", exerciseJobList},
	}
)

// ExerciseJobStore runs the JobStore contract against stores from newStore.
func ExerciseJobStore(t *testing.T, newStore func(t *testing.T) driver.JobStore) {
	t.Helper()
	for _, cases := range [][]jobCase{jobWriteCases, jobNameCases, jobScanCases, jobListCases} {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, newStore(t))
			})
		}
	}
	// The one case that compares two stores.
	t.Run("AdvanceManyMatchesAdvance", func(t *testing.T) {
		t.Parallel()
		exerciseAdvanceManyMatchesAdvance(t, newStore(t), newStore(t))
	})
}

func jobOnceAfterCompletion(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	in := sampleJob(3, 1_700_000_060_000)
	in.ScheduleType, in.ScheduleConf, in.AfterCompletion = xjob.ScheduleOnce, "2023-11-14T22:14:20Z", xjob.AfterDelete
	got, err := s.JobInsert(ctx, in)
	requireNoErr(t, err, "insert")
	read, err := s.JobGet(ctx, got.ID)
	requireNoErr(t, err, "get")
	if read.ScheduleType != xjob.ScheduleOnce || read.AfterCompletion != xjob.AfterDelete {
		t.Fatalf("get = %s/%s, want ONCE/DELETE", read.ScheduleType, read.AfterCompletion)
	}
	read.AfterCompletion = xjob.AfterKeep
	upd, err := s.JobUpdate(ctx, driver.JobUpdateParams{Job: read, ExpectVersion: read.Version})
	requireNoErr(t, err, "update")
	if upd.AfterCompletion != xjob.AfterKeep {
		t.Fatalf("update returned afterCompletion %q, want KEEP", upd.AfterCompletion)
	}
	read, err = s.JobGet(ctx, got.ID)
	requireNoErr(t, err, "get after update")
	if read.AfterCompletion != xjob.AfterKeep {
		t.Fatalf("get after update = %q, want KEEP", read.AfterCompletion)
	}
}

func jobDeclarationRetired(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	if d, ok, err := s.DeclarationRetired(ctx, "app.handler"); err != nil || ok || d != "" {
		t.Fatalf("retired before any = %q %v %v, want none", d, ok, err)
	}
	requireNoErr(t, s.DeclarationRetire(ctx, "app.handler", `{"cron":"1"}`), "retire")
	requireNoErr(t, s.DeclarationRetire(ctx, "app.other", `{"cron":"2"}`), "retire other")
	requireNoErr(t, s.DeclarationRetire(ctx, "app.handler", `{"cron":"3"}`), "retire again")
	for key, want := range map[string]string{"app.handler": `{"cron":"3"}`, "app.other": `{"cron":"2"}`} {
		if d, ok, err := s.DeclarationRetired(ctx, key); err != nil || !ok || d != want {
			t.Fatalf("retired %s = %q %v %v, want %q (the last one)", key, d, ok, err, want)
		}
	}
}

func jobListByName(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	got, err := s.JobListByName(ctx, "app.handler")
	requireNoErr(t, err, "list by name, none")
	if len(got) != 0 {
		t.Fatalf("list by name before any insert = %d jobs", len(got))
	}
	var ids []int64
	for i, name := range []string{"app.handler", "other", "app.handler", ""} {
		j := sampleJob(int64(i+1), 0)
		j.Name = name
		j.TriggerStatus = xjob.StatusStopped
		ins, err := s.JobInsert(ctx, j)
		requireNoErr(t, err, "insert")
		if name == "app.handler" {
			ids = append(ids, ins.ID)
		}
	}
	got, err = s.JobListByName(ctx, "app.handler")
	requireNoErr(t, err, "list by name")
	if g := slices.Collect(func(yield func(int64) bool) {
		for _, j := range got {
			if !yield(j.ID) {
				return
			}
		}
	}); !slices.Equal(g, ids) {
		t.Fatalf("list by name = ids %v, want %v in id order", g, ids)
	}
	if got[0].Declared != sampleJob(1, 0).Declared {
		t.Fatalf("declared = %q, not stored", got[0].Declared)
	}
	got, err = s.JobListByName(ctx, "")
	requireNoErr(t, err, "list by empty name")
	if len(got) != 0 {
		t.Fatalf("list by the empty name = %d jobs, want none (unnamed jobs have no key)", len(got))
	}
	first, err := s.JobGet(ctx, ids[0])
	requireNoErr(t, err, "get")
	first.Name, first.Declared = "renamed", ""
	_, err = s.JobUpdate(ctx, driver.JobUpdateParams{Job: first, ExpectVersion: first.Version})
	requireNoErr(t, err, "rename")
	got, err = s.JobListByName(ctx, "app.handler")
	requireNoErr(t, err, "list after rename")
	if len(got) != 1 || got[0].ID != ids[1] {
		t.Fatalf("after renaming job %d, list by name = %+v, want only job %d", ids[0], got, ids[1])
	}
	read, err := s.JobGet(ctx, ids[0])
	requireNoErr(t, err, "get renamed")
	if read.Declared != "" {
		t.Fatalf("update did not clear declared: %q", read.Declared)
	}
}

// jobListByNameRenameDelete: the lookup follows every write that gives
// or takes a name at once (the declare path's duplicate check reads right
// after a create): renames away and back, a second rename in a row, a
// delete, and a new job taking a deleted job's name.
func jobListByNameRenameDelete(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	byName := func(name string) []int64 {
		t.Helper()
		got, err := s.JobListByName(ctx, name)
		requireNoErr(t, err, "list by name "+name)
		return ids(got, jobID)
	}
	rename := func(id int64, name string) {
		t.Helper()
		j, err := s.JobGet(ctx, id)
		requireNoErr(t, err, "get")
		j.Name = name
		_, err = s.JobUpdate(ctx, driver.JobUpdateParams{Job: j, ExpectVersion: j.Version})
		requireNoErr(t, err, "rename to "+name)
	}
	j := sampleJob(1, 0)
	j.Name = "app.a"
	a, err := s.JobInsert(ctx, j)
	requireNoErr(t, err, "insert")
	requireIDs(t, "app.a after insert", byName("app.a"), []int64{a.ID})

	rename(a.ID, "app.b")
	requireIDs(t, "app.a after rename to app.b", byName("app.a"), nil)
	requireIDs(t, "app.b after rename", byName("app.b"), []int64{a.ID})
	rename(a.ID, "app.c")
	requireIDs(t, "app.b after rename to app.c", byName("app.b"), nil)
	rename(a.ID, "app.a")
	requireIDs(t, "app.a after renaming back", byName("app.a"), []int64{a.ID})
	requireIDs(t, "app.c after renaming back", byName("app.c"), nil)

	// An update that keeps the name keeps the job findable.
	cur, err := s.JobGet(ctx, a.ID)
	requireNoErr(t, err, "get")
	cur.Description = "edited"
	_, err = s.JobUpdate(ctx, driver.JobUpdateParams{Job: cur, ExpectVersion: cur.Version})
	requireNoErr(t, err, "edit")
	requireIDs(t, "app.a after an edit", byName("app.a"), []int64{a.ID})

	// A stale update to another name fails and changes no lookup.
	stale := cur
	stale.Name = "app.d"
	_, err = s.JobUpdate(ctx, driver.JobUpdateParams{Job: stale, ExpectVersion: cur.Version})
	requireIs(t, err, xjob.ErrConflict, "stale rename")
	requireIDs(t, "app.d after a failed rename", byName("app.d"), nil)
	requireIDs(t, "app.a after a failed rename", byName("app.a"), []int64{a.ID})

	// Unnamed, then deleted; a new job takes the name.
	rename(a.ID, "")
	requireIDs(t, "app.a after clearing the name", byName("app.a"), nil)
	rename(a.ID, "app.a")
	requireNoErr(t, s.JobDelete(ctx, a.ID), "delete")
	requireIDs(t, "app.a after delete", byName("app.a"), nil)
	b, err := s.JobInsert(ctx, j)
	requireNoErr(t, err, "insert again")
	requireIDs(t, "app.a after a new insert", byName("app.a"), []int64{b.ID})

	// A deleted job's id given again (an import) with the same name.
	requireNoErr(t, s.JobDelete(ctx, b.ID), "delete again")
	again := j
	again.ID = b.ID
	_, err = s.JobInsert(ctx, again)
	requireNoErr(t, err, "insert with the deleted id")
	requireIDs(t, "app.a after reusing the id", byName("app.a"), []int64{b.ID})
	requireIDs(t, "app.a looked up again", byName("app.a"), []int64{b.ID})
}

// jobListByNameConcurrentInserts: jobs of one name created at once (two
// executors declaring one job) are visible as soon as each insert
// returns, so of two creators at least one sees the other and the admin
// can keep the lowest id.
func jobListByNameConcurrentInserts(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	const n = 6
	var wg sync.WaitGroup
	seen := make([][]int64, n)
	created := make([]int64, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := sampleJob(1, 0)
			j.Name = "app.same"
			ins, err := s.JobInsert(ctx, j)
			if err != nil {
				errs[i] = err
				return
			}
			created[i] = ins.ID
			got, err := s.JobListByName(ctx, "app.same")
			errs[i] = err
			seen[i] = ids(got, jobID)
		}()
	}
	wg.Wait()
	for i := range n {
		requireNoErr(t, errs[i], "insert and list")
		if !slices.Contains(seen[i], created[i]) {
			t.Fatalf("creator of job %d listed %v: its own job missing", created[i], seen[i])
		}
		if !slices.IsSorted(seen[i]) {
			t.Fatalf("list by name %v not in id order", seen[i])
		}
	}
	all, err := s.JobListByName(ctx, "app.same")
	requireNoErr(t, err, "list")
	want := slices.Clone(created)
	slices.Sort(want)
	requireIDs(t, "app.same after the inserts", ids(all, jobID), want)
	// Of two creators, the one that listed last listed after the other's
	// insert returned: at least one of them saw the other's job.
	for i := range n {
		for k := i + 1; k < n; k++ {
			if !slices.Contains(seen[i], created[k]) && !slices.Contains(seen[k], created[i]) {
				t.Fatalf("creators of jobs %d and %d listed %v and %v: neither saw the other",
					created[i], created[k], seen[i], seen[k])
			}
		}
	}
}

func jobInsertGet(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	in := sampleJob(3, 1_700_000_060_000)
	got, err := s.JobInsert(ctx, in)
	requireNoErr(t, err, "insert")
	if got.ID <= 0 || got.Version != 1 || got.Revision != 1 || got.Shard < 0 {
		t.Fatalf("insert returned id %d shard %d version %d revision %d", got.ID, got.Shard, got.Version, got.Revision)
	}
	want := in
	want.ID, want.Shard, want.Version, want.Revision = got.ID, got.Shard, 1, 1
	requireJob(t, "insert result", got, want)
	read, err := s.JobGet(ctx, got.ID)
	requireNoErr(t, err, "get")
	requireJob(t, "get", read, want)
}

func jobInsertWithID(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	in := sampleJob(3, 1_700_000_060_000)
	in.ID = 5000
	got, err := s.JobInsert(ctx, in)
	requireNoErr(t, err, "insert with id")
	if got.ID != 5000 || got.Version != 1 || got.Revision != 1 {
		t.Fatalf("insert with id 5000 returned id %d version %d revision %d", got.ID, got.Version, got.Revision)
	}
	read, err := s.JobGet(ctx, 5000)
	requireNoErr(t, err, "get")
	requireJob(t, "get", read, got)
	_, err = s.JobInsert(ctx, in)
	requireIs(t, err, xjob.ErrConflict, "insert of a taken id")
	next, err := s.JobInsert(ctx, sampleJob(3, 0))
	requireNoErr(t, err, "insert after an explicit id")
	if next.ID <= 5000 {
		t.Fatalf("an allocated id %d is not above the explicit id 5000", next.ID)
	}
	low := sampleJob(3, 0)
	low.ID = 17
	got, err = s.JobInsert(ctx, low)
	requireNoErr(t, err, "insert of a free id below the counter")
	if got.ID != 17 {
		t.Fatalf("insert with id 17 returned id %d", got.ID)
	}
}

func jobNotFound(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	_, err := s.JobGet(ctx, 424242)
	requireIs(t, err, xjob.ErrNotFound, "get missing")
	requireIs(t, s.JobDelete(ctx, 424242), xjob.ErrNotFound, "delete missing")
	j := sampleJob(1, 0)
	j.ID = 424242
	_, err = s.JobUpdate(ctx, driver.JobUpdateParams{Job: j, ExpectVersion: 1})
	requireMissing(t, err, "update missing")
	requireMissing(t, s.JobAdvance(ctx, driver.JobAdvanceParams{ID: 424242, ExpectVersion: 1, TriggerNextTime: 5}), "advance missing")
	many, err := s.JobGetMany(ctx, []int64{424242, 424243})
	requireNoErr(t, err, "get many missing")
	if len(many) != 0 {
		t.Fatalf("get many of missing ids returned %d jobs", len(many))
	}
}

func jobIDsUniqueAndIncreasing(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	var last int64
	for i := range 5 {
		j, err := s.JobInsert(ctx, sampleJob(1, int64(i)))
		requireNoErr(t, err, "insert")
		if j.ID <= last {
			t.Fatalf("insert %d: id %d not above previous %d", i, j.ID, last)
		}
		last = j.ID
	}
	const n = 8
	got := make([]int64, n)
	errs := race(n, func(i int) error {
		j, err := s.JobInsert(ctx, sampleJob(1, 0))
		got[i] = j.ID
		return err
	})
	seen := map[int64]bool{}
	for i, err := range errs {
		requireNoErr(t, err, "concurrent insert")
		if got[i] <= last || seen[got[i]] {
			t.Fatalf("concurrent insert gave id %d (previous max %d, seen %v)", got[i], last, seen)
		}
		seen[got[i]] = true
	}
}

func jobGetMany(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	a, err := s.JobInsert(ctx, sampleJob(1, 0))
	requireNoErr(t, err, "insert")
	b, err := s.JobInsert(ctx, sampleJob(2, 0))
	requireNoErr(t, err, "insert")
	_, err = s.JobInsert(ctx, sampleJob(3, 0))
	requireNoErr(t, err, "insert")
	many, err := s.JobGetMany(ctx, []int64{b.ID, 999_999, a.ID})
	requireNoErr(t, err, "get many")
	slices.SortFunc(many, func(x, y xjob.Job) int { return cmp.Compare(x.ID, y.ID) })
	if len(many) != 2 {
		t.Fatalf("get many: got %d jobs, want 2", len(many))
	}
	requireJob(t, "get many [0]", many[0], a)
	requireJob(t, "get many [1]", many[1], b)
	none, err := s.JobGetMany(ctx, nil)
	requireNoErr(t, err, "get many of none")
	if len(none) != 0 {
		t.Fatalf("get many of no ids returned %d jobs", len(none))
	}
}

func jobUpdateConditional(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	j, err := s.JobInsert(ctx, sampleJob(1, 100))
	requireNoErr(t, err, "insert")
	edit := j
	edit.Description = "edited"
	edit.ScheduleConf = "0 0 * * * ?"
	edit.ChildJobIDs = []int64{11}
	edit.Revision = j.Revision + 1
	edit.UpdatedAt = j.UpdatedAt + 5
	got, err := s.JobUpdate(ctx, driver.JobUpdateParams{Job: edit, ExpectVersion: j.Version})
	requireNoErr(t, err, "update")
	want := edit
	want.Version = j.Version + 1
	requireJob(t, "update result", got, want)
	read, err := s.JobGet(ctx, j.ID)
	requireNoErr(t, err, "get")
	requireJob(t, "get after update", read, want)

	stale := edit
	stale.Description = "lost"
	_, err = s.JobUpdate(ctx, driver.JobUpdateParams{Job: stale, ExpectVersion: j.Version})
	requireIs(t, err, xjob.ErrConflict, "update with stale version")
	read, err = s.JobGet(ctx, j.ID)
	requireNoErr(t, err, "get")
	requireJob(t, "get after lost update", read, want)

	// Revision is stored as given: an edit that does not touch the schedule keeps it.
	same := read
	same.Author = "someone else"
	got, err = s.JobUpdate(ctx, driver.JobUpdateParams{Job: same, ExpectVersion: read.Version})
	requireNoErr(t, err, "second update")
	if got.Revision != read.Revision || got.Version != read.Version+1 {
		t.Fatalf("second update: revision %d version %d, want %d %d", got.Revision, got.Version, read.Revision, read.Version+1)
	}
}

func jobAdvance(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	j, err := s.JobInsert(ctx, sampleJob(1, 1000))
	requireNoErr(t, err, "insert")
	requireNoErr(t, s.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: j.Version,
		TriggerLastTime: 1000, TriggerNextTime: 61_000}), "advance")
	got, err := s.JobGet(ctx, j.ID)
	requireNoErr(t, err, "get")
	want := j
	want.TriggerLastTime, want.TriggerNextTime, want.Version = 1000, 61_000, j.Version+1
	requireJob(t, "after advance", got, want)

	err = s.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: j.Version,
		TriggerLastTime: 1000, TriggerNextTime: 61_000})
	requireIs(t, err, xjob.ErrConflict, "advance with stale version")
	_, err = s.JobUpdate(ctx, driver.JobUpdateParams{Job: j, ExpectVersion: j.Version})
	requireIs(t, err, xjob.ErrConflict, "update with version from before the advance")

	requireNoErr(t, s.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: got.Version, Stop: true,
		TriggerLastTime: 5, TriggerNextTime: 6}), "advance stop")
	stopped, err := s.JobGet(ctx, j.ID)
	requireNoErr(t, err, "get")
	want.TriggerStatus, want.TriggerLastTime, want.TriggerNextTime = xjob.StatusStopped, 0, 0
	want.Revision, want.Version = got.Revision, got.Version+1
	requireJob(t, "after stop", stopped, want)
	due, err := s.JobsDue(ctx, driver.JobsDueParams{Shard: j.Shard, Before: 1 << 62, Limit: 10})
	requireNoErr(t, err, "due")
	requireIDs(t, "due after stop", ids(due, jobID), nil)
}

// jobFixDelayPlannedOnResult walks a FIX_DELAY job through the writes
// that plan it: the scan fires it and parks it at its lost-run fallback,
// then results of that run race to plan the next fire at end + delay.
// One result wins, the due index follows it, and the scan's fallback
// planned from the parked version loses.
func jobFixDelayPlannedOnResult(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	in := sampleJob(1, 10_000)
	in.ScheduleType, in.ScheduleConf, in.TimeZone = xjob.ScheduleFixDelay, "5", "UTC"
	j, err := s.JobInsert(ctx, in)
	requireNoErr(t, err, "insert")
	read, err := s.JobGet(ctx, j.ID)
	requireNoErr(t, err, "get")
	if read.ScheduleType != xjob.ScheduleFixDelay || read.ScheduleConf != "5" {
		t.Fatalf("get = %s %q, want FIX_DELAY \"5\"", read.ScheduleType, read.ScheduleConf)
	}
	due := func(before int64) []int64 {
		t.Helper()
		jobs, err := s.JobsDue(ctx, driver.JobsDueParams{Shard: j.Shard, Before: before, Limit: 10})
		requireNoErr(t, err, "due")
		return ids(jobs, jobID)
	}
	requireIDs(t, "due at its first fire", due(10_000), []int64{j.ID})

	park := 10_000 + (in.RunWait() + 5*time.Second).Milliseconds()
	requireNoErr(t, s.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: j.Version,
		TriggerLastTime: 10_000, TriggerNextTime: park}), "park")
	requireIDs(t, "due while the run is out", due(park-1), nil)
	parked, err := s.JobGet(ctx, j.ID)
	requireNoErr(t, err, "get parked")

	const n = 8
	errs := race(n, func(i int) error {
		return s.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: parked.Version,
			TriggerLastTime: 10_000, TriggerNextTime: 12_000 + int64(i) + 5_000})
	})
	w := oneWinner(t, errs, xjob.ErrConflict, "racing results")
	next := 17_000 + int64(w)
	got, err := s.JobGet(ctx, j.ID)
	requireNoErr(t, err, "get planned")
	if got.TriggerNextTime != next || got.TriggerLastTime != 10_000 || got.Version != parked.Version+1 || got.Revision != j.Revision {
		t.Fatalf("after the results: next %d last %d version %d revision %d, want %d 10000 %d %d",
			got.TriggerNextTime, got.TriggerLastTime, got.Version, got.Revision, next, parked.Version+1, j.Revision)
	}
	requireIDs(t, "due before end + delay", due(next-1), nil)
	requireIDs(t, "due at end + delay", due(next), []int64{j.ID})

	err = s.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: parked.Version,
		TriggerLastTime: park, TriggerNextTime: park + park - 10_000})
	requireIs(t, err, xjob.ErrConflict, "fallback planned from the parked version")
}

func jobConcurrentAdvanceOneWinner(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	j, err := s.JobInsert(ctx, sampleJob(1, 1000))
	requireNoErr(t, err, "insert")
	const n = 8
	errs := race(n, func(i int) error {
		return s.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: j.Version,
			TriggerLastTime: 1000, TriggerNextTime: 2000 + int64(i)})
	})
	w := oneWinner(t, errs, xjob.ErrConflict, "concurrent advance")
	got, err := s.JobGet(ctx, j.ID)
	requireNoErr(t, err, "get")
	if got.Version != j.Version+1 || got.TriggerNextTime != 2000+int64(w) {
		t.Fatalf("after race: version %d next %d, want %d %d", got.Version, got.TriggerNextTime, j.Version+1, 2000+w)
	}
}

func jobConcurrentAdvanceManyOneWinner(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	var jobs []xjob.Job
	for range 3 {
		j, err := s.JobInsert(ctx, sampleJob(1, 1000))
		requireNoErr(t, err, "insert")
		jobs = append(jobs, j)
	}
	const n = 4
	type result struct {
		errs []error
		err  error
	}
	res := make([]result, n)
	race(n, func(i int) error {
		ps := make([]driver.JobAdvanceParams, len(jobs))
		for k, j := range jobs {
			ps[k] = driver.JobAdvanceParams{ID: j.ID, ExpectVersion: j.Version,
				TriggerLastTime: 1000, TriggerNextTime: 2000 + int64(i)}
		}
		res[i].errs, res[i].err = s.JobAdvanceMany(ctx, ps)
		return res[i].err
	})
	for k, j := range jobs {
		per := make([]error, n)
		for i, r := range res {
			requireNoErr(t, r.err, "advance many")
			if len(r.errs) != len(jobs) {
				t.Fatalf("call %d: %d results for %d advances", i, len(r.errs), len(jobs))
			}
			per[i] = r.errs[k]
		}
		w := oneWinner(t, per, xjob.ErrConflict, fmt.Sprintf("job %d", k))
		got, err := s.JobGet(ctx, j.ID)
		requireNoErr(t, err, "get")
		if got.Version != j.Version+1 || got.TriggerNextTime != 2000+int64(w) {
			t.Fatalf("job %d after race: version %d next %d, want %d %d", k, got.Version, got.TriggerNextTime, j.Version+1, 2000+w)
		}
	}
}

func jobRecordSlow(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	j, err := s.JobInsert(ctx, sampleJob(1, 1000))
	requireNoErr(t, err, "insert")
	const minute = 28_333_333
	requireNoErr(t, s.JobRecordSlow(ctx, j.ID, minute), "record slow")
	requireNoErr(t, s.JobRecordSlow(ctx, j.ID, minute), "record slow")
	got, err := s.JobGet(ctx, j.ID)
	requireNoErr(t, err, "get")
	if got.SlowMinute != minute || got.SlowCount != 2 || got.Version != j.Version {
		t.Fatalf("after two slow dispatches: minute %d count %d version %d, want %d 2 %d",
			got.SlowMinute, got.SlowCount, got.Version, minute, j.Version)
	}
	requireNoErr(t, s.JobRecordSlow(ctx, j.ID, minute+1), "record slow next minute")
	got, err = s.JobGet(ctx, j.ID)
	requireNoErr(t, err, "get")
	if got.SlowMinute != minute+1 || got.SlowCount != 1 {
		t.Fatalf("next minute: minute %d count %d, want %d 1", got.SlowMinute, got.SlowCount, minute+1)
	}
	// The version did not move, so a scan holding it still advances.
	requireNoErr(t, s.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: j.Version, TriggerNextTime: 5}),
		"advance after slow records")
}

func jobDelete(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	j, err := s.JobInsert(ctx, sampleJob(1, 1000))
	requireNoErr(t, err, "insert")
	requireNoErr(t, s.JobDelete(ctx, j.ID), "delete")
	_, err = s.JobGet(ctx, j.ID)
	requireIs(t, err, xjob.ErrNotFound, "get deleted")
	requireIs(t, s.JobDelete(ctx, j.ID), xjob.ErrNotFound, "delete twice")
	due, err := s.JobsDue(ctx, driver.JobsDueParams{Shard: j.Shard, Before: 1 << 62, Limit: 10})
	requireNoErr(t, err, "due")
	requireIDs(t, "due after delete", ids(due, jobID), nil)
	k, err := s.JobInsert(ctx, sampleJob(1, 1000))
	requireNoErr(t, err, "insert after delete")
	if k.ID <= j.ID {
		t.Fatalf("id %d reused or smaller after deleting %d", k.ID, j.ID)
	}
}

func exerciseJobsDue(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	const now = 1_700_000_000_000
	var all []xjob.Job
	for i := range 60 {
		j := sampleJob(1, now+int64(i%7)*1000) // many ties on next time
		switch i % 10 {
		case 3: // stopped but with a next time: never due
			j.TriggerStatus = xjob.StatusStopped
		case 5: // far in the future
			j.TriggerNextTime = now + 3_600_000
		}
		got, err := s.JobInsert(ctx, j)
		requireNoErr(t, err, "insert")
		all = append(all, got)
	}
	// Stop one running job through an update and one through advance.
	upd := all[0]
	upd.TriggerStatus = xjob.StatusStopped
	upd.Revision++
	upd, err := s.JobUpdate(ctx, driver.JobUpdateParams{Job: upd, ExpectVersion: all[0].Version})
	requireNoErr(t, err, "stop by update")
	all[0] = upd
	requireNoErr(t, s.JobAdvance(ctx, driver.JobAdvanceParams{ID: all[1].ID, ExpectVersion: all[1].Version, Stop: true}), "stop by advance")
	all[1], err = s.JobGet(ctx, all[1].ID)
	requireNoErr(t, err, "get")

	shards := map[int]bool{}
	for _, j := range all {
		shards[j.Shard] = true
	}
	before := int64(now + 4000) // inclusive: jobs due exactly then are in
	for shard := range shards {
		var want []xjob.Job
		for _, j := range all {
			if j.Shard == shard && j.TriggerStatus == xjob.StatusRunning && j.TriggerNextTime <= before {
				want = append(want, j)
			}
		}
		slices.SortFunc(want, func(a, b xjob.Job) int {
			return cmp.Or(cmp.Compare(a.TriggerNextTime, b.TriggerNextTime), cmp.Compare(a.ID, b.ID))
		})
		what := fmt.Sprintf("shard %d", shard)
		got, err := s.JobsDue(ctx, driver.JobsDueParams{Shard: shard, Before: before, Limit: 1000})
		requireNoErr(t, err, what)
		requireIDs(t, what, ids(got, jobID), ids(want, jobID))
		for i := range got {
			requireJob(t, what+" record", got[i], want[i])
		}

		// Keyset pages of 2 through the cursor give the same jobs.
		var paged []xjob.Job
		var after driver.DueCursor
		for range 100 {
			page, err := s.JobsDue(ctx, driver.JobsDueParams{Shard: shard, Before: before, After: after, Limit: 2})
			requireNoErr(t, err, what+" page")
			if len(page) > 2 {
				t.Fatalf("%s: page of %d jobs with limit 2", what, len(page))
			}
			if len(page) == 0 {
				break
			}
			paged = append(paged, page...)
			last := page[len(page)-1]
			after = driver.DueCursor{NextTime: last.TriggerNextTime, ID: last.ID}
		}
		requireIDs(t, what+" paged", ids(paged, jobID), ids(want, jobID))
	}
	if len(shards) < 2 {
		t.Logf("all jobs landed in one shard; shard isolation not exercised")
	}
	// Before is inclusive at the exact instant.
	for _, j := range all {
		if j.TriggerStatus == xjob.StatusRunning {
			got, err := s.JobsDue(ctx, driver.JobsDueParams{Shard: j.Shard, Before: j.TriggerNextTime, Limit: 1000})
			requireNoErr(t, err, "due at exact time")
			if !slices.Contains(ids(got, jobID), j.ID) {
				t.Fatalf("job %d due at %d not returned for Before=%d", j.ID, j.TriggerNextTime, j.TriggerNextTime)
			}
			got, err = s.JobsDue(ctx, driver.JobsDueParams{Shard: j.Shard, Before: j.TriggerNextTime - 1, Limit: 1000})
			requireNoErr(t, err, "due just before")
			if slices.Contains(ids(got, jobID), j.ID) {
				t.Fatalf("job %d due at %d returned for Before=%d", j.ID, j.TriggerNextTime, j.TriggerNextTime-1)
			}
			break
		}
	}
}

func exerciseJobList(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	var all []xjob.Job
	for i := range 12 {
		j := sampleJob(int64(1+i%3), 1000)
		j.Description = fmt.Sprintf("job number %02d", i)
		j.Handler = []string{"alphaHandler", "betaHandler"}[i%2]
		j.Author = []string{"ann", "bob", "carol", "dave"}[i%4]
		if i%4 == 1 {
			j.TriggerStatus = xjob.StatusStopped
		}
		got, err := s.JobInsert(ctx, j)
		requireNoErr(t, err, "insert")
		all = append(all, got)
	}
	stopped, running := xjob.StatusStopped, xjob.StatusRunning
	cases := []struct {
		name string
		p    driver.JobListParams
		keep func(xjob.Job) bool
	}{
		{"all", driver.JobListParams{}, func(xjob.Job) bool { return true }},
		{"group", driver.JobListParams{GroupID: 2}, func(j xjob.Job) bool { return j.GroupID == 2 }},
		{"stopped", driver.JobListParams{Status: &stopped}, func(j xjob.Job) bool { return j.TriggerStatus == stopped }},
		{"running in group 1", driver.JobListParams{Status: &running, GroupID: 1},
			func(j xjob.Job) bool { return j.TriggerStatus == running && j.GroupID == 1 }},
		{"description substring", driver.JobListParams{Description: "number 1"},
			func(j xjob.Job) bool { return j.Description >= "job number 10" }},
		{"handler substring", driver.JobListParams{Handler: "beta"}, func(j xjob.Job) bool { return j.Handler == "betaHandler" }},
		{"author substring", driver.JobListParams{Author: "aro"}, func(j xjob.Job) bool { return j.Author == "carol" }},
		{"no match", driver.JobListParams{Author: "zed"}, func(xjob.Job) bool { return false }},
	}
	for _, c := range cases {
		var want []int64
		for _, j := range all {
			if c.keep(j) {
				want = append(want, j.ID)
			}
		}
		for _, limit := range []int{1000, 2} {
			p := c.p
			p.Limit = limit
			var got []xjob.Job
			for range 100 {
				page, err := s.JobList(ctx, p)
				requireNoErr(t, err, c.name)
				if len(page.Jobs) > limit {
					t.Fatalf("%s: page of %d with limit %d", c.name, len(page.Jobs), limit)
				}
				got = append(got, page.Jobs...)
				if page.Next == "" {
					break
				}
				p.Cursor = page.Next
			}
			requireIDs(t, fmt.Sprintf("%s (limit %d)", c.name, limit), ids(got, jobID), want)
		}
	}
}

// exerciseAdvanceMany mixes successes, stale versions, a stop and a missing
// job in one call: each item gets its own outcome, and only the winners
// move.
func exerciseAdvanceMany(t *testing.T, s driver.JobStore) {
	ctx := t.Context()
	var jobs []xjob.Job
	for i := range 4 {
		j, err := s.JobInsert(ctx, sampleJob(1, 1000+int64(i)))
		requireNoErr(t, err, "insert")
		jobs = append(jobs, j)
	}
	// jobs[1] moves on before the batch: its batch item is stale.
	requireNoErr(t, s.JobAdvance(ctx, driver.JobAdvanceParams{ID: jobs[1].ID, ExpectVersion: jobs[1].Version,
		TriggerLastTime: 1, TriggerNextTime: 2}), "advance before batch")

	errs, err := s.JobAdvanceMany(ctx, nil)
	requireNoErr(t, err, "advance many of none")
	if len(errs) != 0 {
		t.Fatalf("advance many of none: %d results", len(errs))
	}

	ps := []driver.JobAdvanceParams{
		{ID: jobs[0].ID, ExpectVersion: jobs[0].Version, TriggerLastTime: 1000, TriggerNextTime: 61_000},
		{ID: jobs[1].ID, ExpectVersion: jobs[1].Version, TriggerLastTime: 1001, TriggerNextTime: 61_001},
		{ID: 424242, ExpectVersion: 1, TriggerLastTime: 1, TriggerNextTime: 2},
		{ID: jobs[2].ID, ExpectVersion: jobs[2].Version, Stop: true, TriggerLastTime: 5, TriggerNextTime: 6},
		{ID: jobs[3].ID, ExpectVersion: jobs[3].Version + 7, TriggerLastTime: 1003, TriggerNextTime: 61_003},
	}
	errs, err = s.JobAdvanceMany(ctx, ps)
	requireNoErr(t, err, "advance many")
	if len(errs) != len(ps) {
		t.Fatalf("advance many: %d results for %d advances", len(errs), len(ps))
	}
	requireNoErr(t, errs[0], "item 0 (current version)")
	requireIs(t, errs[1], xjob.ErrConflict, "item 1 (stale version)")
	requireMissing(t, errs[2], "item 2 (missing job)")
	requireNoErr(t, errs[3], "item 3 (stop)")
	requireIs(t, errs[4], xjob.ErrConflict, "item 4 (future version)")

	want := []xjob.Job{jobs[0], jobs[1], jobs[2], jobs[3]}
	want[0].TriggerLastTime, want[0].TriggerNextTime, want[0].Version = 1000, 61_000, jobs[0].Version+1
	want[1].TriggerLastTime, want[1].TriggerNextTime, want[1].Version = 1, 2, jobs[1].Version+1
	want[2].TriggerStatus, want[2].TriggerLastTime, want[2].TriggerNextTime, want[2].Version = xjob.StatusStopped, 0, 0, jobs[2].Version+1
	for i, w := range want {
		got, err := s.JobGet(ctx, w.ID)
		requireNoErr(t, err, "get")
		requireJob(t, fmt.Sprintf("job %d after advance many", i), got, w)
	}
	due, err := s.JobsDue(ctx, driver.JobsDueParams{Shard: jobs[2].Shard, Before: 1 << 62, Limit: 10})
	requireNoErr(t, err, "due")
	for _, d := range due {
		if d.ID == jobs[2].ID {
			t.Fatalf("job stopped by advance many still due: %+v", d)
		}
	}

	// The same job twice with one version: as two JobAdvance calls in a
	// row, the first wins and the second is stale.
	errs, err = s.JobAdvanceMany(ctx, []driver.JobAdvanceParams{
		{ID: jobs[0].ID, ExpectVersion: want[0].Version, TriggerLastTime: 2000, TriggerNextTime: 62_000},
		{ID: jobs[0].ID, ExpectVersion: want[0].Version, TriggerLastTime: 3000, TriggerNextTime: 63_000},
	})
	requireNoErr(t, err, "advance many, same job twice")
	requireNoErr(t, errs[0], "first of same job")
	requireIs(t, errs[1], xjob.ErrConflict, "second of same job")
	got, err := s.JobGet(ctx, jobs[0].ID)
	requireNoErr(t, err, "get")
	if got.TriggerNextTime != 62_000 || got.Version != want[0].Version+1 {
		t.Fatalf("same job twice: next %d version %d, want 62000 %d", got.TriggerNextTime, got.Version, want[0].Version+1)
	}
}

// exerciseAdvanceManyMatchesAdvance applies one sequence of advances to two
// stores, one by one with JobAdvance and at once with JobAdvanceMany: the
// outcomes and the stored jobs must be the same.
func exerciseAdvanceManyMatchesAdvance(t *testing.T, one, many driver.JobStore) {
	ctx := t.Context()
	var a, b []xjob.Job
	for i := range 6 {
		ja, err := one.JobInsert(ctx, sampleJob(1, 1000+int64(i)))
		requireNoErr(t, err, "insert")
		jb, err := many.JobInsert(ctx, sampleJob(1, 1000+int64(i)))
		requireNoErr(t, err, "insert")
		a, b = append(a, ja), append(b, jb)
	}
	// Item k targets job k%6 with a version that is current, stale or
	// ahead depending on k, and stops every fourth.
	var pa, pb []driver.JobAdvanceParams
	for k := range 18 {
		i := k % 6
		v := a[i].Version + int64(k/6) - int64(k%3%2) // some current, some off by one
		p := driver.JobAdvanceParams{ExpectVersion: v, TriggerLastTime: int64(k), TriggerNextTime: int64(5000 + k), Stop: k%4 == 3}
		p.ID = a[i].ID
		pa = append(pa, p)
		p.ID = b[i].ID
		pb = append(pb, p)
	}
	pa = append(pa, driver.JobAdvanceParams{ID: 999_999, ExpectVersion: 1})
	pb = append(pb, driver.JobAdvanceParams{ID: 999_999, ExpectVersion: 1})

	errsMany, err := many.JobAdvanceMany(ctx, pb)
	requireNoErr(t, err, "advance many")
	if len(errsMany) != len(pb) {
		t.Fatalf("advance many: %d results for %d advances", len(errsMany), len(pb))
	}
	wins := 0
	for k, p := range pa {
		errOne := one.JobAdvance(ctx, p)
		switch {
		case errOne == nil && errsMany[k] == nil:
			wins++
		case errOne == nil || errsMany[k] == nil:
			t.Fatalf("item %d: JobAdvance %v, JobAdvanceMany %v", k, errOne, errsMany[k])
		case errors.Is(errOne, xjob.ErrConflict) != errors.Is(errsMany[k], xjob.ErrConflict):
			t.Fatalf("item %d: JobAdvance %v, JobAdvanceMany %v", k, errOne, errsMany[k])
		}
	}
	if wins == 0 || wins == len(pa) {
		t.Fatalf("%d of %d advances won: the sequence should mix outcomes", wins, len(pa))
	}
	for i := range a {
		ga, err := one.JobGet(ctx, a[i].ID)
		requireNoErr(t, err, "get")
		gb, err := many.JobGet(ctx, b[i].ID)
		requireNoErr(t, err, "get")
		gb.ID, gb.Shard = ga.ID, ga.Shard
		requireJob(t, fmt.Sprintf("job %d", i), gb, ga)
	}
}
