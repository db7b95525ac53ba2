package mysqlstore

import (
	"sync"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/mariadb"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Concurrent upserts of one counter from two nodes lose no increment.
func TestConcurrentUpsertsLoseNothing(t *testing.T) {
	t.Parallel()
	dsn := mariadb.Shared(t).NewDatabase(t)
	a, b := openAt(t, dsn, Options{}), openAt(t, dsn, Options{})
	ctx := t.Context()
	var wg sync.WaitGroup
	for i := range 8 {
		db := []*DB{a, b}[i%2]
		wg.Go(func() {
			for k := range 100 {
				if err := db.ReportAdd(ctx, xjob.ReportDay{Day: "d", GroupID: int64(k % 3), SucCount: 1}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got, err := a.ReportList(ctx, driver.ReportListParams{From: "a", To: "z"})
	if err != nil || len(got) != 1 || got[0].SucCount != 800 {
		t.Fatalf("%+v %v", got, err)
	}
}
