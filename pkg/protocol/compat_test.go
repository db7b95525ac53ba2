package protocol_test

import (
	"context"
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
