package xjob_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink matches the target of an inline Markdown link or image.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinksResolve keeps the README and the pages under docs/ from
// pointing at files or headings that no longer exist: pages move and
// bench runs get pruned, and a dead link is the first thing a reader hits.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	var files []string
	for _, glob := range []string{"*.md", "docs/*.md", "docs/*/*.md", "functions/*.md", "bench/*.md", "bench/results/*.md", "infra/*.md", "deploy/*/*.md"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d Markdown files: run from the repository root", len(files))
	}
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(stripCode(string(text)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			resolved := file
			if path != "" {
				resolved = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s: link %q: %v", file, target, err)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(resolved, ".md") && !hasHeading(t, resolved, anchor) {
				t.Errorf("%s: link %q: no heading %q in %s", file, target, anchor, resolved)
			}
		}
	}
}

// stripCode drops fenced code blocks, whose text is not Markdown.
func stripCode(s string) string {
	var b strings.Builder
	in := false
	for line := range strings.Lines(s) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(line)
		}
	}
	return b.String()
}

// hasHeading reports whether file has a heading whose GitHub anchor is
// anchor: lower case, spaces to hyphens, punctuation other than hyphens
// and underscores dropped.
func hasHeading(t *testing.T, file, anchor string) bool {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(stripCode(string(text))) {
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var slug strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(title)) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				slug.WriteRune(r)
			}
		}
		if slug.String() == anchor {
			return true
		}
	}
	return false
}
