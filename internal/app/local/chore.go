package local

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// choreLease makes a cluster's periodic chores (retention, the lost-run
// check, the callback sweep, the registry refresh) run on one node per
// period instead of on every node: a node runs a chore only while it holds
// the chore's lease. The lease outlives the period by half of one, so the
// node that holds it renews it at its next run and keeps the chore; when
// that node dies, another takes the chore within about two periods.
func choreLease(leases driver.LeaseStore, clk clock.Clock, owner string, logger *slog.Logger) func(context.Context, string, time.Duration) bool {
	return func(ctx context.Context, name string, every time.Duration) bool {
		_, err := leases.LeaseAcquire(ctx, driver.LeaseAcquireParams{
			Name: "chore-" + name, Owner: owner, Now: clock.Millis(clk), TTL: every + every/2,
		})
		switch {
		case err == nil:
			return true
		case !errors.Is(err, xjob.ErrLeaseHeld) && ctx.Err() == nil:
			logger.Warn("chore lease", "chore", name, "err", err)
		}
		return false
	}
}
