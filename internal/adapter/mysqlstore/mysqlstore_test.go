package mysqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/testenv/mariadb"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/driver/drivertest"
)

// TestMain stops the MariaDB server the tests share.
func TestMain(m *testing.M) { mariadb.Main(m) }

var epoch = time.UnixMilli(1_700_000_000_000)

// setup opens a DB on a fresh database of the shared server, closed (and
// dropped) when the test ends.
func setup(t testing.TB, opts Options) *DB {
	t.Helper()
	return openAt(t, mariadb.Shared(t).NewDatabase(t), opts)
}

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

func TestStoreContract(t *testing.T) {
	t.Parallel()
	drivertest.Exercise(t, func(t *testing.T) driver.Store {
		return setup(t, Options{Shards: 4, Clock: clock.NewFake(epoch)})
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
	// each lane's table name through a queue of ring buckets.
	for _, lane := range []fire.Lane{fire.LaneFast, fire.LaneSlow} {
		t.Run("Lane"+string(lane), func(t *testing.T) {
			t.Parallel()
			drivertest.ExerciseQueue(t, func(t *testing.T) drivertest.QueueHarness {
				return harness(t, func(db *DB) driver.Queue[fire.RingBucket] {
					return newQueue[fire.RingBucket](db, "dispatch-"+string(lane))
				})
			})
		})
	}
}
