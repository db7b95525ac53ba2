package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/target"
	"github.com/xjobdev/xjob/internal/web/auth"
)

// targetForm is an HTTP job's spec as the job form shows it: one field
// per part, headers one "Name: value" per line. Secret headers show their
// references (the admin never returns a value), which keep the stored
// secrets when the form is saved back.
type targetForm struct {
	Method, URL, Headers, SecretHeaders, Body, SuccessCodes string
	Methods                                                 []string
	// AWS is an AWS job's spec, field by field.
	AWS target.AWSSpec
	// Err holds the problems of each part (url, method, headers,
	// secretHeaders, body, successCodes; "" for the spec as a whole).
	Err map[string]string
}

// targetOf is j's spec for the form; a source that is not a spec (what a
// refused form typed) shows what could be read of it.
func targetOf(j xjob.Job, problems map[string]string) targetForm {
	f := targetForm{Methods: target.Methods, Err: map[string]string{}}
	for _, part := range []string{"url", "method", "headers", "secretHeaders", "body", "successCodes",
		"arn", "input", "invocationType", "messageGroupId", "subject", "source", "detailType"} {
		if m := targetProblem(problems, "glueSource."+part); m != "" {
			f.Err[part] = m
		}
	}
	if m, ok := problems["glueSource"]; ok {
		f.Err[""] = m
	}
	if j.GlueType == xjob.GlueAWS {
		_ = json.Unmarshal([]byte(j.GlueSource), &f.AWS)
		return f
	}
	if j.GlueType != xjob.GlueHTTP {
		return f
	}
	var s target.Spec
	_ = json.Unmarshal([]byte(j.GlueSource), &s)
	f.Method, f.URL, f.Body, f.SuccessCodes = s.MethodOrDefault(), s.URL, s.Body, s.SuccessCodes
	f.Headers, f.SecretHeaders = headerLines(s.Headers), headerLines(s.SecretHeaders)
	return f
}

func headerLines(h map[string]string) string {
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s: %s\n", n, h[n])
	}
	return b.String()
}

// specFromForm reads the target fields of the job form into a spec (its
// JSON, for the job's GLUE source); a header line without "Name:" is a
// problem named after its field, and the admin checks the rest.
func specFromForm(r *http.Request, problems map[string]string) string {
	s := target.Spec{Method: strings.ToUpper(strings.TrimSpace(r.FormValue("targetMethod"))),
		URL: strings.TrimSpace(r.FormValue("targetUrl")), Body: r.FormValue("targetBody"),
		SuccessCodes: strings.TrimSpace(r.FormValue("targetSuccessCodes"))}
	s.Headers = readHeaderLines(r.FormValue("targetHeaders"), "glueSource.headers", problems)
	s.SecretHeaders = readHeaderLines(r.FormValue("targetSecretHeaders"), "glueSource.secretHeaders", problems)
	b, _ := json.Marshal(s) // strings and string maps always marshal
	return string(b)
}

// awsSpecFromForm reads the AWS fields of the job form into a spec's
// JSON; the admin checks it.
func awsSpecFromForm(r *http.Request) string {
	s := target.AWSSpec{ARN: strings.TrimSpace(r.FormValue("awsArn")), Input: r.FormValue("awsInput"),
		InvocationType: r.FormValue("awsInvocationType"), MessageGroupID: strings.TrimSpace(r.FormValue("awsMessageGroupId")),
		Subject: strings.TrimSpace(r.FormValue("awsSubject")), Source: strings.TrimSpace(r.FormValue("awsSource")),
		DetailType: strings.TrimSpace(r.FormValue("awsDetailType"))}
	return s.Canonical()
}

// testCall is the job form's "test call": the target of the form as it
// stands (saved or not) called once, now, without a log; the fragment
// shows the status and the first bytes, or the form's problems. Admins
// only: a call reaches whatever the form names, within the address rule
// and the allowed ARNs.
func (h *Handler) testCall(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if !p.Admin() {
		h.fail(w, r, fmt.Errorf("user %s, test call: %w", p.Name(), auth.ErrForbidden))
		return
	}
	b := h.base(r, p, "jobs")
	j, problems, _ := jobFromForm(r, b)
	d := struct {
		base
		Result   admin.TargetResult
		Problems []string
	}{base: b}
	if len(problems) == 0 {
		res, err := h.cfg.Admin.TestTarget(r.Context(), j, pathInt(r, "id"))
		var ve *xjob.ValidationError
		switch {
		case errors.As(err, &ve):
			for _, pr := range ve.Problems {
				problems[pr.Field] = b.problem(pr.Field, pr.Message)
			}
		case err != nil:
			h.fail(w, r, err)
			return
		}
		d.Result = res
	}
	for f, m := range problems {
		d.Problems = append(d.Problems, b.field(f)+b.T("sep")+m)
	}
	sort.Strings(d.Problems)
	if len(d.Problems) > 0 {
		w.WriteHeader(http.StatusUnprocessableEntity)
	}
	h.render(w, r, "testcall", d)
}

func readHeaderLines(text, field string, problems map[string]string) map[string]string {
	var out map[string]string
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, val, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "" {
			problems[field] = fmt.Sprintf("%q: write one header a line, as Name: value", line)
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[strings.TrimSpace(name)] = strings.TrimSpace(val)
	}
	return out
}

// targetProblem is the message of the target's problems (glueSource.*)
// under the field they name, for the form.
func targetProblem(problems map[string]string, prefix string) string {
	var msgs []string
	for f, m := range problems {
		if f == prefix || strings.HasPrefix(f, prefix+".") {
			msgs = append(msgs, m)
		}
	}
	sort.Strings(msgs)
	return strings.Join(msgs, "; ")
}

// targetMessages are the console's words for HTTP jobs, merged into each
// language's table.
var targetMessages = map[string]map[string]string{
	"en": {
		"e.AWS": "AWS (no executor)", "awstarget": "AWS target", "awstarget.arn": "ARN (one the operator allows)",
		"awstarget.input": "Input (payload, message, event detail or execution input)", "awstarget.invocation": "Lambda invocation",
		"awstarget.group": "Message group (FIFO)", "awstarget.subject": "SNS subject", "awstarget.source": "EventBridge source",
		"awstarget.detailType": "EventBridge detail type",
		"awstarget.help":       "Lambda, SQS, SNS, EventBridge or Step Functions, by ARN; an empty input sends the trigger's values as JSON. Same placeholders as HTTP targets.",
		"testcall":             "Test call", "testcall.hint": "Calls the target once now, as the form stands, without a log.",
		"testcall.ok": "Succeeded", "testcall.fail": "Failed",
		"e.HTTP": "HTTP (no executor)", "target": "HTTP target", "target.method": "Method", "target.url": "URL",
		"target.headers": "Headers (Name: value, one a line)", "target.secret": "Secret headers (stored encrypted, never shown)",
		"target.body": "Body", "target.codes": "Success codes",
		"target.help": "Placeholders: {{param}}, {{jobId}}, {{logId}}, {{scheduleTime}}, {{scheduleTimeMs}}, {{triggerTime}}, {{shardIndex}}, {{shardTotal}}; add |json or |url to encode. A secret shown as ref:… keeps the stored value.",
	},
	"zh-CN": {
		"e.AWS": "AWS（无需执行器）", "awstarget": "AWS 目标", "awstarget.arn": "ARN（须为运维允许的）",
		"awstarget.input": "输入（载荷、消息、事件详情或执行输入）", "awstarget.invocation": "Lambda 调用方式",
		"awstarget.group": "消息组（FIFO）", "awstarget.subject": "SNS 主题", "awstarget.source": "EventBridge 来源",
		"awstarget.detailType": "EventBridge 详情类型",
		"awstarget.help":       "按 ARN 调用 Lambda、SQS、SNS、EventBridge 或 Step Functions；输入为空时以 JSON 发送触发的各项值。占位符与 HTTP 目标相同。",
		"testcall":             "测试调用", "testcall.hint": "按表单当前内容立即调用目标一次，不写日志。",
		"testcall.ok": "成功", "testcall.fail": "失败",
		"e.HTTP": "HTTP（无需执行器）", "target": "HTTP 目标", "target.method": "请求方法", "target.url": "地址",
		"target.headers": "请求头（每行一个「名称: 值」）", "target.secret": "机密请求头（加密保存，从不显示）",
		"target.body": "请求体", "target.codes": "成功状态码",
		"target.help": "占位符：{{param}}、{{jobId}}、{{logId}}、{{scheduleTime}}、{{scheduleTimeMs}}、{{triggerTime}}、{{shardIndex}}、{{shardTotal}}；加 |json 或 |url 编码。显示为 ref:… 的机密保留已存的值。",
	},
	"zh-TC": {
		"e.AWS": "AWS（無需執行器）", "awstarget": "AWS 目標", "awstarget.arn": "ARN（須為維運允許的）",
		"awstarget.input": "輸入（酬載、訊息、事件詳細資料或執行輸入）", "awstarget.invocation": "Lambda 呼叫方式",
		"awstarget.group": "訊息群組（FIFO）", "awstarget.subject": "SNS 主旨", "awstarget.source": "EventBridge 來源",
		"awstarget.detailType": "EventBridge 詳細資料類型",
		"awstarget.help":       "依 ARN 呼叫 Lambda、SQS、SNS、EventBridge 或 Step Functions；輸入為空時以 JSON 傳送觸發的各項值。預留位置與 HTTP 目標相同。",
		"testcall":             "測試呼叫", "testcall.hint": "依表單目前內容立即呼叫目標一次，不寫日誌。",
		"testcall.ok": "成功", "testcall.fail": "失敗",
		"e.HTTP": "HTTP（無需執行器）", "target": "HTTP 目標", "target.method": "請求方法", "target.url": "網址",
		"target.headers": "請求標頭（每行一個「名稱: 值」）", "target.secret": "機密請求標頭（加密儲存，從不顯示）",
		"target.body": "請求本文", "target.codes": "成功狀態碼",
		"target.help": "預留位置：{{param}}、{{jobId}}、{{logId}}、{{scheduleTime}}、{{scheduleTimeMs}}、{{triggerTime}}、{{shardIndex}}、{{shardTotal}}；加 |json 或 |url 編碼。顯示為 ref:… 的機密保留已存的值。",
	},
}

func init() {
	for lang, m := range targetMessages {
		for k, v := range m {
			messages[lang][k] = v
		}
	}
}
