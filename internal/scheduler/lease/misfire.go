package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// A FIRE_ONCE_NOW job fires once for the fires it missed while xjob was
// stopped. Those missed fires reach the scheduler by two roads: the
// occurrences the scan had pushed onto the ring before the stop arrive
// late at the ring (on AWS, at several ring processes at once, one Lambda
// environment per late bucket), and the scan itself finds the job's own
// next fire time past when it planned no further than that. Every one of
// them is mapped to a misfire episode that all processes agree on, kept
// in the lease store as the lease "misfire/j<job>":
//
//	missed fire at t, overdue as of o ──▶ LeaseAcquire(owner "t", now t, expires o+1)
//	                                          │taken: t starts an episode   │held: an episode covers t
//	                                          ▼                             ▼
//	                                       key t                  LeaseGet: key = its owner
//
// An episode's key is the fire time of the missed fire that started it;
// it covers every fire time before its expiry, that is every fire already
// overdue when it started (o: the time a fire must be before to count as
// missed, now minus the misfire threshold). The MISFIRE occurrence of a
// missed fire is the key's, whichever road it came by, so the ring and
// the scan produce the same occurrence id and dispatch's claim lets one
// through; a fire that falls due after the episode started and is still
// missed starts the next one. The conditional write is the lease's (free,
// expired as of t, or the same owner): two processes that both start an
// episode with the same t agree on it, two with different fire times
// cannot both start one that covers the other's.
//
// The lease is kept until MisfireKeep after its expiry, then the store may
// delete it (LeaseAcquireParams.PurgeAt: DynamoDB's TTL), so that a job
// that misfired once, deleted since, leaves nothing behind. Missing, the
// lease answers every fire time as its expiry would (free: the fire
// starts an episode), so deleting it changes the answer only for a fire it
// covers, one before the expiry, arriving after MisfireKeep: see there.

// Episode is a misfire episode: Key is its MISFIRE occurrence's fire time,
// covering every fire time before Expires (Unix ms).
type Episode struct {
	Key, Expires int64
}

// Covers reports whether the episode covers the fire time at.
func (e Episode) Covers(at int64) bool { return at < e.Expires }

// MisfireKeep is how long after its expiry a misfire episode's lease is
// kept. A fire the episode covers is before the expiry, and reaches the
// scheduler by the ring, in a bucket sent before its fire time, which no
// queue holds longer than SQS's longest retention, 14 days, counted from
// the first send even through a dead-letter queue's redrive; or by the
// scan, which reads the job's next fire time, moved past the episode when
// its MISFIRE fire is planned. A day more is slack for clock skew between
// the processes (TTL deletes late, never early).
const MisfireKeep = 15 * 24 * time.Hour

// misfirePrefix names a job's misfire lease.
const misfirePrefix = "misfire/j"

// MisfireName returns the lease name of job's misfire episodes.
func MisfireName(job int64) string { return misfirePrefix + strconv.FormatInt(job, 10) }

// MisfireEpisode returns the misfire episode covering job's missed fire
// at, starting one in store when none does. overdue is the instant before
// which fire times count as missed (now − the misfire threshold); at must
// be before it.
func MisfireEpisode(ctx context.Context, store driver.LeaseStore, job, at, overdue int64) (Episode, error) {
	name := MisfireName(job)
	expires := max(overdue+1, at+1)
	l, err := store.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: name, Owner: strconv.FormatInt(at, 10), Now: at,
		TTL: time.Duration(expires-at) * time.Millisecond, PurgeAt: expires + MisfireKeep.Milliseconds()})
	if err == nil {
		return Episode{Key: at, Expires: l.ExpiresAt}, nil
	}
	if !errors.Is(err, xjob.ErrLeaseHeld) {
		return Episode{}, fmt.Errorf("start misfire episode of job %d: %w", job, err)
	}
	if l, err = store.LeaseGet(ctx, name); err != nil {
		return Episode{}, fmt.Errorf("read misfire episode of job %d: %w", job, err)
	}
	key, err := strconv.ParseInt(l.Owner, 10, 64)
	if err != nil {
		return Episode{}, fmt.Errorf("read misfire episode of job %d: owner %q: %w", job, l.Owner, err)
	}
	return Episode{Key: key, Expires: l.ExpiresAt}, nil
}
