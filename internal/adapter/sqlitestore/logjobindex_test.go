package sqlitestore

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/driver/drivertest"
)

// The contract suite again with a batch of two logs, so that every
// per-job read it makes meets logs on both sides of the mark.
func TestStoreContractJobIndexBatched(t *testing.T) {
	t.Parallel()
	drivertest.Exercise(t, func(t *testing.T) driver.Store {
		db := setup(t, Options{Shards: 4, Clock: clock.NewFake(epoch)})
		db.jobIndexBatch = 2
		return db
	})
}

// Two handles on one file, as two processes, entering batches of two:
// either may enter the other's logs, and the stored mark decides.
func TestSharedStoreContractJobIndexBatched(t *testing.T) {
	t.Parallel()
	drivertest.ExerciseSharedStore(t, drivertest.SharedHarness[*DB]{
		Open: func(t *testing.T, o drivertest.SharedOptions) (*DB, *DB) {
			path := filepath.Join(t.TempDir(), "xjob.db")
			opts := Options{Shards: 4, Clock: o.Clock(), Logger: o.Logger}
			a, b := openAt(t, path, opts), openAt(t, path, opts)
			a.jobIndexBatch, b.jobIndexBatch = 2, 2
			return a, b
		},
		RawRing:  func(db *DB) driver.Queue[json.RawMessage] { return newQueue[json.RawMessage](db, "ring") },
		SetAside: SetAside,
	})
}

// Every per-job read searches logs_by_job for the entered logs and walks
// only the rowid range above the mark for the others: no plan scans the
// logs table, or takes a group or time index for the job's logs.
func TestJobLogReadsStayBounded(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	list := func(p driver.LogListParams) (string, []any) {
		q, args, err := logListQuery(p, 100)
		if err != nil {
			t.Fatal(err)
		}
		return q, args
	}
	for _, c := range []struct {
		name string
		q    func() (string, []any)
	}{
		{"list", func() (string, []any) { return list(driver.LogListParams{JobID: 3}) }},
		{"list page 2", func() (string, []any) { return list(driver.LogListParams{JobID: 3, Cursor: "1800000000000:77"}) }},
		{"list job and group", func() (string, []any) { return list(driver.LogListParams{JobID: 3, GroupID: 2}) }},
		{"list failed in a range", func() (string, []any) {
			return list(driver.LogListParams{JobID: 3, Status: xjob.LogFail, From: 1, To: 2})
		}},
		{"count", func() (string, []any) { return logCountQuery(driver.LogCountParams{JobID: 3, Limit: 10}) }},
		{"count in groups", func() (string, []any) {
			return logCountQuery(driver.LogCountParams{JobID: 3, GroupIDs: []int64{1, 2}, Status: xjob.LogSuccess})
		}},
		{"clear", func() (string, []any) { return logClearQuery(driver.LogClearParams{JobID: 3, Before: 5}) }},
		{"clear keep newest", func() (string, []any) {
			return logClearQuery(driver.LogClearParams{JobID: 3, GroupID: 2, KeepNewest: 5})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			q, args := c.q()
			plan := queryPlan(t, db, q, args...)
			var index, tail int
			for _, step := range plan {
				switch {
				case strings.HasPrefix(step, "SCAN logs"),
					strings.Contains(step, "logs_time"), strings.Contains(step, "logs_group"):
					t.Errorf("step %q of plan %q reads more than the job's logs", step, plan)
				case strings.HasPrefix(step, "SEARCH k USING PRIMARY KEY (job_id=?"):
					index++
				case step == "SEARCH logs USING INTEGER PRIMARY KEY (rowid>?)":
					tail++
				}
			}
			if index == 0 || index != tail {
				t.Errorf("plan %q: %d searches of logs_by_job and %d walks above the mark, want as many, at least one",
					plan, index, tail)
			}
		})
	}
}

// Logs wait for their entry until a batch has gathered, then go in
// together; a job's page, count and clear see the logs on both sides of
// the mark, newest first by trigger time whatever the id order.
func TestJobIndexBatches(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := setup(t, Options{})
	db.jobIndexBatch = 8
	const jobs, rounds = 3, 11
	var all []xjob.Log
	for r := range rounds {
		var batch []xjob.Log
		for j := int64(1); j <= jobs; j++ {
			// Trigger times out of id order: a retry or a claim ahead.
			at := 1_800_000_000_000 + int64((r*7)%rounds)*1000
			batch = append(batch, xjob.Log{OccurrenceID: fmt.Sprintf("j%d/r%d", j, r), JobID: j, GroupID: 1 + j%2,
				TriggerType: xjob.TriggerManual, ScheduledTime: at, TriggerTime: at, ExecutorHandler: "h"})
		}
		if r == 5 { // a single create takes its own path
			l, err := db.LogCreate(ctx, batch[0])
			if err != nil {
				t.Fatal(err)
			}
			all, batch = append(all, l), batch[1:]
		}
		created, err := db.LogCreateMany(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range created {
			if c.Err != nil {
				t.Fatal(c.Err)
			}
			all = append(all, c.Log)
		}
	}
	// A restored log above the mark is read with the logs waiting: listed once.
	restored := xjob.Log{ID: 1000, OccurrenceID: "restored", JobID: 1, GroupID: 2, TriggerType: xjob.TriggerManual,
		TriggerTime: 1_800_000_005_500, ExecutorHandler: "h", Version: 1}
	if err := db.LogRestore(ctx, []xjob.Log{restored}); err != nil {
		t.Fatal(err)
	}
	var through, entries int64
	if err := db.r.QueryRowContext(ctx, `SELECT through, (SELECT count(*) FROM logs_by_job)
		FROM logs_by_job_through`).Scan(&through, &entries); err != nil {
		t.Fatal(err)
	}
	entered := db.WriterStats().JobIndexed
	if waiting := int64(len(all)) - through; through == 0 || entered != through || entries != through || waiting >= db.jobIndexBatch {
		t.Fatalf("mark %d, %d entered, %d entries, %d waiting of %d logs: want every log up to the mark entered, under a batch waiting",
			through, entered, entries, waiting, len(all))
	}
	all = append(all, restored)
	newestFirst := func(a, b xjob.Log) int {
		return cmp.Or(cmp.Compare(b.TriggerTime, a.TriggerTime), cmp.Compare(b.ID, a.ID))
	}
	slices.SortFunc(all, newestFirst)
	for j := int64(1); j <= jobs; j++ {
		var want []int64
		for _, l := range all {
			if l.JobID == j {
				want = append(want, l.ID)
			}
		}
		var got []int64
		for cursor := ""; ; {
			page, err := db.LogList(ctx, driver.LogListParams{JobID: j, Cursor: cursor, Limit: 4})
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range page.Logs {
				got = append(got, l.ID)
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("job %d's pages: %v, want %v", j, got, want)
		}
		if n, err := db.LogCount(ctx, driver.LogCountParams{JobID: j}); err != nil || n != len(want) {
			t.Errorf("job %d's count: %d, %v; want %d", j, n, err, len(want))
		}
		if n, err := db.LogCount(ctx, driver.LogCountParams{JobID: j, GroupIDs: []int64{1 + j%2}, Limit: 5}); err != nil || n != 5 {
			t.Errorf("job %d's count to 5: %d, %v", j, n, err)
		}
	}
	// Clear job 2 but its newest three: the three left are the newest.
	n, err := db.LogClear(ctx, driver.LogClearParams{JobID: 2, KeepNewest: 3})
	if err != nil || n != rounds-3 {
		t.Fatalf("clear: %d, %v; want %d", n, err, rounds-3)
	}
	page, err := db.LogList(ctx, driver.LogListParams{JobID: 2})
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, l := range all {
		if l.JobID == 2 && len(want) < 3 {
			want = append(want, l.ID)
		}
	}
	if got := logIDs(page.Logs); !slices.Equal(got, want) {
		t.Errorf("job 2 after the clear: %v, want %v", got, want)
	}
	// Restore the oldest log cleared, below the mark: it gets its entry.
	var back xjob.Log
	for _, l := range all {
		if l.JobID == 2 && !slices.Contains(want, l.ID) && (back.ID == 0 || l.ID < back.ID) {
			back = l
		}
	}
	if back.ID > through {
		t.Fatalf("log %d is above the mark %d: the test needs one below", back.ID, through)
	}
	if err := db.LogRestore(ctx, []xjob.Log{back}); err != nil {
		t.Fatal(err)
	}
	if n, err := db.LogCount(ctx, driver.LogCountParams{JobID: 2}); err != nil || n != 4 {
		t.Errorf("job 2's count after restoring log %d: %d, %v; want 4", back.ID, n, err)
	}
}

func logIDs(logs []xjob.Log) []int64 {
	ids := make([]int64, len(logs))
	for i, l := range logs {
		ids[i] = l.ID
	}
	return ids
}

// Migration 0013 on a file with logs: they all get their entry (a job's
// page reads them through logs_by_job at once), logs created afterwards
// wait above the mark, and a retention delete takes the entries along.
func TestJobIndexMigration(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "xjob.db")
	ctx := t.Context()
	db := openAt(t, path, Options{})
	// The file as 0012 left it.
	for _, q := range []string{
		`DROP TRIGGER logs_by_job_delete`,
		`DROP TRIGGER logs_by_job_retime`,
		`DROP TABLE logs_by_job`,
		`DROP TABLE logs_by_job_through`,
		`CREATE INDEX logs_job_time ON logs (job_id, trigger_time, id)`,
		`DELETE FROM schema_migrations WHERE version = '0013_logs_by_job'`,
	} {
		if _, err := db.wc.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	for i := range 5 {
		if _, err := db.wc.ExecContext(ctx, `INSERT INTO logs (occurrence_id, job_id, group_id, trigger_type,
			scheduled_time, trigger_time, trigger_code, trigger_msg, executor_address, executor_handler,
			executor_param, executor_sharding_param, executor_fail_retry_count, handle_time, handle_code,
			handle_msg, alarm_status, claim_until, version)
			VALUES (?, 4, 1, 'MANUAL', ?, ?, 0, '', '', 'h', '', '', 0, 0, 0, '', 0, 0, 1)`,
			fmt.Sprintf("old/%d", i), (i+1)*1000, (i+1)*1000); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openAt(t, path, Options{})
	var through, entries int64
	if err := db.r.QueryRowContext(ctx, `SELECT through, (SELECT count(*) FROM logs_by_job)
		FROM logs_by_job_through`).Scan(&through, &entries); err != nil {
		t.Fatal(err)
	}
	if through != 5 || entries != 5 {
		t.Fatalf("after the migration: mark %d, %d entries; want 5 and 5", through, entries)
	}
	l, err := db.LogCreate(ctx, xjob.Log{OccurrenceID: "new", JobID: 4, GroupID: 1, TriggerType: xjob.TriggerManual,
		TriggerTime: 9000, ExecutorHandler: "h"})
	if err != nil {
		t.Fatal(err)
	}
	page, err := db.LogList(ctx, driver.LogListParams{JobID: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := logIDs(page.Logs), []int64{l.ID, 5, 4, 3, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("job 4's page after the migration: %v, want %v", got, want)
	}
	if n, err := db.LogDeleteBefore(ctx, 3000, 100); err != nil || n != 2 {
		t.Fatalf("retention: %d, %v", n, err)
	}
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM logs_by_job`).Scan(&entries); err != nil || entries != 3 {
		t.Errorf("entries after retention deleted 2 of 5 entered logs: %d, %v; want 3", entries, err)
	}
	// A claim moves an entered log's trigger time: its entry moves along.
	if _, err := db.LogClaim(ctx, driver.LogClaimParams{ID: 3, ExpectVersion: 1, ClaimUntil: 99_000, TriggerTime: 10_000}); err != nil {
		t.Fatal(err)
	}
	page, err = db.LogList(ctx, driver.LogListParams{JobID: 4, Cursor: "9500:0"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := logIDs(page.Logs), []int64{6, 5, 4}; !slices.Equal(got, want) {
		t.Errorf("job 4's logs before 9500 after log 3 moved to 10000: %v, want %v", got, want)
	}
}

// Two processes claiming on one file enter each other's logs: every log
// up to the stored mark has its entry once, and both list a job whole.
func TestJobIndexTwoHandles(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "xjob.db")
	dbs := []*DB{openAt(t, path, Options{}), openAt(t, path, Options{})}
	dbs[0].jobIndexBatch, dbs[1].jobIndexBatch = 3, 5
	const rounds = 20
	for r := range rounds {
		at := int64(1_800_000_000_000 + r*1000)
		var batch []xjob.Log
		for j := int64(1); j <= 2; j++ {
			batch = append(batch, xjob.Log{OccurrenceID: fmt.Sprintf("j%d/r%d", j, r), JobID: j, GroupID: 1,
				TriggerType: xjob.TriggerCron, ScheduledTime: at, TriggerTime: at, ExecutorHandler: "h"})
		}
		if _, err := dbs[r%2].LogCreateMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	var through, entries, distinct int64
	if err := dbs[0].r.QueryRowContext(ctx, `SELECT through, (SELECT count(*) FROM logs_by_job),
		(SELECT count(DISTINCT id) FROM logs_by_job) FROM logs_by_job_through`).Scan(&through, &entries, &distinct); err != nil {
		t.Fatal(err)
	}
	if through < 2*rounds-5 || entries != through || distinct != through {
		t.Fatalf("mark %d, %d entries of %d logs: want every log up to the mark entered once, the mark within a batch of %d",
			through, entries, distinct, 2*rounds)
	}
	for i, db := range dbs {
		for j := int64(1); j <= 2; j++ {
			if n, err := db.LogCount(ctx, driver.LogCountParams{JobID: j}); err != nil || n != rounds {
				t.Errorf("handle %d, job %d: %d logs, %v; want %d", i, j, n, err, rounds)
			}
		}
	}
}
