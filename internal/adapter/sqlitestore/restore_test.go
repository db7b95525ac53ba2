package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/xjobdev/xjob/pkg/driver/drivertest"
)

func TestRestoreStoreContract(t *testing.T) {
	t.Parallel()
	drivertest.ExerciseRestoreStore(t, 4, func(t *testing.T) drivertest.RestoreTarget {
		db, err := Open(context.Background(), filepath.Join(t.TempDir(), "restore.db"), Options{Shards: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	})
}
