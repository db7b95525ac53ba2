package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
)

// The reads below are what `xjob db copy` needs of a local installation
// beyond the ports: the ports read a report summed over groups, a retired
// declaration by key, a revoked session by id, and a queue only by
// receiving from it (which hides the message). These read every record
// as stored and change nothing.

// ExportReportDays returns every report counter, one per day and group,
// in (day, group) order.
func (db *DB) ExportReportDays(ctx context.Context) ([]xjob.ReportDay, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT day, group_id, running_count, suc_count, fail_count
		FROM report_days ORDER BY day, group_id`)
	out, err := scanRows(rows, err, func(r *sql.Rows) (xjob.ReportDay, error) {
		var d xjob.ReportDay
		err := r.Scan(&d.Day, &d.GroupID, &d.RunningCount, &d.SucCount, &d.FailCount)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite export report days: %w", err)
	}
	return out, nil
}

// Retired is one declaration a person deleted the job of (see
// driver.JobStore.DeclarationRetire).
type Retired struct{ Key, Declared string }

// ExportRetired returns every retired declaration, in key order.
func (db *DB) ExportRetired(ctx context.Context) ([]Retired, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT key, declared FROM declarations_retired ORDER BY key`)
	out, err := scanRows(rows, err, func(r *sql.Rows) (Retired, error) {
		var d Retired
		err := r.Scan(&d.Key, &d.Declared)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite export retired declarations: %w", err)
	}
	return out, nil
}

// Revoked is one console session ended before its cookie expires.
type Revoked struct {
	ID        string
	ExpiresAt int64 // Unix ms
}

// ExportRevoked returns the revoked sessions whose cookie has not expired
// at now (Unix ms): the others no longer matter.
func (db *DB) ExportRevoked(ctx context.Context, now int64) ([]Revoked, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, expires_at FROM revoked_sessions WHERE expires_at > ? ORDER BY id`, now)
	out, err := scanRows(rows, err, func(r *sql.Rows) (Revoked, error) {
		var s Revoked
		err := r.Scan(&s.ID, &s.ExpiresAt)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite export revoked sessions: %w", err)
	}
	return out, nil
}

// Queued is one message of the ring or a dispatch lane as stored: Lane
// is empty for the ring.
type Queued struct {
	Ring      *fire.RingBucket
	Task      *fire.DispatchTask
	Lane      fire.Lane
	VisibleAt int64 // Unix ms; for a received message, when it comes back
}

// ExportQueues returns every message of the ring and the dispatch lanes,
// received or not, in the order they were sent. A message this code
// cannot read (a newer version's) is an error: copying past it would
// lose it.
func (db *DB) ExportQueues(ctx context.Context) ([]Queued, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, queue, body, visible_at FROM queue_messages ORDER BY id`)
	out, err := scanRows(rows, err, func(r *sql.Rows) (Queued, error) {
		var id int64
		var name, body string
		var m Queued
		if err := r.Scan(&id, &name, &body, &m.VisibleAt); err != nil {
			return m, err
		}
		var derr error
		switch lane, ok := strings.CutPrefix(name, "dispatch-"); {
		case name == "ring":
			m.Ring = new(fire.RingBucket)
			derr = m.Ring.UnmarshalJSON([]byte(body))
		case ok:
			m.Lane, m.Task = fire.Lane(lane), new(fire.DispatchTask)
			derr = m.Task.UnmarshalJSON([]byte(body))
		default:
			derr = errors.New("unknown queue")
		}
		if derr != nil {
			return m, fmt.Errorf("message %d of queue %s: %w", id, name, derr)
		}
		return m, nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite export queues: %w", err)
	}
	return out, nil
}

// scanRows reads every row of rows with scan, then closes rows.
func scanRows[T any](rows *sql.Rows, err error, scan func(*sql.Rows) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
