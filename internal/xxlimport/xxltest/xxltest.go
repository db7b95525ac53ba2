// Package xxltest starts a throwaway MariaDB server for tests that read a
// real xxl-job database: a private server of package testenv/mariadb
// (Debian's mariadbd on a loopback port, its data in a temporary
// directory), stopped at the end of the test. `make test` installs
// mariadb-server when missing.
package xxltest

import (
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/xjobdev/xjob/internal/testenv/mariadb"
)

// Server is a running mariadbd.
type Server struct {
	// Addr is host:port on 127.0.0.1.
	Addr string
	srv  *mariadb.Server
}

// Start runs mariadbd for the test. When mariadbd cannot be found the test
// fails saying how to install it; under go test -short it is skipped.
func Start(t testing.TB) *Server {
	t.Helper()
	srv := mariadb.Start(t)
	return &Server{Addr: srv.Addr, srv: srv}
}

// DSN is the Go MySQL DSN of database db ("" for none) as root, with
// multiStatements on (the xxl-job schema files are scripts).
func (s *Server) DSN(db string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", s.Addr, db
	cfg.MultiStatements = true
	return cfg.FormatDSN()
}

// CreateDatabase creates database name and runs the DDL file schema in it.
func (s *Server) CreateDatabase(t testing.TB, name, schema string) *sql.DB {
	t.Helper()
	if _, err := s.srv.Root().Exec("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4"); err != nil {
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
