package admin_test

import (
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/target"
)

const (
	allowedFn = "arn:aws:lambda:us-east-1:123456789012:function:report"
	allowedQ  = "arn:aws:sqs:us-east-1:123456789012:jobs"
)

// awsEnv is setup with AWS jobs enabled for two ARNs.
func awsEnv(t *testing.T) (*env, *admin.Service) {
	t.Helper()
	e := setup(t)
	al, err := target.ParseAllowList(allowedFn + "," + allowedQ)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := admin.New(admin.Config{Store: e.db, Queues: e.db, Executors: nopExecutors{}, Finisher: nopFinisher{}, Clock: e.clk,
		Targets: &admin.TargetConfig{AWS: &al, AWSParam: "--aws-target-arns (XJOB_AWS_TARGET_ARNS)"}})
	if err != nil {
		t.Fatal(err)
	}
	return e, svc
}

func (e *env) awsJob(source string) xjob.Job {
	j := e.spec(xjob.ScheduleCron, "0 0 * * * ?")
	j.Handler, j.GlueType, j.GlueSource = "", xjob.GlueAWS, source
	return j
}

// TestAWSJobStoredCanonical: an AWS job naming an allowed ARN is stored
// in canonical form.
func TestAWSJobStoredCanonical(t *testing.T) {
	t.Parallel()
	e, svc := awsEnv(t)
	j, err := svc.CreateJob(e.ctx, e.awsJob(`{ "input": "{}", "arn": "`+allowedFn+`" }`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"arn":"` + allowedFn + `","input":"{}"}`; j.GlueSource != want {
		t.Fatalf("stored %s, want %s", j.GlueSource, want)
	}
}

// TestAWSJobRefusals: an ARN outside the allow list, a malformed spec or
// a job setting a target cannot have is refused on create, update and
// apply with the field named (the list's setting named for an unknown
// ARN), and nothing is written.
func TestAWSJobRefusals(t *testing.T) {
	t.Parallel()
	e, svc := awsEnv(t)
	other, err := svc.CreateJob(e.ctx, e.awsJob(`{"arn":"`+allowedQ+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, source, field, msg string
		broadcast                bool
	}{
		{"unknown arn", `{"arn":"arn:aws:sqs:us-east-1:123456789012:other"}`, "glueSource.arn", "list it in --aws-target-arns (XJOB_AWS_TARGET_ARNS)", false},
		{"qualified arn", `{"arn":"` + allowedFn + `:live"}`, "glueSource.arn", "not an allowed target", false},
		{"bad arn", `{"arn":"arn:aws:s3:::bucket"}`, "glueSource.arn", "not a region", false},
		{"input not json", `{"arn":"` + allowedFn + `","input":"{{param}}"}`, "glueSource.input", "takes JSON", false},
		{"unknown key", `{"arn":"` + allowedFn + `","url":"http://x"}`, "glueSource", "not an AWS target spec", false},
		{"broadcast", `{"arn":"` + allowedFn + `"}`, "executorRouteStrategy", "an AWS job is called once", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := e.jobCount()
			j := e.awsJob(tc.source)
			if tc.broadcast {
				j.RouteStrategy = xjob.RouteShardingBroadcast
			}
			_, err := svc.CreateJob(e.ctx, j)
			if f := problemFields(t, err); len(f) == 0 || f[0] != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("CreateJob = %v, want a problem on %s: …%s…", err, tc.field, tc.msg)
			}
			if e.jobCount() != n {
				t.Fatal("a refused job was written")
			}
			u := other
			u.GlueSource, u.RouteStrategy = j.GlueSource, j.RouteStrategy
			if _, err := svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: u}); len(problemFields(t, err)) == 0 {
				t.Fatalf("UpdateJob = %v", err)
			}
			if now, _ := e.db.JobGet(e.ctx, other.ID); now.GlueSource != other.GlueSource || now.RouteStrategy != other.RouteStrategy {
				t.Fatal("a refused update was written")
			}
			m := xjob.Manifest{Jobs: []xjob.JobSpec{{Name: "aws", Group: "xjob-demo", Description: "d", Author: "a",
				ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 0 * * * ?", GlueType: xjob.GlueAWS, GlueSource: tc.source,
				RouteStrategy: j.RouteStrategy}}}
			if _, err := svc.Apply(e.ctx, admin.ApplyParams{Manifest: m}); len(problemFields(t, err)) == 0 ||
				problemFields(t, err)[0] != "jobs[0]."+tc.field {
				t.Fatalf("Apply = %v", err)
			}
		})
	}
}

// TestAWSJobsOffWithoutClient: a deployment with no AWS client (HTTP
// jobs only, or none) refuses AWS jobs at save.
func TestAWSJobsOffWithoutClient(t *testing.T) {
	t.Parallel()
	e, svc, _ := targetEnv(t)
	for _, s := range []*admin.Service{e.svc, svc} {
		_, err := s.CreateJob(e.ctx, e.awsJob(`{"arn":"`+allowedFn+`"}`))
		if f := problemFields(t, err); len(f) != 1 || f[0] != "glueType" || !strings.Contains(err.Error(), "AWS jobs are not available") {
			t.Fatalf("CreateJob = %v", err)
		}
	}
}
