// Package mariadb starts throwaway MariaDB servers for tests: Debian's
// mariadbd on a free loopback port, its data directory and socket in a
// short temporary directory, tuned for speed over durability
// (innodb_flush_log_at_trx_commit=2, no binary log, one shared tablespace,
// a small buffer pool).
//
// A test either starts a private server (Start, stopped when the test
// ends; StopServer and StartServer take it down and bring it back on the
// same port and data for fault tests) or shares the one server of its test
// binary (Shared, started on first use and stopped by Main after m.Run).
// Either way NewDatabase gives each caller a fresh, empty database of its
// own, so parallel tests never see each other's rows.
//
// The server keeps its grant tables: root connects over TCP without a
// password, and CreateUser adds accounts with one, so tests can check what
// a wrong password does. When mariadbd is not installed the test fails with
// one line naming `make mariadb`; go test -short skips it.
package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/xjobdev/xjob/internal/testenv/tool"
)

// readyTimeout bounds how long mariadbd may take to accept connections.
const readyTimeout = 30 * time.Second

// Server is a running (or stopped, see StopServer) mariadbd.
type Server struct {
	// Addr is host:port on 127.0.0.1; it stays the same across StopServer
	// and StartServer.
	Addr string

	bin, dir string
	port     int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	err  error         // cmd's exit status, once done is closed
	root *sql.DB

	seq atomic.Int64
}

// Start runs a private mariadbd for t, stopped and deleted when t ends.
// When mariadbd cannot be found the test fails saying how to install it;
// under go test -short it is skipped.
func Start(t testing.TB) *Server {
	t.Helper()
	tool.SkipIfShort(t, "MariaDB (mariadbd)")
	s, err := start()
	if err != nil {
		if errors.Is(err, errMissing) {
			tool.Missing(t, err)
		}
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

// shared is the server of this test binary.
var shared struct {
	once    sync.Once
	srv     *Server
	err     error
	stopped atomic.Bool
}

// Shared returns the one server of this test binary, starting it on first
// use. Call Main from TestMain so that it stops when the tests end.
func Shared(t testing.TB) *Server {
	t.Helper()
	tool.SkipIfShort(t, "MariaDB (mariadbd)")
	shared.once.Do(func() { shared.srv, shared.err = start() })
	if shared.err != nil {
		if errors.Is(shared.err, errMissing) {
			tool.Missing(t, shared.err)
		}
		t.Fatal(shared.err)
	}
	return shared.srv
}

// Main runs the tests of a package that uses Shared and stops the shared
// server afterwards: call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}

// StopShared stops the shared server if it was started; it is safe to
// call more than once.
func StopShared() {
	if shared.srv != nil && shared.stopped.CompareAndSwap(false, true) {
		shared.srv.close()
	}
}

// Launch starts a private server outside a test, for a harness such as
// the cluster bench (bench/harness): the caller stops it and deletes its
// files with Close. A missing mariadbd is an error naming `make mariadb`.
func Launch() (*Server, error) { return start() }

// Close stops the server and deletes its files (a Launch caller's
// cleanup; Start registers it with the test).
func (s *Server) Close() { s.close() }

// PID is mariadbd's process id (0 while stopped), so a harness can
// measure the server's CPU.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// errMissing marks "mariadbd is not installed", as opposed to broken.
var errMissing = errors.New("not installed")

func start() (*Server, error) {
	bin, err := lookPath("mariadbd", "/usr/sbin/mariadbd")
	if err != nil {
		return nil, err
	}
	installDB, err := lookPath("mariadb-install-db", "/usr/bin/mariadb-install-db")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(scratchRoot(), "mdb") // short: the socket path must fit 107 bytes
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	// A temporary directory of its own: the bootstrap and the server put
	// their temporary tables under TMPDIR, and several test binaries
	// starting servers at once on the shared /tmp have failed the
	// bootstrap ("Error on delete of '/tmp/#sql-temptable-…'").
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	install := exec.Command(installDB, "--no-defaults", "--datadir="+filepath.Join(dir, "data"),
		"--auth-root-authentication-method=normal", "--skip-test-db", "--user="+currentUser())
	install.Env = append(os.Environ(), "TMPDIR="+tmp)
	if out, err := install.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("mariadb-install-db: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), bin: bin, dir: dir, port: port}
	if err := s.StartServer(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// StartServer starts mariadbd on the server's port and data directory and
// waits until it accepts connections. It is how a fault test brings the
// database back after StopServer.
func (s *Server) StartServer() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("mariadb: server already running")
	}
	cmd := exec.Command(s.bin, "--no-defaults", "--datadir="+filepath.Join(s.dir, "data"),
		"--socket="+filepath.Join(s.dir, "sock"), "--pid-file="+filepath.Join(s.dir, "pid"),
		"--log-error="+filepath.Join(s.dir, "error.log"), "--tmpdir="+filepath.Join(s.dir, "tmp"),
		"--bind-address=127.0.0.1", fmt.Sprintf("--port=%d", s.port), "--user="+currentUser(),
		"--skip-name-resolve", "--skip-log-bin", "--innodb-buffer-pool-size=64M",
		"--innodb-flush-log-at-trx-commit=2", "--innodb-file-per-table=0", "--innodb-doublewrite=0", "--innodb-flush-method=fsync",
		"--max-connections=1000", "--max-prepared-stmt-count=100000")
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("mariadb: start mariadbd: %w", err)
	}
	done := make(chan struct{})
	s.cmd, s.done = cmd, done
	go func() { s.err = cmd.Wait(); close(done) }()

	if s.root == nil {
		root, err := sql.Open("mysql", s.DSN(""))
		if err != nil {
			return fmt.Errorf("mariadb: %w", err)
		}
		s.root = root
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := s.root.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("mariadb: mariadbd exited: %v\n%s", s.err, s.errorLog())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mariadb: mariadbd not ready after %v: %v\n%s", readyTimeout, err, s.errorLog())
		}
		time.Sleep(50 * time.Millisecond) // waiting for an outside process, not for our own code
	}
}

// StopServer shuts mariadbd down cleanly (SIGTERM) and waits for it to
// exit; the data stays, for StartServer. Connections open meanwhile fail.
func (s *Server) StopServer() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM) // mariadbd ignores SIGINT
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
	if s.root != nil {
		// Drop pooled connections to the old process.
		s.root.SetMaxIdleConns(0)
		s.root.SetMaxIdleConns(2)
	}
	return nil
}

// close stops the server and deletes its files.
func (s *Server) close() {
	_ = s.StopServer()
	if s.root != nil {
		_ = s.root.Close()
	}
	_ = os.RemoveAll(s.dir)
}

func (s *Server) errorLog() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "error.log"))
	return string(b)
}

// DSN is the go-sql-driver DSN of database db ("" for none) as root, who
// has no password.
func (s *Server) DSN(db string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", s.Addr, db
	return cfg.FormatDSN()
}

// Root is a connection pool to the server as root, for setting up what
// the code under test then reads.
func (s *Server) Root() *sql.DB { return s.root }

// NewDatabase creates a fresh, empty database (utf8mb4) for t, dropped when
// t ends, and returns its DSN as root.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := s.CreateDatabase(t)
	return s.DSN(name)
}

// CreateDatabase creates a fresh, empty database for t, dropped when t
// ends, and returns its name.
func (s *Server) CreateDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.seq.Add(1))
	if _, err := s.root.ExecContext(context.Background(), "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("mariadb: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = s.root.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
	})
	return name
}

// CreateUser adds user with password, allowed everything on database db
// from 127.0.0.1, and returns its DSN.
func (s *Server) CreateUser(t testing.TB, user, password, db string) string {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		"CREATE USER '" + user + "'@'127.0.0.1' IDENTIFIED BY '" + strings.ReplaceAll(password, "'", "''") + "'",
		"GRANT ALL ON `" + db + "`.* TO '" + user + "'@'127.0.0.1'",
	} {
		if _, err := s.root.ExecContext(ctx, q); err != nil {
			t.Fatalf("mariadb: create user %s: %v", user, err)
		}
	}
	t.Cleanup(func() { _, _ = s.root.ExecContext(context.Background(), "DROP USER IF EXISTS '"+user+"'@'127.0.0.1'") })
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = user, password, "tcp", s.Addr, db
	return cfg.FormatDSN()
}

// scratchRoot is where the server's files go: /dev/shm when it is there
// (a memory file system: DDL and commits cost no disk syncs, which makes a
// fresh database per test cheap), else the temporary directory.
func scratchRoot() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", "mdbprobe"); err == nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
			return "/dev/shm"
		}
	}
	return os.TempDir()
}

func lookPath(name, fallback string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if _, err := os.Stat(fallback); err == nil {
		return fallback, nil
	}
	return "", fmt.Errorf("%s is %w: neither on PATH nor at %s; make mariadb installs Debian's mariadb-server", name, errMissing, fallback)
}

// currentUser is the account mariadbd runs as: as root it must be told
// so (--user=root), as anyone else it runs as them.
func currentUser() string {
	if u := os.Getenv("USER"); u != "" && !strings.ContainsAny(u, " /") {
		return u
	}
	return "root"
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("mariadb: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
