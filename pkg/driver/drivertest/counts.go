package drivertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// ExerciseCounts runs the contract of the console's count queries
// (JobStore.JobCount and LogStore.LogCount) against
// stores from newStore: counts agree with what the lists page through,
// over several groups at once, and a log count stops at its limit.
func ExerciseCounts(t *testing.T, newStore func(t *testing.T) driver.Store) {
	t.Helper()

	t.Run("JobCount", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		var groups []int64
		for i := range 3 {
			g, err := s.GroupInsert(ctx, sampleGroup(fmt.Sprintf("count-app-%d", i), "Count"))
			requireNoErr(t, err, "group insert")
			groups = append(groups, g.ID)
		}
		// group 0: 5 jobs (2 running, one "special"), group 1: 3, group 2: none.
		for i := range 8 {
			j := sampleJob(groups[min(i/5, 1)], 0)
			j.TriggerStatus = xjob.StatusStopped
			if i < 2 {
				j.TriggerStatus, j.TriggerNextTime = xjob.StatusRunning, t0
			}
			if i == 4 {
				j.Description = "a special job"
			}
			_, err := s.JobInsert(ctx, j)
			requireNoErr(t, err, "job insert")
		}
		running := xjob.StatusRunning
		for _, c := range []struct {
			name string
			p    driver.JobCountParams
			want int
		}{
			{"every group", driver.JobCountParams{}, 8},
			{"one group", driver.JobCountParams{GroupIDs: groups[:1]}, 5},
			{"two groups", driver.JobCountParams{GroupIDs: groups[:2]}, 8},
			{"empty group", driver.JobCountParams{GroupIDs: groups[2:]}, 0},
			{"status", driver.JobCountParams{GroupIDs: groups, Status: &running}, 2},
			{"description", driver.JobCountParams{Description: "special"}, 1},
			{"no match", driver.JobCountParams{GroupIDs: groups[1:2], Description: "special"}, 0},
		} {
			n, err := s.JobCount(ctx, c.p)
			requireNoErr(t, err, c.name)
			if n != c.want {
				t.Errorf("JobCount %s = %d, want %d", c.name, n, c.want)
			}
		}
	})

	t.Run("LogCountTally", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStore(t), t.Context()
		day := int64(24 * time.Hour / time.Millisecond)
		base := t0 - t0%day // midnight UTC
		// Group 7: job 70, three logs on day 0 (success, fail, running)
		// and one on day 1 (success). Group 8: job 80, two failed logs
		// on day 1. Group 9: one untriggered log (no outcome yet).
		mk := func(occ string, job, group, at int64, trigger, handle int) {
			t.Helper()
			l, err := s.LogCreate(ctx, sampleLog(occ, job, group, at))
			requireNoErr(t, err, "log create "+occ)
			if trigger != 0 {
				requireNoErr(t, s.LogTriggered(ctx, driver.LogTriggeredParams{ID: l.ID, TriggerCode: trigger}), "triggered")
			}
			if handle != 0 {
				_, err := s.LogFinish(ctx, driver.LogFinishParams{ID: l.ID, HandleCode: handle, HandleTime: at + 1})
				requireNoErr(t, err, "finish")
			}
		}
		mk("c1", 70, 7, base+1_000, 200, 200)
		mk("c2", 70, 7, base+2_000, 200, 500)
		mk("c3", 70, 7, base+3_000, 200, 0)
		mk("c4", 70, 7, base+day+1_000, 200, 200)
		mk("c5", 80, 8, base+day+2_000, 500, 0)
		mk("c6", 80, 8, base+day+3_000, 200, 500)
		mk("c7", 90, 9, base+day+4_000, 0, 0)
		for _, c := range []struct {
			name string
			p    driver.LogCountParams
			want int
		}{
			{"every group", driver.LogCountParams{}, 7},
			{"one group", driver.LogCountParams{GroupIDs: []int64{7}}, 4},
			{"two groups", driver.LogCountParams{GroupIDs: []int64{7, 8}}, 6},
			{"job", driver.LogCountParams{JobID: 80}, 2},
			{"failed", driver.LogCountParams{GroupIDs: []int64{7, 8}, Status: xjob.LogFail}, 3},
			{"success", driver.LogCountParams{Status: xjob.LogSuccess}, 2},
			{"running", driver.LogCountParams{Status: xjob.LogRunning}, 1},
			{"from", driver.LogCountParams{From: base + day}, 4},
			{"to", driver.LogCountParams{To: base + 2_000}, 2},
			{"limit", driver.LogCountParams{Limit: 3}, 3},
			{"limit above", driver.LogCountParams{GroupIDs: []int64{8}, Limit: 3}, 2},
		} {
			n, err := s.LogCount(ctx, c.p)
			requireNoErr(t, err, c.name)
			if n != c.want {
				t.Errorf("LogCount %s = %d, want %d", c.name, n, c.want)
			}
		}
	})
}
