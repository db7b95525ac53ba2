package deploy

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/app/local"
)

// What the deployment files rely on in `xjob server`, taken from the
// server's own configuration where it has it, so that a renamed variable
// or a changed default fails these tests. The probes are served by the
// server's handler (TestServerReadyAndDrain in internal/app/local).
var (
	// serverPort is the port of XJOB_LISTEN's default (":8080"): the one
	// listener (executor API, /v1, console, /metrics and the probes).
	serverPort = portOf(local.ServerDefaults().Listen)
	// defaultGrace and defaultLeaseTTL are XJOB_SHUTDOWN_GRACE's and
	// XJOB_LEASE_TTL's defaults.
	defaultGrace    = local.ServerDefaults().Grace
	defaultLeaseTTL = local.ServerDefaults().LeaseTTL
)

const (
	// livenessPath answers 200 while the process serves HTTP.
	livenessPath = "/healthz"
	// readinessPath answers 200 when the database is reachable and the
	// node has joined the cluster, 503 otherwise (also while draining).
	readinessPath = "/readyz"
)

// drainCommand is the preStop hook's command: it asks the node on
// 127.0.0.1 to hand its shards over and report not-ready.
var drainCommand = []string{"/xjob", "server", "drain"}

// serverVars are the variables `xjob server` reads; a deployment file that
// sets any other XJOB_ variable sets nothing.
var serverVars = func() map[string]bool {
	m := map[string]bool{}
	for _, v := range local.ServerVariables() {
		m[v] = true
	}
	return m
}()

func portOf(listen string) int {
	_, p, _ := net.SplitHostPort(listen)
	n, _ := strconv.Atoi(p)
	return n
}

// dbSchemes are the database URL schemes `xjob server --db` takes.
var dbSchemes = []string{"postgres://", "mysql://"}

// checkServerEnv reports, for one node's environment, the variables
// xjob server does not know, a database URL it does not take, and a
// grace or lease TTL that does not parse.
func checkServerEnv(env map[string]string) []string {
	var problems []string
	for name := range env {
		if strings.HasPrefix(name, "XJOB_") && !serverVars[name] {
			problems = append(problems, fmt.Sprintf("%s is not a variable of xjob server", name))
		}
	}
	if db, ok := env["XJOB_DB"]; ok && !hasAnyPrefix(db, dbSchemes) {
		problems = append(problems, fmt.Sprintf("XJOB_DB %q is neither a postgres:// nor a mysql:// URL", db))
	}
	for _, name := range []string{"XJOB_SHUTDOWN_GRACE", "XJOB_LEASE_TTL"} {
		if v, ok := env[name]; ok {
			if _, err := time.ParseDuration(v); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			}
		}
	}
	return problems
}

// envDuration is env[name] as a duration, or def when unset.
func envDuration(t *testing.T, env map[string]string, name string, def time.Duration) time.Duration {
	t.Helper()
	v, ok := env[name]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// readFile reads a file of the repository, relative to this package.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckServerEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want int
	}{
		{"good", map[string]string{"XJOB_DB": "postgres://u:p@h:5432/xjob", "XJOB_SHUTDOWN_GRACE": "10s", "GOMEMLIMIT": "1"}, 0},
		{"mysql", map[string]string{"XJOB_DB": "mysql://u:p@h:3306/xjob"}, 0},
		{"unknown variable", map[string]string{"XJOB_GRACE": "10s"}, 1},
		{"sqlite path", map[string]string{"XJOB_DB": ".xjob/xjob.db"}, 1},
		{"bad duration", map[string]string{"XJOB_LEASE_TTL": "5"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := checkServerEnv(tt.env); len(got) != tt.want {
				t.Errorf("checkServerEnv(%v) = %q, want %d problems", tt.env, got, tt.want)
			}
		})
	}
}
