package scan

import (
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/schedule"
)

// every is a schedule that fires on multiples of its period (a stand-in for
// an aligned cron such as "*/n * * * * ?"; the cron grammar has its own tests).
type every time.Duration

func (e every) Next(t time.Time) (time.Time, bool) {
	d := time.Duration(e)
	return t.Truncate(d).Add(d), true
}

// until fires every second up to a last time, then never again.
type until int64

func (u until) Next(t time.Time) (time.Time, bool) {
	n := t.Truncate(time.Second).Add(time.Second)
	if n.UnixMilli() > int64(u) {
		return time.Time{}, false
	}
	return n, true
}

// denseUntil fires every 10 ms up to a time, then 10 s after it.
type denseUntil int64

func (d denseUntil) Next(t time.Time) (time.Time, bool) {
	if n := t.Add(10 * time.Millisecond); n.UnixMilli() <= int64(d) {
		return n, true
	}
	return time.UnixMilli(int64(d)).Add(10 * time.Second), true
}

func TestPlanJob(t *testing.T) {
	t.Parallel()
	const s = int64(1000)
	base := int64(1_700_000_000_000) // a whole second
	pol := Policy{PreRead: 5 * time.Second, MisfireThreshold: 5 * time.Second}
	fix2, _ := schedule.ParseFixRate("2")

	// onGrid is a job whose grid (planEnd) has a point on whole 5 s.
	onGrid := idWithPhase(5000, 0)
	tests := []struct {
		name    string
		id      int64
		sched   schedule.Schedule
		next    int64
		misfire xjob.MisfireStrategy
		now     int64
		advance time.Duration
		want    Plan
	}{
		{
			name:  "upcoming fires within the window go to the ring in order",
			sched: every(2 * time.Second), next: base + 2*s, now: base,
			want: Plan{Fires: []Fire{{base + 2*s, xjob.TriggerCron, false}, {base + 4*s, xjob.TriggerCron, false}}, Last: base + 4*s, Next: base + 6*s},
		},
		{
			name:  "a longer Advance plans past the pre-read window",
			id:    onGrid,
			sched: every(2 * time.Second), next: base + 2*s, now: base, advance: 10 * time.Second,
			want: Plan{Fires: []Fire{{base + 2*s, xjob.TriggerCron, false}, {base + 4*s, xjob.TriggerCron, false},
				{base + 6*s, xjob.TriggerCron, false}, {base + 8*s, xjob.TriggerCron, false}, {base + 10*s, xjob.TriggerCron, false}},
				Last: base + 10*s, Next: base + 12*s},
		},
		{
			name:  "window end is inclusive",
			sched: every(5 * time.Second), next: base + 5*s, now: base,
			want: Plan{Fires: []Fire{{base + 5*s, xjob.TriggerCron, false}}, Last: base + 5*s, Next: base + 10*s},
		},
		{
			// FIX_RATE stays on its grid (base-3, -1, +1, …): fires pushed
			// before a lost advance keep their ids, so none runs twice.
			name:  "late within threshold fires now then goes on on its own grid",
			sched: fix2, next: base - 3*s, now: base,
			want: Plan{Fires: []Fire{
				{base - 3*s, xjob.TriggerCron, true},
				{base + 1*s, xjob.TriggerCron, false}, {base + 3*s, xjob.TriggerCron, false}, {base + 5*s, xjob.TriggerCron, false},
			}, Last: base + 5*s, Next: base + 7*s, Late: 1, Passed: Span{base - 1*s, base - 1}},
		},
		{
			name:  "exactly on time counts as late (next <= now)",
			sched: every(10 * time.Second), next: base, now: base,
			want: Plan{Fires: []Fire{{base, xjob.TriggerCron, true}}, Last: base, Next: base + 10*s},
		},
		{
			name:  "exactly at the threshold is still late, not misfired; the time at now is not late",
			sched: every(10 * time.Second), next: base - 5*s, now: base,
			want: Plan{Fires: []Fire{{base - 5*s, xjob.TriggerCron, true}, {base, xjob.TriggerCron, false}}, Last: base, Next: base + 10*s},
		},
		{
			// A node taking a dead node's shard over finds it a second
			// behind: the late time fires at once, the one at the tick's
			// second is planned as usual (not folded into the late fire).
			name:  "one second behind at a takeover: both times fire",
			sched: every(time.Second), next: base - 1*s, now: base,
			want: Plan{Fires: []Fire{
				{base - 1*s, xjob.TriggerCron, true},
				{base, xjob.TriggerCron, false}, {base + 1*s, xjob.TriggerCron, false}, {base + 2*s, xjob.TriggerCron, false},
				{base + 3*s, xjob.TriggerCron, false}, {base + 4*s, xjob.TriggerCron, false}, {base + 5*s, xjob.TriggerCron, false},
			}, Last: base + 5*s, Next: base + 6*s},
		},
		{
			name:  "late times before now collapse into the late fire",
			sched: every(time.Second), next: base - 3*s, now: base,
			want: Plan{Fires: []Fire{
				{base - 3*s, xjob.TriggerCron, true},
				{base, xjob.TriggerCron, false}, {base + 1*s, xjob.TriggerCron, false}, {base + 2*s, xjob.TriggerCron, false},
				{base + 3*s, xjob.TriggerCron, false}, {base + 4*s, xjob.TriggerCron, false}, {base + 5*s, xjob.TriggerCron, false},
			}, Last: base + 5*s, Next: base + 6*s, Late: 2, Passed: Span{base - 2*s, base - 1}},
		},
		{
			name:  "misfire DO_NOTHING skips and recomputes from now",
			sched: every(10 * time.Second), next: base - 60*s, misfire: xjob.MisfireDoNothing, now: base,
			want: Plan{Misfired: true, Last: base - 60*s, Next: base + 10*s, Late: 7, Passed: Span{base - 60*s, base}},
		},
		{
			name:  "misfire FIRE_ONCE_NOW fires once with type MISFIRE",
			sched: every(10 * time.Second), next: base - 60*s, misfire: xjob.MisfireFireOnceNow, now: base,
			want: Plan{Misfired: true, Fires: []Fire{{base - 60*s, xjob.TriggerMisfire, true}}, Last: base - 60*s, Next: base + 10*s,
				Late: 7, Passed: Span{base - 50*s, base}},
		},
		{
			name:  "misfire then upcoming fires in the window are pushed too",
			sched: every(2 * time.Second), next: base - 60*s, misfire: xjob.MisfireDoNothing, now: base,
			want: Plan{Misfired: true, Fires: []Fire{{base + 2*s, xjob.TriggerCron, false}, {base + 4*s, xjob.TriggerCron, false}}, Last: base + 4*s, Next: base + 6*s,
				Late: 31, Passed: Span{base - 60*s, base}},
		},
		{
			name:  "a job found far behind counts its late times up to MaxLate",
			sched: denseUntil(base), next: base - 60*s, misfire: xjob.MisfireDoNothing, now: base,
			want: Plan{Misfired: true, Last: base - 60*s, Next: base + 10*s, Late: MaxLate, Passed: Span{base - 60*s, base}},
		},
		{
			name:  "FIRE_ONCE_NOW with a single late time passes nothing over",
			sched: every(10 * time.Second), next: base - 7*s, misfire: xjob.MisfireFireOnceNow, now: base - 1*s,
			want: Plan{Misfired: true, Fires: []Fire{{base - 7*s, xjob.TriggerMisfire, true}, {base, xjob.TriggerCron, false}},
				Last: base, Next: base + 10*s, Late: 1},
		},
		{
			name:  "schedule that ends stops the job",
			sched: until(base + 2*s), next: base + 1*s, now: base,
			want: Plan{Fires: []Fire{{base + 1*s, xjob.TriggerCron, false}, {base + 2*s, xjob.TriggerCron, false}}, Last: base + 2*s, Stop: true},
		},
		{
			name:  "not due yet does nothing",
			sched: every(10 * time.Second), next: base + 6*s, now: base,
			want: Plan{Next: base + 6*s},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := &xjob.Job{ID: tt.id, TriggerNextTime: tt.next, MisfireStrategy: tt.misfire}
			if job.MisfireStrategy == "" {
				job.MisfireStrategy = xjob.MisfireDoNothing
			}
			p := pol
			p.Advance = tt.advance
			got := PlanJob(job, tt.sched, tt.now, p)
			if !equalPlan(got, tt.want) {
				t.Errorf("PlanJob =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

func equalPlan(a, b Plan) bool {
	if len(a.Fires) != len(b.Fires) || a.Next != b.Next || a.Last != b.Last || a.Stop != b.Stop || a.Misfired != b.Misfired ||
		a.Late != b.Late || a.Passed != b.Passed {
		return false
	}
	for i := range a.Fires {
		if a.Fires[i] != b.Fires[i] {
			return false
		}
	}
	return true
}

// idWithPhase returns the first job id whose planEnd phase within span
// (ms) is phase.
func idWithPhase(span, phase int64) int64 {
	for id := int64(1); ; id++ {
		if planPhase(id, span) == phase {
			return id
		}
	}
}

// TestPlanEndGrid: with Advance > PreRead, a job's window ends on its
// group's grid within (now+PreRead, now+Advance]; planned again at the
// tick its next fire comes within PreRead, it reaches exactly one span
// further; the jobs of a bulk start come due again spread over the span,
// a group per tick, not all in one; and the jobs of one group share it.
func TestPlanEndGrid(t *testing.T) {
	t.Parallel()
	for _, pol := range []Policy{
		{PreRead: 5 * time.Second, Advance: 10 * time.Second},   // xjob local
		{PreRead: 150 * time.Second, Advance: 14 * time.Minute}, // AWS
		{PreRead: 5 * time.Second, Advance: 5 * time.Second},    // xxl-job's rule: no grid
	} {
		p, a := pol.PreRead.Milliseconds(), pol.Advance.Milliseconds()
		now := int64(1_800_000_000_000)
		dueAt := map[int64]int{} // tick second → jobs due again then
		for id := int64(1); id <= 3000; id++ {
			end := planEnd(id, now, pol)
			if (a == p && end != now+p) || (a > p && (end <= now+p || end > now+a)) {
				t.Fatalf("%v: job %d window ends at now+%d ms, want now+%d or within (%d, %d]", pol, id, end-now, p, p, a)
			}
			if a == p {
				continue
			}
			// Its next fire (just after end) is due at the first whole-
			// second tick at which it lies within PreRead.
			tick := (end + 1 - p + 999) / 1000 * 1000
			if next := planEnd(id, tick, pol); next != end+(a-p) {
				t.Fatalf("%v: job %d planned to now+%d, then at %d to %d, want one span (%d ms) further", pol, id, end-now, tick-now, next-end, a-p)
			}
			dueAt[tick/1000]++
		}
		if a == p {
			continue
		}
		// 3,000 jobs in 16 groups: a group is due at one tick, the groups
		// at ticks spread over the span (several a second only when the
		// span is shorter than 16 s).
		perGroup := 3000/planGroups + 1
		maxGroups := max(1, (planGroups*1000+int(a-p)-1)/int(a-p)+1)
		for sec, n := range dueAt {
			if n > maxGroups*perGroup {
				t.Errorf("%v: %d of 3000 jobs due again at second %d, want at most %d groups' (%d)", pol, n, sec, maxGroups, maxGroups*perGroup)
			}
		}
		// Jobs of one group (one DynamoDB log page) share their window.
		ends := map[int]int64{}
		for id := int64(1); id <= 256; id++ {
			g := fire.ShardOf(id, planGroups)
			if e, ok := ends[g]; ok && e != planEnd(id, now, pol) {
				t.Errorf("%v: job %d plans to another end than its group %d", pol, id, g)
			}
			ends[g] = planEnd(id, now, pol)
		}
	}
}

func TestPlanFixDelay(t *testing.T) {
	t.Parallel()
	const s = int64(1000)
	base := int64(1_700_000_000_000)
	pol := Policy{PreRead: 5 * time.Second, MisfireThreshold: 5 * time.Second}
	delay, _ := schedule.ParseFixDelay("3")
	// With a 10 s timeout a fire parks the job 13 s later, the lost-run fallback.
	tests := []struct {
		name    string
		last    int64
		next    int64
		timeout int
		misfire xjob.MisfireStrategy
		advance time.Duration
		want    Plan
	}{
		{
			name: "one fire in the window, parked at timeout + delay, never a grid",
			last: base - 5*s, next: base + 2*s, timeout: 10, advance: time.Minute,
			want: Plan{Fires: []Fire{{base + 2*s, xjob.TriggerCron, false}}, Last: base + 2*s, Next: base + 15*s},
		},
		{
			name: "no timeout parks for the lost-run window",
			next: base + 1*s,
			want: Plan{Fires: []Fire{{base + 1*s, xjob.TriggerCron, false}}, Last: base + 1*s,
				Next: base + 1*s + (xjob.DefaultRunWait + 3*time.Second).Milliseconds()},
		},
		{
			name: "beyond the window: nothing",
			next: base + 6*s, timeout: 10,
			want: Plan{Next: base + 6*s},
		},
		{
			name: "a possible fallback in the window is not pre-read",
			last: base - 10*s, next: base + 3*s, timeout: 10,
			want: Plan{Last: base - 10*s, Next: base + 3*s},
		},
		{
			name: "a result's next time closer than the fallback is pre-read",
			last: base - 10*s, next: base + 2*s, timeout: 10,
			want: Plan{Fires: []Fire{{base + 2*s, xjob.TriggerCron, false}}, Last: base + 2*s, Next: base + 15*s},
		},
		{
			name: "the fallback fires once due, and parks again from now",
			last: base - 13*s, next: base, timeout: 10,
			want: Plan{Fires: []Fire{{base, xjob.TriggerCron, true}}, Last: base, Next: base + 13*s},
		},
		{
			name: "late within the threshold fires now",
			last: base - 20*s, next: base - 4*s, timeout: 10,
			want: Plan{Fires: []Fire{{base - 4*s, xjob.TriggerCron, true}}, Last: base - 4*s, Next: base + 13*s},
		},
		{
			name: "misfire DO_NOTHING skips and fires a delay after now",
			next: base - 60*s, timeout: 10, misfire: xjob.MisfireDoNothing,
			want: Plan{Misfired: true, Last: base - 60*s, Next: base + 3*s, Late: 1, Passed: Span{base - 60*s, base - 60*s}},
		},
		{
			name: "misfire FIRE_ONCE_NOW fires once now and parks",
			next: base - 60*s, timeout: 10, misfire: xjob.MisfireFireOnceNow,
			want: Plan{Misfired: true, Fires: []Fire{{base - 60*s, xjob.TriggerMisfire, true}}, Last: base - 60*s,
				Next: base + 13*s, Late: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := xjob.Job{ID: 1, ScheduleType: xjob.ScheduleFixDelay, ScheduleConf: "3", TriggerLastTime: tt.last,
				TriggerNextTime: tt.next, TimeoutSeconds: tt.timeout, MisfireStrategy: tt.misfire}
			p := pol
			p.Advance = tt.advance
			got := PlanJob(&j, delay, base, p)
			if !equalPlan(got, tt.want) {
				t.Fatalf("PlanJob = %+v\nwant      %+v", got, tt.want)
			}
		})
	}
}
