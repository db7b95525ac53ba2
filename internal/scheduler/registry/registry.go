// Package registry keeps track of executors: it records heartbeats (POST
// /api/registry and /api/registryRemove), answers "which executors are
// alive", and rebuilds automatic groups' address lists from the live ones
// (RefreshGroups, xxl-job's JobRegistryHelper, every 30 s) as a plain
// method, so that a local loop or an EventBridge-scheduled Lambda can call
// it alike. The rest of the periodic upkeep (lost results, log retention)
// is package upkeep's, which asks this package who is alive.
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
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// ErrIllegalArgument marks a rejected heartbeat. Its text is xxl-job's reply
// ("Illegal Argument."); the returned error also wraps the
// *xjob.ValidationError naming the field.
var ErrIllegalArgument = errors.New(protocol.MsgIllegalArgument)

// Defaults of Config, from xxl-job.
const (
	DefaultDeadAfter = 90 * time.Second // RegistryConfig.DEAD_TIMEOUT
	// DefaultMaxAppNames caps the app names with live executors: each is a
	// series of /metrics and a scan of the registry, and anyone holding
	// the access token could otherwise register names without bound.
	DefaultMaxAppNames = 1000
)

// Config configures a Service. Zero durations take the defaults above.
type Config struct {
	Store driver.Store
	// Clock defaults to the wall clock; Logger to slog.Default().
	Clock  clock.Clock
	Logger *slog.Logger

	// DeadAfter: an executor whose last beat is older is offline (90 s).
	DeadAfter time.Duration
	// MaxAddresses caps the live executors of one app name; registering
	// one more is refused (default and upper bound xjob.MaxAddresses).
	MaxAddresses int
	// MaxAppNames caps the app names with live executors; a heartbeat
	// under one more is refused (default DefaultMaxAppNames).
	MaxAppNames int
	// CheckAddress, when set, vets a registered address before it is
	// stored (the installation's egress policy: no link-local or metadata
	// address, no loopback on AWS); a refusal is ErrIllegalArgument.
	CheckAddress func(ctx context.Context, address string) error
}

// Validate reports a missing store or a negative duration.
func (c *Config) Validate() error {
	if c.Store == nil {
		return errors.New("registry config: missing Store")
	}
	if c.DeadAfter < 0 {
		return errors.New("registry config: DeadAfter must not be negative")
	}
	return nil
}

func (c *Config) applyDefaults() {
	c.Clock = fallback.Clock(c.Clock)
	c.Logger = fallback.Logger(c.Logger)
	if c.DeadAfter == 0 {
		c.DeadAfter = DefaultDeadAfter
	}
	if c.MaxAddresses <= 0 || c.MaxAddresses > xjob.MaxAddresses {
		c.MaxAddresses = xjob.MaxAddresses
	}
	if c.MaxAppNames <= 0 {
		c.MaxAppNames = DefaultMaxAppNames
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
	if s.cfg.CheckAddress != nil {
		if err := s.cfg.CheckAddress(ctx, e.Value); err != nil {
			return fmt.Errorf("%w %w", ErrIllegalArgument, err)
		}
	}
	live, err := s.LiveAddresses(ctx, e.Key)
	if err != nil {
		return err
	}
	if len(live) >= s.cfg.MaxAddresses && !slices.Contains(live, e.Value) {
		return fmt.Errorf("%w app %s already has %d live executors", ErrIllegalArgument, e.Key, len(live))
	}
	if len(live) == 0 {
		// A new app name: only the app names' count is read, and only here.
		counts, err := s.OnlineCounts(ctx)
		if err != nil {
			return err
		}
		if len(counts) >= s.cfg.MaxAppNames {
			return fmt.Errorf("%w %d app names already have live executors", ErrIllegalArgument, len(counts))
		}
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
	return LiveAddresses(entries, appName, since), nil
}

// LiveSet returns the address of every executor, of any app, that beat
// within DeadAfter: the lost-result check's view of who is alive.
func (s *Service) LiveSet(ctx context.Context) (map[string]bool, error) {
	entries, err := s.cfg.Store.RegistryList(ctx, driver.RegistryListParams{Since: s.since()})
	if err != nil {
		return nil, fmt.Errorf("registry list: %w", err)
	}
	live := make(map[string]bool, len(entries))
	for _, e := range entries {
		live[e.Value] = true
	}
	return live, nil
}

// OnlineCounts returns how many executor addresses beat within DeadAfter,
// per app name: the executors-online gauge of /metrics.
func (s *Service) OnlineCounts(ctx context.Context) (map[string]int, error) {
	since := s.since()
	entries, err := s.cfg.Store.RegistryList(ctx, driver.RegistryListParams{Since: since})
	if err != nil {
		return nil, fmt.Errorf("registry list: %w", err)
	}
	groups, err := s.cfg.Store.GroupList(ctx, driver.GroupListParams{})
	if err != nil {
		return nil, fmt.Errorf("registry groups: %w", err)
	}
	out := map[string]int{}
	// An automatic group with no live executor reads 0, so that an alert
	// can see it (a missing series alerts on nothing).
	for _, g := range groups {
		if g.AddressType == xjob.AddressAuto {
			out[g.AppName] = 0
		}
	}
	for _, app := range appNames(entries) {
		out[app] = len(LiveAddresses(entries, app, since))
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
		live := LiveAddresses(entries, g.AppName, since)
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

// LiveAddresses returns the sorted, de-duplicated addresses of entries for
// appName seen at or after since: an automatic group's address list, at
// most xjob.MaxAddresses long (the registry refuses more; entries stored before
// that rule are cut here).
func LiveAddresses(entries []xjob.RegistryEntry, appName string, since int64) []string {
	var out []string
	for _, e := range entries {
		if e.Group == xjob.RegistryGroupExecutor && e.Key == appName && e.UpdatedAt >= since {
			out = append(out, e.Value)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > xjob.MaxAddresses {
		out = out[:xjob.MaxAddresses]
	}
	return out
}
