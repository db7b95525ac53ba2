package target

import (
	"errors"
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
)

func TestParseRefusesBadSpecs(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", MaxBodyLen+1)
	tests := []struct {
		name, src, field, msg string
	}{
		{"empty", ``, "url", "is required"},
		{"not json", `{"url":`, "", "not a target spec"},
		{"unknown key", `{"url":"http://a","verb":"GET"}`, "", "not a target spec"},
		{"repeated key", `{"url":"http://a","url":"http://b"}`, "", "not a target spec"},
		{"no url", `{"method":"POST"}`, "url", "is required"},
		{"ftp", `{"url":"ftp://host/x"}`, "url", "http:// or https://"},
		{"no scheme", `{"url":"host/x"}`, "url", "http:// or https://"},
		{"no host", `{"url":"http:///x"}`, "url", "has no host"},
		{"credentials", `{"url":"https://u:p@host/x"}`, "url", "credentials"},
		{"fragment", `{"url":"https://host/x#y"}`, "url", "fragment"},
		{"space", `{"url":"https://host/a b"}`, "url", ""},
		{"placeholder in host", `{"url":"https://{{param}}.example.com/"}`, "url", "not in the host"},
		{"placeholder in port", `{"url":"https://h:{{shardIndex}}/"}`, "url", "not in the host"},
		{"unknown placeholder", `{"url":"https://h/{{secret}}"}`, "url", "unknown placeholder"},
		{"unclosed placeholder", `{"url":"https://h/{{param"}`, "url", "never closed"},
		{"bad encoder", `{"url":"https://h/{{param|base64}}"}`, "url", "unknown encoder"},
		{"bad method", `{"url":"https://h/","method":"TRACE"}`, "method", "must be one of"},
		{"lower method", `{"url":"https://h/","method":"post"}`, "method", "must be one of"},
		{"body on GET", `{"url":"https://h/","body":"x"}`, "body", "sends no body"},
		{"body too long", `{"url":"https://h/","method":"POST","body":"` + long + `"}`, "body", "at most"},
		{"body template", `{"url":"https://h/","method":"POST","body":"{{nope}}"}`, "body", "unknown placeholder"},
		{"header name", `{"url":"https://h/","headers":{"X Bad":"v"}}`, "headers.X Bad", "not a header name"},
		{"header CRLF", `{"url":"https://h/","headers":{"X-A":"v\r\nEvil: 1"}}`, "headers.X-A", "line breaks"},
		{"reserved header", `{"url":"https://h/","headers":{"Host":"evil"}}`, "headers.Host", "set by the HTTP client"},
		{"header twice", `{"url":"https://h/","headers":{"X-A":"1"},"secretHeaders":{"x-a":"2"}}`, "secretHeaders.x-a", "also given"},
		{"empty secret", `{"url":"https://h/","secretHeaders":{"Authorization":""}}`, "secretHeaders.Authorization", "is empty"},
		{"bad ref", `{"url":"https://h/","secretHeaders":{"Authorization":"ref:zz"}}`, "secretHeaders.Authorization", "not a secret reference"},
		{"codes word", `{"url":"https://h/","successCodes":"ok"}`, "successCodes", "not a status code"},
		{"codes range", `{"url":"https://h/","successCodes":"299-200"}`, "successCodes", "low to high"},
		{"codes out", `{"url":"https://h/","successCodes":"99"}`, "successCodes", "100 to 599"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tc.src)
			var p Problems
			if !errors.As(err, &p) || len(p) == 0 {
				t.Fatalf("Parse = %v, want problems", err)
			}
			if tc.field != "" && p[0].Field != tc.field {
				t.Fatalf("field = %q, want %q (%v)", p[0].Field, tc.field, err)
			}
			if !strings.Contains(p[0].Message, tc.msg) {
				t.Fatalf("message = %q, want it to contain %q", p[0].Message, tc.msg)
			}
		})
	}
}

func TestParseAcceptsAndCanonicalizes(t *testing.T) {
	t.Parallel()
	src := `{ "url": "https://hooks.example.com/run/{{jobId}}?log={{logId}}&p={{param}}",
		"method": "POST", "successCodes": "200-299, 304",
		"headers": {"Content-Type": "application/json", "X-Shard": "{{shardIndex}}/{{shardTotal}}"},
		"body": "{\"param\": {{param|json}}, \"at\": \"{{scheduleTime}}\"}" }`
	s, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(s.Canonical())
	if err != nil || again.Canonical() != s.Canonical() {
		t.Fatalf("canonical form does not round-trip: %v\n%s\n%s", err, s.Canonical(), again.Canonical())
	}
	req, err := s.Render(Vars{JobID: 7, LogID: 42, Param: "a b&c\"", ShardIndex: 0, ShardTotal: 1,
		ScheduleTime: 1767225600000, TriggerTime: 1767225600250}, map[string]string{"Authorization": "Bearer t"})
	if err != nil {
		t.Fatal(err)
	}
	want := Request{Method: "POST", URL: "https://hooks.example.com/run/7?log=42&p=a+b%26c%22",
		Header: map[string]string{"Content-Type": "application/json", "X-Shard": "0/1", "Authorization": "Bearer t"},
		Body:   `{"param": "a b&c\"", "at": "2026-01-01T00:00:00.000Z"}`}
	if req.Method != want.Method || req.URL != want.URL || req.Body != want.Body || len(req.Header) != len(want.Header) {
		t.Fatalf("Render = %+v\nwant %+v", req, want)
	}
	for k, v := range want.Header {
		if req.Header[k] != v {
			t.Fatalf("header %s = %q, want %q", k, req.Header[k], v)
		}
	}
}

func TestRenderRefusesLineBreakInHeader(t *testing.T) {
	t.Parallel()
	s, err := Parse(`{"url":"https://h/","headers":{"X-P":"{{param}}"}}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Render(Vars{Param: "a\r\nHost: evil"}, nil); err == nil || !strings.Contains(err.Error(), "line break") {
		t.Fatalf("Render = %v, want a line-break refusal", err)
	}
}

func TestCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec string
		in   []int
		out  []int
	}{
		{"", []int{200, 204, 299}, []int{199, 300, 404, 500}},
		{"200,202", []int{200, 202}, []int{201, 204}},
		{"200-204, 304", []int{200, 204, 304}, []int{205, 303, 500}},
	}
	for _, tc := range tests {
		c, err := ParseCodes(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, code := range tc.in {
			if !c.Has(code) {
				t.Errorf("%q: %d should succeed", tc.spec, code)
			}
		}
		for _, code := range tc.out {
			if c.Has(code) {
				t.Errorf("%q: %d should fail", tc.spec, code)
			}
		}
	}
}

func TestTemplateBoundsPlaceholders(t *testing.T) {
	t.Parallel()
	if _, err := ParseTemplate(strings.Repeat("{{param}}", maxPlaceholders)); err != nil {
		t.Fatalf("%d placeholders refused: %v", maxPlaceholders, err)
	}
	if _, err := ParseTemplate(strings.Repeat("{{param}}", maxPlaceholders+1)); err == nil {
		t.Fatal("too many placeholders accepted")
	}
}

func TestTimeoutSeconds(t *testing.T) {
	t.Parallel()
	if MaxTimeoutSeconds != xjob.MaxTargetTimeoutSeconds {
		t.Fatalf("MaxTimeoutSeconds %d, the domain's bound %d", MaxTimeoutSeconds, xjob.MaxTargetTimeoutSeconds)
	}
	for in, want := range map[int]int{0: DefaultTimeoutSeconds, -1: DefaultTimeoutSeconds, 5: 5, 10000: MaxTimeoutSeconds} {
		if got := TimeoutSeconds(in); got != want {
			t.Errorf("TimeoutSeconds(%d) = %d, want %d", in, got, want)
		}
	}
}
