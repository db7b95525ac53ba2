package auth

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/xjobdev/xjob/internal/web/clientip"
)

// Audit lines: one slog line per authentication failure and per admin
// write, message "audit", so they can be filtered out of the rest. They say
// who did what to which id from where, never a secret (no token, password,
// cookie or request body).

// Who names p in audit lines: "admin-token" or "user:NAME".
func (p Principal) Who() string {
	if p.Token {
		return "admin-token"
	}
	if p.User.Username != "" {
		return "user:" + p.User.Username
	}
	return "anonymous"
}

// AuditAuthFailure logs a refused credential: kind is "admin-token",
// "session", "login" or "executor-token"; reason says why (never the
// credential itself; for a login, the username tried is kept).
func AuditAuthFailure(ctx context.Context, log *slog.Logger, r *http.Request, kind, reason string, attrs ...slog.Attr) {
	base := []slog.Attr{slog.String("event", "auth_failed"), slog.String("kind", kind), slog.String("reason", reason),
		slog.String("method", r.Method), slog.String("path", r.URL.Path)}
	base = append(base, remoteAttrs(r)...)
	log.LogAttrs(ctx, slog.LevelWarn, "audit", append(base, attrs...)...)
}

// AuditWrite logs an admin write: who, the route (method and pattern),
// the id it names, and the HTTP status it was answered with.
func AuditWrite(ctx context.Context, log *slog.Logger, r *http.Request, p Principal, route, id string, status int) {
	attrs := []slog.Attr{slog.String("event", "admin_write"), slog.String("who", p.Who()),
		slog.String("route", route), slog.String("id", id), slog.Int("status", status)}
	log.LogAttrs(ctx, slog.LevelInfo, "audit", append(attrs, remoteAttrs(r)...)...)
}

// remoteAttrs say where r came from: remote, the client's address (read
// from X-Forwarded-For only when the peer is a trusted proxy, package
// clientip), and peer, the proxy's, when it differs.
func remoteAttrs(r *http.Request) []slog.Attr {
	client, peer := clientip.FromRequest(r), clientip.Peer(r)
	if client == peer {
		return []slog.Attr{slog.String("remote", client)}
	}
	return []slog.Attr{slog.String("remote", client), slog.String("peer", peer)}
}

// StatusRecorder remembers the status a handler answered with, for
// AuditWrite.
type StatusRecorder struct {
	http.ResponseWriter
	Status int
}

// WriteHeader records status and passes it on.
func (s *StatusRecorder) WriteHeader(status int) {
	if s.Status == 0 {
		s.Status = status
	}
	s.ResponseWriter.WriteHeader(status)
}

// Write records an implicit 200.
func (s *StatusRecorder) Write(b []byte) (int, error) {
	if s.Status == 0 {
		s.Status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *StatusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
