package schedule

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Year bounds of the optional seventh field, as xxl-job's Quartz port
// validates them. The search for a next fire time never goes past maxYear.
const (
	minYear = 1970
	maxYear = 2199
)

// Field names used in parse errors; users see them in the console.
var fieldNames = [7]string{"seconds", "minutes", "hours", "day-of-month", "month", "day-of-week", "year"}

// ParseError reports an invalid cron expression. Its message names the
// field so the console can show it as is.
type ParseError struct {
	Expr  string // the whole expression as given
	Field string // field name ("day-of-week"), or "" for whole-expression errors
	Msg   string
}

// Error renders "cron: field day-of-week: ..." (or "cron: ..." when the
// problem is not tied to one field).
func (e *ParseError) Error() string {
	if e.Field == "" {
		return "cron: " + e.Msg
	}
	return "cron: field " + e.Field + ": " + e.Msg
}

// Day-of-month modes besides a plain list of days.
const (
	domList        = iota // dom bitset
	domLast               // L or L-n: last day minus domOffset
	domWeekday            // nW: weekday nearest to domDay
	domLastWeekday        // LW or L-nW: weekday nearest to last day minus domOffset
)

// Day-of-week modes besides a plain list of weekdays.
const (
	dowList = iota // dow bitset (bit q for Quartz day q, 1 = Sunday)
	dowLast        // qL: last weekday q of the month
	dowNth         // q#n: n-th weekday q of the month
)

// Cron is a parsed Quartz cron expression bound to a time zone. It is
// immutable and safe for concurrent use.
type Cron struct {
	expr string
	loc  *time.Location

	sec, min, hour uint64    // bit i set = value i allowed
	month          uint16    // bits 1..12
	years          [4]uint64 // bit y-minYear
	lastYear       int       // largest allowed year, ends the search

	useDOM    bool   // true: day-of-month given, day-of-week is '?'
	domMode   int    // domList, domLast, ...
	dom       uint32 // bits 1..31 for domList
	domDay    int    // day for domWeekday
	domOffset int    // n of L-n

	dowMode int
	dow     uint8 // bits 1..7 (Quartz numbering) for dowList
	dowDay  int   // Quartz weekday (1 = Sunday) for dowLast / dowNth
	dowNthN int   // n of q#n
}

var _ Schedule = (*Cron)(nil)

// ParseCron parses a Quartz cron expression exactly as xxl-job's
// CronExpression accepts it (6 fields plus an optional year) and evaluates it
// in loc (nil means UTC). The matcher is our own: see doc.go for why no
// library was used.
func ParseCron(expr string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	c := &Cron{expr: expr, loc: loc}
	fields := strings.Fields(expr)
	if len(fields) < 6 || len(fields) > 7 {
		return nil, &ParseError{Expr: expr, Msg: fmt.Sprintf("expected 6 or 7 fields (seconds minutes hours day-of-month month day-of-week [year]), got %d", len(fields))}
	}
	if len(fields) == 6 {
		fields = append(fields, "*")
	}
	for i, f := range fields {
		if err := c.parseField(i, strings.ToUpper(f)); err != nil {
			return nil, &ParseError{Expr: expr, Field: fieldNames[i], Msg: err.Error()}
		}
	}
	domQ, dowQ := fields[3] == "?", fields[5] == "?"
	switch {
	case domQ && dowQ:
		return nil, &ParseError{Expr: expr, Msg: "'?' may be used in only one of day-of-month and day-of-week"}
	case !domQ && !dowQ:
		return nil, &ParseError{Expr: expr, Msg: "specifying both a day-of-month and a day-of-week is not supported; use '?' in one of them"}
	}
	c.useDOM = !domQ
	return c, nil
}

// String returns the expression as it was given.
func (c *Cron) String() string { return c.expr }

// Location returns the time zone the expression is evaluated in.
func (c *Cron) Location() *time.Location { return c.loc }

// fieldSpec gives the numeric range, step limit and names of a field.
type fieldSpec struct {
	lo, hi  int
	maxStep int
	names   []string // names[i] is the value lo+i
}

var (
	monthNames = []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	dayNames   = []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
	specs      = [7]fieldSpec{
		{0, 59, 59, nil},
		{0, 59, 59, nil},
		{0, 23, 23, nil},
		{1, 31, 31, nil},
		{1, 12, 12, monthNames},
		{1, 7, 7, dayNames},
		{minYear, maxYear, maxYear - minYear, nil},
	}
)

func (c *Cron) parseField(i int, f string) error {
	if f == "?" {
		if i != 3 && i != 5 {
			return fmt.Errorf("'?' is only allowed in day-of-month and day-of-week")
		}
		return nil
	}
	if strings.Contains(f, "?") {
		return fmt.Errorf("'?' must stand alone in %q", f)
	}
	switch i {
	case 3:
		if ok, err := c.parseDOMSpecial(f); ok || err != nil {
			return err
		}
	case 5:
		if ok, err := c.parseDOWSpecial(f); ok || err != nil {
			return err
		}
	}
	switch {
	case strings.Contains(f, "#"):
		return fmt.Errorf("%q: '#' is only allowed in day-of-week, as in 6#3", f)
	case i != 4 && i != 5 && strings.ContainsAny(f, "LW"):
		// Month and weekday names (JUL, WED) contain L and W legitimately.
		return fmt.Errorf("%q: 'L' and 'W' are only allowed in day-of-month and day-of-week", f)
	}
	base := 0
	if i == 6 {
		base = minYear
	}
	set, err := parseList(f, specs[i], base)
	if err != nil {
		return err
	}
	switch i {
	case 0:
		c.sec = set[0]
	case 1:
		c.min = set[0]
	case 2:
		c.hour = set[0]
	case 3:
		c.domMode, c.dom = domList, uint32(set[0])
	case 4:
		c.month = uint16(set[0])
	case 5:
		c.dowMode, c.dow = dowList, uint8(set[0])
	case 6:
		c.years = set
		for w := len(set) - 1; w >= 0; w-- {
			if set[w] != 0 {
				c.lastYear = minYear + 64*w + 63 - bits.LeadingZeros64(set[w])
				break
			}
		}
	}
	return nil
}

// parseDOMSpecial handles L, L-n, LW, L-nW and nW. ok reports whether f was
// one of them.
func (c *Cron) parseDOMSpecial(f string) (ok bool, err error) {
	if !strings.ContainsAny(f, "LW") {
		return false, nil
	}
	if strings.ContainsAny(f, ",/*#") {
		return true, fmt.Errorf("%q: 'L' and 'W' cannot be combined with lists, ranges or steps", f)
	}
	if strings.HasPrefix(f, "L") {
		rest := strings.TrimPrefix(f, "L")
		w := strings.HasSuffix(rest, "W")
		rest = strings.TrimSuffix(rest, "W")
		off := 0
		if rest != "" {
			if !strings.HasPrefix(rest, "-") {
				return true, fmt.Errorf("%q: expected L, L-n, LW or L-nW", f)
			}
			n, err := strconv.Atoi(rest[1:])
			if err != nil || n < 0 {
				return true, fmt.Errorf("%q: offset after 'L-' must be a number", f)
			}
			if n > 30 {
				return true, fmt.Errorf("%q: offset from last day must be <= 30", f)
			}
			off = n
		}
		c.domOffset = off
		c.domMode = domLast
		if w {
			c.domMode = domLastWeekday
		}
		return true, nil
	}
	d, found := strings.CutSuffix(f, "W")
	if !found {
		return true, fmt.Errorf("%q: 'L' must come first (L, L-n, LW)", f)
	}
	n, err := strconv.Atoi(d)
	if err != nil {
		return true, fmt.Errorf("%q: 'W' must follow a single day number", f)
	}
	if n < 1 || n > 31 {
		return true, fmt.Errorf("%q: day %d out of range 1-31", f, n)
	}
	c.domMode, c.domDay = domWeekday, n
	return true, nil
}

// parseDOWSpecial handles L, qL and q#n. ok reports whether f was one of them.
func (c *Cron) parseDOWSpecial(f string) (ok bool, err error) {
	if f == "L" { // Quartz: a lone L in day-of-week means 7 (Saturday)
		c.dowMode, c.dow = dowList, 1<<7
		return true, nil
	}
	if day, n, found := strings.Cut(f, "#"); found {
		if strings.ContainsAny(f, ",-/*L") {
			return true, fmt.Errorf("%q: '#' cannot be combined with lists, ranges, steps or 'L'", f)
		}
		q, err := parseValue(day, specs[5])
		if err != nil {
			return true, err
		}
		k, err := strconv.Atoi(n)
		if err != nil || k < 1 || k > 5 {
			return true, fmt.Errorf("%q: a number between 1 and 5 must follow '#'", f)
		}
		c.dowMode, c.dowDay, c.dowNthN = dowNth, q, k
		return true, nil
	}
	if day, found := strings.CutSuffix(f, "L"); found {
		if strings.ContainsAny(day, ",-/*") {
			return true, fmt.Errorf("%q: 'L' cannot be combined with lists, ranges or steps", f)
		}
		q, err := parseValue(day, specs[5])
		if err != nil {
			return true, err
		}
		c.dowMode, c.dowDay = dowLast, q
		return true, nil
	}
	return false, nil
}

// parseList parses a comma list of *, a, a-b, */n, a/n, a-b/n into a bitset
// where bit v-base stands for value v (base is minYear for years, else 0).
func parseList(f string, s fieldSpec, base int) ([4]uint64, error) {
	var set [4]uint64
	add := func(v int) {
		v -= base
		set[v/64] |= 1 << (v % 64)
	}
	for item := range strings.SplitSeq(f, ",") {
		if item == "" {
			return set, fmt.Errorf("empty list element in %q", f)
		}
		rng, stepStr, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepStr)
			if err != nil {
				return set, fmt.Errorf("%q: '/' must be followed by a number", item)
			}
			if n < 1 || n > s.maxStep {
				return set, fmt.Errorf("%q: step %d out of range 1-%d", item, n, s.maxStep)
			}
			step = n
		}
		// Quartz reads a month or weekday name (or a name range) and
		// ignores the rest of the item, so "MON-FRI/2" is MON-FRI and
		// "FRI/2" is FRI. The step is still validated above.
		named := s.names != nil && strings.ContainsAny(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
		if named {
			step = 1
		}
		lo, hi := s.lo, s.hi
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if lo, err = parseValue(a, s); err != nil {
				return set, err
			}
			if hi, err = parseValue(b, s); err != nil {
				return set, err
			}
		default:
			v, err := parseValue(rng, s)
			if err != nil {
				return set, err
			}
			lo = v
			if !hasStep || named {
				hi = v
			}
		}
		if hi < lo {
			// Quartz wraps ranges such as 22-2 or FRI-MON round the end of
			// the field; years cannot wrap.
			if s.lo >= minYear {
				return set, fmt.Errorf("%q: start year must not be after end year", item)
			}
			span := s.hi - s.lo + 1
			for v := lo; v <= hi+span; v += step {
				add(s.lo + (v-s.lo)%span)
			}
			continue
		}
		for v := lo; v <= hi; v += step {
			add(v)
		}
	}
	return set, nil
}

// parseValue parses one number or (for month/day-of-week) a three-letter
// name and checks it against the field's range.
func parseValue(v string, s fieldSpec) (int, error) {
	if v == "" {
		return 0, fmt.Errorf("missing value")
	}
	if s.names != nil && len(v) == 3 && v[0] >= 'A' && v[0] <= 'Z' {
		for i, n := range s.names {
			if n == v {
				return s.lo + i, nil
			}
		}
		return 0, fmt.Errorf("invalid name %q", v)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("invalid value %q", v)
	}
	if n < s.lo || n > s.hi {
		return 0, fmt.Errorf("value %d out of range %d-%d", n, s.lo, s.hi)
	}
	return n, nil
}

// Next returns the first fire time strictly after t, or false when the
// expression has no fire time after t up to the year 2199.
//
// Like Quartz's getTimeAfter, the search runs over wall-clock readings of
// c.loc strictly after t's own reading (whole seconds). A matching reading
// that does not exist (spring-forward gap) is skipped; one that exists twice
// (fall-back overlap) fires once, at its second, standard-time occurrence.
// See doc.go for the measured Quartz behaviour this reproduces.
func (c *Cron) Next(t time.Time) (time.Time, bool) {
	lt := t.In(c.loc)
	from := time.Date(lt.Year(), lt.Month(), lt.Day(), lt.Hour(), lt.Minute(), lt.Second(), 0, time.UTC).Add(time.Second)
	var best time.Time
	found := false
	c.scan(from, func(y int, mo time.Month, d, h, mi, s int) bool {
		x, ok := c.resolve(y, mo, d, h, mi, s)
		// The !After test is defensive: a reading after t's reading never
		// maps before t, as its latest occurrence is taken.
		if !ok || !x.After(t) {
			return true
		}
		best, found = x, true
		return false
	})
	if !found {
		return time.Time{}, false
	}
	return best.In(c.loc), true
}

// scan calls visit for each wall time matching c at or after from (a wall
// clock reading stored as UTC), in ascending order, until visit returns
// false or the allowed years run out.
func (c *Cron) scan(from time.Time, visit func(y int, mo time.Month, d, h, mi, s int) bool) {
	y, mo, d := from.Date()
	h, mi, s := from.Clock()
	if y < minYear {
		y, mo, d, h, mi, s = minYear, time.January, 1, 0, 0, 0
	}
	skipY, skipMo := c.quartzSkips(y, mo, d, h, mi, s)
	for y <= c.lastYear {
		if !c.yearOK(y) {
			y, mo, d, h, mi, s = y+1, time.January, 1, 0, 0, 0
			continue
		}
		if c.month&(1<<mo) == 0 {
			y, mo, d, h, mi, s = nextMonth(y, mo)
			continue
		}
		ndays := daysIn(y, mo)
		if y == skipY && mo == skipMo {
			y, mo, d, h, mi, s = nextMonth(y, mo)
			continue
		}
		for ; d <= ndays; d, h, mi, s = d+1, 0, 0, 0 {
			if !c.dayOK(y, mo, d, ndays) {
				continue
			}
			if !c.visitDay(y, mo, d, h, mi, s, visit) {
				return
			}
		}
		y, mo, d, h, mi, s = nextMonth(y, mo)
	}
}

// quartzSkips returns the month (year, month) whose nW fire past its end
// (pastEndWeekday) Quartz does not reach when its search starts at the wall
// reading y-mo-d h:mi:s, or 0 when there is none.
//
// Quartz moves from month P to month S = P+1 in one of two ways. Running
// off P's last day (the search starts there after the day's last fire
// time) lands on S's 1st, where the W rule is applied to S. Finding P's own
// W day already passed instead jumps to "day n of S" on a lenient calendar,
// which is past S's end, so S is never looked at. The second is what
// happens after a fire on any day of P but its last: 30W fires Friday
// January 30, and Quartz then skips February even where 30W would give
// Friday February 29. Months further on are reached from a month whose W
// day exists (every month before a short one has 31 days), so only the
// month after the start month is affected.
func (c *Cron) quartzSkips(y int, mo time.Month, d, h, mi, s int) (int, time.Month) {
	ny, nmo, _, _, _, _ := nextMonth(y, mo)
	if !c.useDOM || c.domMode != domWeekday || c.domDay <= daysIn(ny, nmo) {
		return 0, 0
	}
	ndays := daysIn(y, mo)
	t := d // the day Quartz's W rule runs on in month mo
	if c.visitDay(y, mo, d, h, mi, s, func(int, time.Month, int, int, int, int) bool { return false }) {
		t++ // no fire time left on day d: the search runs off it
	}
	if t > ndays {
		return 0, 0 // off the month's end onto the 1st of the next
	}
	if c.yearOK(y) && c.month&(1<<mo) != 0 {
		// mo is allowed: its W day fires on or after day t, or it has
		// passed and Quartz jumps over the next month.
		return ny, nmo
	}
	// mo is not allowed: Quartz still applies the W rule to it before the
	// month rule moves on, and jumps only if that day has passed.
	if c.domDay <= ndays && nearestWeekday(y, mo, c.domDay, ndays) < t {
		return ny, nmo
	}
	return 0, 0
}

// visitDay visits the matching times of one day at or after h:mi:s.
func (c *Cron) visitDay(y int, mo time.Month, d, h, mi, s int, visit func(y int, mo time.Month, d, h, mi, s int) bool) bool {
	for hh := nextBit(c.hour, h); hh >= 0; hh = nextBit(c.hour, hh+1) {
		m0 := 0
		if hh == h {
			m0 = mi
		}
		for mm := nextBit(c.min, m0); mm >= 0; mm = nextBit(c.min, mm+1) {
			s0 := 0
			if hh == h && mm == mi {
				s0 = s
			}
			for ss := nextBit(c.sec, s0); ss >= 0; ss = nextBit(c.sec, ss+1) {
				if !visit(y, mo, d, hh, mm, ss) {
					return false
				}
			}
		}
	}
	return true
}

// nextBit returns the lowest set bit of set at or above from, or -1.
func nextBit(set uint64, from int) int {
	if from > 63 {
		return -1
	}
	rest := set >> from << from
	if rest == 0 {
		return -1
	}
	return bits.TrailingZeros64(rest)
}

func nextMonth(y int, mo time.Month) (int, time.Month, int, int, int, int) {
	if mo == time.December {
		return y + 1, time.January, 1, 0, 0, 0
	}
	return y, mo + 1, 1, 0, 0, 0
}

func (c *Cron) yearOK(y int) bool {
	off := y - minYear
	return off >= 0 && y <= maxYear && c.years[off/64]&(1<<(off%64)) != 0
}

// dayOK applies the day-of-month or day-of-week rule to day d of a month
// with ndays days.
func (c *Cron) dayOK(y int, mo time.Month, d, ndays int) bool {
	if c.useDOM {
		switch c.domMode {
		case domList:
			return c.dom&(1<<d) != 0
		case domLast:
			return d == ndays-c.domOffset // never matches when that is < 1
		case domWeekday:
			if c.domDay > ndays {
				return d == pastEndWeekday(y, mo, c.domDay, ndays)
			}
			return d == nearestWeekday(y, mo, c.domDay, ndays)
		default: // domLastWeekday
			target := ndays - c.domOffset
			return target >= 1 && d == nearestWeekday(y, mo, target, ndays)
		}
	}
	wd := int(time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Weekday()) + 1 // Quartz: 1 = Sunday
	switch c.dowMode {
	case dowList:
		return c.dow&(1<<wd) != 0
	case dowLast:
		return wd == c.dowDay && d+7 > ndays
	default: // dowNth
		return wd == c.dowDay && (d-1)/7+1 == c.dowNthN
	}
}

// nearestWeekday is Quartz's W rule: the weekday nearest to day target,
// never leaving the month (1W on a Saturday is Monday the 3rd; a Sunday last
// day moves back to Friday).
func nearestWeekday(y int, mo time.Month, target, ndays int) int {
	switch time.Date(y, mo, target, 0, 0, 0, 0, time.UTC).Weekday() {
	case time.Saturday:
		if target == 1 {
			return 3
		}
		return target - 1
	case time.Sunday:
		if target == ndays {
			return target - 2
		}
		return target + 1
	}
	return target
}

// pastEndWeekday is Quartz's W rule for a day the month does not have
// (31W in April, 30W in February): Quartz takes the weekday of day target
// on a lenient calendar, where it falls in the next month (April 31 is
// May 1). Only a Saturday steps back into the month, and only when target
// is the day after the last (April 30, a Friday, fires for 31W when May 1
// is a Saturday); in every other case Quartz moves on to the next month,
// and this one has no fire. It returns 0 when the month has none.
func pastEndWeekday(y int, mo time.Month, target, ndays int) int {
	if target == ndays+1 && time.Date(y, mo, target, 0, 0, 0, 0, time.UTC).Weekday() == time.Saturday {
		return ndays
	}
	return 0
}

func daysIn(y int, mo time.Month) int {
	return time.Date(y, mo+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// resolve maps a wall-clock reading in c.loc to an instant the way Quartz
// ends up doing: a reading that exists twice (fall-back overlap) maps to its
// later occurrence; a reading that does not exist (spring-forward gap)
// reports ok = false and is not fired.
func (c *Cron) resolve(y int, mo time.Month, d, h, mi, s int) (x time.Time, ok bool) {
	wall := time.Date(y, mo, d, h, mi, s, 0, time.UTC).Unix()
	if c.loc == time.UTC {
		return time.Unix(wall, 0), true
	}
	// Go's time.Date picks some nearby zone period; examine it and its two
	// neighbours, which covers any single transition near the reading.
	g := time.Date(y, mo, d, h, mi, s, 0, c.loc)
	start, end := g.ZoneBounds()
	_, off := g.Zone()
	type period struct {
		off        int
		start, end int64 // instants; unbounded when hasS / hasE is false
		hasS, hasE bool
	}
	ps := [3]period{{off: off, start: start.Unix(), end: end.Unix(), hasS: !start.IsZero(), hasE: !end.IsZero()}}
	n := 1
	if !start.IsZero() {
		_, po := start.Add(-time.Second).Zone()
		ps[n] = period{off: po, end: start.Unix(), hasE: true}
		n++
	}
	if !end.IsZero() {
		_, no := end.Zone()
		ps[n] = period{off: no, start: end.Unix(), hasS: true}
		n++
	}
	var latest int64
	for _, p := range ps[:n] {
		u := wall - int64(p.off)
		if (p.hasS && u < p.start) || (p.hasE && u >= p.end) {
			continue
		}
		if !ok || u > latest {
			latest, ok = u, true
		}
	}
	return time.Unix(latest, 0), ok
}
