package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"
)

// insertDays is a write request that inserts n report days named
// prefix-i: a few pages for a few rows.
func insertDays(prefix string, n int) func(ctx context.Context, c *sql.Conn) error {
	return func(ctx context.Context, c *sql.Conn) error {
		for i := range n {
			if _, err := c.ExecContext(ctx, `INSERT INTO report_days (day, running_count, suc_count, fail_count)
				VALUES (?, 0, 0, 0)`, fmt.Sprintf("%s-%04d", prefix, i)); err != nil {
				return err
			}
		}
		return nil
	}
}

// After a large commit the writer waits a little for more requests, so
// that requests coming one after the other under load share a commit;
// after small ones it commits at once. groupWait is long here so that
// the requests surely come within it, and a writer that waited when it
// should not would hang the test.
func TestGroupCommitWaitsOnlyAfterLargeCommits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		groupPages int
		wait       time.Duration
		// commits the three concurrent requests take
		wantCommits func(int64) bool
	}{
		{"after a large commit", 1, 2 * time.Second, func(n int64) bool { return n == 1 }},
		{"after small commits", 1 << 30, time.Hour, func(n int64) bool { return n >= 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := setup(t, Options{groupPages: tc.groupPages, groupWait: tc.wait})
			ctx := t.Context()
			if err := db.write(ctx, insertDays("first", 1)); err != nil {
				t.Fatal(err)
			}
			before := db.WriterStats()
			var wg sync.WaitGroup
			for g := range 3 {
				wg.Go(func() {
					if err := db.write(ctx, insertDays(fmt.Sprint("g", g), 2)); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			d := db.WriterStats().Sub(before)
			if d.Requests != 3 || !tc.wantCommits(d.Commits) {
				t.Fatalf("3 concurrent requests took %d commits", d.Commits)
			}
			if tc.wait == time.Hour && d.MaxWait > time.Minute {
				t.Fatalf("a request waited %v", d.MaxWait)
			}
		})
	}
}
