// Package upkeep does the periodic upkeep of the store that no request
// triggers: it marks failed the runs whose result will never arrive
// (CheckLost, xxl-job's JobCompleteHelper, every 60 s) and deletes logs
// past their retention (PurgeLogs, JobLogReportHelper's cleanup, once a
// day; not on a store that retires logs itself, driver.LogExpirer); it
// also finishes a change set an apply left half-written when its process
// died (Resume). They are plain methods, so that the local loop and the
// registry function's EventBridge rule call them alike.
//
// It holds no executor state: whether an executor is alive is the
// registry's answer (Liveness), so the lost check and routing never
// disagree about which executors are online.
package upkeep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// LostMsg is the handle message of a log marked failed by CheckLost, the
// English text of xxl-job's joblog_lost_fail.
const LostMsg = "Job result lost, marked as failure."

// Defaults of Config, from xxl-job.
const (
	DefaultLostAfter     = 10 * time.Minute // JobCompleteHelper
	DefaultRetentionDays = 30               // xxl.job.logretentiondays
	// MinRetentionDays: smaller values turn log cleanup off (xxl-job 2.x–3.0).
	MinRetentionDays = 7
	// DefaultBatchSize is the page size of CheckLost and of PurgeLogs' deletes.
	DefaultBatchSize = 1000
)

// Liveness says which executors are alive. registry.Service satisfies it.
type Liveness interface {
	// LiveSet returns the address of every executor that beat recently.
	LiveSet(ctx context.Context) (map[string]bool, error)
}

// Completer finishes a log as failed and runs the completion path (retry,
// alarm, report counters). callback.Service satisfies it. It must return an
// error matching xjob.ErrConflict when the log already has a result.
type Completer interface {
	Finish(ctx context.Context, l xjob.Log, code int, msg string) (xjob.Log, error)
}

// Config configures a Service. Zero durations and counts take the defaults
// above; RetentionDays is used as given once set.
type Config struct {
	Store driver.Store
	// Liveness and Completer are required by CheckLost only.
	Liveness  Liveness
	Completer Completer
	// Clock defaults to the wall clock; Logger to slog.Default().
	Clock  clock.Clock
	Logger *slog.Logger
	// Metrics counts runs marked lost (optional).
	Metrics *metric.Metrics

	// LostAfter: a running log older than this on an offline executor is
	// marked failed by CheckLost (10 min).
	LostAfter time.Duration
	// RetentionDays: PurgeLogs deletes logs triggered before today 00:00
	// UTC minus this many days. Values below MinRetentionDays disable
	// purging, as in xxl-job 2.x. 0 means DefaultRetentionDays; use a
	// negative value to disable explicitly.
	RetentionDays int
	// BatchSize bounds CheckLost's page and each PurgeLogs delete (1000).
	BatchSize int
}

// Validate reports a missing store or a negative duration.
func (c *Config) Validate() error {
	if c.Store == nil {
		return errors.New("upkeep config: missing Store")
	}
	if c.LostAfter < 0 || c.BatchSize < 0 {
		return errors.New("upkeep config: LostAfter and BatchSize must not be negative")
	}
	return nil
}

func (c *Config) applyDefaults() {
	c.Clock = fallback.Clock(c.Clock)
	c.Logger = fallback.Logger(c.Logger)
	if c.LostAfter == 0 {
		c.LostAfter = DefaultLostAfter
	}
	if c.RetentionDays == 0 {
		c.RetentionDays = DefaultRetentionDays
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
}

// Service does the upkeep. It holds no state of its own, so any number of
// instances may run at once.
type Service struct {
	cfg Config
}

// New validates cfg, fills in defaults and returns a Service.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	return &Service{cfg: cfg}, nil
}

// Config returns the effective configuration (defaults filled in).
func (s *Service) Config() Config { return s.cfg }

// LostResult says what CheckLost did.
type LostResult struct {
	// Checked is the number of long-running logs looked at.
	Checked int
	// Marked is the number of them finished as lost.
	Marked int
}

// CheckLost marks failed the logs that have been running longer than
// LostAfter on an executor that is no longer alive (its result will never
// arrive), and hands each to the Completer for retry and alarm. A log whose
// result arrives meanwhile is left alone (first result wins). One call looks
// at up to BatchSize logs, oldest first.
func (s *Service) CheckLost(ctx context.Context) (LostResult, error) {
	var res LostResult
	if s.cfg.Completer == nil || s.cfg.Liveness == nil {
		return res, errors.New("upkeep check lost: no Liveness or Completer configured")
	}
	before := s.cfg.Clock.Now().Add(-s.cfg.LostAfter).UnixMilli()
	logs, err := s.cfg.Store.LogsRunning(ctx, before, s.cfg.BatchSize)
	if err != nil {
		return res, fmt.Errorf("upkeep lost logs: %w", err)
	}
	res.Checked = len(logs)
	if len(logs) == 0 {
		return res, nil
	}
	live, err := s.cfg.Liveness.LiveSet(ctx)
	if err != nil {
		return res, fmt.Errorf("upkeep lost logs: %w", err)
	}
	var errs []error
	for _, l := range Lost(logs, live) {
		_, err := s.cfg.Completer.Finish(ctx, l, xjob.CodeFail, LostMsg)
		switch {
		case err == nil:
			res.Marked++
			s.cfg.Metrics.Lost()
			s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "job result lost, marked as failure",
				slog.Int64("jobId", l.JobID), slog.Int64("logId", l.ID), slog.String("executor", l.ExecutorAddress))
		case errors.Is(err, xjob.ErrConflict), errors.Is(err, xjob.ErrNotFound):
			// the result arrived, or the log was purged, meanwhile
		default:
			errs = append(errs, fmt.Errorf("upkeep mark log %d lost: %w", l.ID, err))
		}
	}
	return res, errors.Join(errs...)
}

// Lost returns the running logs whose executor is not among live addresses.
func Lost(running []xjob.Log, live map[string]bool) []xjob.Log {
	var out []xjob.Log
	for _, l := range running {
		if !l.Running() || live[l.ExecutorAddress] {
			continue
		}
		out = append(out, l)
	}
	return out
}

// RetentionCutoff returns the instant (Unix ms) before which logs are
// purged: today 00:00 UTC minus days. ok is false when days is below
// MinRetentionDays, which disables purging.
func RetentionCutoff(now time.Time, days int) (cutoff int64, ok bool) {
	if days < MinRetentionDays {
		return 0, false
	}
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d-days, 0, 0, 0, 0, time.UTC).UnixMilli(), true
}

// StoreExpiresLogs says whether st retires logs itself (a
// driver.LogExpirer with a retention), so that PurgeLogs leaves it alone.
func StoreExpiresLogs(st driver.LogStore) bool {
	e, ok := st.(driver.LogExpirer)
	return ok && e.LogExpiry() > 0
}

// PurgeLogs deletes logs triggered before the retention cutoff, in batches
// of BatchSize, and returns how many it deleted. It does nothing when
// retention is disabled, or when the store retires logs itself
// (driver.LogExpirer): there the store's expiry is the retention, and
// explicit deletes would only pay for what expiry does for free.
func (s *Service) PurgeLogs(ctx context.Context) (int, error) {
	cutoff, ok := RetentionCutoff(s.cfg.Clock.Now(), s.cfg.RetentionDays)
	if !ok || StoreExpiresLogs(s.cfg.Store) {
		return 0, nil
	}
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("upkeep purge logs: %w", err)
		}
		n, err := s.cfg.Store.LogDeleteBefore(ctx, cutoff, s.cfg.BatchSize)
		total += n
		if err != nil {
			return total, fmt.Errorf("upkeep purge logs: %w", err)
		}
		if n < s.cfg.BatchSize {
			return total, nil
		}
	}
}
