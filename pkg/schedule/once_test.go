package schedule

import (
	"testing"
	"time"
)

func TestParseOnce(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 8, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		conf string
		want time.Time
		ok   bool
	}{
		{"2026-11-24T08:30:00Z", at, true},
		{" 2026-11-24T09:30:00+01:00 ", at, true},
		{"2026-11-24T08:30:00.000Z", at, true},
		{"2026-11-24T08:30:00.250Z", time.Time{}, false},
		{"2026-11-24T08:30:00", time.Time{}, false}, // no zone
		{"2026-11-24 08:30:00Z", time.Time{}, false},
		{"tomorrow", time.Time{}, false},
		{"", time.Time{}, false},
		{"2300-01-01T00:00:00Z", time.Time{}, false},
	} {
		o, err := ParseOnce(tc.conf)
		if (err == nil) != tc.ok {
			t.Errorf("ParseOnce(%q) err = %v, want ok %v", tc.conf, err, tc.ok)
			continue
		}
		if tc.ok && !o.At.Equal(tc.want) {
			t.Errorf("ParseOnce(%q) = %v, want %v", tc.conf, o.At, tc.want)
		}
	}
}

func TestOnceNext(t *testing.T) {
	t.Parallel()
	s, err := Parse(TypeOnce, "2026-11-24T08:30:00Z", "Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 24, 8, 30, 0, 0, time.UTC)
	if got, ok := s.Next(at.Add(-time.Millisecond)); !ok || !got.Equal(at) {
		t.Errorf("Next(just before) = %v %v, want %v", got, ok, at)
	}
	if _, ok := s.Next(at); ok {
		t.Error("Next(at) fired again: a ONCE schedule fires strictly after its argument, once")
	}
	times, err := Preview(s, at.Add(-time.Hour), 5)
	if err != nil || len(times) != 1 {
		t.Errorf("Preview = %v %v, want exactly one fire", times, err)
	}
}

func FuzzParseOnce(f *testing.F) {
	for _, s := range []string{"2026-11-24T08:30:00Z", "2026-11-24T09:30:00+01:00", "x", "9999-99-99T99:99:99Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, conf string) {
		o, err := ParseOnce(conf)
		if err != nil {
			return
		}
		if o.At.Nanosecond() != 0 {
			t.Fatalf("ParseOnce(%q) accepted a fraction of a second: %v", conf, o.At)
		}
		if next, ok := o.Next(o.At.Add(-time.Millisecond)); !ok || !next.Equal(o.At) {
			t.Fatalf("ParseOnce(%q): Next just before the instant = %v %v", conf, next, ok)
		}
	})
}
