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
last import; what was changed in xjob since (a field edited) stays, and
the plan says so (--overwrite takes xxl-job's side). The import never
starts or stops a job that was started or stopped in xjob, --overwrite
included. A second xxl-job database is imported beside the first with
--prefix and --id-offset: its jobs get their own names and ids, and a
group whose app name the first database's jobs use gets its own group,
named PREFIX-<appname> (its executors register under that name), so
that neither database's users see the other's jobs.`,
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
		ip := importParams{keep: keep, dry: dry, overwrite: overwrite, origin: origin,
			beside: prefix != "xxl-job" || offset != 0, prefix: prefix}
		if err := a.importManifest(ctx, c, &res, ip); err != nil {
			return err
		}
		if logsSince == "" {
			return nil
		}
		h, err := xxlimport.ReadHistory(ctx, db, since, res, opt, cfg.Addr+"/"+cfg.DBName)
		if err != nil {
			return err
		}
		return a.importHistory(ctx, c, h, res.Apps, since, dry, origin)
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
			notes = append(notes, fmt.Sprintf("user %q: not carried over: the username is not one xjob accepts (4 to 20 characters: letters, digits, '.', '_', '-' or '@')", u.Username))
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
		// What the server has already is kept: say so now, as the
		// import would.
		have, err := c.UserList(ctx)
		if apiErr, ok := adminclient.AsAPIError(err); ok && apiErr.Status == http.StatusNotFound {
			return res, append(notes, "xxl_job_user: users not carried over: this server serves no users (no console sign-in)"), nil
		}
		if err != nil {
			return res, notes, fmt.Errorf("import users: %w", err)
		}
		taken := map[string]bool{}
		for _, u := range have {
			taken[u.Username] = true
		}
		for _, u := range in {
			if taken[u.Username] {
				res.Skipped = append(res.Skipped, u.Username)
			} else {
				res.Created = append(res.Created, u.Username)
			}
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
	since time.Time, dry bool, origin string) error {
	notes := func(w io.Writer) {
		for _, n := range h.Unmapped {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	if h.Unmapped == nil {
		h.Unmapped = []string{}
	}
	if dry {
		out := struct {
			Logs     int      `json:"logs"`
			Days     int      `json:"days"`
			Unmapped []string `json:"unmapped"`
		}{len(h.Logs), len(h.Days), h.Unmapped}
		return a.emit(out, func(w io.Writer) {
			fmt.Fprintf(w, "History: %d trigger logs and %d report days since %s to carry over.\n", len(h.Logs), len(h.Days),
				since.Format(time.DateOnly))
			notes(w)
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
	part.Days, part.Origin = h.Days, origin
	if err := send(part); err != nil {
		return err
	}
	out := struct {
		adminclient.HistoryResult
		Unmapped []string `json:"unmapped"`
	}{total, h.Unmapped}
	return a.emit(out, func(w io.Writer) {
		fmt.Fprintf(w, "History since %s: %d trigger logs carried over (%d already here), %d report days added or updated (%d carried over already).\n",
			since.Format(time.DateOnly), total.LogsCreated, total.LogsKept, total.DaysAdded, total.DaysKept)
		notes(w)
	})
}

// historyChunkBytes bounds the logs of one history request, under the
// API's 1 MiB body limit.
const historyChunkBytes = 700 << 10

type importParams struct {
	keep, dry, overwrite bool
	origin               string
	// beside: a database imported beside another (--prefix or
	// --id-offset), whose groups must not merge with the other's.
	beside bool
	prefix string
}

// placeGroups keeps each database's groups apart when it is imported
// beside another: a group whose app name is taken here by a group that
// holds none of this import's jobs — the other database's, or one made in
// xjob — is imported as PREFIX-<appname>, so that its jobs, rights and
// executors do not mix with the other's. Without --prefix or --id-offset
// an import joins the groups it finds (a first import into a server where
// the groups were made by hand). It returns a note per renamed group.
func placeGroups(res *xxlimport.Result, have xjob.Manifest, ip importParams) ([]string, error) {
	if !ip.beside {
		return nil, nil
	}
	ours := map[string]bool{}
	for _, j := range res.Manifest.Jobs {
		ours[j.Name] = true
	}
	haveApp, holdsOurs := map[string]bool{}, map[string]bool{}
	for _, g := range have.Groups {
		haveApp[g.AppName] = true
	}
	for _, j := range have.Jobs {
		if ours[j.Name] {
			holdsOurs[j.Group] = true
		}
	}
	rename := map[string]string{}
	var notes []string
	for i := range res.Manifest.Groups {
		g := &res.Manifest.Groups[i]
		beside := ip.prefix + "-" + g.AppName
		switch {
		case haveApp[beside]: // placed beside by an earlier import
		case !haveApp[g.AppName] || holdsOurs[g.AppName]:
			continue
		default:
			notes = append(notes, fmt.Sprintf("group %d (%s): app name taken here by another database's group; imported beside as %s: "+
				"point its executors at xjob with that app name (xxl.job.executor.appname)", g.ID, g.AppName, beside))
		}
		check := xjob.Group{AppName: beside, Title: g.Title, AddressType: g.AddressType, AddressList: g.AddressList}
		if err := check.Validate(); err != nil {
			return nil, usagef("group %s would be imported beside another as %s, which xjob refuses (%v): choose a shorter --prefix",
				g.AppName, beside, err)
		}
		rename[g.AppName] = beside
		g.AppName = beside
	}
	for i := range res.Manifest.Jobs {
		if n, ok := rename[res.Manifest.Jobs[i].Group]; ok {
			res.Manifest.Jobs[i].Group = n
		}
	}
	for id, app := range res.Apps {
		if n, ok := rename[app]; ok {
			res.Apps[id] = n
		}
	}
	for i := range res.Users {
		for k, app := range res.Users[i].Apps {
			if n, ok := rename[app]; ok {
				res.Users[i].Apps[k] = n
			}
		}
	}
	return notes, nil
}

// stoppedHere lists, of the jobs running in xxl-job, those that will be
// stopped in xjob once the import is written: created stopped, or stopped
// here and left so. A job the import finds started stays started.
func stoppedHere(res *xxlimport.Result, have xjob.Manifest, r xjob.ApplyResult) []int64 {
	started := map[int64]bool{}
	for _, j := range have.Jobs {
		started[j.ID] = j.Started
	}
	spec := map[string]xjob.JobSpec{}
	for _, j := range res.Manifest.Jobs {
		spec[j.Key()] = j
	}
	for _, it := range r.Plan {
		if it.Kind != "job" {
			continue
		}
		switch it.Action {
		case xjob.ActionCreate:
			started[it.ID] = spec[it.Key].Started
		case xjob.ActionUpdate:
			for _, d := range it.Diffs {
				if d.Field == "started" {
					started[it.ID] = d.New == "true"
				}
			}
		}
	}
	var out []int64
	for _, id := range res.Running {
		if !started[id] {
			out = append(out, id)
		}
	}
	return out
}

// importManifest applies an import as one manifest, written as one unit:
// a group whose id is taken here gets a new one first, and a group of a
// database imported beside another is placed apart (placeGroups).
func (a *app) importManifest(ctx context.Context, c *adminclient.Client, res *xxlimport.Result, ip importParams) error {
	have, err := c.Export(ctx)
	if err != nil {
		return fmt.Errorf("read the server's groups and jobs: %w", err)
	}
	notes := res.Unmapped
	placed, err := placeGroups(res, have, ip)
	if err != nil {
		return err
	}
	notes = append(notes, placed...)
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
	r, err := c.Apply(ctx, res.Manifest, adminclient.ApplyParams{DryRun: ip.dry, Overwrite: ip.overwrite, KeepStarted: true, Origin: ip.origin})
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	users, userNotes, err := a.importUsers(ctx, c, res.Users, ip.dry)
	if err != nil {
		return err
	}
	notes = append(notes, userNotes...)
	stopped := stoppedHere(res, have, r)
	out := struct {
		xjob.ApplyResult
		Unmapped []string                      `json:"unmapped"`
		Running  []int64                       `json:"runningInXxlJob"`
		Stopped  []int64                       `json:"runningInXxlJobStoppedHere"`
		Users    adminclient.ImportUsersResult `json:"users"`
	}{r, notes, res.Running, stopped, users}
	if out.Unmapped == nil {
		out.Unmapped = []string{}
	}
	if out.Running == nil {
		out.Running = []int64{}
	}
	if out.Stopped == nil {
		out.Stopped = []int64{}
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
		if len(res.Users) > 0 {
			verb, done := "carried over", "already here (kept)"
			if ip.dry {
				verb, done = "to carry over", "already here (to keep)"
			}
			fmt.Fprintf(w, "Users: %d %s with their old passwords (re-hashed with argon2id at their first sign-in), %d %s.\n",
				len(users.Created), verb, len(users.Skipped), done)
		}
		if ip.keep {
			fmt.Fprintf(w, "Status: --keep-status: the %d jobs running in xxl-job are started here, except those stopped in xjob since the last import; make sure the old admin no longer fires them.\n", len(res.Running))
		} else {
			fmt.Fprintf(w, "Status: new jobs arrive stopped (the default; --keep-status starts the %d running in xxl-job); the import never starts or stops a job that is here already, --overwrite included.\n", len(res.Running))
		}
		if len(stopped) > 0 {
			ids := make([]string, len(stopped))
			for i, id := range stopped {
				ids[i] = itoa(id)
			}
			fmt.Fprintf(w, "%d jobs run in xxl-job and are stopped here. Stop them there, then: xjob job start %s\n",
				len(ids), strings.Join(ids, " "))
		}
	})
}
