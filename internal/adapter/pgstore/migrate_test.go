package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
)

// Every embedded migration has a number of its own: two branches that
// each add "the next" migration must not both merge under one number.
func TestMigrationNumbersUnique(t *testing.T) {
	t.Parallel()
	all, err := migrations(migrationFS)
	if err != nil {
		t.Fatalf("embedded migrations: %v", err)
	}
	if len(all) == 0 || all[0].version != 1 {
		t.Fatalf("embedded migrations %+v, want 0001 first", all)
	}
	for _, tc := range []struct {
		name  string
		files []string
		want  string // in the error; "" for none
	}{
		{"sequence", []string{"0001_a.sql", "0002_b.sql", "0010_c.sql"}, ""},
		{"duplicate number", []string{"0001_a.sql", "0002_b.sql", "0002_c.sql"}, "share version 2"},
		{"no number", []string{"init.sql"}, "NNNN_what.sql"},
		{"zero", []string{"0000_a.sql"}, "NNNN > 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{}
			for _, f := range tc.files {
				fsys["migrations/"+f] = &fstest.MapFile{Data: []byte("SELECT 1;")}
			}
			_, err := migrations(fsys)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("migrations: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("migrations: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// schemaVersions reads schema_version.
func schemaVersions(t *testing.T, db *DB) []int {
	t.Helper()
	rows, err := db.pool.Query(t.Context(), `SELECT version FROM schema_version ORDER BY version`)
	vs, err := scanAll(rows, err, func(r pgx.Row) (int, error) {
		var v int
		return v, r.Scan(&v)
	})
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// Nodes starting at once on an empty database all open it; the
// migrations run once (the advisory lock queues the others, who find the
// schema current).
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	const n = 4
	dbs := make([]*DB, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			var err error
			dbs[i], err = Open(context.Background(), dsn, Options{Shards: 8})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
	for _, db := range dbs {
		t.Cleanup(func() { _ = db.Close() })
	}
	all, _ := migrations(migrationFS)
	if got := schemaVersions(t, dbs[0]); len(got) != len(all) || got[len(got)-1] != all[len(all)-1].version {
		t.Fatalf("schema_version holds %v, want each of the %d migrations once", got, len(all))
	}
}

// Reopening applies nothing and keeps the data.
func TestReopenKeepsData(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	ctx := t.Context()
	db := openAt(t, dsn, Options{})
	if err := db.ReportAdd(ctx, xjobDay("2027-01-01", 3)); err != nil {
		t.Fatal(err)
	}
	want := schemaVersions(t, db)
	again := openAt(t, dsn, Options{})
	if got := schemaVersions(t, again); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after reopen schema_version %v, want %v", got, want)
	}
	days, err := again.ReportList(ctx, reportRange("2027-01-01"))
	if err != nil || len(days) != 1 || days[0].SucCount != 3 {
		t.Fatalf("after reopen: %+v, %v", days, err)
	}
}

// A database a newer xjob migrated is refused with one line that says
// what to do, and nothing is written to it.
func TestSchemaTooNewRefused(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	db := openAt(t, dsn, Options{})
	all, _ := migrations(migrationFS)
	known := all[len(all)-1].version
	if _, err := db.pool.Exec(t.Context(), `INSERT INTO schema_version (version, name, applied_at) VALUES ($1, 'from_the_future', 0)`, known+2); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), dsn, Options{})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("open of a newer schema: %v, want ErrSchemaTooNew", err)
	}
	want := fmt.Sprintf("pgstore: database schema is version %d, this xjob knows up to %d: upgrade xjob", known+2, known)
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

// The first Open records the cluster's shard count; a node configured
// with another is refused, naming both.
func TestShardsMismatchRefused(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	openAt(t, dsn, Options{Shards: 16})
	openAt(t, dsn, Options{Shards: 16})
	_, err := Open(context.Background(), dsn, Options{Shards: 8})
	var mm *ShardsMismatchError
	if !errors.Is(err, ErrShardsMismatch) || !errors.As(err, &mm) || mm.Database != 16 || mm.Node != 8 {
		t.Fatalf("open with 8 shards on a 16-shard database: %v", err)
	}
	for _, n := range []string{"16", "8"} {
		if !strings.Contains(err.Error(), n) {
			t.Fatalf("error %q does not name %s", err, n)
		}
	}
}

func TestServerMajor(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]int{"15.18 (Debian 15.18-0+deb12u1)": 15, "12.1": 12, "16beta1": 16, "9.6.24": 9, "": 0} {
		if got := serverMajor(v); got != want {
			t.Errorf("serverMajor(%q) = %d, want %d", v, got, want)
		}
	}
}
