package local

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xjobdev/xjob/internal/scheduler/cluster"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// clusterStore is what `xjob server` needs of its database beyond a
// backend: the node table, a place to compare the nodes' secrets, and a
// health check for readiness.
type clusterStore interface {
	backend
	driver.NodeStore
	// ClusterSecretCheck stores digest under name on first use and
	// reports a mismatch (an error) when a later node brings another.
	ClusterSecretCheck(ctx context.Context, name, digest string) error
	Ping(ctx context.Context) error
	Close() error
}

// openParams says which cluster database to open, and as whom.
type openParams struct {
	URL    string
	Shards int    // fixed on first use; a different count is refused
	Node   string // stamped on queue claims, where a store can release a dead node's
	Clock  clock.Clock
	Logger *slog.Logger
}

// storeOpener opens a cluster database.
type storeOpener func(ctx context.Context, p openParams) (clusterStore, error)

// nodeClaims is a cluster store that can release the queue messages a
// node held, for the nodes that see it die (see RunServer).
type nodeClaims interface {
	ReleaseNodeClaims(ctx context.Context, node string) (int, error)
}

// clusterStores maps a URL scheme to its store (stores.go).
var clusterStores = map[string]storeOpener{}

// checkClusterURL accepts a URL whose scheme names a cluster store. Its
// error never repeats the URL: it may hold a password.
func checkClusterURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return errors.New("is not a database URL (postgres://user:pass@host:5432/db or mysql://user:pass@host:3306/db)")
	}
	if _, ok := clusterStores[u.Scheme]; !ok {
		return errors.New("scheme is not postgres, postgresql, mysql or mariadb")
	}
	return nil
}

// redactURL is the URL with its password replaced, for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// readSecretFiles reads the secrets named by *File settings; a secret
// given both directly and as a file is refused.
func (c *Config) readSecretFiles() error {
	var errs []error
	for _, f := range []struct {
		flag, env string
		file      string
		dst       *string
	}{
		{"admin-token-file", "XJOB_ADMIN_TOKEN_FILE", c.AdminTokenFile, &c.AdminToken},
		{"access-token-file", "XJOB_ACCESS_TOKEN_FILE", c.AccessTokenFile, &c.AccessToken},
		{"session-key-file", "XJOB_SESSION_KEY_FILE", c.SessionKeyFile, &c.SessionKey},
	} {
		if f.file == "" {
			continue
		}
		if *f.dst != "" {
			errs = append(errs, fmt.Errorf("--%s (%s): the secret is also given directly; give it once", f.flag, f.env))
			continue
		}
		b, err := os.ReadFile(f.file)
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s (%s): %w", f.flag, f.env, err))
			continue
		}
		*f.dst = strings.TrimSpace(string(b))
	}
	return errors.Join(errs...)
}

// validateServer checks what only `xjob server` has; bad reports one
// problem naming its flag and variable.
func (c *Config) validateServer(bad func(flag, env, format string, args ...any)) {
	if c.AdminToken == "" {
		bad("admin-token", "XJOB_ADMIN_TOKEN", "is required (the same on every node; or --admin-token-file)")
	}
	if c.AccessToken == "" {
		bad("access-token", "XJOB_ACCESS_TOKEN", "is required (the same on every node and executor; or --access-token-file)")
	}
	if c.SessionKey != "" && len(c.SessionKey) < minTokenLen {
		bad("session-key", "XJOB_SESSION_KEY", "must be at least %d characters", minTokenLen)
	}
	if c.NodeID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			bad("node-id", "XJOB_NODE_ID", "is required: the host name is unknown")
		}
		c.NodeID = host
	}
	if len(c.NodeID) > 128 || strings.ContainsAny(c.NodeID, " \t\r\n") {
		bad("node-id", "XJOB_NODE_ID", "must be at most 128 characters without white space")
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("public-url", "XJOB_PUBLIC_URL", "%q is not an http(s) URL", c.PublicURL)
		}
	}
	if c.LeaseTTL < 2*time.Second || c.LeaseTTL > time.Minute {
		bad("lease-ttl", "XJOB_LEASE_TTL", "must be between 2s and 1m, got %s", c.LeaseTTL)
	}
	if c.Demo {
		bad("demo", "XJOB_DEMO", "is for xjob local")
	}
}

// ServerMain is `xjob server`: it reads flags (args, after "server") and
// the environment, runs one node until SIGINT or SIGTERM and returns the
// exit code: 0 after a clean shutdown, 1 when it failed, 2 for bad usage
// or configuration. `xjob server drain` asks the node on this machine to
// hand its shards over (a Kubernetes preStop hook).
func ServerMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "drain" {
		return drainMain(args[1:], stdout, stderr)
	}
	cfg, err := ParseServer(args, os.LookupEnv, stderr)
	if errors.Is(err, ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "xjob server: %v\n", err)
		return 2
	}
	cfg.Stdout = stdout
	applyMemoryLimit(cfg.MemoryLimit)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := RunServer(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "xjob server: %v\n", err)
		return 1
	}
	return 0
}

// RunServer runs one node of a cluster on cfg.DB until ctx ends: every
// scheduling-center service, scanning its share of the shards.
func RunServer(ctx context.Context, cfg Config) error {
	cfg.Server = true
	if err := cfg.Validate(); err != nil {
		return err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	}
	logger = logger.With("node", cfg.NodeID)
	var clk clock.Clock = clock.Real{}
	if cfg.Clock != nil {
		clk = cfg.Clock
	}
	u, _ := url.Parse(cfg.DB) // checked by Validate
	db, err := clusterStores[u.Scheme](ctx, openParams{URL: cfg.DB, Shards: cfg.Shards, Node: cfg.NodeID, Clock: clk, Logger: logger})
	if err != nil {
		return fmt.Errorf("database %s: %w", redactURL(cfg.DB), err)
	}
	defer db.Close()
	if err := db.ClusterSecretCheck(ctx, "tokens", secretsDigest(cfg)); err != nil {
		return fmt.Errorf("this node's admin token, access token or session key differ from the cluster's "+
			"(every node must have the same): %w", err)
	}
	if cfg.PprofListen != "" {
		stop, err := servePprof(cfg.PprofListen, logger)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		defer stop()
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen (XJOB_LISTEN) %s: %w", cfg.Listen, err)
	}
	baseURL := cfg.PublicURL
	if baseURL == "" {
		baseURL = "http://" + ln.Addr().String()
	}
	var gone func(context.Context, []string)
	if nc, ok := db.(nodeClaims); ok {
		// What a dead node had received and not finished comes back now,
		// not after the queues' visibility timeouts. A node only slow, not
		// dead, may be seen leaving too: it marks each claim as calling
		// before its call (dispatch.Config.Fence), and a release ends only
		// the claims it has not marked, so no log is called by two nodes.
		gone = func(ctx context.Context, ids []string) {
			for _, id := range ids {
				if n, err := nc.ReleaseNodeClaims(ctx, id); err != nil {
					logger.Warn("releasing a departed node's queue messages", "departed", id, "err", err)
				} else if n > 0 {
					logger.Info("released a departed node's queue messages", "departed", id, "messages", n)
				}
			}
		}
	}
	member, err := cluster.New(cluster.Config{Nodes: db, Clock: clk, Logger: logger, ID: cfg.NodeID, Addr: baseURL,
		Shards: cfg.Shards, TTL: cfg.LeaseTTL, Gone: gone})
	if err != nil {
		_ = ln.Close()
		return err
	}
	// Join before serving: the first scan tick then already has a share.
	if err := member.Beat(ctx); err != nil {
		_ = ln.Close()
		return err
	}
	d := &drainer{ch: make(chan struct{})}
	return host(ctx, node{cfg: cfg, db: db, clk: clk, logger: logger, owner: cfg.NodeID, ln: ln, baseURL: baseURL,
		adminToken: cfg.AdminToken, member: member, stopping: d.ch,
		wrap: func(h http.Handler, _ *services) http.Handler { return serverRoutes(h, cfg.AdminToken, member, d) },
		started: func(ctx context.Context, _ *services, adminPassword string) *demoExecutor {
			logger.Info("xjob server started", "listen", ln.Addr().String(), "publicURL", baseURL, "db", redactURL(cfg.DB),
				"shards", cfg.Shards, "leaseTTL", cfg.LeaseTTL.String(), "nodes", member.Live())
			if cfg.Stdout != nil {
				fmt.Fprintf(cfg.Stdout, "xjob server %s listening on %s (cluster address %s), nodes %v\n",
					cfg.NodeID, ln.Addr(), baseURL, member.Live())
				if adminPassword != "" {
					fmt.Fprintf(cfg.Stdout, "console user admin, password %s (shown once)\n", adminPassword)
				}
			}
			if cfg.Ready != nil {
				cfg.Ready(Info{URL: "http://" + ln.Addr().String(), AdminToken: cfg.AdminToken, AccessToken: cfg.AccessToken,
					Owner: cfg.NodeID, AdminPassword: adminPassword})
			}
			return nil
		}})
}

// secretsDigest is what every node of a cluster must agree on: an HMAC of
// the tokens and session key, so the database learns nothing usable.
func secretsDigest(cfg Config) string {
	m := hmac.New(sha256.New, []byte("xjob cluster secrets v1"))
	for _, s := range []string{cfg.AdminToken, cfg.AccessToken, cfg.SessionKey} {
		fmt.Fprintf(m, "%d:%s;", len(s), s)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// drainer is the node's one-way switch to stop scanning before it stops.
type drainer struct {
	once sync.Once
	ch   chan struct{}
}

func (d *drainer) drain() { d.once.Do(func() { close(d.ch) }) }
func (d *drainer) draining() bool {
	select {
	case <-d.ch:
		return true
	default:
		return false
	}
}

// drainPath is the admin route `xjob server drain` calls.
const drainPath = "/v1/node/drain"

// serverRoutes adds a node's own routes in front of the shared handler:
// GET /readyz (200 while the node is in the cluster — its beats reach the
// database — and not draining; 503 otherwise) and POST /v1/node/drain
// (admin token: stop scanning and hand the shards over).
func serverRoutes(next http.Handler, adminToken string, member *cluster.Member, d *drainer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case d.draining():
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"status":"draining"}`)
		case !member.Ready():
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"status":"not in the cluster: the database is unreachable or the node is starting"}`)
		default:
			_, _ = io.WriteString(w, `{"status":"ok"}`)
		}
	})
	mux.HandleFunc("POST "+drainPath, func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(adminToken)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="xjob"`)
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		d.drain()
		// Wait until the node has left, so a preStop hook returns once
		// the shards are handed over.
		deadline := time.Now().Add(10 * time.Second)
		for member.Ready() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"drained"}`)
	})
	mux.Handle("/", next)
	return mux
}

// drainMain is `xjob server drain`: POST /v1/node/drain to the node on
// this machine, found from XJOB_LISTEN, with XJOB_ADMIN_TOKEN(_FILE).
func drainMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "xjob server drain: takes no arguments (it reads XJOB_LISTEN and XJOB_ADMIN_TOKEN or XJOB_ADMIN_TOKEN_FILE)\n")
		return 2
	}
	listen := os.Getenv("XJOB_LISTEN")
	if listen == "" {
		listen = DefaultServerListen
	}
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		fmt.Fprintf(stderr, "xjob server drain: XJOB_LISTEN %q is not host:port\n", listen)
		return 2
	}
	token := os.Getenv("XJOB_ADMIN_TOKEN")
	if f := os.Getenv("XJOB_ADMIN_TOKEN_FILE"); token == "" && f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "xjob server drain: XJOB_ADMIN_TOKEN_FILE: %v\n", err)
			return 2
		}
		token = strings.TrimSpace(string(b))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+net.JoinHostPort("127.0.0.1", port)+drainPath, nil)
	if err != nil {
		fmt.Fprintf(stderr, "xjob server drain: %v\n", err)
		return 1
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "xjob server drain: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "xjob server drain: %s: %s\n", resp.Status, strings.TrimSpace(string(body)))
		return 1
	}
	fmt.Fprintln(stdout, "drained: this node's shards are handed over")
	return 0
}
