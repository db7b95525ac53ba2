// Package clock lets core logic read and wait on time through an interface,
// so that tests drive schedules, leases and the ring with a fake clock
// instead of sleeping.
package clock

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock tells the time and waits for it.
type Clock interface {
	Now() time.Time
	// SleepUntil returns when the clock reaches t (at once if it already
	// has) or with ctx's error when ctx ends first.
	SleepUntil(ctx context.Context, t time.Time) error
}

// Millis returns c's time as Unix milliseconds, the unit of every stored instant.
func Millis(c Clock) int64 { return c.Now().UnixMilli() }

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// SleepUntil waits on a timer.
func (Real) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Fake is a clock that moves only when told to. It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	changed chan struct{} // closed and replaced whenever waiters change
}

type waiter struct {
	at   time.Time
	done chan struct{}
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// SleepUntil blocks until Advance or Set moves the clock to t or past it.
func (f *Fake) SleepUntil(ctx context.Context, t time.Time) error {
	f.mu.Lock()
	if !f.now.Before(t) {
		f.mu.Unlock()
		return ctx.Err()
	}
	w := waiter{at: t, done: make(chan struct{})}
	f.waiters = append(f.waiters, w)
	f.notifyLocked()
	f.mu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		for i := range f.waiters {
			if f.waiters[i].done == w.done {
				f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
				break
			}
		}
		f.notifyLocked()
		f.mu.Unlock()
		return ctx.Err()
	}
}

// Advance moves the clock forward by d and wakes every sleeper whose time has come.
func (f *Fake) Advance(d time.Duration) { f.Set(f.Now().Add(d)) }

// Set moves the clock to t (never backwards) and wakes due sleepers in time order.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.Before(f.now) {
		return
	}
	f.now = t
	sort.Slice(f.waiters, func(i, j int) bool { return f.waiters[i].at.Before(f.waiters[j].at) })
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if !w.at.After(t) {
			close(w.done)
		} else {
			kept = append(kept, w)
		}
	}
	f.waiters = kept
	f.notifyLocked()
}

// Sleepers returns how many goroutines are blocked in SleepUntil.
func (f *Fake) Sleepers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// WaitForSleepers blocks until at least n goroutines sleep on the clock or
// ctx ends. Tests use it to advance time only once the code under test waits.
func (f *Fake) WaitForSleepers(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		if len(f.waiters) >= n {
			f.mu.Unlock()
			return nil
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}
