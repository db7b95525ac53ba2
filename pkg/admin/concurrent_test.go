package admin_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/admin"
)

// TestConcurrentUpdateWithoutVersion: updates that name no version apply to
// the latest version however many run at once (the docs' promise); an
// update naming a stale version is still a conflict.
func TestConcurrentUpdateWithoutVersion(t *testing.T) {
	e := setup(t)
	j := e.create(e.spec(xjob.ScheduleCron, "0 0 * * * ?"))
	const writers = 64
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := j
			n.Description = fmt.Sprintf("writer %d", i)
			_, errs[i] = e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: n})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	got, err := e.svc.GetJob(e.ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version < j.Version+writers {
		t.Errorf("version %d after %d updates of version %d", got.Version, writers, j.Version)
	}
	stale := j
	stale.Description = "stale"
	if _, err := e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: stale, Version: j.Version}); !errors.Is(err, xjob.ErrConflict) {
		t.Fatalf("update naming stale version %d: %v, want a conflict", j.Version, err)
	}
}
