package schedule_test

import (
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/xjobdev/xjob/pkg/schedule"
)

// Parse takes a job's schedule as xxl-job stores it: type, configuration
// and time zone. Cron fields are read on the zone's wall clock.
func ExampleParse() {
	s, err := schedule.Parse(schedule.TypeCron, "0 30 9 ? * MON-FRI", "Europe/Paris")
	if err != nil {
		log.Fatal(err)
	}
	from := time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC) // a Friday
	next, ok := s.Next(from)
	fmt.Println(next.UTC(), ok)
	// Output:
	// 2026-03-30 07:30:00 +0000 UTC true
}

// Preview lists the next fire times, as the console's "next fire times"
// button does. Across the spring-forward gap a wall time that does not
// exist is skipped, as Quartz skips it.
func ExamplePreview() {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		log.Fatal(err)
	}
	s, err := schedule.ParseCron("0 30 2 * * ?", ny)
	if err != nil {
		log.Fatal(err)
	}
	times, err := schedule.Preview(s, time.Date(2024, 3, 8, 12, 0, 0, 0, ny), 3)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range times {
		fmt.Println(t.In(ny).Format(time.RFC3339))
	}
	// Output:
	// 2024-03-09T02:30:00-05:00
	// 2024-03-11T02:30:00-04:00
	// 2024-03-12T02:30:00-04:00
}

// A FIX_RATE schedule counts whole seconds from the previous planned
// time; a ONCE schedule fires at one instant, then never again.
func ExampleSchedule() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct{ typ, conf string }{
		{schedule.TypeFixRate, "90"},
		{schedule.TypeOnce, "2026-01-01T08:00:00+01:00"},
		{schedule.TypeNone, ""},
	} {
		s, err := schedule.Parse(c.typ, c.conf, "")
		if err != nil {
			log.Fatal(err)
		}
		next, ok := s.Next(start)
		if !ok {
			fmt.Printf("%s: never\n", c.typ)
			continue
		}
		_, again := s.Next(next)
		fmt.Printf("%s: %s, then more: %t\n", c.typ, next.UTC().Format(time.TimeOnly), again)
	}
	// Output:
	// FIX_RATE: 00:01:30, then more: true
	// ONCE: 07:00:00, then more: false
	// NONE: never
}

// A bad expression is a *ParseError naming the field, which the console
// shows as is.
func ExampleParseCron_error() {
	_, err := schedule.ParseCron("0 0 25 * * ?", nil)
	var pe *schedule.ParseError
	if errors.As(err, &pe) {
		fmt.Println(pe.Field)
		fmt.Println(err)
	}
	// Output:
	// hours
	// cron: field hours: value 25 out of range 0-23
}
