package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/mariadb"
)

// The embedded migrations load: numbered, unique, in order, each with
// statements.
func TestEmbeddedMigrationsLoad(t *testing.T) {
	t.Parallel()
	migs, err := loadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	if len(migs) == 0 || SchemaVersion() != migs[len(migs)-1].version {
		t.Fatalf("%d migrations, SchemaVersion %d", len(migs), SchemaVersion())
	}
	for i, m := range migs {
		if i > 0 && m.version <= migs[i-1].version {
			t.Fatalf("migrations out of order: %04d after %04d", m.version, migs[i-1].version)
		}
		for _, s := range m.stmts {
			if strings.HasPrefix(strings.TrimSpace(strings.ToUpper(s)), "CREATE TABLE") && !strings.Contains(strings.ToUpper(s), "IF NOT EXISTS") {
				t.Errorf("%s: a CREATE TABLE without IF NOT EXISTS cannot run again after a half-applied migration:\n%s", m.name, firstLine(s))
			}
		}
	}
}

func TestLoadMigrationsRefuses(t *testing.T) {
	t.Parallel()
	ok := &fstest.MapFile{Data: []byte("CREATE TABLE IF NOT EXISTS a (x INT);\n")}
	for _, c := range []struct {
		name  string
		files fstest.MapFS
		want  string
	}{
		{"duplicate number", fstest.MapFS{"migrations/0001_init.sql": ok, "migrations/0001_other.sql": ok}, "same number 0001"},
		{"bad name", fstest.MapFS{"migrations/1_init.sql": ok}, "want NNNN_lower_case_name.sql"},
		{"number zero", fstest.MapFS{"migrations/0000_init.sql": ok}, "start at 0001"},
		{"empty", fstest.MapFS{"migrations/0001_init.sql": {Data: []byte("-- nothing\n")}}, "no statement"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadMigrations(c.files)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("loadMigrations: %v, want an error saying %q", err, c.want)
			}
		})
	}
}

func TestSplitStatements(t *testing.T) {
	t.Parallel()
	got := splitStatements("-- header; with a semicolon;\nCREATE TABLE a (\n  x INT -- inline\n);\n\n  -- between\nINSERT INTO a VALUES (1);\nSELECT 1")
	want := []string{"CREATE TABLE a (\n  x INT -- inline\n)", "INSERT INTO a VALUES (1)", "SELECT 1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("split = %q, want %q", got, want)
	}
}

// rawPool is a plain pool on dsn, for reading what the store wrote.
func rawPool(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	p, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// Nodes starting together on an empty database all open it; the schema
// is applied once, each version recorded once.
func TestConcurrentOpenOfEmptyDatabase(t *testing.T) {
	t.Parallel()
	dsn := mariadb.Shared(t).NewDatabase(t)
	const n = 5
	errs := make(chan error, n)
	for range n {
		go func() {
			db, err := Open(context.Background(), dsn, Options{Shards: 8})
			if err == nil {
				_, err = db.JobInsert(context.Background(), xjob.Job{GroupID: 1})
				err = errors.Join(err, db.Close())
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
	raw := rawPool(t, dsn)
	var rows, versions int
	if err := raw.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT version) FROM schema_version`).Scan(&rows, &versions); err != nil {
		t.Fatal(err)
	}
	migs, _ := loadMigrations(migrationFS)
	if rows != len(migs) || versions != len(migs) {
		t.Fatalf("schema_version holds %d rows of %d versions, want %d", rows, versions, len(migs))
	}
}

// A migration that is not idempotent (an insert) runs once however many
// nodes migrate at the same time: the lock serializes them and the
// version recorded stops the others.
func TestMigrationRunsOnceUnderTheLock(t *testing.T) {
	t.Parallel()
	dsn := mariadb.Shared(t).NewDatabase(t)
	migs, err := loadMigrations(fstest.MapFS{
		"migrations/0001_counter.sql": {Data: []byte("CREATE TABLE IF NOT EXISTS ran (n INT NOT NULL);\n")},
		"migrations/0002_count.sql":   {Data: []byte("INSERT INTO ran VALUES (1);\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			p := rawPool(t, dsn)
			errs[i] = migrateWith(t.Context(), p, dbNameOf(t, dsn), migs, 30*time.Second, 1)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var ran int
	if err := rawPool(t, dsn).QueryRow(`SELECT COUNT(*) FROM ran`).Scan(&ran); err != nil {
		t.Fatal(err)
	}
	if ran != 1 {
		t.Fatalf("the insert migration ran %d times, want once", ran)
	}
}

func dbNameOf(t *testing.T, dsn string) string {
	t.Helper()
	i := strings.LastIndex(dsn, "/")
	name, _, _ := strings.Cut(dsn[i+1:], "?")
	return name
}

// A database migrated by a newer xjob is refused with one line naming
// both versions; reopening a current one applies nothing again.
func TestSchemaTooNewRefused(t *testing.T) {
	t.Parallel()
	dsn := mariadb.Shared(t).NewDatabase(t)
	db := openAt(t, dsn, Options{})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	openAt(t, dsn, Options{}) // a reopen is fine
	known := SchemaVersion()
	if _, err := rawPool(t, dsn).Exec(`INSERT INTO schema_version (version, name, applied_at) VALUES (?, 'from_the_future', 0)`, known+2); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), dsn, Options{})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("open of a newer schema: %v, want ErrSchemaTooNew", err)
	}
	want := "mysqlstore: database schema is version " + strconv.Itoa(known+2) + ", this xjob knows up to " + strconv.Itoa(known) + ": upgrade xjob"
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}
