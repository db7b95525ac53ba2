package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/xjobdev/xjob/internal/app/dbcopy"
	"github.com/xjobdev/xjob/internal/app/local"
)

// envDB is the variable `xjob server` reads its database URL from; `db
// copy` reads it too, so that a URL with a password need not be typed on
// a command line (where the process list shows it).
const envDB = "XJOB_DB"

// dbCommand is `xjob db`: work on a database file or server directly,
// with no xjob server running.
func (a *app) dbCommand() *cobra.Command {
	cmd := parentCommand("db", "Work on xjob's databases directly (no server)")
	var from, to string
	var shards, page int
	sub := &cobra.Command{
		Use:   "copy --from FILE --to URL",
		Short: "Copy a local installation (SQLite) into an empty PostgreSQL or MySQL database",
		Long: `Copy everything of an xjob local installation — executor groups, jobs (ids,
versions, schedule state), users (password hashes as they are), GLUE versions,
logs, report days, the registry, retired declarations, revoked sessions and
the fires waiting in its queues — into an empty PostgreSQL or MySQL/MariaDB
database, then start xjob server on it.

Stop xjob local first: the copy refuses to run while it holds the file's
lock, and nothing may write the file until the copy ends. The target must be
empty (a database no xjob server has run on); the copy creates its schema
and records the installation's shard count. Sign-in attempt counters and
shard leases are not copied; groups and users restart at version 1.

--to may be left out and given in XJOB_DB instead (as for xjob server), so
that the password does not show in the process list. A copy that failed
half-way leaves the target partly written: drop and re-create the database,
then copy again. The SQLite file is left as it was.`,
		Example: `  xjob db copy --from .xjob/xjob.db --to 'postgres://xjob:secret@db:5432/xjob'
  XJOB_DB='mysql://xjob:secret@db:3306/xjob' xjob db copy --from .xjob/xjob.db`,
		Args: noArgs,
	}
	f := sub.Flags()
	f.StringVar(&from, "from", local.DefaultDB, "the SQLite file xjob local runs on")
	f.StringVar(&to, "to", "", "the cluster database: postgres://… or mysql://… (env "+envDB+")")
	f.IntVar(&shards, "shards", 0, "the installation's shard count, when no state file is beside --from (default: read from it)")
	f.IntVar(&page, "page-size", 1000, "jobs or logs per read and write")
	sub.RunE = func(cmd *cobra.Command, _ []string) error {
		if to == "" {
			to = a.getenv(envDB)
		}
		if to == "" {
			return usagef("--to (or %s) is required: the cluster database's URL", envDB)
		}
		if page < 1 || page > 10000 {
			return usagef("--page-size must be between 1 and 10000, got %d", page)
		}
		sum, err := dbcopy.Copy(cmd.Context(), dbcopy.Options{From: from, To: to, Shards: shards, PageSize: page, Progress: a.stderr})
		if err != nil {
			if errors.Is(err, dbcopy.ErrNotEmpty) {
				return failure{err}
			}
			return failure{fmt.Errorf("db copy: %w", err)}
		}
		if a.output == "json" {
			return json.NewEncoder(a.stdout).Encode(sum)
		}
		fmt.Fprintf(a.stdout, "copied %d groups, %d jobs, %d GLUE versions, %d users, %d logs, %d report counters, "+
			"%d registry entries, %d retired declarations, %d revoked sessions and %d queued fires (%d shards)\n",
			sum.Groups, sum.Jobs, sum.GlueVersions, sum.Users, sum.Logs, sum.ReportDays,
			sum.Registry, sum.Retired, sum.Revoked, sum.Queued, sum.Shards)
		fmt.Fprintln(a.stdout, "start xjob server with --db on the copy and --shards", sum.Shards)
		return nil
	}
	cmd.AddCommand(sub)
	return cmd
}
