package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Batched results.
//
// A steady second of local mode records one result per trigger. Written
// as an UPDATE and a read back per log, database/sql's and the driver's
// per-statement work (binding, a result or rows object, locks) cost as
// much as SQLite's own. Reading the batch's rows first to decide the
// winners in Go, then writing them in one UPDATE … FROM jsonb_each, still
// read every row twice (SQLite's JSON functions and the read back cost as
// much as the write). Here the UPDATE itself decides: each result is a
// row of a VALUES list bound as parameters (the shape LogTriggeredMany
// uses, logcreate.go), the statement's condition handle_code = 0 lets the
// first result win, and RETURNING hands back each row it wrote as it
// left it — one statement per chunk of logFinishRows results that both
// writes and reads, no JSON, no second read. Only the items the
// statement did not write (a repeat, an unknown id: rare) are looked up
// again, to tell a conflict from a missing log.

// logFinishRows are the row counts of the prepared batched finishes,
// largest first: a batch takes the largest that fit, then smaller ones,
// down to one row.
var logFinishRows = [...]int{128, 32, 8, 2, 1}

// logFinishParams is the number of bound parameters a result's row has.
const logFinishParams = 4

// sqlLogFinishRows records n results given as (id, handle_time,
// handle_code, handle_msg) rows, each only on a log without a result, and
// returns the logs it wrote.
func sqlLogFinishRows(n int) string {
	row := "(?,?,?,?)"
	return `UPDATE logs SET handle_time = p.column2, handle_code = p.column3,
	handle_msg = p.column4, version = version + 1
	FROM (VALUES ` + strings.Repeat(row+",", n-1) + row + `) AS p
	WHERE logs.id = p.column1 AND logs.handle_code = 0
	RETURNING ` + logColumns
}

// sqlLogIDsIn reads which ids of a JSON array have a log, on the writer.
const sqlLogIDsIn = `SELECT id FROM logs WHERE id IN (SELECT value FROM json_each(?))`

// logFinishBatch is LogFinishMany's transaction body: out[i] is the log
// as the result of ps[i] left it, or an error (ErrConflict: a result is
// recorded, by an earlier item of ps or before; ErrNotFound).
//
// A log named twice in ps goes to the statement once, with its first
// result: a VALUES list naming one log twice would let SQLite pick either
// row, and the first result in the batch must win as it would one by one.
func (db *DB) logFinishBatch(ctx context.Context, ps []driver.LogFinishParams, out []driver.LogFinished) error {
	first := make(map[int64]int, len(ps)) // id → the item that carries it to the statement
	send := make([]int, 0, len(ps))
	for i, p := range ps {
		if _, dup := first[p.ID]; !dup {
			first[p.ID] = i
			send = append(send, i)
		}
	}
	won := make([]bool, len(ps))
	args := make([]any, 0, logFinishParams*min(len(send), logFinishRows[0]))
	for rest := send; len(rest) > 0; {
		k, n := len(logFinishRows)-1, 1
		for j, r := range logFinishRows {
			if r <= len(rest) {
				n, k = r, j
				break
			}
		}
		args = args[:0]
		for _, i := range rest[:n] {
			p := ps[i]
			args = append(args, p.ID, p.HandleTime, p.HandleCode, p.HandleMsg)
		}
		if err := db.finishChunk(ctx, db.ws.logFinishN[k], args, ps, first, won, out); err != nil {
			return err
		}
		rest = rest[n:]
	}
	var lost []int64
	for _, i := range send {
		if !won[i] {
			lost = append(lost, ps[i].ID)
		}
	}
	exists, err := db.logIDsIn(ctx, lost)
	if err != nil {
		return err
	}
	for i, p := range ps {
		f := first[p.ID]
		switch {
		case won[i]:
		case f != i && won[f]:
			out[i].Err = fmt.Errorf("sqlite log finish %d: %w", p.ID, xjob.ErrConflict)
		case exists[p.ID]:
			out[i].Err = fmt.Errorf("sqlite log finish %d: %w", p.ID, xjob.ErrConflict)
		default:
			out[i].Err = fmt.Errorf("sqlite log finish %d: %w", p.ID, xjob.ErrNotFound)
		}
	}
	return nil
}

// finishChunk runs one prepared finish and puts each log it returns in
// out at the item that sent it.
func (db *DB) finishChunk(ctx context.Context, stmt *sql.Stmt, args []any, ps []driver.LogFinishParams,
	first map[int64]int, won []bool, out []driver.LogFinished) error {
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("record results: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		l, err := scanLog(rows)
		if err != nil {
			return fmt.Errorf("record results: %w", err)
		}
		i, ok := first[l.ID]
		if !ok || won[i] {
			return fmt.Errorf("record results: log %d written but not asked for once", l.ID)
		}
		won[i], out[i].Log = true, l
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("record results: %w", err)
	}
	return nil
}

// logIDsIn returns which of ids have a log, inside the write transaction.
func (db *DB) logIDsIn(ctx context.Context, ids []int64) (map[int64]bool, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := db.wc.QueryContext(ctx, sqlLogIDsIn, idsJSON(ids))
	if err != nil {
		return nil, fmt.Errorf("read log ids: %w", err)
	}
	found, err := scanAll(rows, func(s scanner) (int64, error) {
		var id int64
		return id, s.Scan(&id)
	})
	if err != nil {
		return nil, fmt.Errorf("read log ids: %w", err)
	}
	exists := make(map[int64]bool, len(found))
	for _, id := range found {
		exists[id] = true
	}
	return exists, nil
}
