package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/xxlimport"
	"github.com/xjobdev/xjob/internal/xxlimport/xxltest"
	"github.com/xjobdev/xjob/pkg/adminclient"
)

// xxlRows is an xxl-job installation: groups, jobs (every column set),
// GLUE history and a user, as an xxl-job admin writes them.
const xxlRows = `
INSERT INTO xxl_job_group (id, app_name, title, address_type, address_list, update_time) VALUES
  (1, 'xxl-job-executor-sample', 'Sample', 0, NULL, '2024-01-01 10:00:00'),
  (2, 'billing-exec', 'Billing', 1, 'http://10.0.0.5:9999/,http://10.0.0.6:9999/', '2024-01-01 10:00:00'),
  (3, 'ab', 'Too short', 0, NULL, '2024-01-01 10:00:00');
INSERT INTO xxl_job_info (id, job_group, job_desc, add_time, update_time, author, alarm_email,
  schedule_type, schedule_conf, misfire_strategy, executor_route_strategy, executor_handler, executor_param,
  executor_block_strategy, executor_timeout, executor_fail_retry_count, glue_type, glue_source, glue_remark,
  glue_updatetime, child_jobid, trigger_status, trigger_last_time, trigger_next_time) VALUES
  (1, 1, 'Nightly report', '2024-01-01 10:00:00', '2024-02-01 10:00:00', 'ann', 'ops@example.com',
   'CRON', '0 0 2 * * ?', 'FIRE_ONCE_NOW', 'ROUND', 'demoJobHandler', 'p=1',
   'DISCARD_LATER', 30, 2, 'BEAN', '', 'GLUE代码初始化', '2024-01-01 10:00:00', '7', 1, 1706745600000, 1706832000000),
  (7, 2, 'Shell cleanup', '2024-01-01 10:00:00', '2024-02-01 10:00:00', 'bob', 'not-an-address',
   'FIX_RATE', '60', 'DO_NOTHING', 'SHARDING_BROADCAST', '', '--all',
   'COVER_EARLY', 0, 0, 'GLUE_SHELL', '#!/bin/bash\necho hi', 'v2', '2024-01-02 10:00:00', '', 0, 0, 0),
  (12, 3, 'In a bad group', NULL, NULL, 'cy', NULL,
   'NONE', NULL, 'DO_NOTHING', 'FIRST', 'h', NULL, 'SERIAL_EXECUTION', 0, 0, 'BEAN', NULL, NULL, NULL, NULL, 0, 0, 0),
  (13, 1, 'Manual only', NULL, NULL, NULL, NULL,
   'NONE', NULL, 'DO_NOTHING', 'LAST', 'manualHandler', NULL, 'SERIAL_EXECUTION', 0, 1, 'BEAN', NULL, NULL, NULL, '12,14', 0, 0, 0),
  (14, 1, 'Cycle back', NULL, NULL, 'cy', NULL,
   'NONE', NULL, 'DO_NOTHING', 'FIRST', 'h', NULL, 'SERIAL_EXECUTION', 0, 0, 'BEAN', NULL, NULL, NULL, '13', 0, 0, 0);
INSERT INTO xxl_job_logglue (job_id, glue_type, glue_source, glue_remark, add_time, update_time) VALUES
  (7, 'GLUE_SHELL', 'echo v1', 'v1', '2024-01-01 10:00:00', '2024-01-01 10:00:00'),
  (7, 'GLUE_SHELL', '#!/bin/bash\necho hi', 'v2', '2024-01-02 10:00:00', '2024-01-02 10:00:00');
INSERT INTO xxl_job_log (id, job_group, job_id, executor_address, executor_handler, executor_param,
  executor_sharding_param, executor_fail_retry_count, trigger_time, trigger_code, trigger_msg,
  handle_time, handle_code, handle_msg, alarm_status) VALUES
  (101, 1, 1, 'http://10.0.0.7:9999/', 'demoJobHandler', 'p=1', NULL, 0, '2024-02-01 02:00:00', 200,
   '任务触发类型：Cron触发<br>', '2024-02-01 02:00:03', 200, 'ok', 0),
  (102, 1, 1, 'http://10.0.0.7:9999/', 'demoJobHandler', 'p=1', NULL, 0, '2024-02-02 09:30:00', 200,
   'Trigger type: Manual trigger<br>', '2024-02-02 09:30:01', 500, 'boom', 2),
  (103, 3, 12, NULL, 'h', NULL, NULL, 0, '2024-02-02 10:00:00', 500, 'no address', NULL, 0, NULL, 3);
INSERT INTO xxl_job_log_report (trigger_day, running_count, suc_count, fail_count, update_time) VALUES
  ('2024-02-01 00:00:00', 0, 1, 0, NULL), ('2024-02-02 00:00:00', 0, 0, 2, NULL);
INSERT INTO xxl_job_user (username, password, role, permission) VALUES
  ('admin', 'e10adc3949ba59abbe56e057f20f883e', 1, NULL),
  ('annie', 'e10adc3949ba59abbe56e057f20f883e', 0, '2,3'),
  ('x', 'e10adc3949ba59abbe56e057f20f883e', 0, NULL);
`

func TestImportXxlJobEndToEnd(t *testing.T) {
	t.Parallel()
	db := xxltest.Start(t)
	for _, version := range []string{"2.4", "3.4"} {
		t.Run(version, func(t *testing.T) {
			name := "xxl_job_" + strings.ReplaceAll(version, ".", "")
			sqlDB := db.CreateDatabase(t, name, xxltest.SchemaFile("xxl-job-"+version+".sql"))
			if _, err := sqlDB.Exec(xxlRows); err != nil {
				t.Fatalf("insert rows: %v", err)
			}
			s := startLocal(t)
			ctx := t.Context()
			// A group already on the server takes id 1: the imported group
			// 1 gets another id, its jobs find it by app name.
			other, err := s.api.GroupCreate(ctx, xjob.Group{AppName: "already-here", Title: "Here", AddressType: xjob.AddressAuto})
			if err != nil || other.ID != 1 {
				t.Fatalf("pre-existing group: %+v %v", other, err)
			}

			_, errOut, code := s.cli(t, "import", "xxl-job", "--mysql", db.DSN(name))
			if code != exitUsage || !strings.Contains(errOut, "--tz is required") {
				t.Fatalf("import without --tz: exit %d\n%s", code, errOut)
			}
			out := mustRun(t, s, "import", "xxl-job", "--mysql", db.DSN(name), "--tz", "Asia/Shanghai", "--dry-run")
			if !strings.Contains(out, "+ job xxl-job-1 (id 1)") {
				t.Fatalf("dry run:\n%s", out)
			}
			if page, _ := s.api.JobList(ctx, adminclient.JobListParams{}); len(page.Items) != 0 {
				t.Fatalf("dry run imported jobs: %+v", page.Items)
			}

			out = mustRun(t, s, "import", "xxl-job", "--mysql", db.DSN(name), "--tz", "Asia/Shanghai")
			for _, want := range []string{
				"+ group xxl-job-executor-sample", "+ group billing-exec (id 2)",
				"+ job xxl-job-1 (id 1)", "+ job xxl-job-7 (id 7)", "+ job xxl-job-13 (id 13)",
				"group 1 (xxl-job-executor-sample): id taken by group \"already-here\"",
				"group 3 (ab): not imported",
				"job 12: not imported: its executor group 3 was not imported",
				"job 13: empty author set to \"xxl-job\"",
				"job 13: child job 12 dropped",
				"job 7: alarm e-mail \"not-an-address\" dropped",
				"user annie: right to group 3 dropped: the group was not imported",
				"user \"x\": not carried over: the username is not one xjob accepts",
				"xxl_job_log and xxl_job_log_report: trigger logs and report days not carried over (--logs SINCE carries them)",
				"job 14: child job 13 dropped: it closes the cycle 13 → 14 → 13",
				"Status: new jobs arrive stopped (the default; --keep-status starts the 1 running in xxl-job)",
				"1 jobs run in xxl-job and are stopped here. Stop them there, then: xjob job start 1\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("import output lacks %q", want)
				}
			}
			if !strings.Contains(out, "Users: ") {
				t.Errorf("import output lacks the Users line")
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("import output:\n%s", out)
			}

			groups, err := s.api.GroupList(ctx, adminclient.GroupListParams{})
			if err != nil {
				t.Fatal(err)
			}
			app := map[string]xjob.Group{}
			for _, g := range groups {
				app[g.AppName] = g
			}
			sample, billing := app["xxl-job-executor-sample"], app["billing-exec"]
			if sample.ID <= 1 || sample.Title != "Sample" || sample.AddressType != xjob.AddressAuto ||
				billing.ID != 2 || billing.Title != "Billing" || billing.AddressType != xjob.AddressManual ||
				!reflect.DeepEqual(billing.AddressList, []string{"http://10.0.0.5:9999/", "http://10.0.0.6:9999/"}) || len(groups) != 3 {
				t.Fatalf("groups: %+v", groups)
			}

			get := func(id int64) xjob.Job {
				t.Helper()
				j, err := s.api.JobGet(ctx, id)
				if err != nil {
					t.Fatalf("job %d: %v", id, err)
				}
				return j
			}
			j1 := get(1)
			want1 := xjob.Job{ID: 1, Name: "xxl-job-1", GroupID: sample.ID, Description: "Nightly report", Author: "ann",
				AlarmEmail: "ops@example.com", ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 0 2 * * ?", TimeZone: "Asia/Shanghai",
				MisfireStrategy: xjob.MisfireFireOnceNow, AfterCompletion: xjob.AfterKeep, RouteStrategy: xjob.RouteRound, Handler: "demoJobHandler", Param: "p=1",
				BlockStrategy: xjob.BlockDiscardLater, TimeoutSeconds: 30, FailRetryCount: 2, GlueType: xjob.GlueBean,
				GlueRemark: "GLUE代码初始化", ChildJobIDs: []int64{7}, TriggerStatus: xjob.StatusStopped}
			requireJobFields(t, j1, want1)
			want7 := xjob.Job{ID: 7, Name: "xxl-job-7", GroupID: 2, Description: "Shell cleanup", Author: "bob",
				ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "60", TimeZone: "Asia/Shanghai",
				MisfireStrategy: xjob.MisfireDoNothing, AfterCompletion: xjob.AfterKeep, RouteStrategy: xjob.RouteShardingBroadcast, Param: "--all",
				BlockStrategy: xjob.BlockCoverEarly, GlueType: xjob.GlueShell, GlueSource: "#!/bin/bash\necho hi", GlueRemark: "v2",
				ChildJobIDs: []int64{}, TriggerStatus: xjob.StatusStopped}
			requireJobFields(t, get(7), want7)
			want13 := xjob.Job{ID: 13, Name: "xxl-job-13", GroupID: sample.ID, Description: "Manual only", Author: "xxl-job",
				ScheduleType: xjob.ScheduleNone, TimeZone: "Asia/Shanghai", MisfireStrategy: xjob.MisfireDoNothing, AfterCompletion: xjob.AfterKeep,
				RouteStrategy: xjob.RouteLast, Handler: "manualHandler", BlockStrategy: xjob.BlockSerialExecution,
				FailRetryCount: 1, GlueType: xjob.GlueBean, ChildJobIDs: []int64{14}, TriggerStatus: xjob.StatusStopped}
			requireJobFields(t, get(13), want13)
			if _, err := s.api.JobGet(ctx, 12); err == nil {
				t.Fatal("job 12 (in a group that was not imported) was imported")
			}
			// New jobs continue above the imported ids.
			n, err := s.api.JobCreate(ctx, xjob.Job{GroupID: 2, Description: "new", Author: "t", Handler: "h"})
			if err != nil || n.ID <= 14 {
				t.Fatalf("a job created after the import got id %d (%v)", n.ID, err)
			}

			// History: the logs of imported jobs and the report days, once.
			out = mustRun(t, s, "import", "xxl-job", "--mysql", db.DSN(name), "--tz", "Asia/Shanghai", "--logs", "2024-01-01")
			if !strings.Contains(out, "History since 2024-01-01: 2 trigger logs carried over (0 already here), 2 report days added or updated (0 carried over already)") ||
				!strings.Contains(out, "xxl_job_log: 1 trigger logs of 1 jobs that are not imported (deleted in xxl-job, or left out above: job 12) not carried over") {
				t.Fatalf("import --logs:\n%s", out)
			}
			logs, err := s.api.LogList(ctx, adminclient.LogListParams{Job: 1})
			if err != nil || len(logs.Items) != 2 {
				t.Fatalf("job 1's logs after the import: %+v %v", logs.Items, err)
			}
			for _, l := range logs.Items {
				if l.TriggerTime == time.Date(2024, 2, 2, 9, 30, 0, 0, time.FixedZone("CST", 8*3600)).UnixMilli() &&
					(l.TriggerType != xjob.TriggerManual || l.HandleCode != 500 || l.HandleMsg != "boom") {
					t.Fatalf("imported log %+v", l)
				}
			}
			out = mustRun(t, s, "import", "xxl-job", "--mysql", db.DSN(name), "--tz", "Asia/Shanghai", "--logs", "2024-01-01")
			if !strings.Contains(out, "0 trigger logs carried over (2 already here), 0 report days added or updated (2 carried over already)") {
				t.Fatalf("second import --logs:\n%s", out)
			}

			// Again, after jobs were started in xjob: nothing to do, the
			// started jobs stay started, with --overwrite too, and no start
			// command is printed for a job that runs here already.
			mustRun(t, s, "job", "start", "1", "7")
			for _, extra := range [][]string{nil, {"--overwrite"}} {
				args := append([]string{"import", "xxl-job", "--mysql", db.DSN(name), "--tz", "Asia/Shanghai"}, extra...)
				out = mustRun(t, s, args...)
				if !strings.Contains(out, "Imported: 0 to create, 0 to update, 0 to delete, 6 unchanged.") ||
					get(1).TriggerStatus != xjob.StatusRunning || get(7).TriggerStatus != xjob.StatusRunning ||
					strings.Contains(out, "xjob job start") {
					t.Fatalf("import %v after starting jobs in xjob:\n%s", extra, out)
				}
			}
			mustRun(t, s, "job", "stop", "1")
			mustRun(t, s, "job", "stop", "7")
			// The same database under another name and ids, beside the first.
			out = mustRun(t, s, "import", "xxl-job", "--mysql", db.DSN(name), "--tz", "Asia/Shanghai",
				"--prefix", "other", "--id-offset", "1000")
			if !strings.Contains(out, "+ job other-1 (id 1001)") || !reflect.DeepEqual(get(1001).ChildJobIDs, []int64{1007}) ||
				!strings.Contains(out, "Stop them there, then: xjob job start 1001\n") {
				t.Fatalf("import beside:\n%s", out)
			}
			out = mustRun(t, s, "import", "xxl-job", "--mysql", db.DSN(name), "--tz", "Asia/Shanghai", "--keep-status")
			if !strings.Contains(out, "~ job xxl-job-1 (id 1)\n    started: false → true") || get(1).TriggerStatus != xjob.StatusRunning ||
				get(7).TriggerStatus != xjob.StatusStopped {
				t.Fatalf("import --keep-status:\n%s", out)
			}
		})
	}
}

// requireJobFields compares the fields an import sets (ids, names, the
// xxl_job_info columns, status), not the server's counters and times.
func requireJobFields(t *testing.T, got, want xjob.Job) {
	t.Helper()
	got.Shard, got.Version, got.Revision, got.TriggerLastTime, got.TriggerNextTime = 0, 0, 0, 0, 0
	got.CreatedAt, got.UpdatedAt, got.GlueUpdatedAt = 0, 0, 0
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("job %d:\n got  %+v\n want %+v", want.ID, got, want)
	}
}

func TestImportMapNotesOnly(t *testing.T) {
	t.Parallel()
	if _, err := xxlimport.Map(xxlimport.Rows{}, xxlimport.Options{}); err == nil {
		t.Fatal("Map without a time zone succeeded")
	}
}

// twoDatabases are two xxl-job installations with overlapping ids, both
// with the default executor group xxl-job-executor-sample, users named as
// xxl-job's server accepts them, logs and report days on the same days.
func twoDatabases(which string) string {
	title, users := "Sample", `('admin', 'e10adc3949ba59abbe56e057f20f883e', 1, NULL),
	  ('ops_eu', 'e10adc3949ba59abbe56e057f20f883e', 0, '1,2'), ('Zhao.Liu', 'e10adc3949ba59abbe56e057f20f883e', 0, '2')`
	second := "(2, 'billing-exec', 'Billing', 0, NULL)"
	if which == "cn" {
		title, users = "示例执行器", `('admin', 'e10adc3949ba59abbe56e057f20f883e', 1, NULL),
		  ('ops_cn', 'e10adc3949ba59abbe56e057f20f883e', 0, '1,2')`
		second = "(2, 'cn-reports', '报表', 0, NULL)"
	}
	var jobs, logs []string
	for id := 1; id <= 4; id++ {
		group := 1
		if id == 4 {
			group = 2
		}
		jobs = append(jobs, fmt.Sprintf("(%d, %d, '%s job %d', 'ann', 'CRON', '0 0 %d * * ?', 'h', 'BEAN', 1)", id, group, which, id, id))
		logs = append(logs, fmt.Sprintf("(%d, %d, 'h', '2024-02-01 0%d:00:00', 200, '任务触发类型：Cron触发<br>失败重试次数：0', '2024-02-01 0%d:00:01', 200, 0)",
			group, id, id, id))
	}
	return fmt.Sprintf(`INSERT INTO xxl_job_group (id, app_name, title, address_type, address_list) VALUES
		  (1, 'xxl-job-executor-sample', '%s', 0, NULL), %s;
		INSERT INTO xxl_job_info (id, job_group, job_desc, author, schedule_type, schedule_conf, executor_handler, glue_type,
		  trigger_status) VALUES %s;
		INSERT INTO xxl_job_log (job_group, job_id, executor_handler, trigger_time, trigger_code, trigger_msg, handle_time,
		  handle_code, alarm_status) VALUES %s;
		INSERT INTO xxl_job_log_report (trigger_day, running_count, suc_count, fail_count) VALUES ('2024-02-01 00:00:00', 0, 4, 0);
		INSERT INTO xxl_job_user (username, password, role, permission) VALUES %s;`,
		title, second, strings.Join(jobs, ","), strings.Join(logs, ","), users)
}

// Two databases imported side by side stay apart: the second's jobs get
// groups of their own, the first's group keeps its title, each
// database's users (signed in with their old passwords) see their own
// jobs only, both databases' report days count, and the start command
// names the ids as imported.
func TestImportTwoDatabasesSideBySide(t *testing.T) {
	t.Parallel()
	srv := xxltest.Start(t)
	for _, which := range []string{"eu", "cn"} {
		db := srv.CreateDatabase(t, "xxl_"+which, xxltest.SchemaFile("xxl-job-2.4.sql"))
		if _, err := db.Exec(twoDatabases(which)); err != nil {
			t.Fatalf("fill %s: %v", which, err)
		}
	}
	s := startLocal(t)
	ctx := t.Context()
	mustRun(t, s, "import", "xxl-job", "--mysql", srv.DSN("xxl_eu"), "--tz", "Asia/Shanghai", "--logs", "2024-01-01")
	beside := []string{"import", "xxl-job", "--mysql", srv.DSN("xxl_cn"), "--tz", "Asia/Shanghai", "--prefix", "cn",
		"--id-offset", "100000", "--logs", "2024-01-01"}
	out := mustRun(t, s, append(beside, "--dry-run")...)
	if !strings.Contains(out, "Users: 1 to carry over with their old passwords (re-hashed with argon2id at their first sign-in), 1 already here (to keep).") {
		t.Fatalf("dry run beside: users line wrong:\n%s", out)
	}
	out = mustRun(t, s, beside...)
	for _, want := range []string{
		"+ group cn-xxl-job-executor-sample", "+ group cn-reports",
		"group 1 (xxl-job-executor-sample): app name taken here by another database's group; imported beside as cn-xxl-job-executor-sample",
		"4 jobs run in xxl-job and are stopped here. Stop them there, then: xjob job start 100001 100002 100003 100004\n",
		"1 report days added or updated (0 carried over already)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("import beside lacks %q", want)
		}
	}
	if t.Failed() {
		t.Fatalf("import beside:\n%s", out)
	}
	groups, err := s.api.GroupList(ctx, adminclient.GroupListParams{})
	if err != nil {
		t.Fatal(err)
	}
	app := map[string]xjob.Group{}
	for _, g := range groups {
		app[g.AppName] = g
	}
	if app["xxl-job-executor-sample"].Title != "Sample" || app["cn-xxl-job-executor-sample"].Title != "示例执行器" || len(groups) != 4 {
		t.Fatalf("groups after both imports: %+v", groups)
	}
	days, err := s.api.Report(ctx, time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC))
	if err != nil || len(days) != 1 || days[0].SucCount != 8 {
		t.Fatalf("report of 2024-02-01 after both imports: %+v %v, want 8 successes (4 + 4)", days, err)
	}

	for _, tc := range []struct {
		user string
		want []int64
	}{
		{"ops_eu", []int64{1, 2, 3, 4}},
		{"Zhao.Liu", []int64{4}},
		{"ops_cn", []int64{100001, 100002, 100003, 100004}},
	} {
		if got := jobsSeenBy(t, s, tc.user, "123456"); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s sees jobs %v, want %v", tc.user, got, tc.want)
		}
	}
}

// jobsSeenBy signs in to the console as user and lists the jobs the
// user's session sees: those of each group GET /v1/groups shows it. It
// checks that GET /v1/jobs/{id} (the policy of start, stop and trigger
// too) refuses every other of the server's jobs.
func jobsSeenBy(t *testing.T, s *localServer, user, password string) []int64 {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.PostForm(s.info.URL+"/console/login", url.Values{"username": {user}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	var session *http.Cookie
	for _, ck := range res.Cookies() {
		if ck.Name == "xjob_session" && ck.Value != "" {
			session = ck
		}
	}
	if session == nil {
		t.Fatalf("%s cannot sign in with the old password: status %d", user, res.StatusCode)
	}
	get := func(path string, out any) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.info.URL+path, nil)
		req.AddCookie(session)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode == http.StatusOK && out != nil {
			if err := json.NewDecoder(res.Body).Decode(out); err != nil {
				t.Fatalf("%s: GET %s: %v", user, path, err)
			}
		}
		return res.StatusCode
	}
	var groups struct {
		Items []xjob.Group `json:"items"`
	}
	if code := get("/v1/groups", &groups); code != http.StatusOK {
		t.Fatalf("%s: GET /v1/groups: %d", user, code)
	}
	seen := map[int64]bool{}
	ids := []int64{}
	for _, g := range groups.Items {
		var page struct {
			Items []xjob.Job `json:"items"`
		}
		if code := get(fmt.Sprintf("/v1/jobs?group=%d&limit=100", g.ID), &page); code != http.StatusOK {
			t.Fatalf("%s: jobs of its group %d: %d", user, g.ID, code)
		}
		for _, j := range page.Items {
			seen[j.ID] = true
			ids = append(ids, j.ID)
		}
	}
	all, err := s.api.JobList(t.Context(), adminclient.JobListParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range all.Items {
		if code := get(fmt.Sprintf("/v1/jobs/%d", j.ID), nil); !seen[j.ID] && code != http.StatusForbidden && code != http.StatusNotFound {
			t.Errorf("%s reaches job %d of another group: %d", user, j.ID, code)
		}
	}
	slices.Sort(ids)
	return ids
}
