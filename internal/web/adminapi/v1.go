package adminapi

import (
	"context"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
)

// Page sizes of list endpoints.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

type page[T any] struct {
	Items []T     `json:"items"`
	Next  *string `json:"next,omitempty"`
}

func items[T any](xs []T, next *string) page[T] {
	if xs == nil {
		xs = []T{}
	}
	return page[T]{Items: xs, Next: next}
}

// jobOut normalises empty lists to [] for clients.
func jobOut(j xjob.Job) xjob.Job {
	if j.ChildJobIDs == nil {
		j.ChildJobIDs = []int64{}
	}
	return j
}

func groupOut(g xjob.Group) xjob.Group {
	if g.AddressList == nil {
		g.AddressList = []string{}
	}
	return g
}

func (h *Handler) metrics(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, h.cfg.Metrics.Snapshot())
}

// ----- jobs

func (h *Handler) createJob(w http.ResponseWriter, r *http.Request) {
	var j xjob.Job
	if _, err := decodeBody(w, r, &j, false); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.allowJobBody(r, j); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.checkGlue(r, "", j.GlueType); err != nil {
		h.fail(w, r, err)
		return
	}
	out, err := h.cfg.Admin.CreateJob(r.Context(), j)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, jobOut(out))
}

func (h *Handler) listJobs(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r, "group", "status", "desc", "handler", "author", "cursor", "limit")
	p := admin.ListJobsParams{
		GroupID:     q.int64("group", 0, 1, math.MaxInt64),
		Description: q.str("desc"),
		Handler:     q.str("handler"),
		Author:      q.str("author"),
		Cursor:      q.str("cursor"),
		Limit:       int(q.int64("limit", DefaultPageSize, 1, MaxPageSize)),
	}
	if s := q.str("status"); s != "" {
		st := xjob.TriggerStatus(q.int64("status", 0, 0, 1))
		p.Status = &st
	}
	if err := q.err(); err != nil {
		h.fail(w, r, err)
		return
	}
	res, err := h.cfg.Admin.ListJobs(r.Context(), p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]xjob.Job, len(res.Jobs))
	for i, j := range res.Jobs {
		out[i] = jobOut(j)
	}
	writeJSON(w, http.StatusOK, items(out, &res.Next))
}

func (h *Handler) getJob(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err == nil {
		var j xjob.Job
		if j, err = h.cfg.Admin.GetJob(r.Context(), id); err == nil {
			writeJSON(w, http.StatusOK, jobOut(j))
			return
		}
	}
	h.fail(w, r, err)
}

func (h *Handler) updateJob(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var j xjob.Job
	if _, err := decodeBody(w, r, &j, false); err != nil {
		h.fail(w, r, err)
		return
	}
	if j.ID != 0 && j.ID != id {
		h.fail(w, r, badRequest("id", "%d does not match the job id %d in the URL", j.ID, id))
		return
	}
	if err := h.allowJobBody(r, j); err != nil {
		h.fail(w, r, err)
		return
	}
	old, err := h.cfg.Admin.GetJob(r.Context(), id)
	if err == nil {
		err = h.checkGlue(r, old.GlueType, j.GlueType)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	version := j.Version
	j.ID = id
	out, err := h.cfg.Admin.UpdateJob(r.Context(), admin.UpdateJobParams{Job: j, Version: version})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, jobOut(out))
}

func (h *Handler) deleteJob(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err == nil {
		if err = h.cfg.Admin.DeleteJob(r.Context(), id); err == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	h.fail(w, r, err)
}

func (h *Handler) startJob(w http.ResponseWriter, r *http.Request) {
	h.jobAction(w, r, h.cfg.Admin.StartJob)
}

func (h *Handler) stopJob(w http.ResponseWriter, r *http.Request) {
	h.jobAction(w, r, h.cfg.Admin.StopJob)
}

func (h *Handler) jobAction(w http.ResponseWriter, r *http.Request,
	act func(ctx context.Context, id int64) (xjob.Job, error)) {
	id, err := pathID(r)
	if err == nil {
		if _, err = decodeBody(w, r, &struct{}{}, true); err == nil {
			var j xjob.Job
			if j, err = act(r.Context(), id); err == nil {
				writeJSON(w, http.StatusOK, jobOut(j))
				return
			}
		}
	}
	h.fail(w, r, err)
}

// triggerRequest is the body of POST /v1/jobs/{id}/trigger.
type triggerRequest struct {
	ExecutorParam *string  `json:"executorParam"`
	AddressList   []string `json:"addressList"`
}

func (h *Handler) triggerJob(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var req triggerRequest
	if _, err := decodeBody(w, r, &req, true); err != nil {
		h.fail(w, r, err)
		return
	}
	res, err := h.cfg.Admin.TriggerJob(r.Context(), admin.TriggerParams{
		JobID: id, Param: req.ExecutorParam, AddressList: req.AddressList,
	})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, res)
}

func formatTimes(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Format(time.RFC3339)
	}
	return out
}

func (h *Handler) nextJob(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := newQuery(r, "n")
	n := int(q.int64("n", admin.DefaultPreviewCount, 1, admin.MaxPreviewCount))
	if err := q.err(); err != nil {
		h.fail(w, r, err)
		return
	}
	ts, err := h.cfg.Admin.NextFireTimes(r.Context(), id, n)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string][]string{"next": formatTimes(ts)})
}

func (h *Handler) cronNext(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r, "expr", "tz", "from", "n")
	expr, tz := q.str("expr"), q.str("tz")
	if expr == "" {
		q.add("expr", "is required")
	}
	if tz == "" {
		tz = "UTC"
	}
	from := h.cfg.Clock.Now()
	if s := q.str("from"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			q.add("from", "%q is not an RFC 3339 time", s)
		}
		from = t
	}
	n := int(q.int64("n", admin.DefaultPreviewCount, 1, admin.MaxPreviewCount))
	if err := q.err(); err != nil {
		h.fail(w, r, err)
		return
	}
	ts, err := admin.PreviewCron(expr, tz, from, n)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Expression string   `json:"expression"`
		TimeZone   string   `json:"timeZone"`
		Next       []string `json:"next"`
	}{expr, tz, formatTimes(ts)})
}

// ----- groups

func (h *Handler) createGroup(w http.ResponseWriter, r *http.Request) {
	var g xjob.Group
	if _, err := decodeBody(w, r, &g, false); err != nil {
		h.fail(w, r, err)
		return
	}
	out, err := h.cfg.Admin.CreateGroup(r.Context(), g)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, groupOut(out))
}

func (h *Handler) listGroups(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r, "appname", "title")
	if err := q.err(); err != nil {
		h.fail(w, r, err)
		return
	}
	gs, err := h.cfg.Admin.ListGroups(r.Context(), admin.ListGroupsParams{AppName: q.str("appname"), Title: q.str("title")})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	gs = filterGroups(principal(r), gs)
	for i := range gs {
		gs[i] = groupOut(gs[i])
	}
	writeJSON(w, http.StatusOK, items(gs, nil))
}

func (h *Handler) getGroup(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err == nil {
		var g xjob.Group
		if g, err = h.cfg.Admin.GetGroup(r.Context(), id); err == nil {
			writeJSON(w, http.StatusOK, groupOut(g))
			return
		}
	}
	h.fail(w, r, err)
}

func (h *Handler) updateGroup(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var g xjob.Group
	if _, err := decodeBody(w, r, &g, false); err != nil {
		h.fail(w, r, err)
		return
	}
	if g.ID != 0 && g.ID != id {
		h.fail(w, r, badRequest("id", "%d does not match the group id %d in the URL", g.ID, id))
		return
	}
	version := g.Version
	g.ID = id
	out, err := h.cfg.Admin.UpdateGroup(r.Context(), admin.UpdateGroupParams{Group: g, Version: version})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, groupOut(out))
}

func (h *Handler) deleteGroup(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err == nil {
		if err = h.cfg.Admin.DeleteGroup(r.Context(), id); err == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	h.fail(w, r, err)
}

func (h *Handler) groupExecutors(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err == nil {
		var es []admin.Executor
		if es, err = h.cfg.Admin.GroupExecutors(r.Context(), id); err == nil {
			writeJSON(w, http.StatusOK, items(es, nil))
			return
		}
	}
	h.fail(w, r, err)
}

// ----- logs

var logStatuses = map[string]xjob.LogStatus{
	"": xjob.LogAll, "all": xjob.LogAll,
	"success": xjob.LogSuccess, "fail": xjob.LogFail, "running": xjob.LogRunning,
}

func (h *Handler) listLogs(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r, "job", "group", "status", "from", "to", "cursor", "limit")
	p := admin.ListLogsParams{
		JobID:   q.int64("job", 0, 1, math.MaxInt64),
		GroupID: q.int64("group", 0, 1, math.MaxInt64),
		From:    q.int64("from", 0, 0, math.MaxInt64),
		To:      q.int64("to", 0, 0, math.MaxInt64),
		Cursor:  q.str("cursor"),
		Limit:   int(q.int64("limit", DefaultPageSize, 1, MaxPageSize)),
	}
	st, ok := logStatuses[q.str("status")]
	if !ok {
		q.add("status", "must be success, fail, running or all")
	}
	p.Status = st
	if err := q.err(); err != nil {
		h.fail(w, r, err)
		return
	}
	res, err := h.cfg.Admin.ListLogs(r.Context(), p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, items(res.Logs, &res.Next))
}

// clearLogs (DELETE /v1/logs) is xxl-job's /joblog/clearLog: ?mode= (admin.LogClearModes)
// within ?group= and optionally ?job=. A normal user must name one of its
// groups (groupQuery); only an admin may clear every group at once.
func (h *Handler) clearLogs(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r, "group", "job", "mode")
	p := admin.ClearLogsParams{
		GroupID: q.int64("group", 0, 1, math.MaxInt64),
		JobID:   q.int64("job", 0, 1, math.MaxInt64),
		Mode:    q.str("mode"),
	}
	if !slices.Contains(admin.LogClearModes, p.Mode) {
		q.add("mode", "must be one of %s", strings.Join(admin.LogClearModes, ", "))
	}
	if err := q.err(); err != nil {
		h.fail(w, r, err)
		return
	}
	n, err := h.cfg.Admin.ClearLogs(r.Context(), p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"deleted": n})
}

func (h *Handler) getLog(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err == nil {
		var l xjob.Log
		if l, err = h.cfg.Admin.GetLog(r.Context(), id); err == nil {
			writeJSON(w, http.StatusOK, l)
			return
		}
	}
	h.fail(w, r, err)
}

func (h *Handler) executorLog(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := newQuery(r, "from")
	from := int(q.int64("from", 1, 1, math.MaxInt32))
	if err := q.err(); err != nil {
		h.fail(w, r, err)
		return
	}
	res, err := h.cfg.Admin.ExecutorLog(r.Context(), id, from)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (h *Handler) killLog(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err == nil {
		if _, err = decodeBody(w, r, &struct{}{}, true); err == nil {
			var l xjob.Log
			if l, err = h.cfg.Admin.KillLog(r.Context(), id); err == nil {
				writeJSON(w, http.StatusOK, l)
				return
			}
		}
	}
	h.fail(w, r, err)
}

func (h *Handler) report(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r, "from", "to")
	if err := q.err(); err != nil {
		h.fail(w, r, err)
		return
	}
	var days []xjob.ReportDay
	var err error
	if p := principal(r); p.Admin() {
		days, err = h.cfg.Admin.Report(r.Context(), q.str("from"), q.str("to"))
	} else { // a normal user's report counts its groups' logs only
		days, err = h.cfg.Admin.GroupReport(r.Context(), p.User.GroupIDs, q.str("from"), q.str("to"))
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, items(days, nil))
}
