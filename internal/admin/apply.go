package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/driver"
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
}

// Apply makes the server's groups and jobs match a manifest: it creates
// what is missing (under the id the manifest names, if any), updates what
// differs, and with Prune deletes what is not declared.
//
// The whole manifest is checked before anything is written: a bad field,
// a duplicate key, an unknown group or child, a taken id or a schedule
// that cannot start gives one *xjob.ValidationError naming every problem
// (fields are prefixed "groups[i]." or "jobs[i].") and no write. The
// writes are then made one by one, in dependency order (groups created,
// groups updated, jobs created, jobs updated, jobs deleted, groups
// deleted). They are not one transaction: if one fails (store down, a
// concurrent edit) Apply stops, returns the plan with Done and Error set
// as far as it got, and the error; applying again converges, because a
// second apply of the same manifest plans nothing.
func (s *Service) Apply(ctx context.Context, p ApplyParams) (xjob.ApplyResult, error) {
	if n := len(p.Manifest.Groups) + len(p.Manifest.Jobs); n > MaxManifestItems {
		return xjob.ApplyResult{}, invalid("manifest", "has %d groups and jobs, at most %d allowed", n, MaxManifestItems)
	}
	groups, err := s.cfg.Store.GroupList(ctx, driver.GroupListParams{})
	if err != nil {
		return xjob.ApplyResult{}, fmt.Errorf("admin apply: %w", err)
	}
	jobs, err := s.allJobs(ctx)
	if err != nil {
		return xjob.ApplyResult{}, fmt.Errorf("admin apply: %w", err)
	}
	pl, err := s.plan(p, groups, jobs)
	if err != nil {
		return xjob.ApplyResult{}, err
	}
	res := xjob.ApplyResult{Plan: pl.items(), Unchanged: pl.unchanged, DryRun: p.DryRun}
	if p.DryRun {
		return res, nil
	}
	err = s.execute(ctx, pl, res.Plan)
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
		js := specOf(j, app[j.GroupID])
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

// plan is what an apply will do. Changes reference the manifest by index.
type plan struct {
	groups    []groupChange
	jobs      []jobChange
	unchanged int
	// named maps the names of stored jobs to their ids.
	named map[string]int64
}

type groupChange struct {
	action  string
	key     string
	want    xjob.Group // with ID set for updates, deletes and explicit-id creates
	changes []string
}

type jobChange struct {
	action  string
	key     string
	want    xjob.Job // GroupID 0 while the group is still to be created
	group   string   // app name, resolved to GroupID at execution
	old     xjob.Job
	changes []string
	// children are the keys of the child jobs, resolved to ids at
	// execution (a child may be created by the same apply).
	children []string
}

func (pl *plan) items() []xjob.PlanItem {
	out := []xjob.PlanItem{}
	for _, g := range pl.groups {
		out = append(out, xjob.PlanItem{Kind: "group", Key: g.key, Action: g.action, ID: g.want.ID, Changes: g.changes})
	}
	for _, j := range pl.jobs {
		out = append(out, xjob.PlanItem{Kind: "job", Key: j.key, Action: j.action, ID: j.want.ID, Changes: j.changes})
	}
	return out
}

// plan validates the manifest against the stored groups and jobs and
// works out the changes.
func (s *Service) plan(p ApplyParams, groups []xjob.Group, jobs []xjob.Job) (*plan, error) {
	var probs []xjob.FieldProblem
	add := func(field, format string, args ...any) {
		probs = append(probs, xjob.FieldProblem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	pl := &plan{}
	now := s.now()

	// Groups, keyed by app name.
	byApp := map[string][]xjob.Group{}
	groupByID := map[int64]xjob.Group{}
	for _, g := range groups {
		byApp[g.AppName] = append(byApp[g.AppName], g)
		groupByID[g.ID] = g
	}
	declaredApp := map[string]bool{}
	keptGroup := map[int64]bool{}
	groupIDs := map[int64]bool{} // explicit ids of groups to create
	for i, gs := range p.Manifest.Groups {
		f := fmt.Sprintf("groups[%d].", i)
		if declaredApp[gs.AppName] {
			add(f+"appname", "%q is declared twice", gs.AppName)
			continue
		}
		declaredApp[gs.AppName] = true
		want := xjob.Group{AppName: gs.AppName, Title: gs.Title, AddressType: gs.AddressType, AddressList: gs.AddressList}
		if err := want.Validate(); err != nil {
			addValidation(&probs, f, err)
			continue
		}
		switch olds := byApp[gs.AppName]; len(olds) {
		case 0:
			if gs.ID != 0 {
				if gs.ID < 0 || gs.ID > math.MaxInt32 {
					add(f+"id", "%d is not a group id", gs.ID)
					continue
				}
				if other, taken := groupByID[gs.ID]; taken {
					add(f+"id", "%d is taken by group %q", gs.ID, other.AppName)
					continue
				}
				if groupIDs[gs.ID] {
					add(f+"id", "%d is declared twice", gs.ID)
					continue
				}
				groupIDs[gs.ID] = true
			}
			want.ID = gs.ID
			pl.groups = append(pl.groups, groupChange{action: xjob.ActionCreate, key: gs.AppName, want: want})
		case 1:
			old := olds[0]
			keptGroup[old.ID] = true
			want.ID = old.ID
			var changes []string
			if want.Title != old.Title {
				changes = append(changes, "title")
			}
			if want.AddressType != old.AddressType {
				changes = append(changes, "addressType")
			}
			if want.AddressType == xjob.AddressManual && !slices.Equal(want.AddressList, old.AddressList) {
				changes = append(changes, "addressList")
			}
			if len(changes) == 0 {
				pl.unchanged++
				continue
			}
			pl.groups = append(pl.groups, groupChange{action: xjob.ActionUpdate, key: gs.AppName, want: want, changes: changes})
		default:
			add(f+"appname", "%d groups on the server have app name %q; keep one", len(olds), gs.AppName)
		}
	}
	// groupOf resolves a job's group by app name: a stored group (id) or
	// one this apply creates (0).
	groupOf := func(app string) (int64, bool) {
		if declaredApp[app] {
			if olds := byApp[app]; len(olds) == 1 {
				return olds[0].ID, true
			}
			return 0, true
		}
		if olds := byApp[app]; len(olds) == 1 {
			keptGroup[olds[0].ID] = true
			return olds[0].ID, true
		}
		return 0, false
	}

	// Jobs, keyed by name or id.
	jobByName := map[string]xjob.Job{}
	jobByID := map[int64]xjob.Job{}
	pl.named = map[string]int64{}
	for _, j := range jobs {
		jobByID[j.ID] = j
		if j.Name != "" {
			jobByName[j.Name] = j
			pl.named[j.Name] = j.ID
		}
	}
	declaredKey := map[string]bool{}
	declaredID := map[int64]bool{}    // stored ids matched, or explicit ids of creates
	declaredName := map[string]bool{} // names of declared jobs
	type pending struct {
		idx    int
		change jobChange
	}
	var pend []pending
	for i, js := range p.Manifest.Jobs {
		f := fmt.Sprintf("jobs[%d].", i)
		key := js.Key()
		if key == "" {
			add(f+"name", "a job needs a name (or an id)")
			continue
		}
		if err := xjob.ValidateJobName(js.Name); err != nil {
			add(f+"name", "%v", err)
			continue
		}
		if declaredKey[key] {
			add(f+"name", "%q is declared twice", key)
			continue
		}
		declaredKey[key] = true
		if js.ID < 0 || js.ID > math.MaxInt32 {
			add(f+"id", "%d is not a job id", js.ID)
			continue
		}
		var old xjob.Job
		var found bool
		if js.Name != "" {
			old, found = jobByName[js.Name]
		}
		if !found && js.ID != 0 {
			if o, ok := jobByID[js.ID]; ok {
				if o.Name != "" && o.Name != js.Name {
					add(f+"id", "%d is taken by job %q", js.ID, o.Name)
					continue
				}
				old, found = o, true
			}
		}
		if found {
			if declaredID[old.ID] {
				add(f+"name", "job %d is declared twice", old.ID)
				continue
			}
			declaredID[old.ID] = true
		} else if js.ID != 0 {
			declaredID[js.ID] = true
		}
		if js.Name != "" {
			declaredName[js.Name] = true
		}
		gid, ok := groupOf(js.Group)
		if !ok {
			add(f+"group", "no group has app name %q (declare it under groups)", js.Group)
			continue
		}
		want := jobOfSpec(js, gid)
		check := want
		if check.GroupID == 0 {
			check.GroupID = math.MaxInt32 // created by this apply; only its presence matters here
		}
		if err := check.Validate(); err != nil {
			addValidation(&probs, f, err)
			continue
		}
		if len(js.Children) > xjob.MaxChildJobs {
			add(f+"children", "at most %d child jobs", xjob.MaxChildJobs)
			continue
		}
		ch := jobChange{key: key, want: want, group: js.Group, children: js.Children}
		if found {
			ch.old = old
			ch.want.ID = old.ID
			if old.GlueType != want.GlueType {
				add(f+"glueType", "cannot change after creation (job is %s)", old.GlueType)
				continue
			}
		} else {
			ch.want.ID = js.ID
		}
		pend = append(pend, pending{i, ch})
	}
	// Children: a declared job's key, a stored job's name or id that the
	// apply keeps. Then the changes, now that every id is known.
	childID := func(ref string) (id int64, known bool, ok bool) {
		if n, err := strconv.ParseInt(ref, 10, 64); err == nil {
			if declaredKey["#"+ref] || declaredID[n] {
				_, stored := jobByID[n]
				return n, stored, true
			}
			_, stored := jobByID[n]
			return n, stored, stored && !p.Prune
		}
		if declaredName[ref] {
			j, stored := jobByName[ref]
			return j.ID, stored, true
		}
		j, stored := jobByName[ref]
		return j.ID, stored, stored && !p.Prune
	}
	for _, pd := range pend {
		f := fmt.Sprintf("jobs[%d].", pd.idx)
		ch := pd.change
		var ids []int64
		resolved := true
		bad := false
		for _, ref := range ch.children {
			id, known, ok := childID(ref)
			switch {
			case !ok:
				add(f+"children", "%q is not a job the manifest declares or the server keeps", ref)
				bad = true
			case ref == ch.key || (id != 0 && id == ch.want.ID):
				add(f+"children", "a job cannot be its own child")
				bad = true
			case known:
				ids = append(ids, id)
			default:
				resolved = false // created by this apply
			}
		}
		if bad {
			continue
		}
		if ch.want.TriggerStatus == xjob.StatusRunning && (ch.old.ID == 0 ||
			ch.old.TriggerStatus != xjob.StatusRunning || timingChanged(&ch.old, &ch.want)) {
			if _, err := s.firstFire(&ch.want, now); err != nil {
				addValidation(&probs, f, err)
				continue
			}
		}
		if ch.old.ID == 0 {
			ch.action = xjob.ActionCreate
			pl.jobs = append(pl.jobs, ch)
			continue
		}
		cmpWant := ch.want
		if cmpWant.GroupID == 0 {
			cmpWant.GroupID = -1 // moving to a group this apply creates
		}
		if resolved {
			cmpWant.ChildJobIDs = ids
		} else {
			cmpWant.ChildJobIDs = []int64{-1}
		}
		ch.changes = jobChanges(&ch.old, &cmpWant)
		if len(ch.changes) == 0 {
			pl.unchanged++
			continue
		}
		ch.action = xjob.ActionUpdate
		pl.jobs = append(pl.jobs, ch)
	}
	if p.Prune {
		for _, j := range jobs {
			if !declaredID[j.ID] {
				key := j.Name
				if key == "" {
					key = "#" + strconv.FormatInt(j.ID, 10)
				}
				pl.jobs = append(pl.jobs, jobChange{action: xjob.ActionDelete, key: key, want: j, old: j})
			}
		}
		for _, g := range groups {
			if !keptGroup[g.ID] && !declaredApp[g.AppName] {
				pl.groups = append(pl.groups, groupChange{action: xjob.ActionDelete, key: g.AppName, want: g})
			}
		}
	}
	if len(probs) > 0 {
		return nil, &xjob.ValidationError{Problems: probs}
	}
	return pl, nil
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

// jobChanges names the declared fields in which want differs from old.
func jobChanges(old, want *xjob.Job) []string {
	var out []string
	diff := func(name string, changed bool) {
		if changed {
			out = append(out, name)
		}
	}
	diff("name", old.Name != want.Name)
	diff("group", old.GroupID != want.GroupID)
	diff("jobDesc", old.Description != want.Description)
	diff("author", old.Author != want.Author)
	diff("alarmEmail", old.AlarmEmail != want.AlarmEmail)
	diff("scheduleType", old.ScheduleType != want.ScheduleType)
	diff("scheduleConf", old.ScheduleConf != want.ScheduleConf)
	diff("timeZone", old.TimeZone != want.TimeZone)
	diff("misfireStrategy", old.MisfireStrategy != want.MisfireStrategy)
	diff("afterCompletion", old.AfterCompletion != want.AfterCompletion)
	diff("executorRouteStrategy", old.RouteStrategy != want.RouteStrategy)
	diff("executorHandler", old.Handler != want.Handler)
	diff("executorParam", old.Param != want.Param)
	diff("executorBlockStrategy", old.BlockStrategy != want.BlockStrategy)
	diff("executorTimeout", old.TimeoutSeconds != want.TimeoutSeconds)
	diff("executorFailRetryCount", old.FailRetryCount != want.FailRetryCount)
	diff("glueSource", old.GlueSource != want.GlueSource)
	diff("glueRemark", old.GlueRemark != want.GlueRemark)
	diff("children", !sameIDs(old.ChildJobIDs, want.ChildJobIDs))
	diff("started", old.TriggerStatus != want.TriggerStatus)
	return out
}

func sameIDs(a, b []int64) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// execute carries out a plan, marking items Done or Error in order.
func (s *Service) execute(ctx context.Context, pl *plan, items []xjob.PlanItem) error {
	ng := len(pl.groups)
	mark := func(i int, id int64, err error) error {
		if id != 0 {
			items[i].ID = id
		}
		if err != nil {
			items[i].Error = err.Error()
			return fmt.Errorf("apply %s %s %q: %w", items[i].Action, items[i].Kind, items[i].Key, err)
		}
		items[i].Done = true
		return nil
	}
	// Creates under an explicit id go first, so that an id the store
	// allocates for another create cannot take it.
	appID := map[string]int64{}
	for _, explicit := range []bool{true, false} {
		for i, g := range pl.groups {
			if (g.want.ID != 0) != explicit || g.action == xjob.ActionDelete ||
				(g.action == xjob.ActionUpdate && !explicit) {
				continue // deletes come last; updates once
			}
			appID[g.key] = g.want.ID
			var out xjob.Group
			var err error
			if g.action == xjob.ActionCreate {
				out, err = s.createGroup(ctx, g.want)
				appID[g.key] = out.ID
			} else {
				out, err = s.UpdateGroup(ctx, UpdateGroupParams{Group: g.want})
			}
			if err := mark(i, out.ID, err); err != nil {
				return err
			}
		}
	}
	keyID := map[string]int64{}
	for i := range pl.jobs {
		ch := &pl.jobs[i]
		if ch.want.ID != 0 {
			keyID[ch.key] = ch.want.ID
		}
		if ch.action == xjob.ActionCreate || ch.action == xjob.ActionUpdate {
			if ch.want.GroupID == 0 {
				ch.want.GroupID = appID[ch.group]
			}
		}
	}
	// Creates, without children (which may not exist yet); explicit ids first.
	for _, explicit := range []bool{true, false} {
		for i := range pl.jobs {
			ch := &pl.jobs[i]
			if ch.action != xjob.ActionCreate || (ch.want.ID != 0) != explicit || items[ng+i].Done {
				continue
			}
			out, err := s.createJob(ctx, ch.want)
			ch.want.ID = out.ID
			keyID[ch.key] = out.ID
			if err := mark(ng+i, out.ID, err); err != nil {
				return err
			}
		}
	}
	resolve := func(ref string) int64 {
		if id, ok := keyID[ref]; ok {
			return id
		}
		if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
			return id
		}
		return pl.named[ref]
	}
	for i := range pl.jobs {
		ch := &pl.jobs[i]
		if ch.action == xjob.ActionDelete || (ch.action == xjob.ActionCreate && len(ch.children) == 0) {
			continue
		}
		want := ch.want
		want.ChildJobIDs = nil
		for _, ref := range ch.children {
			want.ChildJobIDs = append(want.ChildJobIDs, resolve(ref))
		}
		out, err := s.UpdateJob(ctx, UpdateJobParams{Job: want})
		if err == nil && out.TriggerStatus != want.TriggerStatus {
			if want.TriggerStatus == xjob.StatusRunning {
				_, err = s.StartJob(ctx, ch.want.ID)
			} else {
				_, err = s.StopJob(ctx, ch.want.ID)
			}
		}
		if err != nil && ch.action == xjob.ActionCreate {
			items[ng+i].Done = false
			err = fmt.Errorf("set children: %w", err)
		}
		if err := mark(ng+i, 0, err); err != nil {
			return err
		}
	}
	for i, ch := range pl.jobs {
		if ch.action == xjob.ActionDelete {
			if err := mark(ng+i, 0, s.DeleteJob(ctx, ch.want.ID)); err != nil {
				return err
			}
		}
	}
	for i, g := range pl.groups {
		if g.action == xjob.ActionDelete {
			if err := mark(i, 0, s.DeleteGroup(ctx, g.want.ID)); err != nil {
				return err
			}
		}
	}
	return nil
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
