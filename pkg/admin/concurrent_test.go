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

// TestConcurrentChildEdgesCannotCloseACycle: two concurrent edits that
// each add one edge of a cycle (A→B and B→A) each pass a check that reads
// the other's old children; within one process they are serialised, so
// exactly one of them wins and the other is refused as a cycle.
func TestConcurrentChildEdgesCannotCloseACycle(t *testing.T) {
	e := setup(t)
	for round := range 30 {
		a := e.create(e.spec(xjob.ScheduleCron, "0 0 * * * ?"))
		b := e.create(e.spec(xjob.ScheduleCron, "0 0 * * * ?"))
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, edge := range [][2]xjob.Job{{a, b}, {b, a}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := edge[0]
				n.ChildJobIDs = []int64{edge[1].ID}
				_, errs[i] = e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: n})
			}()
		}
		wg.Wait()
		if errs[0] == nil && errs[1] == nil {
			t.Fatalf("round %d: both %d→%d and %d→%d were stored: a cycle", round, a.ID, b.ID, b.ID, a.ID)
		}
		if errs[0] != nil && errs[1] != nil {
			t.Fatalf("round %d: both edges refused: %v; %v", round, errs[0], errs[1])
		}
	}
}
