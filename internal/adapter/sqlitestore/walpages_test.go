package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/xjobdev/xjob/internal/testenv/storebench"
)

// WAL pages by b-tree: which tables and indexes a benchmark's commits
// wrote. With XJOB_BENCH_WAL_TREES=1 the harness's Open truncates the
// WAL and pins it: a connection of the test's own holds a read
// transaction begun on the empty WAL, so no checkpoint can copy a frame
// into the file or restart the log, and every frame the benchmark's
// commits wrote stays in it. Report then counts the frames by page
// number and names each page's b-tree through the dbstat virtual table
// (sqlite3_analyzer's source). The pinned WAL grows without bound and
// readers search a longer WAL index, so a pinned run's CPU and waits are
// not the store's: read only its page counts.

// walPins holds each pinned database's reader, by handle.
var walPins sync.Map // *DB → *walPin

type walPin struct {
	raw  *sql.DB
	conn *sql.Conn
	path string
}

// pinWAL truncates db's WAL and holds it from growing back into the file.
func pinWAL(b *testing.B, db *DB, path string) {
	b.Helper()
	ctx := context.Background()
	if _, err := db.ck.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatalf("truncate the WAL: %v", err)
	}
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		b.Fatal(err)
	}
	conn, err := raw.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var n int
	if _, err := conn.ExecContext(ctx, `BEGIN`); err != nil {
		b.Fatal(err)
	}
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&n); err != nil {
		b.Fatalf("pin the WAL: %v", err)
	}
	walPins.Store(db, &walPin{raw: raw, conn: conn, path: path})
	b.Cleanup(func() {
		_ = conn.Close()
		_ = raw.Close()
	})
}

// reportWALTrees reports the WAL frames a pinned db's commits wrote, per
// op, by the b-tree their page belongs to, and logs the table.
func reportWALTrees(b *testing.B, db *DB) {
	v, ok := walPins.Load(db)
	if !ok {
		return
	}
	pin := v.(*walPin)
	pages, err := storebench.WALFramePages(pin.path + "-wal")
	if err != nil {
		b.Fatal(err)
	}
	frames := map[uint32]int{}
	for _, p := range pages {
		frames[p]++
	}
	ctx := context.Background()
	if _, err := pin.conn.ExecContext(ctx, `COMMIT`); err != nil {
		b.Fatal(err)
	}
	tree := map[uint32]string{}
	rows, err := pin.conn.QueryContext(ctx, `SELECT name, pageno FROM dbstat`)
	if err != nil {
		b.Fatalf("dbstat: %v", err)
	}
	for rows.Next() {
		var name string
		var page uint32
		if err := rows.Scan(&name, &page); err != nil {
			b.Fatal(err)
		}
		tree[page] = name
	}
	if err := rows.Close(); err != nil {
		b.Fatal(err)
	}
	by := map[string]int{}
	total := 0
	for page, n := range frames {
		name, ok := tree[page]
		if !ok {
			name = "(free)"
		}
		by[name] += n
		total += n
	}
	names := make([]string, 0, len(by))
	for name := range by {
		names = append(names, name)
	}
	slices.SortFunc(names, func(x, y string) int { return cmp.Or(cmp.Compare(by[y], by[x]), cmp.Compare(x, y)) })
	var sb strings.Builder
	fmt.Fprintf(&sb, "WAL frames by b-tree, %d ops, %d frames:\n", b.N, total)
	for _, name := range names {
		fmt.Fprintf(&sb, "  %-28s %9d  %6.1f/op  %5.1f %%\n", name, by[name], float64(by[name])/float64(b.N),
			100*float64(by[name])/float64(total))
		b.ReportMetric(float64(by[name])/float64(b.N), "wal-pages/op:"+name)
	}
	// How full the written trees' leaves are: a tree whose rows grow
	// after their insert splits its leaves and writes more of them.
	fill, err := pin.conn.QueryContext(ctx, `SELECT name, count(*), sum(ncell), 100.0 - 100.0 * sum(unused) / sum(pgsize)
		FROM dbstat WHERE pagetype = 'leaf' GROUP BY name`)
	if err != nil {
		b.Fatalf("dbstat: %v", err)
	}
	for fill.Next() {
		var name string
		var leaves, cells int
		var used float64
		if err := fill.Scan(&name, &leaves, &cells, &used); err != nil {
			b.Fatal(err)
		}
		if by[name] > total/50 {
			fmt.Fprintf(&sb, "  %s: %d leaves, %.1f cells a leaf, %.0f %% used\n", name, leaves, float64(cells)/float64(leaves), used)
		}
	}
	if err := fill.Close(); err != nil {
		b.Fatal(err)
	}
	b.Log(sb.String())
}
