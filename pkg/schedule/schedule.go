package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule yields fire times.
type Schedule interface {
	// Next returns the first fire time strictly after t, truncated to the
	// second for cron, or false when there is none (NONE, or a cron
	// expression with no future match).
	Next(t time.Time) (time.Time, bool)
}

// Schedule types, spelled as xxl-job's schedule_type column.
const (
	TypeNone    = "NONE"
	TypeCron    = "CRON"
	TypeFixRate = "FIX_RATE"
	// TypeFixDelay fires a fixed delay after the previous run ends
	// (PowerJob's FIX_DELAY); not an xxl-job type.
	TypeFixDelay = "FIX_DELAY"
	// TypeOnce fires once at an instant (EventBridge Scheduler's at()).
	TypeOnce = "ONCE"
)

// ErrNoSchedule is returned by Preview for a schedule that never fires.
var ErrNoSchedule = errors.New("schedule never fires")

// Parse builds the schedule of type typ from conf, evaluated in the IANA
// zone tz ("" means UTC).
func Parse(typ, conf, tz string) (Schedule, error) {
	loc := time.UTC
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return nil, fmt.Errorf("time zone %q: %w", tz, err)
		}
		loc = l
	}
	switch typ {
	case TypeNone:
		return none{}, nil
	case TypeFixRate:
		f, err := ParseFixRate(conf)
		if err != nil {
			return nil, err // not a zero FixRate: callers may test s != nil
		}
		return f, nil
	case TypeFixDelay:
		d, err := ParseFixDelay(conf)
		if err != nil {
			return nil, err
		}
		return d, nil
	case TypeCron:
		return ParseCron(conf, loc)
	case TypeOnce:
		o, err := ParseOnce(conf)
		if err != nil {
			return nil, err
		}
		return o, nil
	default:
		return nil, fmt.Errorf("unknown schedule type %q", typ)
	}
}

// FixRate fires every Interval, counted from the time it is given.
type FixRate struct{ Interval time.Duration }

// ParseFixRate parses a FIX_RATE conf: a whole number of seconds ≥ 1.
func ParseFixRate(conf string) (FixRate, error) {
	d, err := parseSeconds(TypeFixRate, conf)
	return FixRate{Interval: d}, err
}

// Next returns t + Interval: xxl-job counts FIX_RATE from the previous
// planned time (or from now after a misfire), so no alignment happens here.
func (f FixRate) Next(t time.Time) (time.Time, bool) { return t.Add(f.Interval), true }

// maxSeconds bounds FIX_RATE and FIX_DELAY: ten years.
const maxSeconds = 10 * 365 * 24 * 3600

// parseSeconds reads the conf of FIX_RATE and FIX_DELAY (typ names it in
// the error): a whole number of seconds between 1 and maxSeconds.
func parseSeconds(typ, conf string) (time.Duration, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(conf), 10, 64)
	if err != nil || n < 1 || n > maxSeconds {
		return 0, fmt.Errorf("%s needs a whole number of seconds between 1 and %d, got %q", typ, maxSeconds, conf)
	}
	return time.Duration(n) * time.Second, nil
}

// FixDelay fires Delay after the previous run of the job ended. The end
// is known only when the run's result arrives, so the schedule alone
// cannot say when the next fire is: Next answers for a run that ended at
// the instant it is given, which is what the scheduler asks when a result
// is recorded and what a preview can show ("after the current run").
type FixDelay struct{ Delay time.Duration }

// ParseFixDelay parses a FIX_DELAY conf: a whole number of seconds ≥ 1,
// with FIX_RATE's bounds.
func ParseFixDelay(conf string) (FixDelay, error) {
	d, err := parseSeconds(TypeFixDelay, conf)
	return FixDelay{Delay: d}, err
}

// Next returns end + Delay: the fire after a run that ended at end.
func (f FixDelay) Next(end time.Time) (time.Time, bool) { return end.Add(f.Delay), true }

// Once fires a single time, at At.
type Once struct{ At time.Time }

// ParseOnce parses a ONCE conf: an RFC 3339 instant with its zone offset
// ("2026-11-24T09:30:00+01:00", "2026-11-24T08:30:00Z"), in whole seconds
// like cron and EventBridge's at(). A wall time without an offset is
// refused rather than read in some zone: the instant must not depend on
// where it is parsed.
func ParseOnce(conf string) (Once, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(conf))
	if err != nil {
		return Once{}, fmt.Errorf("ONCE needs an RFC 3339 instant with a zone, such as 2026-11-24T09:30:00Z or 2026-11-24T10:30:00+01:00, got %q", conf)
	}
	if y := t.UTC().Year(); y < 1970 || y > 2199 {
		return Once{}, fmt.Errorf("ONCE instant %q is outside 1970-2199", conf)
	}
	if t.Nanosecond() != 0 {
		return Once{}, fmt.Errorf("ONCE instant %q must be in whole seconds", conf)
	}
	return Once{At: t}, nil
}

// Next returns At if it is strictly after t.
func (o Once) Next(t time.Time) (time.Time, bool) {
	if o.At.After(t) {
		return o.At, true
	}
	return time.Time{}, false
}

type none struct{}

func (none) Next(time.Time) (time.Time, bool) { return time.Time{}, false }

// Preview returns up to n successive fire times after from.
func Preview(s Schedule, from time.Time, n int) ([]time.Time, error) {
	var out []time.Time
	t := from
	for range n {
		next, ok := s.Next(t)
		if !ok {
			break
		}
		out = append(out, next)
		t = next
	}
	if len(out) == 0 && n > 0 {
		return nil, ErrNoSchedule
	}
	return out, nil
}
