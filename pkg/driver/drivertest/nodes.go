package drivertest

import (
	"slices"
	"testing"
	"time"

	"github.com/xjobdev/xjob/pkg/driver"
)

// ExerciseNodeStore runs the contract of driver.NodeStore: beats expire,
// a beat replaces the node's record, a leave removes it at once, and the
// live set comes ordered by id.
func ExerciseNodeStore(t *testing.T, newStore func(t *testing.T) driver.NodeStore) {
	t.Helper()
	const t0 = int64(1_800_000_000_000)
	ttl := 5 * time.Second
	ids := func(ns []driver.Node) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = n.ID
		}
		return out
	}
	t.Run("BeatExpiresAndOrders", func(t *testing.T) {
		t.Parallel()
		st, ctx := newStore(t), t.Context()
		for _, id := range []string{"node-c", "node-a", "node-b"} {
			requireNoErr(t, st.NodeBeat(ctx, id, "http://"+id+":8080", t0, ttl), "beat "+id)
		}
		live, err := st.NodesLive(ctx, t0+1000)
		requireNoErr(t, err, "live")
		if got := ids(live); !slices.Equal(got, []string{"node-a", "node-b", "node-c"}) {
			t.Fatalf("live nodes %v, want node-a, node-b, node-c in id order", got)
		}
		if live[0].Addr != "http://node-a:8080" || live[0].ExpiresAt != t0+ttl.Milliseconds() {
			t.Fatalf("node-a recorded as %+v", live[0])
		}
		// node-b beats again later: it outlives the others.
		requireNoErr(t, st.NodeBeat(ctx, "node-b", "http://node-b:9090", t0+3000, ttl), "beat again")
		live, err = st.NodesLive(ctx, t0+ttl.Milliseconds())
		requireNoErr(t, err, "live after expiry")
		if got := ids(live); !slices.Equal(got, []string{"node-b"}) {
			t.Fatalf("live at expiry %v, want only node-b (an expiry at now is dead)", got)
		}
		if live[0].Addr != "http://node-b:9090" {
			t.Fatalf("a beat must replace the address: %+v", live[0])
		}
	})
	t.Run("LeaveIsImmediate", func(t *testing.T) {
		t.Parallel()
		st, ctx := newStore(t), t.Context()
		requireNoErr(t, st.NodeBeat(ctx, "a", "http://a", t0, ttl), "beat a")
		requireNoErr(t, st.NodeBeat(ctx, "b", "http://b", t0, ttl), "beat b")
		requireNoErr(t, st.NodeLeave(ctx, "a"), "leave a")
		requireNoErr(t, st.NodeLeave(ctx, "never-there"), "leave a node that is not there")
		live, err := st.NodesLive(ctx, t0)
		requireNoErr(t, err, "live")
		if got := ids(live); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("live after a left: %v, want b", got)
		}
		// A node that left may come back.
		requireNoErr(t, st.NodeBeat(ctx, "a", "http://a", t0+10, ttl), "beat a again")
		live, err = st.NodesLive(ctx, t0+10)
		requireNoErr(t, err, "live")
		if got := ids(live); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("live after a came back: %v, want a, b", got)
		}
	})
	t.Run("ConcurrentBeats", func(t *testing.T) {
		t.Parallel()
		st, ctx := newStore(t), t.Context()
		errs := race(8, func(i int) error {
			return st.NodeBeat(ctx, "same", "http://same", t0+int64(i), ttl)
		})
		for i, err := range errs {
			requireNoErr(t, err, "concurrent beat "+string(rune('0'+i)))
		}
		live, err := st.NodesLive(ctx, t0)
		requireNoErr(t, err, "live")
		if len(live) != 1 {
			t.Fatalf("eight beats of one node left %d records", len(live))
		}
	})
}
