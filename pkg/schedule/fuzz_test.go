package schedule

import (
	"testing"
	"time"
)

// FuzzCron parses arbitrary expressions and, for those that parse, asks
// for a few fire times: neither may panic or loop, and every fire time is
// strictly after the previous one.
func FuzzCron(f *testing.F) {
	for _, s := range []string{
		"0/10 * * * * ?", "0 0 12 ? * MON-FRI", "0 15 10 L * ?", "0 0 0 31W * ?", "0 0 0 LW * ?",
		"0 0 0 ? * 6#3", "0 0 0 ? * 5L", "* * * * * ? 2030", "0 0 2 * * ?", "0 30 1 * * ?",
		"59 59 23 29 2 ? 2028-2100/4", "1-59/7 */3 0-23 1,15 JAN-DEC ?", "", "L", "0 0 0 L-3 * ?",
	} {
		f.Add(s, "UTC", int64(1772366400000))
		f.Add(s, "Europe/Berlin", int64(1774746000000)) // a spring-forward day
	}
	f.Fuzz(func(t *testing.T, expr, tz string, from int64) {
		if len(expr) > 256 {
			return
		}
		if _, err := time.LoadLocation(tz); err != nil || tz == "Local" {
			tz = "UTC"
		}
		sched, err := Parse(TypeCron, expr, tz)
		if err != nil {
			return
		}
		at := time.UnixMilli(from % (1 << 42)) // within a few centuries
		for range 5 {
			next, ok := sched.Next(at)
			if !ok {
				return
			}
			if !next.After(at) {
				t.Fatalf("%q in %s: Next(%v) = %v, not after", expr, tz, at, next)
			}
			at = next
		}
	})
}
