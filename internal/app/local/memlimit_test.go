package local

import (
	"io"
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestParseMemoryLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "off", want: 0},
		{in: "0", want: 0},
		{in: " 96MiB ", want: 96 << 20},
		{in: "1GiB", want: 1 << 30},
		{in: "2TiB", want: 2 << 40},
		{in: "512KiB", want: 512 << 10},
		{in: "123456789B", want: 123456789},
		{in: "123456789", want: 123456789},
		{in: "1024TiB", want: 1 << 50},
		{in: "1025TiB", bad: true},
		{in: "9223372036854775807", bad: true},
		{in: "", bad: true},
		{in: "MiB", bad: true},
		{in: "-1", bad: true},
		{in: "+5MiB", bad: true},
		{in: "1.5GiB", bad: true},
		{in: "10MB", bad: true},
		{in: "10 mib", bad: true},
		{in: "0x10MiB", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := parseMemoryLimit(tt.in)
			if tt.bad {
				if err == nil {
					t.Fatalf("parseMemoryLimit(%q) = %d, want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseMemoryLimit(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

// The limit comes from the flag, else XJOB_MEMORY_LIMIT, else an
// operator's GOMEMLIMIT (left to the runtime: xjob sets none), else the
// mode's default; a limit too small to run in is refused with its flag
// named.
func TestMemoryLimitPrecedence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		server  bool
		args    []string
		env     map[string]string
		want    int64
		wantErr string
	}{
		{name: "local default: none", want: 0},
		{name: "server default", server: true, want: 0},
		{name: "GOMEMLIMIT is left to the runtime", env: map[string]string{"GOMEMLIMIT": "1GiB"}, want: 0},
		{name: "variable wins over GOMEMLIMIT", env: map[string]string{"GOMEMLIMIT": "1GiB", "XJOB_MEMORY_LIMIT": "200MiB"}, want: 200 << 20},
		{name: "flag wins", args: []string{"--memory-limit", "64MiB"}, env: map[string]string{"GOMEMLIMIT": "1GiB", "XJOB_MEMORY_LIMIT": "200MiB"}, want: 64 << 20},
		{name: "server takes the variable", server: true, env: map[string]string{"XJOB_MEMORY_LIMIT": "512MiB"}, want: 512 << 20},
		{name: "too small", args: []string{"--memory-limit", "16MiB"}, wantErr: "--memory-limit (XJOB_MEMORY_LIMIT): must be off or at least 32MiB"},
		{name: "not a size", env: map[string]string{"XJOB_MEMORY_LIMIT": "lots"}, wantErr: `XJOB_MEMORY_LIMIT: "lots" is not a size`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			getenv := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			parse := Parse
			args := tt.args
			if tt.server {
				parse = ParseServer
				args = append([]string{"--db", "postgres://u:p@db.example:5432/x",
					"--admin-token", "admin-token-0123456789", "--access-token", "access-token-0123456789"}, args...)
			}
			c, err := parse(args, getenv, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.MemoryLimit != tt.want {
				t.Errorf("MemoryLimit = %d, want %d", c.MemoryLimit, tt.want)
			}
		})
	}
}

// applyMemoryLimit sets the runtime's limit, and 0 leaves whatever the
// runtime has (GOMEMLIMIT's). Not parallel: the limit is the process's.
func TestApplyMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	if got := applyMemoryLimit(1 << 30); got != 1<<30 {
		t.Fatalf("after applyMemoryLimit(1GiB) the limit is %d", got)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := applyMemoryLimit(0); got != math.MaxInt64 {
		t.Fatalf("applyMemoryLimit(0) changed the limit to %d", got)
	}
}

func TestFormatMemoryLimit(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "off", 96 << 20: "96MiB", 1 << 30: "1GiB", 1536 << 20: "1536MiB", 1000: "1000B", 3 << 40: "3TiB"} {
		if got := formatMemoryLimit(n); got != want {
			t.Errorf("formatMemoryLimit(%d) = %q, want %q", n, got, want)
		}
	}
}

// A memory limit that parses writes back to the same value.
func FuzzParseMemoryLimit(f *testing.F) {
	for _, s := range []string{"off", "0", "96MiB", "1GiB", "12B", "1024TiB", "-1", "1.5GiB", " 7 KiB "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseMemoryLimit(s)
		if err != nil {
			return
		}
		if n < 0 || n > maxMemoryLimit {
			t.Fatalf("parseMemoryLimit(%q) = %d, out of range", s, n)
		}
		back, err := parseMemoryLimit(formatMemoryLimit(n))
		if err != nil || back != n {
			t.Fatalf("%q → %d → %q → %d, %v", s, n, formatMemoryLimit(n), back, err)
		}
	})
}
