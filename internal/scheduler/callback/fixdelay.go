package callback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/schedule"
)

// rescheduleAttempts bounds the re-reads of a FIX_DELAY job whose
// conditional write lost to another writer (an edit, the scan).
const rescheduleAttempts = 3

// rescheduleFixDelay plans a FIX_DELAY job's next fire once the run the
// scan last fired has its final result: success, or a failure with no
// retry left (a failure that is retried is not the run's end; the retry's
// result is). The job fires again at end + delay, end being the result's
// handle time as recorded (the trigger time when the trigger itself
// failed), so that completing the same log twice computes the same time.
//
// The write is the scan's conditional advance, on the version read, and
// only while the job's last fire is this run's scheduled time: a result of
// an older run (the fallback fired again meanwhile), of a manual, API or
// child run, a result that ended after the fallback was due (the scan may
// be firing it) or a repeat of a result already applied changes nothing. So
// two results for one run move the schedule once, and a crash between the
// log's write and this one leaves the job parked at the fallback the scan
// set (fire + RunWait + delay): the next fire comes late, never twice and
// never not at all.
func (s *Service) rescheduleFixDelay(ctx context.Context, l xjob.Log, jr *jobRef) error {
	if !finalResult(l) || !EndsOnceJob(l.TriggerType) {
		return nil
	}
	if err := jr.load(ctx, s.cfg.Store, l.JobID); err != nil {
		return err
	}
	if !jr.found || jr.job.ScheduleType != xjob.ScheduleFixDelay {
		return nil
	}
	ran, err := s.scheduledTime(ctx, l)
	if err != nil || ran == 0 {
		return err
	}
	end := l.HandleTime
	if !l.Handled() {
		end = l.TriggerTime
	}
	j := *jr.job
	for attempt := 1; ; attempt++ {
		next, ok := fixDelayNext(j, ran, end)
		if !ok {
			return nil
		}
		err := s.cfg.Store.JobAdvance(ctx, driver.JobAdvanceParams{
			ID: j.ID, ExpectVersion: j.Version, TriggerLastTime: j.TriggerLastTime, TriggerNextTime: next,
		})
		switch {
		case err == nil:
			s.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "fixed-delay job planned after its run",
				slog.Int64("jobId", j.ID), slog.Int64("logId", l.ID), slog.Time("next", time.UnixMilli(next)))
			return nil
		case errors.Is(err, xjob.ErrNotFound):
			return nil
		case !errors.Is(err, xjob.ErrConflict) || attempt == rescheduleAttempts:
			return fmt.Errorf("callback plan of fixed-delay job %d after log %d: %w", j.ID, l.ID, err)
		}
		if j, err = s.cfg.Store.JobGet(ctx, j.ID); errors.Is(err, xjob.ErrNotFound) {
			return nil
		} else if err != nil {
			return fmt.Errorf("callback job get %d: %w", l.JobID, err)
		}
	}
}

// fixDelayNext is the next fire of FIX_DELAY job j as read, after its
// run scheduled at ran ended at end: end + delay, or false when the
// result moves nothing — the job was edited or stopped since (the edit
// planned it), it is not this run's job any more, it is planned already,
// or its fallback was due when the run ended (the scan fires it).
func fixDelayNext(j xjob.Job, ran, end int64) (int64, bool) {
	d, err := schedule.ParseFixDelay(j.ScheduleConf)
	if err != nil || j.ScheduleType != xjob.ScheduleFixDelay || j.TriggerStatus != xjob.StatusRunning {
		return 0, false
	}
	next := end + d.Delay.Milliseconds()
	if j.TriggerLastTime != ran || j.TriggerNextTime == next || end >= j.TriggerNextTime {
		return 0, false
	}
	return next, true
}

// scheduledTime is the fire time the scan planned for the run l belongs
// to: its own for a scheduled fire, that of the failed run a retry
// repeats (followed through the chain of retries). 0 when the chain is
// cut (a log purged) or l is no scheduled run.
func (s *Service) scheduledTime(ctx context.Context, l xjob.Log) (int64, error) {
	for range xjob.MaxFailRetryCount + 1 {
		if l.TriggerType == xjob.TriggerCron || l.TriggerType == xjob.TriggerMisfire {
			return l.ScheduledTime, nil
		}
		id := RetriedLogID(l)
		if id == 0 {
			return 0, nil
		}
		prev, err := s.cfg.Store.LogGet(ctx, id)
		if errors.Is(err, xjob.ErrNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("callback retry chain of log %d: %w", l.ID, err)
		}
		l = prev
	}
	return 0, nil
}
