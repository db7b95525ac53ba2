package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/web/clientip"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Errors of Authenticate and SignIn.
var (
	// ErrUnauthenticated: no valid admin token or session.
	ErrUnauthenticated = errors.New("not signed in")
	// ErrCSRF: a session request that changes state without its CSRF token,
	// or sent from another site.
	ErrCSRF = errors.New("missing or invalid CSRF token")
	// ErrBadCredentials: wrong username or password.
	ErrBadCredentials = errors.New("wrong username or password")
	// ErrTooManyAttempts: too many failed sign-ins (or password changes);
	// try again later.
	ErrTooManyAttempts = errors.New("too many failed attempts; try again later")
	// ErrBusy: too many sign-ins at once to check this one now.
	ErrBusy = errors.New("too many sign-ins at once; try again in a moment")
	// ErrForbidden: signed in, but not allowed.
	ErrForbidden = errors.New("forbidden")
)

// Names of the cookie and of the CSRF form field and header.
const (
	CookieName = "xjob_session"
	CSRFField  = "_csrf"
	CSRFHeader = "X-CSRF-Token"
)

// Defaults of Config.
const (
	DefaultSessionTTL      = 12 * time.Hour
	DefaultMaxFailures     = 5
	DefaultUserMaxFailures = 20
	DefaultFailWindow      = 15 * time.Minute
	DefaultSlowInterval    = 30 * time.Second
	DefaultKnownTTL        = 90 * 24 * time.Hour
	DefaultHashWait        = 3 * time.Second
	// maxFormBytes caps a form body read for its CSRF field.
	maxFormBytes = 1 << 20
	// minKeyLen is the shortest session key accepted (bytes).
	minKeyLen = 32
)

// Config wires a Service. Users, AdminToken and Key are required.
type Config struct {
	Users driver.UserStore
	// AdminToken is the superuser bearer token of the CLI and automation.
	AdminToken string
	// Key signs session and CSRF tokens (≥ 32 bytes; DeriveKey makes one
	// from the admin token).
	Key []byte
	// Params are the hash costs of new passwords (default DefaultParams).
	Params Params
	// SessionTTL is how long a sign-in lasts (default DefaultSessionTTL).
	SessionTTL time.Duration
	// Store keeps attempt counts and signed-out sessions, shared by every
	// process of the installation (see limiter.go). Nil keeps them in this
	// process's memory only.
	Store driver.AuthStore
	// MaxFailures attempts per username and client address within
	// FailWindow (default 5 in 15 min); UserMaxFailures attempts per
	// username from addresses that already failed for it (default 20),
	// past which that username takes one such attempt per SlowInterval
	// (default 30 s) — slowed, never locked — except from a browser that
	// signed in as it before (see limiter.go). The same MaxFailures bounds
	// guesses of the current password in ChangePassword.
	MaxFailures     int
	UserMaxFailures int
	FailWindow      time.Duration
	SlowInterval    time.Duration
	// KnownTTL is how long a browser is remembered as one the user signed
	// in from (default 90 days).
	KnownTTL time.Duration
	// HashSlots bounds concurrent password hashing (default GOMAXPROCS,
	// at most 4); HashWait is how long a sign-in waits for a slot before
	// ErrBusy (default 3 s).
	HashSlots int
	HashWait  time.Duration
	// Glue says who may create and edit GLUE jobs (default GlueAdmins).
	Glue  GluePolicy
	Clock clock.Clock
}

// Service authenticates requests (admin token or session cookie), signs
// people in and out, and manages users. It is safe for concurrent use.
type Service struct {
	cfg     Config
	sign    signer
	store   driver.AuthStore
	slots   hashSlots
	dummy   func() string // a hash to check unknown usernames against (equal timing)
	adminTk []byte
}

// New validates cfg and builds a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.Users == nil:
		return nil, errors.New("auth config: missing Users")
	case strings.TrimSpace(cfg.AdminToken) == "":
		return nil, errors.New("auth config: missing AdminToken")
	case len(cfg.Key) < minKeyLen:
		return nil, fmt.Errorf("auth config: Key must be at least %d bytes", minKeyLen)
	}
	if cfg.Params == (Params{}) {
		cfg.Params = DefaultParams
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.MaxFailures <= 0 {
		cfg.MaxFailures = DefaultMaxFailures
	}
	if cfg.UserMaxFailures <= 0 {
		cfg.UserMaxFailures = DefaultUserMaxFailures
	}
	if cfg.FailWindow <= 0 {
		cfg.FailWindow = DefaultFailWindow
	}
	if cfg.SlowInterval <= 0 {
		cfg.SlowInterval = DefaultSlowInterval
	}
	if cfg.KnownTTL <= 0 {
		cfg.KnownTTL = DefaultKnownTTL
	}
	if cfg.HashSlots <= 0 {
		cfg.HashSlots = min(runtime.GOMAXPROCS(0), 4)
	}
	if cfg.HashWait <= 0 {
		cfg.HashWait = DefaultHashWait
	}
	glue, err := ParseGluePolicy(string(cfg.Glue))
	if err != nil {
		return nil, fmt.Errorf("auth config: %w", err)
	}
	cfg.Glue = glue
	cfg.Clock = fallback.Clock(cfg.Clock)
	store := cfg.Store
	if store == nil {
		store = newMemStore()
	}
	s := &Service{cfg: cfg, sign: signer{key: cfg.Key}, store: store, slots: make(hashSlots, cfg.HashSlots),
		adminTk: []byte(strings.TrimSpace(cfg.AdminToken))} // compared with the trimmed header value
	// Built on first use: a Lambda function that never signs anyone in
	// does not pay for a hash at cold start.
	s.dummy = sync.OnceValue(func() string {
		h, _ := HashPassword(RandomPassword(), cfg.Params) // a generated password always passes the rules
		return h
	})
	return s, nil
}

// Principal is who a request acts as: the admin token (superuser) or a
// signed-in user.
type Principal struct {
	// Token is true for the admin token.
	Token bool
	// User is the signed-in user as stored now (roles and groups are read
	// on every request, so an admin's edit takes effect at once).
	User xjob.User
	// SessionID names the sign-in; CSRF tokens derive from it.
	SessionID string
}

// Admin reports whether p may do everything.
func (p Principal) Admin() bool { return p.Token || p.User.Role == xjob.RoleAdmin }

// CanGroup reports whether p may see and run group id's jobs.
func (p Principal) CanGroup(id int64) bool { return p.Admin() || slices.Contains(p.User.GroupIDs, id) }

// Name is the user name, or "admin-token".
func (p Principal) Name() string {
	if p.Token {
		return "admin-token"
	}
	return p.User.Username
}

type ctxKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal of ctx; ok is false when there is none.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok
}

// safeMethod reports a method that must not change state.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// Authenticate finds r's principal: an "Authorization: Bearer <admin
// token>" header, else the session cookie. A session request with an
// unsafe method must carry the CSRF token (form field or header) and must
// not come from another site.
func (s *Service) Authenticate(r *http.Request) (Principal, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		if s.bearer(h) {
			return Principal{Token: true}, nil
		}
		return Principal{}, ErrUnauthenticated
	}
	c, err := r.Cookie(CookieName)
	if err != nil {
		return Principal{}, ErrUnauthenticated
	}
	ss, err := s.sign.decode(c.Value, clock.Millis(s.cfg.Clock))
	if err != nil {
		return Principal{}, ErrUnauthenticated
	}
	u, err := s.cfg.Users.UserGet(r.Context(), ss.Username)
	if errors.Is(err, xjob.ErrNotFound) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, fmt.Errorf("auth: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(ss.Stamp), []byte(s.sign.stamp(u))) != 1 {
		return Principal{}, ErrUnauthenticated // the password changed since
	}
	revoked, err := s.store.SessionRevoked(r.Context(), ss.ID)
	if err != nil {
		return Principal{}, fmt.Errorf("auth: %w", err)
	}
	if revoked {
		return Principal{}, ErrUnauthenticated // signed out
	}
	p := Principal{User: u, SessionID: ss.ID}
	if !safeMethod(r.Method) {
		if err := s.checkCSRF(r, ss.ID); err != nil {
			return Principal{}, err
		}
	}
	return p, nil
}

// bearer reports whether an Authorization header value carries the admin
// token (constant-time compare of the trimmed values).
func (s *Service) bearer(h string) bool {
	scheme, tok, ok := strings.Cut(h, " ")
	return ok && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), s.adminTk) == 1
}

// Credentialed reports, from r's headers alone, whether r carries a
// credential Authenticate may accept: the admin token, or a session cookie
// this installation signed that has not expired. It reads neither the body
// nor the store (cheap enough for every request), and holds for every
// request Authenticate accepts; the front (package guard) reads no more
// than a small body of a request for which it does not hold, so an
// anonymous request costs little memory whatever the route.
func (s *Service) Credentialed(r *http.Request) bool {
	if h := r.Header.Get("Authorization"); h != "" {
		return s.bearer(h)
	}
	c, err := r.Cookie(CookieName)
	if err != nil {
		return false
	}
	_, err = s.sign.decode(c.Value, clock.Millis(s.cfg.Clock))
	return err == nil
}

// checkCSRF checks an unsafe session request: a cross-site request is
// refused outright (Sec-Fetch-Site, or an Origin naming another host),
// and the token must match the session's.
func (s *Service) checkCSRF(r *http.Request, sessionID string) error {
	if crossSite(r) {
		return ErrCSRF
	}
	tok := r.Header.Get(CSRFHeader)
	if tok == "" && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		r.Body = http.MaxBytesReader(nil, r.Body, maxFormBytes)
		tok = r.PostFormValue(CSRFField)
	}
	if !s.sign.checkCSRF(sessionID, tok) {
		return ErrCSRF
	}
	return nil
}

func crossSite(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return true
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		host := strings.TrimPrefix(strings.TrimPrefix(o, "https://"), "http://")
		return !strings.EqualFold(host, r.Host)
	}
	return false
}

// CSRFToken is the token forms of p's session must send.
func (s *Service) CSRFToken(p Principal) string {
	if p.SessionID == "" {
		return ""
	}
	return s.sign.csrf(p.SessionID)
}

// clientKey names r's client for rate limiting: its address, read from
// X-Forwarded-For only when the peer is a trusted proxy (package clientip).
func clientKey(r *http.Request) string { return clientip.FromRequest(r) }

// SignIn checks a username and password and, on success, sets the session
// cookie on w. The attempt is counted before the password is checked (see
// limiter.go): past the limits it answers ErrTooManyAttempts without
// hashing anything, and ErrBusy when no hash slot came free. A sign-in
// form from another site is refused (ErrCSRF).
func (s *Service) SignIn(w http.ResponseWriter, r *http.Request, username, password string) (Principal, error) {
	if crossSite(r) {
		return Principal{}, ErrCSRF
	}
	ctx := r.Context()
	name := username
	if !xjob.ValidUsername(name) {
		name = "\x00" // every invalid name counts as one: keys stay short
	}
	pairKey, userKey := "signin|"+name+"|"+clientKey(r), "signin-user|"+name
	if s.knownBrowser(r, name) {
		userKey = "" // signed in as name from here before: others' failures do not hold it back
	}
	if err := s.allow(ctx, pairKey, userKey, "signin-slow|"+name); err != nil {
		return Principal{}, err
	}
	u, err := s.cfg.Users.UserGet(ctx, username)
	known := err == nil && xjob.ValidUsername(username)
	if err != nil && !errors.Is(err, xjob.ErrNotFound) {
		return Principal{}, fmt.Errorf("auth sign-in: %w", err)
	}
	hash := u.PasswordHash
	if !known {
		hash = s.dummy() // same work as a known user
	}
	ok, err := s.checkWithLegacy(ctx, &u, hash, password, known)
	if err != nil {
		return Principal{}, err
	}
	if !ok || !known {
		return Principal{}, ErrBadCredentials
	}
	if err := s.store.AttemptReset(ctx, pairKey); err != nil {
		return Principal{}, fmt.Errorf("auth sign-in: %w", err)
	}
	now := s.cfg.Clock.Now()
	ss := session{Username: u.Username, Stamp: s.sign.stamp(u), ID: newSessionID(),
		Expires: now.Add(s.cfg.SessionTTL).UnixMilli()}
	http.SetCookie(w, s.cookie(r, s.sign.encode(ss), s.cfg.SessionTTL))
	http.SetCookie(w, s.knownCookie(r, u.Username, now))
	return Principal{User: u, SessionID: ss.ID}, nil
}

// allow counts one attempt under pairKey (a username and a client) and
// refuses it past MaxFailures: only that client is held back. Once that
// pair has attempts before this one in the window, the attempt is counted
// under userKey too (unless userKey is "": a known browser, or a password
// change), and past UserMaxFailures the username is under attack from
// several clients: such attempts then pass one per SlowInterval
// (slowKey), the rest are refused until the next interval. The username
// is slowed, never locked: the attacker cannot keep its owner out for
// the window, and a browser the owner signed in from before skips this
// lane altogether.
func (s *Service) allow(ctx context.Context, pairKey, userKey, slowKey string) error {
	now := clock.Millis(s.cfg.Clock)
	n, err := s.store.AttemptAdd(ctx, driver.AttemptAddParams{Key: pairKey, Now: now, Window: s.cfg.FailWindow})
	if err != nil {
		return fmt.Errorf("auth attempt: %w", err)
	}
	if n > s.cfg.MaxFailures {
		return ErrTooManyAttempts
	}
	if n == 1 || userKey == "" {
		return nil // a first try from here: never held back by others' failures
	}
	n, err = s.store.AttemptAdd(ctx, driver.AttemptAddParams{Key: userKey, Now: now, Window: s.cfg.FailWindow})
	if err != nil {
		return fmt.Errorf("auth attempt: %w", err)
	}
	if n <= s.cfg.UserMaxFailures {
		return nil
	}
	n, err = s.store.AttemptAdd(ctx, driver.AttemptAddParams{Key: slowKey, Now: now, Window: s.cfg.SlowInterval})
	if err != nil {
		return fmt.Errorf("auth attempt: %w", err)
	}
	if n > 1 {
		return ErrTooManyAttempts
	}
	return nil
}

// check compares password with hash in one of the hash slots.
func (s *Service) check(ctx context.Context, hash, password string) (bool, error) {
	if !s.slots.acquire(ctx, s.cfg.HashWait) {
		return false, ErrBusy
	}
	defer s.slots.release()
	return CheckPassword(hash, password), nil
}

// hash hashes a new password in one of the hash slots.
func (s *Service) hash(ctx context.Context, password string) (string, error) {
	if !s.slots.acquire(ctx, s.cfg.HashWait) {
		return "", ErrBusy
	}
	defer s.slots.release()
	return HashPassword(password, s.cfg.Params)
}

// SignOut ends r's session: its id is recorded as revoked in the store
// (so a copy of the cookie is refused everywhere from now on) and the
// cookie is cleared.
func (s *Service) SignOut(w http.ResponseWriter, r *http.Request) error {
	http.SetCookie(w, s.cookie(r, "", -1))
	c, err := r.Cookie(CookieName)
	if err != nil {
		return nil
	}
	ss, err := s.sign.decode(c.Value, clock.Millis(s.cfg.Clock))
	if err != nil {
		return nil // nothing valid to end
	}
	if err := s.store.SessionRevoke(r.Context(), ss.ID, ss.Expires); err != nil {
		return fmt.Errorf("auth sign-out: %w", err)
	}
	return nil
}

func (s *Service) cookie(r *http.Request, value string, ttl time.Duration) *http.Cookie {
	c := &http.Cookie{Name: CookieName, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: Secure(r)}
	if ttl < 0 {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(ttl / time.Second)
	}
	return c
}

// knownBrowser reports whether r carries a known-browser cookie for name.
func (s *Service) knownBrowser(r *http.Request, name string) bool {
	c, err := r.Cookie(KnownCookie)
	return err == nil && s.sign.knownFor(c.Value, name, clock.Millis(s.cfg.Clock))
}

// knownCookie marks the browser as one username signed in from, for
// KnownTTL (renewed at every sign-in).
func (s *Service) knownCookie(r *http.Request, username string, now time.Time) *http.Cookie {
	return &http.Cookie{Name: KnownCookie, Value: s.sign.knownToken(username, now.Add(s.cfg.KnownTTL).UnixMilli()),
		Path: knownPath, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: Secure(r),
		MaxAge: int(s.cfg.KnownTTL / time.Second)}
}

// Secure reports whether r arrived over TLS (directly, or at a proxy such
// as API Gateway that says so in X-Forwarded-Proto): cookies set on it are
// marked Secure.
func Secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}
