package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/pkg/clock"
)

const adminToken = "test-admin-token-0123456789"

type env struct {
	svc   *Service
	db    *sqlitestore.DB
	clock *clock.Fake
}

func setup(t *testing.T) env {
	t.Helper()
	db, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clk := clock.NewFake(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	svc, err := New(Config{Users: db, AdminToken: adminToken, Key: DeriveKey(adminToken), Params: TestParams,
		Clock: clk, MaxFailures: 3, FailWindow: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return env{svc: svc, db: db, clock: clk}
}

var root = Principal{Token: true}

func (e env) user(t *testing.T, name, pw string, role xjob.Role, groups ...int64) xjob.User {
	t.Helper()
	u, err := e.svc.CreateUser(t.Context(), root, UserInput{Username: name, Password: pw, Role: role, GroupIDs: groups})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// signIn posts a sign-in and returns the session cookie.
func (e env) signIn(t *testing.T, name, pw string) (*http.Cookie, Principal, error) {
	t.Helper()
	r := httptest.NewRequest("POST", "http://console.test/login", nil)
	r.RemoteAddr = "192.0.2.1:5555"
	w := httptest.NewRecorder()
	p, err := e.svc.SignIn(w, r, name, pw)
	for _, c := range w.Result().Cookies() {
		if c.Name == CookieName {
			return c, p, err
		}
	}
	return nil, p, err
}

func TestPasswordHash(t *testing.T) {
	t.Parallel()
	h, err := HashPassword("correct horse", TestParams)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("hash %q is not PHC argon2id", h)
	}
	if !CheckPassword(h, "correct horse") || CheckPassword(h, "correct horsf") || CheckPassword(h, "") {
		t.Fatal("CheckPassword does not tell the right password from wrong ones")
	}
	if h2, _ := HashPassword("correct horse", TestParams); h2 == h {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	for _, pw := range []string{"short", strings.Repeat("x", MaxPasswordLen+1)} {
		if _, err := HashPassword(pw, TestParams); err == nil {
			t.Errorf("HashPassword(%d chars) accepted", len(pw))
		}
	}
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$" + strings.Repeat("A", 43),
		"$argon2id$v=19$m=99999999,t=1,p=1$c2FsdHNhbHQ$" + strings.Repeat("A", 43), // memory bomb refused
		"$argon2id$v=19$t=1,m=64,p=1$c2FsdHNhbHQ$" + strings.Repeat("A", 43)} {
		if CheckPassword(bad, "anything") {
			t.Errorf("CheckPassword(%q) matched", bad)
		}
	}
}

func FuzzParseHash(f *testing.F) {
	h, _ := HashPassword("fuzzing password", TestParams)
	f.Add(h)
	f.Add("$argon2id$v=19$m=8,t=1,p=1$$")
	f.Fuzz(func(t *testing.T, s string) {
		p, salt, key, err := parseHash(s)
		if err != nil {
			return
		}
		if p.Memory > maxMemory || p.Time > maxTime || p.Threads == 0 || len(salt) < 8 || len(key) < 16 {
			t.Fatalf("parseHash(%q) accepted out-of-bounds %+v salt %d key %d", s, p, len(salt), len(key))
		}
	})
}

func FuzzSessionDecode(f *testing.F) {
	sg := signer{key: DeriveKey("k")}
	f.Add(sg.encode(session{Username: "alice", Stamp: "st", ID: "id", Expires: 2000}))
	f.Add("a.b")
	f.Fuzz(func(t *testing.T, tok string) {
		ss, err := sg.decode(tok, 1000)
		if err != nil {
			return
		}
		if sg.encode(ss) != tok {
			t.Fatalf("decode(%q) accepted a token that does not re-encode to itself: %+v", tok, ss)
		}
	})
}

func TestSessionToken(t *testing.T) {
	t.Parallel()
	sg := signer{key: DeriveKey("k")}
	tok := sg.encode(session{Username: "alice", Stamp: "st", ID: "id", Expires: 2000})
	if ss, err := sg.decode(tok, 1999); err != nil || ss.Username != "alice" {
		t.Fatalf("decode: %+v %v", ss, err)
	}
	if _, err := sg.decode(tok, 2000); err == nil {
		t.Fatal("an expired token was accepted")
	}
	if _, err := (signer{key: DeriveKey("other")}).decode(tok, 1000); err == nil {
		t.Fatal("a token signed with another key was accepted")
	}
	forged := b64url.EncodeToString([]byte("admin|st|id|2000")) + tok[strings.Index(tok, "."):]
	if _, err := sg.decode(forged, 1000); err == nil {
		t.Fatal("a token with a swapped payload was accepted")
	}
}

func TestSignInAuthenticateCSRF(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.user(t, "alice", "alice-password", xjob.RoleNormal, 2)
	if _, _, err := e.signIn(t, "alice", "wrong-password"); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("wrong password: %v", err)
	}
	if _, _, err := e.signIn(t, "nobody", "alice-password"); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("unknown user: %v", err)
	}
	c, p, err := e.signIn(t, "alice", "alice-password")
	if err != nil || c == nil {
		t.Fatalf("sign-in: %v", err)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure {
		t.Fatalf("cookie flags: %+v", c)
	}
	if !p.CanGroup(2) || p.CanGroup(3) || p.Admin() {
		t.Fatalf("alice's permissions: %+v", p)
	}

	req := func(method string, body url.Values, hdr map[string]string) (Principal, error) {
		var r *http.Request
		if body != nil {
			r = httptest.NewRequest(method, "http://console.test/x", strings.NewReader(body.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			r = httptest.NewRequest(method, "http://console.test/x", nil)
		}
		r.AddCookie(c)
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		return e.svc.Authenticate(r)
	}
	if got, err := req("GET", nil, nil); err != nil || got.User.Username != "alice" {
		t.Fatalf("GET with the cookie: %+v %v", got, err)
	}
	csrf := e.svc.CSRFToken(p)
	for _, tc := range []struct {
		name string
		body url.Values
		hdr  map[string]string
		want error
	}{
		{"no token", url.Values{"x": {"1"}}, nil, ErrCSRF},
		{"wrong token", url.Values{CSRFField: {"nope"}}, nil, ErrCSRF},
		{"form token", url.Values{CSRFField: {csrf}}, nil, nil},
		{"header token", nil, map[string]string{CSRFHeader: csrf}, nil},
		{"cross-site with token", nil, map[string]string{CSRFHeader: csrf, "Sec-Fetch-Site": "cross-site"}, ErrCSRF},
		{"foreign origin with token", nil, map[string]string{CSRFHeader: csrf, "Origin": "https://evil.test"}, ErrCSRF},
		{"own origin", nil, map[string]string{CSRFHeader: csrf, "Origin": "http://console.test"}, nil},
	} {
		if _, err := req("POST", tc.body, tc.hdr); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}

	// A password change ends the session; a new sign-in works.
	if _, err := e.svc.ChangePassword(t.Context(), p, "alice-password", "new-alice-password"); err != nil {
		t.Fatal(err)
	}
	if _, err := req("GET", nil, nil); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("session after a password change: %v", err)
	}
	// Expiry.
	c, _, err = e.signIn(t, "alice", "new-alice-password")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(DefaultSessionTTL + time.Second)
	if _, err := req("GET", nil, nil); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("expired session: %v", err)
	}

	// The admin token is the superuser; a wrong bearer is refused even with a cookie.
	r := httptest.NewRequest("DELETE", "http://console.test/x", nil)
	r.Header.Set("Authorization", "Bearer "+adminToken)
	if got, err := e.svc.Authenticate(r); err != nil || !got.Admin() {
		t.Fatalf("admin token: %+v %v", got, err)
	}
	r.Header.Set("Authorization", "Bearer wrong")
	if _, err := e.svc.Authenticate(r); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("wrong bearer: %v", err)
	}
}

func TestSignInRateLimit(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.user(t, "bobby", "bobby-password", xjob.RoleAdmin)
	for range 3 {
		if _, _, err := e.signIn(t, "bobby", "guess-guess"); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("guess: %v", err)
		}
	}
	if _, _, err := e.signIn(t, "bobby", "bobby-password"); !errors.Is(err, ErrTooManyAttempts) {
		t.Fatalf("right password after 3 failures in the window: %v, want ErrTooManyAttempts", err)
	}
	e.clock.Advance(time.Minute)
	if _, _, err := e.signIn(t, "bobby", "bobby-password"); err != nil {
		t.Fatalf("after the window: %v", err)
	}
}

func TestBootstrapAndUserRules(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pw, err := e.svc.Bootstrap(t.Context())
	if err != nil || len(pw) < MinPasswordLen {
		t.Fatalf("bootstrap: %q %v", pw, err)
	}
	if again, err := e.svc.Bootstrap(t.Context()); err != nil || again != "" {
		t.Fatalf("second bootstrap: %q %v", again, err)
	}
	_, p, err := e.signIn(t, BootstrapUser, pw)
	if err != nil || !p.Admin() {
		t.Fatalf("sign-in with the printed password: %+v %v", p, err)
	}
	var ve *xjob.ValidationError
	if _, err := e.svc.CreateUser(t.Context(), p, UserInput{Username: "Bad Name", Password: "x"}); !errors.As(err, &ve) || len(ve.Problems) != 2 {
		t.Fatalf("bad user: %v", err)
	}
	if _, err := e.svc.CreateUser(t.Context(), p, UserInput{Username: BootstrapUser, Password: "long-enough"}); !errors.As(err, &ve) {
		t.Fatalf("taken username: %v", err)
	}
	if err := e.svc.DeleteUser(t.Context(), p, BootstrapUser); !errors.As(err, &ve) {
		t.Fatalf("deleting oneself: %v", err)
	}
	if _, err := e.svc.UpdateUser(t.Context(), p, UserInput{Username: BootstrapUser, Role: xjob.RoleNormal}); !errors.As(err, &ve) {
		t.Fatalf("demoting oneself: %v", err)
	}
	carol := e.user(t, "carol", "carol-password", xjob.RoleNormal, 1)
	_, cp, err := e.signIn(t, "carol", "carol-password")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateUser(t.Context(), cp, UserInput{Username: "mallory", Password: "long-enough"}); !errors.Is(err, ErrForbidden) {
		t.Fatalf("a normal user creating a user: %v", err)
	}
	if _, err := e.svc.UpdateUser(t.Context(), cp, UserInput{Username: "carol", Role: xjob.RoleAdmin}); !errors.Is(err, ErrForbidden) {
		t.Fatalf("a normal user promoting itself: %v", err)
	}
	got, err := e.svc.UpdateUser(t.Context(), p, UserInput{Username: "carol", Role: xjob.RoleNormal, GroupIDs: []int64{3, 1, 3}, Version: carol.Version})
	if err != nil || len(got.GroupIDs) != 2 || got.PasswordHash != carol.PasswordHash {
		t.Fatalf("edit keeping the password: %+v %v", got, err)
	}
	if _, err := e.svc.UpdateUser(t.Context(), p, UserInput{Username: "carol", Version: carol.Version}); !errors.Is(err, xjob.ErrConflict) {
		t.Fatalf("stale edit: %v", err)
	}
	if _, err := e.svc.ChangePassword(t.Context(), cp, "wrong", "whatever-long"); !errors.As(err, &ve) {
		t.Fatalf("change with a wrong current password: %v", err)
	}
}

// Other spellings of a valid cookie are refused: padding bits, line
// breaks, a "+" or leading zero in the expiry.
func TestSessionDecodeStrict(t *testing.T) {
	t.Parallel()
	sg := signer{key: DeriveKey("k")}
	tok := sg.encode(session{Username: "alice", Stamp: "st", ID: "id", Expires: 2000})
	if _, err := sg.decode(tok, 1000); err != nil {
		t.Fatal(err)
	}
	p64, m64, _ := strings.Cut(tok, ".")
	macOf := func(payload string) string { return b64url.EncodeToString(sg.mac("session", payload)) }
	for name, v := range map[string]string{
		"line break":  p64[:4] + "\n" + p64[4:] + "." + m64,
		"plus expiry": b64url.EncodeToString([]byte("alice|st|id|+2000")) + "." + macOf("alice|st|id|+2000"),
		"zero expiry": b64url.EncodeToString([]byte("alice|st|id|02000")) + "." + macOf("alice|st|id|02000"),
		"mac bits":    p64 + "." + m64[:len(m64)-1] + string(m64[len(m64)-1]^1),
	} {
		if _, err := sg.decode(v, 1000); err == nil {
			t.Errorf("%s: %q accepted", name, v)
		}
	}
}

// A user imported with xxl-job's MD5 or SHA-256 hash signs in with the
// old password, and the hash is then argon2id.
func TestSignInLegacyHashUpgrades(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, xxl string }{
		{"md5", "e10adc3949ba59abbe56e057f20f883e"},                                    // 123456
		{"sha256", "8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92"}, // 123456
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			hash, ok := LegacyHash(tc.xxl)
			if !ok {
				t.Fatal("LegacyHash refused a digest")
			}
			created, _, err := e.svc.ImportUsers(t.Context(), root,
				[]ImportedUser{{Username: "olduser", PasswordHash: hash, Role: xjob.RoleNormal, GroupIDs: []int64{2}}})
			if err != nil || len(created) != 1 {
				t.Fatalf("import: %v %v", created, err)
			}
			if _, _, err := e.signIn(t, "olduser", "wrong-password"); err == nil {
				t.Fatal("a wrong password signed in")
			}
			if _, _, err := e.signIn(t, "olduser", "123456"); err != nil {
				t.Fatalf("old password: %v", err)
			}
			u, err := e.db.UserGet(t.Context(), "olduser")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(u.PasswordHash, "$argon2id$") || !CheckPassword(u.PasswordHash, "123456") {
				t.Fatalf("hash after sign-in %q, want argon2id", u.PasswordHash)
			}
			if _, _, err := e.signIn(t, "olduser", "123456"); err != nil {
				t.Fatalf("sign-in after the upgrade: %v", err)
			}
			if _, _, err := e.svc.ImportUsers(t.Context(), root,
				[]ImportedUser{{Username: "baduser", PasswordHash: "$argon2id$smuggled", Role: xjob.RoleNormal}}); err == nil {
				t.Fatal("an import with a non-legacy hash was accepted")
			}
		})
	}
}
