package metric

import (
	"context"
	"fmt"
	"time"

	"github.com/xjobdev/xjob/pkg/driver"
)

// RunsTodayFrom is a Gauges.RunsToday reading today's (UTC, by now) row of
// the daily report in store. The report is what every process adds its
// triggers and results to, so on AWS, where each function instance keeps
// its own counters, this is the fleet's view. Pass the report batcher
// (report.Batcher), not the raw store: its ReportList flushes this
// process's pending counts first, as the admin's report does.
func RunsTodayFrom(store driver.ReportStore, now func() time.Time) func(context.Context) (RunCounts, error) {
	return func(ctx context.Context) (RunCounts, error) {
		day := now().UTC().Format(time.DateOnly)
		days, err := store.ReportList(ctx, driver.ReportListParams{From: day, To: day})
		if err != nil {
			return RunCounts{}, fmt.Errorf("runs today: %w", err)
		}
		var c RunCounts
		for _, d := range days {
			c.Running += int64(d.RunningCount)
			c.Success += int64(d.SucCount)
			c.Failure += int64(d.FailCount)
		}
		return c, nil
	}
}
