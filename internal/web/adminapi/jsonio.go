package adminapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/admin"
	"github.com/xjobdev/xjob/internal/strictjson"
	"github.com/xjobdev/xjob/internal/web/auth"
)

// apiError is the body of every admin API error.
type apiError struct {
	Error    string              `json:"error"`
	Problems []xjob.FieldProblem `json:"problems,omitempty"`
}

// httpError is a request rejected before the service is called.
type httpError struct {
	status   int
	msg      string
	problems []xjob.FieldProblem
}

func (e *httpError) Error() string { return e.msg }

func badRequest(field, format string, args ...any) *httpError {
	msg := fmt.Sprintf(format, args...)
	return &httpError{status: http.StatusBadRequest, msg: field + ": " + msg,
		problems: []xjob.FieldProblem{{Field: field, Message: msg}}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"response could not be encoded"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, msg string, problems []xjob.FieldProblem) {
	writeJSON(w, status, apiError{Error: msg, Problems: problems})
}

// fail answers err with its status: request errors as built, then the
// service's error classes; anything else is a 500 whose detail is logged,
// not shown.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg, problems := h.errStatus(r, err)
	writeError(w, status, msg, problems)
}

// errStatus classes err as fail answers it (also used for the per-item
// results of bulk requests).
func (h *Handler) errStatus(r *http.Request, err error) (int, string, []xjob.FieldProblem) {
	var he *httpError
	var ve *xjob.ValidationError
	switch {
	case errors.As(err, &he):
		return he.status, he.msg, he.problems
	case errors.As(err, &ve):
		return http.StatusBadRequest, ve.Error(), ve.Problems
	case errors.Is(err, xjob.ErrNotFound):
		return http.StatusNotFound, err.Error(), nil
	case errors.Is(err, xjob.ErrConflict):
		return http.StatusConflict, err.Error(), nil
	case errors.Is(err, admin.ErrExecutor):
		return http.StatusBadGateway, err.Error(), nil
	case errors.Is(err, auth.ErrForbidden):
		return http.StatusForbidden, err.Error(), nil
	case errors.Is(err, auth.ErrTooManyAttempts):
		return http.StatusTooManyRequests, err.Error(), nil
	case errors.Is(err, auth.ErrBusy):
		return http.StatusServiceUnavailable, err.Error(), nil
	}
	h.cfg.Logger.LogAttrs(r.Context(), slog.LevelError, "admin api request failed",
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	return http.StatusInternalServerError, "internal error", nil
}

// decodeBody decodes one JSON object from the request body into dst,
// strictly: application/json only (415), at most MaxBodyBytes (413), no
// unknown, wrongly cased or repeated fields, no wrong types, nothing after
// the object (400). With
// allowEmpty an empty body leaves dst as it is and reports false.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any, allowEmpty bool) (bool, error) {
	return decodeBodyMax(w, r, dst, allowEmpty, MaxBodyBytes)
}

// decodeBodyMax is decodeBody with a body limit of its own.
func decodeBodyMax(w http.ResponseWriter, r *http.Request, dst any, allowEmpty bool, limit int64) (bool, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return false, &httpError{status: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("request body is larger than %d bytes", limit)}
	case err != nil:
		return false, &httpError{status: http.StatusBadRequest, msg: "request body could not be read"}
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 && allowEmpty {
		return false, nil
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return false, &httpError{status: http.StatusUnsupportedMediaType, msg: "request body must be application/json"}
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return false, &httpError{status: http.StatusBadRequest, msg: "request body must be a JSON object"}
	}
	// Field names match exactly and a key may appear once (encoding/json
	// alone folds case and keeps the last duplicate).
	if err := strictjson.Check(trimmed, reflect.TypeOf(dst), strictjson.Options{DisallowUnknown: true}); err != nil {
		return false, &httpError{status: http.StatusBadRequest, msg: jsonMessage(err)}
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return false, &httpError{status: http.StatusBadRequest, msg: jsonMessage(err)}
	}
	if err := dec.Decode(&json.RawMessage{}); !errors.Is(err, io.EOF) {
		return false, &httpError{status: http.StatusBadRequest, msg: "request body must hold exactly one JSON object"}
	}
	return true, nil
}

// jsonMessage words a decoding error for a person.
func jsonMessage(err error) string {
	var strict *strictjson.Error
	if errors.As(err, &strict) {
		return strict.Error()
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: unexpected end of body"
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %q: JSON %s cannot be a %s", typ.Field, typ.Value, typ.Type)
		}
		return fmt.Sprintf("JSON %s cannot be a %s", typ.Value, typ.Type)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	default:
		return "invalid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
	}
}

// query reads query parameters, rejecting unknown and repeated ones and
// collecting every problem.
type query struct {
	v        url.Values
	problems []xjob.FieldProblem
}

func newQuery(r *http.Request, known ...string) *query {
	q := &query{v: r.URL.Query()}
	for name, vals := range q.v {
		switch {
		case !contains(known, name):
			q.add(name, "unknown query parameter")
		case len(vals) > 1:
			q.add(name, "given more than once")
		}
	}
	return q
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (q *query) add(field, format string, args ...any) {
	q.problems = append(q.problems, xjob.FieldProblem{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (q *query) str(name string) string { return strings.TrimSpace(q.v.Get(name)) }

// int64 parses an optional integer in [minV, maxV]; def when absent.
func (q *query) int64(name string, def, minV, maxV int64) int64 {
	s := q.str(name)
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < minV || n > maxV {
		q.add(name, "must be an integer between %d and %d", minV, maxV)
		return def
	}
	return n
}

// bool parses an optional flag: true/1 or false/0 (absent: false).
func (q *query) bool(name string) bool {
	switch q.str(name) {
	case "", "false", "0":
		return false
	case "true", "1":
		return true
	}
	q.add(name, "must be true or false")
	return false
}

func (q *query) err() error {
	if len(q.problems) == 0 {
		return nil
	}
	return &xjob.ValidationError{Problems: q.problems}
}

// pathID parses the {id} path segment.
func pathID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, badRequest("id", "%q is not an id", r.PathValue("id"))
	}
	return id, nil
}
