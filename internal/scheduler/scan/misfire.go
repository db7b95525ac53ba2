package scan

import (
	"context"
	"fmt"
	"sync"

	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/lease"
	"github.com/xjobdev/xjob/pkg/driver"
)

// A FIRE_ONCE_NOW job that xjob left stopped for longer than the fires the
// scan had pushed ahead (plus the misfire threshold) misses fires by two
// roads: its pushed occurrences reach the ring late, and the scan finds
// its own next fire time missed. xxl-job fires such a job once, so both
// roads join one misfire episode (lease.MisfireEpisode): the scan's
// MISFIRE fire takes the episode's key as its fire time, the ring's late
// occurrences do the same, and dispatch's claim of the one occurrence id
// lets a single run through, whichever road is first. DO_NOTHING needs no
// episode: both roads skip and count.

// episodeWorkers bounds the lease calls one page makes at once: after a
// long stop every FIRE_ONCE_NOW job of a page misfires in the same tick.
const episodeWorkers = 16

// laneTask locates one dispatch task planned for a lane: lanes[lane][i].
type laneTask struct {
	lane fire.Lane
	i    int
}

// joinEpisodes sets the fire time of each MISFIRE task in missed to the
// key of the misfire episode covering it (fire times before overdue are
// missed). Without a lease store the tasks keep their own fire times.
func (p *Pusher) joinEpisodes(ctx context.Context, lanes map[fire.Lane][]driver.Outgoing[fire.DispatchTask], missed []laneTask, overdue int64) error {
	if p.leases == nil || len(missed) == 0 {
		return nil
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, episodeWorkers)
	)
	for _, m := range missed {
		occ := &lanes[m.lane][m.i].Msg.Occurrence
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			e, err := lease.MisfireEpisode(ctx, p.leases, occ.JobID, occ.FireTime, overdue)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			occ.FireTime = e.Key
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("misfire episodes: %d of %d failed, first: %w", len(errs), len(missed), errs[0])
	}
	return nil
}
