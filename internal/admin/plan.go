package admin

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/xjobdev/xjob"
)

// plan is what an apply will do, worked out and validated before any
// write (see Apply). Its parts are filled in order by planGroups,
// planJobs, planChildren, planMerge and planPrune.
type plan struct {
	groups []groupChange
	jobs   []jobChange
	// adopt are stored jobs that already match the manifest but carry no
	// record of it: the record is written, nothing else.
	adopt []jobChange
	// keep are stored jobs the apply leaves as they are although the
	// manifest differs: every differing field is one xjob keeps (see
	// Apply). They are reported, never written.
	keep      []jobChange
	unchanged int
}

type groupChange struct {
	action  string
	key     string
	want    xjob.Group // with ID set for updates, deletes and explicit-id creates
	old     xjob.Group
	changes []string
}

type jobChange struct {
	action string
	key    string
	idx    int      // index in the manifest's jobs; -1 for a prune
	want   xjob.Job // the job as it will be stored (GroupID 0: group created by this apply)
	group  string   // app name of want's group
	old    xjob.Job
	// children are the child jobs' keys (see planner.keyOf) as they will
	// be stored, resolved to ids when the change set is built.
	children    []string
	diffs, kept []xjob.FieldChange
	glueHistory []xjob.GlueVersionSpec
	applied     string // want's Applied record
}

func (pl *plan) items() []xjob.PlanItem {
	out := []xjob.PlanItem{}
	for _, g := range pl.groups {
		out = append(out, xjob.PlanItem{Kind: "group", Key: g.key, Action: g.action, ID: g.want.ID, Changes: g.changes})
	}
	for _, j := range pl.jobs {
		it := xjob.PlanItem{Kind: "job", Key: j.key, Action: j.action, ID: j.want.ID, Diffs: j.diffs, Kept: j.kept}
		for _, d := range j.diffs {
			it.Changes = append(it.Changes, d.Field)
		}
		out = append(out, it)
	}
	// Last, so that write's indexes of groups and jobs stay those of items.
	for _, j := range pl.keep {
		out = append(out, xjob.PlanItem{Kind: "job", Key: j.key, Action: xjob.ActionKeep, ID: j.old.ID, Kept: j.kept})
	}
	return out
}

// planner holds what the parts of the plan share.
type planner struct {
	s     *Service
	ctx   context.Context // of the apply: the target URLs' egress check
	p     ApplyParams
	now   int64
	probs []xjob.FieldProblem
	pl    *plan

	groups    []xjob.Group
	byApp     map[string][]xjob.Group
	groupByID map[int64]xjob.Group
	app       map[int64]string // stored group id → app name

	declaredApp map[string]bool
	keptGroup   map[int64]bool

	jobs      []xjob.Job
	jobByName map[string]xjob.Job
	jobByID   map[int64]xjob.Job
	// declared maps the manifest's job keys to their change; declaredID
	// the ids the manifest names or matches.
	declared   map[string]*jobChange
	declaredID map[int64]string // id → key
	pending    []*jobChange
}

func (pp *planner) add(field, format string, args ...any) {
	pp.probs = append(pp.probs, xjob.FieldProblem{Field: field, Message: fmt.Sprintf(format, args...)})
}

// plan validates the manifest against the stored groups and jobs and
// works out the changes.
func (s *Service) plan(ctx context.Context, p ApplyParams, groups []xjob.Group, jobs []xjob.Job) (*plan, error) {
	pp := &planner{s: s, ctx: ctx, p: p, now: s.now(), pl: &plan{}, groups: groups, jobs: jobs}
	pp.planGroups()
	pp.planJobs()
	pp.planChildren()
	pp.planMerge()
	pp.planCycles()
	pp.planPrune()
	if len(pp.probs) > 0 {
		return nil, &xjob.ValidationError{Problems: pp.probs}
	}
	return pp.pl, nil
}

// planGroups matches the manifest's groups to the stored ones by app name.
func (pp *planner) planGroups() {
	pp.byApp = map[string][]xjob.Group{}
	pp.groupByID = map[int64]xjob.Group{}
	pp.app = map[int64]string{}
	for _, g := range pp.groups {
		pp.byApp[g.AppName] = append(pp.byApp[g.AppName], g)
		pp.groupByID[g.ID] = g
		pp.app[g.ID] = g.AppName
	}
	pp.declaredApp = map[string]bool{}
	pp.keptGroup = map[int64]bool{}
	groupIDs := map[int64]bool{} // explicit ids of groups to create
	for i, gs := range pp.p.Manifest.Groups {
		f := fmt.Sprintf("groups[%d].", i)
		if pp.declaredApp[gs.AppName] {
			pp.add(f+"appname", "%q is declared twice", gs.AppName)
			continue
		}
		pp.declaredApp[gs.AppName] = true
		want := xjob.Group{AppName: gs.AppName, Title: gs.Title, AddressType: gs.AddressType, AddressList: gs.AddressList}
		if err := want.Validate(); err != nil {
			addValidation(&pp.probs, f, err)
			continue
		}
		switch olds := pp.byApp[gs.AppName]; len(olds) {
		case 0:
			if gs.ID != 0 {
				if gs.ID < 0 || gs.ID > math.MaxInt32 {
					pp.add(f+"id", "%d is not a group id", gs.ID)
					continue
				}
				if other, taken := pp.groupByID[gs.ID]; taken {
					pp.add(f+"id", "%d is taken by group %q", gs.ID, other.AppName)
					continue
				}
				if groupIDs[gs.ID] {
					pp.add(f+"id", "%d is declared twice", gs.ID)
					continue
				}
				groupIDs[gs.ID] = true
			}
			want.ID = gs.ID
			pp.pl.groups = append(pp.pl.groups, groupChange{action: xjob.ActionCreate, key: gs.AppName, want: want})
		case 1:
			old := olds[0]
			pp.keptGroup[old.ID] = true
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
				pp.pl.unchanged++
				continue
			}
			pp.pl.groups = append(pp.pl.groups, groupChange{action: xjob.ActionUpdate, key: gs.AppName, want: want,
				old: old, changes: changes})
		default:
			pp.add(f+"appname", "%d groups on the server have app name %q; keep one", len(olds), gs.AppName)
		}
	}
}

// groupOf resolves a job's group by app name: a stored group (its id) or
// one this apply creates (0).
func (pp *planner) groupOf(app string) (int64, bool) {
	if pp.declaredApp[app] {
		if olds := pp.byApp[app]; len(olds) == 1 {
			return olds[0].ID, true
		}
		return 0, true
	}
	if olds := pp.byApp[app]; len(olds) == 1 {
		pp.keptGroup[olds[0].ID] = true
		return olds[0].ID, true
	}
	return 0, false
}

// planJobs matches the manifest's jobs to the stored ones (by name, else
// by id) and validates each.
func (pp *planner) planJobs() {
	pp.jobByName = map[string]xjob.Job{}
	pp.jobByID = map[int64]xjob.Job{}
	for _, j := range pp.jobs {
		pp.jobByID[j.ID] = j
		if j.Name != "" {
			pp.jobByName[j.Name] = j
		}
	}
	pp.declared = map[string]*jobChange{}
	pp.declaredID = map[int64]string{}
	for i, js := range pp.p.Manifest.Jobs {
		f := fmt.Sprintf("jobs[%d].", i)
		key := js.Key()
		switch {
		case key == "":
			pp.add(f+"name", "a job needs a name (or an id)")
			continue
		case xjob.ValidateJobName(js.Name) != nil:
			pp.add(f+"name", "%v", xjob.ValidateJobName(js.Name))
			continue
		case pp.declared[key] != nil:
			pp.add(f+"name", "%q is declared twice", key)
			continue
		case js.ID < 0 || js.ID > math.MaxInt32:
			pp.add(f+"id", "%d is not a job id", js.ID)
			continue
		}
		var old xjob.Job
		var found bool
		if js.Name != "" {
			old, found = pp.jobByName[js.Name]
		}
		if !found && js.ID != 0 {
			if o, ok := pp.jobByID[js.ID]; ok {
				if o.Name != "" && o.Name != js.Name {
					pp.add(f+"id", "%d is taken by job %q", js.ID, o.Name)
					continue
				}
				old, found = o, true
			}
		}
		id := js.ID
		if found {
			id = old.ID
		}
		if other, dup := pp.declaredID[id]; id != 0 && dup {
			pp.add(f+"name", "job %d is declared twice (also as %q)", id, other)
			continue
		}
		gid, ok := pp.groupOf(js.Group)
		if !ok {
			pp.add(f+"group", "no group has app name %q (declare it under groups)", js.Group)
			continue
		}
		want := jobOfSpec(js, gid)
		check := want
		if check.GroupID == 0 {
			check.GroupID = math.MaxInt32 // created by this apply; only its presence matters here
		}
		if err := check.Validate(); err != nil {
			addValidation(&pp.probs, f, err)
			continue
		}
		if len(js.Children) > xjob.MaxChildJobs {
			pp.add(f+"children", "at most %d child jobs", xjob.MaxChildJobs)
			continue
		}
		var oldSource string
		if found && old.GlueType == want.GlueType {
			oldSource = old.GlueSource
		}
		if err := pp.s.prepareTarget(pp.ctx, &want, oldSource); err != nil {
			addValidation(&pp.probs, f, err)
			continue
		}
		ch := &jobChange{key: key, idx: i, want: want, group: js.Group, glueHistory: js.GlueHistory}
		ch.want.ID = id
		if found {
			ch.old = old
			if old.GlueType != want.GlueType {
				pp.add(f+"glueType", "cannot change after creation (job is %s)", old.GlueType)
				continue
			}
			if rec := readApplied(old.Applied); pp.p.Origin != "" && rec.Origin != "" && rec.Origin != pp.p.Origin {
				pp.add(f+"name", "job %d was imported from %s, this manifest comes from %s: import it beside "+
					"(with a name prefix and an id offset), not over it", old.ID, rec.Origin, pp.p.Origin)
				continue
			}
		}
		if id != 0 {
			pp.declaredID[id] = key
		}
		pp.declared[key] = ch
		pp.pending = append(pp.pending, ch)
	}
}

// keyOf is the key a stored job is known by in a plan: its name, or "#id".
func keyOf(j xjob.Job) string {
	if j.Name != "" {
		return j.Name
	}
	return "#" + strconv.FormatInt(j.ID, 10)
}

// childKey resolves a manifest's child reference — a job's name or its id
// as a number — to the key of a declared job or of a stored job the apply
// keeps.
func (pp *planner) childKey(ref string) (string, bool) {
	if n, err := strconv.ParseInt(ref, 10, 64); err == nil {
		if key, ok := pp.declaredID[n]; ok {
			return key, true
		}
		if pp.declared["#"+ref] != nil {
			return "#" + ref, true
		}
		if j, ok := pp.jobByID[n]; ok && !pp.p.Prune {
			return keyOf(j), true
		}
		return "", false
	}
	if pp.declared[ref] != nil {
		return ref, true
	}
	if j, ok := pp.jobByName[ref]; ok && !pp.p.Prune {
		if key, declared := pp.declaredID[j.ID]; declared {
			return key, true
		}
		return ref, true
	}
	return "", false
}

// planChildren resolves every declared job's children to keys.
func (pp *planner) planChildren() {
	for _, ch := range pp.pending {
		f := fmt.Sprintf("jobs[%d].", ch.idx)
		for _, ref := range pp.p.Manifest.Jobs[ch.idx].Children {
			key, ok := pp.childKey(ref)
			switch {
			case !ok:
				pp.add(f+"children", "%q is not a job the manifest declares or the server keeps", ref)
			case key == ch.key:
				pp.add(f+"children", "a job cannot be its own child (%q)", ref)
			case slices.Contains(ch.children, key):
			default:
				ch.children = append(ch.children, key)
			}
		}
		slices.Sort(ch.children)
	}
}

// storedChildren are a stored job's children as keys.
func (pp *planner) storedChildren(j xjob.Job) []string {
	var out []string
	for _, id := range j.ChildJobIDs {
		if key, ok := pp.declaredID[id]; ok {
			out = append(out, key)
		} else if c, ok := pp.jobByID[id]; ok {
			out = append(out, keyOf(c))
		} else {
			out = append(out, "#"+strconv.FormatInt(id, 10))
		}
	}
	slices.Sort(out)
	return out
}

// planMerge decides each declared job's action and its fields, three
// ways for an update (see Apply), and checks that a job to run can start.
func (pp *planner) planMerge() {
	for _, ch := range pp.pending {
		f := fmt.Sprintf("jobs[%d].", ch.idx)
		file := fieldValues(&ch.want, ch.group, ch.children)
		ch.applied = writeApplied(appliedRecord{Origin: pp.p.Origin, Fields: file})
		if ch.old.ID == 0 {
			ch.action = xjob.ActionCreate
			ch.want.Applied = ch.applied
			if err := pp.s.startState(&ch.want, nil, pp.now); err != nil {
				addValidation(&pp.probs, f, err)
				continue
			}
			pp.pl.jobs = append(pp.pl.jobs, *ch)
			continue
		}
		rec := readApplied(ch.old.Applied)
		live := fieldValues(&ch.old, pp.app[ch.old.GroupID], pp.storedChildren(ch.old))
		final := ch.old
		final.Applied = ch.applied
		finalChildren := pp.storedChildren(ch.old)
		finalGroup := pp.app[ch.old.GroupID]
		for _, fd := range jobFields {
			fv, lv := file[fd.name], live[fd.name]
			if fv == lv {
				continue
			}
			bv, hasBase := rec.Fields[fd.name]
			// KeepStarted: started is merged three ways even under
			// Overwrite, and without a record xjob's state stays.
			keepStarted := pp.p.KeepStarted && fd.name == "started"
			side := xjob.SideFile
			switch {
			case (pp.p.Overwrite && !keepStarted) || (rec.Fields == nil && !keepStarted) || (hasBase && bv == lv):
			case (hasBase && bv == fv) || rec.Fields == nil:
				side = xjob.SideXjob
			default:
				side = xjob.SideBoth
			}
			c := xjob.FieldChange{Field: fd.name, Old: shorten(lv), New: shorten(fv), Side: side}
			if side != xjob.SideFile {
				ch.kept = append(ch.kept, c)
				continue
			}
			ch.diffs = append(ch.diffs, c)
			switch fd.name {
			case "group":
				final.GroupID, finalGroup = ch.want.GroupID, ch.group
			case "children":
				finalChildren = ch.children
			default:
				fd.set(&final, &ch.want)
			}
		}
		ch.children, ch.group = finalChildren, finalGroup
		if len(ch.diffs) == 0 {
			// Under KeepStarted (an import) xjob's started is the
			// state by design, not news to report on every import.
			news := slices.ContainsFunc(ch.kept, func(c xjob.FieldChange) bool {
				return !(pp.p.KeepStarted && c.Field == "started" && c.Side == xjob.SideXjob)
			})
			if news {
				// Nothing to write, but the manifest's values that
				// stay unwritten are said, not dropped silently.
				pp.pl.keep = append(pp.pl.keep, *ch)
				continue
			}
			pp.pl.unchanged++
			if ch.old.Applied != ch.applied && len(ch.kept) == 0 {
				ch.want = final
				pp.pl.adopt = append(pp.pl.adopt, *ch)
			}
			continue
		}
		if err := pp.s.startState(&final, &ch.old, pp.now); err != nil {
			addValidation(&pp.probs, f, err)
			continue
		}
		ch.want, ch.action = final, xjob.ActionUpdate
		pp.pl.jobs = append(pp.pl.jobs, *ch)
	}
}

// planCycles refuses child jobs that would form a cycle once the apply is
// written: the graph is the declared jobs' final children and the stored
// jobs' children.
func (pp *planner) planCycles() {
	graph := map[string][]string{}
	for _, j := range pp.jobs {
		if _, declared := pp.declaredID[j.ID]; !declared {
			graph[keyOf(j)] = pp.storedChildren(j)
		}
	}
	idx := map[string]int{}
	for _, ch := range pp.pl.jobs {
		graph[ch.key], idx[ch.key] = ch.children, ch.idx
	}
	for _, ch := range pp.pl.adopt {
		graph[ch.key], idx[ch.key] = ch.children, ch.idx
	}
	for _, cyc := range Cycles(graph) {
		i, ok := idx[cyc[0]]
		field := "jobs"
		if ok {
			field = fmt.Sprintf("jobs[%d].children", i)
		}
		pp.add(field, "child jobs form a cycle (%s): each would trigger the next forever", strings.Join(cyc, " → "))
	}
}

// planPrune deletes the stored jobs and groups the manifest does not declare.
func (pp *planner) planPrune() {
	if !pp.p.Prune {
		return
	}
	for _, j := range pp.jobs {
		if _, declared := pp.declaredID[j.ID]; !declared {
			pp.pl.jobs = append(pp.pl.jobs, jobChange{action: xjob.ActionDelete, key: keyOf(j), idx: -1, want: j, old: j})
		}
	}
	for _, g := range pp.groups {
		if !pp.keptGroup[g.ID] && !pp.declaredApp[g.AppName] {
			pp.pl.groups = append(pp.pl.groups, groupChange{action: xjob.ActionDelete, key: g.AppName, want: g, old: g})
		}
	}
}

// Cycles finds the cycles of a directed graph given as adjacency lists,
// each once, as the path from its first node (in sorted order of the
// nodes where the search started) back to it: ["a", "b", "a"].
func Cycles(graph map[string][]string) [][]string {
	nodes := make([]string, 0, len(graph))
	for n := range graph {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var out [][]string
	var visit func(n string)
	visit = func(n string) {
		color[n] = grey
		stack = append(stack, n)
		for _, c := range graph[n] {
			switch color[c] {
			case white:
				visit(c)
			case grey:
				i := slices.Index(stack, c)
				cyc := append(slices.Clone(stack[i:]), c)
				out = append(out, cyc)
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
	}
	for _, n := range nodes {
		if color[n] == white {
			visit(n)
		}
	}
	return out
}

// shorten keeps a plan's values readable: long ones are cut with their length.
func shorten(v string) string {
	const maxRunes = 80
	if r := []rune(v); len(r) > maxRunes {
		return fmt.Sprintf("%s… (%d characters)", string(r[:maxRunes]), len(r))
	}
	return v
}
