package pgstore

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

func xjobDay(day string, suc int) xjob.ReportDay { return xjob.ReportDay{Day: day, SucCount: suc} }

func reportRange(day string) driver.ReportListParams {
	return driver.ReportListParams{From: day, To: day}
}

// Nodes are live from their beat until its TTL has passed, leave at once,
// and come back with a new start after an absence.
func TestNodes(t *testing.T) {
	t.Parallel()
	db := setup(t, Options{})
	ctx := t.Context()
	const ttl = 15 * time.Second
	t0 := epoch.UnixMilli()
	beat := func(id, addr string, at int64) {
		t.Helper()
		if err := db.NodeBeat(ctx, id, addr, at, ttl); err != nil {
			t.Fatal(err)
		}
	}
	live := func(at int64) []Node {
		t.Helper()
		ns, err := db.NodesDetail(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		return ns
	}
	beat("node-b", "10.0.0.2:8080", t0)
	beat("node-a", "10.0.0.1:8080", t0+1000)
	beat("node-b", "10.0.0.2:8081", t0+5000) // moved port
	want := []Node{
		{ID: "node-a", Addr: "10.0.0.1:8080", StartedAt: t0 + 1000, BeatAt: t0 + 1000, ExpiresAt: t0 + 16_000},
		{ID: "node-b", Addr: "10.0.0.2:8081", StartedAt: t0, BeatAt: t0 + 5000, ExpiresAt: t0 + 20_000},
	}
	for _, tc := range []struct {
		name string
		at   int64
		want []Node
	}{
		{"both live, in id order", t0 + 10_000, want},
		{"a expired", t0 + 16_000, want[1:]},
		{"both expired", t0 + 20_000, nil},
	} {
		if got := live(tc.at); !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	beat("node-a", "10.0.0.1:8080", t0+30_000) // back after an absence
	if got := live(t0 + 30_000); len(got) != 1 || got[0].StartedAt != t0+30_000 {
		t.Fatalf("a node back after expiry: %+v, want a new start", got)
	}
	if err := db.NodeLeave(ctx, "node-a"); err != nil {
		t.Fatal(err)
	}
	if err := db.NodeLeave(ctx, "node-a"); err != nil {
		t.Fatalf("leave twice: %v", err)
	}
	if got := live(t0 + 30_000); len(got) != 0 {
		t.Fatalf("after leave: %+v", got)
	}
	if err := db.NodeBeat(ctx, "", "x", t0, ttl); err == nil {
		t.Fatal("a beat without a node id was accepted")
	}
}

// The first node's digest of a secret is the cluster's; another node
// with another digest is refused, one with the same is not.
func TestClusterSecretCheck(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	first, second := openAt(t, dsn, Options{}), openAt(t, dsn, Options{})
	ctx := t.Context()
	for _, tc := range []struct {
		name     string
		db       *DB
		secret   string
		digest   string
		mismatch bool
	}{
		{"first stores", first, "access-token", "d1", false},
		{"same digest, other node", second, "access-token", "d1", false},
		{"other digest", second, "access-token", "d2", true},
		{"other secret stores its own", second, "admin-token", "d2", false},
		{"first again", first, "access-token", "d1", false},
	} {
		err := tc.db.ClusterSecretCheck(ctx, tc.secret, tc.digest)
		if tc.mismatch != errors.Is(err, ErrClusterMismatch) || (!tc.mismatch && err != nil) {
			t.Fatalf("%s: %v (want mismatch %v)", tc.name, err, tc.mismatch)
		}
	}
}
