package callback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
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
	c.Clock = fallback.Clock(c.Clock)
	c.Logger = fallback.Logger(c.Logger)
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
	// logJobs is the store's LogJobs, found through its wrappers, or nil.
	logJobs LogJobser
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	return &Service{cfg: cfg, logJobs: logJobserOf(cfg.Store)}, nil
}

// logJobserOf returns st's LogJobs, looking through wrappers that expose
// the store they wrap with Unwrap (local mode's report batcher wraps the
// SQLite store, and an embedded interface does not carry the methods
// beyond it), or nil when no store in the chain has it.
func logJobserOf(st driver.Store) LogJobser {
	for st != nil {
		if lj, ok := st.(LogJobser); ok {
			return lj
		}
		u, ok := st.(interface{ Unwrap() driver.Store })
		if !ok {
			return nil
		}
		st = u.Unwrap()
	}
	return nil
}

// Callback records a batch of executor results (the body of POST
// /api/callback) and returns one error per item, nil for items recorded.
// A rejected item does not stop the others: xxl-job answers 200 to the
// executor regardless and only logs per-item failures.
//
// The batch is one unit of durable work (an executor's batch holds
// everything it finished since its last callback, up to thousands): its
// logs' job ids and jobs are read once (one LogJobs, or one LogGetMany
// and one JobGetMany), every result is recorded in one LogFinishMany, the
// report counters once per day; then each recorded log that has anything
// left to do is completed (children, retry, alarm), at most
// Config.Parallel at once. A repeat of a log id within the batch is
// recorded after the first, so the first result in the batch wins as it
// would one by one.
func (s *Service) Callback(ctx context.Context, items []protocol.HandleCallbackParam) []error {
	errs := make([]error, len(items))
	var ids []int64
	for i, it := range items {
		switch {
		case it.LogID <= 0:
			errs[i] = ErrLogNotFound
		case it.HandleCode == xjob.CodeNone:
			errs[i] = &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "handleCode", Message: "must not be 0"}}}
		default:
			ids = append(ids, it.LogID)
		}
	}
	if len(ids) > 0 {
		s.callbackMany(ctx, items, errs, ids, nil)
	}
	s.logRejected(ctx, items, errs)
	return errs
}

// rejectedSample is how many log ids the rejection summary names.
const rejectedSample = 5

// logRejected writes one warning line for all rejected items of a batch:
// their count, a count per reason and the first few log ids. One line per
// item let a batch of 20,000 made-up ids write 20,000 lines.
func (s *Service) logRejected(ctx context.Context, items []protocol.HandleCallbackParam, errs []error) {
	n := 0
	var sample []int64
	var reasons []string
	perReason := map[string]int{}
	for i, err := range errs {
		if err == nil {
			continue
		}
		n++
		if len(sample) < rejectedSample {
			sample = append(sample, items[i].LogID)
		}
		msg := err.Error()
		if perReason[msg] == 0 && len(reasons) < rejectedSample {
			reasons = append(reasons, msg)
		}
		perReason[msg]++
	}
	if n == 0 {
		return
	}
	var b strings.Builder
	for i, r := range reasons {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%d× %s", perReason[r], r)
	}
	s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "callback items rejected",
		slog.Int("rejected", n), slog.Int("items", len(items)),
		slog.Any("logIds", sample), slog.String("reasons", b.String()))
}

// LogJobser is what a store may offer the callback in place of reading
// the logs whole and then their jobs (sqlitestore does): for the logs
// among logIDs that exist, each one's job id, whether it has a result
// already, and those of their jobs that exist, read together. The jobs'
// slow-dispatch counters may be stale; nothing here reads them.
type LogJobser interface {
	LogJobs(ctx context.Context, logIDs []int64) (jobOf map[int64]int64, handled map[int64]bool, jobs []xjob.Job, err error)
}

// callbackMany records the items of a Callback that passed validation
// (errs[i] nil); ids are their log ids. ats, when not nil, are the items'
// handle times (default: now).
//
// Before recording, it needs each log's job id (a success's message
// names the job's children), whether the log has a result already (a
// repeat is answered at once, without a write) and, for successes, the
// job (to complete them): from LogJobs when the store has it, else from
// the logs read whole and JobGetMany. Whether a result is recorded — a
// repeat, a late result, a log another path finished since the read —
// is decided by LogFinishMany's condition.
func (s *Service) callbackMany(ctx context.Context, items []protocol.HandleCallbackParam, errs []error, ids []int64, ats []int64) {
	fail := func(err error) {
		for i := range items {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	var jobOf map[int64]int64
	var handled map[int64]bool
	var jobs map[int64]*jobRef
	if s.logJobs != nil {
		var found []xjob.Job
		var err error
		if jobOf, handled, found, err = s.logJobs.LogJobs(ctx, ids); err != nil {
			fail(fmt.Errorf("callback log jobs: %w", err))
			return
		}
		jobs = make(map[int64]*jobRef, len(found))
		refs := make([]jobRef, len(found)) // one allocation, not one a job
		for i := range found {
			refs[i] = jobRef{loaded: true, found: true, job: &found[i]}
			jobs[found[i].ID] = &refs[i]
		}
	} else {
		logs, err := s.cfg.Store.LogGetMany(ctx, ids)
		if err != nil {
			fail(fmt.Errorf("callback log get: %w", err))
			return
		}
		jobOf = make(map[int64]int64, len(logs))
		for _, l := range logs {
			jobOf[l.ID] = l.JobID
			if l.Handled() {
				if handled == nil {
					handled = map[int64]bool{}
				}
				handled[l.ID] = true
			}
		}
	}
	reqs := make([]finishReq, 0, len(ids))
	at := make([]int, 0, len(ids)) // at[k] is the item of reqs[k]
	for i, it := range items {
		if errs[i] != nil {
			continue
		}
		jobID, ok := jobOf[it.LogID]
		switch {
		case !ok:
			errs[i] = ErrLogNotFound
			continue
		case handled[it.LogID]:
			// A cheap early answer that keeps repeats off the writer;
			// correctness rests on LogFinishMany's condition.
			errs[i] = ErrRepeatCallback
			continue
		}
		r := finishReq{id: it.LogID, jobID: jobID, code: it.HandleCode, msg: it.HandleMsg}
		if ats != nil {
			r.at = ats[i]
		}
		reqs, at = append(reqs, r), append(at, i)
	}
	res := s.finishMany(ctx, reqs, jobs)
	for k := range res {
		errs[at[k]] = res[k].Err
	}
}

// finishReq is one result to record: for log id (of job jobID), code
// and msg. It names the log rather than carrying it: a batch holds
// thousands, and finishMany needs only these two fields of the log.
type finishReq struct {
	id, jobID int64
	code      int
	msg       string
	at        int64 // handle time (0: now)
}

// finishMany records the results of reqs in one LogFinishMany (after one
// JobGetMany for the child summaries of successes, unless read holds the
// jobs already), counts them in the report once per day, and completes
// each recorded log. The k-th result is reqs[k]'s: the finished log, or
// ErrRepeatCallback, ErrLogNotFound or a store error.
func (s *Service) finishMany(ctx context.Context, reqs []finishReq, read map[int64]*jobRef) []driver.LogFinished {
	if len(reqs) == 0 {
		return nil
	}
	fail := func(err error) []driver.LogFinished {
		out := make([]driver.LogFinished, len(reqs))
		for k := range out {
			out[k].Err = err
		}
		return out
	}
	var jobIDs []int64
	for _, r := range reqs {
		if r.code == xjob.CodeSuccess {
			jobIDs = append(jobIDs, r.jobID)
		}
	}
	jobs := map[int64]*jobRef{}
	switch {
	case len(jobIDs) > 0 && read != nil:
		// Only successes are completed with the job read before the
		// write; a failure reads its job when it completes (it may first
		// wait for its trigger to be recorded).
		for _, id := range jobIDs {
			if jr := read[id]; jr != nil {
				jobs[id] = jr
			} else {
				jobs[id] = &jobRef{loaded: true}
			}
		}
	case len(jobIDs) > 0:
		slices.Sort(jobIDs)
		jobIDs = slices.Compact(jobIDs)
		found, err := s.cfg.Store.JobGetMany(ctx, jobIDs)
		if err != nil {
			return fail(fmt.Errorf("callback job get: %w", err))
		}
		for _, id := range jobIDs {
			jobs[id] = &jobRef{loaded: true}
		}
		for i := range found {
			jobs[found[i].ID] = &jobRef{loaded: true, found: true, job: &found[i]}
		}
	}
	now := clock.Millis(s.cfg.Clock)
	ps := make([]driver.LogFinishParams, len(reqs))
	for k, r := range reqs {
		summary := ""
		if jr := jobs[r.jobID]; r.code == xjob.CodeSuccess && jr.found {
			summary = ChildSummary(jr.job.ChildJobIDs)
		}
		ht := now
		if r.at > 0 {
			ht = r.at
		}
		ps[k] = driver.LogFinishParams{ID: r.id, HandleTime: ht, HandleCode: r.code, HandleMsg: HandleMsg(ResultMsg(r.code, r.msg), summary)}
	}
	// On Sparse's direct path ctx carries driver.OneRound: a page another
	// environment changed first is not retried here but recorded on the
	// queue.
	res, err := s.cfg.Store.LogFinishMany(ctx, ps)
	if err != nil {
		return fail(fmt.Errorf("callback log finish: %w", err))
	}
	if len(res) != len(reqs) {
		return fail(fmt.Errorf("callback log finish: %d results for %d logs", len(res), len(reqs)))
	}
	// The results are answered in place: a second array of finished logs
	// was the callback's second largest allocation.
	out := res
	type counter struct {
		day   string
		group int64
	}
	days := map[counter]*xjob.ReportDay{}
	var done []int
	for k := range out {
		r := &out[k]
		switch {
		case errors.Is(r.Err, xjob.ErrConflict):
			r.Err = ErrRepeatCallback
			continue
		case errors.Is(r.Err, xjob.ErrNotFound):
			r.Err = ErrLogNotFound
			continue
		case r.Err != nil:
			r.Err = fmt.Errorf("callback log finish: %w", r.Err)
			continue
		}
		done = append(done, k)
		s.cfg.Metrics.Result(r.Log.HandleCode)
		s.cfg.Metrics.JobResult(r.Log.JobID, r.Log.HandleCode)
		if l := r.Log; l.TriggerTime > 0 && l.HandleTime >= l.TriggerTime {
			s.cfg.Metrics.CallbackLatency(time.Duration(l.HandleTime-l.TriggerTime) * time.Millisecond)
		}
		if d := FinishDelta(r.Log); !d.Empty() {
			k := counter{d.Day, d.GroupID}
			sum := days[k]
			if sum == nil {
				sum = &xjob.ReportDay{Day: d.Day, GroupID: d.GroupID}
				days[k] = sum
			}
			sum.Add(d)
		}
	}
	for _, d := range days {
		if err := s.cfg.Store.ReportAdd(ctx, *d); err != nil {
			s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "report counters not updated",
				slog.String("day", d.Day), slog.String("error", err.Error()))
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, s.cfg.Parallel)
	for _, k := range done {
		if idle(out[k].Log, jobs[out[k].Log.JobID]) {
			continue // most of a steady second's results: no goroutine for nothing
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			// Each completion gets its own copy: completing may load or
			// forget the job (a ONCE job deleted after its run).
			var jr jobRef
			if shared := jobs[out[k].Log.JobID]; shared != nil {
				jr = *shared
			}
			out[k].Err = s.complete(ctx, out[k].Log, &jr)
		})
	}
	wg.Wait()
	return out
}

// idle reports whether completing l with its job as jr would do nothing:
// a success whose job is read and is gone, or has no children, no fixed
// delay to plan and no one-time run to end. It follows complete's three
// steps: triggerChildren, rescheduleFixDelay and afterCompletion.
func idle(l xjob.Log, jr *jobRef) bool {
	if !l.Handled() || l.HandleCode != xjob.CodeSuccess || jr == nil || !jr.loaded {
		return false
	}
	if !jr.found {
		return true
	}
	j := jr.job
	return len(j.ChildJobIDs) == 0 && j.ScheduleType != xjob.ScheduleFixDelay && j.ScheduleType != xjob.ScheduleOnce
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
	r := s.finishMany(ctx, []finishReq{{id: l.ID, jobID: l.JobID, code: code, msg: msg}}, nil)[0]
	return r.Log, r.Err
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
	var err error
	switch {
	case l.Handled() && l.HandleCode == xjob.CodeSuccess:
		err = s.triggerChildren(ctx, l, jr)
	case l.Failed():
		err = s.handleFailure(ctx, l, jr)
	}
	if err != nil {
		return err
	}
	if err := s.rescheduleFixDelay(ctx, l, jr); err != nil {
		return err
	}
	return s.afterCompletion(ctx, l, jr)
}

// afterCompletion deletes a ONCE job whose afterCompletion is DELETE once
// its scheduled run has a final result: success, or a failure (of the
// trigger or of the run) with no retry left — after the children are
// triggered and the alarm is sent, which read the job. "After it fires" is
// this moment rather than the dispatch, so that retries and the alarm
// still find the job. A manual or child run does not end the job, nor
// does a run of an instant the job no longer has (a person moved the
// instant later: the schedule still fires after the run's trigger time).
// KEEP needs nothing here: the scan stopped the job when it pushed the fire.
func (s *Service) afterCompletion(ctx context.Context, l xjob.Log, jr *jobRef) error {
	if !finalResult(l) || !EndsOnceJob(l.TriggerType) {
		return nil
	}
	if err := jr.load(ctx, s.cfg.Store, l.JobID); err != nil {
		return err
	}
	j := jr.job
	if !jr.found || j.ScheduleType != xjob.ScheduleOnce || j.AfterCompletion != xjob.AfterDelete {
		return nil
	}
	sched, err := j.Schedule()
	if err != nil {
		return nil // not a ONCE instant any more: nothing to end
	}
	if _, more := sched.Next(time.UnixMilli(l.TriggerTime)); more {
		return nil
	}
	if err := s.cfg.Store.JobDelete(ctx, j.ID); err != nil && !errors.Is(err, xjob.ErrNotFound) {
		return fmt.Errorf("callback delete of completed job %d: %w", j.ID, err)
	}
	s.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "one-time job completed and deleted",
		slog.Int64("jobId", j.ID), slog.Int64("logId", l.ID))
	jr.found = false
	return nil
}

// EndsOnceJob reports whether a run of this trigger type can be the one
// run of a ONCE job: its scheduled fire (on time or by the misfire
// strategy) or a retry of it.
func EndsOnceJob(t xjob.TriggerType) bool {
	return t == xjob.TriggerCron || t == xjob.TriggerMisfire || t == xjob.TriggerRetry
}

func (s *Service) triggerChildren(ctx context.Context, l xjob.Log, jr *jobRef) error {
	if err := jr.load(ctx, s.cfg.Store, l.JobID); err != nil {
		return err
	}
	if !jr.found {
		return nil
	}
	children := jr.job.ChildJobIDs
	if len(children) == 0 {
		return nil
	}
	children, stop, err := s.childGuard(ctx, l, children)
	if err != nil {
		return err
	}
	if stop != "" {
		s.cfg.Logger.LogAttrs(ctx, slog.LevelError, "child job chain stopped", slog.Int64("jobId", l.JobID),
			slog.Int64("logId", l.ID), slog.String("reason", stop))
		stopped := l
		stopped.HandleMsg = "Child jobs not triggered: " + stop
		if err := s.cfg.Alarmer.Alarm(ctx, driver.Alarm{Job: *jr.job, Log: stopped}); err != nil {
			s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "child job chain alarm failed", slog.Int64("logId", l.ID),
				slog.String("error", err.Error()))
		}
	}
	tasks := ChildTasks(l, children, clock.Millis(s.cfg.Clock))
	if len(tasks) == 0 {
		return nil
	}
	if err := s.send(ctx, tasks...); err != nil {
		return fmt.Errorf("callback child trigger of log %d: %w", l.ID, err)
	}
	return nil
}

// MaxChildDepth bounds a chain of child triggers: a job started by a
// parent that was itself started by a parent, and so on, this many levels
// deep triggers no further children. Cycles are refused when jobs are
// saved, but a store restored from elsewhere or edited by hand may hold
// one, and a cycle would trigger forever.
const MaxChildDepth = 16

// childGuard walks l's chain of parent logs (PARENT triggers name their
// parent log) and returns the children that may run: none when the chain
// is MaxChildDepth deep, and never a job already in the chain (it would
// revisit itself). stop says what was held back, "" when nothing.
func (s *Service) childGuard(ctx context.Context, l xjob.Log, children []int64) ([]int64, string, error) {
	chain := map[int64]bool{l.JobID: true}
	cur := l
	for depth := 1; ; depth++ {
		if depth >= MaxChildDepth {
			return nil, fmt.Sprintf("the chain of child jobs is %d deep (at most %d)", depth, MaxChildDepth), nil
		}
		parentID := ParentLogID(cur)
		if parentID == 0 {
			break
		}
		parent, err := s.cfg.Store.LogGet(ctx, parentID)
		if errors.Is(err, xjob.ErrNotFound) {
			break // purged: the chain is older than the log retention
		}
		if err != nil {
			return nil, "", fmt.Errorf("callback child chain of log %d: %w", l.ID, err)
		}
		chain[parent.JobID] = true
		cur = parent
	}
	var keep []int64
	var cycle []string
	for _, c := range children {
		if chain[c] {
			cycle = append(cycle, strconv.FormatInt(c, 10))
			continue
		}
		keep = append(keep, c)
	}
	if len(cycle) > 0 {
		return keep, "job " + strings.Join(cycle, ", ") + " already ran in this chain of child jobs (a cycle)", nil
	}
	return keep, "", nil
}

// ParentLogID is the id of the log whose success triggered l (a PARENT
// trigger's occurrence names it), or 0.
func ParentLogID(l xjob.Log) int64 { return refLogID(l, xjob.TriggerParent) }

// RetriedLogID is the id of the failed log a RETRY log repeats (its
// occurrence names it), or 0.
func RetriedLogID(l xjob.Log) int64 { return refLogID(l, xjob.TriggerRetry) }

// refLogID is the log id l's occurrence refers to (its "r<id>" part,
// fire.Occurrence.ID) when l is of trigger type typ, or 0.
func refLogID(l xjob.Log, typ xjob.TriggerType) int64 {
	if l.TriggerType != typ {
		return 0
	}
	for part := range strings.SplitSeq(l.OccurrenceID, "/") {
		if ref, ok := strings.CutPrefix(part, "r"); ok {
			if id, err := strconv.ParseInt(ref, 10, 64); err == nil && id > 0 {
				return id
			}
		}
	}
	return 0
}

// finalResult reports whether l's result ends its run: a success, or a
// failure (of the trigger or of the run) with no retry left. A failure
// that is retried is not the end; the retry's result is.
func finalResult(l xjob.Log) bool {
	return (l.Handled() && l.HandleCode == xjob.CodeSuccess) || (l.Failed() && l.ExecutorFailRetryCount <= 0)
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
		alarmErr = s.cfg.Alarmer.Alarm(ctx, driver.Alarm{Job: *jr.job, Log: l})
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

func (s *Service) send(ctx context.Context, tasks ...fire.DispatchTask) error {
	return s.sendAt(ctx, 0, tasks...)
}

// sendAt queues tasks on the fast lane, visible at visibleAt (0: now).
func (s *Service) sendAt(ctx context.Context, visibleAt int64, tasks ...fire.DispatchTask) error {
	msgs := make([]driver.Outgoing[fire.DispatchTask], len(tasks))
	for i, t := range tasks {
		msgs[i] = driver.Outgoing[fire.DispatchTask]{Msg: t, VisibleAt: visibleAt}
	}
	return s.cfg.Queues.Dispatch(fire.LaneFast).Send(ctx, msgs)
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

// jobRef loads a log's job at most once per completion. job points into
// the jobs a batch read (shared by its completions, which only read it):
// copied into each ref, a steady second's jobs were the callback's
// largest allocation. It is set (not nil) when found.
type jobRef struct {
	loaded bool
	found  bool
	job    *xjob.Job
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
		r.found, r.job = true, &j
	}
	r.loaded = true
	return nil
}
