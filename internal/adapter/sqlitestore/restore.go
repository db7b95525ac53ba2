package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"modernc.org/sqlite"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

var _ driver.RestoreStore = (*DB)(nil)

// JobRestore inserts jobs exactly as given, in one savepoint of the
// writer's transaction: all or none. AUTOINCREMENT keeps later ids above
// the restored ones.
func (db *DB) JobRestore(ctx context.Context, jobs []xjob.Job) error {
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		for _, j := range jobs {
			if want := fire.ShardOf(j.ID, db.opts.Shards); j.ID <= 0 || j.Shard != want {
				return fmt.Errorf("job %d has shard %d, not %d as under this store's %d shards: it was placed under another shard count",
					j.ID, j.Shard, want, db.opts.Shards)
			}
			if err := idFree(ctx, db.ws.jobExists, "job", j.ID); err != nil {
				return err
			}
			if _, err := c.ExecContext(ctx, `INSERT INTO jobs (`+jobColumns+`) VALUES (?,?,?,?,?,?,?, ?,?,?,?, ?,?,?,?,?,?, ?,?,?,?,?, ?,?,?, ?,?,?,?,?,?,?,?,?)`,
				j.ID, j.Name, j.Shard, j.GroupID, j.Description, j.Author, j.AlarmEmail,
				j.ScheduleType, j.ScheduleConf, j.TimeZone, j.MisfireStrategy,
				j.RouteStrategy, j.Handler, j.Param, j.BlockStrategy, j.TimeoutSeconds, j.FailRetryCount,
				j.GlueType, j.GlueSource, j.GlueRemark, j.GlueUpdatedAt, formatIDs(j.ChildJobIDs),
				j.TriggerStatus, j.TriggerLastTime, j.TriggerNextTime,
				j.Version, j.Revision, j.SlowMinute, j.SlowCount, j.CreatedAt, j.UpdatedAt,
				j.AfterCompletion.OrKeep(), j.Declared, j.Applied); err != nil {
				return fmt.Errorf("job %d: %w", j.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite job restore: %w", err)
	}
	return nil
}

// LogRestore inserts logs exactly as given, in one savepoint of the
// writer's transaction: all or none. A taken id or occurrence fails the
// insert on its unique index, reported as xjob.ErrConflict.
func (db *DB) LogRestore(ctx context.Context, logs []xjob.Log) error {
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		for _, l := range logs {
			if l.ID <= 0 {
				return fmt.Errorf("log %q has no id", l.OccurrenceID)
			}
			if _, err := c.ExecContext(ctx, `INSERT INTO logs (`+logColumns+`) VALUES (?,?,?,?,?,?,?, ?,?,?,?,?, ?,?,?,?,?, ?,?,?)`,
				l.ID, l.OccurrenceID, l.JobID, l.GroupID, l.TriggerType, l.ScheduledTime, l.TriggerTime,
				l.TriggerCode, l.TriggerMsg, l.ExecutorAddress, l.ExecutorHandler, l.ExecutorParam,
				l.ExecutorShardingParam, l.ExecutorFailRetryCount, l.HandleTime, l.HandleCode, l.HandleMsg,
				l.AlarmStatus, l.ClaimUntil, l.Version); err != nil {
				if isConstraint(err) {
					err = fmt.Errorf("id or occurrence taken: %w", xjob.ErrConflict)
				}
				return fmt.Errorf("log %d (%s): %w", l.ID, l.OccurrenceID, err)
			}
		}
		// Logs at or below the job index's mark are read through their
		// entry only (logjobindex.go): enter them now.
		ids := make([]int64, len(logs))
		for i, l := range logs {
			ids[i] = l.ID
		}
		list, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, sqlJobIndexRestored, string(list)); err != nil {
			return fmt.Errorf("enter restored logs into the job index: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite log restore: %w", err)
	}
	return nil
}

// sqliteConstraint is SQLITE_CONSTRAINT, the primary result code of a
// violated unique index or primary key.
const sqliteConstraint = 19

// isConstraint reports whether err is SQLITE_CONSTRAINT (any extended code).
func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqliteConstraint
}
