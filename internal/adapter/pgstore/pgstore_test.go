package pgstore

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/testenv/pgserver"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/driver/drivertest"
)

// TestMain stops the shared server once every test has run.
func TestMain(m *testing.M) { os.Exit(pgserver.RunMain(m)) }

var epoch = time.UnixMilli(1_700_000_000_000)

// setup opens a DB on a fresh database of the shared server, closed when
// the test ends.
func setup(t testing.TB, opts Options) *DB {
	t.Helper()
	return openAt(t, newDatabase(t), opts)
}

// newDatabase returns the DSN of a fresh, empty schema of the shared
// server: to the store, which names its tables unqualified, an empty
// database, at a fraction of the cost of one.
func newDatabase(t testing.TB) string {
	t.Helper()
	return pgserver.Shared(t).NewSchema(t)
}

// openAt opens dsn, closed when the test ends (before its database is
// dropped: cleanups run last registered first).
func openAt(t testing.TB, dsn string, opts Options) *DB {
	t.Helper()
	db, err := Open(context.Background(), dsn, opts)
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
		return setup(t, Options{Shards: 4, Clock: clock.NewFake(epoch), MaxConns: 4})
	})
}

func TestCallFenceContract(t *testing.T) {
	t.Parallel()
	drivertest.ExerciseCallFence(t, func(t *testing.T) *DB {
		return setup(t, Options{Clock: clock.NewFake(epoch), MaxConns: 4})
	})
}

func TestNodeStoreContract(t *testing.T) {
	t.Parallel()
	drivertest.ExerciseNodeStore(t, func(t *testing.T) driver.NodeStore {
		return setup(t, Options{Clock: clock.NewFake(epoch), MaxConns: 4})
	})
}

func TestQueueContract(t *testing.T) {
	t.Parallel()
	harness := func(t *testing.T, pick func(*DB) driver.Queue[fire.RingBucket]) drivertest.QueueHarness {
		clk := clock.NewFake(epoch)
		db := setup(t, Options{Clock: clk, MaxConns: 4})
		return drivertest.QueueHarness{Queue: pick(db), Now: clk.Now, Advance: clk.Advance,
			Settle: func(ctx context.Context) { _ = clk.WaitForSleepers(ctx, 1) }}
	}
	for _, q := range []struct {
		name string
		pick func(*DB) driver.Queue[fire.RingBucket]
	}{
		{"Ring", func(db *DB) driver.Queue[fire.RingBucket] { return db.Ring() }},
		// The dispatch lanes share the ring's implementation; run the suite
		// on each lane's table name through a queue of ring buckets.
		{"FastLane", func(db *DB) driver.Queue[fire.RingBucket] {
			return newQueue[fire.RingBucket](db, "dispatch-"+string(fire.LaneFast))
		}},
		{"SlowLane", func(db *DB) driver.Queue[fire.RingBucket] {
			return newQueue[fire.RingBucket](db, "dispatch-"+string(fire.LaneSlow))
		}},
	} {
		t.Run(q.name, func(t *testing.T) {
			t.Parallel()
			drivertest.ExerciseQueue(t, func(t *testing.T) drivertest.QueueHarness { return harness(t, q.pick) })
		})
	}
}
