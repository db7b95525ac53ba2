package console

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
)

func TestSafeTriggerMsg(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"xxl-job markup", `Trigger type: CRON<br><br><span style="color:#00c0ef;" > >>>>>>>>>>>Trigger<<<<<<<<<<< </span><br>code: 200`,
			`Trigger type: CRON<br><br><span class="mark"> &gt;&gt;&gt;&gt;&gt;&gt;&gt;&gt;&gt;&gt;&gt;Trigger&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt; </span><br>code: 200`},
		{"bold and br variants", `<b>x</b><br/><br />`, `<b>x</b><br><br>`},
		{"script stays text", `msg: <script>alert(1)</script>`, `msg: &lt;script&gt;alert(1)&lt;/script&gt;`},
		{"other styles stay text", `<span style="background:url(x)">a</span>`,
			`&lt;span style=&#34;background:url(x)&#34;&gt;a`},
		{"attributes on br stay text", `<br onclick="x">`, `&lt;br onclick=&#34;x&#34;&gt;`},
		{"unclosed span closed", `<span style="color:#fff">a`, `<span class="mark">a</span>`},
	} {
		if got := string(safeTriggerMsg(tc.in)); got != tc.want {
			t.Errorf("%s:\n got  %s\n want %s", tc.name, got, tc.want)
		}
	}
}

func TestPager(t *testing.T) {
	t.Parallel()
	q := url.Values{"group": {"3"}}
	first := newPager(url.Values{"size": {"20"}})
	first.links("/l", q, "c1")
	if first.Prev != "" || first.First != "" || first.Next != "/l?cursor=c1&group=3&size=20&trail=." {
		t.Fatalf("first page: %+v", first)
	}
	second := newPager(url.Values{"size": {"20"}, "cursor": {"c1"}, "trail": {"."}})
	second.links("/l", q, "c2")
	if second.Prev != "/l?group=3&size=20" || second.Next != "/l?cursor=c2&group=3&size=20&trail=.%2Cc1" {
		t.Fatalf("second page: %+v", second)
	}
	third := newPager(url.Values{"cursor": {"c2"}, "trail": {".,c1"}, "size": {"7"}})
	third.links("/l", q, "")
	if third.Size != 50 || third.Next != "" || third.Prev != "/l?cursor=c1&group=3&size=50&trail=." {
		t.Fatalf("third page: %+v", third)
	}
}

func TestErrText(t *testing.T) {
	t.Parallel()
	en, zh := base{Lang: "en", msgs: messages["en"]}, base{Lang: "zh-CN", msgs: messages["zh-CN"]}
	none := &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "scheduleType",
		Message: "a job with schedule type NONE cannot be started"}}}
	inUse := fmt.Errorf("group 3 is used by job 9 (and maybe others); delete or move its jobs first: %w", xjob.ErrConflict)
	for _, tc := range []struct {
		b      base
		err    error
		status int
		want   string
	}{
		{en, none, 409, "Refused: Schedule type: a job with schedule type NONE cannot be started"},
		{zh, none, 409, "操作被拒绝：调度类型：调度类型为“无”的任务不能启动"},
		{en, inUse, 409, "This executor still has jobs; delete or move its jobs first."},
		{zh, &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "username", Message: "is taken"}}}, 409,
			"操作被拒绝：账号：已被占用"},
		{zh, fmt.Errorf("job 1: %w", xjob.ErrNotFound), 404, "未找到：可能已被删除。"},
		{en, errors.New("disk on fire"), 500, "The server failed; the action may not have happened. Try again."},
	} {
		status, msg := tc.b.errText(tc.err)
		if status != tc.status || msg != tc.want {
			t.Errorf("%s %v: %d %q, want %d %q", tc.b.Lang, tc.err, status, msg, tc.status, tc.want)
		}
	}
}

// TestCatalogues: every language has every key English has, and no key
// English lacks.
func TestCatalogues(t *testing.T) {
	t.Parallel()
	for lang, m := range messages {
		for k := range messages["en"] {
			if _, ok := m[k]; !ok {
				t.Errorf("%s lacks %q", lang, k)
			}
		}
		for k, v := range m {
			if _, ok := messages["en"][k]; !ok {
				t.Errorf("%s has %q, which English lacks", lang, k)
			}
			if strings.TrimSpace(v) == "" {
				t.Errorf("%s %q is empty", lang, k)
			}
		}
	}
}

func TestFailReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		l    xjob.Log
		want string
	}{
		{"success", xjob.Log{TriggerCode: 200, HandleCode: 200}, ""},
		{"running", xjob.Log{TriggerCode: 200}, ""},
		{"handle failure", xjob.Log{TriggerCode: 200, HandleCode: 500, HandleMsg: " job threw \n"}, "job threw"},
		{"trigger failure", xjob.Log{TriggerCode: 500, TriggerMsg: "Trigger type: CRON<br><br><span style=\"color:#00c0ef;\" > >>>Trigger<<< </span><br>" +
			"Trigger result: fail<br>address: http://a:1/<br>code: 500<br>msg: xxl-job remoting error(connection refused)"},
			"xxl-job remoting error(connection refused)"},
		{"xxl-job's own", xjob.Log{TriggerCode: 500, TriggerMsg: "调度机器：<br>msg：执行器地址为空<br>"}, "执行器地址为空"},
		{"timeout handled", xjob.Log{TriggerCode: 500, HandleCode: 502, HandleMsg: "lost"}, "lost"},
	} {
		if got := failReason(tc.l); got != tc.want {
			t.Errorf("%s: failReason = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The validation messages the Chinese pages met in English (e-mail,
// unknown job or group, the username rule) and the trigger type CRON,
// which xxl-job shows as "Cron触发".
func TestChineseMessages(t *testing.T) {
	t.Parallel()
	zh := base{Lang: "zh-CN", msgs: messages["zh-CN"]}
	tc := base{Lang: "zh-TC", msgs: messages["zh-TC"]}
	for _, tt := range []struct {
		b          base
		field, msg string
		want       string
	}{
		{zh, "alarmEmail", `"x@" is not an e-mail address`, "“x@”不是有效的邮件地址"},
		{zh, "childJobIds", "job 999 does not exist", "任务 999 不存在"},
		{zh, "jobGroup", "executor group 7 does not exist", "执行器 7 不存在"},
		{tc, "username", "must be 4 to 20 characters: a lower-case letter, then lower-case letters or digits",
			"長度必須為 4 到 20 個字元：以小寫字母開頭，其後為小寫字母或數字"},
	} {
		if got := tt.b.problem(tt.field, tt.msg); got != tt.want {
			t.Errorf("%s %q: %q, want %q", tt.b.Lang, tt.msg, got, tt.want)
		}
	}
	if got := zh.T("tt.CRON"); got != "Cron触发" {
		t.Errorf("trigger type CRON: %q", got)
	}
	if got := zh.T("err.csrf"); got == messages["en"]["err.csrf"] {
		t.Errorf("the CSRF refusal is English on the Chinese page: %q", got)
	}
}
