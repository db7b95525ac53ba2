// Package registry keeps track of executors and does the periodic upkeep of
// the store: it records heartbeats (POST /api/registry and
// /api/registryRemove), answers "which executors of this app are alive", and
// carries out xxl-job's background monitors as plain methods —
// RefreshGroups (JobRegistryHelper, every 30 s), CheckLost
// (JobCompleteHelper, every 60 s) and PurgeLogs (JobLogReportHelper's
// cleanup, once a day) — so that a local loop or an EventBridge-scheduled
// Lambda can call them alike.
//
// Liveness: an executor beats every 30 s and counts as alive while its last
// beat is within Config.DeadAfter (90 s). Every method decides liveness from
// the beat time, not from whether a stale row has been deleted yet, so the
// answers do not depend on how recently RefreshGroups ran.
package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/clock"
	"github.com/xjobdev/xjob/driver"
	"github.com/xjobdev/xjob/protocol"
)

// ErrIllegalArgument marks a rejected heartbeat. Its text is xxl-job's reply
// ("Illegal Argument."); the returned error also wraps the
// *xjob.ValidationError naming the field.
var ErrIllegalArgument = errors.New(protocol.MsgIllegalArgument)

// LostMsg is the handle message of a log marked failed by CheckLost, the
// English text of xxl-job's joblog_lost_fail.
const LostMsg = "Job result lost, marked as failure."

// Defaults of Config, from xxl-job.
const (
	DefaultDeadAfter     = 90 * time.Second // RegistryConfig.DEAD_TIMEOUT
	DefaultLostAfter     = 10 * time.Minute // JobCompleteHelper
	DefaultRetentionDays = 30               // xxl.job.logretentiondays
	// MinRetentionDays: smaller values turn log cleanup off (xxl-job 2.x–3.0).
	MinRetentionDays = 7
	// DefaultBatchSize is the page size of CheckLost and of PurgeLogs' deletes.
	DefaultBatchSize = 1000
)

// Completer finishes a log as failed and runs the completion path (retry,
// alarm, report counters). callback.Service satisfies it. It must return an
// error matching xjob.ErrConflict when the log already has a result.
type Completer interface {
	Finish(ctx context.Context, l xjob.Log, code int, msg string) (xjob.Log, error)
}

// Config configures a Service. Zero durations and counts take the defaults
// above; RetentionDays is used as given once set (see UseDefaults).
type Config struct {
	Store driver.Store
	// Completer is required by CheckLost only.
	Completer Completer
	// Clock defaults to the wall clock; Logger to slog.Default().
	Clock  clock.Clock
	Logger *slog.Logger

	// DeadAfter: an executor whose last beat is older is offline (90 s).
	DeadAfter time.Duration
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
	// MaxAddresses caps the live executors of one app name; registering
	// one more is refused (default and upper bound xjob.MaxAddresses).
	MaxAddresses int
}

// Validate reports a missing store or a negative duration.
func (c *Config) Validate() error {
	if c.Store == nil {
		return errors.New("registry config: missing Store")
	}
	if c.DeadAfter < 0 || c.LostAfter < 0 || c.BatchSize < 0 {
		return errors.New("registry config: DeadAfter, LostAfter and BatchSize must not be negative")
	}
	return nil
}

func (c *Config) applyDefaults() {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.DeadAfter == 0 {
		c.DeadAfter = DefaultDeadAfter
	}
	if c.LostAfter == 0 {
		c.LostAfter = DefaultLostAfter
	}
	if c.RetentionDays == 0 {
		c.RetentionDays = DefaultRetentionDays
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaxAddresses <= 0 || c.MaxAddresses > xjob.MaxAddresses {
		c.MaxAddresses = xjob.MaxAddresses
	}
}

// Service is the registry. It holds no state of its own, so any number of
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

func (s *Service) entry(p protocol.RegistryParam) (xjob.RegistryEntry, error) {
	e := xjob.RegistryEntry{Group: p.RegistryGroup, Key: p.RegistryKey, Value: p.RegistryValue}
	if err := e.Validate(); err != nil {
		return e, fmt.Errorf("%w %w", ErrIllegalArgument, err)
	}
	return e, nil
}

// Register records an executor heartbeat (insert or refresh). An app name
// holds at most xjob.MaxAddresses live executors, as a manual list does: a
// new address beyond that is refused (ErrIllegalArgument), while those
// already registered keep beating (Config.MaxAddresses). Without the cap anyone holding the
// access token could grow one group without bound, and every broadcast
// trigger of it with it.
func (s *Service) Register(ctx context.Context, p protocol.RegistryParam) error {
	e, err := s.entry(p)
	if err != nil {
		return err
	}
	live, err := s.LiveAddresses(ctx, e.Key)
	if err != nil {
		return err
	}
	if len(live) >= s.cfg.MaxAddresses && !slices.Contains(live, e.Value) {
		return fmt.Errorf("%w app %s already has %d live executors", ErrIllegalArgument, e.Key, len(live))
	}
	e.UpdatedAt = clock.Millis(s.cfg.Clock)
	if err := s.cfg.Store.RegistryUpsert(ctx, e); err != nil {
		return fmt.Errorf("registry upsert: %w", err)
	}
	return nil
}

// Remove deletes an executor's entry (sent by an executor shutting down).
func (s *Service) Remove(ctx context.Context, p protocol.RegistryParam) error {
	e, err := s.entry(p)
	if err != nil {
		return err
	}
	if err := s.cfg.Store.RegistryRemove(ctx, e); err != nil {
		return fmt.Errorf("registry remove: %w", err)
	}
	return nil
}

func (s *Service) since() int64 {
	return s.cfg.Clock.Now().Add(-s.cfg.DeadAfter).UnixMilli()
}

// LiveAddresses returns the sorted, de-duplicated addresses of appName's
// executors that beat within DeadAfter.
func (s *Service) LiveAddresses(ctx context.Context, appName string) ([]string, error) {
	since := s.since()
	entries, err := s.cfg.Store.RegistryList(ctx, driver.RegistryListParams{Key: appName, Since: since})
	if err != nil {
		return nil, fmt.Errorf("registry list %s: %w", appName, err)
	}
	return xjob.LiveAddresses(entries, appName, since), nil
}

// OnlineCounts returns how many executor addresses beat within DeadAfter,
// per app name: the executors-online gauge of /metrics.
func (s *Service) OnlineCounts(ctx context.Context) (map[string]int, error) {
	since := s.since()
	entries, err := s.cfg.Store.RegistryList(ctx, driver.RegistryListParams{Since: since})
	if err != nil {
		return nil, fmt.Errorf("registry list: %w", err)
	}
	out := map[string]int{}
	for _, app := range appNames(entries) {
		out[app] = len(xjob.LiveAddresses(entries, app, since))
	}
	return out, nil
}

func appNames(entries []xjob.RegistryEntry) []string {
	var apps []string
	for _, e := range entries {
		if e.Group == xjob.RegistryGroupExecutor {
			apps = append(apps, e.Key)
		}
	}
	slices.Sort(apps)
	return slices.Compact(apps)
}

// Addresses returns the addresses a trigger of group g may be routed to: a
// manual group's list as typed (order matters to FIRST/LAST routing), an
// automatic group's live executors, read fresh rather than from the list
// RefreshGroups last stored.
func (s *Service) Addresses(ctx context.Context, g xjob.Group) ([]string, error) {
	if g.AddressType == xjob.AddressManual {
		return slices.Clone(g.AddressList), nil
	}
	return s.LiveAddresses(ctx, g.AppName)
}

// RefreshResult says what RefreshGroups did.
type RefreshResult struct {
	// Removed is the number of stale registry entries deleted.
	Removed int
	// Updated is the number of automatic groups whose list changed.
	Updated int
}

// RefreshGroups deletes registry entries that missed their beats and
// rebuilds each automatic group's stored address list from the live ones
// (sorted), writing only the groups whose list changed.
func (s *Service) RefreshGroups(ctx context.Context) (RefreshResult, error) {
	var res RefreshResult
	now := clock.Millis(s.cfg.Clock)
	since := s.since()
	n, err := s.cfg.Store.RegistryDeleteBefore(ctx, since)
	if err != nil {
		return res, fmt.Errorf("registry delete stale: %w", err)
	}
	res.Removed = n
	groups, err := s.cfg.Store.GroupList(ctx, driver.GroupListParams{})
	if err != nil {
		return res, fmt.Errorf("registry group list: %w", err)
	}
	if !slices.ContainsFunc(groups, func(g xjob.Group) bool { return g.AddressType == xjob.AddressAuto }) {
		return res, nil
	}
	entries, err := s.cfg.Store.RegistryList(ctx, driver.RegistryListParams{Since: since})
	if err != nil {
		return res, fmt.Errorf("registry list: %w", err)
	}
	var errs []error
	for _, g := range groups {
		if g.AddressType != xjob.AddressAuto {
			continue
		}
		live := xjob.LiveAddresses(entries, g.AppName, since)
		if slices.Equal(live, g.AddressList) {
			continue
		}
		if err := s.cfg.Store.GroupSetAddresses(ctx, g.ID, live, now); err != nil {
			if errors.Is(err, xjob.ErrNotFound) {
				continue // deleted meanwhile
			}
			errs = append(errs, fmt.Errorf("registry group %d set addresses: %w", g.ID, err))
			continue
		}
		res.Updated++
	}
	return res, errors.Join(errs...)
}

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
	if s.cfg.Completer == nil {
		return res, errors.New("registry check lost: no Completer configured")
	}
	before := s.cfg.Clock.Now().Add(-s.cfg.LostAfter).UnixMilli()
	logs, err := s.cfg.Store.LogsRunning(ctx, before, s.cfg.BatchSize)
	if err != nil {
		return res, fmt.Errorf("registry lost logs: %w", err)
	}
	res.Checked = len(logs)
	if len(logs) == 0 {
		return res, nil
	}
	entries, err := s.cfg.Store.RegistryList(ctx, driver.RegistryListParams{Since: s.since()})
	if err != nil {
		return res, fmt.Errorf("registry list: %w", err)
	}
	live := make(map[string]bool, len(entries))
	for _, e := range entries {
		live[e.Value] = true
	}
	var errs []error
	for _, l := range Lost(logs, live) {
		_, err := s.cfg.Completer.Finish(ctx, l, xjob.CodeFail, LostMsg)
		switch {
		case err == nil:
			res.Marked++
			s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "job result lost, marked as failure",
				slog.Int64("jobId", l.JobID), slog.Int64("logId", l.ID), slog.String("executor", l.ExecutorAddress))
		case errors.Is(err, xjob.ErrConflict), errors.Is(err, xjob.ErrNotFound):
			// the result arrived, or the log was purged, meanwhile
		default:
			errs = append(errs, fmt.Errorf("registry mark log %d lost: %w", l.ID, err))
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

// PurgeLogs deletes logs triggered before the retention cutoff, in batches
// of BatchSize, and returns how many it deleted. It does nothing when
// retention is disabled.
func (s *Service) PurgeLogs(ctx context.Context) (int, error) {
	cutoff, ok := RetentionCutoff(s.cfg.Clock.Now(), s.cfg.RetentionDays)
	if !ok {
		return 0, nil
	}
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("registry purge logs: %w", err)
		}
		n, err := s.cfg.Store.LogDeleteBefore(ctx, cutoff, s.cfg.BatchSize)
		total += n
		if err != nil {
			return total, fmt.Errorf("registry purge logs: %w", err)
		}
		if n < s.cfg.BatchSize {
			return total, nil
		}
	}
}
