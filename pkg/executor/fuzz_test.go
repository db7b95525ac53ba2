package executor

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/xjobdev/xjob/pkg/protocol"
)

// FuzzTriggerParam posts arbitrary /run bodies to an executor with no
// handlers, as the SDK serves them: a body encoding/json cannot decode
// into a TriggerParam is answered "request error: invalid JSON body", one
// it can is decoded (it survives a round trip through its encoding
// unchanged) and refused for its handler or glue type, never for its
// syntax; nothing is queued and nothing panics.
func FuzzTriggerParam(f *testing.F) {
	for _, s := range []string{
		`{"jobId":1,"executorHandler":"demo","executorParams":"x","executorBlockStrategy":"SERIAL_EXECUTION","executorTimeout":0,"logId":7,"logDateTime":1,"glueType":"BEAN","glueSource":"","glueUpdatetime":1,"broadcastIndex":0,"broadcastTotal":1}`,
		`{"jobId":"1"}`, `{"jobId":1e99}`, `[]`, `null`, `{"glueType":"GLUE_SHELL","glueSource":"echo \u0000"}`, `{"glueType":"NOPE"}`, ``,
	} {
		f.Add([]byte(s))
	}
	e, err := New(Config{AccessToken: tok16, LogDir: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var p protocol.TriggerParam
		decodeErr := json.Unmarshal(body, &p)
		got := e.Serve(context.Background(), Request{Method: http.MethodPost, URI: "/" + protocol.PathRun, Token: tok16, Body: body})
		if got.Code != protocol.FailCode {
			t.Fatalf("%q: %+v from an executor without handlers", body, got)
		}
		if syntax := strings.HasPrefix(got.Msg, "request error: invalid JSON body"); syntax != (decodeErr != nil) {
			t.Fatalf("%q: answered %q; encoding/json says %v", body, got.Msg, decodeErr)
		}
		e.mu.Lock()
		workers := len(e.workers)
		e.mu.Unlock()
		if workers != 0 {
			t.Fatalf("%q started %d workers on an executor without handlers", body, workers)
		}
		if decodeErr != nil {
			return
		}
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var back protocol.TriggerParam
		if err := decode(again, &back); err != nil || !reflect.DeepEqual(back, p) {
			t.Fatalf("round trip of %q: %+v, %v; want %+v", body, back, err, p)
		}
	})
}
