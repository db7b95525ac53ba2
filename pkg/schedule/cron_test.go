package schedule

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return v
}

// TestCronNextGolden checks successive fire times worked out by hand from
// Quartz semantics. want lists the fires in order; an empty want means no
// fire at all after from.
func TestCronNextGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		expr string
		tz   string
		from string
		want []string
	}{
		// steps and ranges
		{"every 5 minutes", "0 */5 * * * ?", "UTC", "2024-01-01T00:02:03Z",
			[]string{"2024-01-01T00:05:00Z", "2024-01-01T00:10:00Z"}},
		{"every 5 seconds", "*/5 * * * * ?", "UTC", "2024-01-01T00:00:00Z",
			[]string{"2024-01-01T00:00:05Z", "2024-01-01T00:00:10Z"}},
		{"0/15 and 10-40/10", "0/15 10-40/10 * * * ?", "UTC", "2024-01-01T00:10:50Z",
			[]string{"2024-01-01T00:20:00Z", "2024-01-01T00:20:15Z", "2024-01-01T00:20:30Z", "2024-01-01T00:20:45Z", "2024-01-01T00:30:00Z"}},
		{"a/n runs to the field end", "5/20 0 0 * * ?", "UTC", "2024-01-01T00:00:00Z",
			[]string{"2024-01-01T00:00:05Z", "2024-01-01T00:00:25Z", "2024-01-01T00:00:45Z", "2024-01-02T00:00:05Z"}},
		{"hour range wraps midnight", "0 0 22-2 * * ?", "UTC", "2024-01-01T03:00:00Z",
			[]string{"2024-01-01T22:00:00Z", "2024-01-01T23:00:00Z", "2024-01-02T00:00:00Z", "2024-01-02T01:00:00Z", "2024-01-02T02:00:00Z", "2024-01-02T22:00:00Z"}},
		{"strictly after a fire time", "0 0 0 1 * ?", "UTC", "2024-01-01T00:00:00Z",
			[]string{"2024-02-01T00:00:00Z"}},
		{"fractional start rounds up to the next second", "* * * * * ?", "UTC", "2024-01-01T00:00:00.5Z",
			[]string{"2024-01-01T00:00:01Z", "2024-01-01T00:00:02Z"}},
		{"year end", "59 59 23 31 12 ? *", "UTC", "2024-12-31T23:59:58Z",
			[]string{"2024-12-31T23:59:59Z", "2025-12-31T23:59:59Z"}},

		// day of month
		{"31st skips short months", "0 0 0 31 * ?", "UTC", "2024-04-01T00:00:00Z",
			[]string{"2024-05-31T00:00:00Z", "2024-07-31T00:00:00Z", "2024-08-31T00:00:00Z", "2024-10-31T00:00:00Z"}},
		{"list with 31", "0 0 0 1,15,31 * ?", "UTC", "2024-04-10T00:00:00Z",
			[]string{"2024-04-15T00:00:00Z", "2024-05-01T00:00:00Z", "2024-05-15T00:00:00Z", "2024-05-31T00:00:00Z"}},
		{"Feb 29 only in leap years", "0 0 0 29 2 ?", "UTC", "2024-03-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"Feb 31 never fires", "0 0 0 31 2 ?", "UTC", "2024-01-01T00:00:00Z", nil},
		{"L last day", "0 0 0 L * ?", "UTC", "2024-02-10T00:00:00Z",
			[]string{"2024-02-29T00:00:00Z", "2024-03-31T00:00:00Z", "2024-04-30T00:00:00Z"}},
		{"L in a common year", "0 0 0 L 2 ?", "UTC", "2023-02-01T00:00:00Z",
			[]string{"2023-02-28T00:00:00Z", "2024-02-29T00:00:00Z"}},
		{"L-2", "0 0 0 L-2 * ?", "UTC", "2024-02-10T00:00:00Z",
			[]string{"2024-02-27T00:00:00Z", "2024-03-29T00:00:00Z", "2024-04-28T00:00:00Z"}},
		{"L-30 only in 31-day months", "0 0 0 L-30 * ?", "UTC", "2024-01-02T00:00:00Z",
			[]string{"2024-03-01T00:00:00Z", "2024-05-01T00:00:00Z"}},
		{"LW", "0 0 0 LW * ?", "UTC", "2024-08-01T00:00:00Z",
			[]string{"2024-08-30T00:00:00Z", "2024-09-30T00:00:00Z", "2024-10-31T00:00:00Z", "2024-11-29T00:00:00Z"}},
		{"LW when the last day is a Sunday", "0 0 0 LW * ?", "UTC", "2024-03-01T00:00:00Z",
			[]string{"2024-03-29T00:00:00Z"}},
		{"L-1W", "0 0 0 L-1W * ?", "UTC", "2024-06-01T00:00:00Z", // Jun 29 2024 is a Saturday
			[]string{"2024-06-28T00:00:00Z"}},
		{"1W does not leave the month", "0 0 0 1W * ?", "UTC", "2024-05-15T00:00:00Z",
			[]string{"2024-06-03T00:00:00Z", "2024-07-01T00:00:00Z", "2024-08-01T00:00:00Z", "2024-09-02T00:00:00Z"}},
		{"15W", "0 0 0 15W * ?", "UTC", "2024-06-01T00:00:00Z",
			[]string{"2024-06-14T00:00:00Z", "2024-07-15T00:00:00Z", "2024-08-15T00:00:00Z", "2024-09-16T00:00:00Z"}},
		{"30W near month ends", "0 0 0 30W * ?", "UTC", "2024-11-01T00:00:00Z",
			[]string{"2024-11-29T00:00:00Z", "2024-12-30T00:00:00Z", "2025-01-30T00:00:00Z", "2025-03-31T00:00:00Z"}},
		{"31W skips 30-day months", "0 0 0 31W * ?", "UTC", "2024-08-01T00:00:00Z",
			[]string{"2024-08-30T00:00:00Z", "2024-10-31T00:00:00Z", "2024-12-31T00:00:00Z"}},

		// day of week (1 = Sunday)
		{"1 is Sunday", "0 0 12 ? * 1", "UTC", "2024-01-01T00:00:00Z",
			[]string{"2024-01-07T12:00:00Z", "2024-01-14T12:00:00Z"}},
		{"7 is Saturday", "0 0 12 ? * 7", "UTC", "2024-01-01T00:00:00Z",
			[]string{"2024-01-06T12:00:00Z"}},
		{"lone L is Saturday", "0 0 12 ? * L", "UTC", "2024-01-01T00:00:00Z",
			[]string{"2024-01-06T12:00:00Z"}},
		{"MON-FRI", "0 0 12 ? * MON-FRI", "UTC", "2024-01-06T00:00:00Z",
			[]string{"2024-01-08T12:00:00Z", "2024-01-09T12:00:00Z"}},
		{"FRI-MON wraps", "0 0 12 ? * FRI-MON", "UTC", "2024-01-01T13:00:00Z",
			[]string{"2024-01-05T12:00:00Z", "2024-01-06T12:00:00Z", "2024-01-07T12:00:00Z", "2024-01-08T12:00:00Z", "2024-01-12T12:00:00Z"}},
		{"step after a weekday name is ignored (Quartz)", "0 0 0 ? * MON-WED/2", "UTC", "2024-01-01T00:00:00Z",
			[]string{"2024-01-02T00:00:00Z", "2024-01-03T00:00:00Z", "2024-01-08T00:00:00Z"}},
		{"weekday step", "0 0 0 ? * 2-6/2", "UTC", "2024-01-01T00:00:00Z",
			[]string{"2024-01-03T00:00:00Z", "2024-01-05T00:00:00Z", "2024-01-08T00:00:00Z"}},
		{"names are case-insensitive", "0 0 12 ? jan,Dec sun", "UTC", "2024-01-01T00:00:00Z",
			[]string{"2024-01-07T12:00:00Z", "2024-01-14T12:00:00Z"}},
		{"6L last Friday", "0 15 10 ? * 6L", "UTC", "2024-01-01T00:00:00Z",
			[]string{"2024-01-26T10:15:00Z", "2024-02-23T10:15:00Z", "2024-03-29T10:15:00Z"}},
		{"FRIL last Friday by name", "0 15 10 ? * fril", "UTC", "2024-01-01T00:00:00Z",
			[]string{"2024-01-26T10:15:00Z"}},
		{"6#3 third Friday", "0 0 12 ? * 6#3", "UTC", "2024-01-01T00:00:00Z",
			[]string{"2024-01-19T12:00:00Z", "2024-02-16T12:00:00Z", "2024-03-15T12:00:00Z"}},
		{"2#5 skips months without a fifth Monday", "0 0 12 ? * 2#5", "UTC", "2024-01-30T00:00:00Z",
			[]string{"2024-04-29T12:00:00Z", "2024-07-29T12:00:00Z"}},
		{"MON#1", "0 0 12 ? * MON#1", "UTC", "2024-01-02T00:00:00Z",
			[]string{"2024-02-05T12:00:00Z"}},

		// year field
		{"year range with 6L", "0 15 10 ? * 6L 2020-2100", "UTC", "2024-01-27T00:00:00Z",
			[]string{"2024-02-23T10:15:00Z"}},
		{"past year", "0 0 0 1 1 ? 2020", "UTC", "2024-01-01T00:00:00Z", nil},
		{"year step", "0 0 0 1 1 ? 2030/5", "UTC", "2024-06-01T00:00:00Z",
			[]string{"2030-01-01T00:00:00Z", "2035-01-01T00:00:00Z"}},
		// Quartz 2.3.2 stops searching at MAX_YEAR = (year the JVM
		// started) + 100 and so ignores 2199; we keep the fixed bound
		// xxl-job documents (doc.go, "Deviations").
		{"last allowed year", "0 0 0 1 1 ? 2199", "UTC", "2198-05-01T00:00:00Z",
			[]string{"2199-01-01T00:00:00Z"}},
		{"nothing after 2199", "0 0 0 1 1 ? *", "UTC", "2199-01-01T00:00:00Z", nil},
		{"no fifth Monday left", "0 0 0 ? * 2#5 2024", "UTC", "2024-12-31T00:00:00Z", nil},

		// time zones and DST (America/New_York 2024: +1h on Mar 10 at
		// 02:00 EST, -1h on Nov 3 at 02:00 EDT). Expectations as measured
		// on Quartz 2.3.2 (see quartz_golden_test.go): gap times are
		// skipped, overlap times fire once at their second occurrence.
		{"zone offset", "0 0 9 * * ?", "Asia/Shanghai", "2024-01-01T00:00:00Z",
			[]string{"2024-01-01T09:00:00+08:00", "2024-01-02T09:00:00+08:00"}},
		{"NY gap: 02:30 is skipped", "0 30 2 * * ?", "America/New_York", "2024-03-09T08:00:00Z",
			[]string{"2024-03-11T02:30:00-04:00", "2024-03-12T02:30:00-04:00"}},
		{"NY gap: from just after the gap", "0 30 2 * * ?", "America/New_York", "2024-03-10T03:10:00-04:00",
			[]string{"2024-03-11T02:30:00-04:00"}},
		{"NY gap: 02:00 skipped, 03:00 fires", "0 0 2,3 * * ?", "America/New_York", "2024-03-10T01:00:00-05:00",
			[]string{"2024-03-10T03:00:00-04:00", "2024-03-11T02:00:00-04:00"}},
		{"NY gap: every 20 minutes", "0 */20 * * * ?", "America/New_York", "2024-03-10T01:30:00-05:00",
			[]string{"2024-03-10T01:40:00-05:00", "2024-03-10T03:00:00-04:00", "2024-03-10T03:20:00-04:00", "2024-03-10T03:40:00-04:00"}},
		{"NY overlap: 01:30 fires once, second occurrence", "0 30 1 * * ?", "America/New_York", "2024-11-03T00:00:00-04:00",
			[]string{"2024-11-03T01:30:00-05:00", "2024-11-04T01:30:00-05:00"}},
		{"NY overlap: from inside the first occurrence", "0 30 1 * * ?", "America/New_York", "2024-11-03T01:10:00-04:00",
			[]string{"2024-11-03T01:30:00-05:00", "2024-11-04T01:30:00-05:00"}},
		{"NY overlap: from inside the second occurrence", "0 30 1 * * ?", "America/New_York", "2024-11-03T01:10:00-05:00",
			[]string{"2024-11-03T01:30:00-05:00", "2024-11-04T01:30:00-05:00"}},
		{"NY overlap: first 01:xx hour has no fires", "0 */20 * * * ?", "America/New_York", "2024-11-03T00:30:00-04:00",
			[]string{"2024-11-03T00:40:00-04:00", "2024-11-03T01:00:00-05:00", "2024-11-03T01:20:00-05:00", "2024-11-03T01:40:00-05:00", "2024-11-03T02:00:00-05:00"}},
		{"NY overlap: wall clock never goes back", "0 */20 * * * ?", "America/New_York", "2024-11-03T01:30:00-04:00",
			[]string{"2024-11-03T01:40:00-05:00", "2024-11-03T02:00:00-05:00"}},
		{"Berlin gap", "0 30 2 * * ?", "Europe/Berlin", "2024-03-30T23:00:00Z",
			[]string{"2024-04-01T02:30:00+02:00", "2024-04-02T02:30:00+02:00"}},
		{"Berlin overlap", "0 30 2 * * ?", "Europe/Berlin", "2024-10-27T02:00:00+02:00",
			[]string{"2024-10-27T02:30:00+01:00", "2024-10-28T02:30:00+01:00"}},
		{"gap after 2037 (zone rule, not table)", "0 30 2 14 3 ? 2100", "America/New_York", "2100-01-01T00:00:00Z", nil},
		{"DST day in a later year", "0 30 2 14,15 3 ? 2100", "America/New_York", "2100-01-01T00:00:00Z",
			[]string{"2100-03-15T02:30:00-04:00"}},
		// Lord Howe moves by 30 minutes (02:00 +10:30 → 02:30 +11:00 on
		// 2024-10-06): 02:10 does not exist, 02:30 does.
		{"30-minute gap", "0 10,30 2 * * ?", "Australia/Lord_Howe", "2024-10-06T00:30:00+10:30",
			[]string{"2024-10-06T02:30:00+11:00", "2024-10-07T02:10:00+11:00"}},
		// Santiago springs forward at midnight (2024-09-08 00:00 → 01:00).
		{"midnight gap skips the day's midnight only", "0 0 0,12 * * ?", "America/Santiago", "2024-09-07T13:00:00-04:00",
			[]string{"2024-09-08T12:00:00-03:00", "2024-09-09T00:00:00-03:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			loc := mustLoc(t, tt.tz)
			s, err := ParseCron(tt.expr, loc)
			if err != nil {
				t.Fatalf("ParseCron(%q): %v", tt.expr, err)
			}
			at := mustTime(t, tt.from)
			for i, w := range tt.want {
				got, ok := s.Next(at)
				if !ok {
					t.Fatalf("fire %d: no next time after %s, want %s", i, at.Format(time.RFC3339), w)
				}
				if want := mustTime(t, w); !got.Equal(want) {
					t.Fatalf("fire %d after %s: got %s, want %s", i, at.Format(time.RFC3339), got.Format(time.RFC3339), w)
				}
				if got.Location() != loc {
					t.Fatalf("fire %d: location %v, want %v", i, got.Location(), loc)
				}
				at = got
			}
			if len(tt.want) == 0 {
				if got, ok := s.Next(at); ok {
					t.Fatalf("got %s, want no fire", got.Format(time.RFC3339))
				}
			}
		})
	}
}

// TestCronDSTDayOnce walks whole transition days fire by fire: fires
// strictly increase, and every quarter-hour the day's wall clock shows
// fires exactly once — the ones a spring-forward gap removes not at all,
// the ones a fall-back repeats once, at their second (standard-time)
// occurrence (doc.go, "Time zones and DST").
func TestCronDSTDayOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tz       string
		day      string // local midnight before the transition day
		gap      string // the first and last quarter-hour the day lacks ("" for none)
		repeated string // the first and last quarter-hour it shows twice
		wantWall int    // fires on that local day
	}{
		{"America/New_York", "2024-03-10T00:00:00-05:00", "02:00-02:45", "", 92},
		{"America/New_York", "2024-11-03T00:00:00-04:00", "", "01:00-01:45", 96},
		{"Europe/Berlin", "2024-03-31T00:00:00+01:00", "02:00-02:45", "", 92},
		{"Europe/Berlin", "2024-10-27T00:00:00+02:00", "", "02:00-02:45", 96},
	}
	within := func(wall, span string) bool {
		from, to, _ := strings.Cut(span, "-")
		return span != "" && wall >= from && wall <= to
	}
	for _, tt := range tests {
		t.Run(tt.tz+" "+tt.day, func(t *testing.T) {
			t.Parallel()
			loc := mustLoc(t, tt.tz)
			s, err := ParseCron("0 */15 * * * ?", loc)
			if err != nil {
				t.Fatal(err)
			}
			midnight := mustTime(t, tt.day).In(loc)
			end := midnight.AddDate(0, 0, 1) // the next local midnight (no transition there)
			seen := map[string]int{}
			at := midnight.Add(-time.Second)
			for {
				next, ok := s.Next(at)
				if !ok {
					t.Fatal("no next fire")
				}
				if !next.After(at) {
					t.Fatalf("fires not increasing: %s after %s", next, at)
				}
				if !next.Before(end) {
					break
				}
				wall := next.In(loc).Format("15:04")
				seen[wall]++
				if within(wall, tt.repeated) {
					// The second occurrence: an hour after the first.
					if first := next.Add(-time.Hour); first.In(loc).Format("15:04") != wall {
						t.Errorf("%s fired at %s, its first occurrence", wall, next.Format(time.RFC3339))
					}
				}
				at = next
			}
			fires := 0
			for h := range 24 {
				for m := 0; m < 60; m += 15 {
					wall := fmt.Sprintf("%02d:%02d", h, m)
					want := 1
					if within(wall, tt.gap) {
						want = 0
					}
					if seen[wall] != want {
						t.Errorf("wall time %s fired %d times, want %d", wall, seen[wall], want)
					}
					fires += seen[wall]
				}
			}
			if fires != tt.wantWall || len(seen) != tt.wantWall {
				t.Errorf("fired %d times at %d wall times, want %d", fires, len(seen), tt.wantWall)
			}
		})
	}
}

func TestParseCronErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want string // substring of the error message
	}{
		{"", "cron: expected 6 or 7 fields"},
		{"0 0 0 * *", "expected 6 or 7 fields"},
		{"0 0 0 1 1 ? 2024 1", "expected 6 or 7 fields"},
		{"60 0 0 * * ?", "cron: field seconds: value 60 out of range 0-59"},
		{"0 60 0 * * ?", "field minutes: value 60 out of range 0-59"},
		{"0 0 24 * * ?", "field hours: value 24 out of range 0-23"},
		{"0 0 0 32 * ?", "field day-of-month: value 32 out of range 1-31"},
		{"0 0 0 0 * ?", "field day-of-month: value 0 out of range 1-31"},
		{"0 0 0 ? 13 MON", "field month: value 13 out of range 1-12"},
		{"0 0 0 ? 0 MON", "field month: value 0 out of range 1-12"},
		{"0 0 0 1 FOO ?", "field month: invalid name \"FOO\""},
		{"0 0 0 ? * 0", "field day-of-week: value 0 out of range 1-7"},
		{"0 0 0 ? * 8", "field day-of-week: value 8 out of range 1-7"},
		{"0 0 0 ? * FUN", "field day-of-week: invalid name \"FUN\""},
		{"0 0 0 1 1 ? 1969", "field year: value 1969 out of range 1970-2199"},
		{"0 0 0 1 1 ? 2200", "field year: value 2200 out of range 1970-2199"},
		{"0 0 0 1 1 ? 2030-2025", "field year: \"2030-2025\": start year must not be after end year"},
		{"0 0 0 * * *", "specifying both a day-of-month and a day-of-week"},
		{"0 0 0 1 * MON", "specifying both a day-of-month and a day-of-week"},
		{"0 0 0 ? * ?", "'?' may be used in only one"},
		{"? 0 0 * * ?", "field seconds: '?' is only allowed in day-of-month and day-of-week"},
		{"0 0 0 ?5 * ?", "field day-of-month: '?' must stand alone"},
		{"0 0 0 ? * 6#6", "field day-of-week: \"6#6\": a number between 1 and 5 must follow '#'"},
		{"0 0 0 ? * 6#0", "a number between 1 and 5 must follow '#'"},
		{"0 0 0 ? * 1,6#3", "'#' cannot be combined"},
		{"0 0 0 ? * 1,6L", "field day-of-week: \"1,6L\": 'L' cannot be combined"},
		{"0 0 0 ? * 9L", "field day-of-week: value 9 out of range 1-7"},
		{"0 0 0 L,1 * ?", "field day-of-month: \"L,1\": 'L' and 'W' cannot be combined"},
		{"0 0 0 L-31 * ?", "offset from last day must be <= 30"},
		{"0 0 0 L-x * ?", "offset after 'L-' must be a number"},
		{"0 0 0 32W * ?", "field day-of-month: \"32W\": day 32 out of range 1-31"},
		{"0 0 0 W * ?", "'W' must follow a single day number"},
		{"0 0 0 1#2 * ?", "field day-of-month: \"1#2\": '#' is only allowed in day-of-week"},
		{"0 0 L * * ?", "field hours: \"L\": 'L' and 'W' are only allowed"},
		{"*/0 * * * * ?", "field seconds: \"*/0\": step 0 out of range 1-59"},
		{"*/60 * * * * ?", "step 60 out of range 1-59"},
		{"0 0 0 ? * MON/8", "field day-of-week: \"MON/8\": step 8 out of range 1-7"},
		{"0 0 0 ? * MON/x", "'/' must be followed by a number"},
		{"1,,2 * * * * ?", "field seconds: empty list element"},
		{"a * * * * ?", "field seconds: invalid value \"A\""},
		{"0 0 0 1- * ?", "field day-of-month: missing value"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			s, err := ParseCron(tt.expr, time.UTC)
			if err == nil {
				t.Fatalf("ParseCron(%q) = %v, want error containing %q", tt.expr, s, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseCron(%q) error %q, want it to contain %q", tt.expr, err, tt.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Expr != tt.expr {
				t.Fatalf("error %T %v is not a *ParseError for the expression", err, err)
			}
		})
	}
}

func TestParseCronAccepts(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{
		"0 0 0 * * ? *",     // the xxl-job sample job
		"  0\t0  0 * * ?  ", // any whitespace
		"0 0 0 ? * *",       // '*' in day-of-week with '?' in day-of-month
		"0 0 0 ? JAN-DEC SUN-SAT",
		"0 0 0 ? 12-2 SAT-SUN 2024-2199",
		"0 0 0 LW * ?",
		"0 0 0 L-3W * ?",
		"0 0 0 ? * 7L",
		"0 0 0 ? * SUN#5",
		"0 0 0 ? * MON-FRI/2",
	} {
		if _, err := ParseCron(expr, nil); err != nil {
			t.Errorf("ParseCron(%q): %v", expr, err)
		}
	}
}

func TestParseTypes(t *testing.T) {
	t.Parallel()
	from := mustTime(t, "2024-01-01T00:00:00Z")
	tests := []struct {
		typ, conf, tz string
		wantErr       string
		want          string // first fire after from, "" = none
	}{
		{TypeNone, "", "", "", ""},
		{TypeFixRate, "30", "", "", "2024-01-01T00:00:30Z"},
		{TypeFixRate, " 3600 ", "UTC", "", "2024-01-01T01:00:00Z"},
		{TypeFixRate, "0", "", "FIX_RATE needs a whole number of seconds", ""},
		{TypeFixRate, "1.5", "", "FIX_RATE needs a whole number of seconds", ""},
		{TypeFixDelay, "30", "", "", "2024-01-01T00:00:30Z"},
		{TypeFixDelay, " 1 ", "Asia/Tokyo", "", "2024-01-01T00:00:01Z"},
		{TypeFixDelay, "315360000", "", "", "2033-12-29T00:00:00Z"},
		{TypeFixDelay, "315360001", "", "FIX_DELAY needs a whole number of seconds", ""},
		{TypeFixDelay, "0", "", "FIX_DELAY needs a whole number of seconds", ""},
		{TypeFixDelay, "-5", "", "FIX_DELAY needs a whole number of seconds", ""},
		{TypeFixDelay, "1.5", "", "FIX_DELAY needs a whole number of seconds", ""},
		{TypeFixDelay, "5s", "", "FIX_DELAY needs a whole number of seconds", ""},
		{TypeFixDelay, "", "", "FIX_DELAY needs a whole number of seconds", ""},
		{TypeCron, "0 0 9 * * ?", "Asia/Tokyo", "", "2024-01-02T09:00:00+09:00"}, // 09:00 JST is from itself
		{TypeCron, "0 0 9 * * ?", "", "", "2024-01-01T09:00:00Z"},
		{TypeCron, "0 0 9 * * * *", "", "cron: specifying both", ""},
		{TypeCron, "0 0 9 * * ?", "Mars/Base", "time zone \"Mars/Base\"", ""},
		{"BOGUS", "", "", "unknown schedule type", ""},
	}
	for _, tt := range tests {
		t.Run(tt.typ+" "+tt.conf, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.typ, tt.conf, tt.tz)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse error = %v, want %q", err, tt.wantErr)
				}
				if s != nil {
					t.Fatalf("Parse returned schedule %v with error", s)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, ok := s.Next(from)
			if tt.want == "" {
				if ok {
					t.Fatalf("Next = %s, want none", got)
				}
				return
			}
			if !ok || !got.Equal(mustTime(t, tt.want)) {
				t.Fatalf("Next = %s %v, want %s", got, ok, tt.want)
			}
		})
	}
}

func TestPreview(t *testing.T) {
	t.Parallel()
	from := mustTime(t, "2024-01-30T10:00:00Z")
	format := func(ts []time.Time) string {
		var b []string
		for _, x := range ts {
			b = append(b, x.Format("2006-01-02 15:04:05"))
		}
		return strings.Join(b, ",")
	}
	cron, err := Parse(TypeCron, "0 0 12 L * ?", "Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Preview(cron, from, 5)
	if err != nil {
		t.Fatal(err)
	}
	if want := "2024-01-31 12:00:00,2024-02-29 12:00:00,2024-03-31 12:00:00,2024-04-30 12:00:00,2024-05-31 12:00:00"; format(got) != want {
		t.Errorf("cron preview %s, want %s", format(got), want)
	}

	fix, err := Parse(TypeFixRate, "90", "")
	if err != nil {
		t.Fatal(err)
	}
	got, err = Preview(fix, from, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := "2024-01-30 10:01:30,2024-01-30 10:03:00,2024-01-30 10:04:30"; format(got) != want {
		t.Errorf("fix rate preview %s, want %s", format(got), want)
	}

	// A cron running out of years yields what is left.
	short, err := Parse(TypeCron, "0 0 0 1 1 ? 2025-2026", "")
	if err != nil {
		t.Fatal(err)
	}
	got, err = Preview(short, from, 5)
	if err != nil || format(got) != "2025-01-01 00:00:00,2026-01-01 00:00:00" {
		t.Errorf("short preview %s %v", format(got), err)
	}

	none, err := Parse(TypeNone, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Preview(none, from, 5); !errors.Is(err, ErrNoSchedule) {
		t.Errorf("NONE preview error %v, want ErrNoSchedule", err)
	}
	past, err := Parse(TypeCron, "0 0 0 1 1 ? 2020", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Preview(past, from, 5); !errors.Is(err, ErrNoSchedule) {
		t.Errorf("past-year preview error %v, want ErrNoSchedule", err)
	}
}

func BenchmarkCronNext(b *testing.B) {
	for _, bc := range []struct{ name, expr, tz string }{
		{"every5min", "0 */5 * * * ?", "UTC"},
		{"every5min_NewYork", "0 */5 * * * ?", "America/New_York"},
		{"lastFriday_years", "0 15 10 ? * 6L 2020-2100", "UTC"},
		{"lastFriday_years_Berlin", "0 15 10 ? * 6L 2020-2100", "Europe/Berlin"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := ParseCron(bc.expr, mustLoc(b, bc.tz))
			if err != nil {
				b.Fatal(err)
			}
			at := mustTime(b, "2024-01-01T00:00:00Z")
			b.ReportAllocs()
			for b.Loop() {
				next, ok := s.Next(at)
				if !ok {
					at = mustTime(b, "2024-01-01T00:00:00Z")
					continue
				}
				at = next
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(TypeCron, "0 15 10 ? * 6L 2020-2100", "UTC"); err != nil {
			b.Fatal(err)
		}
	}
}
