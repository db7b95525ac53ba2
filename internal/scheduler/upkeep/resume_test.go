package upkeep

import (
	"testing"
	"time"

	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Resume runs under the apply's lease and gives it back; while an apply or
// a child edit holds the lease it does nothing (the holder resumes first,
// or the next run does), rather than undo a set being staged.
func TestResumeTakesTheApplyLease(t *testing.T) {
	t.Parallel()
	e := setup(t, Config{})
	if ran, err := e.svc.Resume(e.ctx); err != nil || !ran {
		t.Fatalf("Resume with the lease free: %v, %v; want it run", ran, err)
	}
	l, err := e.db.LeaseGet(e.ctx, driver.ChangeLease)
	if err != nil {
		t.Fatal(err)
	}
	if l.Owner != "" {
		t.Fatalf("lease %+v after Resume, want released", l)
	}
	if _, err := e.db.LeaseAcquire(e.ctx, driver.LeaseAcquireParams{Name: driver.ChangeLease, Owner: "apply",
		Now: clock.Millis(e.clk), TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if ran, err := e.svc.Resume(e.ctx); err != nil || ran {
		t.Fatalf("Resume while an apply holds the lease: %v, %v; want it skipped", ran, err)
	}
	if l, err := e.db.LeaseGet(e.ctx, driver.ChangeLease); err != nil || l.Owner != "apply" {
		t.Fatalf("lease %+v, %v; want the apply's still", l, err)
	}
}
