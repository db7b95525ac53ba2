package schedule

import (
	"strconv"
	"testing"
	"time"
)

func TestFixDelayNextIsAfterTheRunEnds(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 11, 28, 17, 0, 0, 123e6, time.UTC)
	tests := []struct {
		conf string
		want time.Duration
	}{
		{"1", time.Second},
		{"90", 90 * time.Second},
		{" 3600\n", time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.conf, func(t *testing.T) {
			t.Parallel()
			d, err := ParseFixDelay(tt.conf)
			if err != nil {
				t.Fatalf("ParseFixDelay(%q): %v", tt.conf, err)
			}
			// Not aligned to any grid or second: the run's end plus the delay.
			if next, ok := d.Next(end); !ok || !next.Equal(end.Add(tt.want)) {
				t.Fatalf("Next(%v) = %v %v, want %v", end, next, ok, end.Add(tt.want))
			}
		})
	}
}

// FuzzParseFixDelay checks that FIX_DELAY accepts exactly what FIX_RATE
// accepts, with the same duration, that the parsed delay prints back to
// a conf that parses to the same delay, and that Next is end + delay.
func FuzzParseFixDelay(f *testing.F) {
	for _, s := range []string{"1", "60", " 3600 ", "0", "-1", "1.5", "315360000", "315360001", "1e3", "+7", "0x10", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, conf string) {
		d, err := ParseFixDelay(conf)
		r, rerr := ParseFixRate(conf)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("%q: FIX_DELAY error %v, FIX_RATE error %v: the bounds differ", conf, err, rerr)
		}
		if err != nil {
			return
		}
		if d.Delay != r.Interval || d.Delay < time.Second || d.Delay%time.Second != 0 {
			t.Fatalf("%q: delay %v, FIX_RATE interval %v", conf, d.Delay, r.Interval)
		}
		again, err := ParseFixDelay(strconv.FormatInt(int64(d.Delay/time.Second), 10))
		if err != nil || again != d {
			t.Fatalf("%q: round trip gave %v, %v", conf, again, err)
		}
		end := time.UnixMilli(1_795_000_000_123)
		if next, ok := d.Next(end); !ok || next.Sub(end) != d.Delay {
			t.Fatalf("%q: Next(%v) = %v %v", conf, end, next, ok)
		}
	})
}
