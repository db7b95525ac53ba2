package adminapi

import (
	"net/http"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/web/auth"
)

// userRoutes are served when Config.Auth is set.
func (h *Handler) userRoutes() []route {
	if h.cfg.Auth == nil {
		return nil
	}
	return []route{
		{"GET", "/v1/me", h.me},
		{"POST", "/v1/me/password", h.changePassword},
		{"GET", "/v1/users", h.listUsers},
		{"POST", "/v1/users", h.createUser},
		{"POST", "/v1/import/users", h.importUsers},
		{"GET", "/v1/users/{username}", h.getUser},
		{"PUT", "/v1/users/{username}", h.updateUser},
		{"DELETE", "/v1/users/{username}", h.deleteUser},
	}
}

func userOut(u xjob.User) xjob.User {
	if u.GroupIDs == nil {
		u.GroupIDs = []int64{}
	}
	return u
}

func (h *Handler) me(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	if p.Token {
		writeJSON(w, http.StatusOK, map[string]any{"username": p.Name(), "role": xjob.RoleAdmin, "groupIds": []int64{}})
		return
	}
	writeJSON(w, http.StatusOK, userOut(p.User))
}

func (h *Handler) changePassword(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Current string `json:"current"`
		New     string `json:"new"`
	}
	if _, err := decodeBody(w, r, &req, false); err != nil {
		h.fail(w, r, err)
		return
	}
	u, err := h.cfg.Auth.ChangePassword(r.Context(), principal(r), req.Current, req.New)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, userOut(u))
}

func (h *Handler) listUsers(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r, "username", "role")
	p := auth.ListUsersParams{Username: q.str("username")}
	if q.str("role") != "" {
		role := xjob.Role(q.int64("role", 0, 0, 1))
		p.Role = &role
	}
	if err := q.err(); err != nil {
		h.fail(w, r, err)
		return
	}
	us, err := h.cfg.Auth.ListUsers(r.Context(), principal(r), p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for i := range us {
		us[i] = userOut(us[i])
	}
	writeJSON(w, http.StatusOK, items(us, nil))
}

func (h *Handler) createUser(w http.ResponseWriter, r *http.Request) {
	var in auth.UserInput
	if _, err := decodeBody(w, r, &in, false); err != nil {
		h.fail(w, r, err)
		return
	}
	u, err := h.cfg.Auth.CreateUser(r.Context(), principal(r), in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, userOut(u))
}

// importUsersRequest is the body of POST /v1/import/users.
type importUsersRequest struct {
	Users []auth.ImportedUser `json:"users"`
}

// ImportUsersResult is the reply of POST /v1/import/users.
type ImportUsersResult struct {
	Created []string `json:"created"`
	Skipped []string `json:"skipped"`
}

// importUsers is POST /v1/import/users: users an import brings with their
// xxl-job password hashes (re-hashed with argon2id at their first
// sign-in); a username already taken is skipped.
func (h *Handler) importUsers(w http.ResponseWriter, r *http.Request) {
	var req importUsersRequest
	if _, err := decodeBody(w, r, &req, false); err != nil {
		h.fail(w, r, err)
		return
	}
	if len(req.Users) > 1000 {
		h.fail(w, r, badRequest("users", "at most 1000 users, got %d", len(req.Users)))
		return
	}
	created, skipped, err := h.cfg.Auth.ImportUsers(r.Context(), principal(r), req.Users)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if created == nil {
		created = []string{}
	}
	if skipped == nil {
		skipped = []string{}
	}
	writeJSON(w, http.StatusOK, ImportUsersResult{Created: created, Skipped: skipped})
}

func (h *Handler) getUser(w http.ResponseWriter, r *http.Request) {
	u, err := h.cfg.Auth.GetUser(r.Context(), principal(r), r.PathValue("username"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, userOut(u))
}

func (h *Handler) updateUser(w http.ResponseWriter, r *http.Request) {
	var in auth.UserInput
	if _, err := decodeBody(w, r, &in, false); err != nil {
		h.fail(w, r, err)
		return
	}
	name := r.PathValue("username")
	if in.Username != "" && in.Username != name {
		h.fail(w, r, badRequest("username", "%q does not match %q in the URL (usernames never change)", in.Username, name))
		return
	}
	in.Username = strings.TrimSpace(name)
	u, err := h.cfg.Auth.UpdateUser(r.Context(), principal(r), in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, userOut(u))
}

func (h *Handler) deleteUser(w http.ResponseWriter, r *http.Request) {
	if err := h.cfg.Auth.DeleteUser(r.Context(), principal(r), r.PathValue("username")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
