// Package cli implements the xjob command line. It parses arguments and
// prints results; the work is done by the packages it calls.
package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/xjobdev/xjob/internal/app/local"
	"github.com/xjobdev/xjob/internal/scheduler/schedule"
)

// Main runs the CLI with args (without the program name) and returns the
// process exit code: 0 on success, 1 on a failed command, 2 on bad usage.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) >= 2 && args[0] == "cron" && args[1] == "next" {
		return cronNext(args[2:], stdout, stderr)
	}
	if len(args) >= 1 && args[0] == "local" {
		return local.Main(args[1:], stdout, stderr)
	}
	// Every other command (job, group, executor, log, report, metrics,
	// help) talks to an admin API: see app.go.
	return runServerCommands(args, stdout, stderr)
}

func cronNext(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("xjob cron next", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tz := fs.String("tz", "UTC", "IANA time zone the expression is evaluated in")
	from := fs.String("from", "", "start instant, RFC3339 (default now)")
	n := fs.Int("n", 5, "how many fire times")
	out := fs.String("o", "table", "output format: table or json")
	expr, rest := "", args
	if len(rest) > 0 && rest[0] != "" && rest[0][0] != '-' {
		expr, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	if expr == "" && fs.NArg() == 1 {
		expr = fs.Arg(0)
	}
	if expr == "" || *n < 1 || *n > 1000 || (*out != "table" && *out != "json") {
		fmt.Fprintln(stderr, "usage: xjob cron next EXPR [--tz ZONE] [--from RFC3339] [-n 1..1000] [-o table|json]")
		return 2
	}
	start := time.Now()
	if *from != "" {
		t, err := time.Parse(time.RFC3339, *from)
		if err != nil {
			fmt.Fprintf(stderr, "--from: %v\n", err)
			return 2
		}
		start = t
	}
	sched, err := schedule.Parse(schedule.TypeCron, expr, *tz)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	times, err := schedule.Preview(sched, start, *n)
	if err != nil && !errors.Is(err, schedule.ErrNoSchedule) {
		fmt.Fprintln(stderr, err)
		return 1
	}
	loc, _ := time.LoadLocation(*tz)
	if *out == "json" {
		list := make([]string, len(times))
		for i, t := range times {
			list[i] = t.In(loc).Format(time.RFC3339)
		}
		_ = json.NewEncoder(stdout).Encode(map[string]any{"expression": expr, "timeZone": *tz, "next": list})
		return 0
	}
	if len(times) == 0 {
		fmt.Fprintln(stdout, "no future fire time")
	}
	for _, t := range times {
		fmt.Fprintln(stdout, t.In(loc).Format("2006-01-02 15:04:05 MST"))
	}
	return 0
}
