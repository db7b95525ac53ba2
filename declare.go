package xjob

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxDeclarations bounds the jobs one executor may declare in a request:
// declarations are written by code, a handful per executor, never a bulk
// import. (The body is capped as every admin API body is.)
const MaxDeclarations = 200

// JobDeclaration is the default job an executor's handler carries (Go SDK:
// executor.WithJob). The executor sends its declarations to the admin when
// it starts (POST /api/xjob/declare); the admin creates each job once,
// stopped unless the operator allows declared jobs to start, and never
// overwrites what a person edited afterwards.
//
// A declaration is keyed by Name, or by "<appname>.<handler>" without one;
// the key becomes the job's name (the key of xjob apply files too).
type JobDeclaration struct {
	Name            string          `json:"name,omitempty"`
	Handler         string          `json:"handler"`
	Description     string          `json:"description,omitempty"`
	ScheduleType    ScheduleType    `json:"scheduleType,omitempty"`
	ScheduleConf    string          `json:"scheduleConf,omitempty"`
	TimeZone        string          `json:"timeZone,omitempty"`
	MisfireStrategy MisfireStrategy `json:"misfireStrategy,omitempty"`
	RouteStrategy   RouteStrategy   `json:"routeStrategy,omitempty"`
	TimeoutSeconds  int             `json:"timeoutSeconds,omitempty"`
	FailRetryCount  int             `json:"failRetryCount,omitempty"`
	Param           string          `json:"param,omitempty"`
}

// DeclareRequest is the body of POST /api/xjob/declare.
type DeclareRequest struct {
	AppName string           `json:"appname"`
	Jobs    []JobDeclaration `json:"jobs"`
}

// Outcomes of one declaration.
const (
	DeclareCreated   = "created"   // the job did not exist: created
	DeclareUnchanged = "unchanged" // the job exists and the declaration is the one recorded
	DeclareIgnored   = "ignored"   // the job exists and the declaration changed: recorded, not applied
	DeclareRetired   = "retired"   // a person deleted the job declared so: not created again
)

// DeclaredJob is the admin's answer for one declaration.
type DeclaredJob struct {
	Key     string `json:"key"`
	ID      int64  `json:"id"`
	Outcome string `json:"outcome"`
	// Differs names the job fields whose current value is not the declared
	// one (a person's edit, or a declaration the admin ignored).
	Differs []string `json:"differs,omitempty"`
}

// DeclareResult is the data of the reply to POST /api/xjob/declare.
type DeclareResult struct {
	Jobs []DeclaredJob `json:"jobs"`
}

// Key is the declaration's stable key under appname: its Name, or
// "<appname>.<handler>".
func (d *JobDeclaration) Key(appname string) string {
	if d.Name != "" {
		return d.Name
	}
	return appname + "." + d.Handler
}

// Job is the job the declaration creates in group groupID. Fields left
// empty take the defaults of POST /v1/jobs; the job is stopped.
func (d *JobDeclaration) Job(appname string, groupID int64) Job {
	desc := d.Description
	if desc == "" {
		desc = "declared by " + appname + ": " + d.Handler
		if len(desc) > MaxDescriptionLen {
			desc = desc[:MaxDescriptionLen]
		}
	}
	author := "executor " + appname
	if len(author) > MaxAuthorLen {
		author = author[:MaxAuthorLen]
	}
	j := Job{
		Name: d.Key(appname), GroupID: groupID, Description: desc, Author: author,
		ScheduleType: d.ScheduleType, ScheduleConf: d.ScheduleConf, TimeZone: d.TimeZone,
		MisfireStrategy: d.MisfireStrategy, RouteStrategy: d.RouteStrategy,
		Handler: d.Handler, Param: d.Param,
		TimeoutSeconds: d.TimeoutSeconds, FailRetryCount: d.FailRetryCount,
		GlueType: GlueBean,
	}
	j.ApplyDefaults()
	return j
}

// Validate checks the declaration as POST /v1/jobs checks a job, with
// field names of the declaration.
func (d *JobDeclaration) Validate(appname string) error {
	for field, v := range map[string]string{"appname": appname, "name": d.Name, "handler": d.Handler,
		"description": d.Description, "scheduleConf": d.ScheduleConf, "timeZone": d.TimeZone, "param": d.Param} {
		if !utf8.ValidString(v) { // it is recorded as JSON, which would alter it
			return &ValidationError{Problems: []FieldProblem{{Field: field, Message: "is not valid UTF-8"}}}
		}
	}
	if appname == "" {
		return &ValidationError{Problems: []FieldProblem{{Field: "appname", Message: "is required"}}}
	}
	if d.Handler == "" {
		return &ValidationError{Problems: []FieldProblem{{Field: "handler", Message: "is required"}}}
	}
	key := d.Key(appname)
	if err := ValidateJobName(key); err != nil {
		field := "name"
		if d.Name == "" {
			err = fmt.Errorf("the default key %q is not a job name (%v): give the declaration a name", key, err)
		}
		return &ValidationError{Problems: []FieldProblem{{Field: field, Message: err.Error()}}}
	}
	j := d.Job(appname, 1)
	return j.Validate()
}

// Canonical is the declaration as recorded on the job (Job.Declared):
// compact JSON of its fields with defaults applied, so that two
// declarations that create the same job compare equal.
func (d *JobDeclaration) Canonical(appname string) string {
	j := d.Job(appname, 1)
	c := JobDeclaration{Name: j.Name, Handler: j.Handler, Description: j.Description,
		ScheduleType: j.ScheduleType, ScheduleConf: j.ScheduleConf, TimeZone: j.TimeZone,
		MisfireStrategy: j.MisfireStrategy, RouteStrategy: j.RouteStrategy,
		TimeoutSeconds: j.TimeoutSeconds, FailRetryCount: j.FailRetryCount, Param: j.Param}
	b, _ := json.Marshal(c) // plain strings and ints: cannot fail
	return string(b)
}

// DeclarationDiff names the fields of j that differ from the declaration
// recorded on it (j.Declared); nil when j was not declared or matches.
func (j *Job) DeclarationDiff() []string {
	if j.Declared == "" {
		return nil
	}
	var d JobDeclaration
	if err := json.Unmarshal([]byte(j.Declared), &d); err != nil {
		return []string{"declared (unreadable: " + err.Error() + ")"}
	}
	var out []string
	add := func(name string, differs bool) {
		if differs {
			out = append(out, name)
		}
	}
	add("executorHandler", j.Handler != d.Handler)
	add("jobDesc", j.Description != d.Description)
	add("scheduleType", j.ScheduleType != d.ScheduleType)
	add("scheduleConf", strings.TrimSpace(j.ScheduleConf) != strings.TrimSpace(d.ScheduleConf))
	add("timeZone", j.TimeZone != d.TimeZone)
	add("misfireStrategy", j.MisfireStrategy != d.MisfireStrategy)
	add("executorRouteStrategy", j.RouteStrategy != d.RouteStrategy)
	add("executorTimeout", j.TimeoutSeconds != d.TimeoutSeconds)
	add("executorFailRetryCount", j.FailRetryCount != d.FailRetryCount)
	add("executorParam", j.Param != d.Param)
	return out
}
