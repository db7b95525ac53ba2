package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Prepared statements.
//
// The statements of the hot paths — one row by key, the scan's due read,
// the queue's claim — are prepared once per pooled connection (database/sql
// prepares a *sql.Stmt on each connection the first time it runs there),
// so the server parses them once. Statements whose text depends on their
// input (IN lists of a batch, list filters) go through client-side
// interpolation instead: one round trip, no prepare.
type stmts struct {
	jobGet, jobsDue, jobAdvance, jobStop, jobRecordSlow *sql.Stmt

	logGet, logSetAlarm, logClaim *sql.Stmt

	groupGet *sql.Stmt

	registryUpsert, registryList, registryByKey, reportAdd, reportList *sql.Stmt

	leaseGet, leaseLock, leaseInsert, leaseTake, leaseRenew, leaseRelease *sql.Stmt

	queueNextVisible, queueLock, queueRetry *sql.Stmt
}

type stmtDef struct {
	dst  **sql.Stmt
	text string
}

func (s *stmts) defs() []stmtDef {
	return []stmtDef{
		{&s.jobGet, `SELECT ` + jobColumns + ` FROM jobs WHERE id = ?`},
		{&s.jobsDue, sqlJobsDue},
		{&s.jobAdvance, `UPDATE jobs SET trigger_last_time = ?, trigger_next_time = ?, version = version + 1
			WHERE id = ? AND version = ?`},
		{&s.jobStop, `UPDATE jobs SET trigger_status = 0, trigger_last_time = 0, trigger_next_time = 0,
			version = version + 1 WHERE id = ? AND version = ?`},
		// Assignments run left to right: slow_count reads the old minute.
		{&s.jobRecordSlow, `UPDATE jobs SET slow_count = IF(slow_minute = ?, slow_count + 1, 1), slow_minute = ?
			WHERE id = ? AND slow_minute <= ?`},

		{&s.logGet, `SELECT ` + logColumns + ` FROM logs WHERE id = ?`},
		{&s.logSetAlarm, `UPDATE logs SET alarm_status = ?, version = version + 1 WHERE id = ? AND alarm_status = ?`},
		{&s.logClaim, `UPDATE logs SET claim_until = ?, trigger_time = ?, claimed_by = ?, version = version + 1
			WHERE id = ? AND version = ? AND trigger_code = 0`},

		{&s.groupGet, `SELECT ` + groupColumns + ` FROM job_groups WHERE id = ?`},

		{&s.registryUpsert, "INSERT INTO registry (grp, `key`, value, updated_at) VALUES (?, ?, ?, ?) " +
			"ON DUPLICATE KEY UPDATE updated_at = GREATEST(updated_at, VALUES(updated_at))"},
		{&s.registryList, "SELECT grp, `key`, value, updated_at FROM registry WHERE updated_at >= ? ORDER BY grp, `key`, value"},
		{&s.registryByKey, "SELECT grp, `key`, value, updated_at FROM registry WHERE `key` = ? AND updated_at >= ? ORDER BY grp, `key`, value"},
		{&s.reportAdd, `INSERT INTO report_days (day, group_id, running_count, suc_count, fail_count)
			VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE
			running_count = running_count + VALUES(running_count),
			suc_count = suc_count + VALUES(suc_count),
			fail_count = fail_count + VALUES(fail_count)`},
		{&s.reportList, `SELECT day, CAST(SUM(running_count) AS SIGNED), CAST(SUM(suc_count) AS SIGNED), CAST(SUM(fail_count) AS SIGNED)
			FROM report_days WHERE day >= ? AND day <= ? GROUP BY day ORDER BY day`},

		{&s.leaseGet, `SELECT owner, token, expires_at FROM leases WHERE name = ?`},
		{&s.leaseLock, `SELECT owner, token, expires_at FROM leases WHERE name = ? FOR UPDATE`},
		{&s.leaseInsert, `INSERT INTO leases (name, owner, token, expires_at) VALUES (?, ?, 1, ?)`},
		{&s.leaseTake, `UPDATE leases SET owner = ?, token = ?, expires_at = ? WHERE name = ?`},
		{&s.leaseRenew, `UPDATE leases SET expires_at = ? WHERE name = ? AND owner = ? AND token = ? AND owner <> ''`},
		{&s.leaseRelease, `UPDATE leases SET owner = '', expires_at = 0 WHERE name = ? AND owner = ? AND token = ? AND owner <> ''`},

		{&s.queueNextVisible, `SELECT MIN(visible_at) FROM queue_messages WHERE queue = ?`},
		{&s.queueLock, `SELECT id, body, receives FROM queue_messages FORCE INDEX (queue_visible)
			WHERE queue = ? AND visible_at <= ? ORDER BY visible_at, id LIMIT ? FOR UPDATE SKIP LOCKED`},
		{&s.queueRetry, `UPDATE queue_messages SET visible_at = ? WHERE id = ? AND receipt = ?`},
	}
}

// prepare prepares the statements not prepared yet.
func (s *stmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, d := range s.defs() {
		if *d.dst != nil {
			continue
		}
		st, err := db.PrepareContext(ctx, d.text)
		if err != nil {
			return fmt.Errorf("mysqlstore: prepare %q: %w", firstLine(d.text), err)
		}
		*d.dst = st
	}
	return nil
}

func (s *stmts) close() error {
	var errs []error
	for _, d := range s.defs() {
		if *d.dst != nil {
			errs = append(errs, (*d.dst).Close())
		}
	}
	return errors.Join(errs...)
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
