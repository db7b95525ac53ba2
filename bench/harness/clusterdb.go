package harness

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql" // database/sql driver "mysql": reading a MariaDB cluster's logs
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx": reading a PostgreSQL cluster's logs

	"github.com/xjobdev/xjob/internal/adapter/mysqlstore"
	"github.com/xjobdev/xjob/internal/testenv/mariadb"
	"github.com/xjobdev/xjob/internal/testenv/pgserver"
)

// Cluster databases the bench runs on.
const (
	DBPostgres = "postgres"
	DBMariaDB  = "mariadb"
)

// ClusterDB is a private database server on loopback for the cluster
// bench: PostgreSQL or MariaDB from the machine's packages (the test
// servers of internal/testenv, tuned the same way: no fsync), a scratch
// directory, stopped and removed by Close. Every scenario takes a fresh
// database of it (NewDatabase).
type ClusterDB struct {
	Kind string
	pg   *pgserver.Server
	my   *mariadb.Server
	pass string // the xjob account's password (MariaDB)
	seq  int
}

// StartClusterDB launches the server of kind (DBPostgres or DBMariaDB).
func StartClusterDB(kind string) (*ClusterDB, error) {
	d := &ClusterDB{Kind: kind}
	var err error
	switch kind {
	case DBPostgres:
		d.pg, err = pgserver.Launch()
	case DBMariaDB:
		d.my, err = mariadb.Launch()
		d.pass = randomHex(12)
	default:
		return nil, fmt.Errorf("cluster database %q: want %s or %s", kind, DBPostgres, DBMariaDB)
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", kind, err)
	}
	if d.my != nil {
		if _, err := d.my.Root().Exec("CREATE USER 'xjob'@'127.0.0.1' IDENTIFIED BY '" + d.pass + "'"); err != nil {
			d.Close()
			return nil, fmt.Errorf("mariadb: create user: %w", err)
		}
	}
	return d, nil
}

// NewDatabase creates an empty database for one scenario and returns the
// URL `xjob server --db` takes (as a non-superuser with a password).
func (d *ClusterDB) NewDatabase(ctx context.Context) (string, error) {
	d.seq++
	name := fmt.Sprintf("bench%d", d.seq)
	if d.pg != nil {
		return d.pg.CreateDatabase(ctx, name)
	}
	root := d.my.Root()
	for _, q := range []string{
		"CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
		"GRANT ALL ON `" + name + "`.* TO 'xjob'@'127.0.0.1'",
	} {
		if _, err := root.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("mariadb: %s: %w", strings.Fields(q)[0], err)
		}
	}
	u := url.URL{Scheme: "mysql", User: url.UserPassword("xjob", d.pass), Host: d.my.Addr, Path: "/" + name}
	return u.String(), nil
}

// Stop takes the server down (a fast shutdown), keeping its data: the
// database-restart scenario.
func (d *ClusterDB) Stop() error {
	if d.pg != nil {
		d.pg.StopServer()
		return nil
	}
	return d.my.StopServer()
}

// Start brings a stopped server back on the same port and data.
func (d *ClusterDB) Start() error {
	if d.pg != nil {
		return d.pg.StartServer()
	}
	return d.my.StartServer()
}

// Close stops the server and removes its files.
func (d *ClusterDB) Close() {
	if d.pg != nil {
		d.pg.Close()
	}
	if d.my != nil {
		d.my.Close()
	}
}

// CPU is the server's CPU time so far: the server process and every live
// descendant (PostgreSQL's backends), plus the time of the children it has
// reaped. A restart starts it from zero.
func (d *ClusterDB) CPU() time.Duration {
	pid := 0
	if d.pg != nil {
		pid = d.pg.PID()
	} else {
		pid = d.my.PID()
	}
	if pid == 0 {
		return 0
	}
	return treeCPU(pid)
}

// open connects database/sql to a scenario's database, for the analysis.
// It returns the connection and how the dialect numbers placeholders.
func (d *ClusterDB) open(dbURL string) (*sql.DB, error) {
	if d.pg != nil {
		return sql.Open("pgx", dbURL)
	}
	dsn, err := mysqlstore.ParseURL(dbURL)
	if err != nil {
		return nil, err
	}
	return sql.Open("mysql", dsn)
}

// q rewrites a query's ? placeholders as PostgreSQL's $n.
func (d *ClusterDB) q(query string) string {
	if d.pg == nil {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// readLogs is ReadLogs on a cluster database.
func (d *ClusterDB) readLogs(ctx context.Context, dbURL string, iv Interval) ([]LogRow, error) {
	db, err := d.open(dbURL)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, d.q(`SELECT id, job_id, scheduled_time, trigger_type, trigger_code, trigger_msg
		FROM logs WHERE scheduled_time >= ? AND scheduled_time < ?`), iv.From, iv.To)
	if err != nil {
		return nil, fmt.Errorf("read logs: %w", err)
	}
	defer rows.Close()
	var out []LogRow
	for rows.Next() {
		var l LogRow
		if err := rows.Scan(&l.ID, &l.JobID, &l.Scheduled, &l.TriggerType, &l.TriggerCode, &l.TriggerMsg); err != nil {
			return nil, fmt.Errorf("read logs: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read logs: %w", err)
	}
	return out, nil
}

// readPending is ReadPending on a cluster database: the pairs of iv still
// queued once the nodes stopped.
func (d *ClusterDB) readPending(ctx context.Context, dbURL string, iv Interval) (map[[2]int64]bool, error) {
	db, err := d.open(dbURL)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT body FROM queue_messages`)
	if err != nil {
		return nil, fmt.Errorf("read pending: %w", err)
	}
	defer rows.Close()
	out := map[[2]int64]bool{}
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, fmt.Errorf("read pending: %w", err)
		}
		for _, p := range pendingPairs(body) {
			if iv.contains(p[1]) {
				out[p] = true
			}
		}
	}
	return out, rows.Err()
}

// connections counts the sessions open on a scenario's database, this
// query's own left out: what the nodes' pools hold.
func (d *ClusterDB) connections(ctx context.Context, dbURL string) (int, error) {
	db, err := d.open(dbURL)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	q := `SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE()`
	if d.pg != nil {
		q = `SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database()`
	}
	var n int
	if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return 0, fmt.Errorf("count connections: %w", err)
	}
	return n - 1, nil
}

// logCount counts, while the nodes run, the trigger logs scheduled in a
// window: every poll counts the rows created since the counter started
// (an id range: logs ids grow, and the rows of a window are all newer).
type logCount struct {
	d     *ClusterDB
	db    *sql.DB
	win   Interval
	since int64
}

func (d *ClusterDB) newLogCount(ctx context.Context, dbURL string, win Interval) (*logCount, error) {
	db, err := d.open(dbURL)
	if err != nil {
		return nil, err
	}
	c := &logCount{d: d, db: db, win: win}
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM logs`).Scan(&c.since); err != nil {
		db.Close()
		return nil, fmt.Errorf("log counter: %w", err)
	}
	return c, nil
}

// Poll returns how many logs scheduled in the window exist so far.
func (c *logCount) Poll(ctx context.Context) (int, error) {
	var n int
	err := c.db.QueryRowContext(ctx, c.d.q(`SELECT COUNT(*) FROM logs WHERE id > ? AND scheduled_time >= ? AND scheduled_time < ?`),
		c.since, c.win.From, c.win.To).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("log counter: %w", err)
	}
	return n, nil
}

func (c *logCount) Close() error { return c.db.Close() }

// treeCPU is the CPU time of process pid, of its live descendants and of
// the children it has reaped (/proc; Linux).
func treeCPU(pid int) time.Duration {
	parent := map[int]int{}
	cpu := map[int]int64{} // ticks: own utime + stime
	var reaped int64       // pid's cutime + cstime
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := statFields(p)
		if err != nil {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		parent[p], cpu[p] = pp, ut+st
		if p == pid {
			cut, _ := strconv.ParseInt(f[13], 10, 64)
			cst, _ := strconv.ParseInt(f[14], 10, 64)
			reaped = cut + cst
		}
	}
	if _, ok := cpu[pid]; !ok {
		return 0
	}
	var ticks int64
	for p, c := range cpu {
		for q := p; q > 1; q = parent[q] {
			if q == pid {
				ticks += c
				break
			}
		}
	}
	const tick = 10 * time.Millisecond // USER_HZ = 100 on Linux
	return time.Duration(ticks+reaped) * tick
}

// statFields returns the fields of /proc/PID/stat after the command name:
// [0] state, [1] ppid, …, [11] utime, [12] stime, [13] cutime, [14] cstime.
func statFields(pid int) ([]string, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, errors.New("bad /proc stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return nil, errors.New("short /proc stat")
	}
	return f, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
