package console

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestVendoredChecksums: every vendored file is recorded in
// static/VENDORED.md with its version, source and SHA-256, and matches it.
func TestVendoredChecksums(t *testing.T) {
	t.Parallel()
	doc, err := staticFS.ReadFile("static/VENDORED.md")
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) == 4 && cells[0] != "file" && !strings.HasPrefix(cells[0], "-") {
			recorded[cells[0]] = cells[3]
		}
	}
	entries, err := staticFS.ReadDir("static")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.Contains(name, ".min.") { // xjob's own files
			continue
		}
		want, ok := recorded[name]
		if !ok {
			t.Errorf("%s is vendored but not recorded in VENDORED.md", name)
			continue
		}
		b, err := staticFS.ReadFile("static/" + name)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s: sha256 %s, VENDORED.md records %s", name, got, want)
		}
		delete(recorded, name)
	}
	for name := range recorded {
		t.Errorf("VENDORED.md records %s, which is not in static/", name)
	}
}
