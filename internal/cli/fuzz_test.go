package cli

import (
	"encoding/json"
	"testing"
)

// FuzzParseManifest reads arbitrary apply files (YAML or JSON): no panic,
// and a manifest that parses survives export's encodings (YAML and JSON)
// and a second parse unchanged.
func FuzzParseManifest(f *testing.F) {
	for _, s := range []string{
		"groups:\n- appname: demo\n  title: Demo\njobs:\n- name: nightly\n  group: demo\n  jobDesc: d\n  author: a\n  scheduleType: CRON\n  scheduleConf: 0 0 3 * * ?\n  executorHandler: h\n  started: true\n",
		`{"jobs":[{"id":7,"group":"demo","jobDesc":"d","author":"a","scheduleType":"ONCE","scheduleConf":"2030-01-01T00:00:00+01:00","afterCompletion":"DELETE","children":["nightly","12"]}]}`,
		"jobs:\n- name: &a x\n  group: *a\n",
		"groups: [{appname: a, title: t, addressType: 1, addressList: [http://127.0.0.1:9999]}]\n",
		"jobs:\n- name: x\n  unknown: 1\n",
		"- 1\n- 2\n", "", "null", "{}", "jobs: {}", "jobs:\n- id: 1e3\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, _, err := parseManifest(data)
		if err != nil {
			return
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("marshal a parsed manifest: %v", err)
		}
		for _, format := range []string{"yaml", "json"} {
			enc, err := encodeManifest(m, format)
			if err != nil {
				t.Fatalf("encode %s: %v", format, err)
			}
			back, _, err := parseManifest(enc)
			if err != nil {
				t.Fatalf("the %s export of a parsed manifest does not parse: %v\n%s", format, err, enc)
			}
			if got, _ := json.Marshal(back); string(got) != string(want) {
				t.Fatalf("%s round trip changed the manifest:\n got  %s\n want %s", format, got, want)
			}
		}
	})
}
