package adminapi_test

import (
	"bytes"
	"errors"
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
// route does: the strict key check (strictjson.Check against the body's
// shape), then every protocol generation's shape (DecodeCallbacks). The
// route leaves syntax errors to DecodeCallbacks, which is safe only if
// every body DecodeCallbacks accepts was walked to its end by Check: its
// verdict on such a body is nil or a key or number error, never a syntax
// error that stopped it before keys it did not see. A batch also holds no
// more items than its bytes can spell.
func FuzzCallbackBatch(f *testing.F) {
	for _, s := range []string{
		`[{"logId":1,"logDateTim":1,"handleCode":200}]`, `{"callbackList":[]}`,
		`[{"logId":1,"executeResult":{"code":500,"msg":"x","content":null}}]`, `[{"logId":"1"}]`, `[`,
		`[{"logId":1,"logId":2}]`, `{"callbackList":[{"LOGID":1}]}`, `[{"logId":1}] [`, `[{"logId":1,"executeResult":{"content":1E700}}]`,
	} {
		f.Add([]byte(s))
	}
	arr := reflect.TypeFor[[]protocol.HandleCallbackParam]()
	obj := reflect.TypeFor[struct {
		CallbackList []protocol.HandleCallbackParam `json:"callbackList"`
	}]()
	f.Fuzz(func(t *testing.T, body []byte) {
		typ := arr
		if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '{' {
			typ = obj
		}
		checkErr := strictjson.Check(body, typ, strictjson.Options{})
		items, err := protocol.DecodeCallbacks(body)
		if err != nil {
			return
		}
		var se *strictjson.Error
		if checkErr != nil && !errors.As(checkErr, &se) {
			t.Fatalf("DecodeCallbacks accepts %q, which the key check stopped reading: %v", body, checkErr)
		}
		if len(items) > len(body)/2 {
			t.Fatalf("%d items from %d bytes", len(items), len(body))
		}
	})
}
