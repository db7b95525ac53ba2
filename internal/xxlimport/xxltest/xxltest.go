// Package xxltest starts a throwaway MariaDB server for tests that read a
// real xxl-job database: Debian's mariadbd on a loopback port, with its
// data directory and socket in the test's temporary directory, stopped at
// the end of the test. `make test` installs mariadb-server when missing.
package xxltest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/xjobdev/xjob/internal/testenv/tool"
)

// Server is a running mariadbd.
type Server struct {
	// Addr is host:port on 127.0.0.1.
	Addr string
	root *sql.DB
}

// Start runs mariadbd for the test. When mariadbd cannot be found the test
// fails saying how to install it; under go test -short it is skipped.
func Start(t testing.TB) *Server {
	t.Helper()
	tool.SkipIfShort(t, "MariaDB (mariadbd)")
	mariadbd, err := lookPath("mariadbd", "/usr/sbin/mariadbd")
	if err != nil {
		tool.Missing(t, err)
	}
	installDB, err := lookPath("mariadb-install-db", "/usr/bin/mariadb-install-db")
	if err != nil {
		tool.Missing(t, err)
	}
	dir, err := os.MkdirTemp("", "xxltest") // short: the socket path must fit 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	install := exec.Command(installDB, "--no-defaults", "--datadir="+data, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--user="+currentUser())
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	port := freePort(t)
	srv := exec.Command(mariadbd, "--no-defaults", "--datadir="+data, "--socket="+filepath.Join(dir, "sock"),
		"--pid-file="+filepath.Join(dir, "pid"), "--log-error="+filepath.Join(dir, "error.log"),
		"--bind-address=127.0.0.1", fmt.Sprintf("--port=%d", port), "--user="+currentUser(),
		"--skip-grant-tables", "--skip-name-resolve", "--skip-log-bin", "--innodb-buffer-pool-size=16M")
	if err := srv.Start(); err != nil {
		t.Fatalf("start mariadbd: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	t.Cleanup(func() {
		_ = srv.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = srv.Process.Kill()
			<-done
		}
	})
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	s.root, err = sql.Open("mysql", s.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.root.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := s.root.PingContext(ctx)
		cancel()
		if err == nil {
			break
		}
		select {
		case werr := <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("mariadbd exited: %v\n%s", werr, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("mariadbd not ready after 30 s: %v\n%s", err, log)
		}
		time.Sleep(100 * time.Millisecond) // waiting for an external process, not for our own code
	}
	return s
}

// DSN is the Go MySQL DSN of database db ("" for none) as root.
func (s *Server) DSN(db string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", s.Addr, db
	cfg.MultiStatements = true
	return cfg.FormatDSN()
}

// CreateDatabase creates database name and runs the DDL file schema in it.
func (s *Server) CreateDatabase(t testing.TB, name, schema string) *sql.DB {
	t.Helper()
	if _, err := s.root.Exec("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4"); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	db, err := sql.Open("mysql", s.DSN(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ddl, err := os.ReadFile(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(string(ddl)); err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	return db
}

// SchemaFile is the path of testdata/<name> in package xxlimport.
func SchemaFile(name string) string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "testdata", name)
}

func lookPath(name, fallback string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if _, err := os.Stat(fallback); err == nil {
		return fallback, nil
	}
	return "", fmt.Errorf("%s is not on PATH nor at %s: make test or make mariadb installs Debian's mariadb-server", name, fallback)
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" && !strings.ContainsAny(u, " /") {
		return u
	}
	return "root"
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
