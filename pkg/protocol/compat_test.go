package protocol_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/xjobdev/xjob/pkg/protocol"
)

func TestDecodeCallbacks(t *testing.T) {
	t.Parallel()
	want := []protocol.HandleCallbackParam{{LogID: 7, LogDateTim: 1700000000000, HandleCode: 500, HandleMsg: "boom"}}
	tests := []struct {
		name, body string
		want       []protocol.HandleCallbackParam
		wantErr    bool
	}{
		{"2.3-3.4 array", `[{"logId":7,"logDateTim":1700000000000,"handleCode":500,"handleMsg":"boom"}]`, want, false},
		{"3.5 callbackList", ` {"callbackList":[{"logId":7,"logDateTime":1700000000000,"handleCode":500,"handleMsg":"boom"}]}`, want, false},
		{"2.2 executeResult", `[{"logId":7,"logDateTim":1700000000000,"executeResult":{"code":500,"msg":"boom","content":null}}]`, want, false},
		{"handleCode wins over executeResult", `[{"logId":7,"logDateTim":1700000000000,"handleCode":500,"handleMsg":"boom","executeResult":{"code":200}}]`, want, false},
		{"empty array", `[]`, []protocol.HandleCallbackParam{}, false},
		{"empty callbackList", `{"callbackList":[]}`, []protocol.HandleCallbackParam{}, false},
		{"object without callbackList", `{"logId":7}`, nil, true},
		{"null callbackList", `{"callbackList":null}`, nil, true},
		{"string", `"x"`, nil, true},
		{"empty", ``, nil, true},
		{"broken array", `[{"logId":`, nil, true},
		{"callbackList not an array", `{"callbackList":{"logId":7}}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := protocol.DecodeCallbacks([]byte(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLogParamDate(t *testing.T) {
	t.Parallel()
	for _, p := range []protocol.LogParam{{LogDateTim: 5}, {LogDateTime: 5}, {LogDateTim: 5, LogDateTime: 9}} {
		if p.Date() != 5 {
			t.Errorf("%+v.Date() = %d, want 5", p, p.Date())
		}
	}
}

func TestAppNameContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if got := protocol.AppNameFromContext(ctx); got != "" {
		t.Fatalf("empty ctx: %q", got)
	}
	if got := protocol.AppNameFromContext(protocol.WithAppName(ctx, "")); got != "" {
		t.Fatalf("blank appname: %q", got)
	}
	if got := protocol.AppNameFromContext(protocol.WithAppName(ctx, "app")); got != "app" {
		t.Fatalf("got %q", got)
	}
}

// FuzzDecodeCallbacks: any body either fails or yields items in the
// 2.3 – 3.4 shape that survive a round trip through the array form.
func FuzzDecodeCallbacks(f *testing.F) {
	for _, seed := range []string{
		`[{"logId":7,"logDateTim":1700000000000,"handleCode":500,"handleMsg":"boom"}]`,
		`{"callbackList":[{"logId":7,"logDateTime":1700000000000,"handleCode":200}]}`,
		`[{"logId":7,"logDateTim":1,"executeResult":{"code":500,"msg":"x","content":null}}]`,
		`{"callbackList":null}`, `[]`, `{}`, `"x"`, ``, `[{"logId":"7"}]`, " \n[{}]",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := protocol.DecodeCallbacks(body)
		if err != nil {
			return
		}
		for _, it := range items {
			if it.LogDateTime != 0 || it.ExecuteResult != nil {
				t.Fatalf("item not normalized: %+v", it)
			}
		}
		again, err := json.Marshal(items)
		if err != nil {
			t.Fatal(err)
		}
		back, err := protocol.DecodeCallbacks(again)
		if err != nil || !reflect.DeepEqual(back, items) && len(items) > 0 {
			t.Fatalf("round trip of %s: %+v, %v; want %+v", again, back, err, items)
		}
	})
}
