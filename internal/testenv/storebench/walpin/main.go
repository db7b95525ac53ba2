// Command walpin counts the WAL pages a running xjob local writes, by the
// table or index they belong to: the SQLite file's share of what the
// writer's debug line ("sqlite writer": pages a commit) sums.
//
// It waits for a file matching -glob modified after it started (xjob
// local's, e.g. one a bench run keeps with XJOBBENCH_KEEP=1), waits -wait
// more (for the measured window), then holds a read transaction on it for
// -hold: while a reader holds its snapshot no checkpoint can restart the
// WAL, so every frame written meanwhile stays in it. It then counts those
// frames by page and names each page's b-tree through the dbstat virtual
// table, per log id drawn in the hold (a claim each).
//
// The held reader lets the WAL grow for the whole hold (a steady 10,000
// a second writes about 5,000 pages a second), and the checkpointer copies
// nothing past the reader's snapshot meanwhile: read the run's page counts,
// not its timings. internal/adapter/sqlitestore's XJOB_BENCH_WAL_TREES does
// the same inside the store benchmarks.
package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/xjobdev/xjob/internal/testenv/storebench"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

func main() {
	glob := flag.String("glob", "/tmp/xjobbench-*/steady-*/xjob.db", "the SQLite file to attach to, as a glob")
	wait := flag.Duration("wait", 25*time.Second, "how long to wait after the file appears")
	hold := flag.Duration("hold", 10*time.Second, "how long to hold the WAL")
	flag.Parse()
	if err := run(*glob, *wait, *hold); err != nil {
		fmt.Fprintln(os.Stderr, "walpin:", err)
		os.Exit(1)
	}
}

func run(glob string, wait, hold time.Duration) error {
	path, err := await(glob, time.Now())
	if err != nil {
		return err
	}
	fmt.Println("file", path)
	time.Sleep(wait)
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", path, err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	var logs0, logs1 int64
	if err := c.QueryRowContext(ctx, "SELECT coalesce(max(id), 0) FROM logs").Scan(&logs0); err != nil {
		return fmt.Errorf("pin the WAL: %w", err)
	}
	before, err := storebench.WALFramePages(path + "-wal")
	if err != nil {
		return err
	}
	start := time.Now()
	fmt.Printf("pinned at frame %d, log %d, %s\n", len(before), logs0, start.UTC().Format(time.TimeOnly))
	time.Sleep(hold)
	after, err := storebench.WALFramePages(path + "-wal")
	if err != nil {
		return err
	}
	held := time.Since(start)
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if err := c.QueryRowContext(ctx, "SELECT coalesce(max(id), 0) FROM logs").Scan(&logs1); err != nil {
		return fmt.Errorf("read the last log id: %w", err)
	}
	if len(after) < len(before) {
		return errors.New("the WAL restarted during the hold: nothing counted")
	}
	tree, err := trees(ctx, c)
	if err != nil {
		return err
	}
	by := map[string]int{}
	for _, p := range after[len(before):] {
		name, ok := tree[p]
		if !ok {
			name = "(free)"
		}
		by[name]++
	}
	total, logs := len(after)-len(before), max(logs1-logs0, 1)
	fmt.Printf("held %.1f s: %d frames, %d logs claimed, %.3f frames a log\n", held.Seconds(), total, logs, float64(total)/float64(logs))
	names := make([]string, 0, len(by))
	for k := range by {
		names = append(names, k)
	}
	slices.SortFunc(names, func(x, y string) int { return cmp.Or(cmp.Compare(by[y], by[x]), cmp.Compare(x, y)) })
	for _, k := range names {
		fmt.Printf("  %-26s %8d  %.3f a log  %5.1f %%\n", k, by[k], float64(by[k])/float64(logs), 100*float64(by[k])/float64(total))
	}
	return nil
}

// await returns the first file matching glob modified after since.
func await(glob string, since time.Time) (string, error) {
	for {
		m, err := filepath.Glob(glob)
		if err != nil {
			return "", fmt.Errorf("glob %q: %w", glob, err)
		}
		for _, p := range m {
			if st, err := os.Stat(p); err == nil && st.ModTime().After(since) {
				return p, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// trees maps every page of the database to its b-tree's name.
func trees(ctx context.Context, c *sql.Conn) (map[uint32]string, error) {
	rows, err := c.QueryContext(ctx, "SELECT name, pageno FROM dbstat")
	if err != nil {
		return nil, fmt.Errorf("dbstat: %w", err)
	}
	defer rows.Close()
	tree := map[uint32]string{}
	for rows.Next() {
		var name string
		var p uint32
		if err := rows.Scan(&name, &p); err != nil {
			return nil, fmt.Errorf("dbstat: %w", err)
		}
		tree[p] = name
	}
	return tree, rows.Err()
}
