package drivertest_test

// This file is what a backend's own test file holds: one test per suite
// family, each handing the suite a factory that opens a fresh, empty
// store (or queue) per call. It runs them over the SQLite backend through
// its exported API only, as a backend outside this module would run them
// over its own; `go test ./pkg/driver/drivertest` runs it like any test.
//
// A backend over a server (PostgreSQL, DynamoDB, SQS) makes each call's
// store empty by giving it its own database, schema, table prefix or key
// prefix, and skips with a pointer to what starts the server when it is
// missing (`go test -short` skips it outright).

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/driver/drivertest"
)

// openStore opens a fresh SQLite file under t's temporary directory on a
// fake clock, and closes it when t ends.
func openStore(t *testing.T, clk clock.Clock) *sqlitestore.DB {
	t.Helper()
	return openFile(t, filepath.Join(t.TempDir(), "xjob.db"), clk)
}

// openFile opens the SQLite file at path on clk (nil: the wall clock),
// and closes it when t ends.
func openFile(t *testing.T, path string, clk clock.Clock) *sqlitestore.DB {
	t.Helper()
	db, err := sqlitestore.Open(context.Background(), path, sqlitestore.Options{Shards: 4, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return db
}

// Exercise runs every store suite (jobs, groups, logs, registry, leases,
// reports, users, GLUE sources, counts, sign-in state, change sets). A
// backend that implements only some ports runs their suites one by one:
// ExerciseJobStore, ExerciseGroupStore, and so on.
func TestExampleStoreContract(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	drivertest.Exercise(t, func(t *testing.T) driver.Store {
		return openStore(t, clock.NewFake(start))
	})
}

// ExerciseQueue runs the queue suite on one queue; the harness tells it
// how time passes for that queue: a fake clock here, real time (Advance
// sleeps, Settle nil) for a queue on a server's clock.
func TestExampleQueueContract(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	drivertest.ExerciseQueue(t, func(t *testing.T) drivertest.QueueHarness {
		clk := clock.NewFake(start)
		db := openStore(t, clk)
		return drivertest.QueueHarness{
			Queue:   db.Ring(),
			Now:     clk.Now,
			Advance: clk.Advance,
			// A long-polling Receive sleeps on the clock: let time pass
			// only once it waits.
			Settle: func(ctx context.Context) { _ = clk.WaitForSleepers(ctx, 1) },
		}
	})
}

// ExerciseSharedStore runs what a database shared by several processes
// must show; Open gives it two handles on one file. SQLite exports no raw
// access to its queues, so RawRing stays nil here and the set-aside test
// runs in the backend's own package, where it can reach one.
func TestExampleSharedStoreContract(t *testing.T) {
	t.Parallel()
	drivertest.ExerciseSharedStore(t, drivertest.SharedHarness[*sqlitestore.DB]{
		Open: func(t *testing.T, o drivertest.SharedOptions) (*sqlitestore.DB, *sqlitestore.DB) {
			path := filepath.Join(t.TempDir(), "xjob.db")
			return openFile(t, path, o.Clock()), openFile(t, path, o.Clock())
		},
	})
}
