package pgstore

import (
	"testing"

	"github.com/xjobdev/xjob/pkg/driver/drivertest"
)

func TestRestoreStoreContract(t *testing.T) {
	t.Parallel()
	drivertest.ExerciseRestoreStore(t, 4, func(t *testing.T) drivertest.RestoreTarget {
		return setup(t, Options{Shards: 4, MaxConns: 4})
	})
}
