package ring

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/driver"
)

// A FIRE_ONCE_NOW job fires once for the occurrences it missed, and on AWS
// those arrive at several ring processes at once (one Lambda environment
// per late bucket). Each missed occurrence is therefore mapped to a
// misfire episode that every process agrees on, kept in the lease store as
// the lease "misfire/j<job>":
//
//	late occurrence at t ──▶ cached episode covers t? ──yes──▶ its key
//	                                  │no
//	                                  ▼
//	        LeaseAcquire(owner "t", now t, expires received-threshold+1)
//	            │taken: t starts an episode      │held: an episode covers t
//	            ▼                                ▼
//	         key t                     LeaseGet: key = its owner
//
// An episode's key is the fire time of the occurrence that started it; it
// covers every fire time before its expiry, that is every fire already
// overdue when it started. The MISFIRE occurrence of a late fire is the
// key's, so all processes produce the same occurrence id and dispatch's
// claim lets one through; a fire that falls due after the episode started
// and still arrives late starts the next one. The conditional write is the
// lease's (free, expired as of t, or the same owner): two processes that
// both start an episode with the same t agree on it, two with different
// fire times cannot both start one that covers the other's.
//
// A Ring without a lease store keeps the episodes in memory: once per
// process, which is once for xjob local.

// episode is a misfire episode: key is the MISFIRE occurrence's fire time,
// covering every fire time before expires.
type episode struct {
	key, expires int64
}

// misfireLeasePrefix names a job's misfire lease.
const misfireLeasePrefix = "misfire/j"

// misfire identifies one late occurrence of a job.
type misfire struct{ job, at int64 }

// misfireKeys maps each late occurrence of a FIRE_ONCE_NOW job in items to
// the key of its misfire episode (the fire time of its MISFIRE
// occurrence). received is when the bucket arrived (Unix ms).
func (r *Ring) misfireKeys(ctx context.Context, items []xjob.RingItem, byID map[int64]*xjob.Job, received int64) (map[misfire]int64, error) {
	var keys map[misfire]int64
	for _, it := range items {
		job := byID[it.JobID]
		if xjob.Superseded(job, xjob.Occurrence{JobID: it.JobID, Type: xjob.TriggerCron, FireTime: it.FireTime}, it.Revision) != "" ||
			Late(job.MisfireStrategy, time.Duration(received-it.FireTime)*time.Millisecond, r.threshold) != FireMisfire {
			continue
		}
		key, err := r.misfireKey(ctx, it.JobID, it.FireTime, received)
		if err != nil {
			return nil, fmt.Errorf("misfire of job %d at %d: %w", it.JobID, it.FireTime, err)
		}
		if keys == nil {
			keys = map[misfire]int64{}
		}
		keys[misfire{it.JobID, it.FireTime}] = key
	}
	return keys, nil
}

// misfireKey is the key of the episode covering job's late occurrence at.
func (r *Ring) misfireKey(ctx context.Context, job, at, received int64) (int64, error) {
	r.mu.Lock()
	e, ok := r.missed[job]
	r.mu.Unlock()
	if ok && at < e.expires {
		return e.key, nil
	}
	// Every fire time up to received-threshold was overdue: covered.
	e = episode{key: at, expires: received - r.threshold.Milliseconds() + 1}
	if r.leases != nil {
		var err error
		if e, err = r.episodeOf(ctx, job, at, e.expires); err != nil {
			return 0, err
		}
	}
	r.mu.Lock()
	if r.missed == nil {
		r.missed = map[int64]episode{}
	}
	if cur, ok := r.missed[job]; !ok || cur.expires <= e.expires {
		r.missed[job] = e
	}
	r.mu.Unlock()
	return e.key, nil
}

// episodeOf starts the episode of job's late occurrence at in the lease
// store, or returns the one that covers it.
func (r *Ring) episodeOf(ctx context.Context, job, at, expires int64) (episode, error) {
	name := misfireLeasePrefix + strconv.FormatInt(job, 10)
	owner := strconv.FormatInt(at, 10)
	l, err := r.leases.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: name, Owner: owner, Now: at,
		TTL: time.Duration(expires-at) * time.Millisecond})
	if err == nil {
		return episode{key: at, expires: l.ExpiresAt}, nil
	}
	if !errors.Is(err, xjob.ErrLeaseHeld) {
		return episode{}, fmt.Errorf("start episode: %w", err)
	}
	if l, err = r.leases.LeaseGet(ctx, name); err != nil {
		return episode{}, fmt.Errorf("read episode: %w", err)
	}
	key, err := strconv.ParseInt(l.Owner, 10, 64)
	if err != nil {
		return episode{}, fmt.Errorf("read episode: owner %q: %w", l.Owner, err)
	}
	return episode{key: key, expires: l.ExpiresAt}, nil
}
