package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"

	"github.com/xjobdev/xjob"
)

// session is what a signed session cookie says: who, which password
// (stamp), which sign-in (id, the CSRF seed) and until when.
type session struct {
	Username string
	Stamp    string
	ID       string
	Expires  int64 // Unix ms
}

// signer signs and checks session tokens and CSRF tokens with one key.
// Tokens carry everything a request needs, so any process holding the key
// (each Lambda environment) verifies them without a session table.
type signer struct{ key []byte }

var b64url = base64.RawURLEncoding

func (s signer) mac(purpose, msg string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// stamp names a user's current password: a session whose stamp differs
// (the password changed since it was issued) is refused.
func (s signer) stamp(u xjob.User) string {
	return b64url.EncodeToString(s.mac("stamp", u.Username+"\x00"+u.PasswordHash)[:12])
}

func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return b64url.EncodeToString(b)
}

// encode returns the token: base64url(payload) "." base64url(mac).
func (s signer) encode(ss session) string {
	payload := ss.Username + "|" + ss.Stamp + "|" + ss.ID + "|" + strconv.FormatInt(ss.Expires, 10)
	return b64url.EncodeToString([]byte(payload)) + "." + b64url.EncodeToString(s.mac("session", payload))
}

var errToken = errors.New("invalid session token")

// maxTokenLen bounds what decode looks at.
const maxTokenLen = 512

// decode checks a token's signature and expiry (now, Unix ms).
func (s signer) decode(tok string, now int64) (session, error) {
	if len(tok) > maxTokenLen {
		return session{}, errToken
	}
	p64, m64, ok := strings.Cut(tok, ".")
	if !ok {
		return session{}, errToken
	}
	payload, err := b64url.DecodeString(p64)
	if err != nil {
		return session{}, errToken
	}
	mac, err := b64url.DecodeString(m64)
	if err != nil || !hmac.Equal(mac, s.mac("session", string(payload))) {
		return session{}, errToken
	}
	f := strings.Split(string(payload), "|")
	if len(f) != 4 {
		return session{}, errToken
	}
	exp, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil || exp <= now || f[0] == "" || f[2] == "" {
		return session{}, errToken
	}
	ss := session{Username: f[0], Stamp: f[1], ID: f[2], Expires: exp}
	// One spelling per session: base64 decoding skips line breaks and
	// ignores trailing bits, and the expiry parses "+5" and "05", so only
	// a token that re-encodes to itself is taken (the MAC alone would let
	// several spellings of one cookie through).
	if s.encode(ss) != tok {
		return session{}, errToken
	}
	return ss, nil
}

// csrf is the CSRF token of a session: forms and htmx requests send it
// back, and a cross-site page cannot read it.
func (s signer) csrf(sessionID string) string {
	return b64url.EncodeToString(s.mac("csrf", sessionID))
}

func (s signer) checkCSRF(sessionID, tok string) bool {
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.csrf(sessionID))) == 1
}

// DeriveKey turns a secret (the admin token) into the session signing
// key, so that every process that knows the admin token — each Lambda
// environment, each restart of xjob local — signs alike, and rotating the
// admin token signs everyone out.
func DeriveKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("xjob console session key v1"))
	return m.Sum(nil)
}

// KnownCookie names the cookie that marks a browser a user signed in from
// (set on /console/login only): sign-ins from it skip the per-username
// lane of the limits, so others' failures never slow its owner down.
const KnownCookie = "xjob_known"

// knownPath is the only path the browser sends KnownCookie to.
const knownPath = "/console/login"

// knownToken is base64url(username "|" expiry) "." base64url(mac): it
// proves this installation saw the browser sign in as username.
func (s signer) knownToken(username string, expires int64) string {
	payload := username + "|" + strconv.FormatInt(expires, 10)
	return b64url.EncodeToString([]byte(payload)) + "." + b64url.EncodeToString(s.mac("known", payload))
}

// knownFor reports whether tok is a known-browser token for username that
// has not expired.
func (s signer) knownFor(tok, username string, now int64) bool {
	if len(tok) > maxTokenLen {
		return false
	}
	p64, m64, ok := strings.Cut(tok, ".")
	if !ok {
		return false
	}
	payload, err := b64url.DecodeString(p64)
	if err != nil {
		return false
	}
	mac, err := b64url.DecodeString(m64)
	if err != nil || !hmac.Equal(mac, s.mac("known", string(payload))) {
		return false
	}
	name, exp, ok := strings.Cut(string(payload), "|")
	if !ok || subtle.ConstantTimeCompare([]byte(name), []byte(username)) != 1 {
		return false
	}
	e, err := strconv.ParseInt(exp, 10, 64)
	return err == nil && e > now
}
