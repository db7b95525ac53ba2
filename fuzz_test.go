package xjob_test

import (
	"encoding/json"
	"testing"

	"github.com/xjobdev/xjob"
)

// FuzzJobJSON decodes arbitrary job bodies and validates them: no panic,
// and a job that validates has a schedule that parses.
func FuzzJobJSON(f *testing.F) {
	for _, s := range []string{
		`{"jobGroup":1,"jobDesc":"d","author":"a","scheduleType":"CRON","scheduleConf":"0/5 * * * * ?","executorHandler":"h"}`,
		`{"jobGroup":1,"jobDesc":"d","author":"a","scheduleType":"FIX_RATE","scheduleConf":"60","glueType":"GLUE_SHELL","glueSource":"echo"}`,
		`{"jobGroup":1,"scheduleType":"NONE","childJobIds":[1,2,3],"executorTimeout":-1,"executorFailRetryCount":99}`,
		`{"jobGroup":1,"scheduleType":"CRON","scheduleConf":"0 0 0 31W * ?","timeZone":"Asia/Kolkata"}`,
		`{}`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var j xjob.Job
		if json.Unmarshal(body, &j) != nil {
			return
		}
		j.ApplyDefaults()
		if j.Validate() != nil {
			return
		}
		if _, err := j.Schedule(); err != nil {
			t.Fatalf("job validates but its schedule does not parse: %v (%s)", err, body)
		}
	})
}

// FuzzAddress checks executor addresses (group lists, overrides,
// registryValue): no panic, and an accepted address has no user-info,
// query, fragment or control character.
func FuzzAddress(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:9999/", "https://h/p/", "http://u:p@h/", "http://h/?x#y", "file:///etc/passwd", "http://h/\x1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, a string) {
		if xjob.ValidateAddress(a) != nil {
			return
		}
		for _, c := range []byte(a) {
			if c <= ' ' || c >= 0x7f || c == '?' || c == '#' {
				t.Fatalf("accepted %q", a)
			}
		}
	})
}

// FuzzDeclaration decodes arbitrary job declarations (POST
// /api/xjob/declare): no panic, and a declaration that validates makes a
// job that validates, whose recorded canonical form reads back to itself
// and shows no difference from the job it created.
func FuzzDeclaration(f *testing.F) {
	for _, s := range []string{
		`{"handler":"report","scheduleType":"CRON","scheduleConf":"0 0 3 * * ?","timeZone":"Europe/Paris","routeStrategy":"ROUND","timeoutSeconds":30,"failRetryCount":2}`,
		`{"name":"nightly-cleanup","handler":"cleanup","scheduleType":"FIX_RATE","scheduleConf":"3600","misfireStrategy":"FIRE_ONCE_NOW","param":"p"}`,
		`{"handler":"once","scheduleType":"ONCE","scheduleConf":"2030-01-01T00:00:00+09:00","description":"at new year"}`,
		`{"handler":"a:b"}`, `{"handler":""}`, `{"handler":"h","timeoutSeconds":-1}`, `{}`, `null`,
	} {
		f.Add("app", []byte(s))
	}
	f.Fuzz(func(t *testing.T, app string, body []byte) {
		var d xjob.JobDeclaration
		if json.Unmarshal(body, &d) != nil || d.Validate(app) != nil {
			return
		}
		j := d.Job(app, 1)
		if err := j.Validate(); err != nil {
			t.Fatalf("declaration validates but its job does not: %v (%s)", err, body)
		}
		j.Declared = d.Canonical(app)
		var back xjob.JobDeclaration
		if err := json.Unmarshal([]byte(j.Declared), &back); err != nil {
			t.Fatalf("canonical form %s does not decode: %v", j.Declared, err)
		}
		if c := back.Canonical(app); c != j.Declared {
			t.Fatalf("canonical form is not stable:\n %s\n %s", j.Declared, c)
		}
		if diff := j.DeclarationDiff(); len(diff) != 0 {
			t.Fatalf("a job created from its declaration differs from it in %v (%s)", diff, body)
		}
	})
}
