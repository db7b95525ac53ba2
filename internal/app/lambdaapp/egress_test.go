package lambdaapp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/xjobdev/xjob/driver"
	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/app/lambdaapp"
	"github.com/xjobdev/xjob/protocol"
)

// TestLambdaRegistrationAddressRule: a deployment that does not allow
// loopback (the default on AWS) refuses a heartbeat naming a loopback or
// metadata address at the registry function, through API Gateway, and
// records nothing; the same heartbeat from a deployment whose operator
// allows loopback (XJOB_ALLOW_CIDRS, as the emulated stack sets) is
// recorded.
func TestLambdaRegistrationAddressRule(t *testing.T) {
	e := setupEnv(t)
	delete(e.vars, awsconfig.EnvAllowCIDRs)
	gw := e.apiGateway()
	register := func(app, address string) (int, string) {
		t.Helper()
		b, _ := json.Marshal(protocol.RegistryParam{RegistryGroup: "EXECUTOR", RegistryKey: app, RegistryValue: address})
		req, _ := http.NewRequest("POST", gw.URL+"/api/registry", bytes.NewReader(b))
		req.Header.Set("XXL-JOB-ACCESS-TOKEN", accessToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var rt struct {
			Code int    `json:"code"`
			Msg  string `json:"msg"`
		}
		if err := json.Unmarshal(body, &rt); err != nil {
			t.Fatalf("reply %d %s: %v", resp.StatusCode, body, err)
		}
		return rt.Code, rt.Msg
	}
	entries := func(app string) int {
		t.Helper()
		es, err := e.store.RegistryList(context.Background(), driver.RegistryListParams{Key: app})
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	for _, addr := range []string{"http://127.0.0.1:9999/", "http://[::1]:9999/", "http://169.254.169.254/latest/meta-data/"} {
		// The reply is xxl-job's fixed "Illegal Argument." (no detail for the caller).
		if code, msg := register("refused", addr); code == 200 {
			t.Errorf("register %s: code %d %q, want refused", addr, code, msg)
		}
	}
	if n := entries("refused"); n != 0 {
		t.Fatalf("%d registry entries after refused registrations", n)
	}
	if code, msg := register("private", "http://10.0.0.7:9999/"); code != 200 {
		t.Fatalf("private address: code %d %q, want accepted", code, msg)
	}

	// Another deployment of the same tables, whose operator allows loopback.
	e.appsMu.Lock()
	e.vars[awsconfig.EnvAllowCIDRs] = "127.0.0.0/8"
	e.apps = map[string]*lambdaapp.App{}
	e.appsMu.Unlock()
	if code, msg := register("allowed", "http://127.0.0.1:9999/"); code != 200 {
		t.Fatalf("loopback allowed by the operator: code %d %q", code, msg)
	}
	if n := entries("allowed"); n != 1 {
		t.Fatalf("%d registry entries, want 1", n)
	}
}
