package console

import (
	"net/http"
	"strings"

	"github.com/xjobdev/xjob/internal/web/auth"
)

// langCookie keeps the language of a visitor who is not signed in (the
// sign-in page); a signed-in user's choice is stored on the user.
const langCookie = "xjob_lang"

// lang picks the page language: the user's setting, else the cookie,
// else the browser's Accept-Language, else English.
func (h *Handler) lang(r *http.Request, p auth.Principal) string {
	if _, ok := messages[p.User.Locale]; ok && p.User.Locale != "" {
		return p.User.Locale
	}
	if c, err := r.Cookie(langCookie); err == nil {
		if _, ok := messages[c.Value]; ok {
			return c.Value
		}
	}
	if strings.HasPrefix(strings.ToLower(r.Header.Get("Accept-Language")), "zh") {
		return "zh-CN"
	}
	return "en"
}

// setLang stores the chosen language (cookie, and the user's setting when
// signed in) and goes back.
func (h *Handler) setLang(w http.ResponseWriter, r *http.Request) {
	lang := r.PostFormValue("lang")
	if _, ok := messages[lang]; !ok {
		http.Error(w, "unknown language", http.StatusBadRequest)
		return
	}
	if p, err := h.cfg.Auth.Authenticate(r); err == nil {
		if err := h.cfg.Auth.SetLocale(r.Context(), p, lang); err != nil {
			h.serverError(w, r, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: langCookie, Value: lang, Path: "/", MaxAge: 365 * 86400,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: auth.Secure(r)})
	back(w, r, safeNext(r.PostFormValue("next")), "")
}

// messages is the catalogue: every UI string, per language.
var messages = map[string]map[string]string{
	"en": {
		"app": "xjob console", "nav.dashboard": "Dashboard", "nav.jobs": "Jobs", "nav.logs": "Trigger logs",
		"nav.groups": "Executors", "nav.users": "Users", "nav.login": "Sign in", "nav.glue": "GLUE source",
		"logout": "Sign out", "username": "Username", "password": "Password", "signin": "Sign in",
		"login.bad": "Wrong username or password.", "login.slow": "Too many failed sign-ins; try again later.",
		"group": "Executor", "all": "All", "status": "Status", "desc": "Description", "handler": "Handler",
		"author": "Author", "search": "Search", "reset": "Reset", "new.job": "New job", "id": "ID",
		"schedule": "Schedule", "route": "Route", "next": "Next trigger", "last": "Last trigger", "actions": "Actions",
		"running": "Running", "stopped": "Stopped", "edit": "Edit", "copy": "Copy", "delete": "Delete",
		"start": "Start", "stop": "Stop", "trigger": "Run once", "logs": "Logs", "glue": "GLUE",
		"bulk.start": "Start selected", "bulk.stop": "Stop selected", "confirm.delete": "Delete this job and its GLUE history?",
		"empty.jobs": "No jobs here yet. Create one with “New job”.", "empty.logs": "No trigger logs match.",
		"save": "Save", "cancel": "Cancel", "param": "Param", "addresses": "Executor addresses (comma-separated; blank = registry)",
		"preview": "Next 5 fire times", "timezone": "Time zone", "schedule.type": "Schedule type", "schedule.conf": "Cron / seconds",
		"misfire": "Misfire", "block": "Block strategy", "timeout": "Timeout (s)", "retry": "Fail retries",
		"glue.type": "GLUE type", "children": "Child job ids", "alarm": "Alarm e-mail", "job.basic": "Basic",
		"job.sched": "Schedule", "job.exec": "Execution", "job": "Job", "trigger.time": "Trigger time",
		"trigger.result": "Trigger", "handle.time": "Handle time", "handle.result": "Result", "detail": "Detail",
		"kill": "Kill", "from": "From", "to": "To", "success": "Success", "fail": "Fail", "rolling": "Executor log",
		"log.end": "[Rolling log end]", "log.following": "following the run…", "log.none": "The trigger failed; there is no executor log.",
		"appname": "AppName", "title": "Title", "address.type": "Registry", "auto": "Automatic", "manual": "Manual",
		"online": "Online executors", "heartbeat": "last heartbeat", "new.group": "New executor", "none": "none",
		"role": "Role", "admin": "Admin", "normal": "Normal user", "groups": "Groups", "new.user": "New user",
		"change.password": "Change my password", "current.password": "Current password", "new.password": "New password",
		"jobs.total": "Jobs", "executors.online": "Executors online", "triggers.today": "Triggers today",
		"triggers.total": "Triggers in range", "chart": "Triggers per day", "recent.failures": "Recent failures",
		"days": "days", "saved": "Saved.", "done": "Done.", "triggered": "Triggered.", "deleted": "Deleted.",
		"forbidden": "You have no permission for this executor group.", "versions": "Saved versions (newest 30)",
		"remark": "Remark", "restore": "Load", "glue.bean": "BEAN jobs have no GLUE source.", "lang": "Language",
		"clear": "Clear logs", "more": "Older", "created": "Created",
		"clear.type": "Clear", "clear.1m": "older than 1 month", "clear.3m": "older than 3 months",
		"clear.6m": "older than 6 months", "clear.12m": "older than 1 year", "clear.1k": "all but the newest 1,000",
		"clear.10k": "all but the newest 10,000", "clear.30k": "all but the newest 30,000",
		"clear.100k": "all but the newest 100,000", "clear.all": "all logs", "cleared": "Logs deleted:",
		"clear.confirm": "Delete these trigger logs? This cannot be undone.",
	},
	"zh-CN": {
		"app": "xjob 控制台", "nav.dashboard": "运行报表", "nav.jobs": "任务管理", "nav.logs": "调度日志",
		"nav.groups": "执行器管理", "nav.users": "用户管理", "nav.login": "登录", "nav.glue": "GLUE 源码",
		"logout": "退出", "username": "账号", "password": "密码", "signin": "登录",
		"login.bad": "账号或密码错误。", "login.slow": "登录失败次数过多，请稍后再试。",
		"group": "执行器", "all": "全部", "status": "状态", "desc": "任务描述", "handler": "JobHandler",
		"author": "负责人", "search": "搜索", "reset": "重置", "new.job": "新增任务", "id": "ID",
		"schedule": "调度", "route": "路由策略", "next": "下次调度", "last": "上次调度", "actions": "操作",
		"running": "运行中", "stopped": "已停止", "edit": "编辑", "copy": "复制", "delete": "删除",
		"start": "启动", "stop": "停止", "trigger": "执行一次", "logs": "日志", "glue": "GLUE",
		"bulk.start": "启动所选", "bulk.stop": "停止所选", "confirm.delete": "删除此任务及其 GLUE 历史？",
		"empty.jobs": "这里还没有任务。点击“新增任务”创建。", "empty.logs": "没有符合条件的调度日志。",
		"save": "保存", "cancel": "取消", "param": "任务参数", "addresses": "机器地址（逗号分隔；留空则使用注册地址）",
		"preview": "最近 5 次调度时间", "timezone": "时区", "schedule.type": "调度类型", "schedule.conf": "Cron / 秒",
		"misfire": "调度过期策略", "block": "阻塞处理策略", "timeout": "任务超时时间（秒）", "retry": "失败重试次数",
		"glue.type": "运行模式", "children": "子任务ID", "alarm": "报警邮件", "job.basic": "基础配置",
		"job.sched": "调度配置", "job.exec": "任务配置", "job": "任务", "trigger.time": "调度时间",
		"trigger.result": "调度结果", "handle.time": "执行时间", "handle.result": "执行结果", "detail": "详情",
		"kill": "终止任务", "from": "从", "to": "到", "success": "成功", "fail": "失败", "rolling": "执行日志",
		"log.end": "[Rolling Log 结束]", "log.following": "正在跟踪执行…", "log.none": "任务调度失败，无法查看执行日志。",
		"appname": "AppName", "title": "名称", "address.type": "注册方式", "auto": "自动注册", "manual": "手动录入",
		"online": "在线机器", "heartbeat": "最后心跳", "new.group": "新增执行器", "none": "无",
		"role": "角色", "admin": "管理员", "normal": "普通用户", "groups": "权限", "new.user": "新增用户",
		"change.password": "修改密码", "current.password": "旧密码", "new.password": "新密码",
		"jobs.total": "任务数量", "executors.online": "在线执行器", "triggers.today": "今日调度次数",
		"triggers.total": "区间调度次数", "chart": "每日调度", "recent.failures": "最近失败",
		"days": "天", "saved": "已保存。", "done": "操作成功。", "triggered": "已触发。", "deleted": "已删除。",
		"forbidden": "你没有此执行器的权限。", "versions": "历史版本（最近 30 个）",
		"remark": "源码备注", "restore": "载入", "glue.bean": "BEAN 模式任务没有 GLUE 源码。", "lang": "语言",
		"clear": "清理日志", "more": "更早", "created": "已创建",
		"clear.type": "清理方式", "clear.1m": "清理一个月之前日志数据", "clear.3m": "清理三个月之前日志数据",
		"clear.6m": "清理六个月之前日志数据", "clear.12m": "清理一年之前日志数据", "clear.1k": "清理一千条以前日志数据",
		"clear.10k": "清理一万条以前日志数据", "clear.30k": "清理三万条以前日志数据",
		"clear.100k": "清理十万条以前日志数据", "clear.all": "清理所有日志数据", "cleared": "已删除日志条数：",
		"clear.confirm": "确定清理这些调度日志吗？此操作不可撤销。",
	},
}
