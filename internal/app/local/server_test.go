package local

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/testenv/mariadb"
	"github.com/xjobdev/xjob/internal/testenv/pgserver"
)

const (
	clusterAdminToken  = "cluster-admin-token-0123456789"
	clusterAccessToken = "cluster-access-token-0123456789"
)

// clusterNode is one running RunServer.
type clusterNode struct {
	id   string
	info Info
	stop func() error
}

// startNode runs one cluster node on dbURL and waits until it serves.
func startNode(t *testing.T, dbURL, id string, mutate func(*Config)) *clusterNode {
	t.Helper()
	cfg := ServerDefaults()
	cfg.DB, cfg.NodeID, cfg.Listen = dbURL, id, "127.0.0.1:0"
	cfg.AdminToken, cfg.AccessToken = clusterAdminToken, clusterAccessToken
	cfg.Shards, cfg.LeaseTTL, cfg.Grace = 8, 3*time.Second, 5*time.Second
	cfg.AllowCIDRs = "127.0.0.0/8"
	cfg.Logger = slog.New(slog.DiscardHandler)
	if testing.Verbose() && os.Getenv("XJOB_TEST_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("node", id)
	}
	if mutate != nil {
		mutate(&cfg)
	}
	ready := make(chan Info, 1)
	cfg.Ready = func(i Info) { ready <- i }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunServer(ctx, cfg) }()
	n := &clusterNode{id: id}
	select {
	case n.info = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("node %s: %v", id, err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("node %s did not become ready", id)
	}
	stopped := false
	var result error
	n.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case result = <-done:
			case <-time.After(cfg.Grace + 15*time.Second):
				t.Errorf("node %s did not stop", id)
			}
		}
		return result
	}
	t.Cleanup(func() { _ = n.stop() })
	return n
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// exerciseCluster runs three nodes on one database end to end: they share
// the shards, any node serves the API and the executors, a node that
// stops hands its shards over, and every fire of every job is triggered
// exactly once throughout.
func exerciseCluster(t *testing.T, newDB func(t *testing.T) string) {
	dbURL := newDB(t)
	nodes := []*clusterNode{startNode(t, dbURL, "node-a", nil), startNode(t, dbURL, "node-b", nil), startNode(t, dbURL, "node-c", nil)}
	for _, n := range nodes {
		if code, body := get(t, n.info.URL+"/readyz", ""); code != http.StatusOK {
			t.Fatalf("%s /readyz: %d %s", n.id, code, body)
		}
	}
	// A console session made on node-a works on node-c.
	if nodes[0].info.AdminPassword == "" {
		t.Fatal("the first node did not create the console's admin user")
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.PostForm(nodes[0].info.URL+"/console/login",
		url.Values{"username": {"admin"}, "password": {nodes[0].info.AdminPassword}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) == 0 {
		t.Fatalf("console sign-in on node-a: %d, %d cookies", resp.StatusCode, len(cookies))
	}
	req, _ := http.NewRequest(http.MethodGet, nodes[2].info.URL+"/console/jobs", nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	if resp, err = noFollow.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("node-a's console session on node-c: %d, want 200", resp.StatusCode)
	}

	// The executor registers through node-b only; jobs are created on
	// node-a; every node must see both.
	rec := newRecorder(t)
	rec.start(t, nodes[1].info.URL, clusterAccessToken, "xjob-cluster")
	var g xjob.Group
	if code := api(t, nodes[0].info.URL, clusterAdminToken, "POST", "/v1/groups",
		map[string]any{"appname": "xjob-cluster", "title": "cluster", "addressType": 0}, &g); code != http.StatusCreated {
		t.Fatalf("create group: %d", code)
	}
	const jobs = 12
	var ids []int64
	for i := range jobs {
		var j xjob.Job
		if code := api(t, nodes[i%3].info.URL, clusterAdminToken, "POST", "/v1/jobs", map[string]any{
			"jobGroup": g.ID, "jobDesc": fmt.Sprintf("every second %d", i), "author": "test", "scheduleType": "FIX_RATE",
			"scheduleConf": "1", "executorHandler": "rec", "triggerStatus": 1,
		}, &j); code != http.StatusCreated {
			t.Fatalf("create job: %d", code)
		}
		ids = append(ids, j.ID)
	}
	eventually(t, 30*time.Second, "every job fired on every node's watch", func() bool {
		seen := map[int64]bool{}
		for _, r := range rec.receipts() {
			seen[r.JobID] = true
		}
		return len(seen) == jobs
	})
	// Each node reports its view on /metrics: three live nodes, and the
	// shards they hold add up to all of them, each held once.
	// Beats every second, a 5 s lease TTL: a node started under load
	// (the race detector, other test binaries on two cores) may take a
	// few TTLs to see the others and settle its share.
	eventually(t, 45*time.Second, "every shard held once across the nodes", func() bool {
		held := 0
		for _, n := range nodes {
			_, body := get(t, n.info.URL+"/metrics", clusterAdminToken)
			if !strings.Contains(body, "\nxjob_cluster_nodes 3\n") {
				return false
			}
			var h int
			if i := strings.Index(body, "\nxjob_cluster_shards_held "); i >= 0 {
				fmt.Sscanf(body[i+len("\nxjob_cluster_shards_held "):], "%d", &h)
			}
			held += h
		}
		return held == 8
	})
	// node-c stops (SIGTERM): it leaves, the others take its shards, and
	// the fires go on.
	misfiredOnC := misfired(t, nodes[2])
	if err := nodes[2].stop(); err != nil {
		t.Fatalf("node-c stop: %v", err)
	}
	before := len(rec.receipts())
	eventually(t, 20*time.Second, "fires after node-c left", func() bool { return len(rec.receipts()) >= before+3*jobs })
	time.Sleep(2 * time.Second)

	// Every fire time of every job, from its first to its last recorded,
	// was triggered once: no gap (lost) and no repeat (duplicate).
	byLog := map[int64]int{}
	for _, r := range rec.receipts() {
		byLog[r.LogID]++
	}
	for id, n := range byLog {
		if n > 1 {
			t.Errorf("log %d reached the executor %d times", id, n)
		}
	}
	// A fire time other than one second after the previous is a fire the
	// cluster missed, which is allowed only as a counted misfire or
	// collapse: a machine too loaded to scan for longer than the misfire
	// threshold (5 s; seen under the race detector with other test
	// binaries on two cores) must count it, and the job's DO_NOTHING
	// strategy then plans it from the next tick on; a scan found late
	// within the threshold fires the late time and folds the times before
	// its tick into it, as xxl-job does, and counts them
	// (xjob_collapsed_fires_total). A fire time logged twice is never
	// allowed.
	irregular := 0
	for _, id := range ids {
		var page logPage
		api(t, nodes[0].info.URL, clusterAdminToken, "GET", fmt.Sprintf("/v1/logs?job=%d&limit=1000", id), nil, &page)
		var times []int64
		for _, l := range page.Items {
			times = append(times, l.ScheduledTime)
		}
		slices.Sort(times)
		if len(times) < 5 {
			t.Fatalf("job %d fired %d times", id, len(times))
		}
		for i := 1; i < len(times); i++ {
			switch d := times[i] - times[i-1]; {
			case d == 0:
				t.Errorf("job %d: fire time %d logged twice", id, times[i])
			case d != 1000:
				irregular++
				t.Logf("job %d: %d ms between fires %d and %d", id, d, times[i-1], times[i])
			}
		}
	}
	if n := misfiredOnC + misfired(t, nodes[0]) + misfired(t, nodes[1]); irregular > 0 && n == 0 {
		t.Errorf("%d irregular intervals between fires and no misfire or collapse counted: fires were lost", irregular)
	}
}

// misfired is a node's count of fire times it passed over by a rule:
// misfires (either strategy) and times collapsed into a late fire.
func misfired(t *testing.T, n *clusterNode) int {
	t.Helper()
	_, body := get(t, n.info.URL+"/metrics", clusterAdminToken)
	total := 0
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "xjob_misfired_fires_total{") || strings.HasPrefix(line, "xjob_collapsed_fires_total ") {
			var v float64
			fmt.Sscanf(line[strings.LastIndex(line, " ")+1:], "%g", &v)
			total += int(v)
		}
	}
	return total
}

func TestClusterOnSQLite(t *testing.T) {
	t.Parallel()
	exerciseCluster(t, func(t *testing.T) string { return "sqlite://" + t.TempDir() + "/cluster.db" })
}

// A node whose secrets differ from the cluster's refuses to start, and
// says why without printing a secret.
func TestServerRefusesOtherSecrets(t *testing.T) {
	t.Parallel()
	dbURL := "sqlite://" + t.TempDir() + "/cluster.db"
	startNode(t, dbURL, "node-a", nil)
	cfg := ServerDefaults()
	cfg.DB, cfg.NodeID, cfg.Listen, cfg.Shards = dbURL, "node-b", "127.0.0.1:0", 8
	cfg.AdminToken, cfg.AccessToken = clusterAdminToken, "another-access-token-0123456789"
	cfg.Logger = slog.New(slog.DiscardHandler)
	err := RunServer(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), "differ from the cluster's") {
		t.Fatalf("RunServer with another access token: %v, want a refusal", err)
	}
	if strings.Contains(err.Error(), "another-access-token") || strings.Contains(err.Error(), clusterAccessToken) {
		t.Fatalf("the refusal shows a token: %v", err)
	}
}

// /readyz says whether a node is in the cluster; drain (admin token)
// hands its shards over and makes it not ready, before it stops.
func TestServerReadyAndDrain(t *testing.T) {
	t.Parallel()
	dbURL := "sqlite://" + t.TempDir() + "/cluster.db"
	a := startNode(t, dbURL, "node-a", nil)
	// Ready once its first beat holds its shards: under load (the race
	// detector beside other test binaries on two cores) that can come
	// after startNode returns (CI once read 503 here).
	eventually(t, 30*time.Second, "/readyz of a running node", func() bool {
		code, _ := get(t, a.info.URL+"/readyz", "")
		return code == http.StatusOK
	})
	if code, _ := get(t, a.info.URL+"/healthz", ""); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	drain := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, a.info.URL+drainPath, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := drain("wrong-token-0123456789"); code != http.StatusUnauthorized {
		t.Fatalf("drain with a wrong token: %d, want 401", code)
	}
	if code, _ := get(t, a.info.URL+"/readyz", ""); code != http.StatusOK {
		t.Fatal("a refused drain made the node not ready")
	}
	if code := drain(clusterAdminToken); code != http.StatusOK {
		t.Fatalf("drain: %d", code)
	}
	if code, body := get(t, a.info.URL+"/readyz", ""); code != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
		t.Fatalf("/readyz after drain: %d %s, want 503 draining", code, body)
	}
	// The drained node still serves the API (callbacks of its last runs).
	if code, _ := get(t, a.info.URL+"/v1/jobs", clusterAdminToken); code != http.StatusOK {
		t.Fatalf("/v1/jobs after drain: %d", code)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
}

func TestClusterOnPostgres(t *testing.T) {
	t.Parallel()
	srv := pgserver.Start(t)
	exerciseCluster(t, func(t *testing.T) string { return srv.NewDatabase(t) })
}

// A node started on a cluster's database with another shard count is
// refused with one line naming both, and the password of the URL
// appears in no error.
func TestServerRefusesOtherShardCount(t *testing.T) {
	t.Parallel()
	srv := pgserver.Start(t)
	dbURL := srv.NewDatabase(t)
	startNode(t, dbURL, "node-a", nil)
	cfg := ServerDefaults()
	cfg.DB, cfg.NodeID, cfg.Listen, cfg.Shards = dbURL, "node-b", "127.0.0.1:0", 16
	cfg.AdminToken, cfg.AccessToken = clusterAdminToken, clusterAccessToken
	cfg.Logger = slog.New(slog.DiscardHandler)
	err := RunServer(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), "16") || !strings.Contains(err.Error(), "8") {
		t.Fatalf("RunServer with 16 shards on an 8-shard cluster: %v, want a refusal naming both", err)
	}
	if strings.Contains(err.Error(), srv.Password) {
		t.Fatalf("the error shows the database password: %v", err)
	}
	// An unreachable database: one clear error, no password.
	cfg.DB = strings.Replace(dbURL, fmt.Sprint(srv.Port), "1", 1)
	err = RunServer(t.Context(), cfg)
	if err == nil || strings.Contains(err.Error(), srv.Password) {
		t.Fatalf("RunServer on an unreachable database: %v", err)
	}
	t.Logf("unreachable: %v", err)
}

func TestClusterOnMariaDB(t *testing.T) {
	t.Parallel()
	srv := mariadb.Start(t)
	exerciseCluster(t, func(t *testing.T) string {
		name := srv.CreateDatabase(t)
		srv.CreateUser(t, "xjob", "xjob-password-0123", name)
		return "mysql://xjob:xjob-password-0123@" + srv.Addr + "/" + name
	})
}
