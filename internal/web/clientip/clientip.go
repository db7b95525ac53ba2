// Package clientip tells which address a request came from, for the
// sign-in limits and the audit log. By default that is the connection's
// peer: X-Forwarded-For is written by whoever sends the request, so
// believing it from anyone would let a guesser name a fresh address on
// every try (and escape the limits), or name the victim's (and lock it
// out). Behind a reverse proxy every request has the proxy as its peer,
// so the operator lists the proxies (Resolver's trusted ranges): only
// when the peer is one of them is X-Forwarded-For read, from the right,
// and the first address that is not a trusted proxy is the client.
//
// The front wraps every request with Resolver.Wrap once; FromRequest
// then gives the address anywhere below without the trusted ranges.
package clientip

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Header is the header read from trusted proxies.
const Header = "X-Forwarded-For"

// maxHops bounds the entries of X-Forwarded-For read (a chain of proxies
// is a handful; the rest is noise a client added).
const maxHops = 32

// Resolver finds the client address of a request.
type Resolver struct {
	trusted []netip.Prefix
}

// New returns a Resolver that believes X-Forwarded-For only from peers in
// trusted. With none (the default) the peer is always the client.
func New(trusted []netip.Prefix) Resolver { return Resolver{trusted: trusted} }

func (res Resolver) isTrusted(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	for _, p := range res.trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Of returns r's client address: the peer's IP, or, when the peer is a
// trusted proxy, the rightmost address of X-Forwarded-For that is not a
// trusted proxy (every entry trusted: the leftmost). An entry that is not
// an IP address ends the walk at the last address known good, so a
// client cannot hide behind garbage.
func (res Resolver) Of(r *http.Request) string {
	peer := Peer(r)
	ip, err := netip.ParseAddr(peer)
	if err != nil || len(res.trusted) == 0 || !res.isTrusted(ip) {
		return peer
	}
	return res.walk(ip, r.Header.Values(Header)).String()
}

// walk goes through the X-Forwarded-For values from the right, starting
// at the trusted peer.
func (res Resolver) walk(client netip.Addr, values []string) netip.Addr {
	var hops []string
	for _, v := range values {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i, n := len(hops)-1, 0; i >= 0 && n < maxHops; i, n = i-1, n+1 {
		ip, ok := parseHop(hops[i])
		if !ok {
			break
		}
		client = ip
		if !res.isTrusted(ip) {
			break
		}
	}
	return client
}

// parseHop reads one X-Forwarded-For entry: an IP address, possibly with
// a port ("1.2.3.4:5678", "[2001:db8::1]:443"), as some proxies write.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if ip, err := netip.ParseAddr(s); err == nil {
		return ip.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if ip, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return ip.Unmap().WithZone(""), true
		}
	}
	return netip.Addr{}, false
}

type ctxKey struct{}

// Wrap stores every request's client address (Of) in its context, for
// FromRequest.
func (res Resolver) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, res.Of(r))))
	})
}

// FromRequest is the client address Wrap stored, else the peer's.
func FromRequest(r *http.Request) string {
	if a, ok := r.Context().Value(ctxKey{}).(string); ok {
		return a
	}
	return Peer(r)
}

// Peer is the IP of the connection's other end (RemoteAddr without its
// port).
func Peer(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
