package sqlitestore

import (
	"context"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// LogJobs answers what LogGetMany and JobGetMany would: each existing
// log's job id, and its job as stored — also right after another write
// changed the job behind the cache, or deleted it — and nothing for an
// unknown log id.
func TestLogJobsMatchesTheStore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(t *testing.T, db *DB, j xjob.Job) // after the cache holds j
		found  bool
	}{
		{"cached job", func(*testing.T, *DB, xjob.Job) {}, true},
		{"job edited", func(t *testing.T, db *DB, j xjob.Job) {
			j.ChildJobIDs, j.Description = []int64{j.ID + 100}, "edited"
			if _, err := db.JobUpdate(context.Background(), driver.JobUpdateParams{Job: j, ExpectVersion: j.Version}); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"job advanced", func(t *testing.T, db *DB, j xjob.Job) {
			if err := db.JobAdvance(context.Background(), driver.JobAdvanceParams{ID: j.ID, ExpectVersion: j.Version,
				TriggerLastTime: 7000, TriggerNextTime: 8000}); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"job deleted", func(t *testing.T, db *DB, j xjob.Job) {
			if err := db.JobDelete(context.Background(), j.ID); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := setup(t, Options{})
			j := xjob.Job{GroupID: 1, Description: "d", Author: "a", Handler: "h"}
			j.ApplyDefaults()
			j, err := db.JobInsert(ctx, j)
			if err != nil {
				t.Fatal(err)
			}
			l, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: "o/1", JobID: j.ID, GroupID: 1, TriggerType: xjob.TriggerManual})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.JobGetMany(ctx, []int64{j.ID}); err != nil { // into the cache
				t.Fatal(err)
			}
			tc.change(t, db, j)
			jobOf, handled, jobs, err := db.LogJobs(ctx, []int64{l.ID, l.ID + 1000})
			if err != nil {
				t.Fatal(err)
			}
			if len(handled) != 0 {
				t.Errorf("handled = %v for a log without a result", handled)
			}
			if len(jobOf) != 1 || jobOf[l.ID] != j.ID {
				t.Errorf("jobOf = %v, want only %d → %d", jobOf, l.ID, j.ID)
			}
			want, err := db.JobGetMany(ctx, []int64{j.ID})
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != len(want) || (tc.found && (len(jobs) != 1 || jobs[0].Version != want[0].Version ||
				jobs[0].Description != want[0].Description || len(jobs[0].ChildJobIDs) != len(want[0].ChildJobIDs) ||
				jobs[0].TriggerNextTime != want[0].TriggerNextTime)) {
				t.Errorf("LogJobs gave %+v, JobGetMany %+v", jobs, want)
			}
			if len(jobs) == 1 != tc.found {
				t.Errorf("%d jobs, found %v", len(jobs), tc.found)
			}
		})
	}
}

// A log with a result is reported as handled, so that the callback
// answers a repeat without a write.
func TestLogJobsSaysHandled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := setup(t, Options{})
	logs := newLogs(t, db, 2, 1_800_000_000_000)
	if _, err := db.LogFinish(ctx, driver.LogFinishParams{ID: logs[0].ID, HandleTime: 1, HandleCode: xjob.CodeSuccess}); err != nil {
		t.Fatal(err)
	}
	jobOf, handled, _, err := db.LogJobs(ctx, []int64{logs[0].ID, logs[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobOf) != 2 || !handled[logs[0].ID] || handled[logs[1].ID] {
		t.Fatalf("jobOf %v, handled %v: want both logs, only the first handled", jobOf, handled)
	}
}
