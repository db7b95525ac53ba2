package xjob_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/text"
)

func validJob() xjob.Job {
	j := xjob.Job{
		GroupID: 1, Description: "demo", Author: "ops",
		ScheduleType: xjob.ScheduleFixRate, ScheduleConf: "5",
		Handler: "demoJobHandler", TriggerStatus: xjob.StatusRunning,
	}
	j.ApplyDefaults()
	return j
}

func TestJobValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(*xjob.Job)
		field string // "" = valid
	}{
		{"valid", func(*xjob.Job) {}, ""},
		{"missing group", func(j *xjob.Job) { j.GroupID = 0 }, "jobGroup"},
		{"blank description", func(j *xjob.Job) { j.Description = "  " }, "jobDesc"},
		{"unknown schedule type", func(j *xjob.Job) { j.ScheduleType = "FIXED_DELAY" }, "scheduleType"},
		{"fix delay", func(j *xjob.Job) { j.ScheduleType, j.ScheduleConf = xjob.ScheduleFixDelay, "30" }, ""},
		{"bad fix delay", func(j *xjob.Job) { j.ScheduleType, j.ScheduleConf = xjob.ScheduleFixDelay, "0" }, "scheduleConf"},
		{"fix delay in ms", func(j *xjob.Job) { j.ScheduleType, j.ScheduleConf = xjob.ScheduleFixDelay, "1500ms" }, "scheduleConf"},
		{"bad fix rate", func(j *xjob.Job) { j.ScheduleConf = "0" }, "scheduleConf"},
		{"bad zone", func(j *xjob.Job) { j.TimeZone = "Mars/Olympus" }, "timeZone"},
		{"unknown route", func(j *xjob.Job) { j.RouteStrategy = "SOMETIMES" }, "executorRouteStrategy"},
		{"unknown block", func(j *xjob.Job) { j.BlockStrategy = "CONCURRENT_EXECUTION" }, "executorBlockStrategy"},
		{"unknown misfire", func(j *xjob.Job) { j.MisfireStrategy = "IGNORE" }, "misfireStrategy"},
		{"bean needs handler", func(j *xjob.Job) { j.Handler = "" }, "executorHandler"},
		{"glue needs no handler", func(j *xjob.Job) { j.Handler = ""; j.GlueType = xjob.GlueShell }, ""},
		{"oversized param", func(j *xjob.Job) { j.Param = strings.Repeat("x", xjob.MaxParamLen+1) }, "executorParam"},
		{"negative timeout", func(j *xjob.Job) { j.TimeoutSeconds = -1 }, "executorTimeout"},
		{"bad e-mail", func(j *xjob.Job) { j.AlarmEmail = "ops@example.com, nope" }, "alarmEmail"},
		{"self child", func(j *xjob.Job) { j.ID = 7; j.ChildJobIDs = []int64{7} }, "childJobIds"},
		{"NONE cannot run", func(j *xjob.Job) { j.ScheduleType = xjob.ScheduleNone; j.ScheduleConf = "" }, "triggerStatus"},
		{"NONE stopped is fine", func(j *xjob.Job) {
			j.ScheduleType, j.ScheduleConf, j.TriggerStatus = xjob.ScheduleNone, "", xjob.StatusStopped
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := validJob()
			tt.edit(&j)
			err := j.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var verr *xjob.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Validate() = %v, want a ValidationError on %s", err, tt.field)
			}
			for _, p := range verr.Problems {
				if p.Field == tt.field {
					return
				}
			}
			t.Fatalf("Validate() = %v, want a problem on %s", err, tt.field)
		})
	}
}

func TestGroupValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		g    xjob.Group
		ok   bool
	}{
		{"auto", xjob.Group{AppName: "xxl-job-executor-sample", Title: "sample"}, true},
		{"manual", xjob.Group{AppName: "demo-app", Title: "demo", AddressType: xjob.AddressManual, AddressList: []string{"http://127.0.0.1:9999/"}}, true},
		{"manual without addresses", xjob.Group{AppName: "demo-app", Title: "demo", AddressType: xjob.AddressManual}, false},
		{"short appname", xjob.Group{AppName: "abc", Title: "t"}, false},
		{"html in appname", xjob.Group{AppName: "<script>", Title: "t"}, false},
		{"bad address", xjob.Group{AppName: "demo-app", Title: "t", AddressType: xjob.AddressManual, AddressList: []string{"ftp://x"}}, false},
	}
	for _, tt := range tests {
		if err := tt.g.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestOccurrenceID(t *testing.T) {
	t.Parallel()
	cron := fire.Occurrence{JobID: 7, Type: xjob.TriggerCron, FireTime: 1700000000000}
	misfire := fire.Occurrence{JobID: 7, Type: xjob.TriggerMisfire, FireTime: 1700000000000}
	if cron.ID(0) != misfire.ID(0) {
		t.Errorf("a fire classified CRON by one scanner and MISFIRE by another must share an id: %s vs %s", cron.ID(0), misfire.ID(0))
	}
	if cron.ID(0) == cron.ID(1) {
		t.Error("broadcast shards must have distinct ids")
	}
	retry := fire.Occurrence{JobID: 7, Type: xjob.TriggerRetry, Ref: "42"}
	parent := fire.Occurrence{JobID: 7, Type: xjob.TriggerParent, Ref: "42"}
	if retry.ID(0) == parent.ID(0) {
		t.Error("a retry and a child trigger of the same parent log must differ")
	}
	if got, want := cron.ID(2), "j7/t1700000000000/s2"; got != want {
		t.Errorf("ID = %q, want %q", got, want)
	}
}

func TestSuperseded(t *testing.T) {
	t.Parallel()
	job := &xjob.Job{ID: 7, Revision: 3}
	occ := func(typ xjob.TriggerType) fire.Occurrence {
		return fire.Occurrence{JobID: 7, Type: typ, FireTime: 1_700_000_000_000, Ref: "r"}
	}
	tests := []struct {
		name    string
		job     *xjob.Job
		occ     fire.Occurrence
		planned int64
		want    string
	}{
		{"cron, same revision", job, occ(xjob.TriggerCron), 3, ""},
		{"misfire, same revision", job, occ(xjob.TriggerMisfire), 3, ""},
		{"cron, job edited since", job, occ(xjob.TriggerCron), 2, fire.ReasonJobRevised},
		{"misfire, job stopped since", job, occ(xjob.TriggerMisfire), 2, fire.ReasonJobRevised},
		{"cron, planned under a later revision", job, occ(xjob.TriggerCron), 4, fire.ReasonJobRevised},
		{"cron, no revision recorded", job, occ(xjob.TriggerCron), 0, ""},
		{"cron, job deleted", nil, occ(xjob.TriggerCron), 3, fire.ReasonJobDeleted},
		{"manual, job deleted", nil, occ(xjob.TriggerManual), 0, fire.ReasonJobDeleted},
		{"manual, revision differs", job, occ(xjob.TriggerManual), 2, ""},
		{"api, revision differs", job, occ(xjob.TriggerAPI), 2, ""},
		{"retry, revision differs", job, occ(xjob.TriggerRetry), 2, ""},
		{"parent, revision differs", job, occ(xjob.TriggerParent), 2, ""},
		{"manual, no revision", job, occ(xjob.TriggerManual), 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := fire.Superseded(tt.job, tt.occ, tt.planned); got != tt.want {
				t.Fatalf("Superseded = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestShardOfSpreads(t *testing.T) {
	t.Parallel()
	const n, jobs = 16, 16000
	counts := make([]int, n)
	for id := int64(1); id <= jobs; id++ {
		s := fire.ShardOf(id, n)
		if s < 0 || s >= n {
			t.Fatalf("ShardOf(%d) = %d out of range", id, s)
		}
		counts[s]++
	}
	for s, c := range counts {
		if c < jobs/n*8/10 || c > jobs/n*12/10 {
			t.Errorf("shard %d holds %d of %d jobs: uneven", s, c, jobs)
		}
	}
}

func TestLogStates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                     string
		l                        xjob.Log
		failed, running, handled bool
	}{
		{"created", xjob.Log{}, false, false, false},
		{"trigger failed", xjob.Log{TriggerCode: 500}, true, false, false},
		{"running", xjob.Log{TriggerCode: 200}, false, true, false},
		{"succeeded", xjob.Log{TriggerCode: 200, HandleCode: 200}, false, false, true},
		{"timed out", xjob.Log{TriggerCode: 200, HandleCode: 502}, true, false, true},
	}
	for _, tt := range tests {
		if tt.l.Failed() != tt.failed || tt.l.Running() != tt.running || tt.l.Handled() != tt.handled {
			t.Errorf("%s: failed=%v running=%v handled=%v", tt.name, tt.l.Failed(), tt.l.Running(), tt.l.Handled())
		}
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	if got := text.Truncate("héllo", 2); got != "h..." {
		t.Errorf("Truncate on a rune boundary = %q", got)
	}
	if got := text.Truncate("abc", 3); got != "abc" {
		t.Errorf("Truncate short = %q", got)
	}
}

func TestValidateAddress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		ok   bool
	}{
		{"http://127.0.0.1:9999/", true},
		{"https://exec.example.com/xxl-job-executor/", true},
		{"http://[::1]:9999", true},
		{"ftp://10.0.0.5/", false},
		{"file:///etc/passwd", false},
		{"javascript:alert(1)", false},
		{"http://user:pw@10.0.0.5:9999/", false},
		{"http://user@10.0.0.5:9999/", false},
		{"http://10.0.0.5:9999/?x=", false},
		{"http://10.0.0.5:9999/?", false},
		{"http://10.0.0.5:9999/#frag", false},
		{"http://10.0.0.5:9999/\x1b[31m", false},
		{"http://10.0.0.5:9999/a b", false},
		{"http://10.0.0.5:9999/\n", false},
		{"http://10.0.0.5:99999/", false},
		{"http:10.0.0.5", false},
		{"http://", false},
		{"", false},
	}
	for _, tt := range tests {
		err := xjob.ValidateAddress(tt.addr)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateAddress(%q) = %v, want ok=%v", tt.addr, err, tt.ok)
		}
		e := xjob.RegistryEntry{Group: xjob.RegistryGroupExecutor, Key: "demo-app", Value: tt.addr}
		if err := e.Validate(); (err == nil) != tt.ok {
			t.Errorf("RegistryEntry{Value: %q}.Validate() = %v, want ok=%v", tt.addr, err, tt.ok)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("error %q repeats the password", err)
		}
	}
}

func TestReportDayAddAndEmpty(t *testing.T) {
	tests := []struct {
		name      string
		d, delta  xjob.ReportDay
		want      xjob.ReportDay
		wantEmpty bool
	}{
		{"a trigger", xjob.ReportDay{Day: "2026-11-26", GroupID: 3}, xjob.ReportDay{Day: "other", GroupID: 9, RunningCount: 1},
			xjob.ReportDay{Day: "2026-11-26", GroupID: 3, RunningCount: 1}, false},
		{"its result", xjob.ReportDay{RunningCount: 1}, xjob.ReportDay{RunningCount: -1, SucCount: 1},
			xjob.ReportDay{SucCount: 1}, false},
		{"deltas that cancel out", xjob.ReportDay{RunningCount: 2, FailCount: 1}, xjob.ReportDay{RunningCount: -2, FailCount: -1},
			xjob.ReportDay{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.d
			d.Add(tc.delta)
			if d != tc.want || d.Empty() != tc.wantEmpty {
				t.Errorf("%+v + %+v = %+v (empty %v), want %+v (empty %v)", tc.d, tc.delta, d, d.Empty(), tc.want, tc.wantEmpty)
			}
		})
	}
}

// Usernames: what an xxl-job server accepted (4–20 characters of any
// kind; its console's [a-z][a-z0-9]* is not checked by the server) is
// accepted, except what would break a URL path, a session or a log line.
func TestValidUsername(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"admin", true}, {"ops_eu", true}, {"Zhao.Liu", true}, {"ann-marie", true}, {"ops@corp", true},
		{"张三丰", false}, {"张三丰李", true}, {"a1b2", true}, {"abc", false}, {strings.Repeat("x", 20), true},
		{strings.Repeat("x", 21), false}, {strings.Repeat("名", 20), true},
		{"ops eu", false}, {"ops/eu", false}, {"ops|eu", false}, {"ops\neu", false}, {"ops%2F", false}, {"\xff\xfeab", false},
	} {
		if got := xjob.ValidUsername(tc.name); got != tc.want {
			t.Errorf("ValidUsername(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
