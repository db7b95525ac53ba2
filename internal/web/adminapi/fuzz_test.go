package adminapi_test

import (
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/xjobdev/xjob/internal/strictjson"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// FuzzExecutorRoutes posts arbitrary bodies to every executor route of a
// real handler: the answer is always a ReturnT (HTTP 200), never a panic
// or a 5xx.
func FuzzExecutorRoutes(f *testing.F) {
	for _, s := range []string{
		`{"registryGroup":"EXECUTOR","registryKey":"xjob-demo","registryValue":"http://10.0.0.5:9999/"}`,
		`{"registryGroup":"EXECUTOR","registryKey":"xjob-demo","registryValue":"file:///etc/passwd"}`,
		`[{"logId":1,"logDateTim":1,"handleCode":200,"handleMsg":"ok"}]`,
		`{"callbackList":[{"logId":1,"logDateTime":1,"handleCode":500}]}`,
		`[{"logId":1,"executeResult":{"code":200,"msg":"2.2"}}]`,
		`[{"logId":1,"logId":2}]`, `{"REGISTRYKEY":"x"}`, `[]`, `{}`, `null`, ``,
	} {
		for _, uri := range []string{"registry", "registryRemove", "callback", "nothing"} {
			f.Add(uri, s)
		}
	}
	e := setup(f)
	f.Fuzz(func(t *testing.T, uri, body string) {
		if strings.Contains(uri, "/") || len(uri) > 32 {
			return
		}
		et := *e
		et.t = t
		// Escaped: any byte may reach the route (a control character in a
		// raw request line is refused by net/http before any route).
		r := et.call("POST", "/api/"+url.PathEscape(uri), body, "XXL-JOB-ACCESS-TOKEN: "+accessToken)
		if r.status != 200 || !strings.HasPrefix(string(r.body), `{"code":`) {
			t.Fatalf("POST /api/%s %q: %d %s", uri, body, r.status, r.body)
		}
	})
}

// FuzzCallbackBatch decodes arbitrary callback batches as the callback
// route does (strict key check, then every protocol generation's shape).
func FuzzCallbackBatch(f *testing.F) {
	for _, s := range []string{
		`[{"logId":1,"logDateTim":1,"handleCode":200}]`, `{"callbackList":[]}`,
		`[{"logId":1,"executeResult":{"code":500,"msg":"x","content":null}}]`, `[{"logId":"1"}]`, `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = strictjson.Check(body, reflect.TypeFor[[]protocol.HandleCallbackParam](), strictjson.Options{})
		items, err := protocol.DecodeCallbacks(body)
		if err == nil && len(items) > len(body)/2 {
			t.Fatalf("%d items from %d bytes", len(items), len(body))
		}
	})
}
