package callback

import (
	"testing"

	"github.com/xjobdev/xjob"
)

// TestFixDelayNext: a FIX_DELAY job moves to end + delay only while it is
// running, still FIX_DELAY, last fired at the run's scheduled time, not
// planned there already, and its fallback was not due when the run ended.
func TestFixDelayNext(t *testing.T) {
	t.Parallel()
	const ran, end, fallback = 1_000_000, 1_010_000, 1_045_000
	parked := xjob.Job{ScheduleType: xjob.ScheduleFixDelay, ScheduleConf: "5", TriggerStatus: xjob.StatusRunning,
		TriggerLastTime: ran, TriggerNextTime: fallback}
	with := func(f func(*xjob.Job)) xjob.Job { j := parked; f(&j); return j }
	for _, tc := range []struct {
		name   string
		job    xjob.Job
		end    int64
		want   int64
		wantOK bool
	}{
		{"parked at its fallback", parked, end, end + 5_000, true},
		{"stopped since", with(func(j *xjob.Job) { j.TriggerStatus = xjob.StatusStopped }), end, 0, false},
		{"edited to FIX_RATE", with(func(j *xjob.Job) { j.ScheduleType, j.ScheduleConf = xjob.ScheduleFixRate, "5" }), end, 0, false},
		{"bad conf", with(func(j *xjob.Job) { j.ScheduleConf = "x" }), end, 0, false},
		{"fired again since", with(func(j *xjob.Job) { j.TriggerLastTime = fallback }), end, 0, false},
		{"planned already", with(func(j *xjob.Job) { j.TriggerNextTime = end + 5_000 }), end, 0, false},
		{"ended when the fallback was due", parked, fallback, 0, false},
		{"ended after the fallback", parked, fallback + 1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := fixDelayNext(tc.job, ran, tc.end)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("fixDelayNext = %d, %v; want %d, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
