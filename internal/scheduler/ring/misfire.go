package ring

import (
	"context"
	"fmt"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/lease"
)

// A FIRE_ONCE_NOW job fires once for the occurrences it missed, and on AWS
// those arrive at several ring processes at once (one Lambda environment
// per late bucket), while the scan may find the job's own next fire time
// missed too. Each missed occurrence is therefore mapped to a misfire
// episode every process agrees on (lease.MisfireEpisode, which draws the
// protocol), cached here per job:
//
//	late occurrence at t ──▶ cached episode covers t? ──yes──▶ its key
//	                                  │no
//	                                  ▼
//	        lease.MisfireEpisode(job, t, overdue received−threshold)
//
// A Ring without a lease store keeps the episodes in memory: once per
// process.

// episode is a misfire episode (lease.Episode).
type episode = lease.Episode

// misfire identifies one late occurrence of a job.
type misfire struct{ job, at int64 }

// misfireKeys maps each late occurrence of a FIRE_ONCE_NOW job in items to
// the key of its misfire episode (the fire time of its MISFIRE
// occurrence). received is when the bucket arrived (Unix ms).
func (r *Ring) misfireKeys(ctx context.Context, items []fire.RingItem, byID map[int64]*xjob.Job, received int64, threshold time.Duration) (map[misfire]int64, error) {
	var keys map[misfire]int64
	for _, it := range items {
		job := byID[it.JobID]
		if fire.Superseded(job, fire.Occurrence{JobID: it.JobID, Type: xjob.TriggerCron, FireTime: it.FireTime}, it.Revision) != "" ||
			Late(job.MisfireStrategy, time.Duration(received-it.FireTime)*time.Millisecond, threshold) != FireMisfire {
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
	if ok && e.Covers(at) {
		return e.Key, nil
	}
	// Every fire time before received−threshold was overdue: covered.
	overdue := received - r.threshold.Milliseconds()
	e = episode{Key: at, Expires: overdue + 1}
	if r.leases != nil {
		var err error
		if e, err = lease.MisfireEpisode(ctx, r.leases, job, at, overdue); err != nil {
			return 0, err
		}
	}
	r.mu.Lock()
	if r.missed == nil {
		r.missed = map[int64]episode{}
	}
	if cur, ok := r.missed[job]; !ok || cur.Expires <= e.Expires {
		r.missed[job] = e
	}
	r.mu.Unlock()
	return e.Key, nil
}
