// Package admin is the application service behind xjob's admin API: what a
// person (or a tool) does to jobs, executor groups and trigger logs, with
// xxl-job's rules (validation, trigger and child-job semantics) applied in one place so that
// the JSON API, the console and the CLI agree.
//
// It holds no transport types. Errors carry their meaning for the edge:
// *xjob.ValidationError (bad input, nothing written), xjob.ErrNotFound (no
// such job, group or log), xjob.ErrConflict (stale version, group in use,
// log not running) and ErrExecutor (the executor could not be reached or
// refused), each with a message fit to show a person.
//
// Every job write goes through the store's version-conditional update. The
// schedule Revision is bumped when an edit changes what or when a job fires
// (xjob.Job.ScheduleChanged), so the ring drops occurrences planned under the
// old schedule.
//
// Unlike xxl-job ("changes take effect after the pre-read window"), a job
// created running, started, or edited while running fires at its real next
// time even when that is inside the scan's horizon, which the scan may
// already have planned past: the admin writes the job with its first fire
// after now, then does the scan's step for that one job itself (scan.Pusher:
// push the fires within the horizon onto the ring, then advance the job
// conditionally on its version). A scan that reads the job meanwhile pushes
// the same occurrences, whose deterministic ids keep them single; the ring
// drops any that a later edit made stale by their revision. A crash between
// the write and the push leaves the job due at its real next time, so the
// scan plans it (on time with the per-second scan, or by its misfire
// strategy with a longer horizon): no fire is lost.
package admin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/scan"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// ErrExecutor marks a failed call to an executor (/log, /kill): the executor
// is unreachable or answered with a failure. The message names the
// executor's reply.
var ErrExecutor = errors.New("executor call failed")

// KillMsg is the handle message of a log killed by a person (the English
// text of xxl-job's joblog_kill_log_byman), whichever result of the kill
// is recorded first (callback.ResultMsg).
const KillMsg = callback.KillMsg

// Defaults of Config.
const (
	// DefaultPreRead is the scan's pre-read window (xxl-job PRE_READ_MS).
	DefaultPreRead = 5 * time.Second
	// DefaultDeadAfter is how long an executor counts as alive after its
	// last beat (xxl-job DEAD_TIMEOUT).
	DefaultDeadAfter = 90 * time.Second
	// maxRetries bounds read-modify-write retries of an edit that named no
	// version and lost its conditional write to a scan advance or to a
	// writer in another process (edits within one process are serialised).
	maxRetries = 16
)

// Finisher records a final result for a running log and runs the
// completion path (retry, alarm, report counters). *callback.Service
// satisfies it; a log that already has a result must give an error matching
// xjob.ErrConflict.
type Finisher interface {
	Finish(ctx context.Context, l xjob.Log, code int, msg string) (xjob.Log, error)
}

// Config wires a Service. Store, Queues, Executors and Finisher are required.
type Config struct {
	Store     driver.Store
	Queues    driver.Queues
	Executors driver.ExecutorClient
	Finisher  Finisher
	// Clock defaults to the wall clock; Logger to slog.Default().
	Clock  clock.Clock
	Logger *slog.Logger
	// Scan is the scan's configuration (Shards, PreRead, RingLead...): the
	// admin pushes the fires within the scan's horizon of a job it creates,
	// starts or edits, exactly as the scan would. Zero values take the
	// scan's defaults; Scan.Shards must be the store's.
	Scan scan.Tunables
	// PreRead, if set, is the scan's pre-read window when Scan.PreRead is
	// zero (default DefaultPreRead).
	PreRead time.Duration
	// DeadAfter decides which registered executors are listed as live
	// (default DefaultDeadAfter).
	DeadAfter time.Duration
	// AnyTriggerAddress lets a manual trigger's address override name any
	// http(s) address. Off (the default), an override may only name
	// addresses of the job's group — its stored list (a manual group's
	// typed list) or an executor registered under its app name — since
	// the trigger POSTs the access token and job parameters there and
	// records the reply: an open override would make the admin API a
	// request forwarder into the scheduler's network.
	AnyTriggerAddress bool
	// StartDeclaredJobs starts the jobs executors declare (DeclareJobs)
	// when they are created. Off (the default), a declared job is created
	// stopped and a person starts it: deploying an executor does not, by
	// itself, schedule work.
	StartDeclaredJobs bool
	// Targets, if set, enables HTTP jobs (see TargetConfig).
	Targets *TargetConfig
	// NewRequestID names manual triggers (the occurrence ref); the default
	// is 16 random bytes in hex. Tests set it to get stable ids.
	NewRequestID func() string
}

// Validate reports a missing dependency or a negative duration.
func (c *Config) Validate() error {
	var missing []string
	if c.Store == nil {
		missing = append(missing, "Store")
	}
	if c.Queues == nil {
		missing = append(missing, "Queues")
	}
	if c.Executors == nil {
		missing = append(missing, "Executors")
	}
	if c.Finisher == nil {
		missing = append(missing, "Finisher")
	}
	if len(missing) > 0 {
		return fmt.Errorf("admin config: missing %v", missing)
	}
	if c.PreRead < 0 || c.DeadAfter < 0 {
		return errors.New("admin config: PreRead and DeadAfter must not be negative")
	}
	return nil
}

func (c *Config) applyDefaults() {
	c.Clock = fallback.Clock(c.Clock)
	c.Logger = fallback.Logger(c.Logger)
	if c.PreRead == 0 {
		c.PreRead = DefaultPreRead
	}
	if c.Scan.PreRead == 0 {
		c.Scan.PreRead = c.PreRead
	}
	c.PreRead = c.Scan.PreRead
	if c.DeadAfter == 0 {
		c.DeadAfter = DefaultDeadAfter
	}
	if c.NewRequestID == nil {
		c.NewRequestID = randomID
	}
}

// Service carries out admin operations. It keeps no state of its own, so
// any number of instances may serve one store.
type Service struct {
	cfg  Config
	push *scan.Pusher
	// edits serialises this process's read-modify-writes of one job (by
	// id modulo the stripe count), so concurrent edits naming no version
	// queue instead of using up their retries against each other; the
	// retries are left for other processes and the scan.
	edits [64]sync.Mutex
	// childEdits serialises this process's job edits that set child jobs,
	// from the cycle check to the write: two edits that each add one edge
	// of a cycle (A→B, B→A) would otherwise each pass a check that reads
	// the other's old children. Taken before an edits stripe, never after,
	// and before the store's child-graph lease, which does the same across
	// processes (lockChildGraph).
	childEdits sync.Mutex
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	push, err := scan.NewPusher(scan.Config{Tunables: cfg.Scan, Jobs: cfg.Store, Queues: cfg.Queues, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("admin config: %w", err)
	}
	return &Service{cfg: cfg, push: push}, nil
}

func (s *Service) now() int64 { return clock.Millis(s.cfg.Clock) }

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b[:])
}

// invalid builds a one-problem validation error.
func invalid(field, format string, args ...any) error {
	return &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: field, Message: fmt.Sprintf(format, args...)}}}
}

// mapNotFound turns a store's not-found into a clean message ("job 7 not
// found") that still matches xjob.ErrNotFound; other errors are wrapped
// with op.
func mapNotFound(err error, kind string, id int64, op string) error {
	if errors.Is(err, xjob.ErrNotFound) {
		return fmt.Errorf("%s %d %w", kind, id, xjob.ErrNotFound)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// staleVersion is the conflict returned when a write named an outdated version.
func staleVersion(kind string, id, version int64) error {
	return fmt.Errorf("%s %d was changed since version %d (reload it and retry): %w", kind, id, version, xjob.ErrConflict)
}
