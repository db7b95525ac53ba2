package auth

import (
	"context"
	"sync"
	"time"

	"github.com/xjobdev/xjob/pkg/driver"
)

// Sign-in limits. Attempts are counted before any password is hashed, in
// the store (driver.AuthStore), so that a burst of concurrent tries cannot
// all pass a check made before the first is counted, and so that every
// process of an installation (each Lambda environment) shares one count:
//
//   - per username and client: MaxFailures attempts in FailWindow, then
//     that client is refused for that user until the window ends. Only the
//     client that guessed is held back: a third party cannot lock a user
//     out, and one person's typos behind a NAT lock out only their own
//     username from there. The client is the connection's peer, or behind
//     a trusted reverse proxy the address it forwards (package clientip):
//     without that setting every user behind the proxy is one client.
//   - per username, over clients that already failed for it in the window:
//     UserMaxFailures attempts in FailWindow. Past it the username is
//     under attack from many addresses, and such attempts pass one per
//     SlowInterval across all of them: a guesser with a thousand addresses
//     gets as many tries as one patient guesser, and the username is
//     slowed, never locked, so failing on purpose cannot keep its owner
//     out. The first attempt from a new client never counts here, and a
//     browser the user signed in from before (KnownCookie, signed with the
//     session key, sent to the sign-in form only) skips this lane: the
//     owner's usual browser meets only its own per-client count.
//
// Hash work itself is bounded by a semaphore of HashSlots (each argon2id
// check holds DefaultParams.Memory, 19 MiB): memory stays bounded however
// many sign-ins arrive at once, and one that waits longer than HashWait for
// a slot is answered ErrBusy without hashing.

// hashSlots bounds concurrent password hashing.
type hashSlots chan struct{}

// acquire takes a slot within wait; false when none came free.
func (h hashSlots) acquire(ctx context.Context, wait time.Duration) bool {
	select {
	case h <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case h <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (h hashSlots) release() { <-h }

// memStore is the AuthStore of a Service configured without one: counts
// and revocations in this process only (tests, tools).
type memStore struct {
	mu      sync.Mutex
	windows map[string]*memWindow
	revoked map[string]int64
}

type memWindow struct {
	end   int64
	count int
}

// maxMemKeys bounds memStore: past it, ended windows and revocations are
// dropped, then (under a flood of live ones) everything.
const maxMemKeys = 10_000

var _ driver.AuthStore = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{windows: map[string]*memWindow{}, revoked: map[string]int64{}}
}

func (m *memStore) AttemptAdd(_ context.Context, p driver.AttemptAddParams) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.windows[p.Key]
	if !ok || w.end <= p.Now {
		if len(m.windows) >= maxMemKeys {
			for k, w := range m.windows {
				if w.end <= p.Now {
					delete(m.windows, k)
				}
			}
			if len(m.windows) >= maxMemKeys {
				clear(m.windows)
			}
		}
		w = &memWindow{end: p.Now + p.Window.Milliseconds()}
		m.windows[p.Key] = w
	}
	w.count++
	return w.count, nil
}

func (m *memStore) AttemptReset(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.windows, key)
	return nil
}

func (m *memStore) SessionRevoke(_ context.Context, id string, expires int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.revoked) >= maxMemKeys {
		// A record that ended a week before this one's end is past any
		// cookie still in use (the store reads no clock: the new record's
		// end stands in for now).
		for k, end := range m.revoked {
			if end < expires-7*24*time.Hour.Milliseconds() {
				delete(m.revoked, k)
			}
		}
	}
	m.revoked[id] = expires
	return nil
}

func (m *memStore) SessionRevoked(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.revoked[id]
	return ok, nil
}
