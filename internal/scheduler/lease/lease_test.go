package lease_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/scheduler/lease"
	"github.com/xjobdev/xjob/pkg/clock"
)

func TestKeeper(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(time.UnixMilli(1_800_000_000_000))
	db, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "x.db"), sqlitestore.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := lease.NewKeeper(db, clk, "a", 10*time.Second)
	b := lease.NewKeeper(db, clk, "b", 10*time.Second)
	name := lease.Name(3)

	la, err := a.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, name); !errors.Is(err, xjob.ErrLeaseHeld) {
		t.Fatalf("b acquire while held: %v, want ErrLeaseHeld", err)
	}

	// Ensure writes only once less than half the TTL is left.
	clk.Advance(4 * time.Second)
	if l, err := a.Ensure(ctx, la); err != nil || l != la {
		t.Fatalf("Ensure at 4s = %+v, %v; want the same lease untouched", l, err)
	}
	clk.Advance(2 * time.Second)
	renewed, err := a.Ensure(ctx, la)
	if err != nil || renewed.ExpiresAt <= la.ExpiresAt || renewed.Token != la.Token {
		t.Fatalf("Ensure at 6s = %+v, %v; want a later expiry, same token", renewed, err)
	}
	if !a.Valid(renewed, time.Second) {
		t.Fatal("a fresh lease must be valid")
	}

	// a stalls past expiry; b takes over with a higher fencing token.
	clk.Advance(11 * time.Second)
	if a.Valid(renewed, 0) {
		t.Fatal("an expired lease must not be valid")
	}
	lb, err := b.Acquire(ctx, name)
	if err != nil || lb.Token <= renewed.Token {
		t.Fatalf("takeover = %+v, %v; want token > %d", lb, err, renewed.Token)
	}
	if _, err := a.Ensure(ctx, renewed); !errors.Is(err, xjob.ErrLeaseLost) {
		t.Fatalf("stale holder renew: %v, want ErrLeaseLost", err)
	}
	if err := a.Release(ctx, renewed); !errors.Is(err, xjob.ErrLeaseLost) {
		t.Fatalf("stale holder release: %v, want ErrLeaseLost", err)
	}

	// Release hands over at once, and tokens keep growing.
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	la2, err := a.Acquire(ctx, name)
	if err != nil || la2.Token <= lb.Token {
		t.Fatalf("after release = %+v, %v; want token > %d", la2, err, lb.Token)
	}
}
