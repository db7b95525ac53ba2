package mysqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/longpoll"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

var (
	_ driver.Store  = (*DB)(nil)
	_ driver.Queues = (*DB)(nil)
)

// DefaultShards is the scan shard count of a new database when Options
// names none.
const DefaultShards = 16

// Options configure a DB. The zero value is usable.
type Options struct {
	// Shards is the number of scan shards jobs are spread over. The first
	// Open of a database records it; every later Open must pass the same
	// number or 0 (which takes the recorded one; DefaultShards on a new
	// database): a job's shard is fixed when it is inserted.
	Shards int
	// Clock is what queues read time from and wait on (default clock.Real{}),
	// so tests drive delayed visibility and long polls with clock.Fake.
	Clock clock.Clock
	// Logger hears about queue messages this code cannot read and about
	// retried deadlocks (default: discarded).
	Logger *slog.Logger
	// Node names this process in the queue rows it receives, so that
	// ReleaseNodeClaims can hand back what a dead node held (default "").
	Node string
	// ConnectTimeout bounds dialing the server (default 5 s) unless the DSN
	// sets its own (timeout=…).
	ConnectTimeout time.Duration
	// MaxConns caps the connection pool (default max(16, 4×GOMAXPROCS)).
	MaxConns int
	// PollInterval is how often a long-polling Receive re-reads its queue
	// for messages other nodes sent (default 100 ms; sends through this DB
	// wake its waiters at once).
	PollInterval time.Duration
	// MigrateTimeout bounds the wait for another node's migration
	// (default 60 s).
	MigrateTimeout time.Duration
}

func (o *Options) applyDefaults() {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	if o.MaxConns <= 0 {
		o.MaxConns = max(16, 4*runtime.GOMAXPROCS(0))
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 100 * time.Millisecond
	}
	if o.MigrateTimeout <= 0 {
		o.MigrateTimeout = 60 * time.Second
	}
}

// DB is an open MySQL or MariaDB database. It implements driver.Store and
// driver.Queues and is safe for concurrent use, by any number of
// processes on one database.
type DB struct {
	opts   Options
	db     *sql.DB
	dbName string
	server string // "MariaDB 10.11.6" or "MySQL 8.0.36", for messages
	st     stmts
	jobs   jobCache

	ring  *queue[fire.RingBucket]
	fast  *queue[fire.DispatchTask]
	slow  *queue[fire.DispatchTask]
	other sync.Map // lane name → *queue[fire.DispatchTask] for unknown lanes

	signals longpoll.Signals // wakes this DB's long polls on a send

	closeOnce sync.Once
	closeErr  error
}

// Open connects to the database dsn names (go-sql-driver form,
// user:pass@tcp(host:port)/db?…; see ParseURL for mysql:// URLs), checks
// the server, applies pending migrations under a lock every node shares,
// and checks the cluster's shard count.
//
// Open forces the session settings the store relies on, whatever the DSN
// says: READ COMMITTED, utf8mb4 with the binary collation, strict SQL
// mode, affected rows counting matched rows, client-side interpolation
// of one-off statements, no multi-statements.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	opts.applyDefaults()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: %w", redact(err, dsn))
	}
	if cfg.DBName == "" {
		return nil, errors.New("mysqlstore: the DSN names no database (user:pass@tcp(host:port)/DATABASE)")
	}
	if opts.Shards < 0 {
		return nil, fmt.Errorf("mysqlstore: %d scan shards: want at least 1", opts.Shards)
	}
	force(cfg, opts)

	server, isolationVar, err := probe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cfg.Params[isolationVar] = "'READ-COMMITTED'"
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: %w", redact(err, dsn))
	}
	pool := sql.OpenDB(conn)
	pool.SetMaxOpenConns(opts.MaxConns)
	pool.SetMaxIdleConns(opts.MaxConns)
	pool.SetConnMaxLifetime(30 * time.Minute)
	pool.SetConnMaxIdleTime(5 * time.Minute)

	db := &DB{opts: opts, db: pool, dbName: cfg.DBName, server: server}
	if err := db.start(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	db.ring = newQueue[fire.RingBucket](db, "ring")
	db.fast = newQueue[fire.DispatchTask](db, "dispatch-"+string(fire.LaneFast))
	db.slow = newQueue[fire.DispatchTask](db, "dispatch-"+string(fire.LaneSlow))
	return db, nil
}

// start migrates, records or checks the shard count and prepares the hot
// statements.
func (db *DB) start(ctx context.Context) error {
	if err := db.migrate(ctx); err != nil {
		return err
	}
	shards, err := db.agreeShards(ctx, db.opts.Shards)
	if err != nil {
		return err
	}
	db.opts.Shards = shards
	return db.st.prepare(ctx, db.db)
}

// force sets what the store relies on over whatever the DSN asked for.
func force(cfg *mysql.Config, opts Options) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = opts.ConnectTimeout
	}
	cfg.Collation = "utf8mb4_bin"
	cfg.ClientFoundRows = true   // an UPDATE that matched but changed nothing still counts
	cfg.InterpolateParams = true // one round trip for one-off statements; hot ones are prepared
	cfg.MultiStatements = false  // migrations are split into statements (migrate.go)
	cfg.ParseTime = false        // instants are BIGINT Unix ms
	cfg.Logger = mysql.Logger(silentLogger{})
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	// Strict: an oversized value is an error, never silently truncated.
	cfg.Params["sql_mode"] = "'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'"
	// A conditional write waits for another's row lock at most this long
	// (the default, 50 s, would stall a scan tick); a timeout is retried.
	cfg.Params["innodb_lock_wait_timeout"] = "10"
	delete(cfg.Params, "transaction_isolation")
	delete(cfg.Params, "tx_isolation")
}

// silentLogger drops go-sql-driver's own log lines ("unexpected EOF" on a
// connection the server closed): the errors reach the caller anyway.
type silentLogger struct{}

func (silentLogger) Print(...any) {}

// minimum server versions: SELECT … FOR UPDATE SKIP LOCKED.
var versionRE = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)`)

// probe connects once, names the server and checks that it is new enough,
// and finds what the session's isolation variable is called: MySQL 8 has
// only transaction_isolation, MariaDB before 11.1 only tx_isolation.
func probe(ctx context.Context, cfg *mysql.Config) (server, isolationVar string, err error) {
	// The dial timeout does not cover the handshake: a server that takes
	// the connection and never answers must not hang Open.
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, 2*cfg.Timeout)
	defer cancel()
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return "", "", fmt.Errorf("mysqlstore: %w", err)
	}
	p := sql.OpenDB(conn)
	defer p.Close()
	p.SetMaxOpenConns(1)
	c, err := p.Conn(ctx)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
			err = fmt.Errorf("no answer within %v: %w", 2*cfg.Timeout, err)
		}
		return "", "", fmt.Errorf("mysqlstore: cannot connect to %s as %q: %w", cfg.Addr, cfg.User, err)
	}
	defer c.Close()
	var version string
	if err := c.QueryRowContext(ctx, `SELECT VERSION()`).Scan(&version); err != nil {
		return "", "", fmt.Errorf("mysqlstore: server version: %w", err)
	}
	maria := strings.Contains(strings.ToLower(version), "mariadb")
	m := versionRE.FindStringSubmatch(version)
	if m == nil {
		return "", "", fmt.Errorf("mysqlstore: cannot read the server version %q", version)
	}
	v := [3]int{}
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	server = "MySQL " + m[0]
	want := [3]int{8, 0, 1}
	if maria {
		server, want = "MariaDB "+m[0], [3]int{10, 6, 0}
	}
	if cmpVersion(v, want) < 0 {
		return "", "", fmt.Errorf("mysqlstore: %s is too old: xjob needs MySQL ≥ 8.0.1 or MariaDB ≥ 10.6 (SELECT … FOR UPDATE SKIP LOCKED)", server)
	}
	isolationVar = "transaction_isolation"
	var level string
	if err := c.QueryRowContext(ctx, `SELECT @@transaction_isolation`).Scan(&level); err != nil {
		if !isCode(err, errUnknownSystemVariable) {
			return "", "", fmt.Errorf("mysqlstore: isolation level: %w", err)
		}
		isolationVar = "tx_isolation"
	}
	return server, isolationVar, nil
}

func cmpVersion(a, b [3]int) int {
	for i := range a {
		if a[i] != b[i] {
			return a[i] - b[i]
		}
	}
	return 0
}

// Ping checks that the database answers (a node's readiness).
func (db *DB) Ping(ctx context.Context) error {
	if err := db.db.PingContext(ctx); err != nil {
		return fmt.Errorf("mysqlstore ping: %w", err)
	}
	return nil
}

// Close closes the prepared statements and the connection pool.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.closeErr = errors.Join(db.st.close(), db.db.Close())
	})
	return db.closeErr
}

// Shards returns the number of scan shards of the database.
func (db *DB) Shards() int { return db.opts.Shards }

// Server names the server and its version ("MariaDB 10.11.6").
func (db *DB) Server() string { return db.server }

// MySQL error numbers the store acts on.
const (
	errDupEntry              = 1062
	errLockWaitTimeout       = 1205
	errDeadlock              = 1213
	errUnknownSystemVariable = 1193
)

func isCode(err error, code uint16) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == code
}

// retryable reports a transaction the server rolled back to break a
// deadlock or a lock wait: running it again is the remedy.
func retryable(err error) bool {
	return isCode(err, errDeadlock) || isCode(err, errLockWaitTimeout) || errors.Is(err, errRace)
}

// errRace is a statement's outcome that another node's concurrent write
// made useless, which running it again resolves (see insertLogs).
var errRace = errors.New("lost a race with a concurrent write")

// maxAttempts bounds the runs of one statement or transaction that keeps
// deadlocking.
const maxAttempts = 6

// retry runs fn until it succeeds, fails for another reason than a
// deadlock or lock wait timeout, or has run maxAttempts times. fn must be
// safe to run again: it starts from scratch (a failed transaction was
// rolled back whole). The backoff waits on the wall clock on purpose: it
// is about lock contention in the server, not scheduling time.
func (db *DB) retry(ctx context.Context, what string, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !retryable(err) || attempt == maxAttempts {
			return err
		}
		db.opts.Logger.DebugContext(ctx, "mysqlstore: retrying after a deadlock", "op", what, "attempt", attempt, "err", err)
		d := time.Duration(attempt*attempt) * time.Millisecond * time.Duration(1+randInt63()%5)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}

// tx runs fn in a transaction, committed if fn returns nil, retried
// whole on a deadlock (see retry).
func (db *DB) tx(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	return db.retry(ctx, what, func() error {
		tx, err := db.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}

// execer is a *sql.DB, *sql.Tx or *sql.Conn.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// notFound maps sql.ErrNoRows to xjob.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return xjob.ErrNotFound
	}
	return err
}

// rowsAffected returns how many rows res matched (clientFoundRows).
func rowsAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// missingOr tells a lost conditional write apart from a missing record:
// ErrNotFound when q (selecting 1 by id) finds no row, else lost.
func missingOr(ctx context.Context, e execer, q string, id any, lost error) error {
	var one int
	err := e.QueryRowContext(ctx, q, id).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return xjob.ErrNotFound
	case err != nil:
		return err
	}
	return lost
}

// clampLimit turns a caller's limit into one the store serves.
func clampLimit(n, def, maxN int) int {
	if n <= 0 {
		return def
	}
	return min(n, maxN)
}

// marks returns n comma-separated placeholders.
func marks(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?,", n-1) + "?"
}

// int64Args turns ids into statement arguments.
func int64Args(ids []int64) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// randInt63 is a random non-negative int64.
func randInt63() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.LittleEndian.Uint64(b[:]) >> 1)
}

// randHex is n random bytes in hex.
func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// redact removes the password of dsn from err's message: no error, log
// line or panic may carry it. go-sql-driver's own errors never quote the
// password, but some quote parts of the DSN.
func redact(err error, dsn string) error {
	at := strings.LastIndex(dsn, "@")
	colon := strings.Index(dsn, ":")
	if at < 0 || colon < 0 || colon > at {
		return err
	}
	pass := dsn[colon+1 : at]
	if pass == "" || !strings.Contains(err.Error(), pass) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pass, "xxxxx"))
}

// badCursor is the error for a page cursor this store did not issue.
func badCursor(c string) error {
	return &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "cursor", Message: fmt.Sprintf("%q is not a valid page cursor", c)}}}
}
