package callback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/metric"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// itemError is a per-item callback rejection: its text is xxl-job's verbatim
// message, and it unwraps to the domain sentinel so that callers can branch
// on meaning.
type itemError struct {
	msg   string
	cause error
}

func (e *itemError) Error() string { return e.msg }
func (e *itemError) Unwrap() error { return e.cause }

// Per-item callback errors, worded as xxl-job words them (sic). They match
// xjob.ErrNotFound and xjob.ErrConflict with errors.Is.
var (
	// ErrLogNotFound: the callback names a log that does not exist.
	ErrLogNotFound error = &itemError{msg: "log item not found.", cause: xjob.ErrNotFound}
	// ErrRepeatCallback: the log already has a result; the first one wins.
	ErrRepeatCallback error = &itemError{msg: "log repeate callback.", cause: xjob.ErrConflict}
)

// Defaults of Config.
const (
	// DefaultSweepGrace leaves a fresh failure to the path that recorded it
	// before the sweep takes it over (xxl-job's fail monitor runs every 10 s).
	DefaultSweepGrace = 10 * time.Second
	// DefaultSweepLimit is how many logs one sweep handles (xxl-job: 1000).
	DefaultSweepLimit = 1000
	// DefaultTriggerWait: dispatch records the /run reply milliseconds
	// after it arrives; a callback that overtakes it waits this long.
	DefaultTriggerWait = 2 * time.Second
	// triggerPoll is how often that wait re-reads the log.
	triggerPoll = 50 * time.Millisecond
)

// Config wires a Service. Store, Queues and Alarmer are required.
type Config struct {
	Store   driver.Store
	Queues  driver.Queues
	Alarmer driver.Alarmer
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// SweepGrace is how old a failed, unalarmed log must be before Sweep
	// handles it (default DefaultSweepGrace).
	SweepGrace time.Duration
	// SweepLimit caps the logs one Sweep handles (default DefaultSweepLimit).
	SweepLimit int
	// Parallel bounds how many items of one callback batch are recorded
	// at once (default 16).
	Parallel int
	// Metrics, if set, counts recorded results.
	Metrics *metric.Metrics
	// Retry times retries (zero value: RetryPolicy's defaults, a 5 s
	// delay without backoff).
	Retry RetryPolicy
	// TriggerWait bounds how long completing a failure waits for dispatch
	// to record the trigger when the executor's callback overtook it
	// (default DefaultTriggerWait), so the alarm carries the trigger's
	// code and message. Past it the sweep completes the log.
	TriggerWait time.Duration
}

// Validate reports a missing dependency or a negative setting.
func (c *Config) Validate() error {
	var missing []string
	if c.Store == nil {
		missing = append(missing, "Store")
	}
	if c.Queues == nil {
		missing = append(missing, "Queues")
	}
	if c.Alarmer == nil {
		missing = append(missing, "Alarmer")
	}
	if len(missing) > 0 {
		return fmt.Errorf("callback config: missing %v", missing)
	}
	if c.SweepGrace < 0 || c.SweepLimit < 0 || c.TriggerWait < 0 {
		return errors.New("callback config: SweepGrace, SweepLimit and TriggerWait must not be negative")
	}
	if c.Retry.Delay < 0 || c.Retry.Delay > MaxRetryDelay || c.Retry.Backoff < 0 || c.Retry.BusyWindow < 0 {
		return fmt.Errorf("callback config: retry delay must be 0 to %v, backoff and busy window not negative", MaxRetryDelay)
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
	if c.SweepGrace == 0 {
		c.SweepGrace = DefaultSweepGrace
	}
	if c.SweepLimit == 0 {
		c.SweepLimit = DefaultSweepLimit
	}
	if c.Parallel <= 0 {
		c.Parallel = 16
	}
	if c.TriggerWait == 0 {
		c.TriggerWait = DefaultTriggerWait
	}
	c.Retry = c.Retry.withDefaults()
}

// Service records executor results and completes logs. It is safe for
// concurrent use, also across processes: every decision that must be taken
// once is a conditional write in the store.
type Service struct {
	cfg Config
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	return &Service{cfg: cfg}, nil
}

// Callback records a batch of executor results (the body of POST
// /api/callback) and returns one error per item, nil for items recorded.
// A rejected item does not stop the others: xxl-job answers 200 to the
// executor regardless and only logs per-item failures.
//
// Items for different logs are recorded concurrently (an executor's batch
// holds everything it finished since its last callback, up to thousands);
// a repeat of a log id within the batch is recorded after the first, so the
// first result in the batch wins as it would one by one.
func (s *Service) Callback(ctx context.Context, items []protocol.HandleCallbackParam) []error {
	errs := make([]error, len(items))
	one := func(i int) {
		it := items[i]
		errs[i] = s.callbackOne(ctx, it)
		if errs[i] != nil {
			s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "callback item rejected",
				slog.Int64("logId", it.LogID), slog.Int("handleCode", it.HandleCode),
				slog.String("error", errs[i].Error()))
		}
	}
	seen := make(map[int64]bool, len(items))
	var repeats []int
	var wg sync.WaitGroup
	sem := make(chan struct{}, s.cfg.Parallel)
	for i, it := range items {
		if seen[it.LogID] {
			repeats = append(repeats, i)
			continue
		}
		seen[it.LogID] = true
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			one(i)
		}()
	}
	wg.Wait()
	for _, i := range repeats {
		one(i)
	}
	return errs
}

func (s *Service) callbackOne(ctx context.Context, it protocol.HandleCallbackParam) error {
	if it.LogID <= 0 {
		return ErrLogNotFound
	}
	if it.HandleCode == xjob.CodeNone {
		return &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "handleCode", Message: "must not be 0"}}}
	}
	l, err := s.cfg.Store.LogGet(ctx, it.LogID)
	switch {
	case errors.Is(err, xjob.ErrNotFound):
		return ErrLogNotFound
	case err != nil:
		return fmt.Errorf("callback log get: %w", err)
	case l.Handled():
		// A cheap early answer; correctness rests on LogFinish's condition.
		return ErrRepeatCallback
	}
	_, err = s.Finish(ctx, l, it.HandleCode, it.HandleMsg)
	return err
}

// Finish records result code/msg for l (a log as read from the store) if no
// result is recorded yet, counts it in the report, and completes it. It is
// the entry for every path that ends a running log: executor callback,
// manual kill, lost-job check. A log that already has a result gives
// ErrRepeatCallback (errors.Is xjob.ErrConflict) and has no effect.
func (s *Service) Finish(ctx context.Context, l xjob.Log, code int, msg string) (xjob.Log, error) {
	if code == xjob.CodeNone {
		return xjob.Log{}, &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "handleCode", Message: "must not be 0"}}}
	}
	var jr jobRef
	summary := ""
	if code == xjob.CodeSuccess {
		if err := jr.load(ctx, s.cfg.Store, l.JobID); err != nil {
			return xjob.Log{}, err
		}
		if jr.found {
			summary = ChildSummary(jr.job.ChildJobIDs)
		}
	}
	done, err := s.cfg.Store.LogFinish(ctx, driver.LogFinishParams{
		ID:         l.ID,
		HandleTime: clock.Millis(s.cfg.Clock),
		HandleCode: code,
		HandleMsg:  HandleMsg(msg, summary),
	})
	switch {
	case errors.Is(err, xjob.ErrConflict):
		return xjob.Log{}, ErrRepeatCallback
	case errors.Is(err, xjob.ErrNotFound):
		return xjob.Log{}, ErrLogNotFound
	case err != nil:
		return xjob.Log{}, fmt.Errorf("callback log finish: %w", err)
	}
	s.cfg.Metrics.Result(done.HandleCode)
	if d := FinishDelta(done); !zeroDelta(d) {
		if err := s.cfg.Store.ReportAdd(ctx, d); err != nil {
			s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "report counters not updated",
				slog.Int64("logId", done.ID), slog.String("error", err.Error()))
		}
	}
	if err := s.complete(ctx, done, &jr); err != nil {
		return done, err
	}
	return done, nil
}

// Complete runs the completion path on a log whose outcome is recorded: a
// handled log (callback, kill, lost) or one whose trigger failed
// (dispatch). Success with code 200 triggers the job's children; a failure
// is retried (when the log has retries left) and alarmed, once. It does not
// touch report counters: whoever recorded the outcome did. Calling it again
// on the same log is harmless.
func (s *Service) Complete(ctx context.Context, l xjob.Log) error {
	return s.complete(ctx, l, &jobRef{})
}

func (s *Service) complete(ctx context.Context, l xjob.Log, jr *jobRef) error {
	switch {
	case l.Handled() && l.HandleCode == xjob.CodeSuccess:
		return s.triggerChildren(ctx, l, jr)
	case l.Failed():
		return s.handleFailure(ctx, l, jr)
	}
	return nil
}

func (s *Service) triggerChildren(ctx context.Context, l xjob.Log, jr *jobRef) error {
	if err := jr.load(ctx, s.cfg.Store, l.JobID); err != nil {
		return err
	}
	if !jr.found {
		return nil
	}
	tasks := ChildTasks(l, jr.job.ChildJobIDs, clock.Millis(s.cfg.Clock))
	if len(tasks) == 0 {
		return nil
	}
	if err := s.send(ctx, tasks...); err != nil {
		return fmt.Errorf("callback child trigger of log %d: %w", l.ID, err)
	}
	return nil
}

func (s *Service) handleFailure(ctx context.Context, l xjob.Log, jr *jobRef) error {
	if l.AlarmStatus != xjob.AlarmDefault {
		return nil // handled (or being handled) elsewhere
	}
	if !l.Triggered() {
		var ok bool
		if l, ok = s.awaitTrigger(ctx, l); !ok {
			return nil // the sweep completes it, with the trigger recorded
		}
	}
	if err := jr.load(ctx, s.cfg.Store, l.JobID); err != nil {
		return err
	}
	// Retry first: idempotent by occurrence id, so it is safe to do before
	// the claim, and a crash after the claim cannot lose it.
	var plan RetryPlan
	if jr.found {
		plan = PlanRetry(l, jr.job.FailRetryCount, clock.Millis(s.cfg.Clock), s.cfg.Retry)
		if plan.HasTask {
			if err := s.sendAt(ctx, plan.VisibleAt, plan.Task); err != nil {
				return fmt.Errorf("callback retry of log %d: %w", l.ID, err)
			}
		}
	}
	if plan.Deferred {
		// Not the retry's outcome: the executor was still busy with the
		// job, and the same retry comes again after the delay.
		err := s.cfg.Store.LogSetAlarm(ctx, driver.LogSetAlarmParams{ID: l.ID, From: xjob.AlarmDefault, To: xjob.AlarmNoNeed})
		if err != nil && !errors.Is(err, xjob.ErrConflict) && !errors.Is(err, xjob.ErrNotFound) {
			return fmt.Errorf("callback deferred retry of log %d: %w", l.ID, err)
		}
		return nil
	}
	err := s.cfg.Store.LogSetAlarm(ctx, driver.LogSetAlarmParams{ID: l.ID, From: xjob.AlarmDefault, To: xjob.AlarmLocked})
	switch {
	case errors.Is(err, xjob.ErrConflict), errors.Is(err, xjob.ErrNotFound):
		return nil // another worker claimed it, or the log was purged
	case err != nil:
		return fmt.Errorf("callback alarm claim of log %d: %w", l.ID, err)
	}
	var alarmErr error
	if jr.found {
		alarmErr = s.cfg.Alarmer.Alarm(ctx, driver.Alarm{Job: jr.job, Log: l})
		if alarmErr != nil {
			s.cfg.Logger.LogAttrs(ctx, slog.LevelError, "job alarm failed",
				slog.Int64("jobId", l.JobID), slog.Int64("logId", l.ID), slog.String("error", alarmErr.Error()))
		}
	}
	status := AlarmOutcome(jr.found, alarmErr)
	if err := s.cfg.Store.LogSetAlarm(ctx, driver.LogSetAlarmParams{ID: l.ID, From: xjob.AlarmLocked, To: status}); err != nil {
		return fmt.Errorf("callback alarm status of log %d: %w", l.ID, err)
	}
	return nil
}

func (s *Service) send(ctx context.Context, tasks ...xjob.DispatchTask) error {
	return s.sendAt(ctx, 0, tasks...)
}

// sendAt queues tasks on the fast lane, visible at visibleAt (0: now).
func (s *Service) sendAt(ctx context.Context, visibleAt int64, tasks ...xjob.DispatchTask) error {
	msgs := make([]driver.Outgoing[xjob.DispatchTask], len(tasks))
	for i, t := range tasks {
		msgs[i] = driver.Outgoing[xjob.DispatchTask]{Msg: t, VisibleAt: visibleAt}
	}
	return s.cfg.Queues.Dispatch(xjob.LaneFast).Send(ctx, msgs)
}

// awaitTrigger waits, up to TriggerWait, for dispatch to record the trigger
// of l, a log whose result arrived first (a fast executor's callback can
// overtake the dispatcher's write of the /run reply), and returns the log
// as then stored. Alarming at once would send trigger code 0 and no
// trigger message. ok is false when the trigger is still not recorded and
// the log is younger than SweepGrace: the sweep completes it later, from
// the store. An older one (the sweep's own call) is completed as it is.
func (s *Service) awaitTrigger(ctx context.Context, l xjob.Log) (xjob.Log, bool) {
	old := func() bool { return l.TriggerTime <= s.cfg.Clock.Now().Add(-s.cfg.SweepGrace).UnixMilli() }
	if old() {
		return l, true // the sweep's call: the trigger had all that time
	}
	deadline := s.cfg.Clock.Now().Add(s.cfg.TriggerWait)
	for {
		fresh, err := s.cfg.Store.LogGet(ctx, l.ID)
		if err == nil {
			l = fresh
		}
		if l.Triggered() {
			return l, true
		}
		now := s.cfg.Clock.Now()
		if !now.Before(deadline) || s.cfg.Clock.SleepUntil(ctx, now.Add(triggerPoll)) != nil {
			break
		}
	}
	return l, old()
}

// Sweep is the fail monitor's backstop: it completes failed logs still
// unalarmed SweepGrace after their trigger (a crash between recording a
// failure and completing it). It returns how many logs it completed; run it
// every few seconds from a loop or a scheduled function.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	before := s.cfg.Clock.Now().Add(-s.cfg.SweepGrace).UnixMilli()
	logs, err := s.cfg.Store.LogsFailedUnalarmed(ctx, before, s.cfg.SweepLimit)
	if err != nil {
		return 0, fmt.Errorf("callback sweep: %w", err)
	}
	var errs []error
	n := 0
	for _, l := range logs {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if err := s.Complete(ctx, l); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// jobRef loads a log's job at most once per completion.
type jobRef struct {
	loaded bool
	found  bool
	job    xjob.Job
}

func (r *jobRef) load(ctx context.Context, st driver.JobStore, id int64) error {
	if r.loaded {
		return nil
	}
	j, err := st.JobGet(ctx, id)
	switch {
	case errors.Is(err, xjob.ErrNotFound):
	case err != nil:
		return fmt.Errorf("callback job get %d: %w", id, err)
	default:
		r.found, r.job = true, j
	}
	r.loaded = true
	return nil
}
