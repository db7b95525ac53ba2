package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/target"
)

// targetForm is an HTTP job's spec as the job form shows it: one field
// per part, headers one "Name: value" per line. Secret headers show their
// references (the admin never returns a value), which keep the stored
// secrets when the form is saved back.
type targetForm struct {
	Method, URL, Headers, SecretHeaders, Body, SuccessCodes string
	Methods                                                 []string
	// Err holds the problems of each part (url, method, headers,
	// secretHeaders, body, successCodes; "" for the spec as a whole).
	Err map[string]string
}

// targetOf is j's spec for the form; a source that is not a spec (what a
// refused form typed) shows what could be read of it.
func targetOf(j xjob.Job, problems map[string]string) targetForm {
	f := targetForm{Methods: target.Methods, Err: map[string]string{}}
	for _, part := range []string{"url", "method", "headers", "secretHeaders", "body", "successCodes"} {
		if m := targetProblem(problems, "glueSource."+part); m != "" {
			f.Err[part] = m
		}
	}
	if m, ok := problems["glueSource"]; ok {
		f.Err[""] = m
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
		"e.HTTP": "HTTP (no executor)", "target": "HTTP target", "target.method": "Method", "target.url": "URL",
		"target.headers": "Headers (Name: value, one a line)", "target.secret": "Secret headers (stored encrypted, never shown)",
		"target.body": "Body", "target.codes": "Success codes",
		"target.help": "Placeholders: {{param}}, {{jobId}}, {{logId}}, {{scheduleTime}}, {{scheduleTimeMs}}, {{triggerTime}}, {{shardIndex}}, {{shardTotal}}; add |json or |url to encode. A secret shown as ref:… keeps the stored value.",
	},
	"zh-CN": {
		"e.HTTP": "HTTP（无需执行器）", "target": "HTTP 目标", "target.method": "请求方法", "target.url": "地址",
		"target.headers": "请求头（每行一个「名称: 值」）", "target.secret": "机密请求头（加密保存，从不显示）",
		"target.body": "请求体", "target.codes": "成功状态码",
		"target.help": "占位符：{{param}}、{{jobId}}、{{logId}}、{{scheduleTime}}、{{scheduleTimeMs}}、{{triggerTime}}、{{shardIndex}}、{{shardTotal}}；加 |json 或 |url 编码。显示为 ref:… 的机密保留已存的值。",
	},
	"zh-TC": {
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
