package xxlimport_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/xxlimport"
	"github.com/xjobdev/xjob/internal/xxlimport/xxltest"
)

// installation fills an xxl-job database as a team's would look: 3
// groups, 29 jobs over every schedule form (L, W, #, LW, L-3, 6L,
// FIX_RATE, NONE), all 10 routes, all 7 GLUE types, every misfire and
// block strategy, children with a cycle (50 → 51 → 50), long CJK text,
// 7 GLUE versions, 3,500 trigger logs, 3 report days and 2 users.
func installation(t *testing.T, version string) string {
	t.Helper()
	title := strings.Repeat("调", 30) // 3.4: varchar(64) characters
	if version != "3.4" {
		title = strings.Repeat("调", 12) // before 3.4: varchar(12)
	}
	param := strings.Repeat("p", 200)
	if version == "3.4" {
		param = strings.Repeat("参数", 1000) + strings.Repeat("x", 13) // a 3.4 text column: 6,013 bytes
	}
	var b strings.Builder
	fmt.Fprintf(&b, `INSERT INTO xxl_job_group (id, app_name, title, address_type, address_list, update_time) VALUES
		(1, 'orders-exec', '%s', 0, NULL, NOW()), (2, 'billing-exec', 'Billing', 1, 'http://10.0.0.5:9999/', NOW()),
		(3, 'reports-exec', 'Reports', 0, NULL, NOW());`, title)
	crons := []string{"0 0 2 L * ?", "0 0 2 15W * ?", "0 0 12 ? * 6#3", "0 0 0 LW * ?", "0 0 0 L-3 * ?", "0 15 10 ? * 6L",
		"0 0/5 * * * ?", "0 30 8 ? * MON-FRI"}
	glues := []string{"BEAN", "GLUE_GROOVY", "GLUE_SHELL", "GLUE_PYTHON", "GLUE_PHP", "GLUE_NODEJS", "GLUE_POWERSHELL"}
	blocks := []string{"SERIAL_EXECUTION", "DISCARD_LATER", "COVER_EARLY"}
	var rows []string
	for i := range 29 {
		id := 30 + i
		sched, conf := "CRON", crons[i%len(crons)]
		switch {
		case i%9 == 7:
			sched, conf = "FIX_RATE", "30"
		case i%9 == 8:
			sched, conf = "NONE", ""
		}
		glue := glues[i%len(glues)]
		source := ""
		if glue != "BEAN" {
			source = fmt.Sprintf("// job %d\\nrun()", id)
		}
		desc := fmt.Sprintf("job %d", id)
		if i == 0 {
			desc = strings.Repeat("每", 99) // 297 bytes, 99 characters
		}
		remark := "v1"
		if i == 1 {
			remark = strings.Repeat("备", 44)
		}
		children := ""
		switch id {
		case 50:
			children = "51"
		case 51:
			children = "50,52"
		}
		misfire := []string{"DO_NOTHING", "FIRE_ONCE_NOW"}[i%2]
		rows = append(rows, fmt.Sprintf("(%d, %d, '%s', NOW(), NOW(), 'ann', 'ops@example.com', '%s', '%s', '%s', '%s', 'h%d', '%s', '%s', %d, %d, '%s', '%s', '%s', NOW(), '%s', %d, 0, 0)",
			id, 1+i%3, desc, sched, conf, misfire, xjob.RouteStrategies[i%len(xjob.RouteStrategies)], id, param,
			blocks[i%3], i%4*30, i%3, glue, source, remark, children, i%2))
	}
	fmt.Fprintf(&b, `INSERT INTO xxl_job_info (id, job_group, job_desc, add_time, update_time, author, alarm_email,
		schedule_type, schedule_conf, misfire_strategy, executor_route_strategy, executor_handler, executor_param,
		executor_block_strategy, executor_timeout, executor_fail_retry_count, glue_type, glue_source, glue_remark,
		glue_updatetime, child_jobid, trigger_status, trigger_last_time, trigger_next_time) VALUES %s;`, strings.Join(rows, ",\n"))
	var glueRows []string
	for i := range 7 {
		glueRows = append(glueRows, fmt.Sprintf("(%d, 'GLUE_SHELL', 'echo v%d', 'v%d', '2024-01-0%d 10:00:00', NOW())", 32, i, i, i+1))
	}
	fmt.Fprintf(&b, `INSERT INTO xxl_job_logglue (job_id, glue_type, glue_source, glue_remark, add_time, update_time) VALUES %s;`,
		strings.Join(glueRows, ","))
	var logs []string
	for i := range 3500 {
		day := 1 + i%3
		logs = append(logs, fmt.Sprintf("(%d, %d, 'http://10.0.0.7:9999/', 'h', '', 0, '2024-02-0%d %02d:%02d:00', 200, 'Trigger type: Cron trigger', '2024-02-0%d %02d:%02d:01', %d, '', 0)",
			1+i%3, 30+i%29, day, i/60%24, i%60, day, i/60%24, i%60, []int{200, 500}[i%2]))
	}
	fmt.Fprintf(&b, `INSERT INTO xxl_job_log (job_group, job_id, executor_address, executor_handler, executor_param,
		executor_fail_retry_count, trigger_time, trigger_code, trigger_msg, handle_time, handle_code, handle_msg, alarm_status)
		VALUES %s;`, strings.Join(logs, ","))
	b.WriteString(`INSERT INTO xxl_job_log_report (trigger_day, running_count, suc_count, fail_count, update_time) VALUES
		('2024-02-01 00:00:00', 0, 584, 583, NOW()), ('2024-02-02 00:00:00', 0, 583, 584, NOW()),
		('2024-02-03 00:00:00', 0, 583, 583, NOW());`)
	hash := "e10adc3949ba59abbe56e057f20f883e" // MD5 up to 3.1, SHA-256 from 3.2
	if version != "2.4" {
		hash = "8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92"
	}
	fmt.Fprintf(&b, `INSERT INTO xxl_job_user (username, password, role, permission) VALUES
		('admin', '%[1]s', 1, NULL), ('annie', '%[1]s', 0, '1,3');`, hash)
	return b.String()
}

func TestReadMapInstallation(t *testing.T) {
	t.Parallel()
	srv := xxltest.Start(t)
	// Three layouts: 2.3.0–3.1.x, 3.2.x–3.3.x (SHA-256 passwords, token
	// column) and 3.4.x (param TEXT, titles of 64).
	for _, version := range []string{"2.4", "3.2", "3.4"} {
		t.Run(version, func(t *testing.T) {
			name := "team_" + strings.ReplaceAll(version, ".", "")
			db := srv.CreateDatabase(t, name, xxltest.SchemaFile("xxl-job-"+version+".sql"))
			if _, err := db.Exec(installation(t, version)); err != nil {
				t.Fatalf("fill: %v", err)
			}
			rows, err := xxlimport.Read(t.Context(), db)
			if err != nil {
				t.Fatal(err)
			}
			opt := xxlimport.Options{TimeZone: "Asia/Shanghai", WithHistory: true}
			res, err := xxlimport.Map(rows, opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Manifest.Groups) != 3 || len(res.Manifest.Jobs) != 29 {
				t.Fatalf("%d groups and %d jobs mapped, want 3 and 29 (no row dropped); notes:\n%s",
					len(res.Manifest.Groups), len(res.Manifest.Jobs), strings.Join(res.Unmapped, "\n"))
			}
			byID := map[int64]xjob.JobSpec{}
			for _, j := range res.Manifest.Jobs {
				byID[j.ID] = j
			}
			if d := byID[30].Description; utf8.RuneCountInString(d) != 99 || d != strings.Repeat("每", 99) {
				t.Errorf("99-character CJK description not kept: %q", d)
			}
			if r := byID[31].GlueRemark; r != strings.Repeat("备", 44) {
				t.Errorf("44-character GLUE remark not kept: %q", r)
			}
			if version == "3.4" && len(byID[30].Param) != 6013 {
				t.Errorf("3.4 param of %d bytes, want 6,013", len(byID[30].Param))
			}
			if got := res.Manifest.Groups[0].Title; utf8.RuneCountInString(got) < 12 {
				t.Errorf("group title %q cut", got)
			}
			if got := byID[51].Children; len(got) != 1 || got[0] != "xxl-job-52" {
				t.Errorf("job 51's children %v, want only xxl-job-52 (the edge back to 50 dropped)", got)
			}
			if !strings.Contains(strings.Join(res.Unmapped, "\n"), "job 51: child job 50 dropped: it closes the cycle 50 → 51 → 50") {
				t.Errorf("the cycle is not named:\n%s", strings.Join(res.Unmapped, "\n"))
			}
			if h := byID[32].GlueHistory; len(h) != 7 || h[0].Source != "echo v0" || h[6].Remark != "v6" {
				t.Errorf("GLUE history of job 32: %+v", h)
			}
			routes, glues := map[xjob.RouteStrategy]bool{}, map[xjob.GlueType]bool{}
			for _, j := range res.Manifest.Jobs {
				routes[j.RouteStrategy], glues[j.GlueType] = true, true
			}
			if len(routes) != 10 || len(glues) != 7 {
				t.Errorf("%d routes and %d GLUE types imported, want 10 and 7", len(routes), len(glues))
			}
			if len(res.Users) != 2 || res.Users[1].Username != "annie" || len(res.Users[1].Apps) != 2 {
				t.Errorf("users %+v", res.Users)
			}
			h, err := xxlimport.ReadHistory(t.Context(), db, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), res, opt, "test")
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Logs) != 3500 || len(h.Days) != 3 {
				t.Fatalf("history: %d logs and %d days, want 3,500 and 3", len(h.Logs), len(h.Days))
			}
			first := h.Logs[0]
			want := time.Date(2024, 2, 1, 0, 0, 0, 0, time.FixedZone("CST", 8*3600)).UnixMilli()
			if first.TriggerTime != want || first.TriggerType != xjob.TriggerCron || first.HandleCode != 200 ||
				!strings.HasPrefix(first.OccurrenceID, "import/test/") {
				t.Errorf("first log %+v", first)
			}
		})
	}
}

// A Chinese-locale xxl-job 2.4 writes its trigger messages in Chinese, and
// every one carries the retry count ("失败重试次数"); its GLUE versions'
// times are wall times in the zone it ran in; and logs of a job deleted by
// hand stay in xxl_job_log.
func TestReadChineseInstallation(t *testing.T) {
	t.Parallel()
	srv := xxltest.Start(t)
	db := srv.CreateDatabase(t, "zh", xxltest.SchemaFile("xxl-job-2.4.sql"))
	const rest = "<br>调度机器：10.0.0.2<br>执行器-注册方式：自动注册<br>执行器-地址列表：[http://10.0.0.7:9999/]" +
		"<br>路由策略：第一个<br>阻塞处理策略：单机串行<br>任务超时时间：0<br>失败重试次数：1<br><br>" +
		"<span style=\"color:#00c0ef;\" > >>>>>>>>>>>触发调度<<<<<<<<<<< </span><br>触发调度：<br>code：200<br>msg：null"
	var logs []string
	types := []string{"Cron触发", "Cron触发", "Cron触发", "手动触发", "失败重试触发", "父任务触发", "调度过期补偿"}
	for i := range 70 {
		job := 1 + i%2
		if i%10 == 9 {
			job = 99 // deleted from xxl_job_info by hand
		}
		logs = append(logs, fmt.Sprintf("(%d, 1, %d, 'h', 0, '2024-03-01 %02d:%02d:00', 200, '任务触发类型：%s%s', '2024-03-01 %02d:%02d:02', 200, '', 0)",
			100+i, job, i/60, i%60, types[i%len(types)], rest, i/60, i%60))
	}
	_, err := db.Exec(`INSERT INTO xxl_job_group (id, app_name, title, address_type) VALUES (1, 'orders-exec', '订单', 0);
		INSERT INTO xxl_job_info (id, job_group, job_desc, author, schedule_type, schedule_conf, executor_handler, glue_type,
		  glue_source, glue_remark, trigger_status) VALUES
		  (1, 1, '每日对账', '张三', 'CRON', '0 0 2 * * ?', 'h', 'BEAN', '', '', 1),
		  (2, 1, '清理', '李四', 'CRON', '0 0 3 * * ?', '', 'GLUE_SHELL', 'echo v2', '第二版', 0);
		INSERT INTO xxl_job_logglue (job_id, glue_type, glue_source, glue_remark, add_time) VALUES
		  (2, 'GLUE_SHELL', 'echo v1', '第一版', '2024-01-01 10:00:00'),
		  (2, 'GLUE_SHELL', 'echo v2', '第二版', '2024-01-02 09:30:00');
		INSERT INTO xxl_job_log (id, job_group, job_id, executor_handler, executor_fail_retry_count, trigger_time, trigger_code,
		  trigger_msg, handle_time, handle_code, handle_msg, alarm_status) VALUES ` + strings.Join(logs, ",") + `;`)
	if err != nil {
		t.Fatalf("fill: %v", err)
	}
	rows, err := xxlimport.Read(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	opt := xxlimport.Options{TimeZone: "Asia/Shanghai", WithHistory: true, IDOffset: 1000, Prefix: "cn"}
	res, err := xxlimport.Map(rows, opt)
	if err != nil {
		t.Fatal(err)
	}
	shanghai := time.FixedZone("CST", 8*3600)
	var glue []xjob.GlueVersionSpec
	for _, j := range res.Manifest.Jobs {
		if j.ID == 1002 {
			glue = j.GlueHistory
		}
	}
	if len(glue) != 2 || glue[0].CreatedAt != time.Date(2024, 1, 1, 10, 0, 0, 0, shanghai).UnixMilli() ||
		glue[1].CreatedAt != time.Date(2024, 1, 2, 9, 30, 0, 0, shanghai).UnixMilli() {
		t.Errorf("GLUE versions not read in --tz: %+v", glue)
	}
	if len(res.Running) != 1 || res.Running[0] != 1001 {
		t.Errorf("running jobs %v, want [1001] (the ids as imported)", res.Running)
	}
	h, err := xxlimport.ReadHistory(t.Context(), db, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), res, opt, "zh")
	if err != nil {
		t.Fatal(err)
	}
	count := map[xjob.TriggerType]int{}
	for _, l := range h.Logs {
		count[l.TriggerType]++
		if l.JobID != 1001 && l.JobID != 1002 {
			t.Fatalf("log of job %d", l.JobID)
		}
	}
	want := map[xjob.TriggerType]int{xjob.TriggerCron: 27, xjob.TriggerManual: 9, xjob.TriggerRetry: 9,
		xjob.TriggerParent: 9, xjob.TriggerMisfire: 9}
	if len(h.Logs) != 63 || !reflect.DeepEqual(count, want) {
		t.Errorf("%d logs by trigger type %v, want 63: %v", len(h.Logs), count, want)
	}
	if got := strings.Join(h.Unmapped, "\n"); !strings.Contains(got,
		"xxl_job_log: 7 trigger logs of 1 jobs that are not imported (deleted in xxl-job, or left out above: job 99) not carried over") {
		t.Errorf("logs of the deleted job not noted:\n%s", got)
	}
}
