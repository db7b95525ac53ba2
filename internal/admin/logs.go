package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// MaxReportDays bounds one report request (a year and a day).
const MaxReportDays = 366

// ListLogsParams filters ListLogs. Zero values match everything.
type ListLogsParams struct {
	// JobID limits the list to one job's logs (0: every job).
	JobID int64
	// GroupID limits it to one executor group's logs (0: every group).
	GroupID int64
	// Status is the result the logs have (xjob.LogAll: any).
	Status xjob.LogStatus
	// From and To bound the trigger time, inclusive, in Unix milliseconds
	// (0: no bound); From after To is refused.
	From int64
	To   int64
	// Cursor is the Next of the previous page ("" for the first page).
	Cursor string
	// Limit is the most logs in a page; the backend applies its own
	// default (when 0) and cap.
	Limit int
}

// LogPage is one page of trigger logs, newest first; Next is the cursor
// of the following page, empty at the end.
type LogPage struct {
	Logs []xjob.Log
	Next string
}

// ListLogs pages trigger logs, newest first.
func (s *Service) ListLogs(ctx context.Context, p ListLogsParams) (LogPage, error) {
	if p.From != 0 && p.To != 0 && p.From > p.To {
		return LogPage{}, invalid("from", "must not be after to")
	}
	page, err := s.cfg.Store.LogList(ctx, driver.LogListParams{JobID: p.JobID, GroupID: p.GroupID, Status: p.Status,
		From: p.From, To: p.To, Cursor: p.Cursor, Limit: p.Limit})
	if err != nil {
		return LogPage{}, fmt.Errorf("admin log list: %w", err)
	}
	return LogPage{Logs: page.Logs, Next: page.Next}, nil
}

// GetLog returns one trigger log.
func (s *Service) GetLog(ctx context.Context, id int64) (xjob.Log, error) {
	l, err := s.cfg.Store.LogGet(ctx, id)
	if err != nil {
		return xjob.Log{}, mapNotFound(err, "log", id, "admin log get")
	}
	return l, nil
}

// ExecutorLog reads the executor-side log of a trigger from line
// fromLineNum (1-based) on, through the executor's /log. As xxl-job's admin
// does, it sets IsEnd when the executor has no line at or after fromLineNum
// and the log already has a result: the reader can stop polling. A trigger
// that never reached an executor has no executor log; the reply is empty,
// and ends once the trigger is known to have failed.
func (s *Service) ExecutorLog(ctx context.Context, id int64, fromLineNum int) (protocol.LogResult, error) {
	if fromLineNum < 1 {
		return protocol.LogResult{}, invalid("from", "must be a line number ≥ 1")
	}
	l, err := s.GetLog(ctx, id)
	if err != nil {
		return protocol.LogResult{}, err
	}
	if l.TriggerCode != xjob.CodeSuccess || l.ExecutorAddress == "" {
		return protocol.LogResult{FromLineNum: fromLineNum, IsEnd: l.Triggered()}, nil
	}
	res, rt := s.cfg.Executors.Log(s.withAppName(ctx, l), l.ExecutorAddress, protocol.LogParam{
		LogDateTim: l.TriggerTime, LogID: l.ID, FromLineNum: fromLineNum,
	})
	if rt.Code != protocol.SuccessCode {
		return protocol.LogResult{}, fmt.Errorf("log %d: executor %s /log: %s: %w", id, l.ExecutorAddress, rt.Msg, ErrExecutor)
	}
	if !res.IsEnd && res.FromLineNum > res.ToLineNum {
		// Re-read: the result may have arrived while the executor answered.
		if now, err := s.GetLog(ctx, id); err == nil && now.Handled() {
			res.IsEnd = true
		} else if err != nil && !errors.Is(err, xjob.ErrNotFound) {
			return protocol.LogResult{}, err
		}
	}
	return res, nil
}

// KillLog stops a running trigger: it asks the executor to kill the job
// (POST /kill on the log's executor), then records the result 500
// KillMsg through the completion path (so a job with retries left is
// retried, and the failure alarmed). Only a running log (triggered with
// 200, no result yet) can be killed; otherwise xjob.ErrConflict.
func (s *Service) KillLog(ctx context.Context, id int64) (xjob.Log, error) {
	l, err := s.GetLog(ctx, id)
	if err != nil {
		return xjob.Log{}, err
	}
	if !l.Running() {
		return xjob.Log{}, fmt.Errorf("log %d is not running (trigger code %d, handle code %d): %w",
			id, l.TriggerCode, l.HandleCode, xjob.ErrConflict)
	}
	rt := s.cfg.Executors.Kill(s.withAppName(ctx, l), l.ExecutorAddress, l.JobID)
	if rt.Code != protocol.SuccessCode {
		return xjob.Log{}, fmt.Errorf("log %d: executor %s /kill: %s: %w", id, l.ExecutorAddress, rt.Msg, ErrExecutor)
	}
	done, err := s.cfg.Finisher.Finish(ctx, l, xjob.CodeFail, KillMsg)
	switch {
	case errors.Is(err, xjob.ErrConflict):
		// The executor killed the run and its own callback landed first:
		// the kill succeeded, and the log holds that first result,
		// recorded as KillMsg too (callback.ResultMsg).
		return s.GetLog(ctx, id)
	case err != nil && done.ID == 0:
		return xjob.Log{}, mapNotFound(err, "log", id, "admin log kill")
	case err != nil:
		// The result is recorded; what failed is retry or alarm, which the
		// callback sweep completes later.
		s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "killed log not fully completed",
			slog.Int64("logId", id), slog.String("error", err.Error()))
	}
	return done, nil
}

// Report returns the run report for the days from..to (yyyy-mm-dd, UTC,
// inclusive), one entry per day, zeros included. Empty bounds mean the
// last 7 days up to today.
func (s *Service) Report(ctx context.Context, from, to string) ([]xjob.ReportDay, error) {
	start, end, err := s.reportRange(from, to)
	if err != nil {
		return nil, err
	}
	got, err := s.cfg.Store.ReportList(ctx, driver.ReportListParams{From: start.Format(time.DateOnly),
		To: end.Format(time.DateOnly)})
	if err != nil {
		return nil, fmt.Errorf("admin report: %w", err)
	}
	return fillDays(start, end, got), nil
}

// reportRange reads a report's bounds (see Report).
func (s *Service) reportRange(from, to string) (start, end time.Time, err error) {
	today := s.cfg.Clock.Now().UTC().Truncate(24 * time.Hour)
	start, end = today.AddDate(0, 0, -6), today
	if to != "" {
		if end, err = time.Parse(time.DateOnly, to); err != nil {
			return start, end, invalid("to", "%q is not a date (yyyy-mm-dd)", to)
		}
		if from == "" {
			start = end.AddDate(0, 0, -6)
		}
	}
	if from != "" {
		if start, err = time.Parse(time.DateOnly, from); err != nil {
			return start, end, invalid("from", "%q is not a date (yyyy-mm-dd)", from)
		}
		if to == "" {
			end = start.AddDate(0, 0, 6)
		}
	}
	if start.After(end) {
		return start, end, invalid("from", "must not be after to")
	}
	if days := int(end.Sub(start).Hours()/24) + 1; days > MaxReportDays {
		return start, end, invalid("to", "at most %d days per report", MaxReportDays)
	}
	return start, end, nil
}

// fillDays lists every day of start..end, with got's counters or zeros.
func fillDays(start, end time.Time, got []xjob.ReportDay) []xjob.ReportDay {
	byDay := make(map[string]xjob.ReportDay, len(got))
	for _, d := range got {
		byDay[d.Day] = d
	}
	var out []xjob.ReportDay
	for d := start; !d.After(end); d = d.AddDate(0, 0, 1) {
		day := d.Format(time.DateOnly)
		r, ok := byDay[day]
		if !ok {
			r = xjob.ReportDay{Day: day}
		}
		out = append(out, r)
	}
	return out
}

// withAppName names l's executor group in ctx for the executor client,
// which sends it as XXL-JOB-APPNAME (required by xxl-job 3.5 executors). A
// group that cannot be read is left out: older executors do not need it.
func (s *Service) withAppName(ctx context.Context, l xjob.Log) context.Context {
	g, err := s.cfg.Store.GroupGet(ctx, l.GroupID)
	if err != nil {
		return ctx
	}
	return protocol.WithAppName(ctx, g.AppName)
}

// LogClearModes are xxl-job's "clean type" options (/joblog/clearLog types
// 1–9), in its order: older than 1, 3, 6 or 12 months; keep the newest
// 1,000, 10,000, 30,000 or 100,000; all.
var LogClearModes = []string{"1m", "3m", "6m", "12m", "1k", "10k", "30k", "100k", "all"}

// ClearLogsParams is the input of ClearLogs. GroupID and JobID of 0 mean
// every group / job of the group.
type ClearLogsParams struct {
	GroupID int64
	JobID   int64
	// Mode is one of LogClearModes.
	Mode string
}

// clearBatch is how many logs one store call deletes (xxl-job deletes in
// batches of 1,000 too): a bounded write per call on SQLite, a bounded
// batch of deletes on DynamoDB.
const clearBatch = 1000

// ClearLogs deletes the logs Mode selects in the scope, in batches, and
// returns how many it deleted. The months are calendar months back from
// now in UTC, as xxl-job's Calendar arithmetic.
func (s *Service) ClearLogs(ctx context.Context, p ClearLogsParams) (int, error) {
	cp := driver.LogClearParams{GroupID: p.GroupID, JobID: p.JobID, Limit: clearBatch}
	now := time.UnixMilli(s.now()).UTC()
	switch p.Mode {
	case "1m", "3m", "6m", "12m":
		months := map[string]int{"1m": 1, "3m": 3, "6m": 6, "12m": 12}[p.Mode]
		cp.Before = now.AddDate(0, -months, 0).UnixMilli()
	case "1k", "10k", "30k", "100k":
		cp.KeepNewest = map[string]int{"1k": 1000, "10k": 10000, "30k": 30000, "100k": 100000}[p.Mode]
	case "all":
	default:
		return 0, invalid("mode", "%q is not one of %v", p.Mode, LogClearModes)
	}
	total := 0
	for {
		n, err := s.cfg.Store.LogClear(ctx, cp)
		total += n
		if err != nil {
			return total, fmt.Errorf("admin log clear: %w", err)
		}
		if n < clearBatch {
			s.cfg.Logger.Info("logs cleared", "group", p.GroupID, "job", p.JobID, "mode", p.Mode, "deleted", total)
			return total, nil
		}
	}
}
