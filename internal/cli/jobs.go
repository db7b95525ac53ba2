package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/target"
	"github.com/xjobdev/xjob/pkg/adminclient"
)

func (a *app) jobCommand() *cobra.Command {
	cmd := parentCommand("job", "Create, inspect, change and fire jobs")
	cmd.AddCommand(a.jobCreate(), a.jobList(), a.jobGet(), a.jobUpdate(), a.jobDelete(),
		a.jobStartStop(true), a.jobStartStop(false), a.jobTrigger(), a.jobNext())
	return cmd
}

// jobFlags are the common job fields as flags; only the flags a person sets
// are applied, so that `job update` changes nothing else.
type jobFlags struct {
	file                                      string
	group                                     int64
	desc, author, alarmEmail                  string
	cron, at, afterCompletion                 string
	fixRate, fixDelay                         int
	handler, param, route, block, misfire, tz string
	timeout, retry                            int
	child                                     string
	// An HTTP job's target (glue type HTTP): merged into its spec.
	glueType, url, method, body, successCodes string
	headers, secretHeaders, secretHeaderEnv   []string
	// An AWS job's target (glue type AWS): merged into its spec.
	arn, input, invocationType, messageGroupID, subject, eventSource, detailType string
}

func (f *jobFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.file, "file", "", "read job fields from a JSON file (`-` for stdin); flags override it")
	fs.Int64Var(&f.group, "group", 0, "executor group id")
	fs.StringVar(&f.desc, "desc", "", "description")
	fs.StringVar(&f.author, "author", "", "author")
	fs.StringVar(&f.alarmEmail, "alarm-email", "", "comma-separated e-mail addresses alerted on failure")
	fs.StringVar(&f.cron, "cron", "", "fire on a Quartz cron `EXPR` (schedule type CRON)")
	fs.IntVar(&f.fixRate, "fix-rate", 0, "fire every `SECONDS` (schedule type FIX_RATE)")
	fs.IntVar(&f.fixDelay, "fix-delay", 0, "fire `SECONDS` after the previous run ends, so runs never overlap (schedule type FIX_DELAY)")
	fs.StringVar(&f.at, "at", "", "fire once at an RFC 3339 `INSTANT` with its zone, e.g. 2026-11-24T09:30:00+01:00 (schedule type ONCE)")
	fs.StringVar(&f.afterCompletion, "after-completion", "", "what becomes of a ONCE job after its run: KEEP (stopped) or DELETE")
	fs.StringVar(&f.tz, "tz", "", "IANA time zone the schedule is read in (default UTC)")
	fs.StringVar(&f.misfire, "misfire", "", "misfire strategy: DO_NOTHING or FIRE_ONCE_NOW")
	fs.StringVar(&f.handler, "handler", "", "executor handler name")
	fs.StringVar(&f.param, "param", "", "executor parameter")
	fs.StringVar(&f.route, "route", "", "route strategy: "+routeNames())
	fs.StringVar(&f.block, "block", "", "block strategy: SERIAL_EXECUTION, DISCARD_LATER or COVER_EARLY")
	fs.IntVar(&f.timeout, "timeout", 0, "executor timeout in seconds (0: none)")
	fs.IntVar(&f.retry, "retry", 0, "retries after a failed run")
	fs.StringVar(&f.child, "child", "", "comma-separated child job ids fired after a success (empty clears)")
	fs.StringVar(&f.glueType, "type", "", "job type: BEAN (an executor's handler), HTTP (the scheduler calls --url itself) or AWS (it calls --arn)")
	fs.StringVar(&f.url, "url", "", "HTTP job: the `URL` to call; its path and query may hold {{param}}, {{logId}}, {{scheduleTime}}…")
	fs.StringVar(&f.method, "method", "", "HTTP job: GET (default), POST, PUT, PATCH, DELETE, HEAD or OPTIONS")
	fs.StringArrayVar(&f.headers, "header", nil, "HTTP job: a header `Name: value` (repeatable; the value may hold placeholders)")
	fs.StringArrayVar(&f.secretHeaders, "secret-header", nil, "HTTP job: a secret header `Name: value`, stored encrypted and never shown back (repeatable)")
	fs.StringArrayVar(&f.secretHeaderEnv, "secret-header-env", nil, "HTTP job: a secret header `Name=VAR` whose value is read from environment variable VAR (repeatable)")
	fs.StringVar(&f.body, "body", "", "HTTP job: the request body, a template: {{param|json}}, {{logId}}, {{scheduleTime}}, {{shardIndex}}…")
	fs.StringVar(&f.successCodes, "success-codes", "", "HTTP job: status codes that count as success, e.g. 200-299,304 (default 200-299)")
	fs.StringVar(&f.arn, "arn", "", "AWS job: the `ARN` to call (Lambda function, SQS queue, SNS topic, EventBridge bus, Step Functions state machine), one the server allows")
	fs.StringVar(&f.input, "input", "", "AWS job: the payload, message, event detail or execution input, a template (default: the trigger's values as JSON)")
	fs.StringVar(&f.invocationType, "invocation-type", "", "AWS job, Lambda: RequestResponse (default: wait, the result in the log) or Event")
	fs.StringVar(&f.messageGroupID, "message-group-id", "", "AWS job, FIFO queue or topic: the message group, a template")
	fs.StringVar(&f.subject, "subject", "", "AWS job, SNS: the message's subject, a template")
	fs.StringVar(&f.eventSource, "event-source", "", "AWS job, EventBridge: the event's source (default xjob)")
	fs.StringVar(&f.detailType, "detail-type", "", "AWS job, EventBridge: the event's detail-type (default \"xjob job fired\")")
	cmd.MarkFlagsMutuallyExclusive("cron", "fix-rate", "fix-delay", "at")
	_ = cmd.RegisterFlagCompletionFunc("type", fixedCompletion("BEAN,HTTP,AWS"))
	_ = cmd.RegisterFlagCompletionFunc("invocation-type", fixedCompletion("RequestResponse,Event"))
	_ = cmd.RegisterFlagCompletionFunc("route", fixedCompletion(routeNames()))
	_ = cmd.RegisterFlagCompletionFunc("block", fixedCompletion("SERIAL_EXECUTION,DISCARD_LATER,COVER_EARLY"))
	_ = cmd.RegisterFlagCompletionFunc("misfire", fixedCompletion("DO_NOTHING,FIRE_ONCE_NOW"))
	_ = cmd.RegisterFlagCompletionFunc("after-completion", fixedCompletion("KEEP,DELETE"))
}

func routeNames() string {
	names := make([]string, len(xjob.RouteStrategies))
	for i, r := range xjob.RouteStrategies {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}

func fixedCompletion(list string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return strings.Split(strings.ReplaceAll(list, " ", ""), ","), cobra.ShellCompDirectiveNoFileComp
	}
}

// apply overlays the --file and then the flags that were set onto j.
func (f *jobFlags) apply(a *app, fs *pflag.FlagSet, j *xjob.Job) (changed bool, err error) {
	if f.file != "" {
		if err := a.readJSONFile(f.file, j); err != nil {
			return false, err
		}
		changed = true
	}
	set := func(name string, fn func()) {
		if fs.Changed(name) {
			fn()
			changed = true
		}
	}
	set("group", func() { j.GroupID = f.group })
	set("desc", func() { j.Description = f.desc })
	set("author", func() { j.Author = f.author })
	set("alarm-email", func() { j.AlarmEmail = f.alarmEmail })
	set("cron", func() { j.ScheduleType, j.ScheduleConf = xjob.ScheduleCron, f.cron })
	set("fix-rate", func() { j.ScheduleType, j.ScheduleConf = xjob.ScheduleFixRate, strconv.Itoa(f.fixRate) })
	set("fix-delay", func() { j.ScheduleType, j.ScheduleConf = xjob.ScheduleFixDelay, strconv.Itoa(f.fixDelay) })
	set("at", func() { j.ScheduleType, j.ScheduleConf = xjob.ScheduleOnce, f.at })
	set("after-completion", func() { j.AfterCompletion = xjob.AfterCompletion(strings.ToUpper(f.afterCompletion)) })
	set("tz", func() { j.TimeZone = f.tz })
	set("misfire", func() { j.MisfireStrategy = xjob.MisfireStrategy(strings.ToUpper(f.misfire)) })
	set("handler", func() { j.Handler = f.handler })
	set("param", func() { j.Param = f.param })
	set("route", func() { j.RouteStrategy = xjob.RouteStrategy(strings.ToUpper(f.route)) })
	set("block", func() { j.BlockStrategy = xjob.BlockStrategy(strings.ToUpper(f.block)) })
	set("timeout", func() { j.TimeoutSeconds = f.timeout })
	set("retry", func() { j.FailRetryCount = f.retry })
	if fs.Changed("child") {
		ids, err := xjob.ParseChildJobIDs(f.child)
		if err != nil {
			return false, usagef("--child: %v", err)
		}
		j.ChildJobIDs, changed = ids, true
	}
	set("type", func() { j.GlueType = xjob.GlueType(strings.ToUpper(f.glueType)) })
	if ok, err := f.applyTarget(a, fs, j); err != nil {
		return false, err
	} else if ok {
		changed = true
	}
	if ok, err := f.applyAWSTarget(fs, j); err != nil {
		return false, err
	} else if ok {
		changed = true
	}
	if fs.Changed("at") && j.TimeZone != "" {
		if err := checkWallTime(f.at, j.TimeZone); err != nil {
			return false, usagef("--at: %v", err)
		}
	}
	return changed, nil
}

// checkWallTime refuses an --at instant written as a local time of zone
// (with one of the zone's offsets around it) that does not exist there:
// a time inside the spring-forward gap, such as 02:30 on the night the
// clocks jump from 02:00 to 03:00. An instant in another offset (Z) is
// taken as it is.
func checkWallTime(at, zone string) error {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(at))
	if err != nil {
		return nil // the server says what is wrong with it
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil
	}
	_, off := t.Zone()
	_, before := t.Add(-12 * time.Hour).In(loc).Zone()
	_, after := t.Add(12 * time.Hour).In(loc).Zone()
	if off != before && off != after {
		return nil
	}
	local := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, loc)
	if local.Hour() == t.Hour() && local.Minute() == t.Minute() {
		return nil
	}
	return fmt.Errorf("%s is not a time in %s: its clocks skip it that night (the same instant there is %s)",
		t.Format("2006-01-02 15:04:05"), zone, t.In(loc).Format(time.RFC3339))
}

// readJSONFile decodes a JSON object from path (or stdin for "-") onto v,
// rejecting unknown fields so that a misspelt field is not silently lost.
func (a *app) readJSONFile(path string, v any) error {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(a.stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return usagef("--file: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return usagef("--file %s: %v", path, err)
	}
	return nil
}

func (a *app) jobCreate() *cobra.Command {
	var f jobFlags
	var start bool
	cmd := &cobra.Command{
		Use:   "create [flags]",
		Short: "Create a job from flags and/or --file job.json",
		Example: `  xjob job create --group 1 --desc "nightly report" --author ann --cron "0 0 2 * * ?" --handler reportJob --start
  xjob job create --file job.json --tz Europe/Paris
  xjob job create --group 1 --desc "drain the queue" --author ann --fix-delay 30 --timeout 600 --handler drainJob --start
  xjob job create --group 1 --desc "ping the hook" --author ann --fix-rate 60 --type http \
      --url https://hooks.example.com/run --method POST --header 'Content-Type: application/json' \
      --secret-header-env Authorization=HOOK_AUTH --body '{"param":{{param|json}},"log":{{logId}}}' --start`,
		Args: noArgs,
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&start, "start", false, "create it started (the scheduler fires it)")
	cmd.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		var j xjob.Job
		changed, err := f.apply(a, cmd.Flags(), &j)
		if err != nil {
			return err
		}
		if !changed && !start {
			return usagef("give the job's fields as flags or with --file")
		}
		if start {
			j.TriggerStatus = xjob.StatusRunning
		}
		created, err := c.JobCreate(ctx, j)
		if err != nil {
			return fmt.Errorf("create job: %w", err)
		}
		return a.emit(created, func(w io.Writer) { a.jobDetail(w, &created) })
	})
	return cmd
}

func (a *app) jobUpdate() *cobra.Command {
	var f jobFlags
	cmd := &cobra.Command{
		Use:   "update ID [flags]",
		Short: "Change the fields given as flags and/or in --file; the rest stay as they are",
		Long: `Change the fields given as flags and/or in --file; the rest stay as they are.

The job is read first and written back conditionally on the version read,
so a concurrent change is reported (409) instead of overwritten.`,
		Example: `  xjob job update 7 --cron "0/30 * * * * ?" --param full
  xjob job get 7 -o json | jq '.executorTimeout = 60' | xjob job update 7 --file -`,
		Args: cobra.ExactArgs(1),
	}
	f.register(cmd)
	cmd.RunE = a.doID(func(ctx context.Context, c *adminclient.Client, id int64) error {
		j, err := c.JobGet(ctx, id)
		if err != nil {
			return fmt.Errorf("read job %d: %w", id, err)
		}
		changed, err := f.apply(a, cmd.Flags(), &j)
		if err != nil {
			return err
		}
		if !changed {
			return usagef("nothing to change: give fields as flags or with --file")
		}
		updated, err := c.JobUpdate(ctx, id, j)
		if err != nil {
			return fmt.Errorf("update job %d: %w", id, err)
		}
		return a.emit(updated, func(w io.Writer) { a.jobDetail(w, &updated) })
	})
	return cmd
}

func (a *app) jobList() *cobra.Command {
	var p adminclient.JobListParams
	var status string
	var all bool
	cmd := &cobra.Command{
		Use:   "list [flags]",
		Short: "List jobs, one page at a time (or --all)",
		Args:  noArgs,
	}
	fs := cmd.Flags()
	fs.Int64Var(&p.Group, "group", 0, "only jobs of this executor group id")
	fs.StringVar(&status, "status", "", "only started or stopped jobs")
	fs.StringVar(&p.Desc, "desc", "", "only jobs whose description contains this")
	fs.StringVar(&p.Handler, "handler", "", "only jobs whose handler contains this")
	fs.StringVar(&p.Author, "author", "", "only jobs whose author contains this")
	fs.StringVar(&p.Cursor, "cursor", "", "page cursor printed by the previous page")
	fs.IntVar(&p.Limit, "limit", 0, "page size (default: the server's)")
	fs.BoolVar(&all, "all", false, "follow the cursors and list every page")
	_ = cmd.RegisterFlagCompletionFunc("status", fixedCompletion("started,stopped"))
	cmd.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		if err := setStatusFilter(&p, status); err != nil {
			return err
		}
		page := adminclient.JobPage{Items: []xjob.Job{}}
		if all {
			for j, err := range c.JobListAll(ctx, p) {
				if err != nil {
					return fmt.Errorf("list jobs: %w", err)
				}
				page.Items = append(page.Items, j)
			}
		} else {
			var err error
			if page, err = c.JobList(ctx, p); err != nil {
				return fmt.Errorf("list jobs: %w", err)
			}
		}
		err := a.emit(page, func(w io.Writer) {
			row(w, "ID", "GROUP", "DESCRIPTION", "SCHEDULE", "HANDLER", "ROUTE", "STATUS", "NEXT FIRE")
			for i := range page.Items {
				j := &page.Items[i]
				row(w, itoa(j.ID), itoa(j.GroupID), oneLine(j.Description, 40), oneLine(scheduleText(j), 32),
					dash(j.Handler), string(j.RouteStrategy), statusText(j.TriggerStatus), a.ms(j.TriggerNextTime, tableTime))
			}
		})
		if err == nil && page.Next != "" && a.output == "table" {
			fmt.Fprintf(a.stderr, "More jobs: add --cursor %s (or --all).\n", page.Next)
		}
		return err
	})
	return cmd
}

func (a *app) jobGet() *cobra.Command {
	cmd := &cobra.Command{Use: "get ID", Aliases: []string{"show"}, Short: "Show one job", Args: cobra.ExactArgs(1)}
	cmd.RunE = a.doID(func(ctx context.Context, c *adminclient.Client, id int64) error {
		j, err := c.JobGet(ctx, id)
		if err != nil {
			return fmt.Errorf("get job %d: %w", id, err)
		}
		return a.emit(j, func(w io.Writer) { a.jobDetail(w, &j) })
	})
	return cmd
}

func (a *app) jobDelete() *cobra.Command {
	return a.jobBulk(xjob.ActionDelete, "Delete jobs", a.deleteOne("job", (*adminclient.Client).JobDelete))
}

// deleteCmd is "delete ID" for a noun whose client method del removes it.
func (a *app) deleteCmd(noun, short string, del func(*adminclient.Client, context.Context, int64) error) *cobra.Command {
	cmd := &cobra.Command{Use: "delete ID", Short: short, Args: cobra.ExactArgs(1)}
	cmd.RunE = a.doID(a.deleteOne(noun, del))
	return cmd
}

// deleteOne deletes one noun with del and says so.
func (a *app) deleteOne(noun string, del func(*adminclient.Client, context.Context, int64) error) func(context.Context, *adminclient.Client, int64) error {
	return func(ctx context.Context, c *adminclient.Client, id int64) error {
		if err := del(c, ctx, id); err != nil {
			return fmt.Errorf("delete %s %d: %w", noun, id, err)
		}
		return a.emit(map[string]any{"id": id, "deleted": true}, func(w io.Writer) {
			fmt.Fprintf(w, "Deleted %s %d.\n", noun, id)
		})
	}
}

func (a *app) jobStartStop(start bool) *cobra.Command {
	name, short := "stop", "Stop the scheduler firing jobs"
	if start {
		name, short = "start", "Let the scheduler fire jobs"
	}
	return a.jobBulk(name, short, func(ctx context.Context, c *adminclient.Client, id int64) error {
		call := c.JobStop
		if start {
			call = c.JobStart
		}
		j, err := call(ctx, id)
		if err != nil {
			return fmt.Errorf("%s job %d: %w", name, id, err)
		}
		return a.emit(j, func(w io.Writer) {
			if start {
				fmt.Fprintf(w, "Started job %d; next fire %s.\n", j.ID, a.ms(j.TriggerNextTime, detailTime))
			} else {
				fmt.Fprintf(w, "Stopped job %d.\n", j.ID)
			}
		})
	})
}

// jobBulk is a command acting on jobs named by ids or selected by filters:
// one id goes through the single-job request (one), several or a filter
// through POST /v1/bulk/jobs, 1000 at a time, with a line per job; the
// command fails if any job failed.
func (a *app) jobBulk(action, short string, one func(context.Context, *adminclient.Client, int64) error) *cobra.Command {
	var p adminclient.JobListParams
	var status string
	cmd := &cobra.Command{
		Use:     action + " ID... | " + action + " --group G [--handler H] [--desc D] [--author A] [--status S]",
		Short:   short + ", by id or by a filter",
		Example: "  xjob job " + action + " 7\n  xjob job " + action + " 7 8 9\n  xjob job " + action + " --group 2 --handler report",
		Args:    cobra.ArbitraryArgs,
	}
	fs := cmd.Flags()
	fs.Int64Var(&p.Group, "group", 0, "every job of this executor group id")
	fs.StringVar(&p.Handler, "handler", "", "every job whose handler contains this")
	fs.StringVar(&p.Desc, "desc", "", "every job whose description contains this")
	fs.StringVar(&p.Author, "author", "", "every job whose author contains this")
	fs.StringVar(&status, "status", "", "only started or stopped jobs (with a filter)")
	_ = cmd.RegisterFlagCompletionFunc("status", fixedCompletion("started,stopped"))
	cmd.RunE = a.do(func(ctx context.Context, c *adminclient.Client, args []string) error {
		filtered := p.Group != 0 || p.Handler != "" || p.Desc != "" || p.Author != "" || status != ""
		if len(args) > 0 && filtered {
			return usagef("give job ids or a filter, not both")
		}
		if len(args) == 0 && !filtered {
			return usagef("give job ids, or a filter such as --group")
		}
		if len(args) == 1 {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			return one(ctx, c, id)
		}
		ids := make([]int64, 0, len(args))
		for _, s := range args {
			id, err := parseID(s)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		if filtered {
			if err := setStatusFilter(&p, status); err != nil {
				return err
			}
			for j, err := range c.JobListAll(ctx, p) {
				if err != nil {
					return fmt.Errorf("list jobs: %w", err)
				}
				ids = append(ids, j.ID)
			}
		}
		results := []adminclient.BulkResult{}
		for len(ids) > 0 {
			n := min(len(ids), 1000)
			rs, err := c.JobBulk(ctx, action, ids[:n])
			if err != nil {
				return fmt.Errorf("%s jobs: %w", action, err)
			}
			results, ids = append(results, rs...), ids[n:]
		}
		failed := 0
		for _, r := range results {
			if r.Error != "" {
				failed++
			}
		}
		err := a.emit(map[string]any{"items": results}, func(w io.Writer) {
			row(w, "JOB", "RESULT")
			for _, r := range results {
				res := "ok"
				if r.Error != "" {
					res = fmt.Sprintf("failed (HTTP %d): %s", r.Status, r.Error)
				}
				row(w, itoa(r.ID), res)
			}
		})
		if err != nil {
			return err
		}
		if failed > 0 {
			return fmt.Errorf("%s: %d of %d jobs failed", action, failed, len(results))
		}
		if a.output == "table" {
			fmt.Fprintf(a.stderr, "%d jobs: %s done.\n", len(results), action)
		}
		return nil
	})
	return cmd
}

// setStatusFilter reads --status started|stopped into p.
func setStatusFilter(p *adminclient.JobListParams, status string) error {
	switch strings.ToLower(status) {
	case "":
	case "started", "running", "1":
		p.Status = new(xjob.StatusRunning)
	case "stopped", "stop", "0":
		p.Status = new(xjob.StatusStopped)
	default:
		return usagef("--status must be started or stopped, got %q", status)
	}
	return nil
}

func (a *app) jobTrigger() *cobra.Command {
	var param string
	var addresses []string
	var wait, follow bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "trigger ID [--param P] [--address URL]... [--wait | --follow] [--timeout DURATION]",
		Short: "Fire a job once now and print its log id; --wait for the result, --follow its executor log",
		Long: `Fire a job once now, optionally with another parameter or executor addresses,
and print the id of the trigger log it created (one per shard for a
SHARDING_BROADCAST job).

--wait waits for the result and sets the exit code from it (0 success, 1
failure); --follow also streams the executor log until the run ends. Ctrl-C
stops waiting (exit 130; the run goes on); --timeout gives up (exit 1).`,
		Example: `  xjob job trigger 7 --param "date=2026-01-01" --follow
  xjob job trigger 7 --address http://10.0.0.5:9999 --wait --timeout 10m`,
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().StringVar(&param, "param", "", "executor parameter for this run (default: the job's)")
	cmd.Flags().StringSliceVar(&addresses, "address", nil, "executor address(es) for this run, instead of routing")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the result; the exit code says whether the run succeeded")
	cmd.Flags().BoolVar(&follow, "follow", false, "stream the executor log until the run ends, then report the result")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --wait/--follow: give up after this long (0: no limit)")
	cmd.RunE = a.doID(func(ctx context.Context, c *adminclient.Client, id int64) error {
		if timeout < 0 {
			return usagef("--timeout must not be negative")
		}
		p := adminclient.TriggerParams{AddressList: addresses}
		if cmd.Flags().Changed("param") {
			p.ExecutorParam = &param
		}
		res, err := c.JobTrigger(ctx, id, p)
		if err != nil {
			return fmt.Errorf("trigger job %d: %w", id, err)
		}
		wctx, cancel := withTimeout(ctx, timeout)
		defer cancel()
		if !wait && !follow {
			// Only to name the log: a short wait, not the run's.
			var stop context.CancelFunc
			wctx, stop = context.WithTimeout(wctx, logAppearWait)
			defer stop()
		}
		logs, err := a.triggerLogs(wctx, c, res)
		if err != nil && (wait || follow) {
			return a.waitEnded(wctx, err, "the log of occurrence "+res.OccurrenceID, timeout)
		}
		out := triggerOutput{TriggerResult: res, LogIDs: []int64{}}
		for _, l := range logs {
			out.LogIDs = append(out.LogIDs, l.ID)
		}
		if !wait && !follow {
			return a.emit(out, func(w io.Writer) {
				if len(logs) == 0 {
					fmt.Fprintf(w, "Triggered job %d (occurrence %s); its log is not written yet: xjob log list --job %d\n",
						res.JobID, res.OccurrenceID, res.JobID)
					return
				}
				fmt.Fprintf(w, "Triggered job %d: log %s (occurrence %s). Follow it with: xjob log tail %d\n",
					res.JobID, joinIDs(out.LogIDs), res.OccurrenceID, out.LogIDs[0])
			})
		}
		a.note("Triggered job %d: log %s.", res.JobID, joinIDs(out.LogIDs))
		for i, l := range logs {
			if follow {
				if err := a.follow(wctx, c, l.ID, 1, 0); err != nil {
					return a.timedOut(wctx, err, l.ID, timeout)
				}
			}
			if logs[i], err = a.awaitResult(wctx, c, l.ID); err != nil {
				return a.timedOut(wctx, err, l.ID, timeout)
			}
		}
		out.Logs = logs
		failed := 0
		err = a.emit(out, func(w io.Writer) {
			for i := range logs {
				l := &logs[i]
				msg := l.HandleMsg
				if !l.Handled() {
					msg = l.TriggerMsg
				}
				fmt.Fprintf(w, "Log %d: %s  %s\n", l.ID, logState(l), oneLine(msg, 200))
			}
		})
		for i := range logs {
			if logState(&logs[i]) != "success" {
				failed++
			}
		}
		if err == nil && failed > 0 {
			err = exitCode(exitFailed)
		}
		return err
	})
	return cmd
}

// logAppearWait bounds how long a plain trigger waits to name its log.
const logAppearWait = 5 * time.Second

// logPoll is how often trigger polls for its log and its result.
const logPoll = 250 * time.Millisecond

// triggerOutput is what `job trigger` prints under -o json.
type triggerOutput struct {
	adminclient.TriggerResult
	LogIDs []int64    `json:"logIds"`
	Logs   []xjob.Log `json:"logs,omitempty"`
}

// triggerLogs waits for the trigger log(s) of a manual trigger: the one
// of its occurrence, or one per shard of a broadcast (…/s0, …/s1…).
func (a *app) triggerLogs(ctx context.Context, c *adminclient.Client, res adminclient.TriggerResult) ([]xjob.Log, error) {
	base := strings.TrimSuffix(res.OccurrenceID, "/s0") + "/s"
	for {
		page, err := c.LogList(ctx, adminclient.LogListParams{Job: res.JobID, Limit: 200})
		if err != nil {
			return nil, err
		}
		var found []xjob.Log
		for _, l := range page.Items {
			if l.OccurrenceID == res.OccurrenceID || strings.HasPrefix(l.OccurrenceID, base) {
				found = append(found, l)
			}
		}
		if len(found) > 0 {
			slices.SortFunc(found, func(x, y xjob.Log) int { return cmp.Compare(x.ID, y.ID) })
			return found, nil
		}
		if err := a.clock.SleepUntil(ctx, a.clock.Now().Add(logPoll)); err != nil {
			return nil, err
		}
	}
}

// awaitResult polls log id until it has a result, or its trigger failed.
func (a *app) awaitResult(ctx context.Context, c *adminclient.Client, id int64) (xjob.Log, error) {
	for {
		l, err := c.LogGet(ctx, id)
		if err != nil {
			return l, err
		}
		if l.Handled() || (l.Triggered() && l.TriggerCode != xjob.CodeSuccess) {
			return l, nil
		}
		if err := a.clock.SleepUntil(ctx, a.clock.Now().Add(logPoll)); err != nil {
			return l, err
		}
	}
}

// timedOut is waitEnded for a wait on log id; an exit code passes through.
func (a *app) timedOut(ctx context.Context, err error, id int64, timeout time.Duration) error {
	var code exitCode
	if errors.As(err, &code) {
		return err
	}
	return a.waitEnded(ctx, err, fmt.Sprintf("log %d", id), timeout)
}

func (a *app) jobNext() *cobra.Command {
	var n int
	cmd := &cobra.Command{Use: "next ID [-n N]", Short: "Show a job's next fire times", Args: cobra.ExactArgs(1)}
	cmd.Flags().IntVarP(&n, "count", "n", 5, "how many fire times")
	cmd.RunE = a.doID(func(ctx context.Context, c *adminclient.Client, id int64) error {
		if n < 1 || n > 1000 {
			return usagef("-n must be 1..1000, got %d", n)
		}
		times, err := c.JobNext(ctx, id, n)
		if err != nil {
			return fmt.Errorf("next fire times of job %d: %w", id, err)
		}
		list := make([]string, len(times))
		for i, t := range times {
			list[i] = t.Format(time.RFC3339)
		}
		return a.emit(map[string]any{"next": list}, func(w io.Writer) {
			if len(times) == 0 {
				fmt.Fprintln(w, "no future fire time")
			}
			for _, t := range times {
				fmt.Fprintln(w, t.In(a.loc).Format(detailTime))
			}
		})
	})
	return cmd
}

func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("%q is not an id (a positive number)", s)
	}
	return id, nil
}

func (a *app) jobDetail(w io.Writer, j *xjob.Job) {
	timeout := "none"
	if j.TimeoutSeconds > 0 {
		timeout = itoa(j.TimeoutSeconds) + "s"
	}
	schedule := scheduleText(j) + " (" + dash(j.TimeZone) + ")"
	switch j.ScheduleType {
	case xjob.ScheduleOnce:
		schedule = scheduleText(j) + ", then " + strings.ToLower(dash(string(j.AfterCompletion)))
	case xjob.ScheduleFixDelay:
		schedule = scheduleText(j) // counted from each run's end: no zone plays a part
	}
	detail(w, []field{
		{"ID", itoa(j.ID)},
		{"Name", dash(j.Name)},
		{"Group", itoa(j.GroupID)},
		{"Description", j.Description},
		{"Author", j.Author},
		{"Alarm e-mail", dash(j.AlarmEmail)},
		{"Schedule", schedule},
		{"Misfire", dash(string(j.MisfireStrategy))},
		{"Status", statusText(j.TriggerStatus)},
		{"Handler", dash(j.Handler)},
		{"Param", dash(j.Param)},
		{"Glue", dash(string(j.GlueType))},
		{"Route", dash(string(j.RouteStrategy))},
		{"Block", dash(string(j.BlockStrategy))},
		{"Timeout", timeout},
		{"Retries", itoa(j.FailRetryCount)},
		{"Children", joinIDs(j.ChildJobIDs)},
		{"Last fire", a.ms(j.TriggerLastTime, detailTime)},
		{"Next fire", a.ms(j.TriggerNextTime, detailTime)},
		{"Declared", declaredText(j)},
		{"Version", itoa(j.Version)},
		{"Created", a.ms(j.CreatedAt, detailTime)},
		{"Updated", a.ms(j.UpdatedAt, detailTime)},
	})
}

// declaredText says whether an executor declared the job and where the
// job now differs from the declaration (the admin never applies a
// declaration to a job that exists: the differences are people's edits or
// declarations made since).
func declaredText(j *xjob.Job) string {
	if j.Declared == "" {
		return "-"
	}
	if d := j.DeclarationDiff(); len(d) > 0 {
		return "by its executor; current differs in " + strings.Join(d, ", ") + " (the job keeps its values)"
	}
	return "by its executor; matches"
}

// targetFlags are the flags that edit an HTTP job's spec.
var targetFlags = []string{"url", "method", "header", "secret-header", "secret-header-env", "body", "success-codes"}

// applyTarget merges the HTTP flags that were set into j's spec (its GLUE
// source, as the server showed it: secret headers as references, which
// keep the stored values). A header flag names every header of its kind:
// the ones it leaves out are removed.
func (f *jobFlags) applyTarget(a *app, fs *pflag.FlagSet, j *xjob.Job) (bool, error) {
	changed := false
	for _, name := range targetFlags {
		changed = changed || fs.Changed(name)
	}
	if !changed {
		return false, nil
	}
	if j.GlueType == "" {
		j.GlueType = xjob.GlueHTTP
	}
	if j.GlueType != xjob.GlueHTTP {
		return false, usagef("--url, --header, --body… describe an HTTP job (--type HTTP), not a %s job", j.GlueType)
	}
	var spec target.Spec
	if strings.TrimSpace(j.GlueSource) != "" {
		if err := json.Unmarshal([]byte(j.GlueSource), &spec); err != nil {
			return false, usagef("the job's target spec: %v", err)
		}
	}
	if fs.Changed("url") {
		spec.URL = f.url
	}
	if fs.Changed("method") {
		spec.Method = strings.ToUpper(f.method)
	}
	if fs.Changed("body") {
		spec.Body = f.body
	}
	if fs.Changed("success-codes") {
		spec.SuccessCodes = f.successCodes
	}
	if fs.Changed("header") {
		h, err := headerFlags(a.getenv, "--header", f.headers, nil)
		if err != nil {
			return false, err
		}
		spec.Headers = h
	}
	if fs.Changed("secret-header") || fs.Changed("secret-header-env") {
		h, err := headerFlags(a.getenv, "--secret-header", f.secretHeaders, nil)
		if err != nil {
			return false, err
		}
		if h, err = headerFlags(a.getenv, "--secret-header-env", f.secretHeaderEnv, h); err != nil {
			return false, err
		}
		spec.SecretHeaders = h
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return false, fmt.Errorf("target spec: %w", err)
	}
	j.GlueSource = string(b)
	return true, nil
}

// awsTargetFlags are the flags that edit an AWS job's spec.
var awsTargetFlags = []string{"arn", "input", "invocation-type", "message-group-id", "subject", "event-source", "detail-type"}

// applyAWSTarget merges the AWS flags that were set into j's spec; the
// server checks it (and that the ARN is one it allows).
func (f *jobFlags) applyAWSTarget(fs *pflag.FlagSet, j *xjob.Job) (bool, error) {
	changed := false
	for _, name := range awsTargetFlags {
		changed = changed || fs.Changed(name)
	}
	if !changed {
		return false, nil
	}
	if j.GlueType == "" {
		j.GlueType = xjob.GlueAWS
	}
	if j.GlueType != xjob.GlueAWS {
		return false, usagef("--arn, --input… describe an AWS job (--type AWS), not a %s job", j.GlueType)
	}
	var spec target.AWSSpec
	if strings.TrimSpace(j.GlueSource) != "" {
		if err := json.Unmarshal([]byte(j.GlueSource), &spec); err != nil {
			return false, usagef("the job's target spec: %v", err)
		}
	}
	for _, s := range []struct {
		flag string
		val  string
		dst  *string
	}{{"arn", f.arn, &spec.ARN}, {"input", f.input, &spec.Input}, {"invocation-type", f.invocationType, &spec.InvocationType},
		{"message-group-id", f.messageGroupID, &spec.MessageGroupID}, {"subject", f.subject, &spec.Subject},
		{"event-source", f.eventSource, &spec.Source}, {"detail-type", f.detailType, &spec.DetailType}} {
		if fs.Changed(s.flag) {
			*s.dst = s.val
		}
	}
	j.GlueSource = spec.Canonical()
	return true, nil
}

// headerFlags reads "Name: value" flags into into; for
// --secret-header-env, "Name=VAR" flags whose value is environment
// variable VAR's (so that the secret is in neither the shell's history nor
// the process list).
func headerFlags(getenv func(string) string, flag string, vals []string, into map[string]string) (map[string]string, error) {
	if into == nil {
		into = map[string]string{}
	}
	fromEnv := flag == "--secret-header-env"
	for _, v := range vals {
		sep, want := ":", "Name: value"
		if fromEnv {
			sep, want = "=", "Name=VAR"
		}
		name, val, ok := strings.Cut(v, sep)
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" {
			return nil, usagef("%s %q: want %s", flag, v, want)
		}
		if fromEnv {
			env := val
			if val = getenv(env); val == "" {
				return nil, usagef("%s %s: environment variable %s is not set", flag, name, env)
			}
		}
		if _, dup := into[name]; dup {
			return nil, usagef("%s: header %s is given twice", flag, name)
		}
		into[name] = val
	}
	return into, nil
}
