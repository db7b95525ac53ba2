package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

var _ driver.ChangeStore = (*DB)(nil)

// ChangeApply writes a change set in one transaction: any failed condition
// rolls the whole set back, and readers (READ COMMITTED) see it before or
// after, never a part of it.
func (db *DB) ChangeApply(ctx context.Context, cs driver.ChangeSet) (driver.ChangeResult, error) {
	var res driver.ChangeResult
	err := db.tx(ctx, "change apply", func(tx *sql.Tx) error {
		res = driver.ChangeResult{}
		return db.changeApply(ctx, tx, cs, &res)
	})
	if err != nil {
		return driver.ChangeResult{}, fmt.Errorf("mysql change apply: %w", err)
	}
	return res, nil
}

func (db *DB) changeApply(ctx context.Context, tx *sql.Tx, cs driver.ChangeSet, res *driver.ChangeResult) error {
	for _, g := range cs.GroupInserts {
		out, err := groupInsert(ctx, tx, g)
		if err != nil {
			return fmt.Errorf("group %q insert: %w", g.AppName, err)
		}
		res.GroupIDs = append(res.GroupIDs, out.ID)
	}
	for _, p := range cs.GroupUpdates {
		if _, err := groupUpdate(ctx, tx, p); err != nil {
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
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET child_job_ids = ? WHERE id = ?`, formatIDs(n.ChildJobIDs), n.ID); err != nil {
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
		if err := jobDelete(ctx, tx, id); err != nil {
			return fmt.Errorf("job %d delete: %w", id, err)
		}
	}
	for _, id := range cs.GroupDeletes {
		if err := groupDelete(ctx, tx, id); err != nil {
			return fmt.Errorf("group %d delete: %w", id, err)
		}
	}
	return nil
}

// ChangeResume has nothing to do: a set is one transaction.
func (db *DB) ChangeResume(context.Context) error { return nil }
