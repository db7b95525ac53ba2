package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

var _ driver.ChangeStore = (*DB)(nil)

// ChangeApply writes a change set in one transaction: any failed
// condition rolls the whole set back, and readers on every node see the
// set before or after, never a part of it.
func (db *DB) ChangeApply(ctx context.Context, cs driver.ChangeSet) (driver.ChangeResult, error) {
	var res driver.ChangeResult
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		res = driver.ChangeResult{}
		return db.changeApply(ctx, tx, cs, &res)
	})
	if err != nil {
		return driver.ChangeResult{}, db.wrap("change apply", err)
	}
	return res, nil
}

func (db *DB) changeApply(ctx context.Context, tx pgx.Tx, cs driver.ChangeSet, res *driver.ChangeResult) error {
	// Explicit ids lock their table before the set writes to it (see
	// lockForExplicitIDs), groups before jobs as the writes go.
	for _, t := range []struct {
		table    string
		explicit bool
	}{
		{"groups", anyExplicit(len(cs.GroupInserts), func(i int) int64 { return cs.GroupInserts[i].ID })},
		{"jobs", anyExplicit(len(cs.JobInserts), func(i int) int64 { return cs.JobInserts[i].ID })},
	} {
		if t.explicit {
			if err := lockForExplicitIDs(ctx, tx, t.table); err != nil {
				return err
			}
		}
	}
	for _, g := range cs.GroupInserts {
		out, err := groupInsert(ctx, tx, g)
		if err != nil {
			return fmt.Errorf("group %q insert: %w", g.AppName, err)
		}
		res.GroupIDs = append(res.GroupIDs, out.ID)
	}
	for _, p := range cs.GroupUpdates {
		if _, err := db.groupUpdate(ctx, tx, p); err != nil {
			return fmt.Errorf("group %d update: %w", p.Group.ID, err)
		}
	}
	// Jobs are inserted without children first: a child may be a later
	// insert of the set. Their children are set once every id is known.
	inserted := make([]xjob.Job, len(cs.JobInserts))
	for i, j := range cs.JobInserts {
		gid, err := driver.ResolveRef(j.GroupID, res.GroupIDs)
		if err != nil {
			return fmt.Errorf("job %q group: %w", j.Name, err)
		}
		j.GroupID, j.ChildJobIDs = gid, nil
		out, err := db.jobInsert(ctx, tx, j)
		if err != nil {
			return fmt.Errorf("job %d %q insert: %w", j.ID, j.Name, err)
		}
		inserted[i] = out
		res.JobIDs = append(res.JobIDs, out.ID)
	}
	for i, j := range cs.JobInserts {
		if len(j.ChildJobIDs) == 0 {
			continue
		}
		n := inserted[i]
		var err error
		if n.ChildJobIDs, err = driver.ResolveRefs(j.ChildJobIDs, res.JobIDs); err != nil {
			return fmt.Errorf("job %d children: %w", n.ID, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE jobs SET child_job_ids = $1 WHERE id = $2`, formatIDs(n.ChildJobIDs), n.ID); err != nil {
			return fmt.Errorf("job %d children: %w", n.ID, err)
		}
	}
	for _, p := range cs.JobUpdates {
		var err error
		if p.Job.GroupID, err = driver.ResolveRef(p.Job.GroupID, res.GroupIDs); err != nil {
			return fmt.Errorf("job %d group: %w", p.Job.ID, err)
		}
		if p.Job.ChildJobIDs, err = driver.ResolveRefs(p.Job.ChildJobIDs, res.JobIDs); err != nil {
			return fmt.Errorf("job %d children: %w", p.Job.ID, err)
		}
		if _, err := db.jobUpdate(ctx, tx, p); err != nil {
			return fmt.Errorf("job %d update: %w", p.Job.ID, err)
		}
	}
	for _, id := range cs.JobDeletes {
		if err := deleteByID(ctx, tx, "jobs", id); err != nil {
			return fmt.Errorf("job %d delete: %w", id, err)
		}
	}
	for _, id := range cs.GroupDeletes {
		if err := deleteByID(ctx, tx, "groups", id); err != nil {
			return fmt.Errorf("group %d delete: %w", id, err)
		}
	}
	return nil
}

func anyExplicit(n int, id func(i int) int64) bool {
	for i := range n {
		if id(i) != 0 {
			return true
		}
	}
	return false
}

// ChangeResume has nothing to do: a set is one transaction.
func (db *DB) ChangeResume(context.Context) error { return nil }

// ChangePending reports that no change set is ever left staged (a set is
// one transaction), so the upkeep's resume takes no lease on this store.
func (db *DB) ChangePending(context.Context) (bool, error) { return false, nil }
