package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/xjobdev/xjob/pkg/clock"
)

// TestTerminalEscapesNeutralised: names, messages and executor log text
// from the server reach the terminal with their control characters
// escaped, in tables, detail views, log text and error messages; -o json
// stays valid JSON with the same values.
func TestTerminalEscapesNeutralised(t *testing.T) {
	t.Parallel()
	const evil = "x\x1b]0;pwned\x07\x1b[2J\u009b31m\u202eevil\r" // OSC title, clear screen, C1 CSI, bidi override, CR
	evilJSON, _ := json.Marshal(evil)
	job := strings.Replace(jobJSON, `"demo cron"`, string(evilJSON), 1)
	logBody := strings.Replace(logJSON, `"boom:\nstack"`, string(evilJSON), 1)
	d := newAPIDouble(t, map[string][]reply{
		"GET /v1/jobs":                        {{200, `{"items":[` + job + `],"next":""}`}},
		"GET /v1/jobs/7":                      {{200, job}},
		"GET /v1/logs/11":                     {{200, logBody}},
		"GET /v1/logs/11/executor-log?from=1": {{200, `{"fromLineNum":1,"toLineNum":2,"logContent":` + string(evilJSON) + `,"isEnd":true}`}},
		"DELETE /v1/jobs/9":                   {{404, `{"error":` + string(evilJSON) + `}`}},
	})
	for _, args := range [][]string{
		{"job", "list"}, {"job", "get", "7"}, {"log", "get", "11"}, {"log", "tail", "11"}, {"job", "delete", "9"},
		{"job", "list", "-o", "json"}, {"job", "get", "7", "-o", "json"},
	} {
		r := runCLI(context.Background(), d.srv.URL, "", clock.NewFake(t0), args...)
		all := r.out + r.errOut
		if strings.ContainsAny(all, "\x1b\x07\r\u009b\u202e") {
			t.Errorf("%v: raw control characters reach the terminal: %q", args, all)
		}
		if !strings.Contains(all, `\u001b]0;pwned\u0007`) && !strings.Contains(all, "pwned") {
			t.Errorf("%v: the escaped text is missing: %q", args, all)
		}
		if args[len(args)-1] == "json" {
			var v any
			if err := json.Unmarshal([]byte(r.out), &v); err != nil {
				t.Errorf("%v: not JSON any more: %v\n%s", args, err, r.out)
			}
			if !strings.Contains(r.out, `\u001b]0;pwned\u0007`) || !strings.Contains(r.out, `\u009b31m\u202eevil`) {
				t.Errorf("%v: json lost the value: %s", args, r.out)
			}
		}
	}
}

// TestSafeWriterSplitWrites: a multi-byte character or a CRLF split across
// writes is still recognised.
func TestSafeWriterSplitWrites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		chunks []string
		want   string
	}{
		{[]string{"a\xc2", "\x9bb"}, `a\u009bb`},
		{[]string{"é", "\xe2\x80", "\xaez"}, `é\u202ez`},
		{[]string{"line\r", "\nnext"}, "line\nnext"},
		{[]string{"end\r"}, `end\u000d`},
		{[]string{"bad\xff\xfe"}, `bad\xff\xfe`},
		{[]string{"cut\xe2\x80"}, `cut\xe2\x80`},
		{[]string{"tab\tok\n"}, "tab\tok\n"},
		{[]string{"del\x7f"}, `del\u007f`},
	} {
		var b bytes.Buffer
		w := newSafeWriter(&b)
		for _, c := range tc.chunks {
			if n, err := w.Write([]byte(c)); err != nil || n != len(c) {
				t.Fatalf("%q: write %d, %v", tc.chunks, n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%q: got %q, want %q", tc.chunks, b.String(), tc.want)
		}
	}
}
