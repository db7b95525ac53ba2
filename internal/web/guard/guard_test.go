package guard

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWrap(t *testing.T) {
	t.Parallel()
	var got string
	h := Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		got = string(b)
		w.WriteHeader(http.StatusNoContent)
	}), func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer ok" })
	tests := []struct {
		name, method, target, ct, body string
		want                           int
		anonymous                      bool
	}{
		{"json", "POST", "/v1/jobs", "application/json", `{"description":"ok é"}`, 204, false},
		{"json NUL escape", "POST", "/v1/jobs", "application/json", `{"description":"a\u0000b"}`, 400, false},
		{"json escaped backslash", "POST", "/v1/jobs", "application/json", `{"description":"a\\u0000b"}`, 204, false},
		{"json invalid UTF-8", "POST", "/v1/jobs", "application/json", "{\"description\":\"\xff\"}", 400, false},
		{"form NUL", "POST", "/console/jobs", "application/x-www-form-urlencoded", "description=a%00b", 400, false},
		{"form invalid UTF-8", "POST", "/console/jobs", "application/x-www-form-urlencoded", "description=%ff", 400, false},
		{"form ok", "POST", "/console/jobs", "application/x-www-form-urlencoded", "description=%C3%A9", 204, false},
		{"query NUL", "GET", "/v1/jobs?q=%00", "", "", 400, false},
		{"query invalid UTF-8", "GET", "/console/logs?q=%fe", "", "", 400, false},
		{"executor route unchecked", "POST", "/api/callback", "application/json", `[{"handleMsg":"\u0000"}]`, 204, false},
		{"lang too big", "POST", "/console/lang", "application/x-www-form-urlencoded", "lang=" + strings.Repeat("x", Small), 413, false},
		{"registry too big", "POST", "/api/registry", "application/json", strings.Repeat(" ", Registry+1), 413, false},
		{"v1 within cap", "POST", "/v1/apply", "application/json", "{}" + strings.Repeat(" ", Small), 204, false},
		// Without a credential every route gets Small, and the body is
		// left for the route (which refuses it) rather than read here.
		{"anonymous apply over Small", "POST", "/v1/apply", "application/json", "{}" + strings.Repeat(" ", Small), 413, true},
		{"anonymous apply within Small", "POST", "/v1/apply", "application/json", "{}", 204, true},
		{"anonymous console form over Small", "POST", "/console/jobs", "application/x-www-form-urlencoded",
			"a=" + strings.Repeat("x", Small), 413, true},
		{"anonymous NUL body left to the route", "POST", "/v1/jobs", "application/json", `{"description":"a\u0000b"}`, 204, true},
		{"anonymous NUL query", "GET", "/v1/jobs?q=%00", "", "", 400, true},
		{"anonymous callback keeps its cap", "POST", "/api/callback", "application/json", "[]" + strings.Repeat(" ", Small), 204, true},
		{"anonymous login", "POST", "/console/login", "application/x-www-form-urlencoded", "username=a", 204, true},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
		if tt.ct != "" {
			r.Header.Set("Content-Type", tt.ct)
		}
		if !tt.anonymous {
			r.Header.Set("Authorization", "Bearer ok")
		}
		w := httptest.NewRecorder()
		got = ""
		h.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("%s: status %d, want %d (%s)", tt.name, w.Code, tt.want, w.Body)
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", tt.name)
		}
		if tt.want == 204 && got != tt.body {
			t.Errorf("%s: the route read %q, want the body as sent", tt.name, got)
		}
	}
}

func TestLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method, path string
		want         int64
	}{
		{"POST", "/console/login", Small},
		{"POST", "/console/lang", Small},
		{"POST", "/console/jobs/1/glue", Admin},
		{"GET", "/console/jobs", Small},
		{"POST", "/api/callback", Callback},
		{"POST", "/xxl-job-admin/api/callback", Callback},
		{"POST", "/api/registry", Registry},
		{"POST", "/api/xjob/declare", Admin},
		{"PUT", "/v1/jobs/1", Admin},
		{"GET", "/healthz", Small},
		{"POST", "/nowhere", Small},
	}
	for _, tt := range tests {
		if got := Limit(tt.method, tt.path); got != tt.want {
			t.Errorf("Limit(%s %s) = %d, want %d", tt.method, tt.path, got, tt.want)
		}
	}
}

// FuzzJSONText: the NUL check agrees with encoding/json's decoding.
func FuzzJSONText(f *testing.F) {
	for _, s := range []string{`"a\u0000"`, `"\\u0000"`, `"\\\u0000"`, `"\u00000"`, `"ok"`, `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v string
		if err := jsonUnmarshal([]byte(s), &v); err != nil {
			return
		}
		err := jsonText([]byte(s))
		if (err == errNUL && !strings.ContainsRune(v, 0)) || (err == nil && strings.ContainsRune(v, 0)) {
			t.Fatalf("%q decodes to %q; jsonText says %v", s, v, err)
		}
	})
}

var jsonUnmarshal = json.Unmarshal
