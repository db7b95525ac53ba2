package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded schema change, migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	body    string
}

// migrations returns the embedded migrations in version order. Versions
// are the file names' numbers and must be unique: two files of one
// number (two branches that each added "the next" migration) are an
// error, not an order picked by name.
func migrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	seen := map[int]string{}
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: the name must be NNNN_what.sql with NNNN > 0", base)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", other, base, v)
		}
		seen[v] = base
		body, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(base, ".sql"), body: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// ErrSchemaTooNew: the database was migrated by a newer xjob than this one.
var ErrSchemaTooNew = errors.New("pgstore: database schema is newer than this xjob")

// SchemaTooNewError is the error of an Open on a database whose schema a
// newer xjob migrated past the migrations this binary knows: running on
// it could write what the newer schema forbids. It matches
// ErrSchemaTooNew.
type SchemaTooNewError struct {
	Database, Known int
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("pgstore: database schema is version %d, this xjob knows up to %d: upgrade xjob", e.Database, e.Known)
}

// Is makes errors.Is(err, ErrSchemaTooNew) hold.
func (e *SchemaTooNewError) Is(target error) bool { return target == ErrSchemaTooNew }

// migrateLock is the key of the advisory lock that migrations run under
// ("xjob" in ASCII). Advisory locks are per database, so it serializes
// the nodes opening one database and no one else.
const migrateLock = 0x786a6f62

// migrate applies the migrations the database lacks and checks the
// shard count (checkShards), in one transaction
// that first takes migrateLock: nodes starting at once queue on the lock,
// and each after the first finds the schema current. DDL is
// transactional in PostgreSQL, so a failed migration leaves no trace.
func (db *DB) migrate(ctx context.Context) error {
	return db.migrateFrom(ctx, migrationFS)
}

func (db *DB) migrateFrom(ctx context.Context, fsys fs.FS) error {
	all, err := migrations(fsys)
	if err != nil {
		return fmt.Errorf("pgstore migrate: %w", err)
	}
	known := 0
	if len(all) > 0 {
		known = all[len(all)-1].version
	}
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
			version    INTEGER PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at BIGINT  NOT NULL)`); err != nil {
			return err
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&current); err != nil {
			return err
		}
		if current > known {
			return &SchemaTooNewError{Database: current, Known: known}
		}
		for _, m := range all {
			if m.version <= current {
				continue
			}
			if _, err := tx.Exec(ctx, m.body); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, db.opts.Clock.Now().UnixMilli()); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
		return db.checkShards(ctx, tx)
	})
	var tooNew *SchemaTooNewError
	var shards *ShardsMismatchError
	switch {
	case errors.As(err, &tooNew):
		return tooNew
	case errors.As(err, &shards):
		return shards
	}
	if err != nil {
		return db.wrap("migrate", err)
	}
	return nil
}
