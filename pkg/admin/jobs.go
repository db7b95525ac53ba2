package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/xjobdev/xjob"
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
// created running first fires after now + PreRead. Job ids must fit an
// int32, because xxl-job executors parse jobId as a Java int; an insert
// beyond that is undone and refused.
func (s *Service) CreateJob(ctx context.Context, in xjob.Job) (xjob.Job, error) {
	now := s.now()
	j := in
	j.ID, j.Shard, j.Version, j.Revision = 0, 0, 0, 0
	j.SlowMinute, j.SlowCount = 0, 0
	j.TriggerLastTime, j.TriggerNextTime = 0, 0
	j.CreatedAt, j.UpdatedAt, j.GlueUpdatedAt = now, now, now
	j.ApplyDefaults()
	if err := s.checkJob(ctx, &j); err != nil {
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
	s.prime(ctx, out)
	return out, nil
}

// prime hands a running job to the Primer, if any. The job is stored
// either way: a failed push is logged, and the next scan plans the job
// (its fires before that scan are then late or misfired, and reported so).
func (s *Service) prime(ctx context.Context, j xjob.Job) {
	if s.cfg.Primer == nil || j.TriggerStatus != xjob.StatusRunning {
		return
	}
	if err := s.cfg.Primer.Prime(ctx, j); err != nil {
		s.cfg.Logger.WarnContext(ctx, "admin: job stored, its first fires not pushed to the ring; the next scan plans it", "job", j.ID, "err", err)
	}
}

// GetJob returns one job.
func (s *Service) GetJob(ctx context.Context, id int64) (xjob.Job, error) {
	j, err := s.cfg.Store.JobGet(ctx, id)
	if err != nil {
		return xjob.Job{}, mapNotFound(err, "job", id, "admin job get")
	}
	return j, nil
}

// ListJobs pages through jobs in id order (filters as driver.JobListParams).
func (s *Service) ListJobs(ctx context.Context, p driver.JobListParams) (driver.JobPage, error) {
	page, err := s.cfg.Store.JobList(ctx, p)
	if err != nil {
		return driver.JobPage{}, fmt.Errorf("admin job list: %w", err)
	}
	return page, nil
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
// cannot change; the group and every child job must exist; editing the
// schedule of a running job moves its next fire time to the first one
// after now + PreRead; an edit that changes what or when the job fires
// bumps its Revision.
func (s *Service) UpdateJob(ctx context.Context, p UpdateJobParams) (xjob.Job, error) {
	return s.editJob(ctx, p.Job.ID, p.Version, func(old xjob.Job, now int64) (xjob.Job, bool, error) {
		n := p.Job
		n.ID, n.Shard, n.Version, n.Revision = old.ID, old.Shard, old.Version, old.Revision
		n.SlowMinute, n.SlowCount = old.SlowMinute, old.SlowCount
		n.TriggerStatus, n.TriggerLastTime, n.TriggerNextTime = old.TriggerStatus, old.TriggerLastTime, old.TriggerNextTime
		n.CreatedAt, n.UpdatedAt = old.CreatedAt, now
		switch {
		case n.GlueType == "":
			n.GlueType = old.GlueType
		case n.GlueType != old.GlueType:
			return xjob.Job{}, false, invalid("glueType", "cannot change after creation (job is %s)", old.GlueType)
		}
		n.ApplyDefaults()
		n.GlueUpdatedAt = old.GlueUpdatedAt
		if n.GlueSource != old.GlueSource {
			n.GlueUpdatedAt = now // executors rebuild the handler on the next trigger
		}
		if err := s.checkJob(ctx, &n); err != nil {
			return xjob.Job{}, false, err
		}
		// A revision bump drops the occurrences already on the ring, so a
		// running job is replanned from now on (its next fire after now +
		// PreRead), whatever the edit that bumped it.
		if n.TriggerStatus == xjob.StatusRunning && (timingChanged(&old, &n) || old.ScheduleChanged(&n)) {
			next, err := s.firstFire(&n, now)
			if err != nil {
				return xjob.Job{}, false, err
			}
			n.TriggerNextTime = next
		}
		if old.ScheduleChanged(&n) {
			n.Revision = old.Revision + 1
		}
		return n, true, nil
	})
}

// timingChanged reports an edit of when the job fires (xxl-job's
// scheduleDataChanged, plus the time zone).
func timingChanged(old, n *xjob.Job) bool {
	return old.ScheduleType != n.ScheduleType || old.ScheduleConf != n.ScheduleConf || old.TimeZone != n.TimeZone
}

// StartJob sets a job running with its first fire after now + PreRead.
// A job with schedule type NONE cannot be started. Starting a running job
// changes nothing.
func (s *Service) StartJob(ctx context.Context, id int64) (xjob.Job, error) {
	return s.editJob(ctx, id, 0, func(old xjob.Job, now int64) (xjob.Job, bool, error) {
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
	for attempt := 0; ; attempt++ {
		old, err := s.cfg.Store.JobGet(ctx, id)
		if err != nil {
			return xjob.Job{}, mapNotFound(err, "job", id, "admin job read")
		}
		if version != 0 && version != old.Version {
			return xjob.Job{}, staleVersion("job", id, version)
		}
		n, write, err := edit(old, s.now())
		if err != nil || !write {
			return n, err
		}
		out, err := s.cfg.Store.JobUpdate(ctx, driver.JobUpdateParams{Job: n, ExpectVersion: old.Version})
		switch {
		case err == nil:
			s.prime(ctx, out)
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
	if err := j.Validate(); err != nil {
		return err
	}
	var problems []xjob.FieldProblem
	if _, err := s.cfg.Store.GroupGet(ctx, j.GroupID); errors.Is(err, xjob.ErrNotFound) {
		problems = append(problems, xjob.FieldProblem{Field: "jobGroup",
			Message: fmt.Sprintf("executor group %d does not exist", j.GroupID)})
	} else if err != nil {
		return fmt.Errorf("admin job check group: %w", err)
	}
	if len(j.ChildJobIDs) > 0 {
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
	return nil
}

// firstFire is the first fire time of a job started (or rescheduled) at
// now: the first after now + PreRead, since fires inside the pre-read
// window may already be planned (xxl-job: now + 5 s).
func (s *Service) firstFire(j *xjob.Job, now int64) (int64, error) {
	if j.ScheduleType == xjob.ScheduleNone {
		return 0, invalid("scheduleType", "a job with schedule type NONE cannot be started")
	}
	sched, err := j.Schedule()
	if err != nil {
		return 0, invalid("scheduleConf", "%v", err)
	}
	next, ok := sched.Next(time.UnixMilli(now).Add(s.cfg.PreRead))
	if !ok {
		return 0, invalid("scheduleConf", "the schedule has no fire time after now")
	}
	return next.UnixMilli(), nil
}

// DeleteJob removes a job. Its logs stay until retention purges them;
// occurrences already queued are dropped by dispatch ("job deleted").
func (s *Service) DeleteJob(ctx context.Context, id int64) error {
	if err := s.cfg.Store.JobDelete(ctx, id); err != nil {
		return mapNotFound(err, "job", id, "admin job delete")
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
	task := xjob.DispatchTask{
		Occurrence:  xjob.Occurrence{JobID: p.JobID, Type: xjob.TriggerManual, Ref: s.cfg.NewRequestID()},
		Param:       p.Param,
		AddressList: p.AddressList,
		EnqueuedAt:  s.now(),
	}
	if err := task.Validate(); err != nil {
		return TriggerResult{}, err
	}
	if _, err := s.cfg.Store.JobGet(ctx, p.JobID); err != nil {
		return TriggerResult{}, mapNotFound(err, "job", p.JobID, "admin job trigger")
	}
	err := s.cfg.Queues.Dispatch(xjob.LaneFast).Send(ctx, []driver.Outgoing[xjob.DispatchTask]{{Msg: task}})
	if err != nil {
		return TriggerResult{}, fmt.Errorf("admin job trigger %d: %w", p.JobID, err)
	}
	return TriggerResult{JobID: p.JobID, OccurrenceID: task.Occurrence.ID(0)}, nil
}

// NextFireTimes previews the next n fire times of a job from now, in the
// job's time zone. A job of schedule type NONE has none (a validation error).
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
	return preview(sched, s.cfg.Clock.Now().In(loc), n)
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
