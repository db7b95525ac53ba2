package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/xjobdev/xjob/internal/web/auth"
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

// The GLUE policy: by default only admins create or edit GLUE jobs;
// "off" refuses GLUE saves to everyone; "everyone" is xxl-job's.
func TestGluePolicy(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		policy             auth.GluePolicy
		normalOK, bossOK   bool
		normalNew, bossNew bool
	}{
		{auth.GlueAdmins, false, true, false, true},
		{auth.GlueOff, false, false, false, false},
		{auth.GlueEveryone, true, true, true, true},
	} {
		f := setupGlue(t, tt.policy)
		for _, who := range []struct {
			user, pw     string
			edit, create bool
		}{{"normal", "normal-password", tt.normalOK, tt.normalNew}, {"boss", "boss-password", tt.bossOK, tt.bossNew}} {
			s := f.signIn(who.user, who.pw)
			rec := f.do(&s, "POST", "/console/jobs/"+id(f.glue.ID)+"/glue",
				url.Values{"glueSource": {"id -u"}, "glueRemark": {"by " + who.user}}, false)
			if got := rec.Code == http.StatusSeeOther; got != who.edit {
				t.Errorf("%s: %s edits a GLUE source: %d, want ok=%v", tt.policy, who.user, rec.Code, who.edit)
			}
			rec = f.do(&s, "POST", "/console/jobs", url.Values{"jobGroup": {id(f.mine.ID)}, "jobDesc": {"new glue"},
				"author": {"x"}, "scheduleType": {"CRON"}, "scheduleConf": {"0 0 0 * * ?"}, "glueType": {"GLUE_SHELL"},
				"glueSource": {"id -u"}}, false)
			if got := rec.Code != http.StatusForbidden; got != who.create {
				t.Errorf("%s: %s creates a GLUE job: %d, want allowed=%v", tt.policy, who.user, rec.Code, who.create)
			}
		}
	}
}
