package cli

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

func TestYAMLToJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, want, errHas string
	}{
		{name: "empty", yaml: "", want: `null`},
		{name: "json is yaml", yaml: `{"a": [1, "x", true, null]}`, want: `{"a":[1,"x",true,null]}`},
		{name: "integers stay exact", yaml: "id: 9007199254740993\n", want: `{"id":9007199254740993}`},
		{name: "floats", yaml: "f: 1.5\ng: 1e3\n", want: `{"f":1.5,"g":1000}`},
		{name: "quoted numbers stay strings", yaml: `conf: "3600"`, want: `{"conf":"3600"}`},
		{name: "yaml 1.1 booleans are strings", yaml: "a: yes\nb: on\n", want: `{"a":"yes","b":"on"}`},
		{name: "aliases expand", yaml: "a: &x {b: 1}\nc: *x\n", want: `{"a":{"b":1},"c":{"b":1}}`},
		{name: "timestamps stay text", yaml: "t: 2030-01-01T00:00:00+01:00\n", want: `{"t":"2030-01-01T00:00:00+01:00"}`},
		{name: "non-string key", yaml: "? [a]\n: 1\n", errHas: "line 1: a mapping key must be a string"},
		{name: "infinity", yaml: "x: 1\ny: .inf\n", errHas: "line 2"},
		{name: "merge key", yaml: "a: &x {b: 1}\nc:\n  <<: *x\n", errHas: "merge keys"},
		{name: "syntax error", yaml: "a: [1,\n", errHas: "yaml:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := yamlToJSON([]byte(tt.yaml))
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("yamlToJSON = %s, %v; want an error with %q", got, err, tt.errHas)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("yamlToJSON = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestMarshalYAML(t *testing.T) {
	t.Parallel()
	got, err := marshalYAML(map[string]any{"id": int64(9007199254740993), "conf": "3600", "list": []string{"a"}, "f": 1.5})
	if err != nil {
		t.Fatal(err)
	}
	want := "conf: \"3600\"\nf: 1.5\nid: 9007199254740993\nlist:\n  - a\n"
	if string(got) != want {
		t.Fatalf("marshalYAML:\n%s\nwant:\n%s", got, want)
	}
}

// laughs is a manifest of a few hundred bytes whose aliases expand to
// width^depth scalars in one job's executorParam.
func laughs(width, depth int) string {
	var b strings.Builder
	b.WriteString("jobs:\n  - name: laughs\n    executorParam: [&l0 [")
	b.WriteString(strings.TrimSuffix(strings.Repeat("lol,", width), ","))
	b.WriteString("]")
	for d := 1; d < depth; d++ {
		fmt.Fprintf(&b, ", &l%d [%s]", d, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", d-1), width), ","))
	}
	b.WriteString("]\n")
	return b.String()
}

// A manifest whose aliases expand past the bounds is refused before it is
// built: ten million scalars from 500 bytes. Not parallel: it reads the
// process's allocation counter.
func TestManifestAliasExpansionBounded(t *testing.T) {
	doc := laughs(10, 7)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := parseManifest([]byte(doc))
	runtime.ReadMemStats(&after)
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d-byte manifest: %v; allocated %d MiB", len(doc), err, grew>>20)
	if err == nil || !strings.Contains(err.Error(), "expands to more than") {
		t.Fatalf("parseManifest of a %d-byte manifest expanding to 10^7 scalars: %v, want a refusal", len(doc), err)
	}
	if grew > 64<<20 {
		t.Errorf("refusing it allocated %d MiB, want under 64", grew>>20)
	}
	// A modest use of aliases converts (and is then refused for its
	// type, as any list in executorParam).
	if js, err := yamlToJSON([]byte(laughs(10, 3))); err != nil || strings.Count(string(js), "lol") != 1110 {
		t.Errorf("a manifest expanding to 1,110 scalars: %d bytes, %v", len(js), err)
	}
}
