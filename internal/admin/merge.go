package admin

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/xjobdev/xjob"
)

// appliedRecord is what Job.Applied holds: the fields a manifest declared
// for the job, as fieldValues renders them, and where it came from.
type appliedRecord struct {
	Origin string            `json:"origin,omitempty"`
	Fields map[string]string `json:"fields"`
}

func writeApplied(r appliedRecord) string {
	b, _ := json.Marshal(r) // strings only: always marshals
	return string(b)
}

// readApplied decodes Job.Applied; an empty or unreadable record has no
// Fields, and the manifest's side is then taken.
func readApplied(s string) appliedRecord {
	var r appliedRecord
	if s != "" {
		_ = json.Unmarshal([]byte(s), &r)
	}
	return r
}

// jobField is one field a manifest declares: its name in the plan (the
// API's) and how an apply copies it. Group and children are compared by
// app name and child keys, and written by the plan itself.
type jobField struct {
	name string
	get  func(j *xjob.Job) string
	set  func(dst, src *xjob.Job)
}

func strField(name string, p func(j *xjob.Job) *string) jobField {
	return jobField{name, func(j *xjob.Job) string { return *p(j) }, func(d, s *xjob.Job) { *p(d) = *p(s) }}
}

func intField(name string, p func(j *xjob.Job) *int) jobField {
	return jobField{name, func(j *xjob.Job) string { return strconv.Itoa(*p(j)) }, func(d, s *xjob.Job) { *p(d) = *p(s) }}
}

// jobFields lists the declared fields in the order a plan shows them.
var jobFields = []jobField{
	{"group", nil, nil},
	strField("jobDesc", func(j *xjob.Job) *string { return &j.Description }),
	strField("author", func(j *xjob.Job) *string { return &j.Author }),
	strField("alarmEmail", func(j *xjob.Job) *string { return &j.AlarmEmail }),
	strField("scheduleType", func(j *xjob.Job) *string { return (*string)(&j.ScheduleType) }),
	strField("scheduleConf", func(j *xjob.Job) *string { return &j.ScheduleConf }),
	strField("timeZone", func(j *xjob.Job) *string { return &j.TimeZone }),
	strField("misfireStrategy", func(j *xjob.Job) *string { return (*string)(&j.MisfireStrategy) }),
	strField("afterCompletion", func(j *xjob.Job) *string { return (*string)(&j.AfterCompletion) }),
	strField("executorRouteStrategy", func(j *xjob.Job) *string { return (*string)(&j.RouteStrategy) }),
	strField("executorHandler", func(j *xjob.Job) *string { return &j.Handler }),
	strField("executorParam", func(j *xjob.Job) *string { return &j.Param }),
	strField("executorBlockStrategy", func(j *xjob.Job) *string { return (*string)(&j.BlockStrategy) }),
	intField("executorTimeout", func(j *xjob.Job) *int { return &j.TimeoutSeconds }),
	intField("executorFailRetryCount", func(j *xjob.Job) *int { return &j.FailRetryCount }),
	strField("glueSource", func(j *xjob.Job) *string { return &j.GlueSource }),
	strField("glueRemark", func(j *xjob.Job) *string { return &j.GlueRemark }),
	{"children", nil, nil},
	{"started",
		func(j *xjob.Job) string { return strconv.FormatBool(j.TriggerStatus == xjob.StatusRunning) },
		func(d, s *xjob.Job) { d.TriggerStatus = s.TriggerStatus }},
}

// fieldValues renders the declared fields of j in group app with children
// (keys).
func fieldValues(j *xjob.Job, app string, children []string) map[string]string {
	out := make(map[string]string, len(jobFields))
	for _, f := range jobFields {
		switch f.name {
		case "group":
			out[f.name] = app
		case "children":
			out[f.name] = strings.Join(children, ",")
		default:
			out[f.name] = f.get(j)
		}
	}
	return out
}

// startState sets the scheduling state of n, created (old nil) or edited
// from old by an apply, as CreateJob, UpdateJob, StartJob and StopJob
// would: revision, trigger times, GLUE and update stamps.
func (s *Service) startState(n, old *xjob.Job, now int64) error {
	n.UpdatedAt = now
	if old == nil {
		n.CreatedAt, n.GlueUpdatedAt = now, now
		n.TriggerLastTime, n.TriggerNextTime = 0, 0
		if n.TriggerStatus == xjob.StatusRunning {
			next, err := s.firstFire(n, now)
			if err != nil {
				return err
			}
			n.TriggerNextTime = next
		}
		return nil
	}
	if n.GlueSource != old.GlueSource {
		n.GlueUpdatedAt = now
	}
	if old.ScheduleChanged(n) {
		n.Revision = old.Revision + 1
	}
	switch {
	case n.TriggerStatus != xjob.StatusRunning:
		n.TriggerLastTime, n.TriggerNextTime = 0, 0
	case old.TriggerStatus != xjob.StatusRunning || timingChanged(old, n):
		next, err := s.firstFire(n, now)
		if err != nil {
			return err
		}
		if old.TriggerStatus != xjob.StatusRunning {
			n.TriggerLastTime = 0
		}
		n.TriggerNextTime = next
	case n.Revision != old.Revision:
		n.TriggerNextTime = resumeAt(old, now)
	}
	return nil
}
