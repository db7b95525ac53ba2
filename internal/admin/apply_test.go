package admin_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
)

func manifestOf(jobs ...xjob.JobSpec) xjob.Manifest {
	return xjob.Manifest{Groups: []xjob.GroupSpec{{AppName: "xjob-demo", Title: "demo", AddressType: xjob.AddressAuto}}, Jobs: jobs}
}

func cronSpec(name string, id int64) xjob.JobSpec {
	return xjob.JobSpec{Name: name, ID: id, Group: "xjob-demo", Description: "job " + name, Author: "ops",
		ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 0 3 * * ?", Handler: "h"}
}

// Re-applying an unchanged manifest after a person started a job and
// edited its description in xjob changes nothing; the plan says which
// fields xjob keeps. A field the manifest changes is written, old → new.
func TestApplyKeepsEditsMadeInXjob(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := manifestOf(cronSpec("a", 501), cronSpec("b", 502))
	if _, err := e.svc.Apply(e.ctx, admin.ApplyParams{Manifest: m}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.StartJob(e.ctx, 501); err != nil {
		t.Fatal(err)
	}
	a, _ := e.svc.GetJob(e.ctx, 501)
	a.Description = "edited in xjob"
	if _, err := e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: a}); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.Apply(e.ctx, admin.ApplyParams{Manifest: m})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing is written, and the plan says which of the file's values
	// stay unwritten (a "keep" item), rather than counting a unchanged.
	if len(res.Plan) != 1 || res.Plan[0].Action != xjob.ActionKeep || res.Plan[0].Key != "a" ||
		len(res.Plan[0].Kept) != 2 || res.Unchanged != 2 {
		t.Fatalf("re-apply of an unchanged file planned %+v (unchanged %d)", res.Plan, res.Unchanged)
	}
	got, _ := e.svc.GetJob(e.ctx, 501)
	if got.TriggerStatus != xjob.StatusRunning || got.Description != "edited in xjob" {
		t.Fatalf("re-apply reverted xjob's edits: status %d, desc %q", got.TriggerStatus, got.Description)
	}

	// The file changes the param: written; started and jobDesc stay xjob's.
	m.Jobs[0].Param = "new"
	res, err = e.svc.Apply(e.ctx, admin.ApplyParams{Manifest: m, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan) != 1 {
		t.Fatalf("plan %+v, want one update", res.Plan)
	}
	want := []xjob.FieldChange{{Field: "executorParam", Old: "", New: "new", Side: xjob.SideFile}}
	if !reflect.DeepEqual(res.Plan[0].Diffs, want) {
		t.Fatalf("diffs %+v, want %+v", res.Plan[0].Diffs, want)
	}
	kept := map[string]string{}
	for _, k := range res.Plan[0].Kept {
		kept[k.Field] = k.Old + " → " + k.New + " (" + k.Side + ")"
	}
	if kept["started"] != "true → false (xjob)" || kept["jobDesc"] != "edited in xjob → job a (xjob)" {
		t.Fatalf("kept %v", kept)
	}
	// Overwrite takes the file's side everywhere.
	res, err = e.svc.Apply(e.ctx, admin.ApplyParams{Manifest: m, Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = e.svc.GetJob(e.ctx, 501)
	if got.TriggerStatus != xjob.StatusStopped || got.Param != "new" || got.Description != "job a" {
		t.Fatalf("overwrite left %+v", got)
	}
	if d := res.Plan[0].Diffs; !slices.ContainsFunc(d, func(c xjob.FieldChange) bool {
		return c.Field == "started" && c.Old == "true" && c.New == "false"
	}) {
		t.Fatalf("overwrite's plan does not show started: true → false: %+v", d)
	}
}

// A field changed on both sides, or only in xjob, is reported when it is
// the job's only difference: the plan has a "keep" item naming it, with
// whose change stays, and nothing is written.
func TestApplyReportsKeptFieldsAlone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		file      string // the file's jobDesc at the second apply
		wantSide  string
		wantValue string
	}{
		{"changed only in xjob", "job a", xjob.SideXjob, "job a"},
		{"changed on both sides", "changed in the file", xjob.SideBoth, "changed in the file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			m := manifestOf(cronSpec("a", 601))
			if _, err := e.svc.Apply(e.ctx, admin.ApplyParams{Manifest: m}); err != nil {
				t.Fatal(err)
			}
			j, _ := e.svc.GetJob(e.ctx, 601)
			j.Description = "edited in xjob"
			if _, err := e.svc.UpdateJob(e.ctx, admin.UpdateJobParams{Job: j}); err != nil {
				t.Fatal(err)
			}
			m.Jobs[0].Description = tc.file
			for _, dry := range []bool{true, false} {
				res, err := e.svc.Apply(e.ctx, admin.ApplyParams{Manifest: m, DryRun: dry})
				if err != nil {
					t.Fatal(err)
				}
				want := []xjob.PlanItem{{Kind: "job", Key: "a", Action: xjob.ActionKeep, ID: 601, Kept: []xjob.FieldChange{
					{Field: "jobDesc", Old: "edited in xjob", New: tc.wantValue, Side: tc.wantSide}}}}
				if !reflect.DeepEqual(res.Plan, want) || res.Unchanged != 1 {
					t.Fatalf("dry %v: plan %+v (unchanged %d), want %+v", dry, res.Plan, res.Unchanged, want)
				}
			}
			if got, _ := e.svc.GetJob(e.ctx, 601); got.Description != "edited in xjob" || got.Version != j.Version+1 {
				t.Fatalf("a keep item was written: %+v", got)
			}
		})
	}
}

// KeepStarted (an import): Overwrite takes the file's fields but never
// stops a job started in xjob, and a job with no record keeps its state.
func TestApplyKeepStartedUnderOverwrite(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := manifestOf(cronSpec("xxl-job-6", 6), cronSpec("xxl-job-7", 7))
	if _, err := e.svc.Apply(e.ctx, admin.ApplyParams{Manifest: m, Origin: "db", KeepStarted: true}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{6, 7} {
		if _, err := e.svc.StartJob(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	m.Jobs[1].Param = "from xxl-job"
	res, err := e.svc.Apply(e.ctx, admin.ApplyParams{Manifest: m, Origin: "db", Overwrite: true, KeepStarted: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{6, 7} {
		if got, _ := e.svc.GetJob(e.ctx, id); got.TriggerStatus != xjob.StatusRunning {
			t.Fatalf("--overwrite stopped job %d: plan %+v", id, res.Plan)
		}
	}
	if got, _ := e.svc.GetJob(e.ctx, 7); got.Param != "from xxl-job" {
		t.Fatalf("overwrite did not take the param: %q", got.Param)
	}
	for _, it := range res.Plan {
		for _, d := range it.Diffs {
			if d.Field == "started" {
				t.Fatalf("the plan changes started: %+v", it)
			}
		}
	}
	// A job created in xjob, not by an apply, matched by id: its state stays.
	j, err := e.svc.CreateJob(e.ctx, xjob.Job{GroupID: e.group.ID, Description: "by hand", Author: "ops", Handler: "h",
		ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 0 3 * * ?"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.StartJob(e.ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	m.Jobs = append(m.Jobs, xjob.JobSpec{ID: j.ID, Group: "xjob-demo", Description: "by hand", Author: "ops", Handler: "h",
		ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 0 3 * * ?"})
	if _, err := e.svc.Apply(e.ctx, admin.ApplyParams{Manifest: m, Origin: "db", Overwrite: true, KeepStarted: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.svc.GetJob(e.ctx, j.ID); got.TriggerStatus != xjob.StatusRunning {
		t.Fatal("an import stopped a job created and started in xjob")
	}
	// Importing again: jobs started in xjob are the import's expected
	// course, not a difference to report every time.
	res, err = e.svc.Apply(e.ctx, admin.ApplyParams{Manifest: m, Origin: "db", KeepStarted: true, DryRun: true})
	if err != nil || len(res.Plan) != 0 {
		t.Fatalf("re-import planned %+v (%v)", res.Plan, err)
	}
}

// A manifest whose children form a cycle is refused whole, naming the
// jobs, and nothing is written.
func TestApplyCycleWritesNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, b, c := cronSpec("a", 50), cronSpec("b", 51), cronSpec("c", 52)
	a.Children, b.Children, c.Children = []string{"51"}, []string{"a"}, []string{"a"}
	before := e.jobCount()
	for _, dry := range []bool{true, false} {
		_, err := e.svc.Apply(e.ctx, admin.ApplyParams{Manifest: manifestOf(a, b, c), DryRun: dry})
		if err == nil || !strings.Contains(err.Error(), "a → b → a") {
			t.Fatalf("dry %v: %v, want the cycle a → b → a", dry, err)
		}
	}
	if n := e.jobCount(); n != before {
		t.Fatalf("a refused apply wrote %d jobs", n-before)
	}
}

// A job imported from one origin is not overwritten by a manifest from another.
func TestApplyOriginClash(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := manifestOf(cronSpec("xxl-job-5", 5))
	if _, err := e.svc.Apply(e.ctx, admin.ApplyParams{Manifest: m, Origin: "db-one"}); err != nil {
		t.Fatal(err)
	}
	m.Jobs[0].Param = "other"
	_, err := e.svc.Apply(e.ctx, admin.ApplyParams{Manifest: m, Origin: "db-two"})
	if err == nil || !strings.Contains(err.Error(), "imported from db-one") {
		t.Fatalf("apply from another origin: %v", err)
	}
}

func TestCycles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		graph map[string][]string
		want  [][]string
	}{
		{map[string][]string{"a": {"b"}, "b": {"c"}}, nil},
		{map[string][]string{"a": {"b"}, "b": {"a"}}, [][]string{{"a", "b", "a"}}},
		{map[string][]string{"x": {"y"}, "y": {"z"}, "z": {"y"}}, [][]string{{"y", "z", "y"}}},
	} {
		if got := admin.Cycles(tc.graph); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Cycles(%v) = %v, want %v", tc.graph, got, tc.want)
		}
	}
}
