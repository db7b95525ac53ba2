package xjob

import (
	"fmt"
	"math"
	"net/mail"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xjobdev/xjob/internal/text"
	"github.com/xjobdev/xjob/pkg/schedule"
)

// Field limits, in characters as MySQL counts a varchar's (xxl-job's
// column sizes, 3.4.x where it grew them), so that what xxl-job stored
// fits; GLUE source alone is counted in bytes. They keep every record
// well inside a DynamoDB item (400 KB) and an SQS message (256 KB).
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 255
	MaxAuthorLen      = 64
	MaxAlarmEmailLen  = 255
	MaxScheduleConf   = 128
	MaxHandlerLen     = 255
	MaxParamLen       = 16384 // 3.4's text column; 2.x's varchar(512) fits
	MaxGlueSourceLen  = 128 << 10
	MaxGlueRemarkLen  = 128
	MaxChildJobs      = 64
	MaxTimeoutSeconds = 7 * 24 * 3600
	MaxFailRetryCount = 100
)

// Job is one scheduled job: xxl_job_info plus an IANA time zone and the two
// counters that keep concurrent writers honest.
//
// Version is the optimistic-lock counter: every write bumps it, the scan's
// advance of TriggerNextTime included, and every conditional update names
// the version it read. Revision changes only when a person edits what or
// when the job fires (schedule, status, route, handler...): the ring drops a
// pushed occurrence whose revision is stale, but not one whose job was merely
// advanced by the scan.
type Job struct {
	ID int64 `json:"id"`
	// Name is an optional stable key, unique among jobs when set: what a
	// jobs-as-code file (xjob apply) matches the job by. xxl-job has none.
	Name        string `json:"name"`
	GroupID     int64  `json:"jobGroup"`
	Description string `json:"jobDesc"`
	Author      string `json:"author"`
	AlarmEmail  string `json:"alarmEmail"`

	ScheduleType    ScheduleType    `json:"scheduleType"`
	ScheduleConf    string          `json:"scheduleConf"`
	TimeZone        string          `json:"timeZone"`
	MisfireStrategy MisfireStrategy `json:"misfireStrategy"`
	// AfterCompletion applies to ONCE jobs: KEEP (default) or DELETE.
	AfterCompletion AfterCompletion `json:"afterCompletion"`

	RouteStrategy  RouteStrategy `json:"executorRouteStrategy"`
	Handler        string        `json:"executorHandler"`
	Param          string        `json:"executorParam"`
	BlockStrategy  BlockStrategy `json:"executorBlockStrategy"`
	TimeoutSeconds int           `json:"executorTimeout"`
	FailRetryCount int           `json:"executorFailRetryCount"`

	GlueType      GlueType `json:"glueType"`
	GlueSource    string   `json:"glueSource"`
	GlueRemark    string   `json:"glueRemark"`
	GlueUpdatedAt int64    `json:"glueUpdatetime"`

	ChildJobIDs []int64 `json:"childJobIds"`

	TriggerStatus   TriggerStatus `json:"triggerStatus"`
	TriggerLastTime int64         `json:"triggerLastTime"`
	TriggerNextTime int64         `json:"triggerNextTime"`

	// Shard is the scan shard that owns the job, a function of its ID and
	// the installation's shard count.
	Shard    int   `json:"shard"`
	Version  int64 `json:"version"`
	Revision int64 `json:"revision"`

	// SlowMinute and SlowCount count this minute's dispatches slower than
	// 500 ms; the ring sends a job with more than 10 to the slow lane.
	SlowMinute int64 `json:"-"`
	SlowCount  int   `json:"-"`

	// Declared is the latest definition an executor declared for this job
	// (JobDeclaration.Canonical), empty for a job a person or a file
	// created. The admin records it but never applies it to a job that
	// exists: DeclarationDiff shows where the two part.
	Declared string `json:"declared,omitempty"`

	// Applied is what a manifest (`xjob apply`, `xjob import`) last
	// declared for this job, as the admin records it; empty for a job no
	// manifest wrote. The next apply compares three ways against it: a
	// field the manifest did not change since is left as a person set it
	// in xjob, so re-applying an unchanged file changes nothing.
	Applied string `json:"-"`

	CreatedAt int64 `json:"addTime"`
	UpdatedAt int64 `json:"updateTime"`
}

// ApplyDefaults fills fields a person may leave empty with xxl-job's defaults.
func (j *Job) ApplyDefaults() {
	if j.ScheduleType == "" {
		j.ScheduleType = ScheduleNone
	}
	if j.MisfireStrategy == "" {
		j.MisfireStrategy = MisfireDoNothing
	}
	if j.RouteStrategy == "" {
		j.RouteStrategy = RouteFirst
	}
	if j.BlockStrategy == "" {
		j.BlockStrategy = BlockSerialExecution
	}
	if j.GlueType == "" {
		j.GlueType = GlueBean
	}
	if j.TimeZone == "" {
		j.TimeZone = "UTC"
	}
	if j.AfterCompletion == "" {
		j.AfterCompletion = AfterKeep
	}
}

// Validate checks every field a person sets. It does not check that the
// group or the child jobs exist: that needs the store, and is the admin
// service's job.
func (j *Job) Validate() error {
	var p problems
	if j.GroupID <= 0 {
		p.add("jobGroup", "is required")
	}
	if err := ValidateJobName(j.Name); err != nil {
		p.add("name", "%v", err)
	}
	checkLen(&p, "jobDesc", j.Description, 1, MaxDescriptionLen)
	checkLen(&p, "author", j.Author, 1, MaxAuthorLen)
	checkLen(&p, "alarmEmail", j.AlarmEmail, 0, MaxAlarmEmailLen)
	for _, addr := range text.SplitList(j.AlarmEmail) {
		if _, err := mail.ParseAddress(addr); err != nil {
			p.add("alarmEmail", "%q is not an e-mail address", addr)
		}
	}
	if !j.ScheduleType.valid() {
		p.add("scheduleType", "must be one of NONE, CRON, FIX_RATE, FIX_DELAY, ONCE, got %q", j.ScheduleType)
	} else {
		checkLen(&p, "scheduleConf", j.ScheduleConf, 0, MaxScheduleConf)
		if _, err := time.LoadLocation(j.TimeZone); err != nil || j.TimeZone == "" || j.TimeZone == "Local" {
			p.add("timeZone", "%q is not an IANA time zone", j.TimeZone)
		} else if _, err := j.Schedule(); err != nil {
			p.add("scheduleConf", "%v", err)
		}
	}
	switch {
	case !j.AfterCompletion.valid():
		p.add("afterCompletion", "must be KEEP or DELETE, got %q", j.AfterCompletion)
	case j.AfterCompletion == AfterDelete && j.ScheduleType != ScheduleOnce:
		p.add("afterCompletion", "DELETE needs schedule type ONCE (a job that fires once)")
	}
	if !j.MisfireStrategy.valid() {
		p.add("misfireStrategy", "must be DO_NOTHING or FIRE_ONCE_NOW, got %q", j.MisfireStrategy)
	}
	if !j.RouteStrategy.valid() {
		p.add("executorRouteStrategy", "unknown route strategy %q", j.RouteStrategy)
	}
	if !j.BlockStrategy.valid() {
		p.add("executorBlockStrategy", "must be SERIAL_EXECUTION, DISCARD_LATER or COVER_EARLY, got %q", j.BlockStrategy)
	}
	if !j.GlueType.valid() {
		p.add("glueType", "unknown glue type %q", j.GlueType)
	} else if j.GlueType == GlueBean {
		checkLen(&p, "executorHandler", j.Handler, 1, MaxHandlerLen)
	} else if j.GlueType.Target() {
		checkLen(&p, "executorHandler", j.Handler, 0, MaxHandlerLen)
		checkTarget(&p, j)
	} else {
		checkLen(&p, "executorHandler", j.Handler, 0, MaxHandlerLen)
	}
	checkLen(&p, "executorParam", j.Param, 0, MaxParamLen)
	if n := len(j.GlueSource); n > MaxGlueSourceLen {
		p.add("glueSource", "is %d bytes, at most %d allowed", n, MaxGlueSourceLen)
	}
	checkLen(&p, "glueRemark", j.GlueRemark, 0, MaxGlueRemarkLen)
	if j.TimeoutSeconds < 0 || j.TimeoutSeconds > MaxTimeoutSeconds {
		p.add("executorTimeout", "must be between 0 and %d seconds", MaxTimeoutSeconds)
	}
	if j.FailRetryCount < 0 || j.FailRetryCount > MaxFailRetryCount {
		p.add("executorFailRetryCount", "must be between 0 and %d", MaxFailRetryCount)
	}
	if len(j.ChildJobIDs) > MaxChildJobs {
		p.add("childJobIds", "at most %d child jobs", MaxChildJobs)
	}
	for _, id := range j.ChildJobIDs {
		if id <= 0 || id > math.MaxInt32 {
			p.add("childJobIds", "%d is not a job id", id)
		} else if id == j.ID {
			p.add("childJobIds", "a job cannot be its own child")
		}
	}
	if j.TriggerStatus != StatusStopped && j.TriggerStatus != StatusRunning {
		p.add("triggerStatus", "must be 0 (stopped) or 1 (running)")
	}
	if j.TriggerStatus == StatusRunning && j.ScheduleType == ScheduleNone {
		p.add("triggerStatus", "a job with schedule type NONE cannot be started")
	}
	return p.err()
}

// MaxTargetTimeoutSeconds bounds an HTTP job's executorTimeout: its call
// runs in the scheduler, and must end well before the lost-result check
// (10 minutes) would take the run for lost.
const MaxTargetTimeoutSeconds = 300

// checkTarget checks what an HTTP job adds to any job: it is called once
// per trigger by the scheduler (no executors to broadcast to), and its
// call is bounded. Its GLUE source, the target's spec, is checked by the
// admin service (package internal/target), which also seals its secrets.
func checkTarget(p *problems, j *Job) {
	if j.RouteStrategy == RouteShardingBroadcast {
		p.add("executorRouteStrategy", "an %s job is called once by the scheduler: SHARDING_BROADCAST needs executors", j.GlueType)
	}
	if j.TimeoutSeconds > MaxTargetTimeoutSeconds {
		p.add("executorTimeout", "an %s call is cut at most after %d seconds", j.GlueType, MaxTargetTimeoutSeconds)
	}
}

// ValidateJobName checks a job name: empty (no name), or 1 to MaxNameLen
// letters, digits, '.', '_' and '-', starting with a letter or digit, so
// that it reads the same in a file, a URL and a shell.
func ValidateJobName(name string) error {
	if name == "" {
		return nil
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("is %d bytes, at most %d allowed", len(name), MaxNameLen)
	}
	for i, r := range name {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || (r != '.' && r != '_' && r != '-')) {
			return fmt.Errorf("%q: use letters, digits, '.', '_' and '-', starting with a letter or digit", name)
		}
	}
	return nil
}

// Schedule parses the job's schedule in its time zone.
func (j *Job) Schedule() (schedule.Schedule, error) {
	return schedule.Parse(string(j.ScheduleType), j.ScheduleConf, j.TimeZone)
}

// DefaultRunWait is how long the scheduler waits for the result of a
// FIX_DELAY job's run when the job has no timeout (executorTimeout 0)
// before it takes the run for lost and plans the next fire anyway: the
// lost-run check's window (xxl-job's 10 minutes), after which an
// unanswered run on a dead executor is marked failed.
const DefaultRunWait = 10 * time.Minute

// RunWait is how long a FIX_DELAY job's run may go without a result before
// the scheduler fires the job again (after the delay): its timeout, or
// DefaultRunWait when it has none.
func (j *Job) RunWait() time.Duration {
	if j.TimeoutSeconds > 0 {
		return time.Duration(j.TimeoutSeconds) * time.Second
	}
	return DefaultRunWait
}

// AwaitingRun reports whether a FIX_DELAY job's next time is still the
// lost-run fallback of its last fire: the scan fired it at TriggerLastTime
// and parked it RunWait + delay later, and no result has planned it since
// (a result plans end + delay, sooner). The scan does not pre-read such a
// time, the console shows it as "after the current run".
func (j *Job) AwaitingRun() bool {
	if j.ScheduleType != ScheduleFixDelay || j.TriggerLastTime <= 0 {
		return false
	}
	d, err := schedule.ParseFixDelay(j.ScheduleConf)
	if err != nil {
		return false
	}
	return j.TriggerNextTime-j.TriggerLastTime >= (j.RunWait() + d.Delay).Milliseconds()
}

// ScheduleChanged reports whether an edit from j to next changes what or
// when the job fires, which is when its Revision must be bumped.
func (j *Job) ScheduleChanged(next *Job) bool {
	return j.ScheduleType != next.ScheduleType || j.ScheduleConf != next.ScheduleConf ||
		j.TimeZone != next.TimeZone || j.TriggerStatus != next.TriggerStatus ||
		j.RouteStrategy != next.RouteStrategy || j.GroupID != next.GroupID ||
		j.MisfireStrategy != next.MisfireStrategy
}

// ParseChildJobIDs parses xxl-job's comma-separated child_jobid column.
func ParseChildJobIDs(s string) ([]int64, error) {
	var ids []int64
	for _, f := range text.SplitList(s) {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil || id <= 0 {
			return nil, &ValidationError{Problems: []FieldProblem{{Field: "childJobId", Message: f + " is not a job id"}}}
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func checkLen(p *problems, field, v string, minLen, maxLen int) {
	switch n := utf8.RuneCountInString(v); {
	case minLen > 0 && strings.TrimSpace(v) == "":
		p.add(field, "is required")
	case n > maxLen:
		p.add(field, "is %d characters, at most %d allowed", n, maxLen)
	}
}
