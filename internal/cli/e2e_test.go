package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/app/local"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/clock"
)

// These tests run the CLI against `xjob local` (local.Run on a temporary
// SQLite file and a free loopback port), as a person would.

// localServer is a running xjob local.
type localServer struct {
	info local.Info
	api  *adminclient.Client
}

func startLocal(t *testing.T) *localServer {
	t.Helper()
	return startLocalWith(t, nil)
}

// startLocalWith is startLocal with tune applied to the configuration.
func startLocalWith(t *testing.T, tune func(*local.Config)) *localServer {
	t.Helper()
	cfg := local.Defaults()
	cfg.DB = filepath.Join(t.TempDir(), "xjob.db")
	cfg.Listen = "127.0.0.1:0"
	cfg.Shards = 1
	cfg.Grace = 5 * time.Second
	cfg.Logger = slog.New(slog.DiscardHandler)
	if tune != nil {
		tune(&cfg)
	}
	ready := make(chan local.Info, 1)
	cfg.Ready = func(i local.Info) { ready <- i }
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- local.Run(ctx, cfg) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("local.Run: %v", err)
		}
	})
	select {
	case info := <-ready:
		api, err := adminclient.New(info.URL, info.AdminToken)
		if err != nil {
			t.Fatal(err)
		}
		return &localServer{info: info, api: api}
	case err := <-done:
		t.Fatalf("local.Run: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("xjob local did not become ready")
	}
	return nil
}

// cli runs one xjob command against the server with the wall clock, in UTC.
func (s *localServer) cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return s.cliIn(t, "", args...)
}

func (s *localServer) cliIn(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	env := map[string]string{envServer: s.info.URL, envToken: s.info.AdminToken}
	e := envWith(&out, &errb, env)
	e.stdin = strings.NewReader(stdin)
	code := run(t.Context(), args, e)
	return out.String(), errb.String(), code
}

func envWith(out, errb io.Writer, vars map[string]string) env {
	return env{
		stdin: strings.NewReader(""), stdout: out, stderr: errb,
		getenv: func(k string) string { return vars[k] }, clock: clock.Real{}, loc: time.UTC,
		httpClient: &http.Client{Timeout: 30 * time.Second},
	}
}

func mustRun(t *testing.T, s *localServer, args ...string) string {
	t.Helper()
	out, errOut, code := s.cli(t, args...)
	if code != 0 {
		t.Fatalf("xjob %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

const manifestV1 = `
groups:
  - appname: billing-app
    title: Billing
    addressType: 1
    addressList: [http://127.0.0.1:9/]
jobs:
  - name: nightly-report
    group: billing-app
    jobDesc: Nightly report
    author: ann
    scheduleType: CRON
    scheduleConf: "0 0 2 * * ?"
    timeZone: Europe/Paris
    executorHandler: report
    executorRouteStrategy: ROUND
    executorTimeout: 60
    executorFailRetryCount: 2
    started: true
  - name: cleanup
    group: billing-app
    jobDesc: Cleanup
    author: bob
    scheduleType: FIX_RATE
    scheduleConf: "3600"
    executorHandler: cleanup
    children: [nightly-report]
  - id: 500
    group: billing-app
    jobDesc: Kept id
    author: cy
    executorHandler: legacy
`

func TestApplyExportEndToEnd(t *testing.T) {
	t.Parallel()
	s := startLocal(t)
	ctx := t.Context()
	dir := t.TempDir()
	v1 := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(v1, []byte(manifestV1), 0o644); err != nil {
		t.Fatal(err)
	}

	// A dry run prints the plan and writes nothing.
	out := mustRun(t, s, "apply", "-f", v1, "--dry-run")
	for _, want := range []string{"+ group billing-app", "+ job nightly-report", "+ job cleanup", "+ job #500 (id 500)",
		"Plan: 4 to create, 0 to update, 0 to delete, 0 unchanged."} {
		if !strings.Contains(out, want) {
			t.Fatalf("dry-run output lacks %q:\n%s", want, out)
		}
	}
	if gs, _ := s.api.GroupList(ctx, adminclient.GroupListParams{}); len(gs) != 0 {
		t.Fatalf("dry run created groups: %+v", gs)
	}

	out = mustRun(t, s, "apply", "-f", v1)
	if !strings.Contains(out, "Applied: 4 to create") {
		t.Fatalf("apply output:\n%s", out)
	}
	m, err := s.api.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]xjob.JobSpec{}
	for _, j := range m.Jobs {
		byKey[j.Key()] = j
	}
	nightly, cleanup, kept := byKey["nightly-report"], byKey["cleanup"], byKey["#500"]
	if kept.ID != 500 || kept.Handler != "legacy" || nightly.ID == 0 || !nightly.Started || nightly.TimeZone != "Europe/Paris" ||
		nightly.TimeoutSeconds != 60 || nightly.FailRetryCount != 2 || nightly.RouteStrategy != xjob.RouteRound {
		t.Fatalf("jobs after apply: %+v", m.Jobs)
	}
	if len(cleanup.Children) != 1 || cleanup.Children[0] != "nightly-report" || cleanup.Started {
		t.Fatalf("cleanup after apply: %+v", cleanup)
	}
	j, err := s.api.JobGet(ctx, nightly.ID)
	if err != nil || j.Name != "nightly-report" || j.TriggerNextTime == 0 {
		t.Fatalf("nightly job: %+v, %v", j, err)
	}

	// Idempotent: a second apply plans nothing.
	out = mustRun(t, s, "apply", "-f", v1, "-o", "json")
	var res xjob.ApplyResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("apply -o json: %v\n%s", err, out)
	}
	if len(res.Plan) != 0 || res.Unchanged != 4 {
		t.Fatalf("second apply planned %+v (unchanged %d)", res.Plan, res.Unchanged)
	}

	// export writes the same format; applying it plans nothing either.
	exported := filepath.Join(dir, "export.yaml")
	mustRun(t, s, "export", "-f", exported)
	out = mustRun(t, s, "apply", "-f", exported, "--dry-run")
	if !strings.Contains(out, "Plan: 0 to create, 0 to update, 0 to delete, 4 unchanged.") {
		t.Fatalf("re-applying the export:\n%s", out)
	}
	jsonOut := mustRun(t, s, "export", "--format", "json")
	if _, _, err := parseManifest([]byte(jsonOut)); err != nil {
		t.Fatalf("export --format json does not parse back: %v", err)
	}
	if out := mustRun(t, s, "export", "-o", "json"); out != jsonOut || !json.Valid([]byte(out)) {
		t.Fatalf("export -o json is not the JSON export:\n%s", out)
	}

	// A field changed in xjob and in the file, and nothing else: the plan
	// says the file's value stays unwritten, not "unchanged".
	edited, _ := s.api.JobGet(ctx, nightly.ID)
	edited.Description = "Edited in xjob"
	if _, err := s.api.JobUpdate(ctx, nightly.ID, edited); err != nil {
		t.Fatal(err)
	}
	both := strings.Replace(manifestV1, "jobDesc: Nightly report", "jobDesc: Nightly report v2", 1)
	out, _, _ = s.cliIn(t, both, "apply", "-f", "-", "--dry-run")
	if !strings.Contains(out, "= job nightly-report (id "+itoa(nightly.ID)+")\n    jobDesc: \"Edited in xjob\" kept (the file says \"Nightly report v2\"; changed in both since the last apply") ||
		!strings.Contains(out, "Plan: 0 to create, 0 to update, 0 to delete, 3 unchanged, 1 where xjob's values stay.") {
		t.Fatalf("dry run after a change on both sides:\n%s", out)
	}

	// A bad manifest is refused as a whole: nothing is written.
	bad := strings.Replace(manifestV1, `scheduleConf: "3600"`, `scheduleConf: "-5"`, 1)
	bad = strings.Replace(bad, "name: nightly-report\n", "name: nightly-report\n    executorParam: changed\n", 1)
	_, errOut, code := s.cliIn(t, bad, "apply", "-f", "-")
	line := strings.Count(bad[:strings.Index(bad, `scheduleConf: "-5"`)], "\n") + 1
	if code != exitUsage || !strings.Contains(errOut, fmt.Sprintf(`line %d, job "cleanup": scheduleConf: FIX_RATE needs`, line)) {
		t.Fatalf("bad manifest: exit %d, stderr:\n%s", code, errOut)
	}
	if j, _ := s.api.JobGet(ctx, nightly.ID); j.Param != "" {
		t.Fatalf("a refused manifest changed a job: param %q", j.Param)
	}
	_, errOut, code = s.cliIn(t, "jobs:\n  - name: x\n    bogus: 1\n", "apply", "-f", "-")
	if code != exitUsage || !strings.Contains(errOut, "bogus") {
		t.Fatalf("unknown field: exit %d, stderr:\n%s", code, errOut)
	}

	// Change one job, drop another, prune.
	v2 := strings.Replace(manifestV1, `"0 0 2 * * ?"`, `"0 30 3 * * ?"`, 1)
	v2 = v2[:strings.Index(v2, "  - name: cleanup")] + v2[strings.Index(v2, "  - id: 500"):]
	out, errOut, code = s.cliIn(t, v2, "apply", "-f", "-", "--prune")
	if code != 2 || !strings.Contains(errOut, "--prune would delete 1 groups and jobs") || strings.Contains(errOut, "Usage:") {
		t.Fatalf("prune without --yes on a pipe: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = s.cliIn(t, v2, "apply", "-f", "-", "--prune", "--yes")
	if code != 0 || !strings.Contains(out, "~ job nightly-report (id "+itoa(nightly.ID)+")\n    scheduleConf: \"0 0 2 * * ?\" → \"0 30 3 * * ?\"") ||
		!strings.Contains(out, "- job cleanup") || !strings.Contains(out, "Applied: 0 to create, 1 to update, 1 to delete, 2 unchanged.") {
		t.Fatalf("prune: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := s.api.JobGet(ctx, cleanup.ID); err == nil {
		t.Fatal("pruned job still there")
	}
	if j, _ := s.api.JobGet(ctx, nightly.ID); j.ScheduleConf != "0 30 3 * * ?" || j.TriggerStatus != xjob.StatusRunning {
		t.Fatalf("updated job: %+v", j)
	}
}

// A manifest with problems of every kind — an unknown field, a value of
// the wrong type, references the server cannot resolve — is reported in
// one run, each problem at its field's line, with exit code 2.
func TestApplyReportsEveryProblemInOneRound(t *testing.T) {
	t.Parallel()
	s := startLocal(t)
	const m = `groups:
  - appname: billing-app
    title: Billing
jobs:
  - name: a
    group: billing-app
    jobDesc: A
    author: ann
    executorTimeout: soon
    schedulConf: "0 0 3 * * ?"
    executorHandler: h
    children: [nobody]
  - name: b
    group: nowhere
    jobDesc: B
    author: bob
    executorHandler: h
`
	_, errOut, code := s.cliIn(t, m, "apply", "-f", "-")
	for _, want := range []string{
		"4 problems:",
		`line 9, job "a": executorTimeout: must be a whole number, not string`,
		`line 10, job "a": unknown field "schedulConf" (did you mean "scheduleConf"?)`,
		`line 12, job "a": children: "nobody" is not a job`,
		`line 14, job "b": group: no group has app name "nowhere"`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if code != exitUsage || strings.Contains(errOut, "Usage:") || t.Failed() {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if page, _ := s.api.JobList(t.Context(), adminclient.JobListParams{}); len(page.Items) != 0 {
		t.Fatalf("a refused manifest wrote jobs: %+v", page.Items)
	}
}

func TestBulkStartStopDeleteEndToEnd(t *testing.T) {
	t.Parallel()
	s := startLocal(t)
	ctx := t.Context()
	mustRun(t, s, "apply", "-f", "-") // an empty manifest plans nothing
	g, err := s.api.GroupCreate(ctx, xjob.Group{AppName: "bulk-app", Title: "Bulk", AddressType: xjob.AddressManual,
		AddressList: []string{"http://127.0.0.1:9/"}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 {
		j, err := s.api.JobCreate(ctx, xjob.Job{GroupID: g.ID, Description: "bulk", Author: "t",
			ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "600", Handler: "h"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, itoa(j.ID))
	}
	out := mustRun(t, s, append([]string{"job", "start"}, ids...)...)
	if strings.Count(out, " ok") != 3 {
		t.Fatalf("bulk start:\n%s", out)
	}
	for _, id := range ids {
		j, _ := s.api.JobGet(ctx, mustID(t, id))
		if j.TriggerStatus != xjob.StatusRunning {
			t.Fatalf("job %s not started", id)
		}
	}
	// A filter selects the group's jobs; one failure (a missing id) fails
	// the command but not the others.
	mustRun(t, s, "job", "stop", "--group", itoa(g.ID))
	page, _ := s.api.JobList(ctx, adminclient.JobListParams{Status: new(xjob.StatusRunning)})
	if len(page.Items) != 0 {
		t.Fatalf("still running after bulk stop: %+v", page.Items)
	}
	out, _, code := s.cli(t, "job", "delete", ids[0], "999999", "-o", "json")
	if code != exitFailed || !strings.Contains(out, `"status": 404`) {
		t.Fatalf("bulk delete with a missing id: exit %d\n%s", code, out)
	}
	if _, err := s.api.JobGet(ctx, mustID(t, ids[0])); err == nil {
		t.Fatal("bulk delete left the existing job")
	}
	_, errOut, code := s.cli(t, "job", "start")
	if code != exitUsage || !strings.Contains(errOut, "give job ids") {
		t.Fatalf("job start with nothing: exit %d %s", code, errOut)
	}
}

func mustID(t *testing.T, s string) int64 {
	t.Helper()
	id, err := parseID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestFixDelayCLIManifestAndExport creates a FIX_DELAY job with flags and
// another from a manifest on a real local server, checks that a bad delay
// is refused naming its field (flags, /v1 and a manifest line) with
// nothing written, and that the export carries the type and re-applies
// as unchanged.
func TestFixDelayCLIManifestAndExport(t *testing.T) {
	t.Parallel()
	s := startLocal(t)
	ctx := t.Context()
	const manifest = `groups:
  - appname: drain-app
    title: Drain
    addressType: 1
    addressList: [http://127.0.0.1:9/]
jobs:
  - name: drain
    group: drain-app
    jobDesc: Drain the queue
    author: ann
    scheduleType: FIX_DELAY
    scheduleConf: "30"
    executorHandler: drain
    executorTimeout: 600
    started: true
`
	out, errOut, code := s.cliIn(t, manifest, "apply", "-f", "-")
	if code != 0 || !strings.Contains(out, "Applied: 2 to create") {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	m, err := s.api.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Jobs) != 1 || m.Jobs[0].ScheduleType != xjob.ScheduleFixDelay || m.Jobs[0].ScheduleConf != "30" || !m.Jobs[0].Started {
		t.Fatalf("exported jobs: %+v", m.Jobs)
	}
	drain, err := s.api.JobGet(ctx, m.Jobs[0].ID)
	if err != nil || drain.TriggerNextTime == 0 {
		t.Fatalf("applied job: %+v, %v", drain, err)
	}
	exported := mustRun(t, s, "export")
	out, _, _ = s.cliIn(t, exported, "apply", "-f", "-", "--dry-run")
	if !strings.Contains(out, "Plan: 0 to create, 0 to update, 0 to delete, 2 unchanged.") {
		t.Fatalf("re-applying the export:\n%s", out)
	}

	group := itoa(drain.GroupID)
	out = mustRun(t, s, "job", "create", "--group", group, "--desc", "flags", "--author", "bob", "--handler", "h",
		"--fix-delay", "5", "-o", "json")
	var made xjob.Job
	if err := json.Unmarshal([]byte(out), &made); err != nil || made.ScheduleType != xjob.ScheduleFixDelay || made.ScheduleConf != "5" {
		t.Fatalf("job create --fix-delay: %v\n%s", err, out)
	}
	if got := mustRun(t, s, "job", "get", itoa(made.ID)); !strings.Contains(got, "Schedule:      5s after each run\n") {
		t.Fatalf("job get shows:\n%s", got)
	}

	// Bad delays: refused with the field named, nothing written.
	before, err := s.api.JobList(ctx, adminclient.JobListParams{})
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code = s.cli(t, "job", "create", "--group", group, "--desc", "bad", "--author", "bob", "--handler", "h", "--fix-delay", "0")
	if code == 0 || !strings.Contains(errOut, "scheduleConf") || !strings.Contains(errOut, "FIX_DELAY needs") {
		t.Fatalf("--fix-delay 0: exit %d\n%s", code, errOut)
	}
	_, err = s.api.JobCreate(ctx, xjob.Job{GroupID: drain.GroupID, Description: "bad", Author: "bob", Handler: "h",
		ScheduleType: xjob.ScheduleFixDelay, ScheduleConf: "1.5"})
	var ae *adminclient.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || len(ae.Problems) != 1 || ae.Problems[0].Field != "scheduleConf" {
		t.Fatalf("/v1 with FIX_DELAY 1.5: %v", err)
	}
	bad := strings.Replace(manifest, `scheduleConf: "30"`, `scheduleConf: "30s"`, 1)
	bad = strings.Replace(bad, "jobDesc: Drain the queue", "jobDesc: Changed", 1)
	_, errOut, code = s.cliIn(t, bad, "apply", "-f", "-")
	line := strings.Count(bad[:strings.Index(bad, `scheduleConf: "30s"`)], "\n") + 1
	if code != exitUsage || !strings.Contains(errOut, fmt.Sprintf(`line %d, job "drain": scheduleConf: FIX_DELAY needs`, line)) {
		t.Fatalf("bad manifest: exit %d, stderr:\n%s", code, errOut)
	}
	after, err := s.api.JobList(ctx, adminclient.JobListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Items) != len(before.Items) {
		t.Fatalf("refused input wrote jobs: %d before, %d after", len(before.Items), len(after.Items))
	}
	if j, _ := s.api.JobGet(ctx, drain.ID); j.Description != "Drain the queue" {
		t.Fatalf("a refused manifest changed a job: %q", j.Description)
	}
}
