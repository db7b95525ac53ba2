package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

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

// Options configure a DB. The zero value is usable.
type Options struct {
	// Shards is the number of scan shards jobs are spread over (default
	// 16). It is the cluster's: the first Open of a database records it,
	// and an Open with another count is refused (ErrShardsMismatch), as a
	// job's shard is fixed when it is inserted.
	Shards int
	// Clock is what queues read time from and wait on (default
	// clock.Real{}), so tests drive delayed visibility and long polls with
	// clock.Fake.
	Clock clock.Clock
	// Logger hears about queue messages this code cannot read (default:
	// discarded).
	Logger *slog.Logger
	// Node is this node's id, recorded on the queue messages it receives
	// so that ReleaseNodeClaims can hand back what a dead node held.
	Node string
	// MaxConns caps the connection pool (default 16). Every node of a
	// cluster opens its own pool: the server's max_connections must hold
	// the sum.
	MaxConns int
	// ConnectTimeout bounds each connection attempt, Open's first one
	// included, when the DSN names no connect_timeout (default 5 s): an
	// unreachable server is one clear error, not a hang.
	ConnectTimeout time.Duration
	// PollInterval is how often a long-polling Receive re-reads the queue
	// table when nothing wakes it (default 1 s). Sends through this DB
	// wake its waiters at once, and other nodes' sends by notification
	// (notify.go); messages due later are waited for to their visible_at.
	// The poll only bounds the wait while notifications are lost (the
	// listening connection is down), and an idle node's empty polls of
	// its queues, two statements each, were half its idle CPU at 100 ms.
	PollInterval time.Duration
}

func (o *Options) applyDefaults() {
	if o.Shards <= 0 {
		o.Shards = 16
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 16
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
}

// DB is an open PostgreSQL database. It implements driver.Store and
// driver.Queues and is safe for concurrent use; every node of a cluster
// opens its own on the same database.
type DB struct {
	opts   Options
	pool   *pgxpool.Pool
	secret redactor // the DSN's password, kept out of every error
	target string   // user@host:port/database, for messages

	jobs jobCache // JobGetMany's jobs by version

	ring  *queue[fire.RingBucket]
	fast  *queue[fire.DispatchTask]
	slow  *queue[fire.DispatchTask]
	other sync.Map // lane name → *queue[fire.DispatchTask] for unknown lanes

	signals longpoll.Signals // wakes this DB's long polls on a send

	stopListen context.CancelFunc // ends listen (Close)
	listenDone chan struct{}      // closed when listen has returned
	closeOnce  sync.Once
}

// Open connects to the PostgreSQL database dsn names (a URL or key=value
// DSN, as libpq takes), applies the pending migrations under an advisory
// lock and checks the cluster's shard count. Its errors never contain
// the DSN's password.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	opts.applyDefaults()
	secret := newRedactor(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgstore open: %w", secret.clean(err))
	}
	secret.add(cfg.ConnConfig.Password)
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "xjob"
	}
	cfg.MaxConns = int32(opts.MaxConns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore open: %w", secret.clean(err))
	}
	db := &DB{opts: opts, pool: pool, secret: secret,
		target: fmt.Sprintf("%s@%s:%d/%s", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)}
	if err := db.start(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	db.ring = newQueue[fire.RingBucket](db, "ring")
	db.fast = newQueue[fire.DispatchTask](db, "dispatch-"+string(fire.LaneFast))
	db.slow = newQueue[fire.DispatchTask](db, "dispatch-"+string(fire.LaneSlow))
	lctx, stop := context.WithCancel(context.Background())
	db.stopListen, db.listenDone = stop, make(chan struct{})
	go db.listen(lctx, cfg.ConnConfig.Copy())
	return db, nil
}

// start reaches the server (one clear error when it cannot), migrates
// and checks the shard count.
func (db *DB) start(ctx context.Context) error {
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgstore open: cannot connect to PostgreSQL as %s: %w", db.target, db.secret.clean(err))
	}
	version := c.Conn().PgConn().ParameterStatus("server_version")
	c.Release()
	if major := serverMajor(version); major > 0 && major < minServerMajor { // 0: unknown; the migration will tell
		return fmt.Errorf("pgstore open: %s runs PostgreSQL %s; xjob needs %d or later", db.target, version, minServerMajor)
	}
	return db.migrate(ctx)
}

// minServerMajor is the oldest PostgreSQL the schema runs on (generated
// columns, see doc.go).
const minServerMajor = 12

// serverMajor is the major version of a server_version such as "15.18
// (Debian 15.18-0+deb12u1)" or "16beta1"; 0 when it cannot tell.
func serverMajor(v string) int {
	end := 0
	for end < len(v) && v[end] >= '0' && v[end] <= '9' {
		end++
	}
	n, _ := strconv.Atoi(v[:end])
	return n
}

// Ping checks that the database answers (a node's readiness).
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return db.wrap("ping", err)
	}
	return nil
}

// Close stops listening for other nodes' sends and closes the connection
// pool, waiting for connections in use to be returned.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.stopListen()
		<-db.listenDone
		db.pool.Close()
	})
	return nil
}

// Shards returns the number of scan shards the DB was opened with (the
// cluster's: Open refuses another).
func (db *DB) Shards() int { return db.opts.Shards }

// Node returns the node id the DB was opened with.
func (db *DB) Node() string { return db.opts.Node }

// ErrShardsMismatch: the database belongs to a cluster with another scan
// shard count than the one this node was started with.
var ErrShardsMismatch = errors.New("pgstore: scan shard count differs from the cluster's")

// ShardsMismatchError is the error of an Open whose Shards differ from
// the count the database recorded at its first Open. It matches
// ErrShardsMismatch.
type ShardsMismatchError struct {
	Database, Node int
}

func (e *ShardsMismatchError) Error() string {
	return fmt.Sprintf("pgstore: the database's cluster uses %d scan shards, this node is configured with %d: every node must use the same count",
		e.Database, e.Node)
}

// Is makes errors.Is(err, ErrShardsMismatch) hold.
func (e *ShardsMismatchError) Is(target error) bool { return target == ErrShardsMismatch }

// checkShards records the shard count on the first Open of a database
// and refuses any other count afterwards. It runs in the migration's
// transaction, under its lock, so that of nodes opening a new database at
// once the first one's count is the cluster's.
func (db *DB) checkShards(ctx context.Context, tx pgx.Tx) error {
	stored, err := metaPut(ctx, tx, "shards", strconv.Itoa(db.opts.Shards))
	if err != nil {
		return fmt.Errorf("shard count: %w", err)
	}
	n, err := strconv.Atoi(stored)
	if err != nil {
		return fmt.Errorf("pgstore open: stored shard count %q: %w", stored, err)
	}
	if n != db.opts.Shards {
		return &ShardsMismatchError{Database: n, Node: db.opts.Shards}
	}
	return nil
}

// metaPut stores value under key in cluster_meta unless the key has one,
// and returns the key's value. The insert and the read are two statements:
// in one, a value another transaction committed while the insert waited
// for it would be outside the read's snapshot.
func metaPut(ctx context.Context, q querier, key, value string) (string, error) {
	if _, err := q.Exec(ctx, `INSERT INTO cluster_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, key, value); err != nil {
		return "", err
	}
	var stored string
	err := q.QueryRow(ctx, `SELECT value FROM cluster_meta WHERE key = $1`, key).Scan(&stored)
	return stored, err
}

// wrap adds context to err, with the DSN's password taken out of any
// connection error.
func (db *DB) wrap(what string, err error) error {
	return fmt.Errorf("pgstore %s: %w", what, db.secret.clean(err))
}

// missingOr tells a lost conditional write apart from a missing record:
// ErrNotFound when table has no row id, else lost.
func (db *DB) missingOr(ctx context.Context, q querier, table string, id int64, lost error) error {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM `+table+` WHERE id = $1`, id).Scan(&one)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return xjob.ErrNotFound
	case err != nil:
		return err
	}
	return lost
}

// querier is a pool, a connection or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// inTx runs fn in a READ COMMITTED transaction, committed when fn
// returns nil. A deadlock the server broke (40P01) rolls it back and runs
// fn again, up to a few times: the writes were undone with it.
func (db *DB) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := pgx.BeginFunc(ctx, db.pool, fn)
		if err == nil || !retryable(err) || attempt == maxAttempts {
			return err
		}
	}
}

// maxAttempts bounds the runs of a statement or transaction the server
// aborted for a deadlock.
const maxAttempts = 4

// retryable reports an error after which the server has rolled the whole
// statement or transaction back, so that running it again is safe:
// deadlock_detected and serialization_failure.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// retry runs a single-statement fn again after a deadlock (see inTx).
func retry(fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !retryable(err) || attempt == maxAttempts {
			return err
		}
	}
}

// notFound maps pgx.ErrNoRows to xjob.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return xjob.ErrNotFound
	}
	return err
}

// clampLimit turns a caller's limit into one the store serves.
func clampLimit(n, def, maxN int) int {
	if n <= 0 {
		return def
	}
	return min(n, maxN)
}

// args collects the arguments of a statement built from filters and
// names their placeholders.
type args []any

// add appends v and returns its placeholder.
func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// badCursor is the error for a page cursor this store did not issue.
func badCursor(c string) error {
	return &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "cursor", Message: fmt.Sprintf("%q is not a valid page cursor", c)}}}
}
