package lambdaapp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/app/lambdaapp"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// TestLambdaRegistrationAddressRule: a deployment that does not allow
// loopback (the default on AWS) refuses a heartbeat naming a loopback or
// metadata address at the executor API's function URL, and
// records nothing; its dispatch function refuses to dial a manual group's
// loopback executor. The same heartbeat and trigger in a deployment whose
// operator allows loopback (XJOB_ALLOW_CIDRS, as the emulated stack sets)
// go through.
func TestLambdaRegistrationAddressRule(t *testing.T) {
	e := setupEnv(t)
	delete(e.vars, awsconfig.EnvAllowCIDRs)
	gw := e.apiGateway()
	fu := e.functionURL(gw.URL)
	register := func(app, address string) (int, string) {
		t.Helper()
		b, _ := json.Marshal(protocol.RegistryParam{RegistryGroup: "EXECUTOR", RegistryKey: app, RegistryValue: address})
		req, _ := http.NewRequest("POST", fu.URL+"/api/registry", bytes.NewReader(b))
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

	// At dispatch: an admin's manual group naming a loopback executor. The
	// dispatch function refuses to dial it; the executor sees nothing.
	rec := newExecutor(t, fu.URL) // its own registration is refused, as above
	var g xjob.Group
	adminCall(t, gw.URL, "POST", "/v1/groups", map[string]any{"appname": "manual-loopback", "title": "manual",
		"addressType": 1, "addressList": []string{rec.srv.URL + "/"}}, &g)
	var job xjob.Job
	adminCall(t, gw.URL, "POST", "/v1/jobs", map[string]any{"jobGroup": g.ID, "jobDesc": "by hand", "author": "t",
		"scheduleType": "NONE", "executorHandler": "ok"}, &job)
	trigger := func() lambdaapp.ManualResult {
		t.Helper()
		out, err := invoke(e, "dispatch", 10*time.Second, e.app("dispatch", "dispatch").Dispatch, map[string]any{"jobId": job.ID})
		if err != nil {
			t.Fatalf("manual trigger: %v", err)
		}
		var mr lambdaapp.ManualResult
		b, _ := json.Marshal(out)
		must(t, json.Unmarshal(b, &mr))
		return mr
	}
	if mr := trigger(); len(mr.TriggerCodes) != 1 || mr.TriggerCodes[0] == 200 {
		t.Fatalf("trigger of a loopback executor: %+v, want it refused", mr)
	}
	if n := rec.total(); n != 0 {
		t.Fatalf("the loopback executor ran %d times", n)
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
	if mr := trigger(); len(mr.TriggerCodes) != 1 || mr.TriggerCodes[0] != 200 {
		t.Fatalf("trigger with loopback allowed: %+v", mr)
	}
	if n := rec.total(); n != 1 {
		t.Fatalf("the executor ran %d times, want 1", n)
	}
}

// total is how many /run calls the executor received.
func (r *recorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.runs {
		n += c
	}
	return n
}
