package drivertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// ExerciseLeaseStore runs the LeaseStore contract against stores from newStore.
func ExerciseLeaseStore(t *testing.T, newStore func(t *testing.T) driver.LeaseStore) {
	t.Helper()
	const ttl = 10 * time.Second
	ms := ttl.Milliseconds()

	t.Run("Lifecycle", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		_, err := s.LeaseGet(ctx, "scan-0")
		requireIs(t, err, xjob.ErrNotFound, "get unknown lease")

		a, err := s.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: "scan-0", Owner: "A", Now: t0, TTL: ttl})
		requireNoErr(t, err, "acquire free")
		if a.Name != "scan-0" || a.Owner != "A" || a.Token != 1 || a.ExpiresAt != t0+ms {
			t.Fatalf("first acquire: %+v", a)
		}
		got, err := s.LeaseGet(ctx, "scan-0")
		requireNoErr(t, err, "get")
		if got != a {
			t.Fatalf("get: %+v, want %+v", got, a)
		}

		_, err = s.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: "scan-0", Owner: "B", Now: t0 + ms - 1, TTL: ttl})
		requireIs(t, err, xjob.ErrLeaseHeld, "acquire held lease")

		// The same owner re-acquires: same token, later expiry.
		a2, err := s.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: "scan-0", Owner: "A", Now: t0 + 1000, TTL: ttl})
		requireNoErr(t, err, "re-acquire by owner")
		if a2.Token != a.Token || a2.ExpiresAt != t0+1000+ms {
			t.Fatalf("re-acquire: %+v after %+v", a2, a)
		}
		a3, err := s.LeaseRenew(ctx, driver.LeaseRenewParams{Lease: a2, Now: t0 + 2000, TTL: ttl})
		requireNoErr(t, err, "renew")
		if a3.Token != a.Token || a3.Owner != "A" || a3.ExpiresAt != t0+2000+ms {
			t.Fatalf("renew: %+v", a3)
		}

		// Expired: B takes over with a higher token; A has lost it.
		b, err := s.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: "scan-0", Owner: "B", Now: a3.ExpiresAt + 1, TTL: ttl})
		requireNoErr(t, err, "take over expired lease")
		if b.Owner != "B" || b.Token <= a3.Token {
			t.Fatalf("takeover: %+v after %+v", b, a3)
		}
		_, err = s.LeaseRenew(ctx, driver.LeaseRenewParams{Lease: a3, Now: a3.ExpiresAt + 2, TTL: ttl})
		requireIs(t, err, xjob.ErrLeaseLost, "renew after takeover")
		requireIs(t, s.LeaseRelease(ctx, a3), xjob.ErrLeaseLost, "release after takeover")
		_, err = s.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: "scan-0", Owner: "A", Now: a3.ExpiresAt + 3, TTL: ttl})
		requireIs(t, err, xjob.ErrLeaseHeld, "old owner acquires the taken-over lease")

		// Release keeps the token, so the next holder's is higher still.
		requireNoErr(t, s.LeaseRelease(ctx, b), "release")
		rel, err := s.LeaseGet(ctx, "scan-0")
		requireNoErr(t, err, "get released")
		if rel.Token != b.Token {
			t.Fatalf("release changed the token: %+v after %+v", rel, b)
		}
		_, err = s.LeaseRenew(ctx, driver.LeaseRenewParams{Lease: b, Now: b.ExpiresAt - 5, TTL: ttl})
		requireIs(t, err, xjob.ErrLeaseLost, "renew after release")
		requireIs(t, s.LeaseRelease(ctx, b), xjob.ErrLeaseLost, "release twice")
		c, err := s.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: "scan-0", Owner: "C", Now: b.ExpiresAt - 4, TTL: ttl})
		requireNoErr(t, err, "acquire released lease before its old expiry")
		if c.Token <= b.Token {
			t.Fatalf("token after release: %d, previous %d", c.Token, b.Token)
		}
		requireNoErr(t, s.LeaseRelease(ctx, c), "release")
		c2, err := s.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: "scan-0", Owner: "C", Now: b.ExpiresAt - 3, TTL: ttl})
		requireNoErr(t, err, "same owner acquires its released lease")
		if c2.Token <= c.Token {
			t.Fatalf("token of a free lease did not grow: %d after %d", c2.Token, c.Token)
		}

		// Leases are independent by name.
		other, err := s.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: "scan-1", Owner: "B", Now: t0, TTL: ttl})
		requireNoErr(t, err, "acquire another lease")
		if other.Token != 1 {
			t.Fatalf("other lease token %d, want 1", other.Token)
		}
	})

	t.Run("ConcurrentAcquireOneWinner", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		for round, name := range []string{"fresh", "expired"} {
			if round == 1 {
				_, err := s.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: name, Owner: "old", Now: t0, TTL: ttl})
				requireNoErr(t, err, "seed")
			}
			now := t0 + int64(round)*2*ms
			got := make([]driver.Lease, 8)
			errs := race(8, func(i int) error {
				var err error
				got[i], err = s.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: name, Owner: fmt.Sprint("owner-", i), Now: now, TTL: ttl})
				return err
			})
			w := oneWinner(t, errs, xjob.ErrLeaseHeld, "concurrent acquire of "+name)
			held, err := s.LeaseGet(ctx, name)
			requireNoErr(t, err, "get")
			if held != got[w] {
				t.Fatalf("%s: stored %+v, winner got %+v", name, held, got[w])
			}
		}
	})
}
