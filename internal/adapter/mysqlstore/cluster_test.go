package mysqlstore

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/xjobdev/xjob/internal/testenv/mariadb"
)

// The first Open records the shard count; later Opens must match it or
// pass 0, which takes it.
func TestShardCountIsTheCluster(t *testing.T) {
	t.Parallel()
	dsn := mariadb.Shared(t).NewDatabase(t)
	first := openAt(t, dsn, Options{Shards: 8})
	if first.Shards() != 8 {
		t.Fatalf("shards %d, want 8", first.Shards())
	}
	if again := openAt(t, dsn, Options{Shards: 8}); again.Shards() != 8 {
		t.Fatalf("same count: %d", again.Shards())
	}
	if adopt := openAt(t, dsn, Options{}); adopt.Shards() != 8 {
		t.Fatalf("Shards 0 took %d, want the recorded 8", adopt.Shards())
	}
	_, err := Open(t.Context(), dsn, Options{Shards: 16})
	if !errors.Is(err, ErrClusterMismatch) || !strings.Contains(err.Error(), "set up with 8 scan shards") ||
		!strings.Contains(err.Error(), "started with 16") {
		t.Fatalf("open with another count: %v", err)
	}
	if fresh := setup(t, Options{}); fresh.Shards() != DefaultShards {
		t.Fatalf("new database with Shards 0: %d, want %d", fresh.Shards(), DefaultShards)
	}
}

func TestClusterSecretCheck(t *testing.T) {
	t.Parallel()
	dsn := mariadb.Shared(t).NewDatabase(t)
	a, b := openAt(t, dsn, Options{}), openAt(t, dsn, Options{})
	ctx := t.Context()
	steps := []struct {
		db           *DB
		name, digest string
		mismatch     bool
	}{
		{a, "access-token", "d1", false}, // first: stored
		{b, "access-token", "d1", false}, // same: fine, from any node
		{b, "access-token", "d2", true},  // another: refused
		{a, "console-key", "d2", false},  // names are apart
		{a, "access-token", "d1", false}, // the stored one still passes
	}
	for i, s := range steps {
		err := s.db.ClusterSecretCheck(ctx, s.name, s.digest)
		if s.mismatch != errors.Is(err, ErrClusterMismatch) || (!s.mismatch && err != nil) {
			t.Fatalf("step %d (%s=%s): %v", i, s.name, s.digest, err)
		}
		if s.mismatch && strings.Contains(err.Error(), s.digest) {
			t.Fatalf("the mismatch error quotes the digest: %v", err)
		}
	}
}

func TestNodes(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	ctx := t.Context()
	const now = 1_800_000_000_000
	ttl := 10 * time.Second
	for _, n := range []struct{ id, addr string }{{"node-b", "10.0.0.2:8080"}, {"node-a", "10.0.0.1:8080"}, {"node-c", "10.0.0.3:8080"}} {
		if err := db.NodeBeat(ctx, n.id, n.addr, now, ttl); err != nil {
			t.Fatal(err)
		}
	}
	// node-a beats later (new address); a delayed older beat of node-c
	// does not shorten its expiry.
	if err := db.NodeBeat(ctx, "node-a", "10.0.0.9:8080", now+5000, ttl); err != nil {
		t.Fatal(err)
	}
	if err := db.NodeBeat(ctx, "node-c", "10.0.0.3:8080", now-5000, ttl); err != nil {
		t.Fatal(err)
	}
	if err := db.NodeLeave(ctx, "node-b"); err != nil {
		t.Fatal(err)
	}
	if err := db.NodeLeave(ctx, "node-b"); err != nil {
		t.Fatalf("leave twice: %v", err)
	}
	for _, c := range []struct {
		at   int64
		want []Node
	}{
		{now + 1000, []Node{{ID: "node-a", Addr: "10.0.0.9:8080", ExpiresAt: now + 15000}, {ID: "node-c", Addr: "10.0.0.3:8080", ExpiresAt: now + 10000}}},
		{now + 10000, []Node{{ID: "node-a", Addr: "10.0.0.9:8080", ExpiresAt: now + 15000}}}, // expiry is exclusive
		{now + 15000, nil},
	} {
		got, err := db.NodesLive(ctx, c.at)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Fatalf("live at +%d: %+v, want %+v", c.at-now, got, c.want)
		}
	}
}

// No error may carry the password: a wrong one gives the server's
// "access denied", naming the user only.
func TestWrongPasswordErrorHidesIt(t *testing.T) {
	t.Parallel()
	srv := mariadb.Shared(t)
	name := srv.CreateDatabase(t)
	const password = "s3cret-Pa55word-xyz"
	dsn := srv.CreateUser(t, "u_"+name, password, name)
	if db := openAt(t, dsn, Options{}); db.Shards() != DefaultShards {
		t.Fatal("open with the right password")
	}
	wrong := strings.Replace(dsn, password, "not-"+password, 1)
	_, err := Open(t.Context(), wrong, Options{})
	if err == nil {
		t.Fatal("open with a wrong password succeeded")
	}
	if strings.Contains(err.Error(), password) {
		t.Fatalf("error carries the password: %v", err)
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "Access denied") {
		t.Fatalf("error %q does not say access was denied", err)
	}
	// A DSN the driver cannot parse.
	_, err = Open(t.Context(), "u:"+password+"@tcp(127.0.0.1:1/db", Options{})
	if err == nil || strings.Contains(err.Error(), password) {
		t.Fatalf("malformed DSN: %v", err)
	}
}

// An unreachable server is one clear error within the connect timeout.
func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"refused", func(t *testing.T) string {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			_ = l.Close()
			return addr
		}},
		{"silent", func(t *testing.T) string { // accepts, never answers
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					t.Cleanup(func() { _ = c.Close() })
				}
			}()
			return l.Addr().String()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := mysql.NewConfig()
			cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = "xjob", "hunter2-secret", "tcp", c.addr(t), "xjob"
			start := time.Now()
			_, err := Open(context.Background(), cfg.FormatDSN(), Options{ConnectTimeout: 300 * time.Millisecond})
			t.Log(time.Since(start), err)
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("open took %v with a 300 ms connect timeout", took)
			}
			if err == nil || !strings.Contains(err.Error(), "cannot connect to "+cfg.Addr) || strings.Contains(err.Error(), cfg.Passwd) {
				t.Fatalf("open of an unreachable server: %v", err)
			}
		})
	}
}
