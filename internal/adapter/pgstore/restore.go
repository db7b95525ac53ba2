package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

var _ driver.RestoreStore = (*DB)(nil)

// JobRestore inserts jobs exactly as given, in one transaction. Like any
// insert under explicit ids it locks the table against concurrent inserts
// and moves the identity sequence past the largest id.
func (db *DB) JobRestore(ctx context.Context, jobs []xjob.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockForExplicitIDs(ctx, tx, "jobs"); err != nil {
			return err
		}
		var top int64
		for _, j := range jobs {
			if want := fire.ShardOf(j.ID, db.opts.Shards); j.ID <= 0 || j.Shard != want {
				return fmt.Errorf("job %d has shard %d, not %d as under this store's %d shards: it was placed under another shard count",
					j.ID, j.Shard, want, db.opts.Shards)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO jobs (`+jobColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7,
				$8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
				$23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34)`,
				j.ID, j.Name, j.Shard, j.GroupID, j.Description, j.Author, j.AlarmEmail,
				j.ScheduleType, j.ScheduleConf, j.TimeZone, j.MisfireStrategy,
				j.RouteStrategy, j.Handler, j.Param, j.BlockStrategy, j.TimeoutSeconds, j.FailRetryCount,
				j.GlueType, j.GlueSource, j.GlueRemark, j.GlueUpdatedAt, formatIDs(j.ChildJobIDs),
				j.TriggerStatus, j.TriggerLastTime, j.TriggerNextTime,
				j.Version, j.Revision, j.SlowMinute, j.SlowCount, j.CreatedAt, j.UpdatedAt,
				j.AfterCompletion.OrKeep(), j.Declared, j.Applied); err != nil {
				return fmt.Errorf("job %d: %w", j.ID, conflictIfUnique(err))
			}
			top = max(top, j.ID)
		}
		return bumpSequence(ctx, tx, "jobs", top)
	})
	if err != nil {
		return db.wrap("job restore", err)
	}
	return nil
}

// LogRestore inserts logs exactly as given, in one transaction; a taken
// id or occurrence fails it on its unique index (xjob.ErrConflict).
func (db *DB) LogRestore(ctx context.Context, logs []xjob.Log) error {
	if len(logs) == 0 {
		return nil
	}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockForExplicitIDs(ctx, tx, "logs"); err != nil {
			return err
		}
		var top int64
		batch := &pgx.Batch{}
		for _, l := range logs {
			if l.ID <= 0 {
				return fmt.Errorf("log %q has no id", l.OccurrenceID)
			}
			batch.Queue(`INSERT INTO logs (`+logColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
				$11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`,
				l.ID, l.OccurrenceID, l.JobID, l.GroupID, l.TriggerType, l.ScheduledTime, l.TriggerTime,
				l.TriggerCode, l.TriggerMsg, l.ExecutorAddress, l.ExecutorHandler, l.ExecutorParam,
				l.ExecutorShardingParam, l.ExecutorFailRetryCount, l.HandleTime, l.HandleCode, l.HandleMsg,
				l.AlarmStatus, l.ClaimUntil, l.Version)
			top = max(top, l.ID)
		}
		// One round trip for the page: a copy moves every log.
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return conflictIfUnique(err)
		}
		return bumpSequence(ctx, tx, "logs", top)
	})
	if err != nil {
		return db.wrap("log restore", err)
	}
	return nil
}

// conflictIfUnique reports a unique violation (a taken id or occurrence)
// as xjob.ErrConflict, and any other error as it is.
func conflictIfUnique(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return fmt.Errorf("%s: %w", pe.ConstraintName, xjob.ErrConflict)
	}
	return err
}
