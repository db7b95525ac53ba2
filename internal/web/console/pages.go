package console

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/web/auth"
)

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func formInt(r *http.Request, name string) int64 {
	v, _ := strconv.ParseInt(strings.TrimSpace(r.FormValue(name)), 10, 64)
	return v
}

func pathInt(r *http.Request, name string) int64 {
	v, _ := strconv.ParseInt(r.PathValue(name), 10, 64)
	return v
}

func forbidden(p auth.Principal, group int64) error {
	if p.CanGroup(group) {
		return nil
	}
	return fmt.Errorf("user %s, executor group %d: %w", p.Name(), group, auth.ErrForbidden)
}

// job loads a job the principal may act on.
func (h *Handler) job(r *http.Request, p auth.Principal) (xjob.Job, error) {
	j, err := h.cfg.Admin.GetJob(r.Context(), pathInt(r, "id"))
	if err != nil {
		return xjob.Job{}, err
	}
	return j, forbidden(p, j.GroupID)
}

// groups lists the groups p may see.
func (h *Handler) visibleGroups(r *http.Request, p auth.Principal) ([]xjob.Group, error) {
	gs, err := h.cfg.Admin.ListGroups(r.Context(), admin.ListGroupsParams{})
	if err != nil {
		return nil, err
	}
	out := gs[:0]
	for _, g := range gs {
		if p.CanGroup(g.ID) {
			out = append(out, g)
		}
	}
	return out, nil
}

// ----- sign-in

type loginPage struct {
	base
	Next, Username string
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	b := h.base(r, auth.Principal{}, "login")
	h.render(w, r, "login", loginPage{base: b, Next: safeNext(r.URL.Query().Get("next"))})
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	name, pw := strings.TrimSpace(r.PostFormValue("username")), r.PostFormValue("password")
	_, err := h.cfg.Auth.SignIn(w, r, name, pw)
	if err == nil {
		back(w, r, safeNext(r.PostFormValue("next")), "")
		return
	}
	if !errors.Is(err, auth.ErrTooManyAttempts) && !errors.Is(err, auth.ErrBusy) &&
		!errors.Is(err, auth.ErrBadCredentials) && !errors.Is(err, auth.ErrCSRF) {
		h.serverError(w, r, err)
		return
	}
	auth.AuditAuthFailure(r.Context(), h.cfg.Logger, r, "login", err.Error(), slog.String("username", name))
	b := h.base(r, auth.Principal{}, "login")
	switch {
	case errors.Is(err, auth.ErrTooManyAttempts), errors.Is(err, auth.ErrBusy):
		b.Error = b.T("login.slow")
		w.WriteHeader(http.StatusTooManyRequests)
	case errors.Is(err, auth.ErrBadCredentials), errors.Is(err, auth.ErrCSRF):
		b.Error = b.T("login.bad")
		w.WriteHeader(http.StatusUnauthorized)
	default:
		h.serverError(w, r, err)
		return
	}
	h.render(w, r, "login", loginPage{base: b, Next: safeNext(r.PostFormValue("next")), Username: name})
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
	if err := h.cfg.Auth.SignOut(w, r); err != nil {
		h.serverError(w, r, err) // the session is not recorded as over: say so
		return
	}
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}

// ----- GLUE

type gluePage struct {
	base
	Job      xjob.Job
	Versions []xjob.GlueVersion
	Source   string
	Problem  string
}

func (h *Handler) gluePage(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	j, err := h.job(r, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	vs, err := h.cfg.Admin.GlueVersions(r.Context(), j.ID)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	d := gluePage{base: h.base(r, p, "glue"), Job: j, Versions: vs, Source: j.GlueSource}
	d.Glue = true
	if v, err := strconv.Atoi(r.URL.Query().Get("version")); err == nil && v >= 0 && v < len(vs) {
		d.Source = vs[v].Source
	}
	h.render(w, r, "glue", d)
}

func (h *Handler) glueSave(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	j, err := h.job(r, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if j.GlueType == xjob.GlueBean {
		http.Error(w, "BEAN jobs have no GLUE source", http.StatusBadRequest)
		return
	}
	if err := h.cfg.Auth.CheckGlue(p, j.GlueType, j.GlueType); err != nil {
		h.fail(w, r, err)
		return
	}
	src, remark := strings.ReplaceAll(r.FormValue("glueSource"), "\r", ""), strings.TrimSpace(r.FormValue("glueRemark"))
	if n := len([]rune(remark)); n < 4 || n > 100 {
		d := gluePage{base: h.base(r, p, "glue"), Job: j, Source: src}
		d.Glue, d.Problem = true, d.field("glueRemark")+d.T("sep")+d.problem("glueRemark", "must be 4 to 100 characters")
		if d.Versions, err = h.cfg.Admin.GlueVersions(r.Context(), j.ID); err != nil {
			h.serverError(w, r, err)
			return
		}
		h.render(w, r, "glue", d)
		return
	}
	if _, err := h.cfg.Admin.SaveGlue(r.Context(), j, src, remark); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/jobs/"+itoa(j.ID)+"/glue", "saved")
}
