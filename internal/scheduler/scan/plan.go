package scan

import (
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/schedule"
)

// Fire is one occurrence a plan decided to trigger.
type Fire struct {
	Time int64            // scheduled fire time, Unix ms
	Type xjob.TriggerType // CRON or MISFIRE
	// Now is true for a fire to dispatch at once (late, or misfire
	// FIRE_ONCE_NOW); false for one to push onto the ring for Time.
	Now bool
}

// Plan is what one scan tick does with one due job: the fires to trigger,
// the job's new next fire time, and whether it must be stopped.
type Plan struct {
	Fires []Fire
	// Next is the new TriggerNextTime; it is always beyond the pre-read
	// window unless Stop is set.
	Next int64
	// Last is the new TriggerLastTime: the last fire time the plan covered
	// (triggered or skipped by the misfire strategy).
	Last int64
	// Stop is set when no next fire time can be computed.
	Stop bool
	// Misfired is set when the job's next time was more than the misfire
	// threshold in the past.
	Misfired bool
	// Late counts the fire times that were past when planned and that the
	// rules folded away (they are behind Fires' now-fire, or replaced by it):
	// when Misfired, every time of the misfire span [old next, now] (with
	// FIRE_ONCE_NOW one of them still fires, as MISFIRE); otherwise the
	// times after a late fire and before now, collapsed into it. Counted up to
	// MaxLate. Such times mean the scheduler fell behind; the scan reports
	// them (metrics, a warning per tick) so overload is never silent.
	Late int
	// Passed is the span of scheduled times, inclusive, that were passed
	// over without any fire of their own (zero when none were): the whole
	// misfire span with DO_NOTHING, the span after the fired time
	// otherwise.
	Passed Span
}

// Span is an inclusive range of scheduled times, Unix ms.
type Span struct{ From, To int64 }

// MaxLate bounds the fire times counted in Plan.Late, so a job found days
// behind costs a bounded number of schedule steps.
const MaxLate = 1000

// Policy holds the scan's timing rules (xxl-job: 5 s and 5 s).
type Policy struct {
	PreRead time.Duration
	// Advance, when longer than PreRead, is how far ahead the fires of a
	// due job are planned (see Tunables.Advance); zero means PreRead.
	Advance          time.Duration
	MisfireThreshold time.Duration
}

// PlanJob classifies a due job's fire times at now exactly as xxl-job's
// scheduler does, then goes on to cover the whole pre-read window:
//
//   - next more than the misfire threshold in the past: misfire. With
//     FIRE_ONCE_NOW it fires once now (type MISFIRE); with DO_NOTHING it is
//     skipped. The next time is recomputed from now.
//   - next in the past but within the threshold: fire now (type CRON); the
//     times after it and before now are collapsed into that fire, and the
//     plan resumes at now (see resume).
//   - every fire time within now + PreRead (or the longer Advance): push to
//     the ring, recomputing each following time from the previous one
//     (strict cadence).
//
// A job whose next time cannot be computed is stopped. now should be the
// scan tick's second so that racing scanners plan identically.
func PlanJob(job *xjob.Job, sched schedule.Schedule, now int64, p Policy) Plan {
	if fd, ok := sched.(schedule.FixDelay); ok {
		return planFixDelay(job, fd, now, p)
	}
	var plan Plan
	next := job.TriggerNextTime
	nowT := time.UnixMilli(now)
	windowEnd := planEnd(job.ID, now, p)

	advance := func(from time.Time) bool {
		t, ok := sched.Next(from)
		if !ok {
			plan.Stop = true
			return false
		}
		next = t.UnixMilli()
		return true
	}
	// resume moves next to the first time at or after now, after a fire
	// found late (within the misfire threshold). xxl-job recomputes from
	// its wall clock, strictly after now; the scan's now is the tick's
	// second, so a time at now is not late at all: it is planned like any
	// other and the ring fires it at once. (Recomputed after now, it was
	// folded into the late fire: a node taking a dead node's shards over
	// passed one fire of every job over, the one due at the takeover
	// tick.) For FIX_RATE, recomputing from now would move the job to the
	// tick's phase, and when the fires after next are in the ring already
	// (their push landed, the advance that recorded it was lost: a store
	// error, a lost conditional write) both phases would fire until the
	// pushed ones run out. FIX_RATE therefore stays on next's grid: the
	// pushed fires' occurrence ids come round again and dispatch drops the
	// repeats. Other schedules lie on a calendar grid, where Next(now−1 ms)
	// is the same time either way. A misfire (beyond the threshold) keeps
	// xxl-job's rule: plan from after now.
	resume := func() bool {
		from := max(now-1, next) // after the fire just planned
		if fr, ok := sched.(schedule.FixRate); ok && fr.Interval > 0 {
			step := fr.Interval.Milliseconds()
			next += ((from-next)/step + 1) * step
			return true
		}
		return advance(time.UnixMilli(from))
	}

	switch {
	case now > next+p.MisfireThreshold.Milliseconds():
		plan.Misfired = true
		plan.Last = next
		passedFrom := next
		if job.MisfireStrategy == xjob.MisfireFireOnceNow {
			plan.Fires = append(plan.Fires, Fire{Time: next, Type: xjob.TriggerMisfire, Now: true})
			passedFrom, _ = nextTime(sched, next)
		}
		plan.Late = countTimes(sched, next, now)
		if passedFrom != 0 && passedFrom <= now {
			plan.Passed = Span{From: passedFrom, To: now}
		}
		if !advance(nowT) {
			return plan
		}
	case next <= now:
		plan.Last = next
		plan.Fires = append(plan.Fires, Fire{Time: next, Type: xjob.TriggerCron, Now: true})
		if next < now {
			if after, ok := nextTime(sched, next); ok && after < now {
				plan.Late = countTimes(sched, after, now-1)
				plan.Passed = Span{From: after, To: now - 1}
			}
		}
		if !resume() {
			return plan
		}
	}
	for next <= windowEnd {
		plan.Last = next
		plan.Fires = append(plan.Fires, Fire{Time: next, Type: xjob.TriggerCron})
		if !advance(time.UnixMilli(next)) {
			return plan
		}
	}
	plan.Next = next
	return plan
}

// planFixDelay plans a FIX_DELAY job: one fire at its next time, never a
// grid. The fire parks the job at the fire + RunWait + delay, the lost-run
// fallback: the result of the run moves it to end + delay instead (package
// callback, conditional on the job still being parked on this fire), and a
// run that never reports fires again at the fallback. A next time at least
// RunWait + delay after the last fire may be that fallback, which a result
// can still move; it is fired only once due, never pre-read into the ring,
// so that a result arriving before it leaves no fire behind in the ring;
// a result arriving once it is due leaves it to the scan. A result read
// just before the fallback's tick and written just after the scan read
// the job races the scan's advance, which for a FIX_DELAY job comes before
// its fire is pushed (Pusher.advanceFirst): one of the two wins, and only
// its fire goes out.
//
// A fire found late within the misfire threshold fires now; beyond it the
// misfire strategy applies: FIRE_ONCE_NOW fires once now, DO_NOTHING skips
// it and plans the next fire a delay after now.
func planFixDelay(job *xjob.Job, fd schedule.FixDelay, now int64, p Policy) Plan {
	next := job.TriggerNextTime
	park := (job.RunWait() + fd.Delay).Milliseconds()
	switch {
	case now > next+p.MisfireThreshold.Milliseconds():
		plan := Plan{Misfired: true, Last: next, Late: 1}
		if job.MisfireStrategy == xjob.MisfireFireOnceNow {
			plan.Fires = []Fire{{Time: next, Type: xjob.TriggerMisfire, Now: true}}
			plan.Next = now + park
		} else {
			plan.Passed = Span{From: next, To: next}
			plan.Next = now + fd.Delay.Milliseconds()
		}
		return plan
	case next <= now:
		return Plan{Fires: []Fire{{Time: next, Type: xjob.TriggerCron, Now: true}}, Last: next, Next: now + park}
	case job.AwaitingRun() || next > planEnd(job.ID, now, p):
		return Plan{Last: job.TriggerLastTime, Next: next} // not yet: nothing to write
	default:
		return Plan{Fires: []Fire{{Time: next, Type: xjob.TriggerCron}}, Last: next, Next: next + park}
	}
}

// planEnd is the end of the window a due job's fires are planned to at
// now: now + PreRead, or with a longer Advance the last point at or before
// now + Advance of the job's group's grid, points span = Advance − PreRead
// apart and offset by the group's phase (planPhase). The window still
// covers now + PreRead (a grid point lies in every span), and the job, due
// again when its next fire comes within PreRead of a tick, is then planned
// to its next grid point: each job is advanced once per span, and jobs that
// were started together (a bulk start, a restart) are advanced at ticks
// spread over the span instead of all in the same tick, every span. The
// grid depends on the job and now alone, so racing scanners plan alike.
func planEnd(jobID, now int64, p Policy) int64 {
	if p.Advance <= p.PreRead {
		return now + p.PreRead.Milliseconds()
	}
	span := (p.Advance - p.PreRead).Milliseconds()
	end := now + p.Advance.Milliseconds()
	phase := planPhase(jobID, span)
	return end - ((end+phase)%span+span)%span
}

// planGroups is how many grids the jobs are spread over: the jobs of one
// shard among planGroups (fire.ShardOf) share one. It is 16 because
// DynamoDB keeps a second's trigger logs in up to 16 pages by the same
// shard among 16 (package dynamostore; masked to its LogPages, so one
// group's jobs always share a page): at the default 16 pages, jobs of one
// page are planned by the same tick, so a
// page's fires of one second reach the ring in one message and are
// claimed and recorded with one page write each, instead of one per tick
// that planned some of them (with a phase per job, up to span/tick ticks).
// With fewer pages a page takes the messages of 16/LogPages groups.
// 16 groups still spread a bulk start over 16 ticks of the span.
const planGroups = 16

// planPhase is the offset of a job's grid within span (ms): its group's
// share of the span, so the groups' grids are evenly spaced.
func planPhase(jobID, span int64) int64 {
	return int64(fire.ShardOf(jobID, planGroups)) * span / planGroups
}

// nextTime is sched's next time after t (Unix ms); 0 and false when none.
func nextTime(sched schedule.Schedule, t int64) (int64, bool) {
	n, ok := sched.Next(time.UnixMilli(t))
	if !ok {
		return 0, false
	}
	return n.UnixMilli(), true
}

// countTimes counts sched's times in [from, to], from being one of them,
// up to MaxLate.
func countTimes(sched schedule.Schedule, from, to int64) int {
	n := 0
	for t, ok := from, true; ok && t <= to && n < MaxLate; t, ok = nextTime(sched, t) {
		n++
	}
	return n
}
