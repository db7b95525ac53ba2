package mysqlstore

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/testenv/mariadb"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/driver/drivertest"
)

// The hot reads go through their indexes in order: no table scan, no
// filesort (EXPLAIN on a table with rows enough for the optimizer to
// care).
func TestHotQueriesUseTheirIndexes(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{Shards: 4})
	ctx := t.Context()
	var logs []xjob.Log
	for i := range 400 {
		j, err := db.JobInsert(ctx, xjob.Job{GroupID: int64(i % 7), TriggerStatus: xjob.TriggerStatus(i % 2), TriggerNextTime: int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, xjob.Log{OccurrenceID: fmt.Sprintf("j%d/t1/s0", j.ID), JobID: j.ID, GroupID: j.GroupID,
			TriggerType: xjob.TriggerCron, ScheduledTime: 1000, TriggerTime: int64(i)})
	}
	if _, err := db.LogCreateMany(ctx, logs); err != nil {
		t.Fatal(err)
	}
	if _, err := db.db.ExecContext(ctx, `ANALYZE TABLE jobs, logs`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, query, index string
		args               []any
	}{
		{"jobs due", sqlJobsDue, "jobs_due", []any{1, 300, -1, -1, 0, 100}},
		{"occurrences", `SELECT id FROM logs WHERE (occurrence_time, occurrence_id) IN ((?,?),(?,?))`, "logs_occurrence",
			[]any{1000, "j1/t1/s0", 1000, "j2/t1/s0"}},
		{"queue claim", `SELECT id FROM queue_messages FORCE INDEX (queue_visible) WHERE queue = ? AND visible_at <= ?
			ORDER BY visible_at, id LIMIT ? FOR UPDATE SKIP LOCKED`, "queue_visible", []any{"ring", 5, 10}},
		{"running", `SELECT id FROM logs WHERE ` + sqlLogRunning + ` AND trigger_time <= ? ORDER BY trigger_time, id LIMIT ?`,
			"logs_running", []any{5, 10}},
		{"failed unalarmed", `SELECT id FROM logs WHERE ` + sqlLogFailed + ` AND alarm_status = 0 AND trigger_time <= ?
			ORDER BY trigger_time, id LIMIT ?`, "logs_failed", []any{5, 10}},
		{"a job's logs", `SELECT id FROM logs WHERE 1 = 1 AND job_id = ? ORDER BY trigger_time DESC, id DESC LIMIT ?`,
			"logs_job_time", []any{5, 10}},
	} {
		key, extra := explain(t, db, c.query, c.args...)
		if key != c.index || strings.Contains(extra, "filesort") {
			t.Errorf("%s: reads key %q (%s), want %s without a filesort", c.name, key, extra, c.index)
		}
	}
}

// explain returns the key and Extra of the first row of EXPLAIN q.
func explain(t *testing.T, db *DB, q string, args ...any) (key, extra string) {
	t.Helper()
	rows, err := db.db.QueryContext(t.Context(), `EXPLAIN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		t.Fatalf("EXPLAIN %s: no row", q)
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	for i, c := range cols {
		s := ""
		if b, ok := vals[i].([]byte); ok {
			s = string(b)
		}
		switch c {
		case "key":
			key = s
		case "Extra":
			extra = s
		}
	}
	return key, extra
}

// sharedHarness opens two nodes, "a" and "b", on one fresh database,
// polling every 20 ms so that a long poll sees the other node's send
// soon: within 2 s, or the poll is broken.
func sharedHarness() drivertest.SharedHarness[*DB] {
	return drivertest.SharedHarness[*DB]{
		Open: func(t *testing.T, o drivertest.SharedOptions) (*DB, *DB) {
			dsn := mariadb.Shared(t).NewDatabase(t)
			opts := Options{Shards: 4, Clock: o.Clock(), Logger: o.Logger, PollInterval: 20 * time.Millisecond, Node: "a"}
			a := openAt(t, dsn, opts)
			opts.Node = "b"
			return a, openAt(t, dsn, opts)
		},
		RawRing:    func(db *DB) driver.Queue[json.RawMessage] { return newQueue[json.RawMessage](db, "ring") },
		SetAside:   SetAside,
		WakeWithin: 2 * time.Second,
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

// TestEmptyPollIsOneStatement: a long poll on a queue with nothing
// visible costs the server one statement each time it polls (the least
// visible_at, which also tells the wait when to poll again), not a peek
// and then that query: every receiver of every node polls every 100 ms,
// so this is what an idle cluster pays. The statements are the server's
// own count for the store's one connection (Questions, session scope),
// less what reading the count costs.
func TestEmptyPollIsOneStatement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		delayed bool // a message visible later than the wait
		polls   int
	}{
		{name: "empty queue", polls: 4},
		{name: "delayed message", delayed: true, polls: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(epoch)
			const interval = 100 * time.Millisecond
			db := setup(t, Options{Clock: clk, PollInterval: interval})
			db.db.SetMaxOpenConns(1) // one session: its counter is the store's
			ctx := t.Context()
			q := db.Ring()
			if tc.delayed {
				if err := q.Send(ctx, []driver.Outgoing[fire.RingBucket]{{Msg: fire.RingBucket{Second: 1},
					VisibleAt: epoch.Add(time.Hour).UnixMilli()}}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := q.Receive(ctx, driver.ReceiveParams{Max: 10}); err != nil { // prepares on the session
				t.Fatal(err)
			}
			questions := func() int {
				var name string
				var n int
				if err := db.db.QueryRowContext(ctx, `SHOW SESSION STATUS LIKE 'Questions'`).Scan(&name, &n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			q0 := questions()
			reading := questions() - q0 // what one reading adds
			q1 := questions()
			done := make(chan error, 1)
			go func() {
				got, err := q.Receive(ctx, driver.ReceiveParams{Max: 10, Wait: time.Duration(tc.polls-1) * interval})
				if err == nil && len(got) > 0 {
					err = fmt.Errorf("received %d messages, want none", len(got))
				}
				done <- err
			}()
			for range tc.polls - 1 {
				if err := clk.WaitForSleepers(ctx, 1); err != nil {
					t.Fatal(err)
				}
				clk.Advance(interval)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := questions() - q1 - reading; got != tc.polls {
				t.Fatalf("%d polls ran %d statements, want one each", tc.polls, got)
			}
		})
	}
}
