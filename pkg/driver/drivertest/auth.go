package drivertest

import (
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob/pkg/driver"
)

// ExerciseAuthStore runs the AuthStore contract against stores from newStore.
func ExerciseAuthStore(t *testing.T, newStore func(t *testing.T) driver.AuthStore) {
	t.Helper()
	const start = int64(1_700_000_000_000)
	window := time.Minute

	t.Run("AttemptWindows", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		add := func(key string, now int64, want int) {
			t.Helper()
			n, err := s.AttemptAdd(ctx, driver.AttemptAddParams{Key: key, Now: now, Window: window})
			requireNoErr(t, err, "attempt add")
			if n != want {
				t.Fatalf("AttemptAdd(%s, +%d ms) = %d, want %d", key, now-start, n, want)
			}
		}
		add("user:a|ip:1", start, 1)
		add("user:a|ip:1", start+1000, 2)
		add("user:a|ip:2", start+1000, 1) // keys count apart
		add("user:a|ip:1", start+window.Milliseconds()-1, 3)
		add("user:a|ip:1", start+window.Milliseconds(), 1) // the window is over: a new one
		add("user:a|ip:1", start+window.Milliseconds()+5, 2)
		requireNoErr(t, s.AttemptReset(ctx, "user:a|ip:1"), "reset")
		add("user:a|ip:1", start+window.Milliseconds()+6, 1)
		add("user:a|ip:2", start+2000, 2)
		requireNoErr(t, s.AttemptReset(ctx, "never-seen"), "reset of an unknown key")
	})

	t.Run("AttemptConcurrent", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		const n = 20
		seen := make([]bool, n+1)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := s.AttemptAdd(ctx, driver.AttemptAddParams{Key: "burst", Now: start, Window: window})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if c < 1 || c > n || seen[c] {
					t.Errorf("count %d seen twice or out of range", c)
					return
				}
				seen[c] = true
			}()
		}
		wg.Wait()
	})

	t.Run("Sessions", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		got, err := s.SessionRevoked(ctx, "sess-1")
		requireNoErr(t, err, "revoked?")
		if got {
			t.Fatal("a session nobody revoked is revoked")
		}
		requireNoErr(t, s.SessionRevoke(ctx, "sess-1", start+3_600_000), "revoke")
		requireNoErr(t, s.SessionRevoke(ctx, "sess-1", start+3_600_000), "revoke twice")
		for id, want := range map[string]bool{"sess-1": true, "sess-2": false} {
			got, err := s.SessionRevoked(ctx, id)
			requireNoErr(t, err, "revoked?")
			if got != want {
				t.Fatalf("SessionRevoked(%s) = %v, want %v", id, got, want)
			}
		}
	})
}
