package adminapi

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/internal/strictjson"
	"github.com/xjobdev/xjob/internal/web/auth"
	"github.com/xjobdev/xjob/protocol"
)

// Replies of xxl-job's JobApiController, verbatim.
const (
	msgMethodNotSupported = "invalid request, HttpMethod not support."
	msgURIEmpty           = "invalid request, uri-mapping empty."
)

// executorAPI serves POST /api/{uri} as xxl-job's JobApiController does:
// method check, then token, then the uri; always HTTP 200 with a ReturnT.
// Executors of xxl-job 3.5 also send XXL-JOB-APPNAME; it is not needed to
// authenticate them here (the token is global), and their bodies are read
// by the same decoders.
func (h *Handler) executorAPI(w http.ResponseWriter, r *http.Request) {
	uri := r.PathValue("uri")
	if uri == DeclarePath {
		h.declare(w, r)
		return
	}
	switch {
	case r.Method != http.MethodPost:
		writeReturn(w, protocol.Fail(msgMethodNotSupported))
		return
	case uri == "":
		writeReturn(w, protocol.Fail(msgURIEmpty))
		return
	case subtle.ConstantTimeCompare([]byte(r.Header.Get(protocol.AccessTokenHeader)), h.accessToken) != 1:
		reason := "wrong access token"
		if r.Header.Get(protocol.AccessTokenHeader) == "" {
			reason = "no access token"
		}
		auth.AuditAuthFailure(r.Context(), h.cfg.Logger, r, "executor-token", reason)
		writeReturn(w, protocol.Fail(protocol.MsgWrongToken))
		return
	}
	switch uri {
	case "registry", "registryRemove":
		writeReturn(w, h.registry(w, r, uri == "registry"))
	case "callback":
		writeReturn(w, h.callback(w, r))
	default:
		writeReturn(w, protocol.Fail("invalid request, uri-mapping("+uri+") not found."))
	}
}

// readExecutorBody reads at most limit bytes of the body; a longer body
// is refused without being read further.
func readExecutorBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

func (h *Handler) registry(w http.ResponseWriter, r *http.Request, register bool) protocol.ReturnT {
	body, err := readExecutorBody(w, r, MaxRegistryBodyBytes)
	if err != nil {
		return protocol.Fail(protocol.MsgIllegalArgument)
	}
	var p protocol.RegistryParam
	// Unknown fields are tolerated (executor generations differ), wrongly
	// cased and repeated ones are not.
	if err := strictjson.Decode(body, &p, strictjson.Options{}); err != nil {
		return protocol.Fail(protocol.MsgIllegalArgument)
	}
	if register {
		err = h.cfg.Registry.Register(r.Context(), p)
	} else {
		err = h.cfg.Registry.Remove(r.Context(), p)
	}
	switch {
	case err == nil:
		return protocol.OK()
	case errors.Is(err, registry.ErrIllegalArgument):
		return protocol.Fail(protocol.MsgIllegalArgument)
	default:
		h.cfg.Logger.LogAttrs(r.Context(), slog.LevelError, "executor registry not recorded",
			slog.String("registryKey", p.RegistryKey), slog.String("registryValue", p.RegistryValue),
			slog.String("error", err.Error()))
		return protocol.Fail("registry not recorded, try again later.")
	}
}

func (h *Handler) callback(w http.ResponseWriter, r *http.Request) protocol.ReturnT {
	body, err := readExecutorBody(w, r, MaxCallbackBodyBytes)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return protocol.Fail(fmt.Sprintf("invalid request, callback body larger than %d bytes; send smaller batches.", MaxCallbackBodyBytes))
	case err != nil:
		return protocol.Fail("invalid request, callback body unreadable.")
	}
	if err := checkCallbackKeys(body); err != nil {
		return protocol.Fail("invalid request, callback body: " + err.Error())
	}
	// Every generation's body: [item…] or 3.5's {"callbackList":[item…]},
	// items with handleCode or 2.2's executeResult, logDateTim or logDateTime.
	items, err := protocol.DecodeCallbacks(body)
	if err != nil {
		return protocol.Fail("invalid request, callback body is not a JSON array of HandleCallbackParam or a callbackList.")
	}
	for _, err := range h.cfg.Callback.Callback(r.Context(), items) {
		if err != nil && !rejectedItem(err) {
			// Not a verdict on the item but a failure to store it: let the
			// executor keep the batch and send it again.
			h.cfg.Logger.LogAttrs(r.Context(), slog.LevelError, "executor callback not recorded",
				slog.Int("items", len(items)), slog.String("error", err.Error()))
			return protocol.Fail("callback not recorded, try again later.")
		}
	}
	return protocol.OK()
}

// checkCallbackKeys refuses wrongly cased and repeated keys in either
// callback body shape (unknown ones are tolerated, as executors differ).
func checkCallbackKeys(body []byte) error {
	t := reflect.TypeFor[[]protocol.HandleCallbackParam]()
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '{' {
		t = reflect.TypeFor[struct {
			CallbackList []protocol.HandleCallbackParam `json:"callbackList"`
		}]()
	}
	var se *strictjson.Error
	if err := strictjson.Check(body, t, strictjson.Options{}); errors.As(err, &se) {
		return err
	}
	return nil // syntax errors are DecodeCallbacks' to report
}

// rejectedItem reports a per-item verdict that a resend would not change.
func rejectedItem(err error) bool {
	var ve *xjob.ValidationError
	return errors.Is(err, xjob.ErrNotFound) || errors.Is(err, xjob.ErrConflict) || errors.As(err, &ve)
}

// writeReturn writes a ReturnT with HTTP 200, as xxl-job's admin does.
func writeReturn(w http.ResponseWriter, rt protocol.ReturnT) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	b, _ := json.Marshal(rt) // a ReturnT always marshals
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
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
		writeJSON(w, http.StatusMethodNotAllowed, protocol.Fail(msgMethodNotSupported))
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(protocol.AccessTokenHeader)), h.accessToken) != 1 {
		reason := "wrong access token"
		if r.Header.Get(protocol.AccessTokenHeader) == "" {
			reason = "no access token"
		}
		auth.AuditAuthFailure(r.Context(), h.cfg.Logger, r, "executor-token", reason)
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
