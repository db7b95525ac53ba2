package adminapi

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/internal/web/executorapi"
	"github.com/xjobdev/xjob/pkg/clock"
)

// Registrar records executor heartbeats and Callbacker executor
// results (package executorapi serves both routes).
type (
	Registrar  = executorapi.Registrar
	Callbacker = executorapi.Callbacker
)

// Body limits.
const (
	// MaxBodyBytes caps an admin API request body (413 above it).
	MaxBodyBytes = 1 << 20
	// MaxRegistryBodyBytes and MaxCallbackBodyBytes cap the executor
	// routes' bodies (package executorapi says why).
	MaxRegistryBodyBytes = executorapi.MaxRegistryBodyBytes
	MaxCallbackBodyBytes = executorapi.MaxCallbackBodyBytes
)

// Config wires a Handler. Admin, Registry, Callback and AdminToken are required.
type Config struct {
	Admin    *admin.Service
	Registry Registrar
	Callback Callbacker
	// Metrics is served at /v1/metrics (JSON) and at /metrics in the
	// Prometheus text format, with Gauges; nil serves zeros. /metrics
	// takes the admin token like /v1 (Prometheus: authorization.credentials):
	// no route runs open by default.
	Metrics *metric.Metrics
	Gauges  metric.Gauges
	// AdminToken is the bearer token of the /v1 API. It must not be
	// blank: the admin API never runs open.
	AdminToken string
	// Auth, when set, also accepts console sessions on /v1 (with their
	// CSRF token on unsafe methods), checks each route's permission for
	// normal users (authz.go) and serves /v1/users and /v1/me. Without it
	// only the admin token is accepted.
	Auth *auth.Service
	// AccessToken is the xxl-job access token executors send. It must not
	// be blank either: unlike xxl-job, the executor routes never run open
	// (anyone reaching them could complete any log or register addresses).
	// AccessTokens, when set, replaces it: every token it returns, asked
	// per request, is accepted (a rotation in progress).
	AccessToken  string
	AccessTokens func() []string
	// AdminTokens, when set, is asked per request for the accepted admin
	// tokens instead of AdminToken (a token read from a secret store and
	// refreshed; AdminToken must still be set, as the first of them).
	AdminTokens func() []string
	// Logger defaults to slog.Default(); Clock (the default "from" of cron
	// previews) to the wall clock.
	Logger *slog.Logger
	Clock  clock.Clock
}

// Handler serves every route of the package doc. It is safe for concurrent use.
type Handler struct {
	cfg        Config
	adminToken []byte
	exec       *executorapi.Handler
	mux        *http.ServeMux
	bearer     *bearerGuard
}

var _ http.Handler = (*Handler)(nil)

// New validates cfg and builds the Handler.
func New(cfg Config) (*Handler, error) {
	var missing []string
	if cfg.Admin == nil {
		missing = append(missing, "Admin")
	}
	if cfg.Registry == nil {
		missing = append(missing, "Registry")
	}
	if cfg.Callback == nil {
		missing = append(missing, "Callback")
	}
	if strings.TrimSpace(cfg.AdminToken) == "" {
		missing = append(missing, "AdminToken")
	}
	if strings.TrimSpace(cfg.AccessToken) == "" && cfg.AccessTokens == nil {
		missing = append(missing, "AccessToken")
	}
	if len(missing) > 0 {
		return nil, errors.New("adminapi config: missing " + strings.Join(missing, ", "))
	}
	cfg.Logger = fallback.Logger(cfg.Logger)
	cfg.Clock = fallback.Clock(cfg.Clock)
	exec, err := executorapi.New(executorapi.Config{Registry: cfg.Registry, Callback: cfg.Callback,
		AccessToken: cfg.AccessToken, Tokens: cfg.AccessTokens, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("adminapi config: %w", err)
	}
	h := &Handler{
		cfg:        cfg,
		adminToken: []byte(strings.TrimSpace(cfg.AdminToken)), // compared with the trimmed header value
		exec:       exec,
		mux:        http.NewServeMux(),
		bearer:     newBearerGuard(cfg.Clock),
	}
	h.routes()
	return h, nil
}

// ServeHTTP dispatches to the routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

type route struct {
	method, pattern string
	fn              http.HandlerFunc
}

func (h *Handler) routes() {
	for _, prefix := range []string{"", "/xxl-job-admin"} {
		h.mux.HandleFunc(prefix+"/api/{uri...}", h.executorAPI)
	}
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	h.mux.HandleFunc("/healthz", methodNotAllowed([]string{http.MethodGet}))
	h.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "no such route", nil)
	})

	v1 := http.NewServeMux()
	allowed := map[string][]string{}
	for _, rt := range h.v1Routes() {
		v1.HandleFunc(rt.method+" "+rt.pattern, h.authorize(rt))
		allowed[rt.pattern] = append(allowed[rt.pattern], rt.method)
	}
	for pattern, methods := range allowed {
		slices.Sort(methods)
		v1.HandleFunc(pattern, methodNotAllowed(methods))
	}
	v1.HandleFunc("/v1/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "no such route", nil)
	})
	h.mux.Handle("/v1/", h.authenticate(v1))
	prom := metric.Handler(h.cfg.Metrics, h.cfg.Gauges)
	h.mux.Handle("GET /metrics", h.authenticate(h.authorize(route{"GET", "/metrics", prom.ServeHTTP})))
	h.mux.HandleFunc("/metrics", methodNotAllowed([]string{http.MethodGet}))
}

func (h *Handler) v1Routes() []route {
	return append([]route{
		{"GET", "/v1/metrics", h.metrics},
		{"POST", "/v1/jobs", h.createJob},
		{"GET", "/v1/jobs", h.listJobs},
		{"GET", "/v1/jobs/{id}", h.getJob},
		{"PUT", "/v1/jobs/{id}", h.updateJob},
		{"DELETE", "/v1/jobs/{id}", h.deleteJob},
		{"POST", "/v1/jobs/{id}/start", h.startJob},
		{"POST", "/v1/jobs/{id}/stop", h.stopJob},
		{"POST", "/v1/jobs/{id}/trigger", h.triggerJob},
		{"GET", "/v1/jobs/{id}/next", h.nextJob},
		{"GET", "/v1/cron/next", h.cronNext},
		{"POST", "/v1/groups", h.createGroup},
		{"GET", "/v1/groups", h.listGroups},
		{"GET", "/v1/groups/{id}", h.getGroup},
		{"PUT", "/v1/groups/{id}", h.updateGroup},
		{"DELETE", "/v1/groups/{id}", h.deleteGroup},
		{"GET", "/v1/groups/{id}/executors", h.groupExecutors},
		{"GET", "/v1/logs", h.listLogs},
		{"GET", "/v1/logs/{id}", h.getLog},
		{"GET", "/v1/logs/{id}/executor-log", h.executorLog},
		{"POST", "/v1/logs/{id}/kill", h.killLog},
		{"DELETE", "/v1/logs", h.clearLogs},
		{"GET", "/v1/report", h.report},
		{"POST", "/v1/apply", h.apply},
		{"POST", "/v1/import/history", h.importHistory},
		{"GET", "/v1/export", h.export},
		{"POST", "/v1/bulk/jobs", h.bulkJobs},
	}, h.userRoutes()...)
}

// Routes lists every route the Handler serves as "METHOD /path pattern"
// (the executor uris one by one), so that a test of the whole front can
// walk them.
func (h *Handler) Routes() []string {
	var out []string
	for _, prefix := range []string{"", "/xxl-job-admin"} {
		for _, uri := range []string{"registry", "registryRemove", "callback", DeclarePath} {
			out = append(out, "POST "+prefix+"/api/"+uri)
		}
	}
	out = append(out, "GET /healthz", "GET /metrics")
	for _, rt := range h.v1Routes() {
		out = append(out, rt.method+" "+rt.pattern)
	}
	return out
}

func constantEqual(a string, b []byte) bool { return subtle.ConstantTimeCompare([]byte(a), b) == 1 }

func methodNotAllowed(methods []string) http.HandlerFunc {
	allow := strings.Join(methods, ", ")
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; use "+allow, nil)
	}
}
