package deploy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestHAProxyCheck: haproxy itself accepts haproxy.cfg. The nodes' names
// do not resolve outside Docker's network, which the configuration allows
// (init-addr none): haproxy warns and starts.
func TestHAProxyCheck(t *testing.T) {
	t.Parallel()
	bin := haproxyBinary(t)
	out, err := exec.Command(bin, "-c", "-f", filepath.Join("compose", "haproxy.cfg")).CombinedOutput()
	if err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
}

// fakeNode stands in for one xjob server behind HAProxy: it answers the
// readiness probe as told and every other request with its name. What is
// tested is the load balancer's configuration, not xjob.
type fakeNode struct {
	name     string
	srv      *httptest.Server
	ready    atomic.Bool
	probed   atomic.Int64 // readiness probes answered 503
	requests atomic.Int64
}

func startFakeNode(t *testing.T, name string) *fakeNode {
	t.Helper()
	n := &fakeNode{name: name}
	n.ready.Store(true)
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == readinessPath {
			if n.ready.Load() {
				w.WriteHeader(http.StatusOK)
				return
			}
			n.probed.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		n.requests.Add(1)
		io.WriteString(w, n.name)
	}))
	t.Cleanup(n.srv.Close)
	return n
}

// TestHAProxyRoutesReadyNodes runs Debian's haproxy on haproxy.cfg, with
// only the addresses changed to three stand-in nodes on loopback, and
// checks what the deployment counts on: requests reach every ready node; a
// node whose /readyz answers 503 (draining, or cut off from the database)
// leaves the rotation and comes back when ready; a node that dies costs no
// request, since a refused connection is retried on another node.
func TestHAProxyRoutesReadyNodes(t *testing.T) {
	t.Parallel()
	bin := haproxyBinary(t)
	src := string(readFile(t, "compose/haproxy.cfg"))
	cfg := parseHAProxy(src)

	nodes := map[string]*fakeNode{}
	for _, name := range nodeNames {
		n := startFakeNode(t, name)
		nodes[name] = n
		src = strings.Replace(src, " "+cfg.servers[name], " "+n.srv.Listener.Addr().String(), 1)
	}
	lbAddr := freeAddr(t)
	src = strings.Replace(src, "bind "+cfg.binds[0], "bind "+lbAddr, 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "haproxy.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("haproxy's log:\n%s", b)
		}
	})

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func() (string, error) {
		resp, err := client.Get("http://" + lbAddr + "/api/registry")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", err
		}
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("status %d: %s", resp.StatusCode, b)
		}
		return string(b), nil
	}
	// until sends requests until seen reports true about the names of the
	// last window answers, failing on any error or after a deadline.
	until := func(what string, window int, seen func(names map[string]int) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			names := map[string]int{}
			for range window {
				name, err := get()
				if err != nil {
					t.Fatalf("%s: request failed: %v", what, err)
				}
				names[name]++
			}
			if seen(names) {
				return
			}
		}
		t.Fatalf("%s: not within 20s", what)
	}

	// haproxy accepts connections once it has read its configuration.
	waitUntil(t, "haproxy listens", func() bool {
		c, err := net.Dial("tcp", lbAddr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	until("every ready node serves", 6, func(names map[string]int) bool { return len(names) == 3 })

	nodes["xjob-2"].ready.Store(false)
	until("a node not ready leaves the rotation", 12, func(names map[string]int) bool {
		return names["xjob-2"] == 0 && nodes["xjob-2"].probed.Load() > 0
	})

	nodes["xjob-3"].srv.Close() // dies: connections are refused
	for i := range 12 {
		name, err := get()
		if err != nil {
			t.Fatalf("request %d after a node died: %v", i, err)
		}
		if name != "xjob-1" {
			t.Fatalf("request %d after a node died served by %s", i, name)
		}
	}

	nodes["xjob-2"].ready.Store(true)
	until("a node ready again rejoins", 6, func(names map[string]int) bool { return names["xjob-2"] > 0 })
}

// freeAddr is a loopback address with a port no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// waitUntil polls cond until it holds, failing after 20 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 20s", what)
}
