package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/egress"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/schedule"
)

// Preview limits: how many fire times one preview may ask for.
const (
	DefaultPreviewCount = 5 // xxl-job's "next trigger time" shows 5
	MaxPreviewCount     = 100
)

// CreateJob validates and stores a new job. Only the fields a person sets
// are taken from in: id, version, revision, shard and the trigger times are
// the service's, and TriggerStatus may be 0 (stopped) or 1 (running). A job
// created running first fires at its first fire time after now, even inside
// the scan's horizon (see pushWindow). Job ids must fit an
// int32, because xxl-job executors parse jobId as a Java int; an insert
// beyond that is undone and refused.
func (s *Service) CreateJob(ctx context.Context, in xjob.Job) (xjob.Job, error) {
	in.ID = 0
	in.Declared = "" // only an executor's declaration records one
	in.Applied = ""  // only an apply records one
	out, err := s.createJob(ctx, in)
	return redact(out), err
}

// createJob is CreateJob keeping in.ID when it is not 0 (an apply or an
// import keeping ids); a taken id is xjob.ErrConflict.
func (s *Service) createJob(ctx context.Context, in xjob.Job) (xjob.Job, error) {
	now := s.now()
	j := in
	if j.ID < 0 || j.ID > math.MaxInt32 {
		return xjob.Job{}, invalid("id", "%d is not a job id (1 to %d)", j.ID, math.MaxInt32)
	}
	j.Shard, j.Version, j.Revision = 0, 0, 0
	j.SlowMinute, j.SlowCount = 0, 0
	j.TriggerLastTime, j.TriggerNextTime = 0, 0
	j.CreatedAt, j.UpdatedAt, j.GlueUpdatedAt = now, now, now
	j.ApplyDefaults()
	if err := s.checkJob(ctx, &j); err != nil {
		return xjob.Job{}, err
	}
	if err := s.prepareTarget(ctx, &j, ""); err != nil {
		return xjob.Job{}, err
	}
	if j.TriggerStatus == xjob.StatusRunning {
		next, err := s.firstFire(&j, now)
		if err != nil {
			return xjob.Job{}, err
		}
		j.TriggerNextTime = next
	}
	out, err := s.cfg.Store.JobInsert(ctx, j)
	if err != nil {
		return xjob.Job{}, fmt.Errorf("admin job create: %w", err)
	}
	if out.ID > math.MaxInt32 {
		if err := s.cfg.Store.JobDelete(ctx, out.ID); err != nil {
			return xjob.Job{}, fmt.Errorf("admin job create: job id %d exceeds int32 and could not be removed: %w", out.ID, err)
		}
		return xjob.Job{}, fmt.Errorf("admin job create: job ids are exhausted (id %d does not fit the int32 jobId executors expect): %w",
			out.ID, xjob.ErrConflict)
	}
	return s.pushWindow(ctx, out, now), nil
}

// GetJob returns one job.
func (s *Service) GetJob(ctx context.Context, id int64) (xjob.Job, error) {
	j, err := s.cfg.Store.JobGet(ctx, id)
	if err != nil {
		return xjob.Job{}, mapNotFound(err, "job", id, "admin job get")
	}
	return redact(j), nil
}

// ListJobsParams filters ListJobs. Zero values match everything; the text
// filters match substrings.
type ListJobsParams struct {
	// GroupID limits the list to one executor group (0: every group).
	GroupID int64
	// Status limits it to stopped or running jobs (nil: both).
	Status      *xjob.TriggerStatus
	Description string
	Handler     string
	Author      string
	// Cursor is the Next of the previous page ("" for the first page).
	Cursor string
	// Limit is the most jobs in a page; the backend applies its own
	// default (when 0) and cap.
	Limit int
}

// JobPage is one page of jobs in id order; Next is the cursor of the
// following page, empty at the end.
type JobPage struct {
	Jobs []xjob.Job
	Next string
}

// ListJobs pages through jobs in id order.
func (s *Service) ListJobs(ctx context.Context, p ListJobsParams) (JobPage, error) {
	page, err := s.cfg.Store.JobList(ctx, driver.JobListParams{GroupID: p.GroupID, Status: p.Status,
		Description: p.Description, Handler: p.Handler, Author: p.Author, Cursor: p.Cursor, Limit: p.Limit})
	if err != nil {
		return JobPage{}, fmt.Errorf("admin job list: %w", err)
	}
	return JobPage{Jobs: redactAll(page.Jobs), Next: page.Next}, nil
}

// UpdateJobParams is the input of UpdateJob.
type UpdateJobParams struct {
	// Job holds the new field values; Job.ID names the job. Status and
	// trigger times are not edited here (StartJob, StopJob).
	Job xjob.Job
	// Version, when not 0, is the version the caller read: the update is
	// refused with xjob.ErrConflict if the job changed since. With 0 the
	// update applies to the latest version.
	Version int64
}

// UpdateJob edits a job as xxl-job's /jobinfo/update does: the glue type
// cannot change; the group and every child job must exist; an edit that
// changes what or when the job fires bumps its Revision. A running job so
// edited is re-planned from now: its next fire time is the new schedule's
// first after now (or, schedule unchanged, the first after now on its
// current cadence, since the fires already on the ring are dropped by
// revision), and the fires within the scan's horizon are pushed at once.
//
// A GLUE job whose source changes gets a saved version (the job's
// GlueRemark as its remark), the newest xjob.MaxGlueVersions kept, whichever
// way the edit came (console, /v1, CLI): xxl-job's GLUE history.
func (s *Service) UpdateJob(ctx context.Context, p UpdateJobParams) (xjob.Job, error) {
	if len(p.Job.ChildJobIDs) > 0 {
		s.childEdits.Lock()
		defer s.childEdits.Unlock()
		release, err := s.lockChildGraph(ctx)
		if err != nil {
			return xjob.Job{}, err
		}
		defer release()
	}
	var glueChanged bool
	out, err := s.editJob(ctx, p.Job.ID, p.Version, func(old xjob.Job, now int64) (xjob.Job, bool, error) {
		glueChanged = false
		n := p.Job
		n.ID, n.Shard, n.Version, n.Revision = old.ID, old.Shard, old.Version, old.Revision
		n.SlowMinute, n.SlowCount = old.SlowMinute, old.SlowCount
		n.TriggerStatus, n.TriggerLastTime, n.TriggerNextTime = old.TriggerStatus, old.TriggerLastTime, old.TriggerNextTime
		n.CreatedAt, n.UpdatedAt = old.CreatedAt, now
		n.Declared = old.Declared // the executor's, not the editor's
		n.Applied = old.Applied   // the manifest's, not the editor's
		switch {
		case n.GlueType == "":
			n.GlueType = old.GlueType
		case n.GlueType != old.GlueType:
			return xjob.Job{}, false, invalid("glueType", "cannot change after creation (job is %s)", old.GlueType)
		}
		n.ApplyDefaults()
		n.GlueUpdatedAt = old.GlueUpdatedAt
		if err := s.checkJob(ctx, &n); err != nil {
			return xjob.Job{}, false, err
		}
		if err := s.prepareTarget(ctx, &n, old.GlueSource); err != nil {
			return xjob.Job{}, false, err
		}
		if n.GlueSource != old.GlueSource {
			n.GlueUpdatedAt = now // executors rebuild the handler on the next trigger
			glueChanged = n.GlueType.Script()
		}
		if old.ScheduleChanged(&n) {
			n.Revision = old.Revision + 1
		}
		switch {
		case n.TriggerStatus != xjob.StatusRunning:
		case timingChanged(&old, &n):
			next, err := s.firstFire(&n, now)
			if err != nil {
				return xjob.Job{}, false, err
			}
			n.TriggerNextTime = next
		case n.Revision != old.Revision:
			n.TriggerNextTime = resumeAt(&old, now)
		}
		return n, true, nil
	})
	if err != nil || !glueChanged {
		return redact(out), err
	}
	if err := s.cfg.Store.GlueVersionAdd(ctx, xjob.GlueVersion{JobID: out.ID, GlueType: out.GlueType,
		Source: out.GlueSource, Remark: out.GlueRemark, CreatedAt: out.GlueUpdatedAt}, xjob.MaxGlueVersions); err != nil {
		return redact(out), fmt.Errorf("admin job %d: save GLUE version: %w", out.ID, err)
	}
	return redact(out), nil
}

// timingChanged reports an edit of when the job fires (xxl-job's
// scheduleDataChanged, plus the time zone).
func timingChanged(old, n *xjob.Job) bool {
	return old.ScheduleType != n.ScheduleType || old.ScheduleConf != n.ScheduleConf || old.TimeZone != n.TimeZone
}

// StartJob sets a job running with its first fire after now (pushed at
// once if it is within the scan's horizon). A job with schedule type NONE,
// or whose schedule has no fire time after now (a past ONCE instant),
// cannot be started. Starting a running job changes nothing.
func (s *Service) StartJob(ctx context.Context, id int64) (xjob.Job, error) {
	out, err := s.startJob(ctx, id, nil)
	return redact(out), err
}

// startJob is StartJob; with later set, the push of the started job's
// first fires is left to the caller (pushLater), which pushes a batch of
// started jobs together.
func (s *Service) startJob(ctx context.Context, id int64, later *pushBatch) (xjob.Job, error) {
	return s.editJobPush(ctx, id, 0, later, func(old xjob.Job, now int64) (xjob.Job, bool, error) {
		if old.TriggerStatus == xjob.StatusRunning {
			return old, false, nil
		}
		n := old
		next, err := s.firstFire(&n, now)
		if err != nil {
			return xjob.Job{}, false, err
		}
		n.TriggerStatus, n.TriggerLastTime, n.TriggerNextTime = xjob.StatusRunning, 0, next
		n.Revision, n.UpdatedAt = old.Revision+1, now
		return n, true, nil
	})
}

// StopJob stops a job: status 0, last and next fire times 0, revision
// bumped so that occurrences already on the ring are dropped. Stopping a
// stopped job changes nothing.
func (s *Service) StopJob(ctx context.Context, id int64) (xjob.Job, error) {
	out, err := s.stopJob(ctx, id)
	return redact(out), err
}

func (s *Service) stopJob(ctx context.Context, id int64) (xjob.Job, error) {
	return s.editJob(ctx, id, 0, func(old xjob.Job, now int64) (xjob.Job, bool, error) {
		if old.TriggerStatus == xjob.StatusStopped {
			return old, false, nil
		}
		n := old
		n.TriggerStatus, n.TriggerLastTime, n.TriggerNextTime = xjob.StatusStopped, 0, 0
		n.Revision, n.UpdatedAt = old.Revision+1, now
		return n, true, nil
	})
}

// editJob runs a read-modify-write of job id through the store's
// version-conditional update. edit returns the new job and whether to
// write it. When the caller named no version, a write lost to another
// writer (typically the scan advancing the job) is retried on a fresh read.
func (s *Service) editJob(ctx context.Context, id, version int64,
	edit func(old xjob.Job, now int64) (xjob.Job, bool, error)) (xjob.Job, error) {
	return s.editJobPush(ctx, id, version, nil, edit)
}

// editJobPush is editJob; with later set, a job whose schedule changed is
// appended to *later instead of being pushed at once (see pushLater).
func (s *Service) editJobPush(ctx context.Context, id, version int64, later *pushBatch,
	edit func(old xjob.Job, now int64) (xjob.Job, bool, error)) (xjob.Job, error) {
	mu := &s.edits[uint64(id)%uint64(len(s.edits))]
	mu.Lock()
	defer mu.Unlock()
	for attempt := 0; ; attempt++ {
		old, err := s.cfg.Store.JobGet(ctx, id)
		if err != nil {
			return xjob.Job{}, mapNotFound(err, "job", id, "admin job read")
		}
		if version != 0 && version != old.Version {
			return xjob.Job{}, staleVersion("job", id, version)
		}
		now := s.now()
		n, write, err := edit(old, now)
		if err != nil || !write {
			return n, err
		}
		out, err := s.cfg.Store.JobUpdate(ctx, driver.JobUpdateParams{Job: n, ExpectVersion: old.Version})
		switch {
		case err == nil && out.Revision != old.Revision && later != nil:
			later.add(pendingPush{job: out, now: now})
			return out, nil
		case err == nil && out.Revision != old.Revision:
			return s.pushWindow(ctx, out, now), nil
		case err == nil:
			return out, nil
		case errors.Is(err, xjob.ErrConflict) && version == 0 && attempt < maxRetries:
			continue
		case errors.Is(err, xjob.ErrConflict):
			return xjob.Job{}, staleVersion("job", id, old.Version)
		default:
			return xjob.Job{}, mapNotFound(err, "job", id, "admin job update")
		}
	}
}

// checkJob validates j and checks that its group and child jobs exist.
func (s *Service) checkJob(ctx context.Context, j *xjob.Job) error {
	// Every problem at once: the field rules, then the references (a bad
	// e-mail and an unknown child are both reported).
	var problems []xjob.FieldProblem
	if err := j.Validate(); err != nil {
		var ve *xjob.ValidationError
		if !errors.As(err, &ve) {
			return err
		}
		problems = append(problems, ve.Problems...)
	}
	hasProblem := func(field string) bool {
		return slices.ContainsFunc(problems, func(p xjob.FieldProblem) bool { return p.Field == field })
	}
	if !hasProblem("jobGroup") {
		if _, err := s.cfg.Store.GroupGet(ctx, j.GroupID); errors.Is(err, xjob.ErrNotFound) {
			problems = append(problems, xjob.FieldProblem{Field: "jobGroup",
				Message: fmt.Sprintf("executor group %d does not exist", j.GroupID)})
		} else if err != nil {
			return fmt.Errorf("admin job check group: %w", err)
		}
	}
	if len(j.ChildJobIDs) > 0 && !hasProblem("childJobIds") {
		found, err := s.cfg.Store.JobGetMany(ctx, j.ChildJobIDs)
		if err != nil {
			return fmt.Errorf("admin job check children: %w", err)
		}
		for _, id := range j.ChildJobIDs {
			if !slices.ContainsFunc(found, func(c xjob.Job) bool { return c.ID == id }) {
				problems = append(problems, xjob.FieldProblem{Field: "childJobIds",
					Message: fmt.Sprintf("job %d does not exist", id)})
			}
		}
	}
	if len(problems) > 0 {
		return &xjob.ValidationError{Problems: problems}
	}
	return s.checkChildCycle(ctx, j)
}

// checkChildCycle refuses child jobs that lead back to j: a cycle (A→B→A,
// or A→A) would trigger its jobs in turn forever. It walks the stored
// child graph breadth-first from j's new children, one JobGetMany per
// level, with j's stored children replaced by the new ones; a new job (id
// 0) cannot be reached by anything yet. UpdateJob holds childEdits and the
// child-graph lease (lockChildGraph) from this check to the write, so two
// concurrent edits that each close half of a cycle cannot both pass, in
// one process or in several sharing a store.
func (s *Service) checkChildCycle(ctx context.Context, j *xjob.Job) error {
	if j.ID == 0 || len(j.ChildJobIDs) == 0 {
		return nil
	}
	seen := map[int64]bool{}
	path := map[int64]int64{} // child → the job that named it, to report the cycle
	var level []int64
	for _, c := range j.ChildJobIDs {
		if !seen[c] {
			seen[c], path[c] = true, j.ID
			level = append(level, c)
		}
	}
	for len(level) > 0 {
		if seen[j.ID] {
			break
		}
		jobs, err := s.cfg.Store.JobGetMany(ctx, level)
		if err != nil {
			return fmt.Errorf("admin job check child cycle: %w", err)
		}
		level = level[:0:0]
		for _, c := range jobs {
			for _, gc := range c.ChildJobIDs {
				if !seen[gc] {
					seen[gc], path[gc] = true, c.ID
					level = append(level, gc)
				}
			}
		}
	}
	if !seen[j.ID] {
		return nil
	}
	// Walk back from j to j: path[x] is the job that names x.
	cycle := []int64{j.ID}
	for x := path[j.ID]; x != j.ID && len(cycle) <= len(seen); x = path[x] {
		cycle = append(cycle, x)
	}
	cycle = append(cycle, j.ID)
	slices.Reverse(cycle)
	parts := make([]string, len(cycle))
	for i, id := range cycle {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return invalid("childJobIds", "child jobs form a cycle (%s): each would trigger the next forever",
		strings.Join(parts, " → "))
}

// firstFire is the first fire time of a job started (or rescheduled) at
// now: the first strictly after now. pushWindow then pushes it if the scan
// may already have planned past it.
func (s *Service) firstFire(j *xjob.Job, now int64) (int64, error) {
	if j.ScheduleType == xjob.ScheduleNone {
		return 0, invalid("scheduleType", "a job with schedule type NONE cannot be started")
	}
	sched, err := j.Schedule()
	if err != nil {
		return 0, invalid("scheduleConf", "%v", err)
	}
	next, ok := sched.Next(time.UnixMilli(now))
	if !ok {
		return 0, invalid("scheduleConf", "the schedule has no fire time after now")
	}
	return next.UnixMilli(), nil
}

// resumeAt is where a running job whose schedule did not change, but whose
// revision did (a route or misfire edit), resumes at now: the first fire
// after now on its current cadence. The scan has pushed the fires up to
// TriggerNextTime under the old revision and the ring will drop them, so
// they are planned again. A FIX_RATE job keeps its phase (its fires are
// TriggerNextTime - k·interval); a cron or ONCE schedule is absolute. A
// job already overdue keeps its next time: the scan handles it (late fire
// or misfire strategy).
//
// A FIX_DELAY job keeps its next time, whether planned after a run or the
// lost-run fallback of one still out (firing earlier could overlap the
// run), except that a fire the scan pushed for later than now, which the
// ring will drop, is planned again.
func resumeAt(j *xjob.Job, now int64) int64 {
	next := j.TriggerNextTime
	if next <= now {
		return next
	}
	sched, err := j.Schedule()
	if err != nil {
		return next
	}
	if _, ok := sched.(schedule.FixDelay); ok {
		if j.TriggerLastTime > now {
			return j.TriggerLastTime
		}
		return next
	}
	if fr, ok := sched.(schedule.FixRate); ok {
		iv := fr.Interval.Milliseconds()
		return next - (next-now-1)/iv*iv
	}
	if t, ok := sched.Next(time.UnixMilli(now)); ok && t.UnixMilli() < next {
		return t.UnixMilli()
	}
	return next
}

// pendingPush is a job written running whose push pushLater does.
type pendingPush struct {
	job xjob.Job
	now int64 // when it was written
}

// pushBatch collects pendingPushes from concurrent edits.
type pushBatch struct {
	mu   sync.Mutex
	jobs []pendingPush
}

func (b *pushBatch) add(p pendingPush) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.jobs = append(b.jobs, p)
}

// pushLater pushes the fires within the scan's horizon of jobs written
// one after the other (a bulk start) in one Push, planned from the
// earliest write: their occurrences share ring buckets — one message per
// shard and second for the batch, not one per job and second, which for a
// thousand every-second jobs on AWS (a 150 s horizon) is 600 messages
// instead of 150,000. A failure is logged: the jobs are stored due, so
// the scan plans them on its next tick.
func (s *Service) pushLater(ctx context.Context, b *pushBatch) {
	b.mu.Lock()
	pending := b.jobs
	b.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	now := pending[0].now
	for _, p := range pending {
		now = min(now, p.now)
	}
	var jobs []xjob.Job
	for _, p := range pending {
		j := p.job
		if j.TriggerStatus == xjob.StatusRunning && j.TriggerNextTime > now && j.TriggerNextTime <= now+s.push.Horizon() {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		return
	}
	st, err := s.push.Push(ctx, jobs, now)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "admin: push of the fires within the scan horizon failed; the scan will plan them",
			"jobs", len(jobs), "err", err)
		return
	}
	if st.Conflicts > 0 {
		s.cfg.Logger.DebugContext(ctx, "admin: jobs advanced by another writer after their push", "conflicts", st.Conflicts)
	}
}

// pushWindow does the scan's step for one job the admin has just written
// running with its real next fire time: the fires within the scan's horizon
// of now go onto the ring now, and the job is advanced past the horizon
// (conditionally on its version, as the scan does). It returns the job as
// stored afterwards. A failure is logged, not returned: the job is already
// stored due at its next fire time, so the scan plans it on its next tick.
func (s *Service) pushWindow(ctx context.Context, j xjob.Job, now int64) xjob.Job {
	if j.TriggerStatus != xjob.StatusRunning || j.TriggerNextTime <= now ||
		j.TriggerNextTime > now+s.push.Horizon() {
		return j // nothing inside the horizon: the scan plans it in time
	}
	st, err := s.push.Push(ctx, []xjob.Job{j}, now)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "admin: push of the fires within the scan horizon failed; the scan will plan them",
			"job", j.ID, "err", err)
		return j
	}
	if st.Conflicts > 0 {
		s.cfg.Logger.DebugContext(ctx, "admin: job advanced by another writer after its push", "job", j.ID)
	}
	out, err := s.cfg.Store.JobGet(ctx, j.ID)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "admin: re-read after push", "job", j.ID, "err", err)
		return j
	}
	return out
}

// DeleteJob removes a job and its saved GLUE versions. Its logs stay until retention purges them;
// occurrences already queued are dropped by dispatch ("job deleted").
// Deleting a job an executor declared retires its declaration, so the
// executor's next start does not bring it back (unless its declaration
// has changed by then; see DeclareJobs).
func (s *Service) DeleteJob(ctx context.Context, id int64) error {
	j, err := s.cfg.Store.JobGet(ctx, id)
	if err != nil {
		return mapNotFound(err, "job", id, "admin job delete")
	}
	if j.Declared != "" && j.Name != "" {
		if err := s.cfg.Store.DeclarationRetire(ctx, j.Name, j.Declared); err != nil {
			return fmt.Errorf("admin job delete %d: %w", id, err)
		}
	}
	return s.deleteJob(ctx, id)
}

// deleteJob removes a job and its GLUE versions without retiring its
// declaration (the duplicate of a declare race, see keepLowest).
func (s *Service) deleteJob(ctx context.Context, id int64) error {
	if err := s.cfg.Store.JobDelete(ctx, id); err != nil {
		return mapNotFound(err, "job", id, "admin job delete")
	}
	if err := s.cfg.Store.GlueVersionDeleteJob(ctx, id); err != nil {
		return fmt.Errorf("admin job %d deleted, its GLUE versions not: %w", id, err)
	}
	return nil
}

// TriggerParams is the input of TriggerJob.
type TriggerParams struct {
	JobID int64
	// Param, when set, replaces the job's param for this trigger.
	Param *string
	// AddressList, when set, replaces the group's executors for this
	// trigger (as if the group were manual with this list).
	AddressList []string
}

// TriggerResult names the occurrence a manual trigger enqueued.
type TriggerResult struct {
	JobID int64 `json:"jobId"`
	// OccurrenceID is the id of the trigger's log (of shard 0 for a
	// broadcast job, whose other shards end in /s1, /s2…).
	OccurrenceID string `json:"occurrenceId"`
}

// TriggerJob enqueues one MANUAL trigger of a job on the fast dispatch
// lane. A stopped job may be triggered, as in xxl-job.
func (s *Service) TriggerJob(ctx context.Context, p TriggerParams) (TriggerResult, error) {
	if len(p.AddressList) > xjob.MaxAddresses {
		return TriggerResult{}, invalid("addressList", "at most %d addresses", xjob.MaxAddresses)
	}
	task := fire.DispatchTask{
		Occurrence:  fire.Occurrence{JobID: p.JobID, Type: xjob.TriggerManual, Ref: s.cfg.NewRequestID()},
		Param:       p.Param,
		AddressList: p.AddressList,
		EnqueuedAt:  s.now(),
	}
	if err := task.Validate(); err != nil {
		return TriggerResult{}, err
	}
	j, err := s.cfg.Store.JobGet(ctx, p.JobID)
	if err != nil {
		return TriggerResult{}, mapNotFound(err, "job", p.JobID, "admin job trigger")
	}
	if len(p.AddressList) > 0 && !s.cfg.AnyTriggerAddress {
		if err := s.checkOverride(ctx, j, p.AddressList); err != nil {
			return TriggerResult{}, err
		}
	}
	err = s.cfg.Queues.Dispatch(fire.LaneFast).Send(ctx, []driver.Outgoing[fire.DispatchTask]{{Msg: task}})
	if err != nil {
		return TriggerResult{}, fmt.Errorf("admin job trigger %d: %w", p.JobID, err)
	}
	return TriggerResult{JobID: p.JobID, OccurrenceID: task.Occurrence.ID(0)}, nil
}

// checkOverride refuses override addresses that are not the group's: its
// stored list, or an executor registered under its app name within
// DeadAfter (see Config.AnyTriggerAddress).
func (s *Service) checkOverride(ctx context.Context, j xjob.Job, addrs []string) error {
	g, err := s.cfg.Store.GroupGet(ctx, j.GroupID)
	if err != nil {
		return mapNotFound(err, "group", j.GroupID, "admin job trigger")
	}
	known := map[string]bool{}
	for _, a := range g.AddressList {
		known[egress.AddressKey(a)] = true
	}
	live, err := s.liveExecutors(ctx, g.AppName)
	if err != nil {
		return err
	}
	for _, e := range live {
		known[egress.AddressKey(e.Address)] = true
	}
	var problems []xjob.FieldProblem
	for _, a := range addrs {
		if !known[egress.AddressKey(a)] {
			problems = append(problems, xjob.FieldProblem{Field: "addressList", Message: fmt.Sprintf(
				"%s is not an address of group %s (neither in its list nor a live registered executor); "+
					"overrides to other hosts need the server's allow-any-trigger-address setting", a, g.AppName)})
		}
	}
	if len(problems) > 0 {
		return &xjob.ValidationError{Problems: problems}
	}
	return nil
}

// NextFireTimes previews the next n fire times of a job from now, in the
// job's time zone: the fires that will happen, those already on the ring
// included. A running FIX_RATE job keeps its phase (see resumeAt); a
// stopped job shows what starting it now would give. A job of schedule
// type NONE has none (a validation error).
func (s *Service) NextFireTimes(ctx context.Context, id int64, n int) ([]time.Time, error) {
	if err := checkCount(n); err != nil {
		return nil, err
	}
	j, err := s.GetJob(ctx, id)
	if err != nil {
		return nil, err
	}
	if j.ScheduleType == xjob.ScheduleNone {
		return nil, invalid("scheduleType", "a job with schedule type NONE has no fire times")
	}
	sched, err := j.Schedule()
	if err != nil {
		return nil, invalid("scheduleConf", "%v", err)
	}
	loc, err := time.LoadLocation(j.TimeZone)
	if err != nil {
		return nil, invalid("timeZone", "%v", err)
	}
	now := s.cfg.Clock.Now()
	if _, ok := sched.(schedule.FixDelay); ok {
		return fixDelayPreview(&j, now.UnixMilli(), loc), nil
	}
	from := now
	if fr, ok := sched.(schedule.FixRate); ok && j.TriggerStatus == xjob.StatusRunning && j.TriggerNextTime > now.UnixMilli() {
		from = time.UnixMilli(resumeAt(&j, now.UnixMilli())).Add(-fr.Interval) // Next(from) is the first fire
	}
	return preview(sched, from.In(loc), n)
}

// fixDelayPreview is what NextFireTimes knows of a FIX_DELAY job's fires:
// the one planned, when the previous run's result has planned it (or the
// job is stopped: starting it now would fire a delay later); none while a
// run is out, since the next fire comes a delay after that run ends.
func fixDelayPreview(j *xjob.Job, now int64, loc *time.Location) []time.Time {
	if j.TriggerStatus != xjob.StatusRunning {
		if t, ok := mustNext(j, now); ok {
			return []time.Time{t.In(loc)}
		}
		return []time.Time{}
	}
	switch {
	case j.TriggerLastTime > now: // fired later this pre-read window
		return []time.Time{time.UnixMilli(j.TriggerLastTime).In(loc)}
	case AfterCurrentRun(j, now):
		return []time.Time{}
	}
	return []time.Time{time.UnixMilli(j.TriggerNextTime).In(loc)}
}

// AfterCurrentRun reports whether a running FIX_DELAY job's next fire is
// not known yet: a run is out (the scan fired it and parked the job at its
// lost-run fallback, RunWait + delay after the fire) and the next fire
// comes a delay after that run's result. Its TriggerNextTime is then only
// that fallback, which the console shows as "after the current run".
func AfterCurrentRun(j *xjob.Job, now int64) bool {
	return j.TriggerStatus == xjob.StatusRunning && j.TriggerLastTime <= now && j.AwaitingRun()
}

func mustNext(j *xjob.Job, now int64) (time.Time, bool) {
	sched, err := j.Schedule()
	if err != nil {
		return time.Time{}, false
	}
	return sched.Next(time.UnixMilli(now))
}

// PreviewCron returns the next n fire times of cron expression expr in
// time zone tz ("" is UTC) after from: the offline preview behind
// `xjob cron next` and GET /v1/cron/next.
func PreviewCron(expr, tz string, from time.Time, n int) ([]time.Time, error) {
	if err := checkCount(n); err != nil {
		return nil, err
	}
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "Local" {
		return nil, invalid("tz", "%q is not an IANA time zone", tz)
	}
	sched, err := schedule.Parse(schedule.TypeCron, expr, tz)
	if err != nil {
		return nil, invalid("expr", "%v", err)
	}
	return preview(sched, from.In(loc), n)
}

func checkCount(n int) error {
	if n < 1 || n > MaxPreviewCount {
		return invalid("n", "must be between 1 and %d", MaxPreviewCount)
	}
	return nil
}

func preview(sched schedule.Schedule, from time.Time, n int) ([]time.Time, error) {
	times, err := schedule.Preview(sched, from, n)
	if errors.Is(err, schedule.ErrNoSchedule) {
		return []time.Time{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("admin preview: %w", err)
	}
	for i := range times {
		times[i] = times[i].In(from.Location())
	}
	return times, nil
}

// The child-graph lease serialises edits that set child jobs across
// processes sharing a store (two Lambda invocations of the admin API, two
// xjob local processes on one file), as childEdits does within one: the
// cycle check reads other jobs' children, so two edits that each add one
// edge of a cycle must not interleave between check and write.
const (
	childGraphLease = driver.ChangeLease
	// childGraphTTL bounds how long a crashed editor blocks the others.
	// An edit holds the lease for a few store round trips; one stalled
	// past the TTL loses the guarantee (the job write is not fenced).
	childGraphTTL = 30 * time.Second
	// childGraphWait is how long an edit waits for the lease before it
	// is refused as a conflict (the person tries again).
	childGraphWait = 10 * time.Second
	// childGraphPoll is the pause between tries.
	childGraphPoll = 25 * time.Millisecond
)

// lockChildGraph takes the child-graph lease, waiting up to childGraphWait
// on the service's clock, and returns its release.
func (s *Service) lockChildGraph(ctx context.Context) (func(), error) {
	owner := "admin-" + randomID()
	deadline := s.cfg.Clock.Now().Add(childGraphWait)
	for {
		l, err := s.cfg.Store.LeaseAcquire(ctx, driver.LeaseAcquireParams{Name: childGraphLease, Owner: owner,
			Now: s.now(), TTL: childGraphTTL})
		if err == nil {
			return func() {
				// Released even when the edit's context ended; an
				// error only means the lease expires by itself.
				if err := s.cfg.Store.LeaseRelease(context.WithoutCancel(ctx), l); err != nil {
					s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "child-graph lease not released",
						slog.String("err", err.Error()))
				}
			}, nil
		}
		if !errors.Is(err, xjob.ErrLeaseHeld) {
			return nil, fmt.Errorf("admin child jobs: take the child-graph lease: %w", err)
		}
		now := s.cfg.Clock.Now()
		if !now.Before(deadline) {
			return nil, fmt.Errorf("admin child jobs: another edit of child jobs is in progress, try again: %w", xjob.ErrConflict)
		}
		if err := s.cfg.Clock.SleepUntil(ctx, now.Add(childGraphPoll)); err != nil {
			return nil, fmt.Errorf("admin child jobs: wait for the child-graph lease: %w", err)
		}
	}
}
