package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/adminclient"
)

// tailInterval is how often `log tail` polls the executor log.
const tailInterval = time.Second

func (a *app) logCommand() *cobra.Command {
	cmd := parentCommand("log", "Inspect trigger logs, follow executor logs, kill runs")
	cmd.AddCommand(a.logList(), a.logGet(), a.logTail(), a.logKill(), a.logClear())
	return cmd
}

func (a *app) logList() *cobra.Command {
	var p adminclient.LogListParams
	var from, to string
	var all bool
	cmd := &cobra.Command{
		Use:   "list [flags]",
		Short: "List trigger logs, newest first, one page at a time (or --all)",
		Long: `List trigger logs, newest first, one page at a time (or --all).

--from and --to take RFC3339, "2006-01-02 15:04:05", a date, or a duration
meaning that long ago (e.g. 90m, 24h); dates and times without a zone are
read in the local zone.`,
		Example: `  xjob log list --job 7 --status fail --from 24h`,
		Args:    noArgs,
	}
	fs := cmd.Flags()
	fs.Int64Var(&p.Job, "job", 0, "only logs of this job id")
	fs.Int64Var(&p.Group, "group", 0, "only logs of this executor group id")
	fs.StringVar(&p.Status, "status", "", "only success, fail or running")
	fs.StringVar(&from, "from", "", "only logs triggered at or after this")
	fs.StringVar(&to, "to", "", "only logs triggered at or before this")
	fs.StringVar(&p.Cursor, "cursor", "", "page cursor printed by the previous page")
	fs.IntVar(&p.Limit, "limit", 0, "page size (default: the server's)")
	fs.BoolVar(&all, "all", false, "follow the cursors and list every page")
	_ = cmd.RegisterFlagCompletionFunc("status", fixedCompletion("success,fail,running"))
	cmd.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		switch p.Status {
		case "", adminclient.LogStatusSuccess, adminclient.LogStatusFail, adminclient.LogStatusRunning:
		default:
			return usagef("--status must be success, fail or running, got %q", p.Status)
		}
		var err error
		if p.From, err = a.parseInstant("--from", from); err != nil {
			return err
		}
		if p.To, err = a.parseInstant("--to", to); err != nil {
			return err
		}
		page := adminclient.LogPage{Items: []xjob.Log{}}
		if all {
			for l, err := range c.LogListAll(ctx, p) {
				if err != nil {
					return fmt.Errorf("list logs: %w", err)
				}
				page.Items = append(page.Items, l)
			}
		} else if page, err = c.LogList(ctx, p); err != nil {
			return fmt.Errorf("list logs: %w", err)
		}
		err = a.emit(page, func(w io.Writer) {
			row(w, "ID", "JOB", "TYPE", "TRIGGERED", "EXECUTOR", "STATE", "MESSAGE")
			for i := range page.Items {
				l := &page.Items[i]
				msg := l.HandleMsg
				if !l.Handled() {
					msg = triggerOutcome(l.TriggerMsg)
				}
				// The message is the last column: shown long, it pushes no
				// other column out of line.
				row(w, itoa(l.ID), itoa(l.JobID), string(l.TriggerType), a.ms(l.TriggerTime, tableTime),
					dash(l.ExecutorAddress), logState(l), dash(oneLine(msg, 160)))
			}
		})
		if err == nil && page.Next != "" && a.output == "table" {
			fmt.Fprintf(a.stderr, "More logs: add --cursor %s (or --all).\n", page.Next)
		}
		return err
	})
	return cmd
}

// parseInstant reads a --from/--to value; "" is the zero time (no bound).
func (a *app) parseInstant(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02 15:04", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, a.loc); err == nil {
			return t, nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return a.clock.Now().Add(-d), nil
	}
	return time.Time{}, usagef("%s %q: want RFC3339, \"2006-01-02 15:04:05\", a date or a duration ago like 24h", flag, s)
}

func (a *app) logGet() *cobra.Command {
	cmd := &cobra.Command{Use: "get ID", Short: "Show one trigger log", Args: cobra.ExactArgs(1)}
	cmd.RunE = a.doID(func(ctx context.Context, c *adminclient.Client, id int64) error {
		l, err := c.LogGet(ctx, id)
		if err != nil {
			return fmt.Errorf("get log %d: %w", id, err)
		}
		return a.emit(l, func(w io.Writer) { a.logDetail(w, &l) })
	})
	return cmd
}

func (a *app) logDetail(w io.Writer, l *xjob.Log) {
	code := func(c int) string {
		if c == xjob.CodeNone {
			return "-"
		}
		return itoa(c)
	}
	detail(w, []field{
		{"ID", itoa(l.ID)},
		{"Job", itoa(l.JobID)},
		{"Group", itoa(l.GroupID)},
		{"Occurrence", dash(l.OccurrenceID)},
		{"Type", dash(string(l.TriggerType))},
		{"State", logState(l)},
		{"Scheduled", a.ms(l.ScheduledTime, detailTime)},
		{"Triggered", a.ms(l.TriggerTime, detailTime)},
		{"Trigger code", code(l.TriggerCode)},
		{"Trigger msg", multiLine(l.TriggerMsg)},
		{"Executor", dash(l.ExecutorAddress)},
		{"Handler", dash(l.ExecutorHandler)},
		{"Param", dash(l.ExecutorParam)},
		{"Sharding", dash(l.ExecutorShardingParam)},
		{"Retries left", itoa(l.ExecutorFailRetryCount)},
		{"Handled", a.ms(l.HandleTime, detailTime)},
		{"Handle code", code(l.HandleCode)},
		{"Handle msg", multiLine(l.HandleMsg)},
	})
}

func (a *app) logTail() *cobra.Command {
	var from int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "tail ID [--from LINE] [--timeout DURATION]",
		Short: "Print a run's executor log, following it every second until the run ends",
		Long: `Print a run's executor log, following it every second until the run ends.

It says on stderr what it is waiting for. Ctrl-C stops following (exit 130;
the run goes on); --timeout gives up after that long (exit 1). With -o json
each poll's reply is printed as one JSON line.`,
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().IntVar(&from, "from", 1, "first line to print (1-based)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long, e.g. 10m (0: wait for the end)")
	cmd.RunE = a.doID(func(ctx context.Context, c *adminclient.Client, id int64) error {
		if from < 1 {
			return usagef("--from must be at least 1, got %d", from)
		}
		if timeout < 0 {
			return usagef("--timeout must not be negative")
		}
		return a.follow(ctx, c, id, from, timeout)
	})
	return cmd
}

// errTimedOut ends a wait that reached its --timeout.
var errTimedOut = errors.New("timed out")

// follow streams log id's executor log from line from until the run ends,
// saying on stderr what it waits for. Ctrl-C (ctx) ends it with exit 130
// and a plain message; a timeout (0: none) is a failure.
func (a *app) follow(ctx context.Context, c *adminclient.Client, id int64, from int, timeout time.Duration) error {
	ctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	// A log that does not exist is an error before anything is promised.
	if _, err := c.LogGet(ctx, id); err != nil {
		return fmt.Errorf("log %d: %w", id, err)
	}
	a.note("Following the executor log of log %d until the run ends (Ctrl-C stops following; the run goes on).", id)
	enc := json.NewEncoder(a.stdout)
	for {
		res, err := c.LogExecutorLog(ctx, id, from)
		if err != nil {
			return a.waitEnded(ctx, err, fmt.Sprintf("log %d", id), timeout)
		}
		if a.output == "json" {
			if err := enc.Encode(res); err != nil {
				return fmt.Errorf("write json: %w", err)
			}
		} else if res.LogContent != "" {
			text := res.LogContent
			if !strings.HasSuffix(text, "\n") {
				text += "\n"
			}
			if _, err := io.WriteString(a.stdout, text); err != nil {
				return fmt.Errorf("write log: %w", err)
			}
		}
		if res.IsEnd {
			return nil
		}
		if res.ToLineNum >= from {
			from = res.ToLineNum + 1
		}
		if err := a.clock.SleepUntil(ctx, a.clock.Now().Add(tailInterval)); err != nil {
			return a.waitEnded(ctx, err, fmt.Sprintf("log %d", id), timeout)
		}
	}
}

// withTimeout is ctx with a timeout (none for 0) whose expiry reads as
// errTimedOut.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, d, errTimedOut)
}

// waitEnded turns the end of a wait into its outcome: Ctrl-C is exit 130
// with a plain message, a timeout a failure naming what was awaited, any
// other error itself.
func (a *app) waitEnded(ctx context.Context, err error, what string, timeout time.Duration) error {
	switch {
	case errors.Is(context.Cause(ctx), errTimedOut):
		return fmt.Errorf("timed out after %s waiting for %s to end", timeout, what)
	case ctx.Err() != nil:
		fmt.Fprintf(a.stderr, "Stopped waiting for %s (interrupted); the run goes on.\n", what)
		return exitCode(130)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// note tells the person on stderr what the command is doing (not under
// -o json, where stderr is for errors).
func (a *app) note(format string, args ...any) {
	if a.output == "table" {
		fmt.Fprintf(a.stderr, format+"\n", args...)
	}
}

func (a *app) logKill() *cobra.Command {
	cmd := &cobra.Command{Use: "kill ID", Short: "Kill a running trigger on its executor", Args: cobra.ExactArgs(1)}
	cmd.RunE = a.doID(func(ctx context.Context, c *adminclient.Client, id int64) error {
		l, err := c.LogKill(ctx, id)
		if err != nil {
			return fmt.Errorf("kill log %d: %w", id, err)
		}
		return a.emit(l, func(w io.Writer) {
			fmt.Fprintf(w, "Killed log %d of job %d: %s\n", l.ID, l.JobID, dash(oneLine(l.HandleMsg, 200)))
		})
	})
	return cmd
}

func (a *app) logClear() *cobra.Command {
	var p adminclient.LogClearParams
	cmd := &cobra.Command{
		Use:   "clear --mode MODE [--group ID] [--job ID]",
		Short: "Delete trigger logs as xxl-job's \"clear log\" does",
		Long: `Delete trigger logs as xxl-job's "clear log" does.

--mode is one of 1m, 3m, 6m, 12m (logs older than that many months),
1k, 10k, 30k, 100k (keep only the newest that many) or all. --group and
--job narrow it; without them it clears every group's logs (admin only;
a normal user must name one of its groups).`,
		Example: `  xjob log clear --group 2 --mode 3m
  xjob log clear --group 2 --job 7 --mode 1k`,
		Args: noArgs,
	}
	cmd.Flags().StringVar(&p.Mode, "mode", "", "1m|3m|6m|12m|1k|10k|30k|100k|all (required)")
	cmd.Flags().Int64Var(&p.GroupID, "group", 0, "only this executor group's logs")
	cmd.Flags().Int64Var(&p.JobID, "job", 0, "only this job's logs")
	_ = cmd.MarkFlagRequired("mode")
	cmd.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		n, err := c.LogClear(ctx, p)
		if err != nil {
			return fmt.Errorf("clear logs: %w", err)
		}
		return a.emit(map[string]int{"deleted": n}, func(w io.Writer) {
			fmt.Fprintf(w, "Deleted %d logs\n", n)
		})
	})
	return cmd
}

func (a *app) reportCommand() *cobra.Command {
	var from, to, tz string
	cmd := &cobra.Command{
		Use:   "report [--from DATE] [--to DATE] [--tz ZONE]",
		Short: "Show the daily run report (successes, failures, running)",
		Long: `Show the daily run report (successes, failures, running).

The server counts days in UTC. With --tz another zone's days are counted
here, from the trigger logs of the range (logs older than the server's
retention are gone, so such days may count less than the UTC report).`,
		Args: noArgs,
	}
	cmd.Flags().StringVar(&from, "from", "", "first day, yyyy-mm-dd (default: 6 days before --to)")
	cmd.Flags().StringVar(&to, "to", "", "last day, yyyy-mm-dd (default: today)")
	cmd.Flags().StringVar(&tz, "tz", "UTC", "IANA time zone whose calendar days are counted")
	cmd.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		loc, err := time.LoadLocation(tz)
		if err != nil || tz == "" || tz == "Local" {
			return usagef("--tz %q is not an IANA time zone", tz)
		}
		day := func(flag, s string) (time.Time, error) {
			if s == "" {
				return time.Time{}, nil
			}
			t, err := time.ParseInLocation(time.DateOnly, s, loc)
			if err != nil {
				return t, usagef("%s %q: want yyyy-mm-dd", flag, s)
			}
			return t, nil
		}
		f, err := day("--from", from)
		if err != nil {
			return err
		}
		t, err := day("--to", to)
		if err != nil {
			return err
		}
		var days []xjob.ReportDay
		if loc == time.UTC {
			days, err = c.Report(ctx, f, t)
		} else {
			days, err = a.zoneReport(ctx, c, f, t, loc)
		}
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		if days == nil {
			days = []xjob.ReportDay{}
		}
		return a.emit(map[string]any{"timeZone": tz, "items": days}, func(w io.Writer) {
			row(w, "DAY ("+tz+")", "SUCCESS", "FAIL", "RUNNING")
			for _, d := range days {
				row(w, d.Day, itoa(d.SucCount), itoa(d.FailCount), itoa(d.RunningCount))
			}
		})
	})
	return cmd
}

// zoneReport counts the trigger logs of the days from..to of loc (a week
// to today by default), as the server's report counts UTC days.
func (a *app) zoneReport(ctx context.Context, c *adminclient.Client, from, to time.Time, loc *time.Location) ([]xjob.ReportDay, error) {
	now := a.clock.Now().In(loc)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	switch {
	case from.IsZero() && to.IsZero():
		from, to = today.AddDate(0, 0, -6), today
	case from.IsZero():
		from = to.AddDate(0, 0, -6)
	case to.IsZero():
		to = from.AddDate(0, 0, 6)
	}
	if from.After(to) {
		return nil, usagef("--from must not be after --to")
	}
	if to.Sub(from) > 366*24*time.Hour {
		return nil, usagef("at most a year per report")
	}
	var days []xjob.ReportDay
	index := map[string]int{}
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		index[d.Format(time.DateOnly)] = len(days)
		days = append(days, xjob.ReportDay{Day: d.Format(time.DateOnly)})
	}
	end := to.AddDate(0, 0, 1).Add(-time.Millisecond)
	for l, err := range c.LogListAll(ctx, adminclient.LogListParams{From: from, To: end, Limit: 1000}) {
		if err != nil {
			return nil, err
		}
		i, ok := index[time.UnixMilli(l.TriggerTime).In(loc).Format(time.DateOnly)]
		if !ok {
			continue
		}
		switch logState(&l) {
		case "success":
			days[i].SucCount++
		case "running", "pending":
			days[i].RunningCount++
		default:
			days[i].FailCount++
		}
	}
	return days, nil
}

func (a *app) metricsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "metrics", Short: "Show the server's trigger counters, fire delay, scan ticks and misfired fires", Args: noArgs}
	cmd.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		s, err := c.Metrics(ctx)
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		return a.emit(s, func(w io.Writer) {
			detail(w, []field{
				{"Triggers", itoa(s.Triggers)},
				{"Trigger failures", itoa(s.TriggerFailures)},
				{"Duplicates", itoa(s.Duplicates)},
				{"Dropped", itoa(s.Dropped)},
				{"Successes", itoa(s.Successes)},
				{"Failures", itoa(s.Failures)},
				{"Fire delay p50", itoa(s.FireDelayP50) + " ms"},
				{"Fire delay p99", itoa(s.FireDelayP99) + " ms"},
				{"Fire delay avg", itoa(s.FireDelayAvg) + " ms"},
				{"Scan ticks", itoa(s.ScanTicks)},
				{"Scan tick p50/p99", itoa(s.ScanTickP50) + " / " + itoa(s.ScanTickP99) + " ms"},
				{"Misfired", itoa(s.Misfired.Total()) + " (DO_NOTHING " + itoa(s.Misfired.DoNothing) +
					", FIRE_ONCE_NOW " + itoa(s.Misfired.FireOnceNow) + ")"},
				{"Late, collapsed", itoa(s.Collapsed)},
			})
			if s.Misfired.Total()+s.Collapsed > 0 {
				fmt.Fprintln(w, "\nxjob fell behind schedule: fire times above were passed over (see the server's \"behind schedule\" warnings).")
			}
		})
	})
	return cmd
}

func msTime(v int64) time.Time { return time.UnixMilli(v) }
