package executor

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The literal JSON below is written from xxl-job's Java sources (TriggerParam, callback, registry),
// not from our structs, so a renamed field or tag fails here.

func TestWireReplies(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	_ = f.e.Register("demo", func(context.Context, *Job) error { return nil })
	f.start(t)
	day := filepath.Join(f.e.cfg.LogDir, "2024-03-01")
	if err := os.MkdirAll(day, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(day, "42.log"), []byte("line one\nline two\r\nline three"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, method, uri, token, body string
		want                           string
	}{
		{"beat", "POST", "/beat", "tok", `""`, `{"code":200}`},
		{"beat empty body", "POST", "/beat", "tok", ``, `{"code":200}`},
		{"GET refused", "GET", "/beat", "tok", ``, `{"code":500,"msg":"invalid request, HttpMethod not support."}`},
		{"wrong token", "POST", "/beat", "nope", `""`, `{"code":500,"msg":"The access token is wrong."}`},
		{"missing token", "POST", "/beat", "", `""`, `{"code":500,"msg":"The access token is wrong."}`},
		{"query string", "POST", "/beat?x=1", "tok", `""`, `{"code":500,"msg":"invalid request, uri-mapping(/beat?x=1) not found."}`},
		{"prefix", "POST", "/xxl/run", "tok", `{}`, `{"code":500,"msg":"invalid request, uri-mapping(/xxl/run) not found."}`},
		{"trailing slash", "POST", "/run/", "tok", `{}`, `{"code":500,"msg":"invalid request, uri-mapping(/run/) not found."}`},
		{"idleBeat idle", "POST", "/idleBeat", "tok", `{"jobId":1}`, `{"code":200}`},
		{"kill none", "POST", "/kill", "tok", `{"jobId":1}`, `{"code":200,"msg":"job thread already killed."}`},
		{"run unknown handler", "POST", "/run", "tok",
			`{"jobId":1,"executorHandler":"nope","executorParams":"","executorBlockStrategy":"SERIAL_EXECUTION","executorTimeout":0,"logId":1,"logDateTime":1709287200000,"glueType":"BEAN","glueSource":"","glueUpdatetime":0,"broadcastIndex":0,"broadcastTotal":1}`,
			`{"code":500,"msg":"job handler [nope] not found."}`},
		{"run glue shell", "POST", "/run", "tok",
			`{"jobId":1,"executorParams":"","executorBlockStrategy":"SERIAL_EXECUTION","executorTimeout":0,"logId":1,"logDateTime":1709287200000,"glueType":"GLUE_SHELL","glueSource":"echo hi","glueUpdatetime":1709280000000,"broadcastIndex":0,"broadcastTotal":1}`,
			`{"code":500,"msg":"glueType[GLUE_SHELL] is not supported by this executor: the xjob Go executor runs BEAN handlers only."}`},
		{"run bad glue", "POST", "/run", "tok", `{"jobId":1,"glueType":"FOO","logId":1}`, `{"code":500,"msg":"glueType[FOO] is not valid."}`},
		{"run ok", "POST", "/run", "tok",
			`{"jobId":9,"executorHandler":"demo","executorParams":"p","executorBlockStrategy":"SERIAL_EXECUTION","executorTimeout":0,"logId":900,"logDateTime":1709287200000,"glueType":"BEAN","glueSource":"","glueUpdatetime":0,"broadcastIndex":0,"broadcastTotal":1}`,
			`{"code":200}`},
		{"log from 1", "POST", "/log", "tok", `{"logDateTim":1709287200000,"logId":42,"fromLineNum":1}`,
			`{"code":200,"content":{"fromLineNum":1,"toLineNum":3,"logContent":"line one\nline two\nline three\n","isEnd":false},"data":{"fromLineNum":1,"toLineNum":3,"logContent":"line one\nline two\nline three\n","isEnd":false}}`},
		{"log from 2", "POST", "/log", "tok", `{"logDateTim":1709287200000,"logId":42,"fromLineNum":2}`,
			`{"code":200,"content":{"fromLineNum":2,"toLineNum":3,"logContent":"line two\nline three\n","isEnd":false},"data":{"fromLineNum":2,"toLineNum":3,"logContent":"line two\nline three\n","isEnd":false}}`},
		{"log past end", "POST", "/log", "tok", `{"logDateTim":1709287200000,"logId":42,"fromLineNum":4}`,
			`{"code":200,"content":{"fromLineNum":4,"toLineNum":3,"logContent":"","isEnd":false},"data":{"fromLineNum":4,"toLineNum":3,"logContent":"","isEnd":false}}`},
		{"log missing", "POST", "/log", "tok", `{"logDateTim":1709287200000,"logId":43,"fromLineNum":1}`,
			`{"code":200,"content":{"fromLineNum":1,"toLineNum":0,"logContent":"readLog fail, logFile not exists","isEnd":true},"data":{"fromLineNum":1,"toLineNum":0,"logContent":"readLog fail, logFile not exists","isEnd":true}}`},
		{"log with 3.5's logDateTime", "POST", "/log", "tok", `{"logDateTime":1709287200000,"logId":42,"fromLineNum":3}`,
			`{"code":200,"content":{"fromLineNum":3,"toLineNum":3,"logContent":"line three\n","isEnd":false},"data":{"fromLineNum":3,"toLineNum":3,"logContent":"line three\n","isEnd":false}}`},
		{"trigger (3.5 admin) ok", "POST", "/trigger", "tok",
			`{"jobId":10,"executorHandler":"demo","executorParams":"p","executorBlockStrategy":"SERIAL_EXECUTION","executorTimeout":0,"logId":901,"logDateTime":1709287200000,"glueType":"BEAN","glueSource":"","glueUpdatetime":0,"broadcastIndex":0,"broadcastTotal":1}`,
			`{"code":200}`},
		{"log other day", "POST", "/log", "tok", `{"logDateTim":1709200800000,"logId":42,"fromLineNum":1}`,
			`{"code":200,"content":{"fromLineNum":1,"toLineNum":0,"logContent":"readLog fail, logFile not exists","isEnd":true},"data":{"fromLineNum":1,"toLineNum":0,"logContent":"readLog fail, logFile not exists","isEnd":true}}`},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, f.srv.URL+tt.uri, strings.NewReader(tt.body))
		if tt.token != "" {
			req.Header.Set("XXL-JOB-ACCESS-TOKEN", tt.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		buf := new(strings.Builder)
		_, _ = bufioCopy(buf, resp)
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d", tt.name, resp.StatusCode)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/html;charset=UTF-8" {
			t.Errorf("%s: content type %q", tt.name, ct)
		}
		if buf.String() != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, buf.String(), tt.want)
		}
	}
	f.admin.waitCallbacks(t, 900)
}

func bufioCopy(b *strings.Builder, resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	var n int64
	p := make([]byte, 4096)
	for {
		k, err := resp.Body.Read(p)
		b.Write(p[:k])
		n += int64(k)
		if err != nil {
			return n, nil
		}
	}
}

func TestWireBodyLimit(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	big := `{"jobId":1,"executorParams":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
	req, _ := http.NewRequest("POST", f.srv.URL+"/run", strings.NewReader(big))
	req.Header.Set("XXL-JOB-ACCESS-TOKEN", "tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
}

func TestWireNoTokenConfigured(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.AccessToken, c.AllowNoToken = "", true })
	f.start(t)
	req, _ := http.NewRequest("POST", f.srv.URL+"/beat", strings.NewReader(`""`))
	req.Header.Set("XXL-JOB-ACCESS-TOKEN", "anything")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b := new(strings.Builder)
	_, _ = bufioCopy(b, resp)
	expect(t, "beat", b.String(), `{"code":200}`)

	// Callbacks carry no token header when none is configured.
	_ = f.e.Register("demo", func(context.Context, *Job) error { return nil })
	f.trigger(t, 1, 1, "demo", "", 0)
	reqs := f.admin.waitFor(t, "callback", func(r []adminRequest) bool { return len(delivered(r)) == 1 })
	if _, has := reqs[0].header["Xxl-Job-Access-Token"]; has {
		t.Fatalf("token header sent: %v", reqs[0].header)
	}
}

func TestWireCallbackAndRegistryRequests(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) {
		c.AppName = "demo-app"
		c.Address = "http://10.0.0.5:9999"
	})
	_ = f.e.Register("ok", func(_ context.Context, j *Job) error { return nil })
	_ = f.e.Register("bad", func(_ context.Context, j *Job) error { j.Fail("boom"); return nil })
	f.start(t)

	reg := `{"registryGroup":"EXECUTOR","registryKey":"demo-app","registryValue":"http://10.0.0.5:9999/"}`
	reqs := f.admin.waitFor(t, "registry", func(r []adminRequest) bool { return len(r) >= 1 })
	checkAdminRequest(t, reqs[0], "/api/registry", reg)

	f.trigger(t, 1, 1, "ok", "", 0)
	f.admin.waitCallbacks(t, 1)
	f.trigger(t, 2, 2, "bad", "", 0)
	f.admin.waitCallbacks(t, 2)
	reqs = f.admin.waitFor(t, "callbacks", func(r []adminRequest) bool { return len(r) >= 3 })
	checkAdminRequest(t, reqs[1], "/api/callback", `[{"logId":1,"logDateTim":1709287200000,"handleCode":200}]`)
	checkAdminRequest(t, reqs[2], "/api/callback", `[{"logId":2,"logDateTim":1709287200000,"handleCode":500,"handleMsg":"boom"}]`)

	// The heartbeat repeats every 30 s on the clock.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.clk.WaitForSleepers(ctx, 4); err != nil { // retry, beat, two idle workers
		t.Fatal(err)
	}
	f.clk.Advance(30 * time.Second)
	reqs = f.admin.waitFor(t, "second beat", func(r []adminRequest) bool { return len(r) >= 4 })
	checkAdminRequest(t, reqs[3], "/api/registry", reg)

	if err := f.e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	reqs = f.admin.waitFor(t, "registryRemove", func(r []adminRequest) bool { return len(r) >= 5 })
	checkAdminRequest(t, reqs[4], "/api/registryRemove", reg)
}

func checkAdminRequest(t *testing.T, r adminRequest, path, body string) {
	t.Helper()
	if r.path != path || r.body != body {
		t.Fatalf("admin request:\n got %s %s\nwant %s %s", r.path, r.body, path, body)
	}
	if got := r.header.Get("XXL-JOB-ACCESS-TOKEN"); got != "tok" {
		t.Errorf("%s: token header %q", path, got)
	}
	if got := r.header.Get("Content-Type"); got != "application/json;charset=UTF-8" {
		t.Errorf("%s: content type %q", path, got)
	}
}

func TestWireJobLogLines(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	_ = f.e.Register("logger", func(_ context.Context, j *Job) error {
		j.Logf("hello %s", j.Param)
		j.Logger().Info("via slog", "n", 1)
		return nil
	})
	f.start(t)
	f.post(t, "/run", `{"jobId":5,"executorHandler":"logger","executorParams":"world","logId":5,"logDateTime":1709287200000,"glueType":"BEAN","broadcastTotal":1}`)
	f.admin.waitCallbacks(t, 5)
	p := "2024-03-01 10:00:00 [logger]-[5] "
	payload := `{"fromLineNum":3,"toLineNum":7,"logContent":"` +
		p + `hello world\n` +
		p + `level=INFO msg=\"via slog\" n=1\n` +
		p + `----------- xjob job execute end(finish) -----------\n` +
		p + `----------- Result: handleCode=200, handleMsg = \n` +
		`2024-03-01 10:00:00 [callback]-[5] ----------- xjob job callback finish.\n","isEnd":false}`
	want := `{"code":200,"content":` + payload + `,"data":` + payload + `}`
	eventually(t, "callback note in log", func() bool {
		return strings.Contains(f.post(t, "/log", `{"logDateTim":1709287200000,"logId":5,"fromLineNum":3}`), "callback finish")
	})
	expect(t, "log", f.post(t, "/log", `{"logDateTim":1709287200000,"logId":5,"fromLineNum":3}`), want)
}
