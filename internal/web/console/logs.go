package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/text"
	"github.com/xjobdev/xjob/internal/web/auth"
)

// ----- trigger logs

type logsPage struct {
	base
	Groups           []xjob.Group
	Group, Job       int64
	JobText          string
	Status, From, To string
	Logs             []xjob.Log
	JobNames         map[int64]string
	Pager            pager
}

const dateInput = "2006-01-02T15:04"

// countCap bounds the log list's total: counting stops there ("10,000+"),
// so the count costs at most that many index entries at any table size.
const countCap = 10000

func (h *Handler) logs(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	q := r.URL.Query()
	d := logsPage{base: h.base(r, p, "logs"), Status: q.Get("status"), From: q.Get("from"), To: q.Get("to"),
		JobText: strings.TrimSpace(q.Get("job")), Pager: newPager(q)}
	gs, err := h.visibleGroups(r, p)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	d.Groups = gs
	d.Group, _ = strconv.ParseInt(q.Get("group"), 10, 64)
	if d.JobText != "" {
		j, err := h.findJob(r, p, d.Group, d.JobText)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		d.Job, d.Group, d.JobText = j.ID, j.GroupID, itoa(j.ID)
	}
	if d.Group == 0 && !p.Admin() && len(gs) > 0 {
		d.Group = gs[0].ID
	}
	if d.Group != 0 {
		if err := forbidden(p, d.Group); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if !p.Admin() && d.Group == 0 {
		h.render(w, r, "logs", d)
		return
	}
	// A job implies its group (checked above); filtering by both would
	// let SQLite walk the group's index instead of the job's.
	lp := admin.ListLogsParams{JobID: d.Job, Status: xjob.LogAll, Cursor: d.Pager.Cursor, Limit: d.Pager.Size}
	if d.Job == 0 {
		lp.GroupID = d.Group
	}
	switch d.Status {
	case "success":
		lp.Status = xjob.LogSuccess
	case "fail":
		lp.Status = xjob.LogFail
	case "running":
		lp.Status = xjob.LogRunning
	}
	if t, err := time.Parse(dateInput, d.From); err == nil {
		lp.From = t.UnixMilli()
	}
	if t, err := time.Parse(dateInput, d.To); err == nil {
		lp.To = t.UnixMilli()
	}
	page, err := h.cfg.Admin.ListLogs(r.Context(), lp)
	var ve *xjob.ValidationError
	if errors.As(err, &ve) {
		d.Error = d.lead("err.invalid", d.problemsText(ve.Problems))
	} else if err != nil {
		h.fail(w, r, err)
		return
	}
	cp := admin.CountLogsParams{JobID: lp.JobID, Status: lp.Status, From: lp.From, To: lp.To, Limit: countCap + 1}
	if lp.GroupID != 0 {
		cp.GroupIDs = []int64{lp.GroupID}
	}
	if d.Error == "" {
		n, err := h.cfg.Admin.CountLogs(r.Context(), cp)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		d.Pager.Total = groupDigits(min(n, countCap))
		if n > countCap {
			d.Pager.Total += "+"
		}
	}
	if d.JobNames, err = h.jobNames(r, page.Logs); err != nil {
		h.serverError(w, r, err)
		return
	}
	d.Pager.links("/console/logs", q, page.Next)
	d.Logs = page.Logs
	h.render(w, r, "logs", d)
}

// findJob reads the log filter's job field: a job id, or text that
// names exactly one job (by description) of the group the user may see.
func (h *Handler) findJob(r *http.Request, p auth.Principal, group int64, text string) (xjob.Job, error) {
	if id, err := strconv.ParseInt(text, 10, 64); err == nil {
		j, err := h.cfg.Admin.GetJob(r.Context(), id)
		if err == nil {
			err = forbidden(p, j.GroupID)
		}
		return j, err
	}
	if group == 0 && !p.Admin() {
		return xjob.Job{}, fmt.Errorf("job %q: %w", text, xjob.ErrNotFound)
	}
	page, err := h.cfg.Admin.ListJobs(r.Context(), admin.ListJobsParams{GroupID: group, Description: text, Limit: 1})
	if err != nil {
		return xjob.Job{}, err
	}
	if len(page.Jobs) == 0 {
		return xjob.Job{}, fmt.Errorf("job %q: %w", text, xjob.ErrNotFound)
	}
	return page.Jobs[0], forbidden(p, page.Jobs[0].GroupID)
}

// clearTimeout bounds a "clear logs" run, which goes on after the
// browser leaves: a closed tab must not stop it half-way.
const clearTimeout = 10 * time.Minute

// logClear is the logs page's "clear logs" dialog (xxl-job's
// /joblog/clearLog): the page's group and job scope it, and a normal user
// must have the group (and the job must be in it); only an admin may
// clear every group. The delete runs detached from the request (bounded
// by clearTimeout): deleting in batches, it would otherwise stop at the
// batch where the tab closed.
func (h *Handler) logClear(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	group, _ := strconv.ParseInt(r.FormValue("group"), 10, 64)
	job, _ := strconv.ParseInt(r.FormValue("job"), 10, 64)
	if job != 0 {
		j, err := h.cfg.Admin.GetJob(r.Context(), job)
		if err == nil {
			err = forbidden(p, j.GroupID)
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
		group = j.GroupID
	}
	if err := forbidden(p, group); err != nil { // group 0 (every group): admins only
		h.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), clearTimeout)
	defer cancel()
	n, err := h.cfg.Admin.ClearLogs(ctx, admin.ClearLogsParams{GroupID: group, JobID: job, Mode: r.FormValue("mode")})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/logs?group="+itoa(group)+"&job="+itoa(job), "cleared", n)
}

// log loads a log the principal may see.
func (h *Handler) log(r *http.Request, p auth.Principal) (xjob.Log, error) {
	l, err := h.cfg.Admin.GetLog(r.Context(), pathInt(r, "id"))
	if err != nil {
		return xjob.Log{}, err
	}
	return l, forbidden(p, l.GroupID)
}

type logPage struct {
	base
	Log xjob.Log
	Job xjob.Job
	// TriggerMsg is the dispatcher's HTML trigger message (xxl-job's
	// format, built by dispatch from escaped values).
	TriggerMsg template.HTML
}

func (h *Handler) logDetail(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	l, err := h.log(r, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d := logPage{base: h.base(r, p, "logs"), Log: l, TriggerMsg: safeTriggerMsg(l.TriggerMsg)}
	d.Job, _ = h.cfg.Admin.GetJob(r.Context(), l.JobID)
	h.render(w, r, "log", d)
}

// triggerMarkup is the markup xxl-job's trigger messages carry, as it
// reads once escaped: line breaks, bold, and a coloured span around the
// ">>>>Trigger<<<<" banners.
var triggerMarkup = regexp.MustCompile(`&lt;(?:br\s*/?|/?b|/span|span style=&#34;color:\s*#[0-9a-fA-F]{3,6};?&#34;\s*)&gt;`)

// safeTriggerMsg escapes a trigger message and restores only the markup
// xxl-job's messages use (br, b, and span with a colour, drawn with the
// console's own accessible colour): everything else, an executor's reply
// included, stays text. Spans are balanced so nothing leaks past the
// message.
func safeTriggerMsg(s string) template.HTML {
	open := 0
	e := triggerMarkup.ReplaceAllStringFunc(template.HTMLEscapeString(s), func(tag string) string {
		switch {
		case strings.HasPrefix(tag, "&lt;br"):
			return "<br>"
		case tag == "&lt;b&gt;":
			return "<b>"
		case tag == "&lt;/b&gt;":
			return "</b>"
		case tag == "&lt;/span&gt;":
			if open == 0 {
				return ""
			}
			open--
			return "</span>"
		}
		open++
		return `<span class="mark">`
	})
	e += strings.Repeat("</span>", open)
	return template.HTML(e) //nolint:gosec // escaped above; only fixed tags restored
}

type tailData struct {
	base
	ID      int64
	Content string
	Next    int
	End     bool
	Error   string
	None    bool
}

// logTail is the htmx fragment of the rolling log: the lines from ?from=,
// and (until the run has ended) a trigger that fetches the next lines in
// 3 s, as xxl-job's viewer polls.
func (h *Handler) logTail(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	l, err := h.log(r, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	from, _ := strconv.Atoi(r.URL.Query().Get("from"))
	from = max(from, 1)
	d := tailData{base: h.base(r, p, "logs"), ID: l.ID, Next: from}
	if l.Triggered() && l.TriggerCode != xjob.CodeSuccess {
		d.None, d.End = true, true
		h.render(w, r, "tail", d)
		return
	}
	res, err := h.cfg.Admin.ExecutorLog(r.Context(), l.ID, from)
	if err != nil {
		d.Error = err.Error()
		h.render(w, r, "tail", d)
		return
	}
	d.Content = res.LogContent
	if res.ToLineNum >= from {
		d.Next = res.ToLineNum + 1
	}
	d.End = res.IsEnd
	if !d.End && l.Handled() && res.FromLineNum > res.ToLineNum {
		d.End = true
	}
	h.render(w, r, "tail", d)
}

func (h *Handler) logKill(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	l, err := h.log(r, p)
	if err == nil {
		_, err = h.cfg.Admin.KillLog(r.Context(), l.ID)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/logs/"+itoa(l.ID), "done")
}

// ----- executor groups

type groupRow struct {
	Group     xjob.Group
	Executors []executorRow
}

type executorRow struct {
	Address   string
	Heartbeat int64
}

type groupsPage struct {
	base
	Rows     []groupRow
	Edit     xjob.Group
	Problems map[string]string
}

func (h *Handler) groups(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	h.renderGroups(w, r, p, xjob.Group{}, nil)
}

func (h *Handler) renderGroups(w http.ResponseWriter, r *http.Request, p auth.Principal, edit xjob.Group, problems map[string]string) {
	gs, err := h.visibleGroups(r, p)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	d := groupsPage{base: h.base(r, p, "groups"), Edit: edit, Problems: problems}
	if id, err := strconv.ParseInt(r.URL.Query().Get("edit"), 10, 64); err == nil && edit.AppName == "" {
		for _, g := range gs {
			if g.ID == id {
				d.Edit = g
			}
		}
	}
	for _, g := range gs {
		row := groupRow{Group: g}
		if es, err := h.cfg.Admin.GroupExecutors(r.Context(), g.ID); err == nil {
			for _, e := range es {
				row.Executors = append(row.Executors, executorRow{Address: e.Address, Heartbeat: e.UpdatedAt})
			}
		}
		d.Rows = append(d.Rows, row)
	}
	h.render(w, r, "groups", d)
}

func (h *Handler) groupSave(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if !p.Admin() {
		h.fail(w, r, auth.ErrForbidden)
		return
	}
	g := xjob.Group{ID: formInt(r, "id"), AppName: strings.TrimSpace(r.FormValue("appname")),
		Title: strings.TrimSpace(r.FormValue("title")), AddressType: xjob.AddressType(formInt(r, "addressType")),
		AddressList: text.SplitList(r.FormValue("addressList")), Version: formInt(r, "version")}
	var err error
	if g.ID == 0 {
		_, err = h.cfg.Admin.CreateGroup(r.Context(), g)
	} else {
		_, err = h.cfg.Admin.UpdateGroup(r.Context(), adminGroupUpdate(g))
	}
	var ve *xjob.ValidationError
	if errors.As(err, &ve) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		h.renderGroups(w, r, p, g, h.base(r, p, "").problemMap(ve))
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/groups", "saved")
}

func (h *Handler) groupDelete(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if !p.Admin() {
		h.fail(w, r, auth.ErrForbidden)
		return
	}
	if err := h.cfg.Admin.DeleteGroup(r.Context(), pathInt(r, "id")); err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/groups", "deleted")
}

// ----- users

type usersPage struct {
	base
	Users      []xjob.User
	Groups     []xjob.Group
	GroupNames map[int64]string
	Edit       xjob.User
	Problems   map[string]string
	// PwProblems are the change-password form's own.
	PwProblems map[string]string
}

func (h *Handler) users(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	h.renderUsers(w, r, p, xjob.User{}, nil, nil)
}

func (h *Handler) renderUsers(w http.ResponseWriter, r *http.Request, p auth.Principal, edit xjob.User,
	problems, pw map[string]string) {
	d := usersPage{base: h.base(r, p, "users"), Edit: edit, Problems: problems, PwProblems: pw,
		GroupNames: map[int64]string{}}
	if len(problems) > 0 || len(pw) > 0 {
		w.WriteHeader(http.StatusUnprocessableEntity)
	}
	if p.Admin() {
		var err error
		if d.Users, err = h.cfg.Auth.ListUsers(r.Context(), p, auth.ListUsersParams{}); err != nil {
			h.fail(w, r, err)
			return
		}
		if d.Groups, err = h.visibleGroups(r, p); err != nil {
			h.serverError(w, r, err)
			return
		}
		for _, g := range d.Groups {
			d.GroupNames[g.ID] = g.Title
		}
		if name := r.URL.Query().Get("edit"); name != "" && edit.Username == "" {
			for _, u := range d.Users {
				if u.Username == name {
					d.Edit = u
				}
			}
		}
	}
	h.render(w, r, "users", d)
}

// problemMap is a validation error's problems by field, translated.
func (b base) problemMap(ve *xjob.ValidationError) map[string]string {
	out := map[string]string{}
	for _, pr := range ve.Problems {
		out[pr.Field] = b.problem(pr.Field, pr.Message)
	}
	return out
}

func (h *Handler) userSave(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	in := auth.UserInput{Username: strings.TrimSpace(r.PostForm.Get("username")), Password: r.PostForm.Get("password"),
		Role: xjob.Role(formInt(r, "role")), Version: formInt(r, "version")}
	for _, s := range r.PostForm["groupIds"] {
		if id, err := strconv.ParseInt(s, 10, 64); err == nil {
			in.GroupIDs = append(in.GroupIDs, id)
		}
	}
	var err error
	if r.PostForm.Get("existing") == "1" {
		old, gerr := h.cfg.Auth.GetUser(r.Context(), p, in.Username)
		if gerr != nil {
			h.fail(w, r, gerr)
			return
		}
		in.Locale = old.Locale
		_, err = h.cfg.Auth.UpdateUser(r.Context(), p, in)
	} else {
		_, err = h.cfg.Auth.CreateUser(r.Context(), p, in)
	}
	var ve *xjob.ValidationError
	if errors.As(err, &ve) {
		edit := xjob.User{Username: in.Username, Role: in.Role, GroupIDs: in.GroupIDs}
		h.renderUsers(w, r, p, edit, h.base(r, p, "").problemMap(ve), nil)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/users", "saved")
}

func (h *Handler) userDelete(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	err := h.cfg.Auth.DeleteUser(r.Context(), p, r.PathValue("name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	back(w, r, "/console/users", "deleted")
}

// password changes the signed-in user's password; its problems show
// under its own form, for admins and normal users alike.
func (h *Handler) password(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	_, err := h.cfg.Auth.ChangePassword(r.Context(), p, r.PostFormValue("current"), r.PostFormValue("new"))
	var ve *xjob.ValidationError
	if errors.As(err, &ve) {
		pw := h.base(r, p, "").problemMap(ve)
		if m, ok := pw["password"]; ok { // the new password's problem, under its field
			pw["new"] = m
		}
		h.renderUsers(w, r, p, xjob.User{}, nil, pw)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// The change ended every session, this one included: sign in again.
	if _, err := h.cfg.Auth.SignIn(w, r, p.User.Username, r.PostFormValue("new")); err != nil {
		http.Redirect(w, r, "/console/login", http.StatusSeeOther)
		return
	}
	// The new session has a new CSRF token, which the page carries in
	// <body hx-headers>: an htmx swap keeps the old body element, so the
	// browser loads the page afresh instead.
	if r.Header.Get("HX-Request") != "" {
		w.Header().Set("HX-Redirect", "/console/users?flash=saved")
		return
	}
	back(w, r, "/console/users", "saved")
}

// help is the help page (xxl-job's "使用教程").
func (h *Handler) help(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	h.render(w, r, "help", h.base(r, p, "help"))
}

func adminGroupUpdate(g xjob.Group) admin.UpdateGroupParams {
	return admin.UpdateGroupParams{Group: g, Version: g.Version}
}

var (
	lineBreak = regexp.MustCompile(`(?i)<br\s*/?>`)
	anyTag    = regexp.MustCompile(`<[^>]*>`)
)

// failReason is why a run failed, short enough for a list row: the
// executor's handle message, else the end of the trigger message — its
// "msg:" line (xxl-job's "msg：" too), markup removed — so that a list
// says more than "Fail 500" without opening the log. "" for a run that
// did not fail.
func failReason(l xjob.Log) string {
	if l.HandleCode != 0 && l.HandleCode != xjob.CodeSuccess && strings.TrimSpace(l.HandleMsg) != "" {
		return strings.TrimSpace(l.HandleMsg)
	}
	if l.TriggerCode == 0 || l.TriggerCode == xjob.CodeSuccess {
		return ""
	}
	lines := strings.Split(lineBreak.ReplaceAllString(l.TriggerMsg, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(anyTag.ReplaceAllString(lines[i], ""))
		if line == "" {
			continue
		}
		for _, p := range []string{"msg:", "msg："} {
			if after, ok := strings.CutPrefix(line, p); ok {
				line = strings.TrimSpace(after)
			}
		}
		return line
	}
	return ""
}
