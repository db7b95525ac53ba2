package admin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// ErrNoGroup is DeclareJobs' answer when no executor group has the
// declaring app name: a person creates groups (they choose the title and
// the address type), the executor retries at its next beat.
var ErrNoGroup = errors.New("no executor group has this app name")

// DeclareJobs records the jobs an executor declares for its handlers
// (POST /api/xjob/declare). Everything is validated before anything is
// written. Then, per declaration, keyed by its name (JobDeclaration.Key):
//
//   - no job has the name: the job is created, stopped unless
//     StartDeclaredJobs, with the declaration recorded on it (Job.Declared);
//   - the job was created by this path and the declaration is the one
//     recorded: nothing is written;
//   - it was, and the declaration changed: the new declaration is recorded
//     (for `xjob job show` to compare) but not applied, and one line is
//     logged: what a person edited since stays;
//   - a person or a file made the job (nothing recorded): it is left as is.
//
// A declared job that a person deletes is created again the next time an
// executor declares it (at its next start): to retire a declared job,
// remove the declaration from the executor's code, or stop the job instead
// of deleting it.
//
// Two executors of one app that start together may both create the job;
// each then re-reads the name and the one whose job is not the lowest id
// deletes its own, so one job remains.
func (s *Service) DeclareJobs(ctx context.Context, req xjob.DeclareRequest) (xjob.DeclareResult, error) {
	if err := s.checkDeclarations(req); err != nil {
		return xjob.DeclareResult{}, err
	}
	gid, err := s.groupOfApp(ctx, req.AppName)
	if err != nil {
		return xjob.DeclareResult{}, err
	}
	res := xjob.DeclareResult{Jobs: make([]xjob.DeclaredJob, 0, len(req.Jobs))}
	for i := range req.Jobs {
		d := &req.Jobs[i]
		dj, err := s.declare(ctx, req.AppName, gid, d)
		if err != nil {
			return res, fmt.Errorf("admin declare %s: %w", d.Key(req.AppName), err)
		}
		res.Jobs = append(res.Jobs, dj)
	}
	return res, nil
}

func (s *Service) checkDeclarations(req xjob.DeclareRequest) error {
	g := xjob.Group{AppName: req.AppName, Title: "t"}
	if err := g.Validate(); err != nil {
		var ve *xjob.ValidationError
		if errors.As(err, &ve) && len(ve.Problems) > 0 && ve.Problems[0].Field == "appname" {
			return invalid("appname", "%s", ve.Problems[0].Message)
		}
	}
	if len(req.Jobs) > xjob.MaxDeclarations {
		return invalid("jobs", "%d declarations, at most %d allowed", len(req.Jobs), xjob.MaxDeclarations)
	}
	var probs []xjob.FieldProblem
	seen := map[string]int{}
	for i := range req.Jobs {
		d := &req.Jobs[i]
		prefix := "jobs[" + strconv.Itoa(i) + "]."
		if err := d.Validate(req.AppName); err != nil {
			addValidation(&probs, prefix, err)
			continue
		}
		key := d.Key(req.AppName)
		if j, dup := seen[key]; dup {
			probs = append(probs, xjob.FieldProblem{Field: prefix + "name",
				Message: fmt.Sprintf("key %q is also declared by jobs[%d]", key, j)})
		}
		seen[key] = i
	}
	if len(probs) > 0 {
		return &xjob.ValidationError{Problems: probs}
	}
	return nil
}

// groupOfApp is the id of the group named appname (the lowest, should a
// person have made two).
func (s *Service) groupOfApp(ctx context.Context, appname string) (int64, error) {
	gs, err := s.cfg.Store.GroupList(ctx, driver.GroupListParams{AppName: appname})
	if err != nil {
		return 0, fmt.Errorf("admin declare: list groups: %w", err)
	}
	for _, g := range gs { // id order; AppName filters by substring
		if g.AppName == appname {
			return g.ID, nil
		}
	}
	return 0, fmt.Errorf("admin declare: app %q: %w (create the group first)", appname, ErrNoGroup)
}

func (s *Service) declare(ctx context.Context, app string, gid int64, d *xjob.JobDeclaration) (xjob.DeclaredJob, error) {
	key, canon := d.Key(app), d.Canonical(app)
	out := xjob.DeclaredJob{Key: key}
	found, err := s.cfg.Store.JobListByName(ctx, key)
	if err != nil {
		return out, err
	}
	if len(found) == 0 {
		retired, ok, err := s.cfg.Store.DeclarationRetired(ctx, key)
		if err != nil {
			return out, err
		}
		if ok && retired == canon {
			out.Outcome = xjob.DeclareRetired
			s.cfg.Logger.InfoContext(ctx, "admin: declaration ignored: a person deleted this declared job; declare a changed definition to create it again",
				"name", key, "app", app)
			return out, nil
		}
		j := d.Job(app, gid)
		j.Declared = canon
		if s.cfg.StartDeclaredJobs {
			j.TriggerStatus = xjob.StatusRunning
		}
		created, err := s.createJob(ctx, j)
		if err != nil {
			return out, err
		}
		if created, err = s.keepLowest(ctx, key, created); err != nil {
			return out, err
		}
		out.ID, out.Outcome, out.Differs = created.ID, xjob.DeclareCreated, created.DeclarationDiff()
		s.cfg.Logger.InfoContext(ctx, "admin: declared job created", "job", created.ID, "name", key,
			"app", app, "started", created.TriggerStatus == xjob.StatusRunning)
		return out, nil
	}
	j := found[0]
	out.ID = j.ID
	switch {
	case j.Declared == "":
		out.Outcome = xjob.DeclareIgnored
		s.cfg.Logger.InfoContext(ctx, "admin: declaration ignored: a job of this name exists and was not declared",
			"job", j.ID, "name", key, "app", app)
		return out, nil
	case j.Declared == canon:
		out.Outcome, out.Differs = xjob.DeclareUnchanged, j.DeclarationDiff()
		return out, nil
	}
	rec, err := s.editJob(ctx, j.ID, 0, func(old xjob.Job, now int64) (xjob.Job, bool, error) {
		if old.Declared == canon {
			return old, false, nil
		}
		old.Declared = canon // no revision bump: what and when the job fires is unchanged
		return old, true, nil
	})
	if errors.Is(err, xjob.ErrNotFound) { // deleted meanwhile: the next start declares again
		out.Outcome = xjob.DeclareIgnored
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.Outcome, out.Differs = xjob.DeclareIgnored, rec.DeclarationDiff()
	s.cfg.Logger.InfoContext(ctx, "admin: declaration changed; recorded, not applied (the job is edited by people once created)",
		"job", j.ID, "name", key, "app", app, "differs", strings.Join(out.Differs, ","))
	return out, nil
}

// keepLowest resolves two concurrent creates of one name: when jobs other
// than created have the name, the lowest id stays and created, if it is
// not that one, is deleted.
func (s *Service) keepLowest(ctx context.Context, key string, created xjob.Job) (xjob.Job, error) {
	all, err := s.cfg.Store.JobListByName(ctx, key)
	if err != nil {
		return created, err
	}
	if len(all) < 2 || all[0].ID == created.ID {
		return created, nil
	}
	if err := s.deleteJob(ctx, created.ID); err != nil && !errors.Is(err, xjob.ErrNotFound) {
		return created, fmt.Errorf("remove duplicate job %d: %w", created.ID, err)
	}
	return all[0], nil
}
