// Package sqlitestore is xjob's local-mode backend: every store port and the
// ring and dispatch queues of package driver, kept in one SQLite file through
// the pure-Go modernc.org/sqlite driver (no cgo).
//
// The file is opened in WAL mode with synchronous=NORMAL, so readers never
// block the writer. Each *DB holds two connection pools: a single writer
// connection, owned by one goroutine that runs the writes queued meanwhile
// in one BEGIN IMMEDIATE transaction, a SAVEPOINT each (group commit, see
// writer.go: writes inside one process queue in Go instead of spinning on
// SQLITE_BUSY, and share the commit's cost), and a pool of readers; a
// checkpointer goroutine on a third connection copies the WAL into the
// file beside the writer (checkpoint.go). Hot
// statements are prepared once (stmts.go). Several processes may open the
// same file: every conditional write
// is a single UPDATE … WHERE version = ? (or an upsert) whose affected rows
// decide the winner, or runs inside BEGIN IMMEDIATE, so correctness never
// depends on in-process locks; the busy timeout absorbs cross-process
// contention.
package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/longpoll"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

var (
	_ driver.Store  = (*DB)(nil)
	_ driver.Queues = (*DB)(nil)
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options configure a DB. The zero value is usable.
type Options struct {
	// Shards is the number of scan shards jobs are spread over (default
	// 16). Every process opening one file must use the same value: a job's
	// shard is fixed when it is inserted.
	Shards int
	// Clock is what queues read time from and wait on (default clock.Real{}),
	// so tests drive delayed visibility and long polls with clock.Fake.
	Clock clock.Clock
	// BusyTimeout is how long a statement waits for another process's write
	// lock before failing with SQLITE_BUSY (default 10 s).
	BusyTimeout time.Duration
	// Readers caps the read connection pool (default max(4, GOMAXPROCS)).
	Readers int
	// PollInterval is how often a long-polling Receive re-reads the queue
	// table, for messages sent by another process (default 100 ms; sends
	// within this process wake waiters at once).
	PollInterval time.Duration
	// Logger hears about queue messages this code cannot read (default:
	// discarded), and at debug level what the writer did (stats.go).
	Logger *slog.Logger
}

func (o *Options) applyDefaults() {
	if o.Shards <= 0 {
		o.Shards = 16
	}
	o.Clock = fallback.Clock(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 10 * time.Second
	}
	if o.Readers <= 0 {
		o.Readers = max(4, runtime.GOMAXPROCS(0))
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 100 * time.Millisecond
	}
}

// DB is an open SQLite file. It implements driver.Store and driver.Queues
// and is safe for concurrent use.
type DB struct {
	opts Options
	w    *sql.DB   // one connection, owned by the writer goroutine
	wc   *sql.Conn // that connection
	r    *sql.DB   // readers
	ck   *sql.DB   // the checkpointer's connection (checkpoint.go)
	ws   writeStmts
	rs   readStmts

	reqs       chan *writeReq // unbuffered: a request is handed over or not at all
	closing    chan struct{}
	writerDone chan struct{}
	// checkpointerDone is closed when runCheckpointer has returned.
	checkpointerDone chan struct{}
	closeOnce        sync.Once
	closeErr         error
	jobs             jobCache // JobGetMany's jobs by version
	// jobIndexBatch is how many logs wait for their per-job index entry;
	// jobIndexNext the log id at which the writer looks again (only the
	// writer goroutine uses it; logjobindex.go).
	jobIndexBatch, jobIndexNext int64
	stats                       writerStats
	// walPath is the WAL file's; ckMu guards the salt and the copied
	// frames of the WAL the last checkpoint saw (stats.go).
	walPath  string
	ckMu     sync.Mutex
	ckSalt   uint32
	ckCopied int

	ring  *queue[fire.RingBucket]
	fast  *queue[fire.DispatchTask]
	slow  *queue[fire.DispatchTask]
	other sync.Map // lane name → *queue[fire.DispatchTask] for unknown lanes

	signals longpoll.Signals // wakes this DB's long polls on a send
}

// Open opens (creating if needed) the SQLite file at path and applies any
// pending migrations.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	opts.applyDefaults()
	if path == "" {
		return nil, errors.New("sqlite open: empty path")
	}
	if err := privateFiles(path); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// Checkpoints run beside the writer (checkpoint.go); the connection's
	// own only bound the WAL.
	q.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(autoCheckpointPages)+")")
	q.Add("_pragma", "foreign_keys(0)")
	// Group commit runs each request of a shared transaction in a
	// SAVEPOINT, and SQLite copies every page a savepoint first changes to
	// a sub-journal: a temporary file by default, one write syscall per
	// page (15% of the CPU of a 10,000-fire burst). In memory it costs a
	// memcpy; it only ever holds one transaction's pages.
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()

	w, err := openOne(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite open %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", dsn)
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite open %s: %w", path, err)
	}
	r.SetMaxOpenConns(opts.Readers)
	r.SetMaxIdleConns(opts.Readers)
	ck, err := openOne(dsn) // the checkpointer's (checkpoint.go)
	if err != nil {
		_, _ = w.Close(), r.Close()
		return nil, fmt.Errorf("sqlite open %s: %w", path, err)
	}

	db := &DB{opts: opts, w: w, r: r, ck: ck, walPath: path + "-wal", jobIndexBatch: jobIndexBatch,
		reqs: make(chan *writeReq), closing: make(chan struct{}), writerDone: make(chan struct{}),
		checkpointerDone: make(chan struct{})}
	if err := db.startRetrying(ctx); err != nil {
		close(db.writerDone)       // never started
		close(db.checkpointerDone) // never started
		_ = db.Close()
		return nil, err
	}
	go db.runWriter()
	go db.runCheckpointer()
	db.ring = newQueue[fire.RingBucket](db, "ring")
	db.fast = newQueue[fire.DispatchTask](db, "dispatch-"+string(fire.LaneFast))
	db.slow = newQueue[fire.DispatchTask](db, "dispatch-"+string(fire.LaneSlow))
	return db, nil
}

// Close stops the writer (after the transaction it is running), then
// closes both connection pools. Writes submitted afterwards fail.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		close(db.closing)
		<-db.writerDone
		<-db.checkpointerDone
		errs := []error{db.ws.close(), db.rs.close()}
		if db.wc != nil {
			errs = append(errs, db.wc.Close())
		}
		db.closeErr = errors.Join(append(errs, db.ck.Close(), db.w.Close(), db.r.Close())...)
	})
	return db.closeErr
}

// openOne opens a pool of one long-lived connection to dsn: the writer's,
// and the checkpointer's.
func openOne(dsn string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	return db, nil
}

// Shards returns the number of scan shards the DB was opened with.
func (db *DB) Shards() int { return db.opts.Shards }

// startRetrying runs start, retrying while another process holds a
// lock the busy handler does not wait for: switching a new file to WAL
// needs an exclusive lock, and SQLite reports SQLITE_BUSY at once when
// several processes open a new file together. This waits on the wall
// clock on purpose: it is about OS file locks, not scheduling time.
func (db *DB) startRetrying(ctx context.Context) error {
	deadline := time.Now().Add(db.opts.BusyTimeout)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		err := db.start(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("sqlite migrate: %w", ctx.Err())
		}
	}
}

// start takes the writer connection, applies pending migrations on it and
// prepares the hot statements on the writer and the reader pool.
func (db *DB) start(ctx context.Context) error {
	if db.wc == nil {
		c, err := db.w.Conn(ctx)
		if err != nil {
			return fmt.Errorf("sqlite open writer: %w", err)
		}
		db.wc = c
	}
	if err := db.migrate(ctx); err != nil {
		return err
	}
	if err := db.ws.prepare(ctx, db.wc); err != nil {
		return err
	}
	return db.rs.prepare(ctx, db.r)
}

// isBusy reports whether err is SQLITE_BUSY (any extended code).
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqliteBusy
}

// formerly maps a migration renumbered after it shipped to the name a
// file may have recorded it under. Two migrations once shared the number
// 0008; a file that ran 0008_job_applied already has its column, and
// running it again under its new name would fail on it. schema_migrations
// records names, not numbers, so migrate records the new name beside the
// old one and runs nothing; the old row stays, so that an older xjob still
// opens the file. A renumbered migration keeps its entry for good.
var formerly = map[string]string{
	"0011_job_applied": "0008_job_applied",
}

// migrate applies the embedded migrations not yet recorded in
// schema_migrations, in name order, in one IMMEDIATE transaction, so that
// processes opening a new file at the same time apply them once.
func (db *DB) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("sqlite migrate: %w", err)
	}
	sort.Strings(names)
	tx, err := db.wc.BeginTx(ctx, nil) // _txlock=immediate: BEGIN IMMEDIATE
	if err != nil {
		return fmt.Errorf("sqlite migrate: %w", err)
	}
	err = func() error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    TEXT PRIMARY KEY,
			applied_at INTEGER NOT NULL
		) WITHOUT ROWID`); err != nil {
			return fmt.Errorf("sqlite migrate: %w", err)
		}
		applied := map[string]bool{}
		rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return fmt.Errorf("sqlite migrate: %w", err)
		}
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				_ = rows.Close()
				return fmt.Errorf("sqlite migrate: %w", err)
			}
			applied[v] = true
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("sqlite migrate: %w", err)
		}
		for _, name := range names {
			version := strings.TrimSuffix(strings.TrimPrefix(name, "migrations/"), ".sql")
			if applied[version] {
				continue
			}
			if old, ok := formerly[version]; ok && applied[old] {
				if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
					version, time.Now().UnixMilli()); err != nil {
					return fmt.Errorf("sqlite migrate %s (formerly %s): %w", version, old, err)
				}
				continue
			}
			body, err := migrationFS.ReadFile(name)
			if err != nil {
				return fmt.Errorf("sqlite migrate %s: %w", version, err)
			}
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return fmt.Errorf("sqlite migrate %s: %w", version, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
				version, time.Now().UnixMilli()); err != nil {
				return fmt.Errorf("sqlite migrate %s: %w", version, err)
			}
		}
		return nil
	}()
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite migrate: %w", err)
	}
	return nil
}

// missingOr tells a lost conditional write apart from a missing record,
// inside the write transaction (exists is a writer statement selecting 1
// by id): ErrNotFound when there is no such row, else lost.
func missingOr(ctx context.Context, exists *sql.Stmt, id int64, lost error) error {
	var one int
	err := exists.QueryRowContext(ctx, id).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return xjob.ErrNotFound
	case err != nil:
		return err
	}
	return lost
}

// idFree checks that an explicit id (not 0) is not taken by a kind row:
// xjob.ErrConflict if it is.
func idFree(ctx context.Context, exists *sql.Stmt, kind string, id int64) error {
	if id == 0 {
		return nil
	}
	switch err := missingOr(ctx, exists, id, xjob.ErrConflict); {
	case errors.Is(err, xjob.ErrConflict):
		return fmt.Errorf("%s id %d is taken: %w", kind, id, err)
	case !errors.Is(err, xjob.ErrNotFound):
		return err
	}
	return nil
}

// nullID is an id as an insert argument: NULL (a new id) for 0.
func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// notFound maps sql.ErrNoRows to xjob.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return xjob.ErrNotFound
	}
	return err
}

// rowsAffected returns how many rows res changed.
func rowsAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// clampLimit turns a caller's limit into one the store serves.
func clampLimit(n, def, maxN int) int {
	if n <= 0 {
		return def
	}
	return min(n, maxN)
}

// sqliteBusy is SQLITE_BUSY, the primary result code of a lock conflict.
const sqliteBusy = 5

// privateFiles creates the database file with mode 0600 before SQLite
// opens it, and tightens an existing file and its -wal/-shm to 0600. The
// file holds job parameters and GLUE source, which other local users must
// not read. SQLite creates -wal and -shm with the mode of the main file,
// so a 0600 main file is enough for the ones it creates later.
func privateFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite open %s: %w", path, err)
	}
	_ = f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(p, fi.Mode().Perm()&0o700); err != nil {
			return fmt.Errorf("sqlite open: %s is readable by others (mode %s) and cannot be tightened: %w", p, fi.Mode().Perm(), err)
		}
	}
	return nil
}
