package execclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/xjobdev/xjob/internal/adapter/execclient"
	"github.com/xjobdev/xjob/internal/egress"
)

// With HTTP_PROXY set, the client still dials the executor itself, so the
// egress check sees the executor's IP: a call to the metadata address is
// refused at connect time instead of being handed, with the access token,
// to the proxy (on loopback here, allowed as in xjob local). net/http reads the proxy variables once per process, so
// the call runs in a child process of the test binary with them set.
func TestEnvironmentProxyIgnored(t *testing.T) {
	if os.Getenv("XJOB_TEST_PROXY_CHILD") == "1" {
		c, err := execclient.New(execclient.Options{AccessToken: "a-long-enough-token-0123", Egress: &egress.Policy{AllowLoopback: true}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, addr := range []string{"http://169.254.169.254/", "http://metadata.example/"} {
			rt := c.Beat(context.Background(), addr)
			if rt.Code == 200 {
				t.Fatalf("beat %s through the environment's proxy: %+v", addr, rt)
			}
			t.Logf("beat %s: %s", addr, rt.Msg)
		}
		return
	}
	t.Parallel()
	var hits atomic.Int64
	var sawToken atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("XXL-JOB-ACCESS-TOKEN") != "" {
			sawToken.Store(true)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"code":200}`))
	}))
	t.Cleanup(proxy.Close)
	cmd := exec.Command(os.Args[0], "-test.run=^TestEnvironmentProxyIgnored$", "-test.v")
	cmd.Env = append(os.Environ(), "XJOB_TEST_PROXY_CHILD=1", "HTTP_PROXY="+proxy.URL, "http_proxy="+proxy.URL,
		"HTTPS_PROXY="+proxy.URL, "NO_PROXY=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d calls went to the environment's proxy (access token sent: %v)\n%s", n, sawToken.Load(), out)
	}
	if !strings.Contains(string(out), "169.254.169.254 is link-local") {
		t.Errorf("the metadata address was not refused at connect time:\n%s", out)
	}
}
