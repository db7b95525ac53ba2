package executor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/xjobdev/xjob/pkg/protocol"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func TestLogPaging(t *testing.T) {
	t.Parallel()
	s := &logStore{dir: t.TempDir(), loc: time.UTC}
	at := t0.UnixMilli()
	rl := s.open(at, 1)
	rl.append("a\nb\r\nc")
	tests := []struct {
		from    int
		to      int
		content string
	}{
		{1, 3, "a\nb\nc\n"},
		{0, 3, "a\nb\nc\n"},
		{2, 3, "b\nc\n"},
		{3, 3, "c\n"},
		{4, 3, ""},
	}
	for _, tt := range tests {
		got, err := s.read(protocol.LogParam{LogDateTim: at, LogID: 1, FromLineNum: tt.from})
		if err != nil {
			t.Fatal(err)
		}
		want := protocol.LogResult{FromLineNum: tt.from, ToLineNum: tt.to, LogContent: tt.content}
		if got != want {
			t.Errorf("from %d: got %+v, want %+v", tt.from, got, want)
		}
	}
	// An empty file has no lines but is not "missing".
	s.open(at, 2).append("")
	got, _ := s.read(protocol.LogParam{LogDateTim: at, LogID: 2, FromLineNum: 1})
	if got != (protocol.LogResult{FromLineNum: 1}) {
		t.Errorf("empty file: %+v", got)
	}
}

func TestLogPathUsesLocation(t *testing.T) {
	t.Parallel()
	tokyo := time.FixedZone("JST", 9*3600)
	s := &logStore{dir: "/logs", loc: tokyo}
	// 2024-03-01 20:00 UTC is 2024-03-02 05:00 in Tokyo.
	at := time.Date(2024, 3, 1, 20, 0, 0, 0, time.UTC).UnixMilli()
	if got, want := s.path(at, 7), filepath.Join("/logs", "2024-03-02", "7.log"); got != want {
		t.Fatalf("path %s, want %s", got, want)
	}
}

func TestLogCleanup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"2024-02-25", "2024-02-26", "2024-02-27", "2024-02-28", "2024-03-01", "callbacklog", "notes"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := &logStore{dir: dir, loc: time.UTC}
	n, err := s.clean(t0, 3) // today 2024-03-01: folders of 2024-02-27 and older go
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	sort.Strings(left)
	want := []string{"2024-02-28", "2024-03-01", "callbacklog", "notes"}
	if n != 3 || len(left) != len(want) {
		t.Fatalf("removed %d, left %v, want %v", n, left, want)
	}
	for i := range want {
		if left[i] != want[i] {
			t.Fatalf("left %v, want %v", left, want)
		}
	}
}

func TestLogCleanupLoopRunsDaily(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.LogRetentionDays = 3 })
	old := filepath.Join(f.e.cfg.LogDir, "2024-02-27")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(f.e.cfg.LogDir, "2024-02-28")
	if err := os.MkdirAll(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	f.start(t)
	eventually(t, "first cleanup", func() bool { _, err := os.Stat(old); return os.IsNotExist(err) })
	ctx := t.Context()
	if err := f.clk.WaitForSleepers(ctx, 2); err != nil { // retry + cleanup
		t.Fatal(err)
	}
	f.clk.Advance(24 * time.Hour)
	eventually(t, "next day's cleanup", func() bool { _, err := os.Stat(keep); return os.IsNotExist(err) })
}
