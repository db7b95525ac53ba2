// Package exechttp is the HTTP side of an xxl-job executor that the Go
// SDK's two servers share: the executor's own listener (pkg/executor) and
// its Lambda function URL adapter (pkg/executor/lambdaexec). It is not
// API: users reach it only through those packages.
package exechttp

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/xjobdev/xjob/pkg/protocol"
)

// CrossSite reports a request that a browser sent: admins (xxl-job's Java
// client, xjob's) never send Origin or Sec-Fetch-* headers, and always send
// JSON. A web page can make a browser POST text/plain, a form or multipart
// to any address without a preflight, so those content types are refused
// too: they are how a page the operator visits reaches an executor on the
// internal network.
func CrossSite(r *http.Request) bool { return CrossSiteHeaders(r.Header.Get) }

// CrossSiteHeaders is CrossSite over a header lookup (get returns "" for
// a missing header), for requests that are not an *http.Request (a Lambda
// function URL event).
func CrossSiteHeaders(get func(name string) string) bool {
	if get("Origin") != "" || get("Sec-Fetch-Site") != "" || get("Sec-Fetch-Mode") != "" {
		return true
	}
	ct := strings.ToLower(strings.TrimSpace(get("Content-Type")))
	for _, simple := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data"} {
		if strings.HasPrefix(ct, simple) {
			return true
		}
	}
	return false
}

// ContentType is what xxl-job's executor sends with every reply.
const ContentType = "text/html;charset=UTF-8"

// EncodeReturnT is the reply body for rt: {"code":200} for a plain success.
func EncodeReturnT(rt protocol.ReturnT) []byte {
	b, err := json.Marshal(rt)
	if err != nil { // only a malformed Content could cause this
		b, _ = json.Marshal(protocol.Fail("encode reply: " + err.Error()))
	}
	return b
}

// WriteReturnT writes rt as an xxl-job executor reply.
func WriteReturnT(w http.ResponseWriter, rt protocol.ReturnT) {
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(EncodeReturnT(rt))
}
