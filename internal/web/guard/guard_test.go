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
	}))
	tests := []struct {
		name, method, target, ct, body string
		want                           int
	}{
		{"json", "POST", "/v1/jobs", "application/json", `{"description":"ok é"}`, 204},
		{"json NUL escape", "POST", "/v1/jobs", "application/json", `{"description":"a\u0000b"}`, 400},
		{"json escaped backslash", "POST", "/v1/jobs", "application/json", `{"description":"a\\u0000b"}`, 204},
		{"json invalid UTF-8", "POST", "/v1/jobs", "application/json", "{\"description\":\"\xff\"}", 400},
		{"form NUL", "POST", "/console/jobs", "application/x-www-form-urlencoded", "description=a%00b", 400},
		{"form invalid UTF-8", "POST", "/console/jobs", "application/x-www-form-urlencoded", "description=%ff", 400},
		{"form ok", "POST", "/console/jobs", "application/x-www-form-urlencoded", "description=%C3%A9", 204},
		{"query NUL", "GET", "/v1/jobs?q=%00", "", "", 400},
		{"query invalid UTF-8", "GET", "/console/logs?q=%fe", "", "", 400},
		{"executor route unchecked", "POST", "/api/callback", "application/json", `[{"handleMsg":"\u0000"}]`, 204},
		{"lang too big", "POST", "/console/lang", "application/x-www-form-urlencoded", "lang=" + strings.Repeat("x", Small), 413},
		{"registry too big", "POST", "/api/registry", "application/json", strings.Repeat(" ", Registry+1), 413},
		{"v1 within cap", "POST", "/v1/apply", "application/json", "{}" + strings.Repeat(" ", Small), 204},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
		if tt.ct != "" {
			r.Header.Set("Content-Type", tt.ct)
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
