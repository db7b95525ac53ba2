package pgserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(RunMain(m)) }

// setup connects to a fresh database of the shared server.
func setup(t *testing.T) (*Server, string) {
	t.Helper()
	s := Shared(t)
	return s, s.NewDatabase(t)
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// Databases are empty, apart and owned by the test role, which is no
// superuser and signs in with its password.
func TestNewDatabase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name string }{{"first"}, {"second"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, dsn := setup(t)
			c := connect(t, dsn)
			ctx := t.Context()
			if _, err := c.Exec(ctx, `CREATE TABLE mark (v text)`); err != nil {
				t.Fatal(err)
			}
			var user string
			var super bool
			if err := c.QueryRow(ctx, `SELECT current_user, usesuper FROM pg_user WHERE usename = current_user`).Scan(&user, &super); err != nil {
				t.Fatal(err)
			}
			if user != Role || super {
				t.Fatalf("connected as %s (superuser %v), want %s without superuser", user, super, Role)
			}
			var tables int
			if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables != 1 {
				t.Fatalf("%d tables in a fresh database, want only this test's (%v)", tables, err)
			}
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		s, dsn := setup(t)
		_, err := pgx.Connect(t.Context(), strings.Replace(dsn, s.Password, "wrong", 1))
		if err == nil {
			t.Fatal("connected with a wrong password")
		}
	})
}

// A server stopped and started again serves the same data on the same port.
func TestStopStart(t *testing.T) {
	t.Parallel()
	s := Start(t)
	dsn := s.NewDatabase(t)
	ctx := t.Context()
	c := connect(t, dsn)
	if _, err := c.Exec(ctx, `CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	s.StopServer()
	if _, err := pgx.Connect(ctx, dsn); err == nil {
		t.Fatal("connected to a stopped server")
	}
	if err := s.StartServer(); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := connect(t, dsn).QueryRow(ctx, `SELECT v FROM kept`).Scan(&v); err != nil || v != 7 {
		t.Fatalf("after restart: %d, %v", v, err)
	}
}

// Without the binaries the failure names the make target that installs
// them. (Not parallel: it changes PATH.)
func TestMissingBinariesNameTheMakeTarget(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	saved := debianBins
	debianBins = filepath.Join(t.TempDir(), "*", "bin")
	defer func() { debianBins = saved }()
	_, err := findBin()
	if err == nil || !strings.Contains(err.Error(), "make postgres") {
		t.Fatalf("findBin without postgres: %v, want an error naming make postgres", err)
	}
}
