package executorapi

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/xjobdev/xjob/internal/strictjson"
	"github.com/xjobdev/xjob/pkg/protocol"
)

func TestPlainCallbacks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body  string
		plain bool // takes the fast path
		ok    bool // checkCallbackKeys accepts it
	}{
		{`[]`, true, true},
		{` [ ] `, true, true},
		{`[{}]`, true, true},
		{`[{"logId":1,"logDateTim":1800000000000,"handleCode":200,"handleMsg":"ok"}]`, true, true},
		{"[{\"logId\":1,\"handleCode\":500,\"handleMsg\":\"line\\nnext \\\"q\\\" \\u00e9 <b>\"},\n {\"logId\":2,\"logDateTime\":-3,\"handleCode\":200,\"handleMsg\":null}]\n", true, true},
		{`[{"logId":1,"handleCode":200,"handleMsg":"a"},{"logId":2,"handleCode":200}]`, true, true},
		{`[{"logId":true,"handleCode":false}]`, true, true},
		// Not plain: Check decides.
		{`[{"logId":1,"logId":2}]`, false, false},
		{`[{"LogId":1}]`, false, false},
		{`[{"logid":1}]`, false, false},
		{`[{"log\u0049d":1}]`, false, true},
		{`[{"logId":1,"executeResult":{"code":200}}]`, false, true},
		{`[{"logId":1,"executeResult":{"code":200,"code":500}}]`, false, false},
		{`{"callbackList":[{"logId":1,"handleCode":200}]}`, false, true},
		{`[{"logId":1e3}]`, false, true},
		{`[{"logId":1.5}]`, false, true},
		{`[{"logId":1E700}]`, false, false},
		{`[{"logId":12345678901234567890}]`, false, true},
		{`[{"logId":01}]`, false, true},
		{`[{"other":1}]`, false, true},
		{`[{"logId":1}] x`, false, true},
		{`[{"logId":1},]`, false, true},
		{`[{"logId":1`, false, true},
		{"[{\"handleMsg\":\"raw\ttab\"}]", false, true},
	}
	for _, c := range cases {
		t.Run(c.body, func(t *testing.T) {
			t.Parallel()
			if got := plainCallbacks([]byte(c.body)); got != c.plain {
				t.Errorf("plainCallbacks = %v, want %v", got, c.plain)
			}
			if err := checkCallbackKeys([]byte(c.body)); (err == nil) != c.ok {
				t.Errorf("checkCallbackKeys = %v, want ok %v", err, c.ok)
			}
		})
	}
}

// FuzzPlainCallbacks: a body the fast path accepts is valid JSON that
// strictjson.Check accepts too.
func FuzzPlainCallbacks(f *testing.F) {
	for _, s := range []string{`[]`, `[{"logId":1,"logDateTim":2,"handleCode":200,"handleMsg":"ok"}]`,
		`[{"logId":-0,"handleMsg":"\u2028\\\"","logDateTime":null},{}]`, `[{"logId":1,"logId":1}]`, `[{"logId":01}]`} {
		f.Add([]byte(s))
	}
	t := reflect.TypeFor[[]protocol.HandleCallbackParam]()
	f.Fuzz(func(tt *testing.T, body []byte) {
		if !plainCallbacks(body) {
			return
		}
		if !json.Valid(body) {
			tt.Fatalf("plain but not valid JSON: %q", body)
		}
		if err := strictjson.Check(body, t, strictjson.Options{}); err != nil {
			tt.Fatalf("plain but Check refuses %q: %v", body, err)
		}
	})
}

func BenchmarkCheckCallbackKeys(b *testing.B) {
	body := []byte(`[{"logId":123456,"logDateTim":1800000000123,"handleCode":200,"handleMsg":"ok"},` +
		`{"logId":123457,"logDateTim":1800000000123,"handleCode":200,"handleMsg":"ok"}]`)
	t := reflect.TypeFor[[]protocol.HandleCallbackParam]()
	b.Run("strictjson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = strictjson.Check(body, t, strictjson.Options{})
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = checkCallbackKeys(body)
		}
	})
}
