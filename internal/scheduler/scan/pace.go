package scan

import (
	"context"
	"sync"
	"time"

	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Pacing the advances (Tunables.AdvanceRate). Every advance rewrites the
// job's entry in the due index, whose entries of one scan shard share one
// key: on DynamoDB the index partition dueShard, where a sort-key change
// is a delete and a put (2 write units for an entry under 1 KB). Jobs
// started together come due together (at best on the same grid of
// planEnd), so one tick may advance thousands of a shard's jobs, and
// written as fast as the store takes them they put thousands of write
// units a second on that one key, above DynamoDB's 1,000 per key and
// second. So the scanner spaces each shard's advances: at most
// AdvanceRate a second, in chunks of a tenth of it (paceChunks a second),
// the chunks' starts spaced chunk/AdvanceRate apart on the injected clock.
// Any one-second window then sees at most paceChunks+1 chunks start, that
// is AdvanceRate × 1.1 advances. The Lambda scan's 180 a second keeps the
// key at 360 write units a second, 396 in the worst window (400 is the
// target, under half the limit). A tick reads no more due jobs than it can
// advance within its budget at that rate (TickShard), so a shard's tick
// still ends within the budget and inside its lease.
const paceChunks = 10

// pacer spaces the advances of one shard.
type pacer struct {
	clk  clock.Clock
	rate int // advances a second
	mu   sync.Mutex
	next time.Time // when the next chunk may start
}

// wait blocks until n more advances may be written.
func (p *pacer) wait(ctx context.Context, n int) error {
	p.mu.Lock()
	now := p.clk.Now()
	start := p.next
	if start.Before(now) {
		start = now
	}
	p.next = start.Add(time.Duration(n) * time.Second / time.Duration(p.rate))
	p.mu.Unlock()
	if !start.After(now) {
		return nil
	}
	return p.clk.SleepUntil(ctx, start)
}

// pacedJobs is the scanner's job store with each shard's advances paced.
// The scan advances one page of one shard per JobAdvanceMany call.
type pacedJobs struct {
	driver.JobStore
	shards int
	rate   int
	pacers []*pacer
}

func newPacedJobs(jobs driver.JobStore, clk clock.Clock, shards, rate int) *pacedJobs {
	p := &pacedJobs{JobStore: jobs, shards: shards, rate: rate, pacers: make([]*pacer, shards)}
	for i := range p.pacers {
		p.pacers[i] = &pacer{clk: clk, rate: rate}
	}
	return p
}

// JobAdvanceMany writes ps in chunks of rate/paceChunks, each when its
// shard's pacer lets it.
func (p *pacedJobs) JobAdvanceMany(ctx context.Context, ps []driver.JobAdvanceParams) ([]error, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	pc := p.pacers[fire.ShardOf(ps[0].ID, p.shards)]
	chunk := max(1, p.rate/paceChunks)
	errs := make([]error, 0, len(ps))
	for len(ps) > 0 {
		n := min(chunk, len(ps))
		if err := pc.wait(ctx, n); err != nil {
			return nil, err
		}
		e, err := p.JobStore.JobAdvanceMany(ctx, ps[:n])
		if err != nil {
			return nil, err
		}
		errs = append(errs, e...)
		ps = ps[n:]
	}
	return errs, nil
}
