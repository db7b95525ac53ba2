package xxlimport

import (
	"testing"

	"github.com/xjobdev/xjob"
)

// FuzzMap maps arbitrary xxl_job_group and xxl_job_info rows: no panic, and
// every job Map keeps is one xjob accepts (after the defaults POST /v1/jobs
// applies), named after its id, in a group Map kept.
func FuzzMap(f *testing.F) {
	f.Add(int64(1), "demo-app", 0, "", int64(7), "CRON", "0 0/5 * * * ?", "DO_NOTHING", "FIRST", "demoJobHandler",
		"SERIAL_EXECUTION", "BEAN", "", "ops@example.com", "2,3", 30, 1)
	f.Add(int64(2), "glue", 1, "http://127.0.0.1:9999,http://[::1]:9998/", int64(8), "FIX_RATE", "60", "FIRE_ONCE_NOW",
		"SHARDING_BROADCAST", "", "COVER_EARLY", "GLUE_SHELL", "echo hi", "not an address", "x,,9", -5, 200)
	f.Add(int64(3), "a b", 7, "", int64(-1), "FIX_DELAY", "", "", "", "", "", "", "", "", "", 0, 0)
	f.Add(int64(4), "app", 0, "", int64(1<<31), "NONE", "", "NOPE", "WEIRD", "h", "X", "GLUE_PYTHON", "", "", "4", 0, 0)
	f.Fuzz(func(t *testing.T, gid int64, appName string, addrType int, addrList string, jid int64,
		schedType, schedConf, misfire, route, handler, block, glueType, glueSource, alarm, children string,
		timeout, retries int) {
		rows := Rows{
			Groups: []GroupRow{{ID: gid, AppName: appName, Title: "t", AddressType: addrType, AddressList: addrList}},
			Jobs: []JobRow{{ID: jid, JobGroup: gid, JobDesc: "d", Author: "a", AlarmEmail: alarm,
				ScheduleType: schedType, ScheduleConf: schedConf, MisfireStrategy: misfire, ExecutorRouteStrategy: route,
				ExecutorHandler: handler, ExecutorBlockStrategy: block, ExecutorTimeout: timeout,
				ExecutorFailRetryCount: retries, GlueType: glueType, GlueSource: glueSource, ChildJobID: children, TriggerStatus: 1}},
		}
		res, err := Map(rows, Options{TimeZone: "Asia/Shanghai"})
		if err != nil {
			t.Fatal(err)
		}
		groups := map[string]bool{}
		for _, g := range res.Manifest.Groups {
			groups[g.AppName] = true
		}
		for _, js := range res.Manifest.Jobs {
			if js.Name != JobName(js.ID) || !groups[js.Group] || js.Started {
				t.Fatalf("mapped job %+v: name, group or status wrong", js)
			}
			j := xjob.Job{ID: js.ID, Name: js.Name, GroupID: 1, Description: js.Description, Author: js.Author,
				AlarmEmail: js.AlarmEmail, ScheduleType: js.ScheduleType, ScheduleConf: js.ScheduleConf, TimeZone: js.TimeZone,
				MisfireStrategy: js.MisfireStrategy, RouteStrategy: js.RouteStrategy, Handler: js.Handler, Param: js.Param,
				BlockStrategy: js.BlockStrategy, TimeoutSeconds: js.TimeoutSeconds, FailRetryCount: js.FailRetryCount,
				GlueType: js.GlueType, GlueSource: js.GlueSource, GlueRemark: js.GlueRemark}
			j.ApplyDefaults()
			if err := j.Validate(); err != nil {
				t.Fatalf("mapped job does not validate: %v\n%+v", err, js)
			}
		}
	})
}

// FuzzTriggerType reads arbitrary trigger messages: no panic, and always
// a trigger type xjob knows.
func FuzzTriggerType(f *testing.F) {
	f.Add("任务触发类型：Cron触发<br>失败重试次数：0")
	f.Add("Job trigger type：Manual trigger<br>Execotor-Registry Type：Manual registration")
	f.Add("任務觸發類型：失敗重試觸發")
	f.Add("：")
	f.Add("")
	f.Fuzz(func(t *testing.T, msg string) {
		if tt := triggerType(msg); !tt.Valid() {
			t.Fatalf("triggerType(%q) = %q", msg, tt)
		}
	})
}
