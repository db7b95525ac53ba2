package pgstore

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// redactor keeps a DSN's password out of error texts. pgx's own errors
// mostly leave it out already — a connection error names user and
// database only — but a DSN it cannot parse is redacted "on a best-effort
// basis", and a connection error carries the whole configuration in a
// field that errors.As reaches. So every error that leaves the store
// passes through clean.
type redactor struct {
	secrets []string
}

// passwordKV finds password=… in a key=value DSN, quoted or not.
var passwordKV = regexp.MustCompile(`password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)

// newRedactor collects the password of dsn however it is written, before
// the DSN is parsed, so that even a parse error is cleaned.
func newRedactor(dsn string) redactor {
	var r redactor
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			r.add(pw)
		}
	}
	// A URL the url package refuses may still hold user:password@.
	if i := strings.Index(dsn, "://"); i >= 0 {
		rest := dsn[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
				r.add(pw)
			}
		}
	}
	for _, m := range passwordKV.FindAllStringSubmatch(dsn, -1) {
		v := m[1]
		r.add(v)
		if strings.HasPrefix(v, "'") && strings.HasSuffix(v, "'") && len(v) >= 2 {
			r.add(strings.ReplaceAll(v[1:len(v)-1], `\'`, `'`))
		}
	}
	if u, err := url.Parse(dsn); err == nil {
		for _, v := range u.Query()["password"] {
			r.add(v)
		}
	}
	return r
}

// add records a password, with the encodings a DSN may carry it in.
func (r *redactor) add(pw string) {
	if pw == "" {
		return
	}
	for _, s := range []string{pw, url.QueryEscape(pw), url.PathEscape(pw), url.UserPassword("u", pw).String()[2:]} {
		if s != "" && !containsString(r.secrets, s) {
			r.secrets = append(r.secrets, s)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// redacted is what stands for a password in an error.
const redacted = "xxxxx"

// clean returns err unchanged when it is no connection or configuration
// error and its text holds no password; otherwise an error whose text is
// err's with the password replaced, which unwraps only to what callers
// test for (a context error, the server's *pgconn.PgError), never to the
// configuration.
func (r redactor) clean(err error) error {
	if err == nil {
		return nil
	}
	var ce *pgconn.ConnectError
	var pe *pgconn.ParseConfigError
	isConn := errors.As(err, &ce) || errors.As(err, &pe)
	msg := err.Error()
	leaks := false
	for _, s := range r.secrets {
		if strings.Contains(msg, s) {
			leaks = true
			msg = strings.ReplaceAll(msg, s, redacted)
		}
	}
	if !isConn && !leaks {
		return err
	}
	out := &safeError{msg: msg}
	var pg *pgconn.PgError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		out.cause = context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		out.cause = context.Canceled
	case errors.As(err, &pg):
		out.cause = pg
	}
	return out
}

// safeError is an error text with the password taken out.
type safeError struct {
	msg   string
	cause error
}

func (e *safeError) Error() string { return e.msg }
func (e *safeError) Unwrap() error { return e.cause }
