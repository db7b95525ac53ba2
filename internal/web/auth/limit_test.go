package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
)

func (e env) signInFrom(t *testing.T, svc *Service, addr, name, pw string) (*http.Cookie, error) {
	t.Helper()
	r := httptest.NewRequest("POST", "http://console.test/login", nil)
	r.RemoteAddr = addr + ":5555"
	w := httptest.NewRecorder()
	_, err := svc.SignIn(w, r, name, pw)
	for _, c := range w.Result().Cookies() {
		if c.Name == CookieName && c.Value != "" {
			return c, err
		}
	}
	return nil, err
}

// A burst of concurrent wrong passwords from one address is counted
// before any hash: at most MaxFailures of them are checked.
func TestSignInBurstCountedBeforeHash(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.user(t, "admin", "admin-password", xjob.RoleAdmin)
	const n = 30
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.signInFrom(t, e.svc, "192.0.2.7", "admin", "wrong-password")
		}()
	}
	wg.Wait()
	var bad, slow int
	for _, err := range errs {
		switch {
		case errors.Is(err, ErrBadCredentials):
			bad++
		case errors.Is(err, ErrTooManyAttempts):
			slow++
		default:
			t.Fatalf("sign-in: %v", err)
		}
	}
	if bad != 3 || slow != n-3 { // setup: MaxFailures 3
		t.Fatalf("%d checked, %d refused unchecked; want 3 and %d", bad, slow, n-3)
	}
}

// Hash work waits for one of HashSlots; past HashWait it is refused.
func TestSignInHashSlots(t *testing.T) {
	t.Parallel()
	e := setup(t)
	svc, err := New(Config{Users: e.db, Store: e.db, AdminToken: adminToken, Key: DeriveKey(adminToken), Params: TestParams,
		Clock: e.clock, HashSlots: 1, HashWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.user(t, "alice", "alice-password", xjob.RoleNormal)
	svc.slots <- struct{}{} // a sign-in is hashing
	if _, err := e.signInFrom(t, svc, "192.0.2.1", "alice", "alice-password"); !errors.Is(err, ErrBusy) {
		t.Fatalf("with every slot taken: %v, want ErrBusy", err)
	}
	svc.slots.release()
	if _, err := e.signInFrom(t, svc, "192.0.2.1", "alice", "alice-password"); err != nil {
		t.Fatalf("with a slot free: %v", err)
	}
}

// Failures from one address hold back that address only: the user signs
// in from another, and a guesser spread over addresses ends up in the
// per-user lane, where the username is slowed (one attempt per
// SlowInterval), never locked; a new address's first try never enters
// it, and a browser the user signed in from before skips it.
func TestSignInLockoutKeyedByUserAndAddress(t *testing.T) {
	t.Parallel()
	e := setup(t) // MaxFailures 3
	svc, err := New(Config{Users: e.db, Store: e.db, AdminToken: adminToken, Key: DeriveKey(adminToken), Params: TestParams,
		Clock: e.clock, MaxFailures: 3, UserMaxFailures: 4, FailWindow: time.Minute, SlowInterval: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.user(t, "carol", "carol-password", xjob.RoleNormal)
	var known *http.Cookie // the browser carol signed in from
	try := func(addr, pw string, withKnown bool, want error) {
		t.Helper()
		r := httptest.NewRequest("POST", "http://console.test/console/login", nil)
		r.RemoteAddr = addr + ":5555"
		if withKnown {
			r.AddCookie(known)
		}
		w := httptest.NewRecorder()
		if _, err := svc.SignIn(w, r, "carol", pw); !errors.Is(err, want) {
			t.Fatalf("from %s (known browser %v): %v, want %v", addr, withKnown, err, want)
		}
		for _, c := range w.Result().Cookies() {
			if c.Name == KnownCookie {
				if c.Path != "/console/login" || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
					t.Fatalf("known-browser cookie %+v", c)
				}
				known = c
			}
		}
	}
	for range 3 {
		try("192.0.2.1", "wrong-password", false, ErrBadCredentials)
	}
	try("192.0.2.1", "carol-password", false, ErrTooManyAttempts) // this address is held back
	try("192.0.2.2", "carol-password", false, nil)                // another is not
	if known == nil {
		t.Fatal("a sign-in set no known-browser cookie")
	}
	for range 3 {
		try("192.0.2.3", "wrong-password", false, ErrBadCredentials)
	}
	// Per user: 192.0.2.1's tries 2–4 and 192.0.2.3's 2–3 counted 5 > 4:
	// carol is under attack. A first try is never held back; later ones
	// pass one per SlowInterval.
	try("192.0.2.4", "wrong-password", false, ErrBadCredentials)
	try("192.0.2.4", "wrong-password", false, ErrBadCredentials) // this interval's one
	try("192.0.2.5", "wrong-password", false, ErrBadCredentials) // a first try
	try("192.0.2.5", "carol-password", false, ErrTooManyAttempts)
	e.clock.Advance(10 * time.Second)
	try("192.0.2.5", "carol-password", false, nil) // slowed, not locked
	// From the browser she signed in with, carol's typo costs nothing
	// more than her own address's count, whatever the attack.
	try("192.0.2.4", "wrong-password", false, ErrTooManyAttempts)
	try("192.0.2.2", "typo-password", true, ErrBadCredentials)
	try("192.0.2.2", "carol-password", true, nil)
	// The cookie is carol's only.
	e.user(t, "danny", "danny-password", xjob.RoleNormal)
	r := httptest.NewRequest("POST", "http://console.test/console/login", nil)
	r.AddCookie(known)
	if svc.knownBrowser(r, "danny") || !svc.knownBrowser(r, "carol") {
		t.Fatal("the known-browser cookie is not bound to its user")
	}
	e.clock.Advance(time.Minute)
	try("192.0.2.1", "carol-password", false, nil)
}

// Sign-out ends the session in every process sharing the store.
func TestSignOutRevokesEverywhere(t *testing.T) {
	t.Parallel()
	e := setup(t)
	other, err := New(Config{Users: e.db, Store: e.db, AdminToken: adminToken, Key: DeriveKey(adminToken), Params: TestParams,
		Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(Config{Users: e.db, Store: e.db, AdminToken: adminToken, Key: DeriveKey(adminToken), Params: TestParams,
		Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	e.user(t, "dave", "dave-password", xjob.RoleNormal)
	c, err := e.signInFrom(t, svc, "192.0.2.1", "dave", "dave-password")
	if err != nil {
		t.Fatal(err)
	}
	get := func(s *Service) error {
		r := httptest.NewRequest("GET", "http://console.test/x", nil)
		r.AddCookie(c)
		_, err := s.Authenticate(r)
		return err
	}
	if err := get(other); err != nil {
		t.Fatalf("before sign-out: %v", err)
	}
	r := httptest.NewRequest("POST", "http://console.test/logout", nil)
	r.AddCookie(c)
	if err := svc.SignOut(httptest.NewRecorder(), r); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Service{svc, other} {
		if err := get(s); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("the signed-out cookie: %v, want ErrUnauthenticated", err)
		}
	}
}

// Guesses of the current password in ChangePassword are limited.
func TestChangePasswordRateLimited(t *testing.T) {
	t.Parallel()
	e := setup(t) // MaxFailures 3
	e.user(t, "erin", "erin-password", xjob.RoleNormal)
	_, p, err := e.signIn(t, "erin", "erin-password")
	if err != nil {
		t.Fatal(err)
	}
	var ve *xjob.ValidationError
	for range 3 {
		if _, err := e.svc.ChangePassword(t.Context(), p, "guess-guess", "new-erin-password"); !errors.As(err, &ve) {
			t.Fatalf("wrong current password: %v", err)
		}
	}
	if _, err := e.svc.ChangePassword(t.Context(), p, "erin-password", "new-erin-password"); !errors.Is(err, ErrTooManyAttempts) {
		t.Fatalf("after 3 wrong: %v, want ErrTooManyAttempts", err)
	}
	e.clock.Advance(time.Minute)
	if _, err := e.svc.ChangePassword(t.Context(), p, "erin-password", "new-erin-password"); err != nil {
		t.Fatalf("after the window: %v", err)
	}
}

func TestCheckGlue(t *testing.T) {
	t.Parallel()
	e := setup(t)
	normal := Principal{User: xjob.User{Username: "n", Role: xjob.RoleNormal}}
	admin := Principal{User: xjob.User{Username: "a", Role: xjob.RoleAdmin}}
	bean, shell := xjob.GlueBean, xjob.GlueShell
	for _, tt := range []struct {
		policy    GluePolicy
		p         Principal
		old, next xjob.GlueType
		ok        bool
	}{
		{GlueAdmins, normal, "", bean, true},
		{GlueAdmins, normal, "", shell, false},
		{GlueAdmins, normal, shell, shell, false},
		{GlueAdmins, normal, shell, bean, false},
		{GlueAdmins, admin, "", shell, true},
		{GlueAdmins, root, shell, shell, true},
		{GlueOff, admin, "", shell, false},
		{GlueOff, root, shell, shell, false},
		{GlueOff, admin, shell, bean, true},
		{GlueOff, normal, bean, bean, true},
		{GlueEveryone, normal, "", shell, true},
	} {
		svc, err := New(Config{Users: e.db, AdminToken: adminToken, Key: DeriveKey(adminToken), Glue: tt.policy})
		if err != nil {
			t.Fatal(err)
		}
		err = svc.CheckGlue(tt.p, tt.old, tt.next)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrForbidden)) {
			t.Errorf("%s %s %q→%q: %v, want ok=%v", tt.policy, tt.p.Who(), tt.old, tt.next, err, tt.ok)
		}
	}
	if _, err := ParseGluePolicy("sometimes"); err == nil {
		t.Error("an unknown policy parsed")
	}
}
