package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/egress"
	"github.com/xjobdev/xjob/pkg/driver"
)

// CountJobsParams filters CountJobs as ListJobsParams filters ListJobs,
// over several groups at once: a list's total.
type CountJobsParams struct {
	// GroupIDs are the groups counted (empty: every group).
	GroupIDs    []int64
	Status      *xjob.TriggerStatus
	Description string
	Handler     string
	Author      string
}

// CountJobs counts the jobs of the groups in p (every group when empty).
func (s *Service) CountJobs(ctx context.Context, p CountJobsParams) (int, error) {
	n, err := s.cfg.Store.JobCount(ctx, driver.JobCountParams{GroupIDs: p.GroupIDs, Status: p.Status,
		Description: p.Description, Handler: p.Handler, Author: p.Author})
	if err != nil {
		return 0, fmt.Errorf("admin job count: %w", err)
	}
	return n, nil
}

// CountLogsParams filters CountLogs as ListLogsParams filters ListLogs,
// over several groups at once: a list's total.
type CountLogsParams struct {
	// GroupIDs are the groups counted (empty: every group).
	GroupIDs []int64
	JobID    int64
	Status   xjob.LogStatus
	From     int64
	To       int64
	// Limit stops the count (0: no bound), so that a total over many logs
	// costs no more than "more than Limit".
	Limit int
}

// CountLogs counts the logs in p's scope, up to p.Limit.
func (s *Service) CountLogs(ctx context.Context, p CountLogsParams) (int, error) {
	n, err := s.cfg.Store.LogCount(ctx, driver.LogCountParams{GroupIDs: p.GroupIDs, JobID: p.JobID, Status: p.Status,
		From: p.From, To: p.To, Limit: p.Limit})
	if err != nil {
		return 0, fmt.Errorf("admin log count: %w", err)
	}
	return n, nil
}

// GroupReport is Report over some groups only: what a user limited to
// those groups may see, read from the groups' report counters. No group
// gives an empty report (zeros), never the installation's.
func (s *Service) GroupReport(ctx context.Context, groups []int64, from, to string) ([]xjob.ReportDay, error) {
	start, end, err := s.reportRange(from, to)
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		return fillDays(start, end, nil), nil
	}
	got, err := s.cfg.Store.ReportList(ctx, driver.ReportListParams{From: start.Format(time.DateOnly),
		To: end.Format(time.DateOnly), GroupIDs: groups})
	if err != nil {
		return nil, fmt.Errorf("admin group report: %w", err)
	}
	return fillDays(start, end, got), nil
}

// JobsByID returns the jobs that exist among ids, by id (a list page's
// job names).
func (s *Service) JobsByID(ctx context.Context, ids []int64) (map[int64]xjob.Job, error) {
	out := make(map[int64]xjob.Job, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	jobs, err := s.cfg.Store.JobGetMany(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("admin jobs by id: %w", err)
	}
	for _, j := range jobs {
		out[j.ID] = redact(j)
	}
	return out, nil
}

// OnlineExecutors counts the distinct live executors registered under
// the given appnames, in one registry read.
func (s *Service) OnlineExecutors(ctx context.Context, appNames []string) (int, error) {
	since := s.cfg.Clock.Now().Add(-s.cfg.DeadAfter).UnixMilli()
	entries, err := s.cfg.Store.RegistryList(ctx, driver.RegistryListParams{Since: since})
	if err != nil {
		return 0, fmt.Errorf("admin online executors: %w", err)
	}
	want := make(map[string]bool, len(appNames))
	for _, a := range appNames {
		want[a] = true
	}
	seen := map[[2]string]bool{}
	for _, e := range entries {
		if e.Group == xjob.RegistryGroupExecutor && want[e.Key] && e.UpdatedAt >= since {
			seen[[2]string{e.Key, egress.AddressKey(e.Value)}] = true
		}
	}
	return len(seen), nil
}
