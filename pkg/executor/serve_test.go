package executor

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob/pkg/protocol"
)

// TestListenAndServeShutdownWithSpareConnection: an admin's HTTP client
// may hold a keep-alive connection that never sent a request (it dials
// spares under concurrent triggers). http.Server.Shutdown would wait 5 s
// for it; ListenAndServe must still stop cleanly within a shorter grace.
func TestListenAndServeShutdownWithSpareConnection(t *testing.T) {
	t.Parallel()
	a := newTestAdmin(t)
	e, err := New(Config{AccessToken: tok16,
		AdminAddresses: []string{a.srv.URL}, AppName: "app", ListenAddr: "127.0.0.1:0",
		LogDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.ListenAndServe(ctx, 3*time.Second) }()

	// The first heartbeat tells the address ListenAndServe derived.
	reqs := a.waitFor(t, "registry", func(rs []adminRequest) bool {
		for _, r := range rs {
			if strings.HasSuffix(r.path, "/"+protocol.PathRegistry) {
				return true
			}
		}
		return false
	})
	var reg protocol.RegistryParam
	for _, r := range reqs {
		if strings.HasSuffix(r.path, "/"+protocol.PathRegistry) {
			if err := json.Unmarshal([]byte(r.body), &reg); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if reg.RegistryValue != e.address() || !strings.HasPrefix(reg.RegistryValue, "http://127.0.0.1:") {
		t.Fatalf("registered %q, executor address %q", reg.RegistryValue, e.address())
	}
	u, err := url.Parse(reg.RegistryValue)
	if err != nil {
		t.Fatal(err)
	}
	// A served request, then a connection that sends nothing.
	resp, err := http.Post(reg.RegistryValue+protocol.PathBeat, "application/json", strings.NewReader(`""`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	spare, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ListenAndServe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ListenAndServe did not return")
	}
	a.waitFor(t, "registryRemove", func(rs []adminRequest) bool {
		for _, r := range rs {
			if strings.HasSuffix(r.path, "/"+protocol.PathRegistryRemove) {
				return true
			}
		}
		return false
	})
}
