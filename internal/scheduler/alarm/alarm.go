// Package alarm holds the ways xjob tells people that a job failed: a
// structured log line (Log), an HTTP webhook (Webhook) and a fan-out of
// several (Multi). Each is a driver.Alarmer, called by the completion path
// once per failed log (also when the log is retried, as xxl-job does).
//
// xxl-job ships only an e-mail alarm and leaves other channels to users
// (its JobAlarm extension point); a webhook covers chat tools and incident
// systems through a small relay, without xjob knowing each vendor.
package alarm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Log writes each alarm as one structured error record, so that failures
// show up in log search and log-based metrics with no other setup.
type Log struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

var _ driver.Alarmer = Log{}

// Alarm logs a at error level. It never fails.
func (a Log) Alarm(ctx context.Context, al driver.Alarm) error {
	lg := a.Logger
	lg = fallback.Logger(lg)
	lg.LogAttrs(ctx, slog.LevelError, "job failed",
		slog.Int64("jobId", al.Job.ID),
		slog.Int64("jobGroup", al.Job.GroupID),
		slog.String("jobDesc", al.Job.Description),
		slog.String("alarmEmail", al.Job.AlarmEmail),
		slog.Int64("logId", al.Log.ID),
		slog.String("triggerType", string(al.Log.TriggerType)),
		slog.Int64("triggerTime", al.Log.TriggerTime),
		slog.Int("triggerCode", al.Log.TriggerCode),
		slog.String("triggerMsg", al.Log.TriggerMsg),
		slog.Int("handleCode", al.Log.HandleCode),
		slog.String("handleMsg", al.Log.HandleMsg),
		slog.String("executorAddress", al.Log.ExecutorAddress),
		slog.Int("failRetryCount", al.Log.ExecutorFailRetryCount),
	)
	return nil
}

// Multi sends every alarm to each of its alarmers, in order. All are tried
// even when one fails, so one broken channel does not silence the others;
// the result is the join of their errors (so the log's alarm status says
// "failed" when any channel failed).
type Multi []driver.Alarmer

var _ driver.Alarmer = Multi(nil)

// Alarm calls each alarmer and joins their errors.
func (m Multi) Alarm(ctx context.Context, a driver.Alarm) error {
	var errs []error
	for i, al := range m {
		if al == nil {
			continue
		}
		if err := al.Alarm(ctx, a); err != nil {
			errs = append(errs, fmt.Errorf("alarm %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}
