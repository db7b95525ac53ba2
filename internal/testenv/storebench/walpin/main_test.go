package main

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/xjobdev/xjob/internal/testenv/storebench"
)

// framePages counts what SQLite says its WAL holds, and trees names the
// pages they wrote.
func TestFramePagesMatchSQLite(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range []string{
		`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`,
		`CREATE INDEX t_v ON t (v)`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
			INSERT INTO t (v) SELECT printf('%0500d', i) FROM n`,
	} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	pages, err := storebench.WALFramePages(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	var busy, frames, copied int
	// A checkpoint reports the frames the WAL holds (and then copies
	// them; the count is what framePages read before).
	if err := c.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied); err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 || len(pages) != frames {
		t.Fatalf("framePages: %d frames, SQLite: %d", len(pages), frames)
	}
	tree, err := trees(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range pages {
		seen[tree[p]] = true
	}
	if !seen["t"] || !seen["t_v"] {
		t.Errorf("trees written: %v, want t and t_v among them", seen)
	}
}
