package local

import (
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/mariadb"
	"github.com/xjobdev/xjob/internal/testenv/pgserver"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// A node the others see leave while it is calling an executor — its
// beats missed for a lease TTL while it was only slow — must not have
// that call repeated by another node. Here the executor holds the
// first /run it gets, and meanwhile the test does what the other nodes
// do when they see a node leave: it releases every node's queue
// messages and log claims (ReleaseNodeClaims). The ring bucket of that
// second, not acknowledged until its hand-off ends, comes back and is
// fired again; the log being called must be found held, not taken over,
// and reach the executor once. Before dispatch.Config.Fence, the claim
// of the log in flight was released with the rest, and the bucket's
// second delivery called it again: the duplicate TestClusterOnPostgres
// saw once in CI.
func TestClusterCallInFlightOutlivesRelease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		newDB func(t *testing.T) string
	}{
		{"postgres", func(t *testing.T) string { return pgserver.Start(t).NewDatabase(t) }},
		{"mariadb", func(t *testing.T) string {
			srv := mariadb.Start(t)
			name := srv.CreateDatabase(t)
			srv.CreateUser(t, "xjob", "xjob-password-0123", name)
			return "mysql://xjob:xjob-password-0123@" + srv.Addr + "/" + name
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			callInFlightOutlivesRelease(t, tc.newDB(t))
		})
	}
}

func callInFlightOutlivesRelease(t *testing.T, dbURL string) {
	nodes := []*clusterNode{startNode(t, dbURL, "node-a", nil), startNode(t, dbURL, "node-b", nil)}
	u, _ := url.Parse(dbURL)
	observer, err := clusterStores[u.Scheme](t.Context(), openParams{URL: dbURL, Shards: 8, Node: "observer",
		Clock: clock.Real{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { observer.Close() })
	release := observer.(nodeClaims)

	rec := newRecorder(t)
	held := make(chan int64, 1)
	resume := make(chan struct{})
	var once sync.Once
	hold := func(p protocol.TriggerParam) {
		first := false
		once.Do(func() { first = true })
		if first {
			held <- p.LogID
			<-resume
		}
	}
	rec.onRun.Store(&hold)
	rec.start(t, nodes[0].info.URL, clusterAccessToken, "xjob-fence")
	var g xjob.Group
	if code := api(t, nodes[0].info.URL, clusterAdminToken, "POST", "/v1/groups",
		map[string]any{"appname": "xjob-fence", "title": "fence", "addressType": 0}, &g); code != 201 {
		t.Fatalf("create group: %d", code)
	}
	var j xjob.Job
	if code := api(t, nodes[1].info.URL, clusterAdminToken, "POST", "/v1/jobs", map[string]any{
		"jobGroup": g.ID, "jobDesc": "every second", "author": "test", "scheduleType": "FIX_RATE",
		"scheduleConf": "1", "executorHandler": "rec", "triggerStatus": 1,
	}, &j); code != 201 {
		t.Fatalf("create job: %d", code)
	}
	var logID int64
	select {
	case logID = <-held:
	case <-time.After(30 * time.Second):
		close(resume)
		t.Fatal("no /run within 30 s")
	}
	// The call is in flight. The others see both nodes leave: what each
	// held comes back now, and the bucket of the held call's second is
	// received and fired again while the call goes on.
	for _, n := range nodes {
		if _, err := release.ReleaseNodeClaims(t.Context(), n.id); err != nil {
			close(resume)
			t.Fatal(err)
		}
	}
	// Long enough for the released bucket to be received and fired again
	// (the ring polls every 100 ms, a held occurrence is retried every
	// second).
	time.Sleep(3 * time.Second)
	close(resume)
	eventually(t, 20*time.Second, "the held log triggered", func() bool {
		var l xjob.Log
		api(t, nodes[0].info.URL, clusterAdminToken, "GET", fmt.Sprintf("/v1/logs/%d", logID), nil, &l)
		return l.TriggerCode != 0
	})
	time.Sleep(2 * time.Second) // what would run it again has come back by now
	byLog := map[int64]int{}
	for _, r := range rec.receipts() {
		byLog[r.LogID]++
	}
	if byLog[logID] != 1 {
		t.Errorf("the log in flight during the release reached the executor %d times, want 1", byLog[logID])
	}
	for id, n := range byLog {
		if n > 1 && id != logID {
			t.Errorf("log %d reached the executor %d times", id, n)
		}
	}
}
