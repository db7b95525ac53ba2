package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/driver/drivertest"
)

var epoch = time.UnixMilli(1_700_000_000_000)

// setup opens a DB on a fresh temp file, closed when the test ends.
func setup(t testing.TB, opts Options) *DB {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "xjob.db"), opts)
}

func openAt(t testing.TB, path string, opts Options) *DB {
	t.Helper()
	db, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return db
}

func TestStoreContract(t *testing.T) {
	t.Parallel()
	drivertest.Exercise(t, func(t *testing.T) driver.Store {
		return setup(t, Options{Shards: 4, Clock: clock.NewFake(epoch)})
	})
}

func TestCallFenceContract(t *testing.T) {
	t.Parallel()
	drivertest.ExerciseCallFence(t, func(t *testing.T) *DB {
		return setup(t, Options{Clock: clock.NewFake(epoch)})
	})
}

func TestNodeStoreContract(t *testing.T) {
	t.Parallel()
	drivertest.ExerciseNodeStore(t, func(t *testing.T) driver.NodeStore {
		return setup(t, Options{Clock: clock.NewFake(epoch)})
	})
}

func TestQueueContract(t *testing.T) {
	t.Parallel()
	harness := func(t *testing.T, pick func(*DB) driver.Queue[fire.RingBucket]) drivertest.QueueHarness {
		clk := clock.NewFake(epoch)
		db := setup(t, Options{Clock: clk})
		return drivertest.QueueHarness{Queue: pick(db), Now: clk.Now, Advance: clk.Advance,
			Settle: func(ctx context.Context) { _ = clk.WaitForSleepers(ctx, 1) }}
	}
	t.Run("Ring", func(t *testing.T) {
		t.Parallel()
		drivertest.ExerciseQueue(t, func(t *testing.T) drivertest.QueueHarness {
			return harness(t, func(db *DB) driver.Queue[fire.RingBucket] { return db.Ring() })
		})
	})
	// The dispatch lanes share the ring's implementation; run the suite on
	// one through a queue of ring buckets under a lane's table name.
	t.Run("NamedQueue", func(t *testing.T) {
		t.Parallel()
		drivertest.ExerciseQueue(t, func(t *testing.T) drivertest.QueueHarness {
			return harness(t, func(db *DB) driver.Queue[fire.RingBucket] { return newQueue[fire.RingBucket](db, "dispatch-fast") })
		})
	})
}

// TestSharedStoreContract opens two handles on one file, as two
// processes of local mode hold it.
func TestSharedStoreContract(t *testing.T) {
	t.Parallel()
	drivertest.ExerciseSharedStore(t, drivertest.SharedHarness[*DB]{
		Open: func(t *testing.T, o drivertest.SharedOptions) (*DB, *DB) {
			path := filepath.Join(t.TempDir(), "xjob.db")
			opts := Options{Shards: 4, Clock: o.Clock(), Logger: o.Logger}
			return openAt(t, path, opts), openAt(t, path, opts)
		},
		RawRing:  func(db *DB) driver.Queue[json.RawMessage] { return newQueue[json.RawMessage](db, "ring") },
		SetAside: SetAside,
	})
}

func TestMigrationsIdempotentOnReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "xjob.db")
	ctx := t.Context()
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j, err := db.JobInsert(ctx, xjob.Job{GroupID: 1, Description: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		db = openAt(t, path, Options{})
		got, err := db.JobGet(ctx, j.ID)
		if err != nil || got.Description != "kept" {
			t.Fatalf("after reopen: %+v %v", got, err)
		}
	}
	files, _ := fs.Glob(migrationFS, "migrations/*.sql")
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(files) || n == 0 {
		t.Fatalf("%d migrations recorded, %d embedded", n, len(files))
	}
	var mode string
	if err := db.r.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal mode %q (%v), want wal", mode, err)
	}
}

func TestConcurrentOpenOfNewFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "xjob.db")
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			db, err := Open(context.Background(), path, Options{})
			if err == nil {
				err = db.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
}

func TestJobsDueUsesPartialIndex(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	for _, q := range []string{jobsDueSQL, strings.Replace(jobsDueSQL, "INDEXED BY jobs_due", "", 1)} {
		plan := queryPlan(t, db, q, 1, 2, 3, 4, 5)
		p := strings.Join(plan, "\n")
		if !strings.Contains(p, "USING INDEX jobs_due") || strings.Contains(p, "TEMP B-TREE") {
			t.Fatalf("JobsDue plan does not read the due index in order:\n%s", p)
		}
	}
}

// TestGroupCommitIsolatesFailures runs one transaction of many requests,
// a quarter of which write and then fail: each failing request is rolled
// back alone (its savepoint), and every other request of the transaction
// commits. The test hands the batch to runBatch itself, as the writer
// goroutine does with the requests it collects, so the requests share
// the transaction by construction rather than by the scheduler's timing;
// the writer goroutine stays idle meanwhile, as nothing else writes.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	ctx := t.Context()
	errBoom := errors.New("boom")
	const n = 64
	batch := make([]*writeReq, n)
	for i := range batch {
		fn := func(ctx context.Context, c *sql.Conn) error {
			_, err := c.ExecContext(ctx, `INSERT INTO report_days (day, running_count, suc_count, fail_count)
				VALUES (?, 0, 1, 0)`, fmt.Sprintf("ok-%02d", i))
			return err
		}
		if i%4 == 0 { // writes a row, then fails
			fn = func(ctx context.Context, c *sql.Conn) error {
				if _, err := c.ExecContext(ctx, `INSERT INTO report_days (day, running_count, suc_count, fail_count)
					VALUES (?, 0, 0, 0)`, fmt.Sprintf("failed-%02d", i)); err != nil {
					return err
				}
				return errBoom
			}
		}
		batch[i] = &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	}
	commits, committed := db.stats.commits.Load(), db.stats.requests.Load()
	if rest := db.runBatch(batch); len(rest) != 0 {
		t.Fatalf("runBatch handed back %d requests", len(rest))
	}
	if c, r := db.stats.commits.Load()-commits, db.stats.requests.Load()-committed; c != 1 || r != n {
		t.Fatalf("%d transactions carried %d requests, want 1 carrying %d", c, r, n)
	}
	for i, r := range batch {
		err := <-r.done
		if want := i%4 == 0; want != errors.Is(err, errBoom) || (!want && err != nil) {
			t.Fatalf("request %d answered %v", i, err)
		}
	}
	days, err := db.ReportList(ctx, driver.ReportListParams{From: "", To: "~"})
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != n-n/4 {
		t.Fatalf("%d days stored, want the %d successful writes only: %+v", len(days), n-n/4, days)
	}
	for _, d := range days {
		if !strings.HasPrefix(d.Day, "ok-") || d.SucCount != 1 {
			t.Fatalf("a failed request's write was committed: %+v", d)
		}
	}
}

// TestWriteAbandonedBeforeStart: a caller whose context ends while its
// write waits gets the context's error and the write never runs; after
// Close, writes fail instead of hanging.
func TestWriteAbandonedBeforeStart(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	ctx := t.Context()
	hold := make(chan struct{})
	running := make(chan struct{})
	go func() {
		_ = db.write(ctx, func(context.Context, *sql.Conn) error {
			close(running)
			<-hold // keep the writer busy
			return nil
		})
	}()
	<-running
	cctx, cancel := context.WithCancel(ctx)
	ran := false
	done := make(chan error, 1)
	go func() {
		done <- db.write(cctx, func(context.Context, *sql.Conn) error { ran = true; return nil })
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned write: %v", err)
	}
	close(hold)
	if err := db.ReportAdd(ctx, xjob.ReportDay{Day: "d", SucCount: 1}); err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Fatal("an abandoned write ran")
	}
	other := setup(t, Options{})
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if err := other.ReportAdd(ctx, xjob.ReportDay{Day: "d"}); !errors.Is(err, errClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

// Migration 0007 re-keys the occurrence index time first on a file that
// has logs: a repeated occurrence stays one log, and the claim's lookup of
// an occurrence's log searches the index (an expression that drifted from
// the index's would scan the table on every repeat).
func TestOccurrenceIndexByTime(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "xjob.db")
	ctx := t.Context()
	db := openAt(t, path, Options{})
	log := xjob.Log{OccurrenceID: fire.Occurrence{JobID: 7, Type: xjob.TriggerCron, FireTime: 1_800_000_000_000}.ID(0),
		JobID: 7, GroupID: 1, TriggerType: xjob.TriggerCron, ScheduledTime: 1_800_000_000_000, TriggerTime: 1_800_000_000_000,
		ExecutorHandler: "h", ClaimUntil: 1_800_000_030_000}
	// The file as 0006 left it, with a log.
	for _, q := range []string{
		`DROP INDEX logs_occurrence`,
		`CREATE UNIQUE INDEX logs_occurrence ON logs (occurrence_id)`,
		`DELETE FROM schema_migrations WHERE version = '0007_logs_occurrence_by_time'`,
	} {
		if _, err := db.wc.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	first, err := db.LogCreate(ctx, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openAt(t, path, Options{})
	misfire := log
	misfire.TriggerType = xjob.TriggerMisfire // a second scanner's view of the same fire
	if got, err := db.LogCreate(ctx, misfire); !errors.Is(err, xjob.ErrConflict) || got.ID != first.ID {
		t.Fatalf("repeat after the migration: %+v, %v; want log %d and a conflict", got, err, first.ID)
	}
	plan := queryPlan(t, db, sqlLogByOccurrence, "CRON", log.ScheduledTime, log.OccurrenceID)
	if len(plan) != 1 || !strings.Contains(plan[0], "USING INDEX logs_occurrence") {
		t.Errorf("lookup plan %q, want a search of logs_occurrence", plan)
	}
}

// queryPlan is the detail column of EXPLAIN QUERY PLAN for q with args.
func queryPlan(t *testing.T, db *DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.r.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}

// Migration 0009 keeps a file's day counters as group 0: the
// installation's report still sums them with the groups' counters added
// since, and no group's report claims them.
func TestReportGroupsMigration(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "xjob.db")
	ctx := t.Context()
	db := openAt(t, path, Options{})
	// The file as 0008 left it, with a day counted.
	for _, q := range []string{
		`DROP TABLE report_days`,
		`CREATE TABLE report_days (day TEXT PRIMARY KEY, running_count INTEGER NOT NULL,
			suc_count INTEGER NOT NULL, fail_count INTEGER NOT NULL) WITHOUT ROWID`,
		`INSERT INTO report_days VALUES ('2027-01-15', 1, 20, 3)`,
		`DELETE FROM schema_migrations WHERE version = '0009_report_groups'`,
	} {
		if _, err := db.wc.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openAt(t, path, Options{})
	if err := db.ReportAdd(ctx, xjob.ReportDay{Day: "2027-01-15", GroupID: 4, SucCount: 2}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		groups []int64
		want   []xjob.ReportDay
	}{
		{"every group", nil, []xjob.ReportDay{{Day: "2027-01-15", RunningCount: 1, SucCount: 22, FailCount: 3}}},
		{"group 4", []int64{4}, []xjob.ReportDay{{Day: "2027-01-15", SucCount: 2}}},
	} {
		got, err := db.ReportList(ctx, driver.ReportListParams{From: "2027-01-15", To: "2027-01-15", GroupIDs: c.groups})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s after the migration: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// The latest failures of a group, or of every group, search the partial
// indexes of failed logs: through the time indexes they would read every
// log back to the last failure, all of a group's logs when it never fails.
func TestFailedLogsUseTheirIndexes(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	for _, c := range []struct {
		where string
		args  []any
		index string
	}{
		{"group_id = ? AND " + sqlLogFailed, []any{3, 11}, "logs_group_failed"},
		{sqlLogFailed, []any{11}, "logs_failed"},
	} {
		plan := queryPlan(t, db, `SELECT id FROM logs WHERE 1 = 1 AND `+c.where+
			` ORDER BY trigger_time DESC, id DESC LIMIT ?`, c.args...)
		if len(plan) != 1 || !strings.Contains(plan[0]+" ", "USING INDEX "+c.index+" ") {
			t.Errorf("plan of %s: %q, want a read of %s", c.where, plan, c.index)
		}
	}
}
