package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/web/auth"
)

// fail answers a refused or failed action with its status and a message
// for the person, in their language, as plain text: the page script
// (console.js) shows it in place of the control that sent the request,
// since htmx swaps nothing on a non-2xx reply. Server faults are logged
// and shown without their detail.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	p, _ := r.Context().Value(principalKey{}).(auth.Principal)
	b := h.base(r, p, "")
	status, msg := b.errText(err)
	if status == http.StatusInternalServerError {
		h.cfg.Logger.Error("console request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" {
		// A page the browser navigated to (another group's job, a
		// deleted log): the message inside the console's frame, with its
		// menu, rather than a bare text page.
		b.Title, b.Error = b.T("err.title"), msg
		w.WriteHeader(status)
		h.render(w, r, "errorpage", b)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, msg)
}

// errText maps an action's error to its status and message.
func (b base) errText(err error) (int, string) {
	var ve *xjob.ValidationError
	switch {
	case errors.Is(err, auth.ErrGlueAdminsOnly):
		return http.StatusForbidden, b.T("forbidden.glue.admins")
	case errors.Is(err, auth.ErrGlueOff):
		return http.StatusForbidden, b.T("forbidden.glue.off")
	case errors.Is(err, auth.ErrForbidden):
		return http.StatusForbidden, b.T("forbidden")
	case errors.Is(err, xjob.ErrNotFound):
		return http.StatusNotFound, b.T("err.notfound")
	case errors.As(err, &ve):
		return http.StatusConflict, b.lead("err.invalid", b.problemsText(ve.Problems))
	case errors.Is(err, xjob.ErrConflict):
		switch msg := err.Error(); {
		case strings.Contains(msg, " is used by job "):
			return http.StatusConflict, b.T("err.group.inuse")
		case strings.Contains(msg, " was changed since version "):
			return http.StatusConflict, b.T("err.stale")
		default:
			return http.StatusConflict, b.lead("err.conflict", strings.TrimSuffix(msg, ": "+xjob.ErrConflict.Error()))
		}
	case errors.Is(err, admin.ErrExecutor):
		return http.StatusBadGateway, b.lead("err.executor", err.Error())
	case errors.Is(err, auth.ErrTooManyAttempts), errors.Is(err, auth.ErrBusy):
		return http.StatusTooManyRequests, b.T("login.slow")
	}
	return http.StatusInternalServerError, b.T("err.server")
}

// problemsText is a validation error as one sentence per field, with the
// fields by the names the form shows them under.
func (b base) problemsText(ps []xjob.FieldProblem) string {
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		parts = append(parts, b.field(p.Field)+b.T("sep")+b.problem(p.Field, p.Message))
	}
	return strings.Join(parts, b.T("list.sep"))
}

// lead puts the message key's text before detail, spaced as the
// language writes it (no space after a full-width colon).
func (b base) lead(key, detail string) string {
	l := b.T(key)
	if strings.HasSuffix(l, "：") {
		return l + detail
	}
	return l + " " + detail
}

// field names a form field as the form labels it.
func (b base) field(name string) string {
	if s := b.T("f." + name); s != "f."+name {
		return s
	}
	return name
}

// problemPatterns translate the validation messages the Chinese pages
// meet most; any other keeps its English text after a translated field.
var problemPatterns = []struct {
	re     *regexp.Regexp
	zh, tc string
}{
	{regexp.MustCompile(`^(\S+) is not an address of group (\S+) `), "%s 不是执行器 %s 的地址（既不在其地址列表中，也不是在线的注册执行器）",
		"%s 不是執行器 %s 的位址（既不在其位址清單中，也不是線上的註冊執行器）"},
	{regexp.MustCompile(`^(.+) is not an http\(s\) URL$`), "%s 不是 http(s) 地址", "%s 不是 http(s) 位址"},
	{regexp.MustCompile(`^(.+) must not have a query or a fragment$`), "%s 不能带查询参数或片段", "%s 不能帶查詢參數或片段"},
	{regexp.MustCompile(`^must be between 0 and (\d+) seconds$`), "必须在 0 到 %s 秒之间", "必須在 0 到 %s 秒之間"},
	{regexp.MustCompile(`^must be between 0 and (\d+)$`), "必须在 0 到 %s 之间", "必須在 0 到 %s 之間"},
	{regexp.MustCompile(`^must be (\d+) to (\d+) characters$`), "长度必须为 %s 到 %s 个字符", "長度必須為 %s 到 %s 個字元"},
	{regexp.MustCompile(`^"(.*)" is not an IANA time zone$`), "“%s”不是有效的 IANA 时区", "「%s」不是有效的 IANA 時區"},
	{regexp.MustCompile(`^(\d+) is not a job id$`), "%s 不是任务编号", "%s 不是任務編號"},
	{regexp.MustCompile(`^"(.*)" is the app name of group (\d+) already$`), "“%s”已是执行器 %s 的 AppName", "「%s」已是執行器 %s 的 AppName"},
	{regexp.MustCompile(`^"(.*)" is not an e-mail address$`), "“%s”不是有效的邮件地址", "「%s」不是有效的郵件地址"},
	{regexp.MustCompile(`^job (\d+) does not exist$`), "任务 %s 不存在", "任務 %s 不存在"},
	{regexp.MustCompile(`^executor group (\d+) does not exist$`), "执行器 %s 不存在", "執行器 %s 不存在"},
	{regexp.MustCompile(`^must be (\d+) to (\d+) characters: a lower-case letter, then lower-case letters or digits$`),
		"长度必须为 %s 到 %s 个字符：以小写字母开头，其后为小写字母或数字", "長度必須為 %s 到 %s 個字元：以小寫字母開頭，其後為小寫字母或數字"},
}

// problemExact translate whole validation messages (zh-CN, zh-TC).
var problemExact = map[string][2]string{
	"is taken":                   {"已被占用", "已被佔用"},
	"you cannot delete yourself": {"不能删除自己", "不能刪除自己"},
	"you cannot take the admin role from yourself":     {"不能取消自己的管理员角色", "不能取消自己的管理員角色"},
	"a manual group needs at least one address":        {"手动录入的执行器至少需要一个地址", "手動錄入的執行器至少需要一個位址"},
	"must not contain '<', '>', commas or white space": {"不能包含“<”“>”、逗号或空白", "不能包含「<」「>」、逗號或空白"},
	"a job cannot be its own child":                    {"任务不能是自己的子任务", "任務不能是自己的子任務"},
	"the schedule has no fire time after now":          {"此调度在当前时间之后不会再触发", "此排程在目前時間之後不會再觸發"},
	"a job with schedule type NONE has no fire times":  {"调度类型为“无”的任务没有调度时间", "排程類型為「無」的任務沒有排程時間"},
	"must not be after to":                             {"不能晚于结束时间", "不能晚於結束時間"},
}

// problem translates one field's message.
func (b base) problem(field, msg string) string {
	switch msg {
	case "is required":
		return b.T("m.required")
	case "a job with schedule type NONE cannot be started":
		return b.T("m.nonestart")
	case "is wrong":
		return b.T("m.wrong")
	}
	if zh, ok := problemExact[msg]; ok && b.Lang == "zh-CN" {
		return zh[0]
	} else if ok && b.Lang == "zh-TC" {
		return zh[1]
	}
	if b.Lang == "zh-CN" || b.Lang == "zh-TC" {
		for _, p := range problemPatterns {
			if m := p.re.FindStringSubmatch(msg); m != nil {
				args := make([]any, len(m)-1)
				for i, s := range m[1:] {
					args[i] = s
				}
				if b.Lang == "zh-TC" {
					return fmt.Sprintf(p.tc, args...)
				}
				return fmt.Sprintf(p.zh, args...)
			}
		}
	}
	if field == "scheduleConf" {
		return b.T("err.cron") + " " + msg
	}
	return msg
}

// principalKey holds the signed-in principal in a request's context, so
// that fail answers in the user's language.
type principalKey struct{}

func withPrincipal(r *http.Request, p auth.Principal) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
}
