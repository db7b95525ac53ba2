package xxlimport

import (
	"testing"

	"github.com/xjobdev/xjob"
)

// The trigger messages below are as xxl-job 2.4 writes them in each of its
// three languages: the title of the trigger type opens the message, and
// the rest names the retry count and the registration type in the words
// of other titles.
func TestTriggerType(t *testing.T) {
	t.Parallel()
	const zhRest = "<br>调度机器：10.0.0.2<br>执行器-注册方式：自动注册<br>执行器-地址列表：[http://10.0.0.7:9999/]" +
		"<br>路由策略：第一个<br>阻塞处理策略：单机串行<br>任务超时时间：0<br>失败重试次数：2<br><br>" +
		`<span style="color:#00c0ef;" > >>>>>>>>>>>触发调度<<<<<<<<<<< </span><br>触发调度：<br>address：http://10.0.0.7:9999/<br>code：200<br>msg：null`
	const enRest = "<br>Trigger machine address：10.0.0.2<br>Execotor-Registry Type：Manual registration" +
		"<br>Execotor-Registry Address：[http://10.0.0.7:9999/]<br>Route Strategy：First<br>Fail Retry Count：1"
	const retried = `<br><br><span style="color:#F39C12;" > >>>>>>>>>>>失败重试触发<<<<<<<<<<< </span><br>`
	for _, tc := range []struct {
		name, msg string
		want      xjob.TriggerType
	}{
		{"zh_CN cron", "任务触发类型：Cron触发" + zhRest, xjob.TriggerCron},
		{"zh_CN cron, retried since", "任务触发类型：Cron触发" + zhRest + retried, xjob.TriggerCron},
		{"zh_CN retry", "任务触发类型：失败重试触发" + zhRest, xjob.TriggerRetry},
		{"zh_CN manual", "任务触发类型：手动触发" + zhRest, xjob.TriggerManual},
		{"zh_CN parent", "任务触发类型：父任务触发" + zhRest, xjob.TriggerParent},
		{"zh_CN api", "任务触发类型：API触发" + zhRest, xjob.TriggerAPI},
		{"zh_CN misfire", "任务触发类型：调度过期补偿" + zhRest, xjob.TriggerMisfire},
		{"zh_TC cron", "任務觸發類型：Cron觸發<br>失敗重試次數：3", xjob.TriggerCron},
		{"zh_TC retry", "任務觸發類型：失敗重試觸發<br>失敗重試次數：3", xjob.TriggerRetry},
		{"zh_TC manual", "任務觸發類型：手動觸發<br>", xjob.TriggerManual},
		{"zh_TC parent", "任務觸發類型：父任務觸發", xjob.TriggerParent},
		{"zh_TC misfire", "任務觸發類型：調度過期補償<br>", xjob.TriggerMisfire},
		{"en cron, manual group", "Job trigger type：Cron trigger" + enRest, xjob.TriggerCron},
		{"en manual", "Job trigger type：Manual trigger" + enRest, xjob.TriggerManual},
		{"en parent", "Job trigger type：Parent job trigger" + enRest, xjob.TriggerParent},
		{"en api", "Job trigger type：Api trigger" + enRest, xjob.TriggerAPI},
		{"en retry", "Job trigger type：Fail retry trigger" + enRest, xjob.TriggerRetry},
		{"en misfire", "Job trigger type：Misfire compensation trigger" + enRest, xjob.TriggerMisfire},
		{"ASCII colon", "Trigger type: Manual trigger<br>", xjob.TriggerManual},
		{"no title", "", xjob.TriggerCron},
		{"unknown title", "任务触发类型：定时触发<br>", xjob.TriggerCron},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := triggerType(tc.msg); got != tc.want {
				t.Errorf("triggerType = %s, want %s", got, tc.want)
			}
		})
	}
}
