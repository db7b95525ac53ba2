// Package guard is what every request to the admin's HTTP front passes
// before any route sees it: a body cap chosen by route (so that no route,
// signed in or not, reads more than its own requests need, and no request
// without a credential reads more than Small whatever the route), the
// X-Content-Type-Options header on every reply, and a 400 for text that
// is not valid UTF-8 or holds a NUL character in the admin API and the
// console (query strings, JSON and form bodies).
//
// The caps live here, in one table, rather than in each handler, so that
// a route added later is capped without anyone remembering to, and one
// test can walk every route and check its cap.
package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Body caps, by what a route's requests hold.
const (
	// Small caps routes that anyone may reach without signing in (the
	// sign-in form, the language switch, health and metrics) and every
	// route not named below: a form of a few fields. It is also the cap
	// of every request that carries no credential (see Wrap).
	Small = 16 << 10
	// Registry caps /api/registry and /api/registryRemove: three short
	// strings.
	Registry = 4 << 10
	// Callback caps /api/callback: a batch of an executor's results.
	Callback = 4 << 20
	// Admin caps the admin API (/v1/…), the executor's declarations and
	// the console's signed-in forms (a GLUE source, a bulk edit).
	Admin = 1 << 20
	// Apply caps POST /v1/apply: a whole manifest, written as one unit
	// (an import's every job in one request), under the 6 MB a Lambda
	// request may carry.
	Apply = 5 << 20
)

// Limit is the body cap of a request with method to path.
func Limit(method, path string) int64 {
	path = strings.TrimPrefix(path, "/xxl-job-admin")
	switch {
	case path == "/api/callback":
		return Callback
	case path == "/api/registry" || path == "/api/registryRemove":
		return Registry
	case strings.HasPrefix(path, "/api/"):
		return Admin // /api/xjob/declare; unknown uris are refused unread
	case path == "/v1/apply" && method == http.MethodPost:
		return Apply
	case strings.HasPrefix(path, "/v1/"):
		return Admin
	case strings.HasPrefix(path, "/console/") && method == http.MethodPost &&
		path != "/console/login" && path != "/console/lang":
		return Admin
	}
	return Small
}

// Credentialed reports, from the request's headers alone (no body, no
// store), whether r carries a credential its route may accept: the admin
// token or a session cookie this installation signed. It must hold for
// every request the route's authentication accepts; it may hold for some
// it then refuses (a signed-out session), which is why it is only used to
// decide how much of a body is worth reading.
type Credentialed func(r *http.Request) bool

// Wrap returns next behind the guard. A request to a route whose cap is
// above Small (the admin API, the console's signed-in forms) without a
// credential gets Small and its body is left unread for the route to
// refuse, so an anonymous request costs at most Small of memory whatever
// the route: a body is never read before the credential that justifies
// its size is seen. The executor routes (/api/…) are the exception that
// keeps its caps: they check the access token before reading anything
// (package executorapi), and answer xxl-job's ReturnT.
func Wrap(next http.Handler, credentialed Credentialed) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		limit := Limit(r.Method, r.URL.Path)
		if limit > Small && !executorRoute(r.URL.Path) && (credentialed == nil || !credentialed(r)) {
			// Anonymous: the route answers 401 (or the sign-in page)
			// without reading the body; the cap stands in case it reads,
			// and the connection is not kept, so the server does not
			// drain the rest of the body either.
			if r.ContentLength != 0 {
				w.Header().Set("Connection", "close")
			}
			r.Body = http.MaxBytesReader(w, r.Body, Small)
			if checked(r.URL.Path) {
				if err := urlText(r); err != nil {
					refuse(w, r, http.StatusBadRequest, err.Error())
					return
				}
			}
			next.ServeHTTP(w, r)
			return
		}
		// The executor routes answer an oversized body with xxl-job's
		// ReturnT once their read hits the cap.
		if r.ContentLength > limit && !executorRoute(r.URL.Path) {
			refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", limit))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if checked(r.URL.Path) {
			if err := checkText(r); err != nil {
				status := http.StatusBadRequest
				var tooBig *http.MaxBytesError
				if errors.As(err, &tooBig) {
					status, err = http.StatusRequestEntityTooLarge, fmt.Errorf("request body is larger than %d bytes", limit)
				}
				refuse(w, r, status, err.Error())
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func executorRoute(path string) bool {
	return strings.HasPrefix(strings.TrimPrefix(path, "/xxl-job-admin"), "/api/")
}

// checked reports the paths whose text is checked: the admin API and the
// console. The executor routes keep xxl-job's replies (HTTP 200 with a
// ReturnT), and their bodies are decoded strictly there.
func checked(path string) bool {
	return strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/console/") || path == "/console"
}

var (
	errUTF8 = errors.New("request text is not valid UTF-8")
	errNUL  = errors.New("request text holds a NUL character")
)

// checkText refuses a path, query or body (JSON or form) that is not
// valid UTF-8 or holds NUL. A body it reads is put back for the route.
func checkText(r *http.Request) error {
	if err := urlText(r); err != nil {
		return err
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/json", "application/x-www-form-urlencoded":
	default:
		return nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if mt == "application/x-www-form-urlencoded" {
		return queryText(string(body))
	}
	return jsonText(body)
}

// urlText checks r's path and query string.
func urlText(r *http.Request) error {
	if err := text(r.URL.Path); err != nil {
		return err
	}
	return queryText(r.URL.RawQuery)
}

func text(s string) error {
	switch {
	case !utf8.ValidString(s):
		return errUTF8
	case strings.IndexByte(s, 0) >= 0:
		return errNUL
	}
	return nil
}

// queryText checks every name and value of a query string or form body
// after percent-decoding (a malformed one is the route's to refuse).
func queryText(raw string) error {
	if raw == "" {
		return nil
	}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return nil
	}
	for k, vs := range vals {
		if err := text(k); err != nil {
			return err
		}
		for _, v := range vs {
			if err := text(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonText checks a JSON body's bytes and its strings' escapes: invalid
// UTF-8 would be silently replaced by encoding/json, and \u0000 decodes
// to a NUL that no field should hold. A malformed body is the route's to
// refuse.
func jsonText(b []byte) error {
	if !utf8.Valid(b) {
		return errUTF8
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) && string(b[i+2:i+6]) == "0000" {
			return errNUL
		}
		i++ // skip the escaped character (so \\u0000 is text, not NUL)
	}
	return nil
}

// refuse answers a request the guard stops: JSON for the API, text for
// the console.
func refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if strings.HasPrefix(r.URL.Path, "/console") {
		http.Error(w, msg, status)
		return
	}
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
