package execclient_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// javaExecutor answers as xxl-job-core's EmbedServer of one generation
// does: "3.4" serves /run and ignores the appname header; "3.5" (master)
// serves /trigger, answers /run with "uri-mapping(/run) not found",
// requires XXL-JOB-ACCESS-TOKEN and XXL-JOB-APPNAME equal to its own, reads
// logDateTime from /log and replies with data instead of content.
type javaExecutor struct {
	srv     *httptest.Server
	version string
	appName string
	token   string

	mu    sync.Mutex
	paths []string
	logs  []map[string]any
}

func newJavaExecutor(t *testing.T, version, appName, token string) *javaExecutor {
	t.Helper()
	e := &javaExecutor{version: version, appName: appName, token: token}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *javaExecutor) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	e.paths = append(e.paths, r.URL.Path)
	e.mu.Unlock()
	w.Header().Set("Content-Type", "text/html;charset=UTF-8")
	reply := func(code int, msg string, payload any) {
		out := map[string]any{"code": code}
		if msg != "" {
			out["msg"] = msg
		}
		if payload != nil {
			if e.version == "3.5" {
				out["data"] = payload
			} else {
				out["content"] = payload
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	}
	run := "/run"
	if e.version == "3.5" {
		run = "/trigger"
		tok, app := r.Header.Get(protocol.AccessTokenHeader), r.Header.Get(protocol.AppNameHeader)
		switch {
		case tok == "" || app == "":
			reply(500, "invalid request, accessToken or appname is empty.", nil)
			return
		case tok != e.token || app != e.appName:
			reply(500, "invalid request, accessToken or appname invalid.", nil)
			return
		}
	}
	switch r.URL.Path {
	case run:
		reply(200, "", nil)
	case "/log":
		var p map[string]any
		_ = json.Unmarshal(body, &p)
		e.mu.Lock()
		e.logs = append(e.logs, p)
		e.mu.Unlock()
		date := p["logDateTim"]
		if e.version == "3.5" {
			date = p["logDateTime"]
		}
		if date == nil || date == float64(0) {
			// The file is looked for under 1970-01-01/.
			reply(200, "", map[string]any{"fromLineNum": 1, "toLineNum": 0, "logContent": protocol.MsgLogFileNotExists, "isEnd": true})
			return
		}
		reply(200, "", map[string]any{"fromLineNum": 1, "toLineNum": 2, "logContent": "a\nb", "isEnd": true})
	default:
		reply(500, "invalid request, uri-mapping("+r.URL.Path+") not found.", nil)
	}
}

func (e *javaExecutor) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.paths...)
}

// TestGenerations drives one client against executors of each generation
// at the wire level: triggers reach /run or /trigger (the second trigger
// of a 3.5 executor goes straight to /trigger), the appname header goes
// with every call, and /log reads the file on both.
func TestGenerations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version   string
		wantPaths []string // of two triggers
	}{
		{"3.4", []string{"/run", "/run"}},
		{"3.5", []string{"/run", "/trigger", "/trigger"}},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			t.Parallel()
			e := newJavaExecutor(t, tt.version, "sample-app", "default_token")
			c := newClient(t, execclient.Options{AccessToken: "default_token"})
			ctx := protocol.WithAppName(context.Background(), "sample-app")
			for i := range 2 {
				if r := c.Run(ctx, e.srv.URL+"/", protocol.TriggerParam{JobID: 1, LogID: int64(10 + i)}); r.Code != 200 {
					t.Fatalf("trigger %d: %d %s", i, r.Code, r.Msg)
				}
			}
			if got := strings.Join(e.seen(), " "); got != strings.Join(tt.wantPaths, " ") {
				t.Fatalf("paths = %s, want %s", got, strings.Join(tt.wantPaths, " "))
			}
			lr, r := c.Log(ctx, e.srv.URL, protocol.LogParam{LogDateTim: 1700000000123, LogID: 10, FromLineNum: 1})
			if r.Code != 200 || lr.ToLineNum != 2 || lr.LogContent != "a\nb" {
				t.Fatalf("log = %+v, %+v; want two lines", lr, r)
			}
			if r := c.Kill(ctx, e.srv.URL, 1); r.Code == 200 {
				t.Fatal("kill: the scripted executor has no /kill, want its refusal")
			}
		})
	}
}

// TestGenerationsRefusals: a 3.5 executor without the appname refuses
// (nothing to fall back to), a path neither generation serves reports the
// first refusal, and an address that goes back to an older executor is
// triggered at /run again.
func TestGenerationsRefusals(t *testing.T) {
	t.Parallel()
	e35 := newJavaExecutor(t, "3.5", "sample-app", "default_token")
	c := newClient(t, execclient.Options{AccessToken: "default_token"})
	r := c.Run(context.Background(), e35.srv.URL, protocol.TriggerParam{JobID: 1, LogID: 1})
	if r.Code != 500 || !strings.Contains(r.Msg, "accessToken or appname is empty") {
		t.Fatalf("no appname: %+v, want the 3.5 refusal", r)
	}

	// One address, first a 3.5 executor, then a 3.4 one (a redeploy).
	var mu sync.Mutex
	current := "3.5"
	e34 := newJavaExecutor(t, "3.4", "sample-app", "default_token")
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		v := current
		mu.Unlock()
		if v == "3.5" {
			e35.serve(w, r)
		} else {
			e34.serve(w, r)
		}
	}))
	t.Cleanup(front.Close)
	ctx := protocol.WithAppName(context.Background(), "sample-app")
	if r := c.Run(ctx, front.URL, protocol.TriggerParam{JobID: 1, LogID: 2}); r.Code != 200 {
		t.Fatalf("3.5 behind the address: %+v", r)
	}
	mu.Lock()
	current = "3.4"
	mu.Unlock()
	if r := c.Run(ctx, front.URL, protocol.TriggerParam{JobID: 1, LogID: 3}); r.Code != 200 {
		t.Fatalf("3.4 behind the address: %+v", r)
	}
	if got := strings.Join(e34.seen(), " "); got != "/trigger /run" {
		t.Fatalf("3.4 executor saw %s, want /trigger then /run", got)
	}

	// HTTP 404 on both paths: the first refusal is reported.
	nf := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(nf.Close)
	if r := c.Run(ctx, nf.URL, protocol.TriggerParam{JobID: 1, LogID: 4}); r.Code != 500 || !strings.Contains(r.Msg, "/run") {
		t.Fatalf("404 everywhere: %+v, want the /run failure", r)
	}
}
