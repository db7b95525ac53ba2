package adminapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// TestExecutorAPIGenerations posts what each xxl-job executor generation
// sends to /api/registry and /api/callback and checks what was recorded.
func TestExecutorAPIGenerations(t *testing.T) {
	t.Parallel()
	tok := "XXL-JOB-ACCESS-TOKEN: " + accessToken
	app := "XXL-JOB-APPNAME: xjob-demo"
	tests := []struct {
		name     string
		body     string // %d: log id, %d: trigger time
		hdr      []string
		wantCode int
		wantMsg  string
	}{
		{"2.3-3.4 array", `[{"logId":%d,"logDateTim":%d,"handleCode":200,"handleMsg":"done"}]`, []string{tok}, 200, "done"},
		{"3.5 callbackList", `{"callbackList":[{"logId":%d,"logDateTime":%d,"handleCode":500,"handleMsg":"boom"}]}`,
			[]string{tok, app}, 500, "boom"},
		{"2.2 executeResult", `[{"logId":%d,"logDateTim":%d,"executeResult":{"code":500,"msg":"old boom","content":null}}]`,
			[]string{tok}, 500, "old boom"},
		{"2.2 executeResult success, msg null", `[{"logId":%d,"logDateTim":%d,"executeResult":{"code":200,"msg":null}}]`,
			[]string{tok}, 200, ""},
	}
	for _, prefix := range []string{"", "/xxl-job-admin"} {
		for _, tt := range tests {
			t.Run(prefix+" "+tt.name, func(t *testing.T) {
				t.Parallel()
				e := setup(t)
				reg := `{"registryGroup":"EXECUTOR","registryKey":"xjob-demo","registryValue":"http://10.0.0.5:9999/"}`
				if r := e.call("POST", prefix+"/api/registry", reg, tt.hdr...); string(r.body) != `{"code":200}` {
					t.Fatalf("registry: %s", r.body)
				}
				if entries, _ := e.db.RegistryList(e.ctx, driver.RegistryListParams{}); len(entries) != 1 {
					t.Fatalf("registry entries = %v", entries)
				}
				l := e.runningLog(e.job(e.group().ID, ""))
				if r := e.call("POST", prefix+"/api/callback", fmt.Sprintf(tt.body, l.ID, l.TriggerTime), tt.hdr...); string(r.body) != `{"code":200}` {
					t.Fatalf("callback: %d %s", r.status, r.body)
				}
				got, err := e.db.LogGet(e.ctx, l.ID)
				if err != nil || got.HandleCode != tt.wantCode || got.HandleMsg != tt.wantMsg {
					t.Fatalf("log after callback = code %d msg %q (%v), want %d %q", got.HandleCode, got.HandleMsg, err, tt.wantCode, tt.wantMsg)
				}
			})
		}
	}
	for _, bad := range []string{`{"callbackList":null}`, `{}`, `"x"`, `{"callbackList":{}}`} {
		t.Run("rejected "+bad, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			if r := e.call("POST", "/api/callback", bad, tok); r.status != 200 || string(r.body) == `{"code":200}` {
				t.Fatalf("%s: %d %s, want a code 500 reply", bad, r.status, r.body)
			}
		})
	}
}

// TestExecutorLogAndKill35 reads the executor log of, and kills, a run on
// an executor that checks what xxl-job 3.5's does: the appname header of
// its group, logDateTime in /log; it replies with data, not content.
func TestExecutorLogAndKill35(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var mu sync.Mutex
	var seen []string
	exec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.URL.Path+" app="+r.Header.Get(protocol.AppNameHeader))
		mu.Unlock()
		if r.Header.Get(protocol.AppNameHeader) != "app-35" {
			_, _ = io.WriteString(w, `{"code":500,"msg":"invalid request, accessToken or appname is empty."}`)
			return
		}
		switch r.URL.Path {
		case "/kill":
			_, _ = io.WriteString(w, `{"code":200,"msg":"Success"}`)
		case "/log":
			var p struct {
				LogDateTime int64 `json:"logDateTime"`
			}
			_ = json.Unmarshal(body, &p)
			if p.LogDateTime == 0 {
				_, _ = io.WriteString(w, `{"code":200,"data":{"fromLineNum":1,"toLineNum":0,"logContent":"readLog fail, logFile not exists","isEnd":true}}`)
				return
			}
			_, _ = io.WriteString(w, `{"code":200,"msg":"Success","data":{"fromLineNum":1,"toLineNum":2,"logContent":"one\ntwo","isEnd":false}}`)
		default:
			_, _ = io.WriteString(w, `{"code":500,"msg":"invalid request, uri-mapping(`+r.URL.Path+`) not found."}`)
		}
	}))
	t.Cleanup(exec.Close)

	var g xjob.Group
	e.must(201, "POST", "/v1/groups", `{"appname":"app-35","title":"Three five","addressType":1,"addressList":["`+exec.URL+`/"]}`, &g)
	j := e.job(g.ID, "")
	l, err := e.db.LogCreate(e.ctx, xjob.Log{
		OccurrenceID: fire.Occurrence{JobID: j.ID, Type: xjob.TriggerManual, Ref: strconv.FormatInt(time.Now().UnixNano(), 10)}.ID(0),
		JobID:        j.ID, GroupID: g.ID, TriggerType: xjob.TriggerManual, TriggerTime: clock.Millis(e.clk),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.LogTriggered(e.ctx, driver.LogTriggeredParams{ID: l.ID, ExecutorAddress: exec.URL + "/", TriggerCode: 200}); err != nil {
		t.Fatal(err)
	}
	lid := strconv.FormatInt(l.ID, 10)
	var res protocol.LogResult
	e.must(200, "GET", "/v1/logs/"+lid+"/executor-log?from=1", "", &res)
	if res.ToLineNum != 2 || res.LogContent != "one\ntwo" {
		t.Fatalf("executor log = %+v, want the two lines", res)
	}
	var killed xjob.Log
	e.must(200, "POST", "/v1/logs/"+lid+"/kill", "", &killed)
	if killed.HandleCode != 500 {
		t.Fatalf("killed = %+v", killed)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(seen) != "[/log app=app-35 /kill app=app-35]" {
		t.Fatalf("executor saw %v", seen)
	}
}
