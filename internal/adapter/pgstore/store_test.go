package pgstore

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/pgserver"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/driver/drivertest"
)

// queryPlan is EXPLAIN's text for q with args, with sequential scans
// priced out: a test table is too small for the planner to prefer an
// index on its own, and the question is whether it can use one.
func queryPlan(t *testing.T, db *DB, q string, args ...any) string {
	t.Helper()
	var lines []string
	err := pgx.BeginFunc(t.Context(), db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), `SET LOCAL enable_seqscan = off`); err != nil {
			return err
		}
		rows, err := tx.Query(t.Context(), `EXPLAIN `+q, args...)
		lines, err = scanAll(rows, err, func(r pgx.Row) (string, error) {
			var s string
			return s, r.Scan(&s)
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// The scan's read walks the partial due index in order (no sort), and
// the log lists' failure filters search their partial indexes.
func TestQueriesUseTheirIndexes(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	for _, tc := range []struct {
		name, q string
		args    []any
		index   string
	}{
		{"jobs due", sqlJobsDue, []any{1, 2, 3, 4, 5}, "jobs_due"},
		{"failed logs of a group", `SELECT id FROM logs WHERE group_id = $1 AND ` + sqlLogFailed +
			` ORDER BY trigger_time DESC, id DESC LIMIT $2`, []any{3, 11}, "logs_group_failed"},
		{"failed logs", `SELECT id FROM logs WHERE ` + sqlLogFailed + ` ORDER BY trigger_time DESC, id DESC LIMIT $1`, []any{11}, "logs_failed"},
		{"occurrence lookup", `SELECT id FROM logs WHERE (occurrence_time, occurrence_id) IN (SELECT * FROM unnest($1::bigint[], $2::text[]))`,
			[]any{[]int64{1}, []string{"x"}}, "logs_occurrence"},
		{"queue claim", `SELECT id FROM queue_messages WHERE queue = $1 AND visible_at <= $2 ORDER BY visible_at, id LIMIT $3`,
			[]any{"ring", 5, 10}, "queue_visible"},
	} {
		plan := queryPlan(t, db, tc.q, tc.args...)
		t.Logf("%s:\n%s", tc.name, plan)
		if !strings.Contains(plan, " "+tc.index+" ") || strings.Contains(plan, "Sort") {
			t.Errorf("%s: plan does not read %s in order:\n%s", tc.name, tc.index, plan)
		}
	}
}

// A store outlives a restart of its server: calls fail while it is down
// (without the password in their errors) and succeed once it is back,
// on the pool's new connections.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	srv := pgserver.Start(t)
	db := openAt(t, srv.NewDatabase(t), Options{ConnectTimeout: time.Second})
	ctx := t.Context()
	if err := db.ReportAdd(ctx, xjobDay("2027-01-01", 1)); err != nil {
		t.Fatal(err)
	}
	srv.StopServer()
	err := db.ReportAdd(ctx, xjobDay("2027-01-01", 1))
	if err == nil {
		t.Fatal("a write to a stopped server succeeded")
	}
	if strings.Contains(err.Error(), srv.Password) {
		t.Fatalf("the error shows the password: %v", err)
	}
	if err := srv.StartServer(); err != nil {
		t.Fatal(err)
	}
	// The pool drops the dead connections as it meets them.
	var last error
	for range 10 {
		if last = db.ReportAdd(ctx, xjobDay("2027-01-01", 1)); last == nil {
			break
		}
	}
	if last != nil {
		t.Fatalf("after restart: %v", last)
	}
	days, err := db.ReportList(ctx, reportRange("2027-01-01"))
	if err != nil || len(days) != 1 || days[0].SucCount < 2 {
		t.Fatalf("after restart: %+v, %v", days, err)
	}
}

// Ids allocated after explicit ones are above them, whether the explicit
// id came first on a fresh table or after allocated ones, for jobs and
// for groups, alone or in a change set.
func TestAllocatedIDsPassExplicitOnes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		explicit []int64 // 0: an allocated id
	}{
		{"explicit 1 on a fresh table", []int64{1, 0, 0}},
		{"explicit after allocated", []int64{0, 0, 7, 0}},
		{"explicit below the sequence", []int64{0, 0, 0, 0, 2, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := setup(t, Options{})
			ctx := t.Context()
			var maxJob, maxGroup int64
			for _, id := range tc.explicit {
				if id == 2 { // already taken by an allocated id
					if _, err := db.JobInsert(ctx, xjob.Job{ID: id, GroupID: 1}); !errors.Is(err, xjob.ErrConflict) {
						t.Fatalf("explicit job id %d taken: %v, want ErrConflict", id, err)
					}
					continue
				}
				j, err := db.JobInsert(ctx, xjob.Job{ID: id, GroupID: 1})
				if err != nil {
					t.Fatalf("job %d: %v", id, err)
				}
				res, err := db.ChangeApply(ctx, driver.ChangeSet{GroupInserts: []xjob.Group{{ID: id, AppName: "app-x", AddressList: []string{}}}})
				if err != nil {
					t.Fatalf("group %d: %v", id, err)
				}
				g := res.GroupIDs[0]
				if id == 0 && (j.ID <= maxJob || g <= maxGroup) {
					t.Fatalf("allocated job %d / group %d not above %d / %d", j.ID, g, maxJob, maxGroup)
				}
				maxJob, maxGroup = max(maxJob, j.ID), max(maxGroup, g)
			}
		})
	}
}

// sharedHarness opens two nodes, "a" and "b", on one fresh database.
// Their poll interval is an hour, so that a long poll that wakes on the
// other node's send can only have been woken by its notification
// (notify.go).
func sharedHarness() drivertest.SharedHarness[*DB] {
	return drivertest.SharedHarness[*DB]{
		Open: func(t *testing.T, o drivertest.SharedOptions) (*DB, *DB) {
			dsn := newDatabase(t)
			opts := Options{Shards: 4, Clock: o.Clock(), Logger: o.Logger, PollInterval: time.Hour, MaxConns: 4, Node: "a"}
			a := openAt(t, dsn, opts)
			opts.Node = "b"
			return a, openAt(t, dsn, opts)
		},
		RawRing:  func(db *DB) driver.Queue[json.RawMessage] { return newQueue[json.RawMessage](db, "ring") },
		SetAside: SetAside,
	}
}

func TestSharedStoreContract(t *testing.T) {
	t.Parallel()
	drivertest.ExerciseSharedStore(t, sharedHarness())
}

func TestNodeClaimsContract(t *testing.T) {
	t.Parallel()
	drivertest.ExerciseNodeClaims(t, sharedHarness())
}
