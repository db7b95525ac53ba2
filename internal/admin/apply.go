package admin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// MaxManifestItems bounds the groups plus jobs of one manifest.
const MaxManifestItems = 5000

// ApplyParams is the input of Apply.
type ApplyParams struct {
	Manifest xjob.Manifest
	// Prune deletes the jobs, then the groups, that the manifest does not
	// declare: every one on the server, not only those of its groups.
	Prune bool
	// DryRun plans and validates but writes nothing.
	DryRun bool
	// Overwrite takes the manifest's value of every field, even one a
	// person changed in xjob since the last apply.
	Overwrite bool
	// KeepStarted leaves started out of Overwrite: it is merged three
	// ways, and a job with no record of an earlier apply keeps its state.
	// An import sets it, so that it never stops a job started in xjob
	// nor starts one stopped there.
	KeepStarted bool
	// Origin names where the manifest comes from (an import: the xxl-job
	// database). A job recorded from another origin is not updated: two
	// databases with the same job ids must be imported side by side (with
	// a name prefix and an id offset), not one over the other.
	Origin string
}

// Apply makes the server's groups and jobs match a manifest: it creates
// what is missing (under the id the manifest names, if any), updates what
// differs, and with Prune deletes what is not declared.
//
// The whole manifest is checked before anything is written: a bad field,
// a duplicate key, an unknown group or child, a cycle of child jobs, a
// taken id or a schedule that cannot start gives one *xjob.ValidationError
// naming every problem (fields are prefixed "groups[i]." or "jobs[i].")
// and no write. The changes are then written as one unit
// (driver.ChangeStore): a failure or a crash leaves the old set or the new
// one, never a part.
//
// An update is a three-way merge against what the last apply declared
// (Job.Applied): a field the manifest did not change since is left as a
// person set it in xjob (Kept in the plan), so applying an unchanged file
// again, or importing again, changes nothing a person changed since,
// started and stopped included. Overwrite takes the manifest's side
// (started aside with KeepStarted). A job where only such fields differ
// is a "keep" item of the plan: nothing is written, and the plan says
// which of the manifest's values stay unwritten.
func (s *Service) Apply(ctx context.Context, p ApplyParams) (xjob.ApplyResult, error) {
	if n := len(p.Manifest.Groups) + len(p.Manifest.Jobs); n > MaxManifestItems {
		return xjob.ApplyResult{}, invalid("manifest", "has %d groups and jobs, at most %d allowed", n, MaxManifestItems)
	}
	if len(p.Origin) > 200 {
		return xjob.ApplyResult{}, invalid("origin", "at most 200 bytes")
	}
	if !p.DryRun {
		// One apply at a time, and no child edit meanwhile: the cycle
		// check reads the whole child graph.
		s.childEdits.Lock()
		defer s.childEdits.Unlock()
		release, err := s.lockChildGraph(ctx)
		if err != nil {
			return xjob.ApplyResult{}, err
		}
		defer release()
		if err := s.cfg.Store.ChangeResume(ctx); err != nil {
			return xjob.ApplyResult{}, fmt.Errorf("admin apply: finish an earlier apply: %w", err)
		}
	}
	groups, err := s.cfg.Store.GroupList(ctx, driver.GroupListParams{})
	if err != nil {
		return xjob.ApplyResult{}, fmt.Errorf("admin apply: %w", err)
	}
	jobs, err := s.allJobs(ctx)
	if err != nil {
		return xjob.ApplyResult{}, fmt.Errorf("admin apply: %w", err)
	}
	pl, err := s.plan(ctx, p, groups, jobs)
	if err != nil {
		return xjob.ApplyResult{}, err
	}
	res := xjob.ApplyResult{Plan: pl.items(), Unchanged: pl.unchanged, DryRun: p.DryRun}
	if p.DryRun {
		return res, nil
	}
	err = s.write(ctx, pl, res.Plan)
	return res, err
}

// allJobs reads every job, page by page.
func (s *Service) allJobs(ctx context.Context) ([]xjob.Job, error) {
	var out []xjob.Job
	p := driver.JobListParams{Limit: 1000}
	for {
		page, err := s.cfg.Store.JobList(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Jobs...)
		if page.Next == "" || page.Next == p.Cursor {
			return out, nil
		}
		p.Cursor = page.Next
	}
}

// Export returns the server's groups and jobs as a manifest that Apply
// reproduces: every group by app name with its id, every job with its id
// (and name, if it has one), children by name where they have one.
func (s *Service) Export(ctx context.Context) (xjob.Manifest, error) {
	groups, err := s.cfg.Store.GroupList(ctx, driver.GroupListParams{})
	if err != nil {
		return xjob.Manifest{}, fmt.Errorf("admin export: %w", err)
	}
	jobs, err := s.allJobs(ctx)
	if err != nil {
		return xjob.Manifest{}, fmt.Errorf("admin export: %w", err)
	}
	m := xjob.Manifest{Groups: []xjob.GroupSpec{}, Jobs: []xjob.JobSpec{}}
	app := map[int64]string{}
	for _, g := range groups {
		app[g.ID] = g.AppName
		gs := xjob.GroupSpec{ID: g.ID, AppName: g.AppName, Title: g.Title, AddressType: g.AddressType}
		if g.AddressType == xjob.AddressManual {
			gs.AddressList = g.AddressList
		}
		m.Groups = append(m.Groups, gs)
	}
	name := map[int64]string{}
	for _, j := range jobs {
		name[j.ID] = j.Name
	}
	for _, j := range jobs {
		js := specOf(redact(j), app[j.GroupID])
		for _, c := range j.ChildJobIDs {
			if n := name[c]; n != "" {
				js.Children = append(js.Children, n)
			} else {
				js.Children = append(js.Children, strconv.FormatInt(c, 10))
			}
		}
		m.Jobs = append(m.Jobs, js)
	}
	return m, nil
}

// specOf is the spec of a stored job, children left out.
func specOf(j xjob.Job, app string) xjob.JobSpec {
	return xjob.JobSpec{
		Name: j.Name, ID: j.ID, Group: app,
		Description: j.Description, Author: j.Author, AlarmEmail: j.AlarmEmail,
		ScheduleType: j.ScheduleType, ScheduleConf: j.ScheduleConf, TimeZone: j.TimeZone,
		MisfireStrategy: j.MisfireStrategy, AfterCompletion: j.AfterCompletion, RouteStrategy: j.RouteStrategy,
		Handler: j.Handler, Param: j.Param, BlockStrategy: j.BlockStrategy, TimeoutSeconds: j.TimeoutSeconds,
		FailRetryCount: j.FailRetryCount, GlueType: j.GlueType, GlueSource: j.GlueSource,
		GlueRemark: j.GlueRemark, Started: j.TriggerStatus == xjob.StatusRunning,
	}
}

// addValidation adds err's field problems under prefix, or err itself.
func addValidation(probs *[]xjob.FieldProblem, prefix string, err error) {
	var ve *xjob.ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			*probs = append(*probs, xjob.FieldProblem{Field: prefix + p.Field, Message: p.Message})
		}
		return
	}
	*probs = append(*probs, xjob.FieldProblem{Field: prefix[:len(prefix)-1], Message: err.Error()})
}

// jobOfSpec is the job a spec declares, with defaults, in group gid.
func jobOfSpec(js xjob.JobSpec, gid int64) xjob.Job {
	j := xjob.Job{
		Name: js.Name, GroupID: gid,
		Description: js.Description, Author: js.Author, AlarmEmail: js.AlarmEmail,
		ScheduleType: js.ScheduleType, ScheduleConf: js.ScheduleConf, TimeZone: js.TimeZone,
		MisfireStrategy: js.MisfireStrategy, AfterCompletion: js.AfterCompletion, RouteStrategy: js.RouteStrategy,
		Handler: js.Handler, Param: js.Param, BlockStrategy: js.BlockStrategy, TimeoutSeconds: js.TimeoutSeconds,
		FailRetryCount: js.FailRetryCount, GlueType: js.GlueType, GlueSource: js.GlueSource,
		GlueRemark: js.GlueRemark,
	}
	if js.Started {
		j.TriggerStatus = xjob.StatusRunning
	}
	j.ApplyDefaults()
	return j
}

// MaxBulkIDs bounds the jobs of one bulk action.
const MaxBulkIDs = 1000

// Bulk job actions.
const (
	BulkStart  = "start"
	BulkStop   = "stop"
	BulkDelete = "delete"
)

// BulkJobs starts, stops or deletes each job of ids, independently: the
// i-th error is ids[i]'s outcome (nil, xjob.ErrNotFound…), so one missing
// job does not hold back the others. A bad action or id list is a
// validation error and nothing is done.
func (s *Service) BulkJobs(ctx context.Context, action string, ids []int64) ([]error, error) {
	var act func(context.Context, int64) error
	var started pushBatch
	switch action {
	case BulkStart:
		// The started jobs' first fires are pushed together at the end.
		act = func(ctx context.Context, id int64) error { _, err := s.startJob(ctx, id, &started); return err }
	case BulkStop:
		act = func(ctx context.Context, id int64) error { _, err := s.StopJob(ctx, id); return err }
	case BulkDelete:
		act = s.DeleteJob
	default:
		return nil, invalid("action", "must be start, stop or delete, got %q", action)
	}
	switch {
	case len(ids) == 0:
		return nil, invalid("ids", "is required")
	case len(ids) > MaxBulkIDs:
		return nil, invalid("ids", "at most %d ids, got %d", MaxBulkIDs, len(ids))
	}
	seen := map[int64]bool{}
	for _, id := range ids {
		if id <= 0 {
			return nil, invalid("ids", "%d is not a job id", id)
		}
		if seen[id] {
			return nil, invalid("ids", "%d is listed twice", id)
		}
		seen[id] = true
	}
	errs := make([]error, len(ids))
	defer s.pushLater(ctx, &started)
	// The jobs are independent: a few at a time, so a thousand starts take
	// the store's round trips in parallel (edits of one job still queue on
	// its stripe).
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(bulkConcurrency, len(ids)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(ids) && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				errs[i] = act(ctx, ids[i])
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return errs, nil
}

// bulkConcurrency bounds the jobs one bulk request acts on at once.
const bulkConcurrency = 8
