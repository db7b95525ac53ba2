// Package pgserver starts a throwaway PostgreSQL server for tests: the
// initdb and postgres found on PATH or under /usr/lib/postgresql/*/bin,
// a data directory and the unix socket in a short temporary directory, a
// free port on 127.0.0.1, and durability switched off (fsync,
// synchronous_commit, full_page_writes) because a test database never
// outlives its run. `make postgres` (part of `make test`) installs
// Debian's postgresql package when no initdb is found.
//
// Tests connect over TCP as the role xjob, which owns every database
// NewDatabase creates and signs in with a password (scram-sha-256), as a
// deployment would; the harness itself administers the server as the
// superuser postgres over the unix socket (trust).
//
// PostgreSQL refuses to run as root. Under uid 0 the server runs as the
// system user postgres (Debian's package creates it) or, failing that,
// nobody, which then owns the temporary directory.
package pgserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/xjobdev/xjob/internal/testenv/tool"
)

// Role is the role tests connect as; it owns the databases NewDatabase
// creates and is not a superuser.
const Role = "xjob"

// readyWithin bounds how long a starting server may take to accept
// connections.
const readyWithin = 60 * time.Second

// Server is a running (or stopped, between StopServer and StartServer)
// PostgreSQL server.
type Server struct {
	// Port is the TCP port on 127.0.0.1, the same across restarts.
	Port int
	// Password is Role's password.
	Password string
	// Dir holds the data directory, the socket and the server's log.
	Dir string

	bin  string // directory of initdb and postgres
	cred *syscall.Credential
	seq  atomic.Int64

	schemaOnce sync.Once // creates schemaDB
	schemaErr  error

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan error // receives the server process's exit
}

// Start runs a PostgreSQL server until the test (or benchmark) ends. A
// missing initdb or postgres fails the test with one line naming `make
// postgres`; under go test -short it is skipped.
func Start(t testing.TB) *Server {
	t.Helper()
	tool.SkipIfShort(t, "PostgreSQL (initdb, postgres)")
	s, err := start()
	if err != nil {
		var miss *missingError
		if errors.As(err, &miss) {
			tool.Missing(t, err)
		}
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

var (
	sharedOnce sync.Once
	shared     *Server
	sharedErr  error
)

// Shared returns the one server of this test binary, starting it on first
// use; it stops when RunMain's tests have run. Tests that each need an
// empty database take one from it with NewDatabase, which is much faster
// than a server each. A missing server binary fails the test as Start
// does.
func Shared(t testing.TB) *Server {
	t.Helper()
	tool.SkipIfShort(t, "PostgreSQL (initdb, postgres)")
	sharedOnce.Do(func() { shared, sharedErr = start() })
	if sharedErr != nil {
		var miss *missingError
		if errors.As(sharedErr, &miss) {
			tool.Missing(t, sharedErr)
		}
		t.Fatal(sharedErr)
	}
	return shared
}

// RunMain runs a test binary's tests (m.Run) and then stops the shared
// server if one was started: call it from TestMain as
// os.Exit(pgserver.RunMain(m)).
func RunMain(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	return code
}

// Launch starts a private server outside a test, for a harness such as
// the cluster bench (bench/harness): the caller stops it and removes its
// directory with Close. A missing initdb or postgres is an error naming
// `make postgres`.
func Launch() (*Server, error) { return start() }

// PID is the postmaster's process id (0 while stopped): its backends are
// its children, so a harness can measure the server's CPU.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// CreateDatabase creates an empty database name owned by Role, outside a
// test (Launch's callers; tests take NewDatabase), and returns its DSN.
// name must be a plain identifier.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return "", fmt.Errorf("pgserver: database name %q: want [a-z0-9_]", name)
		}
	}
	if err := s.admin(ctx, `CREATE DATABASE `+name+` OWNER `+Role+` TEMPLATE template0`); err != nil {
		return "", err
	}
	return s.DSN(name), nil
}

// missingError is a server binary that is not installed.
type missingError struct{ what string }

func (e *missingError) Error() string {
	return e.what + " not found on PATH nor under /usr/lib/postgresql/*/bin: make postgres (or make test) installs Debian's postgresql"
}

// debianBins is where Debian's postgresql packages put their binaries,
// one directory per major version.
var debianBins = "/usr/lib/postgresql/*/bin"

// findBin returns the directory holding both initdb and postgres: the
// one on PATH, else the newest /usr/lib/postgresql/<version>/bin.
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(debianBins)
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		_, e1 := os.Stat(filepath.Join(d, "initdb"))
		_, e2 := os.Stat(filepath.Join(d, "postgres"))
		if e1 == nil && e2 == nil {
			return d, nil
		}
	}
	return "", &missingError{"initdb and postgres"}
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// start initialises a data directory and starts the server on it.
func start() (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pg") // short: the socket path must fit 107 bytes
	if err != nil {
		return nil, fmt.Errorf("pgserver: %w", err)
	}
	s := &Server{Dir: dir, bin: bin, Password: randomHex(12)}
	fail := func(err error) (*Server, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if os.Geteuid() == 0 {
		if s.cred, err = serverUser(); err != nil {
			return fail(err)
		}
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fail(fmt.Errorf("pgserver: %w", err))
		}
	}
	pwfile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwfile, []byte(randomHex(12)+"\n"), 0o600); err != nil {
		return fail(fmt.Errorf("pgserver: %w", err))
	}
	if s.cred != nil {
		if err := os.Chown(pwfile, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fail(fmt.Errorf("pgserver: %w", err))
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", s.dataDir(), "-U", "postgres", "--pwfile="+pwfile,
		"--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = s.procAttr()
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("pgserver: initdb: %v\n%s", err, out))
	}
	_ = os.Remove(pwfile)
	if s.Port, err = freePort(); err != nil {
		return fail(err)
	}
	if err := s.StartServer(); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.admin(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, Role, s.Password)); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// serverUser is whom the server runs as under root: postgres, else nobody.
func serverUser() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
		}
	}
	return nil, errors.New("pgserver: running as root and neither user postgres nor nobody exists to run the server as")
}

func (s *Server) dataDir() string { return filepath.Join(s.Dir, "data") }

// LogFile is the server's log (its stderr), appended to across restarts.
func (s *Server) LogFile() string { return filepath.Join(s.Dir, "server.log") }

// StartServer starts the server process on the same port and data
// directory and waits until it accepts connections. Start calls it; a
// fault test calls it again after StopServer.
func (s *Server) StartServer() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("pgserver: already running")
	}
	logf, err := os.OpenFile(s.LogFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgserver: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.dataDir(), "-p", strconv.Itoa(s.Port), "-k", s.Dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=400", "-c", "shared_buffers=64MB",
		"-c", "max_locks_per_transaction=256", "-c", "log_min_messages=warning", "-c", "log_min_error_statement=panic")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = s.procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgserver: start postgres: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(readyWithin)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := pgx.Connect(ctx, s.AdminDSN())
		if err == nil {
			_ = c.Close(ctx)
			cancel()
			return nil
		}
		cancel()
		select {
		case werr := <-done:
			s.cmd, s.done = nil, nil
			return fmt.Errorf("pgserver: postgres exited: %v\n%s", werr, tail(s.LogFile()))
		default:
		}
		if time.Now().After(deadline) {
			s.stopLocked()
			return fmt.Errorf("pgserver: postgres not ready after %v: %v\n%s", readyWithin, err, tail(s.LogFile()))
		}
		time.Sleep(20 * time.Millisecond) // waiting for another process, not for our own code
	}
}

// StopServer stops the server process (a fast shutdown: SIGINT, then
// SIGKILL after 20 s) and keeps its data directory, so that StartServer
// brings the same databases back on the same port. Connections open
// meanwhile fail, as against a database that went down.
func (s *Server) StopServer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

func (s *Server) stopLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd, s.done = nil, nil
}

// Close stops the server and removes its directory.
func (s *Server) Close() {
	s.StopServer()
	_ = os.RemoveAll(s.Dir)
}

// AdminDSN reaches the server as the superuser over the unix socket
// (trust): for a test that must act on the server itself, such as ending
// other sessions with pg_terminate_backend.
func (s *Server) AdminDSN() string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres sslmode=disable", s.Dir, s.Port)
}

// admin runs statements as the superuser.
func (s *Server) admin(ctx context.Context, stmts ...string) error {
	c, err := pgx.Connect(ctx, s.AdminDSN())
	if err != nil {
		return fmt.Errorf("pgserver: connect as postgres: %w", err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q); err != nil {
			return fmt.Errorf("pgserver: %s: %w", strings.Fields(q)[0], err)
		}
	}
	return nil
}

// DSN is the URL of database name as Role with its password, over TCP.
func (s *Server) DSN(name string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(Role, s.Password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), Path: "/" + name, RawQuery: "sslmode=disable"}
	return u.String()
}

// NewDatabase creates an empty database owned by Role, dropped when the
// test ends, and returns its DSN (see DSN). Whoever connects must have
// disconnected by then: register the close of a pool after this call, so
// that it runs first.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%s", s.seq.Add(1), randomHex(3))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.admin(ctx, `CREATE DATABASE `+name+` OWNER `+Role+` TEMPLATE template0`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.mu.Lock()
		running := s.cmd != nil
		s.mu.Unlock()
		if !running {
			return // stopped by the test; the directory goes with the server
		}
		if err := s.admin(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	return s.DSN(name)
}

// schemaDB is the database that holds the schemas NewSchema creates.
const schemaDB = "xjob_schemas"

// NewSchema creates an empty schema owned by Role in a database the
// server's tests share, dropped (with what it holds) when the test ends,
// and returns a DSN whose search_path is that schema: to a store that
// names its tables unqualified it is an empty database of its own, and
// one costs a few milliseconds where a database costs a copy of the
// template. Database-wide objects (advisory locks, extensions) are
// shared; a test of those takes NewDatabase.
func (s *Server) NewSchema(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.schemaOnce.Do(func() {
		s.schemaErr = s.admin(ctx, `CREATE DATABASE `+schemaDB+` OWNER `+Role+` TEMPLATE template0`)
	})
	if s.schemaErr != nil {
		t.Fatal(s.schemaErr)
	}
	name := fmt.Sprintf("s%d_%s", s.seq.Add(1), randomHex(3))
	c, err := pgx.Connect(ctx, s.DSN(schemaDB))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	if _, err := c.Exec(ctx, `CREATE SCHEMA `+name); err != nil {
		t.Fatalf("create test schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.mu.Lock()
		running := s.cmd != nil
		s.mu.Unlock()
		if !running {
			return
		}
		c, err := pgx.Connect(ctx, s.DSN(schemaDB))
		if err != nil {
			t.Errorf("drop test schema: %v", err)
			return
		}
		defer c.Close(context.WithoutCancel(ctx))
		if _, err := c.Exec(ctx, `DROP SCHEMA `+name+` CASCADE`); err != nil {
			t.Errorf("drop test schema: %v", err)
		}
	})
	return s.DSN(schemaDB) + "&search_path=" + name
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgserver: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}

// tail is the end of the server's log, for a failure message.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
