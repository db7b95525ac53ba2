package admin

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// MaxHistoryItems bounds the logs plus report days of one ImportHistory.
const MaxHistoryItems = 2000

// HistoryPrefix starts the occurrence id of every imported log: it keeps
// them apart from xjob's own and makes a second import find them.
const HistoryPrefix = "import/"

// HistoryParams is the input of ImportHistory.
type HistoryParams struct {
	// Logs are finished trigger logs of another scheduler, each with an
	// OccurrenceID starting with HistoryPrefix.
	Logs []xjob.Log `json:"logs"`
	// Days are report days (yyyy-mm-dd, UTC).
	Days []xjob.ReportDay `json:"days"`
	// Origin names the database the days come from. Each origin's days
	// are counted apart (ImportReportGroup), so that a second database
	// imported beside the first adds its days, xjob's own runs of a day
	// do not hide the imported counts of that day, and importing again
	// adds only what changed in the other scheduler since.
	Origin string `json:"origin,omitempty"`
}

// HistoryResult says what ImportHistory stored.
type HistoryResult struct {
	LogsCreated int `json:"logsCreated"`
	LogsKept    int `json:"logsKept"`  // already imported
	DaysAdded   int `json:"daysAdded"` // new, or changed since the last import (today's)
	DaysKept    int `json:"daysKept"`  // carried over already, the same counts
}

// ImportReportGroup is the report counter group under which the days
// imported from origin are kept: above every group id (ids fit an int32),
// so no group's report — a normal user's — ever counts them, while the
// installation's report, which sums every counter, does.
func ImportReportGroup(origin string) int64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(origin))
	return 1<<32 | int64(h.Sum32())
}

// reportNow is a store whose report counters are batched (the trigger
// path's, tally.Batcher.Store) and that can write one delta at once.
// ImportHistory needs that: it reads a day back to add only the difference,
// and a batched delta is invisible to a second import on another node, or
// in another Lambda environment, until its flush, so that import would add
// the same counts again.
type reportNow interface {
	ReportAddNow(ctx context.Context, d xjob.ReportDay) error
}

// ImportHistory stores the trigger logs and report days of another
// scheduler (an xxl-job import), so that the log list, `xjob report` and
// the console's chart go back past the move. It can run again: a log whose
// occurrence is stored already is kept as it is, and a day adds only the
// difference from what this origin carried over before (see
// HistoryParams.Origin). Logs are stored as they ended (triggered, then
// finished).
func (s *Service) ImportHistory(ctx context.Context, p HistoryParams) (HistoryResult, error) {
	var res HistoryResult
	if len(p.Origin) > 200 {
		return res, invalid("origin", "at most 200 bytes")
	}
	if n := len(p.Logs) + len(p.Days); n > MaxHistoryItems {
		return res, invalid("logs", "%d logs and days, at most %d", n, MaxHistoryItems)
	}
	var probs []xjob.FieldProblem
	for i, l := range p.Logs {
		f := fmt.Sprintf("logs[%d].", i)
		switch {
		case !strings.HasPrefix(l.OccurrenceID, HistoryPrefix) || len(l.OccurrenceID) > 200:
			probs = append(probs, xjob.FieldProblem{Field: f + "occurrenceId", Message: "must start with " + HistoryPrefix + " (at most 200 bytes)"})
		case l.JobID <= 0 || l.TriggerTime <= 0:
			probs = append(probs, xjob.FieldProblem{Field: f + "jobId", Message: "a job id and a trigger time are required"})
		case !l.TriggerType.Valid():
			probs = append(probs, xjob.FieldProblem{Field: f + "triggerType", Message: "unknown trigger type"})
		}
	}
	for i, d := range p.Days {
		if _, err := time.Parse(time.DateOnly, d.Day); err != nil || d.RunningCount < 0 || d.SucCount < 0 || d.FailCount < 0 {
			probs = append(probs, xjob.FieldProblem{Field: fmt.Sprintf("days[%d]", i), Message: "a yyyy-mm-dd day and counts ≥ 0"})
		}
	}
	if len(probs) > 0 {
		return res, &xjob.ValidationError{Problems: probs}
	}
	for _, l := range p.Logs {
		handle := driver.LogFinishParams{HandleTime: l.HandleTime, HandleCode: l.HandleCode, HandleMsg: l.HandleMsg}
		l.ID, l.Version, l.ClaimUntil = 0, 0, 0
		l.HandleTime, l.HandleCode, l.HandleMsg = 0, xjob.CodeNone, ""
		created, err := s.cfg.Store.LogCreate(ctx, l)
		if errors.Is(err, xjob.ErrConflict) {
			res.LogsKept++
			continue
		}
		if err != nil {
			return res, fmt.Errorf("admin import history: log %s: %w", l.OccurrenceID, err)
		}
		res.LogsCreated++
		if handle.HandleCode == xjob.CodeNone {
			continue
		}
		handle.ID = created.ID
		if _, err := s.cfg.Store.LogFinish(ctx, handle); err != nil && !errors.Is(err, xjob.ErrConflict) {
			return res, fmt.Errorf("admin import history: log %s result: %w", l.OccurrenceID, err)
		}
	}
	group := ImportReportGroup(p.Origin)
	add := s.cfg.Store.ReportAdd
	if now, ok := s.cfg.Store.(reportNow); ok {
		add = now.ReportAddNow
	}
	for _, d := range p.Days {
		have, err := s.cfg.Store.ReportList(ctx, driver.ReportListParams{From: d.Day, To: d.Day, GroupIDs: []int64{group}})
		if err != nil {
			return res, fmt.Errorf("admin import history: day %s: %w", d.Day, err)
		}
		delta := xjob.ReportDay{Day: d.Day, GroupID: group,
			RunningCount: d.RunningCount, SucCount: d.SucCount, FailCount: d.FailCount}
		if len(have) > 0 {
			// The other scheduler went on counting since (today's
			// running runs ended): the difference, negative too.
			delta.RunningCount -= have[0].RunningCount
			delta.SucCount -= have[0].SucCount
			delta.FailCount -= have[0].FailCount
		}
		if delta.RunningCount == 0 && delta.SucCount == 0 && delta.FailCount == 0 {
			res.DaysKept++
			continue
		}
		if err := add(ctx, delta); err != nil {
			return res, fmt.Errorf("admin import history: day %s: %w", d.Day, err)
		}
		res.DaysAdded++
	}
	return res, nil
}
