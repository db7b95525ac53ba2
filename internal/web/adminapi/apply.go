package adminapi

import (
	"net/http"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/web/guard"
)

// MaxApplyBodyBytes bounds a manifest: one apply is written as one unit,
// so a whole import travels in one request (guard.Apply).
const MaxApplyBodyBytes = guard.Apply

// apply is POST /v1/apply?prune=&dryRun=&overwrite=&keepStarted=&origin=: the body is a manifest; the
// reply the plan, as far as it was carried out. A manifest with any
// problem is a 400 naming each one, and nothing is written.
func (h *Handler) apply(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r, "prune", "dryRun", "overwrite", "keepStarted", "origin")
	p := admin.ApplyParams{Prune: q.bool("prune"), DryRun: q.bool("dryRun"), Overwrite: q.bool("overwrite"),
		KeepStarted: q.bool("keepStarted"), Origin: r.URL.Query().Get("origin")}
	if err := q.err(); err != nil {
		h.fail(w, r, err)
		return
	}
	if _, err := decodeBodyMax(w, r, &p.Manifest, false, MaxApplyBodyBytes); err != nil {
		h.fail(w, r, err)
		return
	}
	res, err := h.cfg.Admin.Apply(r.Context(), p)
	if err != nil && res.Plan == nil {
		h.fail(w, r, err)
		return
	}
	if err != nil {
		// Stopped mid-way: the plan says what was done; the status is the
		// failure's.
		status, msg, _ := h.errStatus(r, err)
		writeJSON(w, status, struct {
			apiError
			xjob.ApplyResult
		}{apiError{Error: msg}, res})
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// importHistory is POST /v1/import/history: trigger logs and report days
// of another scheduler (admins only; see admin.ImportHistory).
func (h *Handler) importHistory(w http.ResponseWriter, r *http.Request) {
	var p admin.HistoryParams
	if _, err := decodeBody(w, r, &p, false); err != nil {
		h.fail(w, r, err)
		return
	}
	res, err := h.cfg.Admin.ImportHistory(r.Context(), p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// export is GET /v1/export: every group and job as a manifest.
func (h *Handler) export(w http.ResponseWriter, r *http.Request) {
	if err := newQuery(r).err(); err != nil {
		h.fail(w, r, err)
		return
	}
	m, err := h.cfg.Admin.Export(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, m)
}

// bulkRequest is the body of POST /v1/bulk/jobs.
type bulkRequest struct {
	Action string  `json:"action"`
	IDs    []int64 `json:"ids"`
}

// bulkItem is one job's outcome in a bulk reply: status is what the
// single-job request would have answered.
type bulkItem struct {
	ID     int64  `json:"id"`
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
}

// bulkJobs is POST /v1/bulk/jobs {"action":"start|stop|delete","ids":[…]}:
// each job is acted on independently and the reply lists every outcome
// (200 even if some failed; a bad action or id list is a 400 and nothing
// is done).
func (h *Handler) bulkJobs(w http.ResponseWriter, r *http.Request) {
	var req bulkRequest
	if _, err := decodeBody(w, r, &req, false); err != nil {
		h.fail(w, r, err)
		return
	}
	errs, err := h.cfg.Admin.BulkJobs(r.Context(), req.Action, req.IDs)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]bulkItem, len(errs))
	for i, e := range errs {
		out[i] = bulkItem{ID: req.IDs[i], Status: http.StatusOK}
		if e != nil {
			out[i].Status, out[i].Error, _ = h.errStatus(r, e)
		}
	}
	writeJSON(w, http.StatusOK, items(out, nil))
}
