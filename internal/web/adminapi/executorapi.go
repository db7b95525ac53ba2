package adminapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/web/executorapi"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// executorAPI serves {,/xxl-job-admin}/api/{uri}: xjob's declare route
// here, xxl-job's executor routes in package executorapi (which the
// registry and callback functions serve on their own).
func (h *Handler) executorAPI(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("uri") == DeclarePath {
		h.declare(w, r)
		return
	}
	h.exec.ServeHTTP(w, r)
}

// DeclarePath is the uri under /api of xjob's own executor endpoint, where
// an executor declares the default jobs of its handlers. It is not an
// xxl-job uri: an xxl-job admin answers it 404 (its /api/{uri} does not
// match a slash), which the Go SDK takes as "not supported here".
const DeclarePath = "xjob/declare"

// declare serves POST /api/xjob/declare. Unlike xxl-job's uris it answers
// with HTTP statuses (the SDK is its only client): 405, 401 for a wrong
// access token, 400/413/415 for a body that is not a strict DeclareRequest
// or declares an invalid job (nothing written), 409 when no group has the
// app name; 200 with a ReturnT whose content is the DeclareResult.
func (h *Handler) declare(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, protocol.Fail(executorapi.MsgMethodNotSupported))
		return
	}
	if !h.exec.Authorized(r) {
		writeJSON(w, http.StatusUnauthorized, protocol.Fail(protocol.MsgWrongToken))
		return
	}
	var req xjob.DeclareRequest
	if _, err := decodeBody(w, r, &req, false); err != nil {
		h.declareFail(w, r, err)
		return
	}
	res, err := h.cfg.Admin.DeclareJobs(r.Context(), req)
	if err != nil {
		h.declareFail(w, r, err)
		return
	}
	content, err := json.Marshal(res)
	if err != nil {
		h.declareFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.ReturnT{Code: protocol.SuccessCode, Content: content})
}

func (h *Handler) declareFail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg, problems := h.errStatus(r, err)
	if errors.Is(err, admin.ErrNoGroup) {
		status, msg = http.StatusConflict, err.Error()
	}
	if len(problems) > 0 {
		b, _ := json.Marshal(problems)
		writeJSON(w, status, protocol.ReturnT{Code: protocol.FailCode, Msg: msg, Content: b})
		return
	}
	writeJSON(w, status, protocol.ReturnT{Code: protocol.FailCode, Msg: msg})
}
