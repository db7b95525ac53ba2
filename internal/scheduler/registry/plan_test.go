package registry

import (
	"errors"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
)

func TestRetentionCutoff(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 31, 17, 45, 0, 0, time.UTC)
	tests := []struct {
		name   string
		now    time.Time
		days   int
		want   time.Time
		wantOK bool
	}{
		{"default 30 days", now, 30, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), true},
		{"floor 7 days", now, 7, time.Date(2026, 3, 24, 0, 0, 0, 0, time.UTC), true},
		{"6 disables", now, 6, time.Time{}, false},
		{"0 disables", now, 0, time.Time{}, false},
		{"negative disables", now, -1, time.Time{}, false},
		{"crosses a year", time.Date(2026, 1, 3, 0, 0, 1, 0, time.UTC), 7, time.Date(2025, 12, 27, 0, 0, 0, 0, time.UTC), true},
		{"non-UTC now uses the UTC day", time.Date(2026, 4, 1, 1, 0, 0, 0, time.FixedZone("CEST", 2*3600)), 7,
			time.Date(2026, 3, 24, 0, 0, 0, 0, time.UTC), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := RetentionCutoff(tt.now, tt.days)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if ok && got != tt.want.UnixMilli() {
				t.Fatalf("cutoff %v, want %v", time.UnixMilli(got).UTC(), tt.want)
			}
		})
	}
}

func TestLost(t *testing.T) {
	t.Parallel()
	live := map[string]bool{"http://a:9999/": true}
	logs := []xjob.Log{
		{ID: 1, TriggerCode: 200, ExecutorAddress: "http://a:9999/"},                  // executor alive
		{ID: 2, TriggerCode: 200, ExecutorAddress: "http://b:9999/"},                  // executor gone
		{ID: 3, TriggerCode: 200, ExecutorAddress: "http://b:9999/", HandleCode: 200}, // already handled
		{ID: 4, TriggerCode: 500, ExecutorAddress: "http://b:9999/"},                  // never ran
		{ID: 5, TriggerCode: 200, ExecutorAddress: ""},                                // no address recorded
	}
	got := Lost(logs, live)
	var ids []int64
	for _, l := range got {
		ids = append(ids, l.ID)
	}
	if len(ids) != 2 || ids[0] != 2 || ids[1] != 5 {
		t.Fatalf("lost = %v, want [2 5]", ids)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err == nil {
		t.Fatal("missing store accepted")
	}
	c := Config{DeadAfter: -time.Second}
	if err := c.Validate(); err == nil {
		t.Fatal("negative DeadAfter accepted")
	}
}

func TestIllegalArgumentWording(t *testing.T) {
	t.Parallel()
	if ErrIllegalArgument.Error() != "Illegal Argument." {
		t.Fatalf("wording %q", ErrIllegalArgument)
	}
	s := &Service{}
	_, err := s.entry(registryParam("EXECUTOR", "", "http://a/"))
	var ve *xjob.ValidationError
	if !errors.Is(err, ErrIllegalArgument) || !errors.As(err, &ve) || ve.Problems[0].Field != "registryKey" {
		t.Fatalf("err = %v", err)
	}
}
