package admin

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// write builds the change set of a plan, writes it as one unit and then
// does what follows a job write outside the set: the first fires within
// the scan's horizon, GLUE versions, retired declarations. items are
// marked Done (or Error) accordingly.
func (s *Service) write(ctx context.Context, pl *plan, items []xjob.PlanItem) error {
	cs, err := s.changeSet(ctx, pl)
	if err != nil {
		return err
	}
	copy(items, pl.items()) // in the set's order
	res, err := s.cfg.Store.ChangeApply(ctx, cs)
	if err != nil {
		for i := range items {
			items[i].Error = "not written: the apply failed as a whole"
		}
		return fmt.Errorf("admin apply: %w", err)
	}
	ng, gi, ji := len(pl.groups), 0, 0
	for i := range pl.groups {
		if pl.groups[i].action == xjob.ActionCreate {
			items[i].ID = res.GroupIDs[gi]
			gi++
		}
		items[i].Done = true
	}
	var started pushBatch
	now := s.now()
	for i := range pl.jobs {
		ch := &pl.jobs[i]
		if ch.action == xjob.ActionCreate {
			ch.want.ID = res.JobIDs[ji]
			items[ng+i].ID = ch.want.ID
			ji++
		}
		items[ng+i].Done = true
		if err := s.afterWrite(ctx, ch, &started, now); err != nil {
			return err
		}
	}
	s.pushLater(ctx, &started)
	return nil
}

// changeSet turns a plan into the store's change set; a job's group and
// children created by the same apply become references to their inserts.
func (s *Service) changeSet(ctx context.Context, pl *plan) (driver.ChangeSet, error) {
	var cs driver.ChangeSet
	groupRef := map[string]int64{}
	// Creates under an explicit id go first, so that an id the store
	// allocates for another create cannot take it.
	slices.SortStableFunc(pl.groups, func(a, b groupChange) int { return explicitFirst(a.action, a.want.ID, b.action, b.want.ID) })
	slices.SortStableFunc(pl.jobs, func(a, b jobChange) int { return explicitFirst(a.action, a.want.ID, b.action, b.want.ID) })
	for _, g := range pl.groups {
		switch g.action {
		case xjob.ActionCreate:
			want := g.want
			want.Version, want.UpdatedAt = 0, s.now()
			if err := s.prepareGroup(ctx, &want); err != nil {
				return cs, err
			}
			cs.GroupInserts = append(cs.GroupInserts, want)
			groupRef[g.key] = -int64(len(cs.GroupInserts))
		case xjob.ActionUpdate:
			want := g.want
			want.UpdatedAt = s.now()
			if err := s.prepareGroup(ctx, &want); err != nil {
				return cs, err
			}
			cs.GroupUpdates = append(cs.GroupUpdates, driver.GroupUpdateParams{Group: want, ExpectVersion: g.old.Version})
		case xjob.ActionDelete:
			cs.GroupDeletes = append(cs.GroupDeletes, g.want.ID)
		}
	}
	keyID := map[string]int64{} // job key → id, or -k for the k-th insert
	for _, ch := range pl.jobs {
		if ch.action == xjob.ActionCreate {
			keyID[ch.key] = -int64(len(keyID) + 1)
		}
	}
	resolveGroup := func(ch *jobChange) int64 {
		if ch.want.GroupID != 0 {
			return ch.want.GroupID
		}
		return groupRef[ch.group]
	}
	resolveChildren := func(ch *jobChange) ([]int64, error) {
		var ids []int64
		for _, key := range ch.children {
			if id, ok := keyID[key]; ok {
				ids = append(ids, id)
				continue
			}
			id, err := s.storedKeyID(ctx, pl, key)
			if err != nil {
				return nil, fmt.Errorf("admin apply: job %q child %q: %w", ch.key, key, err)
			}
			ids = append(ids, id)
		}
		return ids, nil
	}
	ordered := func(action string) []*jobChange {
		var out []*jobChange
		for i := range pl.jobs {
			if pl.jobs[i].action == action {
				out = append(out, &pl.jobs[i])
			}
		}
		return out
	}
	for _, ch := range ordered(xjob.ActionCreate) {
		j := ch.want
		j.GroupID = resolveGroup(ch)
		var err error
		if j.ChildJobIDs, err = resolveChildren(ch); err != nil {
			return cs, err
		}
		cs.JobInserts = append(cs.JobInserts, j)
	}
	for _, ch := range append(ordered(xjob.ActionUpdate), ptrs(pl.adopt)...) {
		j := ch.want
		j.GroupID = resolveGroup(ch)
		var err error
		if j.ChildJobIDs, err = resolveChildren(ch); err != nil {
			return cs, err
		}
		cs.JobUpdates = append(cs.JobUpdates, driver.JobUpdateParams{Job: j, ExpectVersion: ch.old.Version})
	}
	for _, ch := range ordered(xjob.ActionDelete) {
		cs.JobDeletes = append(cs.JobDeletes, ch.want.ID)
	}
	return cs, nil
}

// explicitFirst orders creates under an explicit id before other changes.
func explicitFirst(actA string, idA int64, actB string, idB int64) int {
	rank := func(act string, id int64) int {
		if act == xjob.ActionCreate && id != 0 {
			return 0
		}
		return 1
	}
	return rank(actA, idA) - rank(actB, idB)
}

func ptrs(chs []jobChange) []*jobChange {
	out := make([]*jobChange, len(chs))
	for i := range chs {
		out[i] = &chs[i]
	}
	return out
}

// storedKeyID is the id of the stored job a plan knows by key.
func (s *Service) storedKeyID(ctx context.Context, pl *plan, key string) (int64, error) {
	for _, chs := range [][]jobChange{pl.jobs, pl.adopt} {
		for _, ch := range chs {
			if ch.key == key && ch.old.ID != 0 {
				return ch.old.ID, nil
			}
		}
	}
	if len(key) > 1 && key[0] == '#' {
		return strconv.ParseInt(key[1:], 10, 64)
	}
	js, err := s.cfg.Store.JobListByName(ctx, key)
	if err != nil {
		return 0, err
	}
	if len(js) == 0 {
		return 0, xjob.ErrNotFound
	}
	return js[0].ID, nil
}

// afterWrite does what follows one written job change outside the set:
// fires within the horizon (collected in started), GLUE versions (the
// manifest's history and the new source), a deleted job's GLUE versions
// and declaration. A failure here leaves the set written: it is returned
// and the job is still correct (the scan plans its fires).
func (s *Service) afterWrite(ctx context.Context, ch *jobChange, started *pushBatch, now int64) error {
	j := ch.want
	switch ch.action {
	case xjob.ActionDelete:
		if j.Declared != "" && j.Name != "" {
			if err := s.cfg.Store.DeclarationRetire(ctx, j.Name, j.Declared); err != nil {
				return fmt.Errorf("admin apply: job %d deleted, its declaration not retired: %w", j.ID, err)
			}
		}
		if err := s.cfg.Store.GlueVersionDeleteJob(ctx, j.ID); err != nil {
			return fmt.Errorf("admin apply: job %d deleted, its GLUE versions not: %w", j.ID, err)
		}
		return nil
	case xjob.ActionCreate:
		if j.GlueType.Script() {
			for _, v := range ch.glueHistory {
				if err := s.cfg.Store.GlueVersionAdd(ctx, xjob.GlueVersion{JobID: j.ID, GlueType: j.GlueType,
					Source: v.Source, Remark: v.Remark, CreatedAt: v.CreatedAt}, xjob.MaxGlueVersions); err != nil {
					return fmt.Errorf("admin apply: job %d: save GLUE version: %w", j.ID, err)
				}
			}
		}
	case xjob.ActionUpdate:
		if j.GlueType.Script() && j.GlueSource != ch.old.GlueSource {
			if err := s.cfg.Store.GlueVersionAdd(ctx, xjob.GlueVersion{JobID: j.ID, GlueType: j.GlueType,
				Source: j.GlueSource, Remark: j.GlueRemark, CreatedAt: j.GlueUpdatedAt}, xjob.MaxGlueVersions); err != nil {
				return fmt.Errorf("admin apply: job %d: save GLUE version: %w", j.ID, err)
			}
		}
	}
	if j.TriggerStatus == xjob.StatusRunning && (ch.action == xjob.ActionCreate || j.Revision != ch.old.Revision) {
		stored, err := s.cfg.Store.JobGet(ctx, j.ID)
		if err == nil {
			started.add(pendingPush{job: stored, now: now})
		}
	}
	return nil
}
