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
