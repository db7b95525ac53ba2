package cli

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/spf13/cobra"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/adminclient"
	"github.com/xjobdev/xjob/internal/xxlimport"
)

// importChunkBytes bounds the JSON of one apply request of an import,
// under the API's 1 MiB body limit.
const importChunkBytes = 768 << 10

func (a *app) importCommand() *cobra.Command {
	cmd := parentCommand("import", "Import groups and jobs from another scheduler")
	var dsn, tz string
	var keep, dry bool
	sub := &cobra.Command{
		Use:   "xxl-job --mysql DSN --tz ZONE [--keep-status] [--dry-run]",
		Short: "Import an xxl-job 2.3–3.4 database (groups and jobs, job ids kept) through the admin API",
		Long: `Import an xxl-job 2.3–3.4 database through the admin API (so it works against
xjob local and xjob on AWS alike).

Executor groups and jobs are read from xxl_job_group and xxl_job_info and
applied as a manifest: job ids are kept (executors and people know jobs by id),
each job is named xxl-job-<id>, and cron expressions are evaluated in --tz,
the zone the xxl-job admin ran in (asked for when not given and a terminal is
at hand). Jobs arrive stopped unless --keep-status: stop them in xxl-job
first, so that no fire runs twice. What cannot be mapped is printed. Running
the import again changes nothing that is already imported.`,
		Example: `  xjob import xxl-job --mysql 'user:pass@tcp(10.0.0.9:3306)/xxl_job' --tz Asia/Shanghai --dry-run
  xjob import xxl-job --mysql 'user:pass@tcp(10.0.0.9:3306)/xxl_job' --tz Asia/Shanghai`,
		Args: noArgs,
	}
	sub.Flags().StringVar(&dsn, "mysql", "", "xxl-job database, as a Go MySQL DSN: user:pass@tcp(host:3306)/xxl_job")
	sub.Flags().StringVar(&tz, "tz", "", "IANA time zone the xxl-job admin ran in, e.g. Asia/Shanghai")
	sub.Flags().BoolVar(&keep, "keep-status", false, "import running jobs started (default: every job stopped)")
	sub.Flags().BoolVar(&dry, "dry-run", false, "print what would be imported, write nothing")
	_ = sub.MarkFlagRequired("mysql")
	sub.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		zone, err := a.askZone(tz)
		if err != nil {
			return err
		}
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return usagef("--mysql: %v", err)
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
		res, err := xxlimport.Map(rows, xxlimport.Options{TimeZone: zone, KeepStatus: keep})
		if err != nil {
			return usagef("%v", err)
		}
		return a.importManifest(ctx, c, res, keep, dry)
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
	}
	if _, err := time.LoadLocation(tz); err != nil || tz == "" || tz == "Local" {
		return "", usagef("--tz %q is not an IANA time zone", tz)
	}
	return tz, nil
}

func allOf(names []string, set map[string]bool) bool {
	for _, n := range names {
		if !set[n] {
			return false
		}
	}
	return true
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// importManifest applies an import: ids checked against the server first,
// then groups and jobs without children, then the children, in requests
// under the API's body limit.
func (a *app) importManifest(ctx context.Context, c *adminclient.Client, res xxlimport.Result, keep, dry bool) error {
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
	jobName := map[int64]string{}
	for _, j := range have.Jobs {
		jobName[j.ID] = j.Name
	}
	var clash []string
	for _, j := range res.Manifest.Jobs {
		if name, taken := jobName[j.ID]; taken && name != j.Name {
			clash = append(clash, fmt.Sprintf("%d", j.ID))
		}
	}
	if len(clash) > 0 {
		return fmt.Errorf("job ids %s are taken by other jobs on %s; import into an empty xjob (job ids are kept)",
			strings.Join(clash, ", "), a.server)
	}

	var plan []xjob.PlanItem
	var unchanged int
	seen := map[string]bool{}
	applyAll := func(jobs []xjob.JobSpec) error {
		for _, chunk := range chunkJobs(jobs, res.Manifest.Groups) {
			r, err := c.Apply(ctx, xjob.Manifest{Groups: res.Manifest.Groups, Jobs: chunk}, adminclient.ApplyParams{DryRun: dry})
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			for _, it := range r.Plan {
				if k := it.Kind + " " + it.Key; !seen[k] {
					seen[k] = true
					plan = append(plan, it)
				}
			}
		}
		return nil
	}
	// A job whose children are not all on the server yet is created
	// without them first, and given them once every job exists.
	onServer := map[string]bool{}
	for _, j := range have.Jobs {
		onServer[j.Name] = true
	}
	bare := make([]xjob.JobSpec, len(res.Manifest.Jobs))
	var withChildren []xjob.JobSpec
	for i, j := range res.Manifest.Jobs {
		bare[i] = j
		if !allOf(j.Children, onServer) {
			bare[i].Children = nil
			withChildren = append(withChildren, j)
		}
	}
	if err := applyAll(bare); err != nil {
		return err
	}
	if !dry && len(withChildren) > 0 {
		if err := applyAll(withChildren); err != nil {
			return err
		}
	}
	unchanged = len(res.Manifest.Groups) + len(res.Manifest.Jobs) - len(plan)
	out := struct {
		xjob.ApplyResult
		Unmapped []string `json:"unmapped"`
		Running  []int64  `json:"runningInXxlJob"`
	}{xjob.ApplyResult{Plan: plan, Unchanged: unchanged, DryRun: dry}, notes, res.Running}
	if out.Unmapped == nil {
		out.Unmapped = []string{}
	}
	return a.emit(out, func(w io.Writer) {
		title := "Imported"
		if dry {
			title = "Plan (dry run; child jobs are set in a second step)"
		}
		printPlan(w, out.ApplyResult, title)
		if len(notes) > 0 {
			fmt.Fprintf(w, "Could not map (%d):\n", len(notes))
			for _, n := range notes {
				fmt.Fprintf(w, "  %s\n", n)
			}
		}
		if len(res.Running) > 0 {
			ids := make([]string, len(res.Running))
			for i, id := range res.Running {
				ids[i] = itoa(id)
			}
			if keep {
				fmt.Fprintf(w, "%d jobs were running in xxl-job and are started here: make sure the old admin is stopped.\n", len(ids))
			} else {
				fmt.Fprintf(w, "%d jobs were running in xxl-job and arrived stopped. Stop them there, then: xjob job start %s\n",
					len(ids), strings.Join(ids, " "))
			}
		}
	})
}

// chunkJobs splits jobs into lists whose manifest (with groups) stays
// under importChunkBytes.
func chunkJobs(jobs []xjob.JobSpec, groups []xjob.GroupSpec) [][]xjob.JobSpec {
	base, _ := json.Marshal(groups)
	var out [][]xjob.JobSpec
	var cur []xjob.JobSpec
	size := len(base)
	for _, j := range jobs {
		b, _ := json.Marshal(j)
		if len(cur) > 0 && size+len(b) > importChunkBytes {
			out, cur, size = append(out, cur), nil, len(base)
		}
		cur, size = append(cur, j), size+len(b)+1
	}
	if len(cur) > 0 || len(out) == 0 {
		out = append(out, slices.Clip(cur))
	}
	return out
}
