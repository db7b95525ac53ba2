package schedule

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// quartzCase is one entry of testdata/quartz_golden.json.
type quartzCase struct {
	Name  string   `json:"name"`
	Expr  string   `json:"expr"`
	TZ    string   `json:"tz"`
	From  string   `json:"from"`  // RFC 3339 start instant
	N     int      `json:"n"`     // fires asked of Quartz
	Error string   `json:"error"` // parse error or timeout in Quartz; none in the file
	End   bool     `json:"end"`   // Quartz returned null before n fires
	Want  []string `json:"want"`  // Quartz's fires, RFC 3339 in the case's zone
}

// TestCronQuartzGolden replays fire times produced by the real Quartz:
// Debian bookworm's libquartz2-java 2.3.2-4 (/usr/share/java/quartz2.jar,
// org.quartz.CronExpression) on OpenJDK 17 and its bundled tzdata. The
// generator, testdata/quartzgen/QuartzGolden.java, reads the cases of a
// .tsv file and for each does: new CronExpression(expr);
// setTimeZone(TimeZone.getTimeZone(tz)); at = the start instant; then up
// to n times: next = getNextValidTimeAfter(at), stop when it returns null
// (the case's "end"), else record next as RFC 3339 with its offset in tz
// and set at = next, each case under a 10 s timeout. `make quartz-golden`
// runs it on both files below; none hits the timeout and Quartz parses
// every expression.
//
// testdata/quartz_golden.json (cases: quartz_golden.tsv) holds every row
// of TestCronNextGolden (with one extra fire each); NY and Berlin
// spring-forward and fall-back days for 0 30 2, 0 0 2, 0 */15, 0 0 *,
// 0 30 1, 0 0/20 1-3 and more; starts inside overlaps and just after
// gaps; Lord Howe's 30-minute transitions; Santiago's midnight gap; L,
// L-n, LW, L-nW, nW near month ends, qL, q#n including #5; year fields;
// wrap-around ranges with and without steps; name ranges with steps; and
// 150 random expressions (seeded, six zones, five fires each). No case
// reaches past 2125: Quartz's search horizon is MAX_YEAR = (current year
// + 100), which moves with the clock (doc.go, "Deviations"), so such a
// case would change with the year it is regenerated in.
//
// testdata/quartz_golden_nw.json (cases: quartz_golden_nw.tsv) adds nW
// for days a month does not have (31W in 30-day months, 29W-31W in
// February), which Quartz resolves on a lenient calendar.
func TestCronQuartzGolden(t *testing.T) {
	t.Parallel()
	for _, f := range []struct {
		file string
		min  int
	}{
		{"testdata/quartz_golden.json", 300},
		{"testdata/quartz_golden_nw.json", 10},
	} {
		t.Run(f.file, func(t *testing.T) {
			t.Parallel()
			replayQuartz(t, f.file, f.min)
		})
	}
}

// replayQuartz checks every case of a golden file against ParseCron + Next;
// the file must hold at least min cases (a truncated file fails).
func replayQuartz(t *testing.T, file string, min int) {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cases []quartzCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(cases) < min {
		t.Fatalf("%s has %d cases, want at least %d", file, len(cases), min)
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			if tc.Error != "" {
				t.Fatalf("case recorded a Quartz error: %s", tc.Error)
			}
			loc := mustLoc(t, tc.TZ)
			s, err := ParseCron(tc.Expr, loc)
			if err != nil {
				t.Fatalf("ParseCron(%q): %v", tc.Expr, err)
			}
			at := mustTime(t, tc.From)
			var got []time.Time
			for range tc.N {
				next, ok := s.Next(at)
				if !ok {
					break
				}
				if next.Location() != loc {
					t.Fatalf("location %v, want %v", next.Location(), loc)
				}
				got = append(got, next)
				at = next
			}
			same := len(got) == len(tc.Want)
			for i := 0; same && i < len(got); i++ {
				same = got[i].Equal(mustTime(t, tc.Want[i]))
			}
			if !same {
				g := make([]string, len(got))
				for i, x := range got {
					g[i] = x.Format(time.RFC3339)
				}
				t.Fatalf("%q in %s after %s (Quartz end=%v):\n got %v\nwant %v", tc.Expr, tc.TZ, tc.From, tc.End, g, tc.Want)
			}
		})
	}
}
