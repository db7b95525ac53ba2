package admin

import (
	"context"
	"errors"
	"net/url"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/target"
)

// TargetConfig enables target jobs (glue types HTTP and AWS): a deployment
// that runs the built-in executor sets it. Without it, both are refused at
// save.
type TargetConfig struct {
	// Sealer seals secret headers at save; nil refuses specs that have
	// some.
	Sealer *target.Sealer
	// CheckURL applies the egress rule to a target URL at save
	// (egress.Policy.Check with a resolver), so that a disallowed
	// address is refused with the field named rather than at each fire.
	CheckURL func(ctx context.Context, rawURL string) error
	// AWS lists the ARNs AWS jobs may call; nil (no AWS client
	// configured) refuses AWS jobs, an empty list refuses every ARN.
	AWS *target.AllowList
	// AWSParam names the setting that lists them, as the operator
	// writes it (a flag and its variable, or the stack's parameter), so
	// that a refusal tells them what to change.
	AWSParam string
	// Try makes one call of a target job now, without a trigger log
	// (httptarget.Executor.Try): the console's test call. Nil: no test
	// calls.
	Try func(ctx context.Context, c target.Call) (ok bool, msg string)
}

// TargetResult is a test call's outcome: what a run's log would show.
type TargetResult struct {
	OK  bool   `json:"ok"`
	Msg string `json:"msg"`
}

// TestTarget makes the call of target job j once, now, as its next fire
// would (the same checks, address rule, secrets, template values with
// log id 0, timeout), but writes nothing: no trigger log, no retry, no
// alarm. id is the stored job j edits (0 for a new one), whose secret
// headers a reference in j's spec may name. A spec that would be refused
// at save is refused here the same way.
func (s *Service) TestTarget(ctx context.Context, j xjob.Job, id int64) (TargetResult, error) {
	if !j.GlueType.Target() {
		return TargetResult{}, invalid("glueType", "only HTTP and AWS jobs have a test call, not %s", j.GlueType)
	}
	if s.cfg.Targets == nil || s.cfg.Targets.Try == nil {
		return TargetResult{}, invalid("glueType", "test calls are not available on this deployment")
	}
	old := ""
	if id > 0 {
		stored, err := s.GetJob(ctx, id)
		if err != nil {
			return TargetResult{}, err
		}
		if stored.GlueType == j.GlueType {
			old = stored.GlueSource
		}
	}
	if err := s.prepareTarget(ctx, &j, old); err != nil {
		return TargetResult{}, err
	}
	now := s.cfg.Clock.Now().UnixMilli()
	ok, msg := s.cfg.Targets.Try(ctx, target.Call{GlueType: string(j.GlueType),
		Vars:   target.Vars{JobID: id, Param: j.Param, ShardTotal: 1, ScheduleTime: now, TriggerTime: now},
		Source: j.GlueSource, TimeoutSeconds: j.TimeoutSeconds})
	return TargetResult{OK: ok, Msg: msg}, nil
}

// prepareTarget checks an HTTP job's spec and makes it the form to store:
// canonical JSON, secret headers sealed (references to the stored values
// kept, foreign ones refused; old is the stored GLUE source, "" for a new
// job). Problems are named glueSource.<field>. Other jobs pass through.
func (s *Service) prepareTarget(ctx context.Context, j *xjob.Job, old string) error {
	if j.GlueType == xjob.GlueAWS {
		return s.prepareAWSTarget(j)
	}
	if j.GlueType != xjob.GlueHTTP {
		return nil
	}
	if s.cfg.Targets == nil {
		return invalid("glueType", "HTTP jobs are not available on this deployment (xjob local and xjob server run them)")
	}
	spec, err := target.Parse(j.GlueSource)
	if err != nil {
		return specProblems(err)
	}
	if s.cfg.Targets.CheckURL != nil {
		// The host is fixed at save (no placeholder may reach it), so
		// rendering with empty values gives the address every fire dials.
		req, err := spec.Render(target.Vars{}, nil)
		if err == nil {
			if u, perr := url.Parse(req.URL); perr == nil {
				err = s.cfg.Targets.CheckURL(ctx, u.Scheme+"://"+u.Host)
			}
		}
		if err != nil {
			return invalid("glueSource.url", "%v", err)
		}
	}
	spec, err = target.Resolve(s.cfg.Targets.Sealer, spec, old)
	if err != nil {
		return specProblems(err)
	}
	j.GlueSource = spec.Canonical()
	return nil
}

// prepareAWSTarget checks an AWS job's spec, and that its ARN is one the
// operator allows (what the deployment's IAM grants), and stores it in
// canonical form.
func (s *Service) prepareAWSTarget(j *xjob.Job) error {
	if s.cfg.Targets == nil || s.cfg.Targets.AWS == nil {
		return invalid("glueType", "AWS jobs are not available on this deployment (xjob local and xjob server run them when --aws-target-arns lists what they may call)")
	}
	spec, err := target.ParseAWS(j.GlueSource)
	if err != nil {
		return specProblems(err)
	}
	if !s.cfg.Targets.AWS.Allows(spec.ARN) {
		param := s.cfg.Targets.AWSParam
		if param == "" {
			param = "the allowed target ARNs"
		}
		return invalid("glueSource.arn", "%s is not an allowed target: list it in %s (%d ARNs allowed)", spec.ARN, param, s.cfg.Targets.AWS.Len())
	}
	j.GlueSource = spec.Canonical()
	return nil
}

// specProblems turns a spec's problems into a validation error.
func specProblems(err error) error {
	var tp target.Problems
	if !errors.As(err, &tp) {
		return invalid("glueSource", "%v", err)
	}
	ve := &xjob.ValidationError{}
	for _, q := range tp {
		field := "glueSource"
		if q.Field != "" {
			field += "." + q.Field
		}
		ve.Problems = append(ve.Problems, xjob.FieldProblem{Field: field, Message: q.Message})
	}
	return ve
}

// redact is a job as it leaves the service: an HTTP job's secret headers
// replaced by their references (never the value, nor its ciphertext).
func redact(j xjob.Job) xjob.Job {
	if j.GlueType == xjob.GlueHTTP {
		j.GlueSource = target.Redact(j.GlueSource)
	}
	return j
}

// redactAll redacts every job of js in place and returns it.
func redactAll(js []xjob.Job) []xjob.Job {
	for i := range js {
		js[i] = redact(js[i])
	}
	return js
}
