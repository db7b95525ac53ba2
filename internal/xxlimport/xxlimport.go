// Package xxlimport reads an xxl-job 2.3–3.4 database (MySQL or MariaDB)
// and turns it into an xjob manifest that `xjob import xxl-job` applies
// through the admin API, so the same import works against xjob local and
// xjob on AWS.
//
// Reading (Read) and mapping (Map) are apart: Map is a pure function of
// the rows, tested field by field; Read only runs the SELECTs. The columns
// read exist, with these names, in every release from 2.3.0 to 3.4.2
// (3.5 renames job_desc and title to name, and is not supported); the
// tests read them from the three layouts of those releases
// (testdata/xxl-job-{2.4,3.2,3.4}.sql) on MariaDB.
//
// What maps and what does not:
//
//	xxl_job_group  id (kept when free on the target), app_name, title,
//	               address_type, address_list (manual groups) → groups;
//	               update_time is not kept (xjob stamps its own).
//	xxl_job_info   id (kept: executors and people know jobs by id),
//	               job_group (by app name), job_desc, author, alarm_email,
//	               schedule_type, schedule_conf, misfire_strategy,
//	               executor_route_strategy, executor_handler, executor_param,
//	               executor_block_strategy, executor_timeout,
//	               executor_fail_retry_count, glue_type, glue_source,
//	               glue_remark, child_jobid, trigger_status (with KeepStatus;
//	               else every job arrives stopped) → jobs, each named
//	               "xxl-job-<id>" and evaluated in the zone the old admin
//	               ran in. add_time, update_time, glue_updatetime and
//	               trigger_last_time/next_time are not kept: xjob stamps its
//	               own times and computes the next fire from now.
//	xxl_job_logglue  → each GLUE job's saved versions (xjob keeps the
//	               newest 30), oldest first, with their remarks and times
//	               (wall times in TimeZone, as the admin wrote them).
//	xxl_job_user   → users with their role and group rights, and their
//	               MD5 or SHA-256 password hash, so that they sign in with
//	               their old passwords (re-hashed with argon2id then).
//	xxl_job_log, xxl_job_log_report  with WithHistory, read by
//	               ReadHistory (history.go); else the summary says they
//	               are left behind.
//
// Text longer than xjob's limit for its field (limits counted in
// characters, as MySQL counts them) is cut to the limit with a note; a
// row is never dropped for it. A cycle of child jobs (xxl-job refuses
// only a job that is its own child) is imported with the edge that
// closes it dropped, and the note names the cycle.
package xxlimport

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/text"
)

// GroupRow is one row of xxl_job_group.
type GroupRow struct {
	ID          int64
	AppName     string
	Title       string
	AddressType int
	AddressList string
}

// JobRow is one row of xxl_job_info (the columns Map uses).
type JobRow struct {
	ID                     int64
	JobGroup               int64
	JobDesc                string
	Author                 string
	AlarmEmail             string
	ScheduleType           string
	ScheduleConf           string
	MisfireStrategy        string
	ExecutorRouteStrategy  string
	ExecutorHandler        string
	ExecutorParam          string
	ExecutorBlockStrategy  string
	ExecutorTimeout        int
	ExecutorFailRetryCount int
	GlueType               string
	GlueSource             string
	GlueRemark             string
	ChildJobID             string
	TriggerStatus          int
}

// GlueRow is one row of xxl_job_logglue.
type GlueRow struct {
	Source, Remark string
	// AddTime is add_time as the admin wrote it (yyyy-mm-dd hh:mm:ss, ""
	// when NULL): a wall time in the zone the admin ran in, which only
	// Map knows (Options.TimeZone).
	AddTime string
}

// UserRow is one row of xxl_job_user.
type UserRow struct {
	Username string
	// Password is the hex MD5 (up to 3.1) or SHA-256 (3.2 on) digest.
	Password string
	Role     int
	// Permission lists the xxl-job group ids a normal user may use.
	Permission []int64
}

// Rows is what Read finds in an xxl-job database.
type Rows struct {
	Groups []GroupRow
	Jobs   []JobRow
	// Glue are the xxl_job_logglue rows, by job, oldest first.
	Glue map[int64][]GlueRow
	// GlueVersions counts xxl_job_logglue rows; Users xxl_job_user rows
	// (-1 when the table is missing).
	GlueVersions int
	Users        int
	UserRows     []UserRow
}

// Options steer Map.
type Options struct {
	// TimeZone is the IANA zone the xxl-job admin ran in: its cron
	// expressions were evaluated there. Required.
	TimeZone string
	// KeepStatus imports running jobs running; by default every job
	// arrives stopped, so that the old admin and xjob never both fire it.
	KeepStatus bool
	// Prefix names the imported jobs Prefix-<id> (default "xxl-job").
	Prefix string
	// WithHistory says the caller carries logs and report days over
	// (ReadHistory), so Map does not note them as left behind.
	WithHistory bool
	// IDOffset is added to every job id (and the child ids): two xxl-job
	// databases whose ids overlap are imported side by side with
	// different prefixes and offsets.
	IDOffset int64
}

// Result is the manifest to apply and what could not be mapped, one
// line each, for a person to read.
type Result struct {
	Manifest xjob.Manifest
	Unmapped []string
	// Running lists the ids of jobs that ran in xxl-job (started only
	// with KeepStatus), as imported (IDOffset added).
	Running []int64
	// Users are the users to carry over, with their group rights as app
	// names of imported groups.
	Users []User
	// Apps maps xxl-job's group ids to the app names of imported groups.
	Apps map[int64]string
}

// User is an xxl-job user as the import carries it over.
type User struct {
	Username string
	Password string // xxl_job_user.password, a hex digest
	Admin    bool
	Apps     []string
}

// JobName is the name an imported job gets with the default prefix: its
// key in later imports.
func JobName(id int64) string { return jobName("", id) }

func jobName(prefix string, id int64) string {
	if prefix == "" {
		prefix = "xxl-job"
	}
	return prefix + "-" + strconv.FormatInt(id, 10)
}

// Map turns xxl-job rows into a manifest. A row that cannot become a
// valid xjob group or job is left out and explained in Unmapped; values
// xjob does not have are replaced by a default and explained too.
func Map(rows Rows, opt Options) (Result, error) {
	if opt.TimeZone == "" {
		return Result{}, errors.New("the time zone the xxl-job admin ran in is required")
	}
	loc, err := time.LoadLocation(opt.TimeZone)
	if err != nil {
		return Result{}, fmt.Errorf("time zone %q: %w", opt.TimeZone, err)
	}
	var res Result
	note := func(format string, args ...any) { res.Unmapped = append(res.Unmapped, fmt.Sprintf(format, args...)) }
	app := map[int64]string{}
	for _, r := range rows.Groups {
		r.Title = cut(r.Title, xjob.MaxTitleLen, func(n int) {
			note("group %d (%s): title cut to %d characters (was %d)", r.ID, r.AppName, xjob.MaxTitleLen, n)
		})
		g := xjob.GroupSpec{ID: r.ID, AppName: strings.TrimSpace(r.AppName), Title: r.Title,
			AddressType: xjob.AddressType(r.AddressType)}
		if g.AddressType == xjob.AddressManual {
			g.AddressList = text.SplitList(r.AddressList)
		}
		check := xjob.Group{AppName: g.AppName, Title: g.Title, AddressType: g.AddressType, AddressList: g.AddressList}
		if err := check.Validate(); err != nil {
			note("group %d (%s): not imported: %v", r.ID, r.AppName, err)
			continue
		}
		app[r.ID] = g.AppName
		res.Manifest.Groups = append(res.Manifest.Groups, g)
	}
	res.Apps = app
	imported := map[int64]bool{}
	for _, r := range rows.Jobs {
		imported[r.ID] = true
	}
	for _, r := range rows.Jobs {
		js, ok := mapJob(r, app, opt, note)
		if !ok {
			delete(imported, r.ID)
			continue
		}
		if r.TriggerStatus == 1 {
			res.Running = append(res.Running, r.ID+opt.IDOffset)
		}
		res.Manifest.Jobs = append(res.Manifest.Jobs, js)
	}
	// Children last: a child that was not imported is dropped from the
	// list, and so is the edge that closes a cycle.
	children := map[int64][]int64{}
	for i := range res.Manifest.Jobs {
		js := &res.Manifest.Jobs[i]
		for _, c := range js.Children {
			id, _ := strconv.ParseInt(c, 10, 64)
			if imported[id] {
				children[js.ID] = append(children[js.ID], id)
			} else {
				note("job %d: child job %s dropped: it was not imported", js.ID, c)
			}
		}
	}
	for _, e := range BackEdges(children) {
		note("job %d: child job %d dropped: it closes the cycle %s (each job would trigger the next forever)",
			e.From, e.To, e.Cycle)
		children[e.From] = slices.DeleteFunc(children[e.From], func(c int64) bool { return c == e.To })
	}
	for i := range res.Manifest.Jobs {
		js := &res.Manifest.Jobs[i]
		js.Children = nil
		for _, c := range children[js.ID] {
			js.Children = append(js.Children, jobName(opt.Prefix, c))
		}
		if js.GlueType != xjob.GlueBean {
			for _, g := range rows.Glue[js.ID] {
				js.GlueHistory = append(js.GlueHistory, xjob.GlueVersionSpec{Source: g.Source, Remark: g.Remark,
					CreatedAt: wallMillis(g.AddTime, loc)})
			}
		}
		if opt.IDOffset != 0 {
			js.ID += opt.IDOffset
		}
	}
	for _, u := range rows.UserRows {
		cu := User{Username: u.Username, Password: u.Password, Admin: u.Role == 1}
		for _, gid := range u.Permission {
			if a, ok := app[gid]; ok {
				cu.Apps = append(cu.Apps, a)
			} else if !cu.Admin {
				note("user %s: right to group %d dropped: the group was not imported", u.Username, gid)
			}
		}
		res.Users = append(res.Users, cu)
	}
	if !opt.WithHistory {
		note("xxl_job_log and xxl_job_log_report: trigger logs and report days not carried over (--logs SINCE carries them)")
	}
	return res, nil
}

// wallMillis reads a DATETIME as MySQL renders it, a wall time in loc;
// 0 when it is empty or unreadable.
func wallMillis(v string, loc *time.Location) int64 {
	t, err := time.ParseInLocation(time.DateTime, v, loc)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

// Edge is a child-job edge that closes a cycle.
type Edge struct {
	From, To int64
	Cycle    string // "50 → 51 → 50"
}

// BackEdges finds, in id order, the edges whose removal leaves the child
// graph without cycles: the edges a depth-first walk meets going back to a
// job on its path.
func BackEdges(children map[int64][]int64) []Edge {
	ids := make([]int64, 0, len(children))
	for id := range children {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	state := map[int64]int{} // 0 new, 1 on the path, 2 done
	var path []int64
	var out []Edge
	var visit func(id int64)
	visit = func(id int64) {
		state[id] = 1
		path = append(path, id)
		for _, c := range children[id] {
			switch state[c] {
			case 0:
				visit(c)
			case 1:
				i := slices.Index(path, c)
				parts := make([]string, 0, len(path)-i+1)
				for _, p := range append(slices.Clone(path[i:]), c) {
					parts = append(parts, strconv.FormatInt(p, 10))
				}
				out = append(out, Edge{From: id, To: c, Cycle: strings.Join(parts, " → ")})
			}
		}
		path = path[:len(path)-1]
		state[id] = 2
	}
	for _, id := range ids {
		if state[id] == 0 {
			visit(id)
		}
	}
	return out
}

// cut shortens v to max characters, calling noted with its length when it does.
func cut(v string, maxChars int, noted func(n int)) string {
	if n := utf8.RuneCountInString(v); n > maxChars {
		noted(n)
		return string([]rune(v)[:maxChars])
	}
	return v
}

func mapJob(r JobRow, app map[int64]string, opt Options, note func(string, ...any)) (xjob.JobSpec, bool) {
	if r.ID <= 0 || r.ID > math.MaxInt32 {
		note("job %d: not imported: not an id xxl-job executors accept", r.ID)
		return xjob.JobSpec{}, false
	}
	group, ok := app[r.JobGroup]
	if !ok {
		note("job %d: not imported: its executor group %d was not imported", r.ID, r.JobGroup)
		return xjob.JobSpec{}, false
	}
	for _, f := range []struct {
		name string
		v    *string
		max  int
	}{
		{"description", &r.JobDesc, xjob.MaxDescriptionLen}, {"author", &r.Author, xjob.MaxAuthorLen},
		{"alarm e-mail", &r.AlarmEmail, xjob.MaxAlarmEmailLen}, {"handler", &r.ExecutorHandler, xjob.MaxHandlerLen},
		{"param", &r.ExecutorParam, xjob.MaxParamLen}, {"GLUE remark", &r.GlueRemark, xjob.MaxGlueRemarkLen},
	} {
		*f.v = cut(*f.v, f.max, func(n int) {
			note("job %d: %s cut to %d characters (was %d)", r.ID, f.name, f.max, n)
		})
	}
	js := xjob.JobSpec{
		Name: jobName(opt.Prefix, r.ID), ID: r.ID, Group: group,
		Description: r.JobDesc, Author: r.Author, AlarmEmail: r.AlarmEmail,
		ScheduleType: xjob.ScheduleType(r.ScheduleType), ScheduleConf: r.ScheduleConf, TimeZone: opt.TimeZone,
		MisfireStrategy: xjob.MisfireStrategy(r.MisfireStrategy), RouteStrategy: xjob.RouteStrategy(r.ExecutorRouteStrategy),
		Handler: r.ExecutorHandler, Param: r.ExecutorParam, BlockStrategy: xjob.BlockStrategy(r.ExecutorBlockStrategy),
		TimeoutSeconds: r.ExecutorTimeout, FailRetryCount: r.ExecutorFailRetryCount,
		GlueType: xjob.GlueType(r.GlueType), GlueSource: r.GlueSource, GlueRemark: r.GlueRemark,
		Started: opt.KeepStatus && r.TriggerStatus == 1,
	}
	if strings.TrimSpace(js.Author) == "" {
		js.Author = "xxl-job"
		note("job %d: empty author set to %q", r.ID, js.Author)
	}
	if js.ScheduleType == xjob.ScheduleFixDelay {
		note("job %d: not imported: schedule type FIX_DELAY is not supported (xxl-job never shipped it)", r.ID)
		return xjob.JobSpec{}, false
	}
	for _, c := range text.SplitList(r.ChildJobID) {
		if _, err := strconv.ParseInt(c, 10, 64); err != nil {
			note("job %d: child job %q dropped: not an id", r.ID, c)
			continue
		}
		js.Children = append(js.Children, c)
	}
	// Check what xjob would refuse, field by field, so that one bad row
	// does not hold back the rest of the import.
	j := xjob.Job{
		ID: js.ID, Name: js.Name, GroupID: 1, Description: js.Description, Author: js.Author, AlarmEmail: js.AlarmEmail,
		ScheduleType: js.ScheduleType, ScheduleConf: js.ScheduleConf, TimeZone: js.TimeZone,
		MisfireStrategy: js.MisfireStrategy, RouteStrategy: js.RouteStrategy, Handler: js.Handler, Param: js.Param,
		BlockStrategy: js.BlockStrategy, TimeoutSeconds: js.TimeoutSeconds, FailRetryCount: js.FailRetryCount,
		GlueType: js.GlueType, GlueSource: js.GlueSource, GlueRemark: js.GlueRemark,
	}
	j.ApplyDefaults()
	err := j.Validate()
	var ve *xjob.ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			switch p.Field {
			case "alarmEmail":
				note("job %d: alarm e-mail %q dropped: %s", r.ID, js.AlarmEmail, p.Message)
				js.AlarmEmail = ""
				continue
			case "executorTimeout":
				note("job %d: timeout %d s dropped (none): %s", r.ID, js.TimeoutSeconds, p.Message)
				js.TimeoutSeconds = 0
				continue
			}
			note("job %d: not imported: %s: %s", r.ID, p.Field, p.Message)
			return xjob.JobSpec{}, false
		}
	} else if err != nil {
		note("job %d: not imported: %v", r.ID, err)
		return xjob.JobSpec{}, false
	}
	return js, true
}

// Read loads the rows Map needs from an xxl-job database.
func Read(ctx context.Context, db *sql.DB) (Rows, error) {
	var rows Rows
	err := query(ctx, db, `SELECT id, app_name, COALESCE(title, ''), address_type, COALESCE(address_list, '')
		FROM xxl_job_group ORDER BY id`, func(s scanner) error {
		var g GroupRow
		if err := s.Scan(&g.ID, &g.AppName, &g.Title, &g.AddressType, &g.AddressList); err != nil {
			return err
		}
		rows.Groups = append(rows.Groups, g)
		return nil
	})
	if err != nil {
		return Rows{}, fmt.Errorf("read xxl_job_group: %w", err)
	}
	err = query(ctx, db, `SELECT id, job_group, COALESCE(job_desc, ''), COALESCE(author, ''), COALESCE(alarm_email, ''),
		COALESCE(schedule_type, ''), COALESCE(schedule_conf, ''), COALESCE(misfire_strategy, ''),
		COALESCE(executor_route_strategy, ''), COALESCE(executor_handler, ''), COALESCE(executor_param, ''),
		COALESCE(executor_block_strategy, ''), executor_timeout, executor_fail_retry_count,
		COALESCE(glue_type, ''), COALESCE(glue_source, ''), COALESCE(glue_remark, ''), COALESCE(child_jobid, ''),
		trigger_status
		FROM xxl_job_info ORDER BY id`, func(s scanner) error {
		var j JobRow
		if err := s.Scan(&j.ID, &j.JobGroup, &j.JobDesc, &j.Author, &j.AlarmEmail,
			&j.ScheduleType, &j.ScheduleConf, &j.MisfireStrategy,
			&j.ExecutorRouteStrategy, &j.ExecutorHandler, &j.ExecutorParam,
			&j.ExecutorBlockStrategy, &j.ExecutorTimeout, &j.ExecutorFailRetryCount,
			&j.GlueType, &j.GlueSource, &j.GlueRemark, &j.ChildJobID, &j.TriggerStatus); err != nil {
			return err
		}
		rows.Jobs = append(rows.Jobs, j)
		return nil
	})
	if err != nil {
		return Rows{}, fmt.Errorf("read xxl_job_info: %w", err)
	}
	rows.Glue = map[int64][]GlueRow{}
	// add_time as text: a DATETIME has no zone, and the session's (UTC on
	// most servers) is not the one the admin wrote it in.
	err = query(ctx, db, `SELECT job_id, COALESCE(glue_source, ''), COALESCE(glue_remark, ''),
		COALESCE(DATE_FORMAT(add_time, `+datetime+`), '')
		FROM xxl_job_logglue ORDER BY job_id, add_time, id`, func(s scanner) error {
		var id int64
		var v GlueRow
		if err := s.Scan(&id, &v.Source, &v.Remark, &v.AddTime); err != nil {
			return err
		}
		rows.Glue[id] = append(rows.Glue[id], v)
		rows.GlueVersions++
		return nil
	})
	if err != nil {
		return Rows{}, fmt.Errorf("read xxl_job_logglue: %w", err)
	}
	err = query(ctx, db, `SELECT username, password, role, COALESCE(permission, '') FROM xxl_job_user ORDER BY id`,
		func(s scanner) error {
			var u UserRow
			var perm string
			if err := s.Scan(&u.Username, &u.Password, &u.Role, &perm); err != nil {
				return err
			}
			for _, p := range text.SplitList(perm) {
				if id, err := strconv.ParseInt(p, 10, 64); err == nil {
					u.Permission = append(u.Permission, id)
				}
			}
			rows.UserRows = append(rows.UserRows, u)
			return nil
		})
	rows.Users = len(rows.UserRows)
	if err != nil {
		rows.Users, rows.UserRows = -1, nil // an installation without the user table (custom auth)
	}
	return rows, nil
}

type scanner interface{ Scan(dest ...any) error }

func query(ctx context.Context, db *sql.DB, q string, each func(scanner) error, args ...any) error {
	rs, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		if err := each(rs); err != nil {
			return err
		}
	}
	return rs.Err()
}
