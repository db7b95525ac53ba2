package scan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/schedule"
)

// Pusher carries out the scan's step for a set of running jobs at one
// planning time: plan each job's fires within the horizon (PlanJob), push
// them onto the ring (and late ones onto a dispatch lane), then advance
// each job with a write conditional on the version it was read at.
//
// The scanner runs it on each page of due jobs. The admin runs it on one
// job it has just created, started or edited, so that the fires inside the
// horizon — which the scan may already have planned past — reach the ring
// (a job created at :07 with a 10 s rate fires at :10, not :20). Both may
// push the same fire: its occurrence id is deterministic and the ring
// bucket's claim keeps one. A pushed occurrence carries the job's schedule
// revision, so the ring drops it if a person edits the job again.
type Pusher struct {
	cfg     Tunables
	jobs    driver.JobStore
	queues  driver.Queues
	log     *slog.Logger
	metrics *metric.Metrics
	// schedules holds the parsed schedules of the jobs planned, so a job's
	// cron expression and zone are parsed once, not on every tick.
	schedules *schedule.Cache
	// leases, when set, keeps FIRE_ONCE_NOW's misfire episodes, which the
	// scan's MISFIRE fires join (misfire.go).
	leases driver.LeaseStore
}

// NewPusher builds a Pusher from the scan's Config: Jobs and Queues are
// required, Logger defaults to slog.Default(), and of the tunables it
// uses PreRead, Advance, PushWithin, MisfireThreshold, RingLead and
// MaxBucketItems (zero values take the scan's defaults). Leases, Owner
// and the scanner's other fields are not used.
func NewPusher(cfg Config) (*Pusher, error) {
	if cfg.Jobs == nil || cfg.Queues == nil {
		return nil, errors.New("scan pusher: Jobs and Queues are required")
	}
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newPusher(cfg.Tunables, cfg.Jobs, cfg.Queues, fallback.Logger(cfg.Logger), nil), nil
}

func newPusher(cfg Tunables, jobs driver.JobStore, queues driver.Queues, logger *slog.Logger, m *metric.Metrics) *Pusher {
	return &Pusher{cfg: cfg, jobs: jobs, queues: queues, log: logger, metrics: m,
		schedules: schedule.NewCache(schedule.DefaultCacheLimit)}
}

// Horizon is how soon (ms) a job's next fire must be for the admin to push
// it (Tunables.PushWithin): a job whose next fire lies beyond it is read by
// the scan's next tick in time, in full buckets.
func (p *Pusher) Horizon() int64 { return p.cfg.PushWithin.Milliseconds() }

// Push plans, pushes and advances jobs at planning time now (Unix ms).
// Jobs that are not running are skipped. An advance lost to a concurrent
// writer (the scan, or another edit) is counted in Stats.Conflicts: that
// writer has planned the job itself.
func (p *Pusher) Push(ctx context.Context, jobs []xjob.Job, now int64) (Stats, error) {
	var st Stats
	running := make([]xjob.Job, 0, len(jobs))
	for _, j := range jobs {
		if j.TriggerStatus == xjob.StatusRunning && j.TriggerNextTime > 0 {
			running = append(running, j)
		}
	}
	if len(running) == 0 {
		return st, nil
	}
	st.Jobs = len(running)
	// Only the fires the scan could miss; the job is left due for the
	// scan's next tick, which plans the rest in full buckets.
	pol := p.policy()
	pol.PreRead, pol.Advance = p.cfg.PushWithin, p.cfg.PushWithin
	err := p.processPage(ctx, running, now, pol, &st)
	return st, err
}

// policy is the planning rule of the scan's configuration.
func (p *Pusher) policy() Policy {
	return Policy{PreRead: p.cfg.PreRead, Advance: p.cfg.Advance, MisfireThreshold: p.cfg.MisfireThreshold}
}

type planned struct {
	job  *xjob.Job
	plan Plan
	// first: advanced before its fires were pushed (advanceFirst); lost:
	// that advance lost to another writer, so its fires are not pushed.
	first, lost bool
}

// bucketKey names one ring message: a shard's second.
type bucketKey struct {
	shard  int
	second int64
}

func (p *Pusher) processPage(ctx context.Context, jobs []xjob.Job, now int64, pol Policy, st *Stats) error {
	plans := make([]planned, 0, len(jobs))
	buckets := map[bucketKey][]fire.RingItem{}
	var keys []bucketKey
	lanes := map[fire.Lane][]driver.Outgoing[fire.DispatchTask]{}
	var missed []laneTask
	for i := range jobs {
		job := &jobs[i]
		var plan Plan
		sched, err := p.schedules.Parse(string(job.ScheduleType), job.ScheduleConf, job.TimeZone)
		if err != nil {
			p.log.WarnContext(ctx, "scan: stopping job with a bad schedule", "job", job.ID, "err", err)
			plan = Plan{Stop: true, Last: job.TriggerNextTime}
		} else {
			plan = PlanJob(job, sched, now, pol)
		}
		plans = append(plans, planned{job: job, plan: plan, first: job.ScheduleType == xjob.ScheduleFixDelay && len(plan.Fires) > 0})
		if plan.Misfired {
			st.Misfires++
		}
	}
	if err := p.advanceFirst(ctx, plans, st); err != nil {
		return err
	}
	for _, pl := range plans {
		if pl.lost {
			continue
		}
		job, plan := pl.job, pl.plan
		for _, f := range plan.Fires {
			if f.Now {
				st.NowFires++
				lane := fire.LaneOf(job, now)
				if f.Type == xjob.TriggerMisfire {
					missed = append(missed, laneTask{lane, len(lanes[lane])})
				}
				lanes[lane] = append(lanes[lane], driver.Outgoing[fire.DispatchTask]{Msg: fire.DispatchTask{
					Occurrence: fire.Occurrence{JobID: job.ID, Type: f.Type, FireTime: f.Time},
					Revision:   job.Revision,
					EnqueuedAt: now,
				}})
				continue
			}
			st.RingFires++
			k := bucketKey{shard: job.Shard, second: f.Time / 1000}
			if _, ok := buckets[k]; !ok {
				keys = append(keys, k)
			}
			buckets[k] = append(buckets[k], fire.RingItem{JobID: job.ID, FireTime: f.Time, Revision: job.Revision})
		}
	}

	if err := p.joinEpisodes(ctx, lanes, missed, now-pol.MisfireThreshold.Milliseconds()); err != nil {
		return err
	}

	// Effects first: everything planned is durably queued before any job moves on.
	var msgs []driver.Outgoing[fire.RingBucket]
	lead := p.cfg.RingLead.Milliseconds()
	for _, k := range keys {
		items := buckets[k]
		for len(items) > 0 {
			n := min(len(items), p.cfg.MaxBucketItems)
			b := fire.RingBucket{Shard: k.shard, Second: k.second, Items: items[:n], ID: fire.NewBucketID()}
			msgs = append(msgs, driver.Outgoing[fire.RingBucket]{Msg: b, VisibleAt: b.FireAt() - lead})
			items = items[n:]
		}
	}
	if len(msgs) > 0 {
		if err := p.queues.Ring().Send(ctx, msgs); err != nil {
			return fmt.Errorf("ring send: %w", err)
		}
	}
	for lane, tasks := range lanes {
		if err := p.queues.Dispatch(lane).Send(ctx, tasks); err != nil {
			return fmt.Errorf("dispatch send %s: %w", lane, err)
		}
	}

	// One conditional write per job, all in one store call per page.
	var (
		advances []driver.JobAdvanceParams
		advanced []planned
	)
	for _, pl := range plans {
		if pl.first {
			continue // advanced before the push
		}
		if pl.plan.Stop {
			st.Stopped++
		} else if len(pl.plan.Fires) == 0 && !pl.plan.Misfired && pl.plan.Next == pl.job.TriggerNextTime {
			continue
		}
		advances = append(advances, driver.JobAdvanceParams{
			ID: pl.job.ID, ExpectVersion: pl.job.Version,
			TriggerLastTime: pl.plan.Last, TriggerNextTime: pl.plan.Next, Stop: pl.plan.Stop,
		})
		advanced = append(advanced, pl)
	}
	if len(advances) == 0 {
		return nil
	}
	errs, err := p.jobs.JobAdvanceMany(ctx, advances)
	if err != nil {
		return fmt.Errorf("advance %d jobs: %w", len(advances), err)
	}
	for i, err := range errs {
		switch {
		case err == nil:
			p.noteLate(ctx, advanced[i], st)
		case errors.Is(err, xjob.ErrConflict), errors.Is(err, xjob.ErrNotFound):
			st.Conflicts++
		default:
			return fmt.Errorf("advance job %d: %w", advances[i].ID, err)
		}
	}
	return nil
}

// advanceFirst advances the plans marked first — FIX_DELAY jobs with a
// fire — before anything is pushed, and marks those whose advance lost to
// another writer so that their fires are not pushed. A FIX_DELAY job is
// the one whose schedule another writer moves between the scan's read and
// its advance in the normal course: the result of its run moves the job
// from its fallback to end + delay (package callback). Pushed first, as
// every other job's fires are, a fallback fire whose advance then lost to
// that result would go out beside the fire the result planned. Advanced
// first, exactly one of the two writes wins. A crash between this advance
// and the push leaves the job parked at its next fallback: the fire comes
// late, never twice and never not at all, as for a run that never reports.
func (p *Pusher) advanceFirst(ctx context.Context, plans []planned, st *Stats) error {
	var (
		advances []driver.JobAdvanceParams
		at       []int
	)
	for i, pl := range plans {
		if pl.first {
			advances = append(advances, driver.JobAdvanceParams{
				ID: pl.job.ID, ExpectVersion: pl.job.Version,
				TriggerLastTime: pl.plan.Last, TriggerNextTime: pl.plan.Next, Stop: pl.plan.Stop,
			})
			at = append(at, i)
		}
	}
	if len(advances) == 0 {
		return nil
	}
	errs, err := p.jobs.JobAdvanceMany(ctx, advances)
	if err != nil {
		return fmt.Errorf("advance %d fixed-delay jobs: %w", len(advances), err)
	}
	for k, err := range errs {
		pl := &plans[at[k]]
		switch {
		case err == nil:
			p.noteLate(ctx, *pl, st)
		case errors.Is(err, xjob.ErrConflict), errors.Is(err, xjob.ErrNotFound):
			st.Conflicts++
			pl.lost = true
		default:
			return fmt.Errorf("advance job %d: %w", advances[k].ID, err)
		}
	}
	return nil
}

// noteLate counts the late fire times of an advanced job's plan (once the
// advance is committed, so a plan lost to a concurrent writer is not
// counted twice) and logs, at debug level, the span of scheduled times it
// passed over without a fire of their own: what the load harness uses to
// tell a fire dropped by the misfire rules from a lost one.
func (p *Pusher) noteLate(ctx context.Context, pl planned, st *Stats) {
	if pl.plan.Late == 0 {
		return
	}
	switch {
	case !pl.plan.Misfired:
		st.Collapsed += pl.plan.Late
		p.metrics.Collapse(pl.plan.Late)
	case pl.job.MisfireStrategy == xjob.MisfireFireOnceNow:
		st.MisfiredFireOnceNow += pl.plan.Late
		p.metrics.Misfire(metric.StrategyFireOnceNow, pl.plan.Late)
	default:
		st.MisfiredDoNothing += pl.plan.Late
		p.metrics.Misfire(metric.StrategyDoNothing, pl.plan.Late)
	}
	if st.Oldest == 0 || pl.job.TriggerNextTime < st.Oldest {
		st.Oldest = pl.job.TriggerNextTime
	}
	if pl.plan.Passed != (Span{}) {
		p.log.DebugContext(ctx, "scan: fires passed over", "job", pl.job.ID, "misfired", pl.plan.Misfired,
			"from", pl.plan.Passed.From, "to", pl.plan.Passed.To)
	}
}
