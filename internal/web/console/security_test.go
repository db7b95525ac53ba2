package console_test

import (
	"net/http"
	"strings"
	"testing"
)

// ?flash= shows one of the fixed messages only: a link cannot make the
// console say what its author wants.
func TestFlashFromFixedList(t *testing.T) {
	t.Parallel()
	f := setup(t)
	boss := f.signIn("boss", "boss-password")
	for _, tt := range []struct {
		flash, want, never string
	}{
		{"saved", "Saved.", ""},
		{"cleared&n=12", "Logs deleted: 12", ""},
		{"Your+session+expired.+Sign+in+at+evil.example", "", "evil.example"},
		{"%3Cb%3Ebold%3C%2Fb%3E", "", "bold"},
	} {
		rec := f.do(&boss, "GET", "/console/?flash="+tt.flash, nil, false)
		if rec.Code != http.StatusOK {
			t.Fatalf("flash %s: %d", tt.flash, rec.Code)
		}
		body := rec.Body.String()
		if tt.want != "" && !strings.Contains(body, tt.want) {
			t.Errorf("flash %s: page lacks %q", tt.flash, tt.want)
		}
		if tt.never != "" && strings.Contains(body, tt.never) {
			t.Errorf("flash %s: page shows %q", tt.flash, tt.never)
		}
	}
}

// Sign-out ends the session server-side: the cookie kept from before is
// refused.
func TestSignOutEndsCookie(t *testing.T) {
	t.Parallel()
	f := setup(t)
	boss := f.signIn("boss", "boss-password")
	if rec := f.do(&boss, "GET", "/console/jobs", nil, false); rec.Code != http.StatusOK {
		t.Fatalf("signed in: %d", rec.Code)
	}
	if rec := f.do(&boss, "POST", "/console/logout", nil, false); rec.Code != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", rec.Code)
	}
	if rec := f.do(&boss, "GET", "/console/jobs", nil, false); rec.Code != http.StatusSeeOther {
		t.Fatalf("the kept cookie after sign-out: %d, want a redirect to sign in", rec.Code)
	}
}
