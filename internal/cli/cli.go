// Package cli implements the xjob command line. It parses arguments and
// prints results; the work is done by the packages it calls.
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/xjobdev/xjob/internal/app/local"
	"github.com/xjobdev/xjob/pkg/schedule"
)

// Main runs the CLI with args (without the program name) and returns the
// process exit code: 0 on success, 1 on a failed command, 2 on bad usage.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) >= 1 && args[0] == "local" {
		return local.Main(args[1:], stdout, stderr)
	}
	if len(args) >= 1 && args[0] == "server" {
		return local.ServerMain(args[1:], stdout, stderr)
	}
	// Every other command (job, group, executor, log, report, metrics,
	// cron, help) is a cobra command: see app.go.
	return runServerCommands(args, stdout, stderr)
}

// cronCommand is `xjob cron next`: a schedule preview that needs no
// server (the global --server and --token are accepted and unused; -o
// chooses the output).
func (a *app) cronCommand() *cobra.Command {
	var tz, from string
	var n int
	next := &cobra.Command{
		Use:   "next EXPR [--tz ZONE] [--from RFC3339] [-n N]",
		Short: "Print the next fire times of a cron expression (no server needed)",
		Example: `  xjob cron next "0 0 2 * * ?" --tz Asia/Shanghai -n 3
  xjob cron next "0 */5 * * * ?" --from 2026-01-01T00:00:00Z -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("cron next takes one expression, got %d arguments", len(args))
			}
			return nil
		},
	}
	next.Flags().StringVar(&tz, "tz", "UTC", "IANA time zone the expression is evaluated in")
	next.Flags().StringVar(&from, "from", "", "start instant, RFC3339 (default now)")
	next.Flags().IntVarP(&n, "n", "n", 5, "how many fire times (1..1000)")
	next.RunE = func(_ *cobra.Command, args []string) error {
		expr := args[0]
		if n < 1 || n > 1000 {
			return usagef("-n must be between 1 and 1000, got %d", n)
		}
		start := a.clock.Now()
		if from != "" {
			t, err := time.Parse(time.RFC3339, from)
			if err != nil {
				return usagef("--from: %v", err)
			}
			start = t
		}
		sched, err := schedule.Parse(schedule.TypeCron, expr, tz)
		if err != nil {
			return failure{err}
		}
		times, err := schedule.Preview(sched, start, n)
		if err != nil && !errors.Is(err, schedule.ErrNoSchedule) {
			return failure{err}
		}
		loc, _ := time.LoadLocation(tz)
		if a.output == "json" {
			list := make([]string, len(times))
			for i, t := range times {
				list[i] = t.In(loc).Format(time.RFC3339)
			}
			return json.NewEncoder(a.stdout).Encode(map[string]any{"expression": expr, "timeZone": tz, "next": list})
		}
		if len(times) == 0 {
			fmt.Fprintln(a.stdout, "no future fire time")
		}
		for _, t := range times {
			fmt.Fprintln(a.stdout, t.In(loc).Format("2006-01-02 15:04:05 MST"))
		}
		return nil
	}
	cron := parentCommand("cron", "Preview schedules offline")
	cron.AddCommand(next)
	return cron
}
