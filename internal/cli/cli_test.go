package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestCronNext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"table", []string{"cron", "next", "0 0 12 * * ?", "--from", "2026-01-01T00:00:00Z", "-n", "2"}, 0,
			"2026-01-01 12:00:00 UTC\n2026-01-02 12:00:00 UTC\n", ""},
		{"zone", []string{"cron", "next", "0 30 9 ? * MON", "--tz", "Asia/Shanghai", "--from", "2026-01-01T00:00:00Z", "-n", "1"}, 0,
			"2026-01-05 09:30:00 CST\n", ""},
		{"json", []string{"cron", "next", "*/20 * * * * ?", "--from", "2026-01-01T00:00:00Z", "-n", "2", "-o", "json"}, 0,
			`{"expression":"*/20 * * * * ?","next":["2026-01-01T00:00:20Z","2026-01-01T00:00:40Z"],"timeZone":"UTC"}` + "\n", ""},
		{"parse error", []string{"cron", "next", "0 0 12 * * MON"}, 1, "", "cron:"},
		{"bad zone", []string{"cron", "next", "0 0 12 * * ?", "--tz", "Nowhere/None"}, 1, "", "time zone"},
		{"missing expression", []string{"cron", "next"}, 2, "", "one expression"},
		{"flags first, = forms", []string{"cron", "next", "--n=1", "--tz=Asia/Shanghai", "--from=2026-01-01T00:00:00Z", "0 30 9 ? * MON"}, 0,
			"2026-01-05 09:30:00 CST\n", ""},
		{"long --n", []string{"cron", "next", "0 0 12 * * ?", "--from", "2026-01-01T00:00:00Z", "--n", "1"}, 0,
			"2026-01-01 12:00:00 UTC\n", ""},
		{"-n out of range", []string{"cron", "next", "0 0 12 * * ?", "-n", "0"}, 2, "", "-n must be between 1 and 1000"},
		{"-n not a number", []string{"cron", "next", "0 0 12 * * ?", "-n", "many"}, 2, "", "invalid argument"},
		{"bad --from", []string{"cron", "next", "0 0 12 * * ?", "--from", "yesterday"}, 2, "", "--from"},
		{"two expressions", []string{"cron", "next", "0 0 12 * * ?", "0 0 1 * * ?"}, 2, "", "one expression"},
		{"bad output", []string{"cron", "next", "0 0 12 * * ?", "-o", "yaml"}, 2, "", "-o must be table or json"},
		{"unknown command", []string{"frobnicate"}, 2, "", "Usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			if code := Main(tt.args, &out, &errb); code != tt.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tt.code, errb.String())
			}
			if tt.out != "" && out.String() != tt.out {
				t.Errorf("stdout = %q, want %q", out.String(), tt.out)
			}
			if tt.err != "" && !strings.Contains(errb.String(), tt.err) {
				t.Errorf("stderr = %q, want it to mention %q", errb.String(), tt.err)
			}
		})
	}
}

func TestCheckWallTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		at, zone string
		bad      bool
	}{
		{"2026-03-29T02:30:00+01:00", "Europe/Paris", true},  // in the gap, written as Paris winter time
		{"2026-03-29T02:30:00+02:00", "Europe/Paris", true},  // in the gap, written as Paris summer time
		{"2026-03-29T03:30:00+02:00", "Europe/Paris", false}, // after the jump
		{"2026-03-29T01:30:00+01:00", "Europe/Paris", false}, // before it
		{"2026-03-29T02:30:00Z", "Europe/Paris", false},      // a UTC instant, taken as it is
		{"2026-10-25T02:30:00+01:00", "Europe/Paris", false}, // the repeated hour exists
		{"2026-03-08T02:30:00-05:00", "America/New_York", true},
	} {
		if err := checkWallTime(tc.at, tc.zone); (err != nil) != tc.bad {
			t.Errorf("checkWallTime(%s, %s) = %v, want refused %v", tc.at, tc.zone, err, tc.bad)
		}
	}
}

func TestTriggerOutcome(t *testing.T) {
	t.Parallel()
	msg := "Trigger type: CRON<br>Executor registry type: automatic<br>Executor address list: <br>Route strategy: FIRST<br>" +
		"Fail retry count: 0<br><br><span style=\"color:#00c0ef;\" > >>>>>>>>>>>Trigger<<<<<<<<<<< </span><br>" +
		"Trigger result: fail<br>address: <br>code: 500<br>msg: no executor address available"
	if got := oneLine(triggerOutcome(msg), 160); got != "Trigger result: fail address: code: 500 msg: no executor address available" {
		t.Errorf("triggerOutcome = %q", got)
	}
	if got := triggerOutcome("plain"); got != "plain" {
		t.Errorf("triggerOutcome(plain) = %q", got)
	}
}

// A CJK cell counts two columns a character, so the columns after it line up.
func TestTableAlignsWideText(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	tw := newTable(&b)
	row(tw, "ID", "DESC", "STATE")
	row(tw, "1", "每日报表", "running")
	row(tw, "22", "nightly", "stopped")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "ID  DESC      STATE\n1   每日报表  running\n22  nightly   stopped\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}
