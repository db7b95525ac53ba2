package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// migrationName is how a migration file is named: a four-digit number
// that orders it, then what it does.
var migrationName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)

// embeddedVersions are the versions of the embedded migrations, in the
// order migrate applies them.
func embeddedVersions(t *testing.T) []string {
	t.Helper()
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("embedded migrations: %v, %v", names, err)
	}
	var versions []string
	for _, n := range names {
		versions = append(versions, strings.TrimSuffix(path.Base(n), ".sql"))
	}
	slices.Sort(versions)
	return versions
}

// Each migration has its own number: two files with one number are
// applied in the order of the rest of their names, which nobody chose.
func TestMigrationNumbersUnique(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for _, v := range embeddedVersions(t) {
		m := migrationName.FindStringSubmatch(v + ".sql")
		if m == nil {
			t.Errorf("migration %s: want a name like 0012_what_it_does.sql", v)
			continue
		}
		if other, dup := seen[m[1]]; dup {
			t.Errorf("migrations %s and %s share the number %s", other, v, m[1])
		}
		seen[m[1]] = v
	}
	// A renumbered migration's new name is a file, and its old name is
	// not one any more: else migrate would run it under both.
	for version, old := range formerly {
		if _, ok := seen[version[:4]]; !ok || seen[version[:4]] != version {
			t.Errorf("formerly names %s, which is not an embedded migration", version)
		}
		if slices.Contains(embeddedVersions(t), old) {
			t.Errorf("formerly: %s is still an embedded migration", old)
		}
	}
}

// A file that applied the migrations under the names they shipped with
// opens with the renumbered ones and runs nothing twice (a second ALTER
// TABLE or CREATE TABLE would fail the open), and ends with the schema a
// new file gets; a new file records every migration once, under its
// current name.
func TestRenumberedMigrations(t *testing.T) {
	t.Parallel()
	current := embeddedVersions(t)
	// The migration sequences files were left with by the releases
	// before the renumbering: the job_applied column came before the auth
	// tables, both were numbered 0008, and some files had only one.
	upTo7 := []string{"0001_init", "0002_console", "0003_job_name", "0004_after_completion",
		"0005_job_declared", "0006_declaration_retired", "0007_logs_occurrence_by_time"}
	cases := []struct {
		name string
		old  []string // versions applied under their old names
		want []string // versions recorded after the open
	}{
		{"new file", nil, current},
		{"both 0008s, then 0009 and 0010",
			slices.Concat(upTo7, []string{"0008_auth", "0008_job_applied", "0009_report_groups", "0010_logs_failed"}),
			slices.Concat(current, []string{"0008_job_applied"})},
		{"0008_job_applied only",
			slices.Concat(upTo7, []string{"0008_job_applied"}),
			slices.Concat(current, []string{"0008_job_applied"})},
		{"0008_auth only", slices.Concat(upTo7, []string{"0008_auth"}), current},
	}
	fresh := schema(t, setup(t, Options{}).r)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "xjob.db")
			applyOld(t, file, c.old)
			db := openAt(t, file, Options{})
			if got := schema(t, db.r); !slices.Equal(got, fresh) {
				t.Errorf("schema after the open:\n%s\nwant a new file's:\n%s",
					strings.Join(got, "\n"), strings.Join(fresh, "\n"))
			}
			got, kept := recorded(t, db.r)
			if want := slices.Sorted(slices.Values(c.want)); !slices.Equal(got, want) {
				t.Errorf("recorded %q, want %q", got, want)
			}
			if kept != len(c.old) {
				t.Errorf("%d of the %d old rows kept as they were", kept, len(c.old))
			}
			// Opening again runs and records nothing more.
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = openAt(t, file, Options{})
			if again, _ := recorded(t, db.r); !slices.Equal(again, got) {
				t.Errorf("recorded after a reopen %q, want %q", again, got)
			}
		})
	}
}

// applyOld builds the file an older xjob left: the migrations versions
// names, run and recorded (applied at 1) as migrate ran them then. A
// renumbered migration's SQL is its current file's: only its number
// changed.
func applyOld(t *testing.T, file string, versions []string) {
	t.Helper()
	if len(versions) == 0 {
		return
	}
	ctx := context.Background()
	raw, err := sql.Open("sqlite", "file:"+file)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, `CREATE TABLE schema_migrations (
		version    TEXT PRIMARY KEY,
		applied_at INTEGER NOT NULL
	) WITHOUT ROWID`); err != nil {
		t.Fatal(err)
	}
	// Spelt out rather than read from formerly, so that a formerly that
	// lost its entry fails this test.
	renamed := map[string]string{"0008_job_applied": "0011_job_applied"}
	for _, v := range versions {
		body, err := migrationFS.ReadFile("migrations/" + cmp.Or(renamed[v], v) + ".sql")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.ExecContext(ctx, string(body)); err != nil {
			t.Fatalf("old migration %s: %v", v, err)
		}
		if _, err := raw.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, 1)`, v); err != nil {
			t.Fatal(err)
		}
	}
}

// schema is every table, index and trigger of the file, with its SQL,
// but migrate's own table.
func schema(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(),
		`SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_schema WHERE name <> 'schema_migrations' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("schema of %d objects: %q", len(out), out)
	}
	return out
}

// recorded is the sorted versions in schema_migrations, and how many of
// them have the applied_at applyOld gave them.
func recorded(t *testing.T, db *sql.DB) (versions []string, old int) {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT version, applied_at FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		var at int64
		if err := rows.Scan(&v, &at); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
		if at == 1 {
			old++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return versions, old
}
