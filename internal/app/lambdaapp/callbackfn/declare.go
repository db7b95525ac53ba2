package callbackfn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/xjobdev/xjob/internal/web/executorapi"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// Declarations are the web function's (they create jobs: the admin
// side, which this function does not link), but the xjob SDK sends them
// to its one admin address, this function's URL, and follows no
// redirect (it would carry the access token wherever a Location points).
// So the function forwards them itself, to the one address the
// deployment configures (Config.WebURL, the HTTP API), never to one a
// request names; only a request with a valid access token is forwarded,
// so an anonymous flood costs no web invocation.
const (
	// maxDeclareBytes caps a declaration's body, as the web function's
	// guard does (guard.Admin).
	maxDeclareBytes = 1 << 20
	// declareTimeout bounds the forwarded request, within the function's
	// 15 s timeout.
	declareTimeout = 10 * time.Second
)

// declarer forwards POST {,/xxl-job-admin}/api/xjob/declare to web.
type declarer struct {
	auth   *executorapi.Handler // its access-token check
	web    string               // the web function's base address
	client *http.Client
}

func newDeclarer(auth *executorapi.Handler, web string) *declarer {
	return &declarer{auth: auth, web: web, client: &http.Client{Timeout: declareTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// ServeHTTP answers as the web function's declare route does when it
// refuses a request itself (405, 401 with a ReturnT), and otherwise
// relays web's reply: status, content type and body.
func (d *declarer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeReturn(w, http.StatusMethodNotAllowed, protocol.Fail(executorapi.MsgMethodNotSupported))
		return
	}
	if !d.auth.Authorized(r) {
		writeReturn(w, http.StatusUnauthorized, protocol.Fail(protocol.MsgWrongToken))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxDeclareBytes))
	if err != nil {
		writeReturn(w, http.StatusRequestEntityTooLarge, protocol.Fail(fmt.Sprintf("request body is larger than %d bytes", maxDeclareBytes)))
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, d.web+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		writeReturn(w, http.StatusBadGateway, protocol.Fail("declarations cannot be forwarded"))
		return
	}
	for _, h := range []string{"Content-Type", protocol.AccessTokenHeader} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	resp, err := d.client.Do(req)
	if err != nil {
		// The SDK retries a 5xx after its next beat.
		writeReturn(w, http.StatusBadGateway, protocol.Fail("the admin API did not answer the declarations"))
		return
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxDeclareBytes))
	if err != nil {
		writeReturn(w, http.StatusBadGateway, protocol.Fail("the admin API's reply to the declarations was cut"))
		return
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

func writeReturn(w http.ResponseWriter, status int, rt protocol.ReturnT) {
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(rt) // a ReturnT always marshals
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
