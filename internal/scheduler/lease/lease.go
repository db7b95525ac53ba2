// Package lease keeps per-shard scan leases for one owner, and the misfire
// episodes of FIRE_ONCE_NOW jobs (misfire.go).
//
// A scan shard is worked by at most one scanner at a time. The scanner holds
// a lease (owner, expiry, fencing token) in the store and renews it as it
// ticks; the store grants a lease only when it is free, expired or already
// the caller's, and raises the fencing token every time the lease changes
// hands:
//
//	         Acquire (free/expired)              Renew (same owner+token)
//	free ─────────────────────────▶ held(owner, token n) ──────────────┐
//	 ▲                                  │   ▲                           │
//	 │ Release (keeps token n)          │   └───────────────────────────┘
//	 └──────────────────────────────────┤
//	                                    │ expiry passes, another owner Acquires
//	                                    ▼
//	                          held(other, token n+1) — the old holder's Renew
//	                          and Release now fail with xjob.ErrLeaseLost
//
// The lease only makes double work unlikely; correctness does not rest on it.
// A stale holder that still acts (a paused process) is stopped by the job's
// optimistic version (its advance loses) and by the deterministic occurrence
// ids (its ring pushes are deduplicated at dispatch).
package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Name returns the lease name of scan shard n.
func Name(shard int) string { return fmt.Sprintf("scan-shard-%d", shard) }

// Keeper acquires, renews and releases leases on behalf of one owner.
type Keeper struct {
	store driver.LeaseStore
	clock clock.Clock
	owner string
	ttl   time.Duration
}

// NewKeeper returns a keeper for owner whose leases last ttl.
func NewKeeper(store driver.LeaseStore, clk clock.Clock, owner string, ttl time.Duration) *Keeper {
	return &Keeper{store: store, clock: clk, owner: owner, ttl: ttl}
}

// Owner returns the keeper's owner id.
func (k *Keeper) Owner() string { return k.owner }

// Acquire takes the named lease; xjob.ErrLeaseHeld if another owner holds it.
func (k *Keeper) Acquire(ctx context.Context, name string) (driver.Lease, error) {
	l, err := k.store.LeaseAcquire(ctx, driver.LeaseAcquireParams{
		Name: name, Owner: k.owner, Now: clock.Millis(k.clock), TTL: k.ttl,
	})
	if err != nil {
		return driver.Lease{}, fmt.Errorf("lease acquire %s: %w", name, err)
	}
	return l, nil
}

// Ensure keeps l alive cheaply: it renews only once less than half the TTL
// remains, so a scanner ticking every second writes the lease about once
// per TTL/2 instead of once a second. xjob.ErrLeaseLost if it was taken over.
func (k *Keeper) Ensure(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	now := clock.Millis(k.clock)
	if l.ExpiresAt-now > k.ttl.Milliseconds()/2 {
		return l, nil
	}
	nl, err := k.store.LeaseRenew(ctx, driver.LeaseRenewParams{Lease: l, Now: now, TTL: k.ttl})
	if err != nil {
		return driver.Lease{}, fmt.Errorf("lease renew %s: %w", l.Name, err)
	}
	return nl, nil
}

// Valid reports whether l is still unexpired with margin to spare, so that
// work started now finishes before another owner may take over.
func (k *Keeper) Valid(l driver.Lease, margin time.Duration) bool {
	return clock.Millis(k.clock)+margin.Milliseconds() < l.ExpiresAt
}

// Release gives l up so the next scanner need not wait for it to expire.
func (k *Keeper) Release(ctx context.Context, l driver.Lease) error {
	if err := k.store.LeaseRelease(ctx, l); err != nil {
		return fmt.Errorf("lease release %s: %w", l.Name, err)
	}
	return nil
}
