package cli

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/spf13/cobra"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/internal/xxlimport"
	"github.com/xjobdev/xjob/pkg/adminclient"
)

func (a *app) importCommand() *cobra.Command {
	cmd := parentCommand("import", "Import groups and jobs from another scheduler")
	var dsn, tz, prefix, logsSince string
	var keep, dry, overwrite bool
	var offset int64
	sub := &cobra.Command{
		Use:   "xxl-job --mysql DSN --tz ZONE [--keep-status] [--prefix NAME --id-offset N] [--dry-run]",
		Short: "Import an xxl-job 2.3–3.4 database (groups and jobs, job ids kept) through the admin API",
		Long: `Import an xxl-job 2.3–3.4 database through the admin API (so it works against
xjob local and xjob on AWS alike).

Executor groups and jobs are read from xxl_job_group and xxl_job_info and
applied as a manifest: job ids are kept (executors and people know jobs by id),
each job is named xxl-job-<id>, and cron expressions are evaluated in --tz,
the zone the xxl-job admin ran in (asked for when not given and a terminal is
at hand). Jobs arrive stopped unless --keep-status: stop them in xxl-job
first, so that no fire runs twice. The whole import is checked first and
written as one unit; what is not carried over is listed, with why. GLUE
versions come along.

Running the import again writes only what changed in xxl-job since the
last import; what was changed in xjob since (a job started or stopped, a
field edited) stays, and the plan says so (--overwrite takes xxl-job's
side). A second xxl-job database is imported beside the first with
--prefix and --id-offset.`,
		Example: `  xjob import xxl-job --mysql 'user:pass@tcp(10.0.0.9:3306)/xxl_job' --tz Asia/Shanghai --dry-run
  xjob import xxl-job --mysql 'user:pass@tcp(10.0.0.9:3306)/xxl_job' --tz Asia/Shanghai`,
		Args: noArgs,
	}
	sub.Flags().StringVar(&dsn, "mysql", "", "xxl-job database, as a Go MySQL DSN: user:pass@tcp(host:3306)/xxl_job")
	sub.Flags().StringVar(&tz, "tz", "", "IANA time zone the xxl-job admin ran in, e.g. Asia/Shanghai")
	sub.Flags().BoolVar(&keep, "keep-status", false, "import running jobs started (default: every job stopped)")
	sub.Flags().BoolVar(&dry, "dry-run", false, "print what would be imported, write nothing")
	sub.Flags().BoolVar(&overwrite, "overwrite", false, "take xxl-job's value of every field, even one changed in xjob since the last import")
	sub.Flags().StringVar(&prefix, "prefix", "xxl-job", "name the jobs PREFIX-<id>")
	sub.Flags().Int64Var(&offset, "id-offset", 0, "add this to every job id (a second database beside the first)")
	sub.Flags().StringVar(&logsSince, "logs", "", "also carry over trigger logs and report days since `SINCE` (yyyy-mm-dd, or an age such as 30d)")
	_ = sub.MarkFlagRequired("mysql")
	sub.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return usagef("--mysql: %v", err)
		}
		if offset < 0 || offset > 1<<30 {
			return usagef("--id-offset must be 0 to %d", 1<<30)
		}
		var since time.Time
		if logsSince != "" {
			if since, err = parseSince(logsSince, a.clock.Now()); err != nil {
				return usagef("--logs: %v", err)
			}
		}
		zone, err := a.askZone(tz)
		if err != nil {
			return err
		}
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			return usagef("--mysql: %v", err)
		}
		defer db.Close()
		rows, err := xxlimport.Read(ctx, db)
		if err != nil {
			return err
		}
		opt := xxlimport.Options{TimeZone: zone, KeepStatus: keep, Prefix: prefix, IDOffset: offset, WithHistory: logsSince != ""}
		res, err := xxlimport.Map(rows, opt)
		if err != nil {
			return usagef("%v", err)
		}
		origin := "xxl-job " + cfg.Addr + "/" + cfg.DBName
		if err := a.importManifest(ctx, c, res, importParams{keep: keep, dry: dry, overwrite: overwrite, origin: origin}); err != nil {
			return err
		}
		if logsSince == "" {
			return nil
		}
		h, err := xxlimport.ReadHistory(ctx, db, since, res, opt, cfg.Addr+"/"+cfg.DBName)
		if err != nil {
			return err
		}
		return a.importHistory(ctx, c, h, res.Apps, since, dry)
	})
	cmd.AddCommand(sub)
	return cmd
}

// askZone returns --tz, or asks for it on a terminal.
func (a *app) askZone(tz string) (string, error) {
	if tz == "" {
		f, ok := a.stdin.(*os.File)
		if !ok || !isTerminal(f) {
			return "", usagef("--tz is required: the IANA time zone the xxl-job admin ran in (its cron expressions were evaluated there)")
		}
		fmt.Fprint(a.stderr, "Which time zone did the xxl-job admin run in (IANA name, e.g. Asia/Shanghai)? ")
		line, _ := bufio.NewReader(f).ReadString('\n')
		tz = strings.TrimSpace(line)
		if tz == "" {
			return "", usagef("no time zone given: pass --tz, the IANA time zone the xxl-job admin ran in")
		}
	}
	if _, err := time.LoadLocation(tz); err != nil || tz == "" || tz == "Local" {
		return "", usagef("--tz %q is not an IANA time zone", tz)
	}
	return tz, nil
}

// isTerminal reports whether f is a terminal a person can answer on: a
// character device other than the null device (stdin redirected from
// /dev/null, as under cron or CI, is a character device too).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
}

// importUsers carries xxl-job's users over with their password hashes
// and their group rights (by app name, to the ids the groups have here).
func (a *app) importUsers(ctx context.Context, c *adminclient.Client, users []xxlimport.User, dry bool) (adminclient.ImportUsersResult, []string, error) {
	res := adminclient.ImportUsersResult{Created: []string{}, Skipped: []string{}}
	if len(users) == 0 {
		return res, nil, nil
	}
	var notes []string
	appID := map[string]int64{}
	if !dry {
		have, err := c.Export(ctx)
		if err != nil {
			return res, nil, fmt.Errorf("import users: %w", err)
		}
		for _, g := range have.Groups {
			appID[g.AppName] = g.ID
		}
	}
	var in []adminclient.ImportedUser
	for _, u := range users {
		if !xjob.ValidUsername(u.Username) {
			notes = append(notes, fmt.Sprintf("user %s: not carried over: the username is not one xjob accepts (4 to 20 characters: a lower-case letter, then lower-case letters or digits)", u.Username))
			continue
		}
		hash, ok := auth.LegacyHash(u.Password)
		if !ok {
			notes = append(notes, fmt.Sprintf("user %s: not carried over: its password is not an MD5 or SHA-256 digest", u.Username))
			continue
		}
		iu := adminclient.ImportedUser{Username: u.Username, PasswordHash: hash, Role: xjob.RoleNormal, GroupIDs: []int64{}}
		if u.Admin {
			iu.Role = xjob.RoleAdmin
		}
		for _, app := range u.Apps {
			if id, ok := appID[app]; ok {
				iu.GroupIDs = append(iu.GroupIDs, id)
			}
		}
		in = append(in, iu)
	}
	if dry {
		for _, u := range in {
			res.Created = append(res.Created, u.Username)
		}
		return res, notes, nil
	}
	if len(in) == 0 {
		return res, notes, nil
	}
	out, err := c.ImportUsers(ctx, in)
	if apiErr, ok := adminclient.AsAPIError(err); ok && apiErr.Status == http.StatusNotFound {
		return res, append(notes, "xxl_job_user: users not carried over: this server serves no users (no console sign-in)"), nil
	}
	if err != nil {
		return res, notes, fmt.Errorf("import users: %w", err)
	}
	return out, notes, nil
}

// parseSince reads --logs: a day (yyyy-mm-dd, in the local zone) or an
// age in days (30d) or as a Go duration (720h) before now.
func parseSince(v string, now time.Time) (time.Time, error) {
	if t, err := time.ParseInLocation(time.DateOnly, v, now.Location()); err == nil {
		return t, nil
	}
	if d, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither a day (2024-01-31) nor an age (30d, 720h)", v)
}

// importHistory carries logs and report days over, in requests under the
// API's body limit (each can be sent again: what is stored is kept).
func (a *app) importHistory(ctx context.Context, c *adminclient.Client, h xxlimport.History, apps map[int64]string,
	since time.Time, dry bool) error {
	if dry {
		return a.emit(map[string]int{"logs": len(h.Logs), "days": len(h.Days)}, func(w io.Writer) {
			fmt.Fprintf(w, "History: %d trigger logs and %d report days since %s to carry over.\n", len(h.Logs), len(h.Days),
				since.Format(time.DateOnly))
		})
	}
	have, err := c.Export(ctx)
	if err != nil {
		return fmt.Errorf("import logs: %w", err)
	}
	appID := map[string]int64{}
	for _, g := range have.Groups {
		appID[g.AppName] = g.ID
	}
	for i := range h.Logs {
		h.Logs[i].GroupID = appID[apps[h.Logs[i].GroupID]]
	}
	var total adminclient.HistoryResult
	send := func(part adminclient.History) error {
		r, err := c.ImportHistory(ctx, part)
		if err != nil {
			return fmt.Errorf("import logs: %w", err)
		}
		total.LogsCreated += r.LogsCreated
		total.LogsKept += r.LogsKept
		total.DaysAdded += r.DaysAdded
		total.DaysKept += r.DaysKept
		return nil
	}
	var part adminclient.History
	size := 0
	for _, l := range h.Logs {
		b, _ := json.Marshal(l)
		if len(part.Logs) > 0 && (size+len(b) > historyChunkBytes || len(part.Logs) >= 1000) {
			if err := send(part); err != nil {
				return err
			}
			part, size = adminclient.History{}, 0
		}
		part.Logs, size = append(part.Logs, l), size+len(b)
	}
	part.Days = h.Days
	if err := send(part); err != nil {
		return err
	}
	return a.emit(total, func(w io.Writer) {
		fmt.Fprintf(w, "History since %s: %d trigger logs carried over (%d already here), %d report days added (%d already had counts, kept).\n",
			since.Format(time.DateOnly), total.LogsCreated, total.LogsKept, total.DaysAdded, total.DaysKept)
	})
}

// historyChunkBytes bounds the logs of one history request, under the
// API's 1 MiB body limit.
const historyChunkBytes = 700 << 10

type importParams struct {
	keep, dry, overwrite bool
	origin               string
}

// importManifest applies an import as one manifest, written as one unit:
// a group whose id is taken here gets a new one first.
func (a *app) importManifest(ctx context.Context, c *adminclient.Client, res xxlimport.Result, ip importParams) error {
	have, err := c.Export(ctx)
	if err != nil {
		return fmt.Errorf("read the server's groups and jobs: %w", err)
	}
	notes := res.Unmapped
	groupApp := map[int64]string{}
	for _, g := range have.Groups {
		groupApp[g.ID] = g.AppName
	}
	for i := range res.Manifest.Groups {
		g := &res.Manifest.Groups[i]
		if app, taken := groupApp[g.ID]; taken && app != g.AppName {
			notes = append(notes, fmt.Sprintf("group %d (%s): id taken by group %q here; it gets a new id (jobs find it by app name)", g.ID, g.AppName, app))
			g.ID = 0
		}
	}
	r, err := c.Apply(ctx, res.Manifest, adminclient.ApplyParams{DryRun: ip.dry, Overwrite: ip.overwrite, Origin: ip.origin})
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	users, userNotes, err := a.importUsers(ctx, c, res.Users, ip.dry)
	if err != nil {
		return err
	}
	notes = append(notes, userNotes...)
	out := struct {
		xjob.ApplyResult
		Unmapped []string                      `json:"unmapped"`
		Running  []int64                       `json:"runningInXxlJob"`
		Users    adminclient.ImportUsersResult `json:"users"`
	}{r, notes, res.Running, users}
	if out.Unmapped == nil {
		out.Unmapped = []string{}
	}
	return a.emit(out, func(w io.Writer) {
		title := "Imported"
		if ip.dry {
			title = "Plan (dry run)"
		}
		printPlan(w, out.ApplyResult, title)
		if len(notes) > 0 {
			fmt.Fprintf(w, "Not carried over or changed (%d):\n", len(notes))
			for _, n := range notes {
				fmt.Fprintf(w, "  %s\n", n)
			}
		}
		switch {
		case ip.dry:
			fmt.Fprintf(w, "Users: %d to carry over with their old passwords (re-hashed with argon2id at their first sign-in).\n", len(users.Created))
		case len(res.Users) > 0:
			fmt.Fprintf(w, "Users: %d carried over with their old passwords (re-hashed with argon2id at their first sign-in), %d already here (kept).\n",
				len(users.Created), len(users.Skipped))
		}
		ids := make([]string, len(res.Running))
		for i, id := range res.Running {
			ids[i] = itoa(id)
		}
		if ip.keep {
			fmt.Fprintf(w, "Status: --keep-status: the %d jobs running in xxl-job are started here, unless started or stopped in xjob since the last import; make sure the old admin no longer fires them.\n", len(ids))
			return
		}
		fmt.Fprintf(w, "Status: jobs arrive stopped (the default; --keep-status starts the %d running in xxl-job); a job started or stopped in xjob since the last import keeps its state.\n", len(ids))
		if len(ids) > 0 {
			fmt.Fprintf(w, "%d jobs were running in xxl-job and arrived stopped. Stop them there, then: xjob job start %s\n",
				len(ids), strings.Join(ids, " "))
		}
	})
}
