// Package executorapi serves the xxl-job admin routes executors call with
// their access token: heartbeats (/api/registry, /api/registryRemove) and
// results (/api/callback), also under /xxl-job-admin, as xxl-job's
// JobApiController does (method check, then token, then the uri; always
// HTTP 200 with a ReturnT).
//
// It is its own package so that the Lambda functions that serve only
// these routes (registry, callback) link none of the human-facing side:
// no admin service, console, password hashing or templates. Package
// adminapi mounts the same Handler for local mode and the web function.
package executorapi

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/scheduler/callback"
	"github.com/xjobdev/xjob/internal/scheduler/registry"
	"github.com/xjobdev/xjob/internal/strictjson"
	"github.com/xjobdev/xjob/internal/web/clientip"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// Registrar records executor heartbeats; *registry.Service is the
// implementation. A rejected heartbeat must match registry.ErrIllegalArgument.
type Registrar interface {
	Register(ctx context.Context, p protocol.RegistryParam) error
	Remove(ctx context.Context, p protocol.RegistryParam) error
}

// Callbacker records executor results; *callback.Service is the
// implementation. It returns one error per item.
type Callbacker interface {
	Callback(ctx context.Context, items []protocol.HandleCallbackParam) []error
}

var (
	_ Registrar  = (*registry.Service)(nil)
	_ Callbacker = (*callback.Service)(nil)
)

// Body limits.
const (
	// MaxRegistryBodyBytes caps /api/registry and /api/registryRemove: a
	// registration is three short strings (well under 1 KiB).
	MaxRegistryBodyBytes = 4 << 10
	// MaxCallbackBodyBytes caps /api/callback. A batch drains what an
	// executor has queued, so it gets more room, but a bounded one: the
	// body is held in memory while it is decoded, so the cap times the
	// concurrent requests bounds the memory an executor-token holder can
	// take. 4 MiB holds thousands of results (xxl-job's own callback thread
	// sends what queued up since its last pass; messages are usually short).
	MaxCallbackBodyBytes = 4 << 20
)

// Replies of xxl-job's JobApiController, verbatim.
const (
	MsgMethodNotSupported = "invalid request, HttpMethod not support."
	msgURIEmpty           = "invalid request, uri-mapping empty."
)

// Config wires a Handler. AccessToken is required, and at least one of
// Registry and Callback: a uri whose service is nil is answered as an
// unknown uri, so the callback function cannot record heartbeats.
type Config struct {
	Registry Registrar
	Callback Callbacker
	// AccessToken is the xxl-job access token executors send; Tokens, when
	// set, is consulted on each request instead (a rotation: every token
	// it returns is accepted). Unlike xxl-job, the routes never run open.
	AccessToken string
	Tokens      func() []string
	Logger      *slog.Logger
}

// Handler serves the executor routes. It is safe for concurrent use.
type Handler struct {
	cfg    Config
	tokens func() []string
}

// New validates cfg and builds the Handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Registry == nil && cfg.Callback == nil {
		return nil, errors.New("executorapi config: missing Registry and Callback")
	}
	tokens := cfg.Tokens
	if tokens == nil {
		tok := strings.TrimSpace(cfg.AccessToken)
		if tok == "" {
			return nil, errors.New("executorapi config: missing AccessToken")
		}
		tokens = func() []string { return []string{tok} }
	}
	cfg.Logger = fallback.Logger(cfg.Logger)
	return &Handler{cfg: cfg, tokens: tokens}, nil
}

// Authorized reports whether r carries an accepted access token, logging
// an audit line when it does not.
func (h *Handler) Authorized(r *http.Request) bool {
	got := []byte(r.Header.Get(protocol.AccessTokenHeader))
	ok := 0
	for _, t := range h.tokens() {
		if t != "" {
			ok |= subtle.ConstantTimeCompare(got, []byte(t))
		}
	}
	if ok == 1 {
		return true
	}
	reason := "wrong access token"
	if len(got) == 0 {
		reason = "no access token"
	}
	// The audit record of package auth (kept in step with it by hand: auth
	// links password hashing, which these functions must not).
	attrs := []slog.Attr{slog.String("event", "auth_failed"),
		slog.String("kind", "executor-token"), slog.String("reason", reason),
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("remote", clientip.FromRequest(r))}
	if peer := clientip.Peer(r); peer != clientip.FromRequest(r) {
		attrs = append(attrs, slog.String("peer", peer))
	}
	h.cfg.Logger.LogAttrs(r.Context(), slog.LevelWarn, "audit", attrs...)
	return false
}

// ServeHTTP serves POST {,/xxl-job-admin}/api/{uri}; uri is the request's
// path value "uri" when the pattern set it, else the path after /api/.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	uri := r.PathValue("uri")
	if uri == "" {
		p := strings.TrimPrefix(r.URL.Path, "/xxl-job-admin")
		uri = strings.TrimPrefix(p, "/api/")
		if uri == p {
			uri = ""
		}
	}
	switch {
	case r.Method != http.MethodPost:
		WriteReturn(w, protocol.Fail(MsgMethodNotSupported))
		return
	case uri == "":
		WriteReturn(w, protocol.Fail(msgURIEmpty))
		return
	case !h.Authorized(r):
		WriteReturn(w, protocol.Fail(protocol.MsgWrongToken))
		return
	}
	switch {
	case (uri == "registry" || uri == "registryRemove") && h.cfg.Registry != nil:
		WriteReturn(w, h.registry(w, r, uri == "registry"))
	case uri == "callback" && h.cfg.Callback != nil:
		WriteReturn(w, h.callback(w, r))
	default:
		WriteReturn(w, protocol.Fail("invalid request, uri-mapping("+uri+") not found."))
	}
}

// readBody reads at most limit bytes of the body; a longer body is
// refused without being read further.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

func (h *Handler) registry(w http.ResponseWriter, r *http.Request, register bool) protocol.ReturnT {
	body, err := readBody(w, r, MaxRegistryBodyBytes)
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
	body, err := readBody(w, r, MaxCallbackBodyBytes)
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
	if plainCallbacks(body) {
		return nil
	}
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

// WriteReturn writes a ReturnT with HTTP 200, as xxl-job's admin does.
func WriteReturn(w http.ResponseWriter, rt protocol.ReturnT) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	b, _ := json.Marshal(rt) // a ReturnT always marshals
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
