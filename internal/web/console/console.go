// Package console is xjob's web console: server-rendered pages
// (html/template, one typed page-data struct per page) for what an
// xxl-job user does in xxl-job-admin — jobs, trigger logs with the
// executor's rolling log, executor groups, users, the run report — served
// as one http.Handler that xjob local and the AWS registry function mount
// beside the admin API (Mount). Assets are embedded; htmx (a pinned,
// vendored release) turns links and forms into in-place updates, and the
// pages work without it.
//
// Every page and action authenticates through package auth (session
// cookie, CSRF token on every POST) and checks the signed-in user's
// groups on the server, exactly as the /v1 routes do.
package console

import (
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/text"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/internal/web/guard"
	"github.com/xjobdev/xjob/pkg/clock"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is where the console lives.
const Prefix = "/console/"

// Config wires a Handler. Admin and Auth are required: the console reads
// and writes only through them, never the store.
type Config struct {
	Admin  *admin.Service
	Auth   *auth.Service
	Clock  clock.Clock
	Logger *slog.Logger
}

// Handler serves the console under Prefix.
type Handler struct {
	cfg    Config
	tmpl   *template.Template
	mux    *http.ServeMux
	routes []string // every pattern registered, for Routes
}

// New builds the console.
func New(cfg Config) (*Handler, error) {
	if cfg.Admin == nil || cfg.Auth == nil {
		return nil, errors.New("console config: Admin and Auth are required")
	}
	cfg.Clock = fallback.Clock(cfg.Clock)
	cfg.Logger = fallback.Logger(cfg.Logger)
	tmpl, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, tmpl: tmpl, mux: http.NewServeMux()}
	h.route()
	return h, nil
}

// Mount returns a handler that serves the console under Prefix (and
// redirects "/" there) and everything else with api, all behind package
// guard (body caps by route, nosniff, text checks). A request without an
// admin token or a signed session cookie gets guard.Small of body at most.
func Mount(api http.Handler, con *Handler) http.Handler {
	return guard.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/" && r.Method == http.MethodGet:
			http.Redirect(w, r, Prefix, http.StatusFound)
		case strings.HasPrefix(r.URL.Path, Prefix) || r.URL.Path == strings.TrimSuffix(Prefix, "/"):
			con.ServeHTTP(w, r)
		default:
			api.ServeHTTP(w, r)
		}
	}), con.cfg.Auth.Credentialed)
}

// ServeHTTP serves the console with the security headers every page gets.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("X-Frame-Options", "DENY")
	h.mux.ServeHTTP(w, r)
}

// Routes lists every pattern the console serves ("METHOD /path"), so that
// a test of the whole front can walk them.
func (h *Handler) Routes() []string { return slices.Clone(h.routes) }

func (h *Handler) handle(pattern string, fn http.Handler) {
	h.routes = append(h.routes, pattern)
	h.mux.Handle(pattern, fn)
}

func (h *Handler) route() {
	static, _ := fs.Sub(staticFS, "static")
	h.handle("GET /console/static/", http.StripPrefix("/console/static/", cacheADay(http.FileServerFS(static))))
	h.handle("GET /console", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, Prefix, http.StatusFound) }))
	h.handle("GET /console/login", http.HandlerFunc(h.loginPage))
	h.handle("POST /console/login", http.HandlerFunc(h.login))
	h.handle("POST /console/lang", http.HandlerFunc(h.setLang))
	for _, rt := range []struct {
		pattern string
		fn      func(w http.ResponseWriter, r *http.Request, p auth.Principal)
	}{
		{"GET /console/{$}", h.dashboard},
		{"POST /console/logout", h.logout},
		{"GET /console/jobs", h.jobs},
		{"GET /console/jobs/new", h.jobNew},
		{"GET /console/jobs/options", h.jobOptions},
		{"GET /console/groups/{id}/executors", h.groupExecutors},
		{"GET /console/help", h.help},
		{"GET /console/jobs/{id}/edit", h.jobEdit},
		{"GET /console/jobs/{id}/copy", h.jobCopy},
		{"POST /console/jobs", h.jobSave},
		{"POST /console/jobs/{id}", h.jobSave},
		{"POST /console/jobs/{id}/start", h.jobStart},
		{"POST /console/jobs/{id}/stop", h.jobStop},
		{"POST /console/jobs/{id}/delete", h.jobDelete},
		{"GET /console/jobs/{id}/trigger", h.triggerPage},
		{"POST /console/jobs/{id}/trigger", h.trigger},
		{"POST /console/jobs/bulk", h.jobBulk},
		{"POST /console/jobs/test-call", h.testCall},
		{"POST /console/jobs/{id}/test-call", h.testCall},
		{"GET /console/jobs/{id}/glue", h.gluePage},
		{"POST /console/jobs/{id}/glue", h.glueSave},
		{"GET /console/preview", h.preview},
		{"GET /console/logs", h.logs},
		{"GET /console/logs/{id}", h.logDetail},
		{"GET /console/logs/{id}/tail", h.logTail},
		{"POST /console/logs/{id}/kill", h.logKill},
		{"POST /console/logs/clear", h.logClear},
		{"GET /console/groups", h.groups},
		{"POST /console/groups", h.groupSave},
		{"POST /console/groups/{id}/delete", h.groupDelete},
		{"GET /console/users", h.users},
		{"POST /console/users", h.userSave},
		{"POST /console/users/{name}/delete", h.userDelete},
		{"POST /console/password", h.password},
	} {
		h.handle(rt.pattern, h.signedIn(rt.fn))
	}
}

// cacheADay lets browsers keep the static assets for a day: they are
// vendored, pinned files that change only with a new xjob build.
func cacheADay(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		next.ServeHTTP(w, r)
	})
}

// signedIn authenticates a page or action; a visitor without a session
// goes to the sign-in page, a request without its CSRF token is refused.
func (h *Handler) signedIn(fn func(http.ResponseWriter, *http.Request, auth.Principal)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := h.cfg.Auth.Authenticate(r)
		switch {
		case errors.Is(err, auth.ErrCSRF):
			auth.AuditAuthFailure(r.Context(), h.cfg.Logger, r, "session", "missing or invalid CSRF token")
			http.Error(w, h.base(r, auth.Principal{}, "").T("err.csrf"), http.StatusForbidden)
			return
		case errors.Is(err, auth.ErrUnauthenticated) || (err == nil && p.Token):
			// The console is for people: the admin token signs nobody in.
			to := "/console/login?next=" + url.QueryEscape(r.URL.RequestURI())
			if r.Header.Get("HX-Request") != "" {
				w.Header().Set("HX-Redirect", to)
				return
			}
			http.Redirect(w, r, to, http.StatusSeeOther)
			return
		case err != nil:
			h.serverError(w, r, err)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
			rec := &auth.StatusRecorder{ResponseWriter: w}
			defer func() {
				id := r.PathValue("id")
				if id == "" {
					id = r.PathValue("name")
				}
				auth.AuditWrite(r.Context(), h.cfg.Logger, r, p, r.Pattern, id, rec.Status)
			}()
			w = rec
		}
		fn(w, withPrincipal(r, p), p)
	}
}

func (h *Handler) serverError(w http.ResponseWriter, r *http.Request, err error) {
	h.cfg.Logger.Error("console request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	http.Error(w, "internal error", http.StatusInternalServerError)
}

// base is what every page's data holds: the signed-in user, the CSRF
// token, the language and its messages.
type base struct {
	Title  string
	Nav    string
	User   auth.Principal
	CSRF   string
	Lang   string
	Flash  string
	Error  string
	msgs   map[string]string
	Static string
	// Glue loads the GLUE editor's assets (Prism), on its page only.
	Glue bool
}

// T translates a message key.
func (b base) T(key string) string {
	if s, ok := b.msgs[key]; ok {
		return s
	}
	if s, ok := messages["en"][key]; ok {
		return s
	}
	return key
}

func (h *Handler) base(r *http.Request, p auth.Principal, nav string) base {
	lang := h.lang(r, p)
	b := base{Nav: nav, User: p, CSRF: h.cfg.Auth.CSRFToken(p), Lang: lang, msgs: messages[lang],
		Static: "/console/static/"}
	b.Title = b.T("nav." + nav)
	if nav == "users" && !p.Admin() {
		b.Title = b.T("nav.password")
	}
	q := r.URL.Query()
	if key := q.Get("flash"); flashKeys[key] {
		b.Flash = b.T(key)
		if n, err := strconv.Atoi(q.Get("n")); err == nil && n >= 0 {
			b.Flash += " " + strconv.Itoa(n)
		}
	}
	return b
}

// render writes page (a template name) with data.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, page string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := h.tmpl.ExecuteTemplate(w, page, data); err != nil {
		h.cfg.Logger.Error("console render", "page", page, "err", err)
	}
}

// flashKeys are the messages a page shows after an action (?flash=key):
// only these, translated, never text from the URL, so that a link cannot
// make the console say what its author wants.
var flashKeys = map[string]bool{"saved": true, "deleted": true, "done": true, "triggered": true, "cleared": true}

// back redirects after an action (303, so the browser GETs the page),
// with flash (a flashKeys key, or "") and an optional count.
func back(w http.ResponseWriter, r *http.Request, to, flash string, count ...int) {
	if flash != "" && flashKeys[flash] {
		sep := "?"
		if strings.Contains(to, "?") {
			sep = "&"
		}
		to += sep + "flash=" + url.QueryEscape(flash)
		for _, n := range count {
			to += "&n=" + strconv.Itoa(n)
		}
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// safeNext keeps a post-login redirect on the console.
func safeNext(next string) string {
	if strings.HasPrefix(next, Prefix) && !strings.HasPrefix(next, "//") && !strings.Contains(next, "\\") {
		return next
	}
	return Prefix
}

const timeLayout = "2006-01-02 15:04:05"

// zoned formats a Unix-ms time in zone tz (UTC when empty or unknown),
// with the zone's abbreviation, so a list never shows a bare time.
func zoned(v int64, tz string) string {
	if v == 0 {
		return "—"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "" {
		loc = time.UTC
	}
	return time.UnixMilli(v).In(loc).Format(timeLayout + " MST")
}

var funcs = template.FuncMap{
	"ms":   func(v int64) string { return zoned(v, "UTC") },
	"zone": zoned,
	"join": func(xs []string) string { return strings.Join(xs, ", ") },
	"ids": func(xs []int64) string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = itoa(x)
		}
		return strings.Join(out, ",")
	},
	"has": func(xs []int64, x int64) bool {
		for _, v := range xs {
			if v == x {
				return true
			}
		}
		return false
	},
	"running": func(l xjob.Log) bool { return l.Running() },
	"failed":  func(l xjob.Log) bool { return l.Failed() },
	"trunc":   func(s string, n int) string { return text.Truncate(s, n) },
	// navItems are the menu entries p may use: a normal user neither
	// manages executors nor users, and finds its password page instead.
	"navItems": func(p auth.Principal) [][2]string {
		items := [][2]string{{"dashboard", ""}, {"jobs", "jobs"}, {"logs", "logs"}}
		if p.Admin() {
			items = append(items, [2]string{"groups", "groups"}, [2]string{"users", "users"})
		} else {
			items = append(items, [2]string{"password", "users"})
		}
		return append(items, [2]string{"help", "help"})
	},
	"languages":   func() [][2]string { return languages },
	"dayChoices":  func() []int { return []int{7, 14, 30} },
	"pageSizes":   func() []int { return pageSizes },
	"logStatuses": func() []string { return []string{"success", "fail", "running"} },
	"clearModes":  func() []string { return admin.LogClearModes },
	"glueLang":    glueLang,
	"pollDelay":   func() string { return PollDelay.String() },
	"num":         groupDigits,
	"sub100":      func(v float64) float64 { return 100 - v },
	"cronFields":  func() []string { return []string{"second", "minute", "hour", "day", "month", "week"} },
	"rowOf":       func(p jobsPage, j xjob.Job) jobRow { return jobRow{Page: p, Job: j} },
	"afterRun":    func(j xjob.Job, now int64) bool { return admin.AfterCurrentRun(&j, now) },
	"reason":      failReason,
}

// jobRow is one row of the job list with the page it is on.
type jobRow struct {
	Page jobsPage
	Job  xjob.Job
}

// groupDigits writes n with thousands separators (1,000,000).
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// PollDelay is how often the rolling log asks for new lines (xxl-job: 3 s).
var PollDelay = 3 * time.Second

// glueLang is the Prism grammar that highlights a GLUE type's source.
func glueLang(t xjob.GlueType) string {
	switch t {
	case xjob.GlueShell:
		return "bash"
	case xjob.GluePython, xjob.GluePython2:
		return "python"
	case xjob.GluePHP:
		return "php"
	case xjob.GlueNodeJS:
		return "javascript"
	case xjob.GluePowerShell:
		return "powershell"
	case xjob.GlueGroovy:
		return "groovy"
	}
	return ""
}
