package sqlitestore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Batched log updates.
//
// A steady second of local mode records one result per trigger. Written
// as an UPDATE and a read back per log, database/sql's and the driver's
// per-statement work (binding, a result or rows object, locks) cost as
// much as SQLite's own. Here a batch of results reads the rows it touches
// in one statement, decides in Go which results win (the writer holds the
// write transaction, so nothing changes in between), and applies the
// winners in one UPDATE … FROM jsonb_each: two statements a batch whatever
// its size. The executors' replies (LogTriggeredMany) batched the same
// way cost no less CPU (SQLite runs an UPDATE … FROM through a temporary
// table, and a reply's message is long to carry through JSON); bound as
// a VALUES list instead, they do (logcreate.go).

// sqlLogFinishBatch applies results given as a JSON array of
// [id, handle_time, handle_code, handle_msg].
const sqlLogFinishBatch = `UPDATE logs SET handle_time = p.value ->> 1,
	handle_code = p.value ->> 2, handle_msg = p.value ->> 3, version = version + 1
	FROM jsonb_each(?) AS p WHERE logs.id = p.value ->> 0 AND logs.handle_code = 0`

// sqlLogsByIDs reads the logs among a JSON array of ids, on the writer.
const sqlLogsByIDs = `SELECT ` + logColumns + ` FROM logs WHERE id IN (SELECT value FROM json_each(?))`

// jsonSafe reports whether s survives a round trip through SQLite's JSON
// functions byte for byte: valid UTF-8 (encoding would replace the rest)
// without NUL (SQLite's text functions stop at it). A batch holding any
// other string takes the statement-per-log path.
func jsonSafe(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// appendJSONString appends s, valid UTF-8 without NUL, as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// appendResult appends [id, handle_time, handle_code, handle_msg] to a
// JSON array being built.
func appendResult(b []byte, p driver.LogFinishParams) []byte {
	if len(b) > 1 {
		b = append(b, ',')
	}
	b = append(b, '[')
	b = strconv.AppendInt(b, p.ID, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, p.HandleTime, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(p.HandleCode), 10)
	b = append(b, ',')
	b = appendJSONString(b, p.HandleMsg)
	return append(b, ']')
}

// finishBatchable reports whether every result of ps can go through the
// JSON batch.
func finishBatchable(ps []driver.LogFinishParams) bool {
	for _, p := range ps {
		if !jsonSafe(p.HandleMsg) {
			return false
		}
	}
	return len(ps) > 1
}

// logFinishBatch is LogFinishMany's transaction body for a batch: out[i]
// is the log as the result of ps[i] left it, or an error (ErrConflict: a
// result is recorded, by another item of ps or before; ErrNotFound).
func (db *DB) logFinishBatch(ctx context.Context, ps []driver.LogFinishParams, out []driver.LogFinished) error {
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	rows, err := db.ws.logsByIDs.QueryContext(ctx, idsJSON(ids))
	if err != nil {
		return fmt.Errorf("read logs: %w", err)
	}
	byID := make(map[int64]*xjob.Log, len(ps))
	for rows.Next() {
		l, err := scanLog(rows)
		if err != nil {
			rows.Close()
			return fmt.Errorf("read logs: %w", err)
		}
		byID[l.ID] = &l
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read logs: %w", err)
	}
	b := make([]byte, 0, len(ps)*48)
	b = append(b, '[')
	won := int64(0)
	for i, p := range ps {
		l, ok := byID[p.ID]
		switch {
		case !ok:
			out[i].Err = fmt.Errorf("sqlite log finish %d: %w", p.ID, xjob.ErrNotFound)
		case l.HandleCode != xjob.CodeNone:
			out[i].Err = fmt.Errorf("sqlite log finish %d: %w", p.ID, xjob.ErrConflict)
		default:
			// What the UPDATE below writes, so the row need not be read back.
			l.HandleTime, l.HandleCode, l.HandleMsg, l.Version = p.HandleTime, p.HandleCode, p.HandleMsg, l.Version+1
			out[i].Log = *l
			b = appendResult(b, p)
			won++
		}
	}
	if won == 0 {
		return nil
	}
	n, err := rowsAffected(db.ws.logFinishBatch.ExecContext(ctx, string(append(b, ']'))))
	if err != nil {
		return fmt.Errorf("record results: %w", err)
	}
	if n != won {
		return fmt.Errorf("record results: %d rows updated, %d expected", n, won)
	}
	return nil
}
