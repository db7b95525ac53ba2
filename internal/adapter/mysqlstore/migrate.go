package mysqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Versioned schema migrations.
//
// migrations/NNNN_name.sql are applied in number order, each recorded in
// schema_version once it has run. Every node runs Open, so the migration
// runs under GET_LOCK on a name derived from the database: the first node
// migrates, the others wait and then find the versions recorded.
//
// MySQL commits each DDL statement on its own: a migration is not atomic,
// and a crash half-way leaves some of its statements applied and the
// version unrecorded. So each statement of a migration must be safe to run
// again (CREATE TABLE IF NOT EXISTS, one table and its indexes per
// statement) or the migration must be one statement; the version is
// recorded after the last one with an idempotent insert.
//
// A database whose schema is newer than the newest migration this binary
// embeds was migrated by a newer xjob: Open refuses it (SchemaTooNewError)
// rather than run old code on a schema it does not know.

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded file, split into statements.
type migration struct {
	version int
	name    string
	stmts   []string
}

var migrationName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)

// loadMigrations reads the migrations of fsys's migrations directory in
// version order. Two files with one number are an error: the order of
// their statements would be undefined.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	seen := map[int]string{}
	for _, name := range names {
		base := path.Base(name)
		m := migrationName.FindStringSubmatch(base)
		if m == nil {
			return nil, fmt.Errorf("migration %s: want NNNN_lower_case_name.sql", base)
		}
		v, _ := strconv.Atoi(m[1])
		if v == 0 {
			return nil, fmt.Errorf("migration %s: numbers start at 0001", base)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s have the same number %04d", other, base, v)
		}
		seen[v] = base
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		stmts := splitStatements(string(body))
		if len(stmts) == 0 {
			return nil, fmt.Errorf("migration %s has no statement", base)
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(base, ".sql"), stmts: stmts})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	return out, nil
}

// splitStatements splits a migration at the semicolons that end a line,
// dropping lines that are only a comment: the store's connections do not
// allow several statements in one call.
func splitStatements(body string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.SplitSeq(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			if s := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"); s != "" {
				out = append(out, s)
			}
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// ErrSchemaTooNew is what a SchemaTooNewError matches with errors.Is.
var ErrSchemaTooNew = errors.New("mysqlstore: database schema is newer than this xjob")

// SchemaTooNewError refuses a database migrated by a newer xjob.
type SchemaTooNewError struct {
	Database int // the database's schema version
	Known    int // the newest version this binary embeds
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("mysqlstore: database schema is version %d, this xjob knows up to %d: upgrade xjob", e.Database, e.Known)
}

// Is makes errors.Is(err, ErrSchemaTooNew) hold.
func (e *SchemaTooNewError) Is(target error) bool { return target == ErrSchemaTooNew }

// SchemaVersion is the newest migration this binary embeds.
func SchemaVersion() int {
	migs, err := loadMigrations(migrationFS)
	if err != nil || len(migs) == 0 {
		return 0
	}
	return migs[len(migs)-1].version
}

// migrate applies the embedded migrations.
func (db *DB) migrate(ctx context.Context) error {
	migs, err := loadMigrations(migrationFS)
	if err != nil {
		return fmt.Errorf("mysqlstore migrate: %w", err)
	}
	return migrateWith(ctx, db.db, db.dbName, migs, db.opts.MigrateTimeout, db.opts.Clock.Now().UnixMilli())
}

// migrateWith applies migs not yet recorded in schema_version, holding the
// database's migration lock on one connection of pool throughout.
func migrateWith(ctx context.Context, pool *sql.DB, dbName string, migs []migration, wait time.Duration, now int64) error {
	c, err := pool.Conn(ctx)
	if err != nil {
		return fmt.Errorf("mysqlstore migrate: %w", err)
	}
	defer c.Close()
	lock := migrateLockName(dbName)
	var got sql.NullInt64
	if err := c.QueryRowContext(ctx, `SELECT GET_LOCK(?, ?)`, lock, max(1, int(wait.Seconds()))).Scan(&got); err != nil {
		return fmt.Errorf("mysqlstore migrate: lock %s: %w", lock, err)
	}
	if !got.Valid || got.Int64 != 1 {
		return fmt.Errorf("mysqlstore migrate: another node has held the migration lock %s for more than %v", lock, wait)
	}
	defer func() {
		// The lock also ends with the session; release it for the pool's sake.
		_, _ = c.ExecContext(context.WithoutCancel(ctx), `DO RELEASE_LOCK(?)`, lock)
	}()

	if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INT          NOT NULL,
		name       VARCHAR(255) NOT NULL,
		applied_at BIGINT       NOT NULL,
		PRIMARY KEY (version)
	) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin`); err != nil {
		return fmt.Errorf("mysqlstore migrate: %w", err)
	}
	rows, err := c.QueryContext(ctx, `SELECT version FROM schema_version`)
	if err != nil {
		return fmt.Errorf("mysqlstore migrate: %w", err)
	}
	applied := map[int]bool{}
	newestApplied := 0
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			_ = rows.Close()
			return fmt.Errorf("mysqlstore migrate: %w", err)
		}
		applied[v] = true
		newestApplied = max(newestApplied, v)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("mysqlstore migrate: %w", err)
	}
	known := 0
	if len(migs) > 0 {
		known = migs[len(migs)-1].version
	}
	if newestApplied > known {
		return &SchemaTooNewError{Database: newestApplied, Known: known}
	}
	for _, m := range migs {
		if applied[m.version] {
			continue
		}
		for i, s := range m.stmts {
			if _, err := c.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("mysqlstore migrate %s (statement %d of %d): %w", m.name, i+1, len(m.stmts), err)
			}
		}
		if _, err := c.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)
			ON DUPLICATE KEY UPDATE version = version`, m.version, m.name, now); err != nil {
			return fmt.Errorf("mysqlstore migrate %s: record: %w", m.name, err)
		}
	}
	return nil
}

// migrateLockName is the GET_LOCK name of a database's migrations. Locks
// are server-wide, so it names the database: databases of one server
// migrate independently. Names are at most 64 characters.
func migrateLockName(dbName string) string {
	name := "xjob_migrate:" + dbName
	if len(name) > 64 {
		sum := sha256.Sum256([]byte(dbName))
		name = "xjob_migrate:" + hex.EncodeToString(sum[:16])
	}
	return name
}
