package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

var _ driver.RestoreStore = (*DB)(nil)

// JobRestore inserts jobs exactly as given, in one transaction.
// AUTO_INCREMENT moves past an explicit id by itself.
func (db *DB) JobRestore(ctx context.Context, jobs []xjob.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	for _, j := range jobs {
		if want := fire.ShardOf(j.ID, db.opts.Shards); j.ID <= 0 || j.Shard != want {
			return fmt.Errorf("mysql job restore: job %d has shard %d, not %d as under this store's %d shards: it was placed under another shard count",
				j.ID, j.Shard, want, db.opts.Shards)
		}
	}
	err := db.tx(ctx, "job restore", func(tx *sql.Tx) error {
		return inChunks(ctx, tx, `INSERT INTO jobs (`+jobColumns+`) VALUES `, 34, len(jobs), func(i int, args []any) []any {
			j := jobs[i]
			return append(args, j.ID, j.Name, j.Shard, j.GroupID, j.Description, j.Author, j.AlarmEmail,
				j.ScheduleType, j.ScheduleConf, j.TimeZone, j.MisfireStrategy,
				j.RouteStrategy, j.Handler, j.Param, j.BlockStrategy, j.TimeoutSeconds, j.FailRetryCount,
				j.GlueType, j.GlueSource, j.GlueRemark, j.GlueUpdatedAt, formatIDs(j.ChildJobIDs),
				j.TriggerStatus, j.TriggerLastTime, j.TriggerNextTime,
				j.Version, j.Revision, j.SlowMinute, j.SlowCount, j.CreatedAt, j.UpdatedAt,
				j.AfterCompletion.OrKeep(), j.Declared, j.Applied)
		})
	})
	if isCode(err, errDupEntry) {
		err = fmt.Errorf("a job id is taken: %w", xjob.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("mysql job restore: %w", err)
	}
	return nil
}

// LogRestore inserts logs exactly as given, in one transaction of
// multi-row INSERTs: all or none. Their created_by is 0, which no LogCreateMany call uses, so
// none mistakes a restored log for one it created.
func (db *DB) LogRestore(ctx context.Context, logs []xjob.Log) error {
	if len(logs) == 0 {
		return nil
	}
	for _, l := range logs {
		if l.ID <= 0 {
			return fmt.Errorf("mysql log restore: log %q has no id", l.OccurrenceID)
		}
	}
	err := db.tx(ctx, "log restore", func(tx *sql.Tx) error {
		return inChunks(ctx, tx, `INSERT INTO logs (`+logColumns+`, occurrence_time, created_by) VALUES `, 22, len(logs), func(i int, args []any) []any {
			l := logs[i]
			return append(args, l.ID, l.OccurrenceID, l.JobID, l.GroupID, l.TriggerType, l.ScheduledTime, l.TriggerTime,
				l.TriggerCode, l.TriggerMsg, l.ExecutorAddress, l.ExecutorHandler, l.ExecutorParam,
				l.ExecutorShardingParam, l.ExecutorFailRetryCount, l.HandleTime, l.HandleCode, l.HandleMsg,
				l.AlarmStatus, l.ClaimUntil, l.Version, keyOf(l).time, 0)
		})
	})
	if isCode(err, errDupEntry) {
		err = fmt.Errorf("a log id or occurrence is taken: %w", xjob.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("mysql log restore: %w", err)
	}
	return nil
}

// restoreChunk bounds the rows of one multi-row INSERT, so that a
// statement stays under the server's 65,535 placeholders and a modest
// max_allowed_packet whatever the page a caller restores.
const restoreChunk = 500

// inChunks inserts n rows of cols columns through tx, restoreChunk rows
// per statement; row appends the i-th row's values to args.
func inChunks(ctx context.Context, tx *sql.Tx, head string, cols, n int, row func(i int, args []any) []any) error {
	for start := 0; start < n; start += restoreChunk {
		end := min(start+restoreChunk, n)
		q, args := multiRow(head, cols, end-start)
		for i := start; i < end; i++ {
			args = row(i, args)
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

// multiRow is an INSERT of n rows of cols placeholders each, and an
// argument slice sized for them.
func multiRow(head string, cols, n int) (string, []any) {
	row := "(" + strings.Repeat("?,", cols-1) + "?)"
	var q strings.Builder
	q.Grow(len(head) + n*(len(row)+1))
	q.WriteString(head)
	for i := range n {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString(row)
	}
	return q.String(), make([]any, 0, cols*n)
}
