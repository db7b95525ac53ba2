package adminapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/internal/web/clientip"
)

// Who may call each /v1 route. The admin token and admin users may call
// every route; a normal user only the routes listed in userPolicies, each
// with its group check. A route missing from the table is admin-only, so a
// route added without a policy is never open to normal users.
type policy int

const (
	// adminOnly: groups, users, metrics, and any route without a policy.
	adminOnly policy = iota
	// anyUser: no group involved (cron preview, run report, own account).
	anyUser
	// jobInPath: the job {id} must be in one of the user's groups.
	jobInPath
	// logInPath: the log {id}'s group must be one of the user's.
	logInPath
	// groupInPath: the group {id} must be one of the user's.
	groupInPath
	// groupQuery: ?group= is required and must be one of the user's, or
	// ?job= names a job in one of them (log lists).
	groupQuery
	// inHandler: the handler checks (the body names the group, or the
	// result is filtered), with allowJob / filterGroups.
	inHandler
)

var userPolicies = map[string]policy{
	"POST /v1/jobs":                  inHandler,
	"GET /v1/jobs":                   groupQuery,
	"GET /v1/jobs/{id}":              jobInPath,
	"PUT /v1/jobs/{id}":              jobInPath, // and inHandler for the new group and children
	"DELETE /v1/jobs/{id}":           jobInPath,
	"POST /v1/jobs/{id}/start":       jobInPath,
	"POST /v1/jobs/{id}/stop":        jobInPath,
	"POST /v1/jobs/{id}/trigger":     jobInPath,
	"GET /v1/jobs/{id}/next":         jobInPath,
	"GET /v1/cron/next":              anyUser,
	"GET /v1/groups":                 inHandler,
	"GET /v1/groups/{id}":            groupInPath,
	"GET /v1/groups/{id}/executors":  groupInPath,
	"GET /v1/logs":                   groupQuery,
	"GET /v1/logs/{id}":              logInPath,
	"GET /v1/logs/{id}/executor-log": logInPath,
	"POST /v1/logs/{id}/kill":        logInPath,
	"DELETE /v1/logs":                groupQuery,
	"GET /v1/report":                 anyUser,
	"GET /v1/me":                     anyUser,
	"POST /v1/me/password":           anyUser,
	"GET /v1/users":                  adminOnly,
	"POST /v1/users":                 adminOnly,
	"POST /v1/import/users":          adminOnly,
	"GET /v1/users/{username}":       adminOnly,
	"PUT /v1/users/{username}":       adminOnly,
	"DELETE /v1/users/{username}":    adminOnly,
	"GET /v1/metrics":                adminOnly,
	"POST /v1/groups":                adminOnly,
	"PUT /v1/groups/{id}":            adminOnly,
	"DELETE /v1/groups/{id}":         adminOnly,
}

// errForbidden is the 403 of a refused permission.
func errForbidden(format string, args ...any) error {
	return &httpError{status: http.StatusForbidden, msg: fmt.Sprintf(format, args...)}
}

// principal is the request's principal (set by authenticate).
func principal(r *http.Request) auth.Principal {
	p, _ := auth.FromContext(r.Context())
	return p
}

// authenticate finds the principal (admin token, or a session cookie with
// its CSRF token on unsafe methods) and puts it in the request context.
func (h *Handler) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p auth.Principal
		var err error
		bearer := r.Header.Get("Authorization") != ""
		client := clientip.FromRequest(r)
		if bearer {
			if blocked, until := h.bearer.blocked(client); blocked {
				w.Header().Set("Retry-After", strconv.Itoa(max(1, int(until.Sub(h.cfg.Clock.Now()).Seconds()+0.999))))
				writeError(w, http.StatusTooManyRequests, "too many wrong bearer tokens from this address; try again later", nil)
				return
			}
		}
		if h.cfg.Auth != nil {
			p, err = h.cfg.Auth.Authenticate(r)
		} else {
			p, err = h.bearerOnly(r)
		}
		switch {
		case errors.Is(err, auth.ErrCSRF):
			auth.AuditAuthFailure(r.Context(), h.cfg.Logger, r, "session", "missing or invalid CSRF token")
			writeError(w, http.StatusForbidden, err.Error(), nil)
			return
		case errors.Is(err, auth.ErrUnauthenticated):
			reason, audit := "missing or invalid credential", true
			if bearer {
				var last bool
				if audit, last = h.bearer.fail(client); last {
					reason += fmt.Sprintf("; %d in %s from this address: its bearer requests are refused (429), unlogged, "+
						"until the %s ends", bearerMaxFailures+1, bearerWindow, bearerWindow)
				}
			}
			if audit {
				auth.AuditAuthFailure(r.Context(), h.cfg.Logger, r, credentialKind(r), reason)
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="xjob"`)
			writeError(w, http.StatusUnauthorized, "missing or invalid bearer token or session", nil)
			return
		case err != nil:
			h.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	})
}

// authorize wraps one route with its policy.
func (h *Handler) authorize(rt route) http.HandlerFunc {
	pol, ok := userPolicies[rt.method+" "+rt.pattern]
	if !ok {
		pol = adminOnly
	}
	name := rt.method + " " + rt.pattern
	write := rt.method != http.MethodGet && rt.method != http.MethodHead
	return func(w http.ResponseWriter, r *http.Request) {
		p := principal(r)
		if write {
			// Every write is audited, refused ones included (who tried).
			rec := &auth.StatusRecorder{ResponseWriter: w}
			defer func() {
				auth.AuditWrite(r.Context(), h.cfg.Logger, r, p, name, auditID(r), rec.Status)
			}()
			w = rec
		}
		if !p.Admin() {
			if err := h.check(r, p, pol); err != nil {
				h.fail(w, r, err)
				return
			}
		}
		rt.fn(w, r)
	}
}

// auditID is the id a route's path names ({id} or {username}), "" for
// collection routes.
func auditID(r *http.Request) string {
	if id := r.PathValue("id"); id != "" {
		return id
	}
	return r.PathValue("username")
}

// credentialKind names what a refused request presented, for the audit
// line: a bearer token, a session cookie, or nothing.
func credentialKind(r *http.Request) string {
	switch {
	case r.Header.Get("Authorization") != "":
		return "admin-token"
	case len(r.Cookies()) > 0:
		return "session"
	}
	return "none"
}

// check applies pol for a normal user.
func (h *Handler) check(r *http.Request, p auth.Principal, pol policy) error {
	switch pol {
	case anyUser, inHandler:
		return nil
	case jobInPath:
		id, err := pathID(r)
		if err != nil {
			return err
		}
		return h.allowJob(r, p, id)
	case logInPath:
		id, err := pathID(r)
		if err != nil {
			return err
		}
		l, err := h.cfg.Admin.GetLog(r.Context(), id)
		if err != nil {
			return err
		}
		return allowGroup(p, l.GroupID)
	case groupInPath:
		id, err := pathID(r)
		if err != nil {
			return err
		}
		return allowGroup(p, id)
	case groupQuery:
		q := r.URL.Query()
		if g := strings.TrimSpace(q.Get("group")); g != "" {
			id, err := strconv.ParseInt(g, 10, 64)
			if err != nil {
				return badRequest("group", "%q is not a group id", g)
			}
			if err := allowGroup(p, id); err != nil {
				return err
			}
		} else if j := strings.TrimSpace(q.Get("job")); j == "" {
			return errForbidden("a normal user must name one of its groups (?group=)")
		}
		if j := strings.TrimSpace(q.Get("job")); j != "" {
			id, err := strconv.ParseInt(j, 10, 64)
			if err != nil {
				return badRequest("job", "%q is not a job id", j)
			}
			return h.allowJob(r, p, id)
		}
		return nil
	default:
		return errForbidden("only an admin may do this")
	}
}

func allowGroup(p auth.Principal, id int64) error {
	if !p.CanGroup(id) {
		return errForbidden("user %s has no permission for executor group %d", p.Name(), id)
	}
	return nil
}

// allowJob checks that job id exists and lies in one of p's groups.
func (h *Handler) allowJob(r *http.Request, p auth.Principal, id int64) error {
	if p.Admin() {
		return nil
	}
	j, err := h.cfg.Admin.GetJob(r.Context(), id)
	if err != nil {
		return err
	}
	return allowGroup(p, j.GroupID)
}

// allowJobBody checks a job a normal user submits: its group and every
// child job must be theirs (xxl-job CVE-2024-42681).
func (h *Handler) allowJobBody(r *http.Request, j xjob.Job) error {
	p := principal(r)
	if p.Admin() {
		return nil
	}
	if err := allowGroup(p, j.GroupID); err != nil {
		return err
	}
	for _, c := range j.ChildJobIDs {
		if err := h.allowJob(r, p, c); err != nil && !errors.Is(err, xjob.ErrNotFound) {
			return err // a missing child is the validator's to report
		}
	}
	return nil
}

// checkGlue applies the GLUE policy (auth.GluePolicy) to a job save whose
// GLUE type goes from old ("" for a new job) to next. Without Auth only
// the admin token reaches /v1, and it may.
func (h *Handler) checkGlue(r *http.Request, old, next xjob.GlueType) error {
	if h.cfg.Auth == nil {
		return nil
	}
	return h.cfg.Auth.CheckGlue(principal(r), old, next)
}

// filterGroups keeps the groups p may see.
func filterGroups(p auth.Principal, gs []xjob.Group) []xjob.Group {
	if p.Admin() {
		return gs
	}
	out := gs[:0]
	for _, g := range gs {
		if p.CanGroup(g.ID) {
			out = append(out, g)
		}
	}
	return out
}

// bearerOnly authenticates the admin token alone (no Auth configured).
func (h *Handler) bearerOnly(r *http.Request) (auth.Principal, error) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || !h.isAdminToken(strings.TrimSpace(token)) {
		return auth.Principal{}, auth.ErrUnauthenticated
	}
	return auth.Principal{Token: true}, nil
}

// isAdminToken compares token with every accepted admin token, in
// constant time.
func (h *Handler) isAdminToken(token string) bool {
	if h.cfg.AdminTokens == nil {
		return constantEqual(token, h.adminToken)
	}
	ok := false
	for _, t := range h.cfg.AdminTokens() {
		if t = strings.TrimSpace(t); t != "" && constantEqual(token, []byte(t)) {
			ok = true
		}
	}
	return ok
}
