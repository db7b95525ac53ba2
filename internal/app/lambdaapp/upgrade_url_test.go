package lambdaapp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// TestLambdaExecutorRoutesAtBothAddresses: an executor at the function
// URL (its admin address now) and one still configured with the HTTP
// API's address (a deployment upgraded before its executors are) both
// register: the web function behind the HTTP API serves the executor
// routes too, with the same access-token check. Only the function URL's
// request is a callback invocation with no API Gateway request.
func TestLambdaExecutorRoutesAtBothAddresses(t *testing.T) {
	e := setupEnv(t)
	gw := e.apiGateway()
	fu := e.functionURL(gw.URL)
	beat := func(base, app, token string) protocol.ReturnT {
		t.Helper()
		b, _ := json.Marshal(protocol.RegistryParam{RegistryGroup: "EXECUTOR", RegistryKey: app, RegistryValue: "http://127.0.0.1:9999/"})
		req, _ := http.NewRequest("POST", base+"/api/registry", bytes.NewReader(b))
		req.Header.Set(protocol.AccessTokenHeader, token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rt protocol.ReturnT
		if err := json.NewDecoder(resp.Body).Decode(&rt); err != nil {
			t.Fatalf("reply %d: %v", resp.StatusCode, err)
		}
		return rt
	}
	before := e.meter.Snapshot()
	for _, tt := range []struct{ base, app string }{{fu.URL, "at-url"}, {gw.URL, "at-http-api"}} {
		if rt := beat(tt.base, tt.app, "wrong"); rt.Code == protocol.SuccessCode {
			t.Errorf("%s: a wrong token registered", tt.app)
		}
		if rt := beat(tt.base, tt.app, accessToken); rt.Code != protocol.SuccessCode {
			t.Errorf("%s: heartbeat refused: %+v", tt.app, rt)
		}
		es, err := e.store.RegistryList(context.Background(), driver.RegistryListParams{Key: tt.app})
		if err != nil || len(es) != 1 {
			t.Errorf("%s: registry entries %+v %v, want the one heartbeat", tt.app, es, err)
		}
	}
	u := e.meter.Snapshot().Sub(before)
	if u.URLRequests != 2 || u.Invokes["callback"].Invocations != 2 || u.HTTPRequests != 2 || u.Invokes["web"].Invocations != 2 {
		t.Errorf("function URL requests %d, callback invocations %d; HTTP API requests %d, web invocations %d; want 2 each",
			u.URLRequests, u.Invokes["callback"].Invocations, u.HTTPRequests, u.Invokes["web"].Invocations)
	}
}
