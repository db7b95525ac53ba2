package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Prepared statements.
//
// Parsing SQL was a quarter of local mode's CPU (sqlite3_prepare_v2 on every
// call), so every statement on a hot path is prepared once: the write ones
// on the writer connection (a *sql.Stmt of a *sql.Conn stays prepared on
// it), the read ones on the reader pool (database/sql prepares a *sql.Stmt
// on each reader connection the first time it runs there, then reuses it).
// Statements whose text depends on the filters (the list pages) and the
// cold writes (admin edits, retention) are still prepared per call.

// writeStmts run only on the writer goroutine, inside its transaction.
type writeStmts struct {
	begin, commit, rollback, savepoint, release, rollbackTo *sql.Stmt

	jobInsert, jobSetShard, jobAdvance, jobStop, jobRecordSlow, jobExists *sql.Stmt

	logCreate, logByOccurrence, logByID, logClaim, logTriggered, logFinish, logSetAlarm, logExists *sql.Stmt
	logsByIDs, logFinishBatch                                                                      *sql.Stmt
	logCreateN                                                                                     [len(logCreateRows)]*sql.Stmt
	logMaxID                                                                                       *sql.Stmt
	jobIndexedRead, jobIndexEnter, jobIndexedSet                                                   *sql.Stmt
	logTriggeredN                                                                                  [len(logCreateRows)]*sql.Stmt
	chunkSavepoint, chunkRelease, chunkRollbackTo                                                  *sql.Stmt

	groupExists *sql.Stmt

	registryUpsert, reportAdd *sql.Stmt

	leaseAcquire, leaseRenew, leaseRelease *sql.Stmt

	queueSend, queueClaim, queueAck, queueRetry *sql.Stmt
}

// readStmts run on the reader pool.
type readStmts struct {
	jobGet, jobGetMany, jobsDue *sql.Stmt
	jobVersions                 *sql.Stmt
	logGet, logGetMany, logJobs *sql.Stmt
	groupGet                    *sql.Stmt
	registryList, registryByKey *sql.Stmt
	leaseGet, reportList        *sql.Stmt
	queuePeek, queueNextVisible *sql.Stmt
}

type stmtDef struct {
	dst  **sql.Stmt
	text string
}

func (s *writeStmts) defs() []stmtDef {
	defs := s.fixedDefs()
	for k, n := range logCreateRows {
		defs = append(defs, stmtDef{&s.logCreateN[k], sqlLogCreateRows(n)},
			stmtDef{&s.logTriggeredN[k], sqlLogTriggeredRows(n)})
	}
	return defs
}

// logTriggeredStmt is the prepared record of n replies, n one of logCreateRows.
func (db *DB) logTriggeredStmt(n int) *sql.Stmt {
	for k, r := range logCreateRows {
		if r == n {
			return db.ws.logTriggeredN[k]
		}
	}
	panic(fmt.Sprintf("sqlitestore: no prepared record of %d replies", n))
}

// logCreateStmt is the prepared insert of n logs, n one of logCreateRows.
func (db *DB) logCreateStmt(n int) *sql.Stmt {
	for k, r := range logCreateRows {
		if r == n {
			return db.ws.logCreateN[k]
		}
	}
	panic(fmt.Sprintf("sqlitestore: no prepared insert of %d logs", n))
}

func (s *writeStmts) fixedDefs() []stmtDef {
	return []stmtDef{
		{&s.begin, `BEGIN IMMEDIATE`},
		{&s.commit, `COMMIT`},
		{&s.rollback, `ROLLBACK`},
		{&s.savepoint, `SAVEPOINT req`},
		{&s.release, `RELEASE req`},
		{&s.rollbackTo, `ROLLBACK TO req`},
		{&s.chunkSavepoint, `SAVEPOINT chunk`},
		{&s.chunkRelease, `RELEASE chunk`},
		{&s.chunkRollbackTo, `ROLLBACK TO chunk`},

		{&s.jobInsert, sqlJobInsert},
		{&s.jobSetShard, `UPDATE jobs SET shard = ? WHERE id = ?`},
		{&s.jobAdvance, `UPDATE jobs SET trigger_last_time = ?, trigger_next_time = ?, version = version + 1
			WHERE id = ? AND version = ?`},
		{&s.jobStop, `UPDATE jobs SET trigger_status = 0, trigger_last_time = 0, trigger_next_time = 0,
			version = version + 1 WHERE id = ? AND version = ?`},
		{&s.jobRecordSlow, `UPDATE jobs SET
			slow_count = CASE WHEN slow_minute = ?1 THEN slow_count + 1 ELSE 1 END,
			slow_minute = ?1
			WHERE id = ?2 AND slow_minute <= ?1`},
		{&s.jobExists, `SELECT 1 FROM jobs WHERE id = ?`},

		{&s.logCreate, sqlLogCreate},
		{&s.logMaxID, `SELECT coalesce(max(id), 0) FROM logs`},
		{&s.jobIndexedRead, sqlJobIndexedRead},
		{&s.jobIndexEnter, sqlJobIndexEnter},
		{&s.jobIndexedSet, sqlJobIndexedSet},
		{&s.logByOccurrence, sqlLogByOccurrence},
		{&s.logByID, `SELECT ` + logColumns + ` FROM logs WHERE id = ?`},
		{&s.logClaim, `UPDATE logs SET claim_until = ?, trigger_time = ?, version = version + 1
			WHERE id = ? AND version = ? AND trigger_code = 0 RETURNING ` + logColumns},
		{&s.logTriggered, `UPDATE logs SET executor_address = ?, trigger_code = ?,
			trigger_msg = ?, version = version + 1 WHERE id = ? AND trigger_code = 0`},
		// No RETURNING on the hot path: SQLite codes RETURNING as a trigger,
		// which makes even a one-row statement open (and free) a statement
		// journal; an Exec and a read by key cost less.
		{&s.logFinish, `UPDATE logs SET handle_time = ?, handle_code = ?, handle_msg = ?,
			version = version + 1 WHERE id = ? AND handle_code = 0`},
		{&s.logsByIDs, sqlLogsByIDs},
		{&s.logFinishBatch, sqlLogFinishBatch},
		{&s.logSetAlarm, `UPDATE logs SET alarm_status = ?, version = version + 1
			WHERE id = ? AND alarm_status = ?`},
		{&s.logExists, `SELECT 1 FROM logs WHERE id = ?`},

		{&s.groupExists, `SELECT 1 FROM groups WHERE id = ?`},

		{&s.registryUpsert, `INSERT INTO registry (grp, key, value, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (grp, key, value) DO UPDATE SET updated_at = max(updated_at, excluded.updated_at)`},
		{&s.reportAdd, `INSERT INTO report_days (day, group_id, running_count, suc_count, fail_count)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (day, group_id) DO UPDATE SET
			running_count = running_count + excluded.running_count,
			suc_count = suc_count + excluded.suc_count,
			fail_count = fail_count + excluded.fail_count`},

		{&s.leaseAcquire, `INSERT INTO leases (name, owner, token, expires_at) VALUES (?1, ?2, 1, ?3)
			ON CONFLICT (name) DO UPDATE SET
				token = CASE WHEN leases.owner = excluded.owner THEN leases.token ELSE leases.token + 1 END,
				owner = excluded.owner,
				expires_at = excluded.expires_at
			WHERE leases.owner = excluded.owner OR leases.owner = '' OR leases.expires_at <= ?4
			RETURNING token, expires_at`},
		{&s.leaseRenew, `UPDATE leases SET expires_at = ? WHERE name = ? AND owner = ? AND token = ?
			RETURNING expires_at`},
		{&s.leaseRelease, `UPDATE leases SET owner = '', expires_at = 0
			WHERE name = ? AND owner = ? AND token = ? AND owner <> ''`},

		{&s.queueSend, `INSERT INTO queue_messages (queue, body, visible_at) VALUES (?, ?, ?)`},
		{&s.queueClaim, `UPDATE queue_messages
			SET receives = receives + 1, visible_at = ?1, receipt = lower(hex(randomblob(12)))
			WHERE id IN (SELECT id FROM queue_messages WHERE queue = ?2 AND visible_at <= ?3
			             ORDER BY visible_at, id LIMIT ?4)
			RETURNING id, body, receives, receipt`},
		{&s.queueAck, `DELETE FROM queue_messages WHERE id = ? AND receipt = ?`},
		{&s.queueRetry, `UPDATE queue_messages SET visible_at = ? WHERE id = ? AND receipt = ?`},
	}
}

func (s *readStmts) defs() []stmtDef {
	return []stmtDef{
		{&s.jobGet, `SELECT ` + jobColumns + ` FROM jobs WHERE id = ?`},
		// json_each keeps the statement one shape whatever the number of ids.
		{&s.jobGetMany, `SELECT ` + jobColumns + ` FROM jobs
			WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`},
		{&s.jobsDue, jobsDueSQL},
		{&s.jobVersions, `SELECT id, version, created_at, slow_minute, slow_count FROM jobs
			WHERE id IN (SELECT value FROM json_each(?))`},
		{&s.logGet, `SELECT ` + logColumns + ` FROM logs WHERE id = ?`},
		{&s.logGetMany, `SELECT ` + logColumns + ` FROM logs
			WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`},
		{&s.logJobs, sqlLogJobs},
		{&s.groupGet, `SELECT ` + groupColumns + ` FROM groups WHERE id = ?`},
		{&s.registryList, `SELECT grp, key, value, updated_at FROM registry WHERE updated_at >= ?
			ORDER BY grp, key, value`},
		{&s.registryByKey, `SELECT grp, key, value, updated_at FROM registry WHERE updated_at >= ? AND key = ?
			ORDER BY grp, key, value`},
		{&s.leaseGet, `SELECT owner, token, expires_at FROM leases WHERE name = ?`},
		{&s.reportList, `SELECT day, sum(running_count), sum(suc_count), sum(fail_count) FROM report_days
			WHERE day >= ? AND day <= ? GROUP BY day ORDER BY day`},
		{&s.queuePeek, `SELECT 1 FROM queue_messages WHERE queue = ? AND visible_at <= ? LIMIT 1`},
		{&s.queueNextVisible, `SELECT min(visible_at) FROM queue_messages WHERE queue = ?`},
	}
}

// preparer is a *sql.Conn or a *sql.DB.
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// prepareAll prepares the statements not prepared yet (start may be retried).
func prepareAll(ctx context.Context, p preparer, defs []stmtDef) error {
	for _, d := range defs {
		if *d.dst != nil {
			continue
		}
		st, err := p.PrepareContext(ctx, d.text)
		if err != nil {
			return fmt.Errorf("sqlite prepare %q: %w", firstLine(d.text), err)
		}
		*d.dst = st
	}
	return nil
}

func closeAll(defs []stmtDef) error {
	var errs []error
	for _, d := range defs {
		if *d.dst != nil {
			errs = append(errs, (*d.dst).Close())
		}
	}
	return errors.Join(errs...)
}

func (s *writeStmts) prepare(ctx context.Context, c *sql.Conn) error {
	return prepareAll(ctx, c, s.defs())
}
func (s *readStmts) prepare(ctx context.Context, r *sql.DB) error {
	return prepareAll(ctx, r, s.defs())
}
func (s *writeStmts) close() error { return closeAll(s.defs()) }
func (s *readStmts) close() error  { return closeAll(s.defs()) }

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
