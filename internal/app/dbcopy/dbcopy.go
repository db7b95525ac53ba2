// Package dbcopy is `xjob db copy`: it moves a local installation (the
// SQLite file `xjob local` runs on) into an empty cluster database
// (PostgreSQL or MySQL/MariaDB), so that a team that outgrows one process
// starts `xjob server` on everything it had.
//
// The target is opened through the store `xjob server` opens, with the
// installation's shard count, so its schema, migrations and shard count
// are the cluster's own from the first record. The records go through the
// driver ports where those keep them as they are (groups keep their ids,
// users their password hashes) and through driver.RestoreStore where an
// insert would renumber or reset them (jobs keep version and revision,
// which the fires waiting in the ring were planned under; logs keep the
// ids people and executors refer to). What the ports cannot read of the
// SQLite file (report counters per group, retired declarations, revoked
// sessions, queued messages) comes from sqlitestore's export reads.
//
// Not copied: sign-in attempt counters (a window of minutes), shard
// leases (the cluster's nodes take their own; a token only fences the
// nodes of one database), nodes and cluster secrets (a local file has
// none). Groups and users restart at version 1: their version only
// guards concurrent edits.
//
// The copy must be the source's only user: Copy takes the lock `xjob
// local` holds while it runs, and refuses when it is held. It reads page
// by page (logs PageSize at a time), so memory stays bounded whatever the
// file holds.
package dbcopy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/mysqlstore"
	"github.com/xjobdev/xjob/internal/adapter/pgstore"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/app/local"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Options say what to copy where.
type Options struct {
	// From is the SQLite file of the installation (`xjob local --db`).
	From string
	// To is the cluster database's URL: postgres://, postgresql://,
	// mysql:// or mariadb://, as `xjob server --db` takes it.
	To string
	// Shards, when set, must match the installation's shard count; when
	// the file has no state beside it (never run by `xjob local`), it is
	// the count to use.
	Shards int
	// PageSize is how many jobs or logs one read and one write carry
	// (default 1000).
	PageSize int
	// Progress hears one line per step and per page of logs (nil: none).
	Progress io.Writer
	// Clock dates what is copied as of when (default clock.Real{}).
	Clock clock.Clock
}

// Summary counts what was copied.
type Summary struct {
	Shards       int
	Groups       int
	Jobs         int
	GlueVersions int
	Users        int
	Logs         int
	ReportDays   int // counters, one per day and group
	Registry     int
	Retired      int // declarations whose job a person deleted
	Revoked      int // sessions revoked before their cookie expires
	Queued       int // ring buckets and dispatch tasks
}

// ErrNotEmpty is the refusal of a target that holds records already.
var ErrNotEmpty = errors.New("the target database is not empty")

// target is what the copy writes: a cluster store.
type target interface {
	driver.Store
	driver.Queues
	driver.RestoreStore
	driver.NodeStore
	Close() error
}

// Copy copies everything of the installation at opts.From into the empty
// database at opts.To. Its errors never show the URL's password.
func Copy(ctx context.Context, opts Options) (Summary, error) {
	u, err := url.Parse(opts.To)
	if err != nil || u.Host == "" {
		return Summary{}, errors.New("--to is not a database URL (postgres://user:pass@host:5432/db or mysql://user:pass@host:3306/db)")
	}
	password, _ := u.User.Password()
	sum, err := copyAll(ctx, opts, u)
	if err != nil {
		err = oneLine{err: err, password: password}
	}
	return sum, err
}

// oneLine is an error shown on one line (a driver's may list each address
// it tried on a line of its own) and without the target's password: the
// stores keep passwords out of their errors, and this holds even if a
// driver's message one day does not.
type oneLine struct {
	err      error
	password string
}

func (e oneLine) Error() string {
	msg := strings.Join(strings.Fields(e.err.Error()), " ")
	if e.password != "" {
		msg = strings.ReplaceAll(msg, e.password, "xxxxx")
	}
	return msg
}

func (e oneLine) Unwrap() error { return e.err }

func copyAll(ctx context.Context, opts Options, u *url.URL) (Summary, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = 1000
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	switch u.Scheme {
	case "postgres", "postgresql", "mysql", "mariadb":
	default:
		return Summary{}, fmt.Errorf("--to: scheme %q is not postgres, postgresql, mysql or mariadb", u.Scheme)
	}
	if fi, err := os.Stat(opts.From); err != nil || !fi.Mode().IsRegular() {
		return Summary{}, fmt.Errorf("--from %s: no SQLite file there", opts.From)
	}
	unlock, err := local.LockInstallation(opts.From)
	if err != nil {
		return Summary{}, fmt.Errorf("--from %w", err)
	}
	defer unlock()
	shards, ok, err := local.InstallationShards(opts.From)
	switch {
	case err != nil:
		return Summary{}, fmt.Errorf("--from: %w", err)
	case !ok && opts.Shards == 0:
		return Summary{}, fmt.Errorf("--from %s has no state file beside it to say its shard count: pass --shards (the count xjob local ran it with)", opts.From)
	case !ok:
		shards = opts.Shards
	case opts.Shards != 0 && opts.Shards != shards:
		return Summary{}, fmt.Errorf("--shards is %d but %s was created with %d shards; jobs are placed by shard, so the count cannot change",
			opts.Shards, opts.From, shards)
	}
	logger := slog.New(slog.DiscardHandler)
	src, err := sqlitestore.Open(ctx, opts.From, sqlitestore.Options{Shards: shards, Clock: opts.Clock, Logger: logger})
	if err != nil {
		return Summary{}, fmt.Errorf("--from: %w", err)
	}
	defer src.Close()
	dst, err := openTarget(ctx, u, shards, opts.Clock, logger)
	if err != nil {
		return Summary{}, fmt.Errorf("--to %s: %w", u.Redacted(), err)
	}
	defer dst.Close()
	c := &copier{src: src, dst: dst, opts: opts, sum: Summary{Shards: shards}}
	if err := c.checkEmpty(ctx); err != nil {
		return Summary{}, err
	}
	for _, step := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"groups", c.groups},
		{"jobs and their GLUE versions", c.jobs},
		{"users", c.users},
		{"retired declarations", c.retired},
		{"registry", c.registry},
		{"report", c.report},
		{"logs", c.logs},
		{"revoked sessions", c.revoked},
		{"queued fires", c.queues},
	} {
		fmt.Fprintf(c.opts.Progress, "copying %s\n", step.name)
		if err := step.run(ctx); err != nil {
			return c.sum, fmt.Errorf("copying %s: %w", step.name, err)
		}
	}
	return c.sum, nil
}

// openTarget opens the cluster database through the store `xjob server`
// opens, which applies its migrations and records (or checks) the shard
// count.
func openTarget(ctx context.Context, u *url.URL, shards int, clk clock.Clock, logger *slog.Logger) (target, error) {
	const node = "xjob-db-copy"
	if u.Scheme == "postgres" || u.Scheme == "postgresql" {
		return pgstore.Open(ctx, u.String(), pgstore.Options{Shards: shards, Clock: clk, Logger: logger, Node: node, MaxConns: 4})
	}
	dsn, err := mysqlstore.ParseURL(u.String())
	if err != nil {
		return nil, err
	}
	return mysqlstore.Open(ctx, dsn, mysqlstore.Options{Shards: shards, Clock: clk, Logger: logger, Node: node, MaxConns: 4})
}

// copier runs the steps of one copy.
type copier struct {
	src  *sqlitestore.DB
	dst  target
	opts Options
	sum  Summary
}

// checkEmpty refuses a target that holds any record a copy writes, or
// that a node of a cluster is running on.
func (c *copier) checkEmpty(ctx context.Context) error {
	var held []string
	count := func(n int, what string) {
		switch {
		case n == 1:
			held = append(held, "1 "+what)
		case n > 1:
			held = append(held, fmt.Sprintf("%d %ss", n, what))
		}
	}
	nodes, err := c.dst.NodesLive(ctx, c.opts.Clock.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	count(len(nodes), "running node")
	groups, err := c.dst.GroupList(ctx, driver.GroupListParams{})
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	count(len(groups), "group")
	jobs, err := c.dst.JobCount(ctx, driver.JobCountParams{})
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	count(jobs, "job")
	users, err := c.dst.UserList(ctx, driver.UserListParams{})
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	count(len(users), "user")
	logs, err := c.dst.LogCount(ctx, driver.LogCountParams{Limit: 1})
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	if logs > 0 {
		held = append(held, "logs")
	}
	reg, err := c.dst.RegistryList(ctx, driver.RegistryListParams{})
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	count(len(reg), "registry entry")
	days, err := c.dst.ReportList(ctx, driver.ReportListParams{From: "0000-01-01", To: "9999-12-31"})
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	count(len(days), "report day")
	if len(held) > 0 {
		return fmt.Errorf("%w (it holds %s): copy into a new, empty database", ErrNotEmpty, strings.Join(held, ", "))
	}
	return nil
}

func (c *copier) groups(ctx context.Context) error {
	gs, err := c.src.GroupList(ctx, driver.GroupListParams{})
	if err != nil {
		return err
	}
	for _, g := range gs {
		if _, err := c.dst.GroupInsert(ctx, g); err != nil {
			return fmt.Errorf("group %d: %w", g.ID, err)
		}
	}
	c.sum.Groups = len(gs)
	return nil
}

// jobs copies the jobs a page at a time, each page's GLUE versions after it.
func (c *copier) jobs(ctx context.Context) error {
	cursor := ""
	for {
		page, err := c.src.JobList(ctx, driver.JobListParams{Cursor: cursor, Limit: c.opts.PageSize})
		if err != nil {
			return err
		}
		if err := c.dst.JobRestore(ctx, page.Jobs); err != nil {
			return err
		}
		c.sum.Jobs += len(page.Jobs)
		for _, j := range page.Jobs {
			vs, err := c.src.GlueVersionList(ctx, j.ID, 1000)
			if err != nil {
				return err
			}
			slices.Reverse(vs) // oldest first, so the target keeps their order
			for _, v := range vs {
				if err := c.dst.GlueVersionAdd(ctx, v, max(len(vs), xjob.MaxGlueVersions)); err != nil {
					return fmt.Errorf("job %d GLUE version: %w", j.ID, err)
				}
			}
			c.sum.GlueVersions += len(vs)
		}
		if page.Next == "" {
			return nil
		}
		cursor = page.Next
	}
}

func (c *copier) users(ctx context.Context) error {
	us, err := c.src.UserList(ctx, driver.UserListParams{})
	if err != nil {
		return err
	}
	for _, u := range us {
		if _, err := c.dst.UserInsert(ctx, u); err != nil {
			return fmt.Errorf("user %s: %w", u.Username, err)
		}
	}
	c.sum.Users = len(us)
	return nil
}

func (c *copier) retired(ctx context.Context) error {
	rs, err := c.src.ExportRetired(ctx)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if err := c.dst.DeclarationRetire(ctx, r.Key, r.Declared); err != nil {
			return err
		}
	}
	c.sum.Retired = len(rs)
	return nil
}

func (c *copier) registry(ctx context.Context) error {
	es, err := c.src.RegistryList(ctx, driver.RegistryListParams{})
	if err != nil {
		return err
	}
	for _, e := range es {
		if err := c.dst.RegistryUpsert(ctx, e); err != nil {
			return err
		}
	}
	c.sum.Registry = len(es)
	return nil
}

// report copies the counters one by one: adding a day's counts to an
// empty target sets them.
func (c *copier) report(ctx context.Context) error {
	days, err := c.src.ExportReportDays(ctx)
	if err != nil {
		return err
	}
	for _, d := range days {
		if err := c.dst.ReportAdd(ctx, d); err != nil {
			return fmt.Errorf("day %s group %d: %w", d.Day, d.GroupID, err)
		}
	}
	c.sum.ReportDays = len(days)
	return nil
}

// logs copies the logs newest first, a page per read and per write, and
// reports progress every page.
func (c *copier) logs(ctx context.Context) error {
	total, err := c.src.LogCount(ctx, driver.LogCountParams{})
	if err != nil {
		return err
	}
	start := time.Now()
	cursor := ""
	for {
		page, err := c.src.LogList(ctx, driver.LogListParams{Cursor: cursor, Limit: c.opts.PageSize})
		if err != nil {
			return err
		}
		if err := c.dst.LogRestore(ctx, page.Logs); err != nil {
			return err
		}
		c.sum.Logs += len(page.Logs)
		if len(page.Logs) > 0 {
			fmt.Fprintf(c.opts.Progress, "  logs %d/%d (%s)\n", c.sum.Logs, total, time.Since(start).Round(time.Millisecond))
		}
		if page.Next == "" {
			return nil
		}
		cursor = page.Next
	}
}

func (c *copier) revoked(ctx context.Context) error {
	rs, err := c.src.ExportRevoked(ctx, c.opts.Clock.Now().UnixMilli())
	if err != nil {
		return err
	}
	for _, r := range rs {
		if err := c.dst.SessionRevoke(ctx, r.ID, r.ExpiresAt); err != nil {
			return err
		}
	}
	c.sum.Revoked = len(rs)
	return nil
}

// queues copies what the ring and the dispatch lanes held when xjob local
// stopped: the fires its scan had read ahead (the jobs' next times are
// past them already) and the retries waiting their delay. Each keeps the
// time it becomes visible; one received and never acknowledged comes back
// when its visibility ends, as it would have in the file.
func (c *copier) queues(ctx context.Context) error {
	ms, err := c.src.ExportQueues(ctx)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Ring != nil {
			err = c.dst.Ring().Send(ctx, []driver.Outgoing[fire.RingBucket]{{Msg: *m.Ring, VisibleAt: m.VisibleAt}})
		} else {
			err = c.dst.Dispatch(m.Lane).Send(ctx, []driver.Outgoing[fire.DispatchTask]{{Msg: *m.Task, VisibleAt: m.VisibleAt}})
		}
		if err != nil {
			return err
		}
	}
	c.sum.Queued = len(ms)
	return nil
}
