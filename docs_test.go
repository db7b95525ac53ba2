package xjob_test

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
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

// namedDocs are the pages whose quoted package paths, types and functions
// TestDocNamesExist checks: the two a newcomer reads first, which name
// the code most.
var namedDocs = []string{"CONTRIBUTING.md", "docs/architecture.md"}

var (
	// codeSpan is an inline code span.
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	// goName is a quoted Go name: Name, Name[T], Name(), pkg.Name or
	// Type.Method. It needs a lower-case letter, so that environment and
	// Makefile variables (FUZZ_TARGETS) are not taken for one.
	goName = regexp.MustCompile(`^(?:([A-Za-z][a-z0-9]*)\.)?([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)(?:\[[A-Z]\])?(?:\(\))?$`)
	// modPath is a quoted path in the module: a top-level folder, then
	// names, {a,b} alternatives and a trailing /... .
	modPath = regexp.MustCompile(`^[a-z][a-z0-9_]*(?:/[a-zA-Z0-9_.{},…-]*)*$`)
)

// goDecls maps the top-level names declared in the module's Go files
// (types, functions, constants, variables, and methods as Type.Method),
// tests included, to the folders that declare them.
func goDecls(t *testing.T) map[string]map[string]bool {
	t.Helper()
	decls := map[string]map[string]bool{}
	add := func(name, dir string) {
		if decls[name] == nil {
			decls[name] = map[string]bool{}
		}
		decls[name][dir] = true
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					add(d.Name.Name, dir)
					continue
				}
				recv := d.Recv.List[0].Type
				for {
					switch r := recv.(type) {
					case *ast.StarExpr:
						recv = r.X
						continue
					case *ast.IndexExpr:
						recv = r.X
						continue
					case *ast.IndexListExpr:
						recv = r.X
						continue
					}
					break
				}
				if id, ok := recv.(*ast.Ident); ok {
					add(id.Name+"."+d.Name.Name, dir)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						add(s.Name.Name, dir)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							add(n.Name, dir)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return decls
}

// expandPath is the paths a quoted path names: {a,b} alternatives
// expanded ("…" among them stands for the ones left out), "xjob" the
// root package.
func expandPath(p string) []string {
	if p == "xjob" {
		return []string{"."}
	}
	open, close := strings.Index(p, "{"), strings.Index(p, "}")
	if open < 0 || close < open {
		return []string{p}
	}
	var out []string
	for _, alt := range strings.Split(p[open+1:close], ",") {
		if alt == "…" || alt == "..." {
			continue
		}
		out = append(out, expandPath(p[:open]+alt+p[close+1:])...)
	}
	return out
}

// checkPath reports what is wrong with a quoted module path: a folder
// or file that does not exist, or a Go package folder without Go files.
func checkPath(p string) error {
	dir, _ := strings.CutSuffix(strings.TrimSuffix(p, "/"), "/...")
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	top, _, _ := strings.Cut(dir, "/")
	if !st.IsDir() || strings.HasSuffix(p, "/...") || !slices.Contains([]string{".", "pkg", "internal", "cmd", "functions", "examples"}, top) || dir == top {
		return nil
	}
	// A package's folder, or a folder of packages (`internal/web`).
	own, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	below, _ := filepath.Glob(filepath.Join(dir, "*", "*.go"))
	if len(own)+len(below) == 0 {
		return fmt.Errorf("%s holds no Go package", dir)
	}
	return nil
}

// isModulePath reports whether a quoted span is a path in the module:
// "xjob", or a path whose first folder is one of the repository's.
func isModulePath(span string) bool {
	if span == "xjob" {
		return true
	}
	if !modPath.MatchString(span) || !strings.Contains(span, "/") {
		return false
	}
	top, _, _ := strings.Cut(span, "/")
	st, err := os.Stat(top)
	return err == nil && st.IsDir()
}

// isModulePackage reports whether some folder of the module that
// declares Go names is called name.
func isModulePackage(decls map[string]map[string]bool, name string) bool {
	for _, dirs := range decls {
		for d := range dirs {
			if path.Base(d) == name {
				return true
			}
		}
	}
	return false
}

// TestDocNamesExist keeps the pages that map the code from naming code
// that moved or went away: every quoted module path must exist (a Go
// package's folder must hold Go files), and every quoted Go name must be
// declared in the module — in the package quoted right after it in
// parentheses ("`TestX` (`internal/scan`)"), in the package its
// qualifier names (`xjob.ErrNotFound`, `clock.Clock`), else anywhere.
func TestDocNamesExist(t *testing.T) {
	t.Parallel()
	decls := goDecls(t)
	declaredIn := func(name string, dir func(string) bool) bool {
		for d := range decls[name] {
			if dir(d) {
				return true
			}
		}
		return false
	}
	for _, file := range namedDocs {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(stripCode(string(text)), "\n") {
			where := fmt.Sprintf("%s:%d", file, n+1)
			var pending []string // Go names waiting for the package that follows them
			resolve := func(pkgDir string) {
				for _, name := range pending {
					m := goName.FindStringSubmatch(name)
					qual, ident := m[1], m[2]
					var ok bool
					switch {
					case qual != "" && qual[0] >= 'A' && qual[0] <= 'Z': // Type.Method
						ok = declaredIn(qual+"."+ident, func(string) bool { return true })
					case qual == "xjob":
						ok = declaredIn(ident, func(d string) bool { return d == "." })
					case qual != "" && !isModulePackage(decls, qual):
						ok = true // outside the module (f.Add, slog.Default): not this test's to check
					case qual != "":
						ok = declaredIn(ident, func(d string) bool { return path.Base(d) == qual })
					case pkgDir != "":
						ok = declaredIn(ident, func(d string) bool { return d == pkgDir })
					default:
						ok = len(decls[ident]) > 0
					}
					if !ok {
						in := ""
						if pkgDir != "" && qual == "" {
							in = " in " + pkgDir
						}
						t.Errorf("%s: `%s` is declared nowhere%s", where, name, in)
					}
				}
				pending = nil
			}
			for _, m := range codeSpan.FindAllStringSubmatchIndex(line, -1) {
				span := line[m[2]:m[3]]
				switch {
				case goName.MatchString(span):
					pending = append(pending, span)
				case isModulePath(span):
					paths := expandPath(span)
					for _, p := range paths {
						if err := checkPath(p); err != nil {
							t.Errorf("%s: `%s`: %v", where, span, err)
						}
					}
					if m[0] > 0 && line[m[0]-1] == '(' && len(paths) == 1 {
						resolve(paths[0])
					}
				}
			}
			resolve("")
		}
	}
}

// numbers reads the counts the docs spell out.
var numbers = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}

// TestDocCounts checks what the pages that map the code count or list
// against the code: the Lambda functions, the stores driver.Store
// embeds, the drivertest suites, and the packages pkg/adminclient links.
func TestDocCounts(t *testing.T) {
	t.Parallel()
	docs := map[string]string{}
	for _, file := range namedDocs {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		docs[file] = stripCode(string(text))
	}
	arch := docs["docs/architecture.md"]
	count := func(where, word string, want int, what string) {
		t.Helper()
		if n, ok := numbers[word]; !ok || n != want {
			t.Errorf("%s counts %q %s; there are %d", where, word, what, want)
		}
	}

	mains, err := filepath.Glob("functions/*/main.go")
	if err != nil || len(mains) == 0 {
		t.Fatalf("functions/*/main.go: %v, %v", mains, err)
	}
	lambdaCount := regexp.MustCompile(`\b([a-z]+) Lambda functions`)
	for _, file := range namedDocs {
		raw, err := os.ReadFile(file) // code blocks too: a make target's comment counts them
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range lambdaCount.FindAllStringSubmatch(string(raw), -1) {
			if _, ok := numbers[m[1]]; ok {
				count(file, m[1], len(mains), "Lambda functions")
			}
		}
	}

	embedded := interfaceEmbeds(t, "pkg/driver/driver.go", "Store")
	for _, name := range embedded {
		if !strings.Contains(arch, "| `"+name+"` |") {
			t.Errorf("docs/architecture.md: the ports table has no row for %s, which driver.Store embeds", name)
		}
	}
	if m := regexp.MustCompile("\\| `Store` \\| all ([a-z]+) stores").FindStringSubmatch(arch); m == nil {
		t.Error("docs/architecture.md: no ports table row \"| `Store` | all N stores\"")
	} else {
		count("docs/architecture.md", m[1], len(embedded), "stores in driver.Store")
	}

	suites := exportedFuncs(t, "pkg/driver/drivertest")
	if len(suites) < 5 {
		t.Fatalf("drivertest exports %q", suites)
	}
	for _, name := range suites {
		if !strings.Contains(arch, "`"+name+"`") {
			t.Errorf("docs/architecture.md does not list drivertest.%s", name)
		}
	}

	own, std := listModule(t)
	i := slices.IndexFunc(own, func(p pkg) bool { return rel(p.ImportPath) == "pkg/adminclient" })
	if i < 0 {
		t.Fatal("pkg/adminclient not found")
	}
	var links []string
	for _, dep := range append([]string{own[i].ImportPath}, own[i].Deps...) {
		if !std[dep] {
			links = append(links, cmp.Or(rel(dep), dep))
		}
	}
	slices.Sort(links)
	m := regexp.MustCompile("links at most ([a-z]+) packages outside the standard library \\(it links ([a-z]+): ([^)]*)\\)").
		FindStringSubmatch(strings.Join(strings.Fields(arch), " "))
	if m == nil {
		t.Fatal("docs/architecture.md: no \"links at most N packages outside the standard library (it links M: …)\"")
	}
	count("docs/architecture.md", m[1], adminclientBudget, "packages pkg/adminclient may link")
	count("docs/architecture.md", m[2], len(links), "packages pkg/adminclient links")
	var listed []string
	for _, span := range codeSpan.FindAllStringSubmatch(m[3], -1) {
		listed = append(listed, cmp.Or(map[string]string{"xjob": "."}[span[1]], span[1]))
	}
	if strings.Contains(m[3], "itself") {
		listed = append(listed, "pkg/adminclient")
	}
	slices.Sort(listed)
	if !slices.Equal(listed, links) {
		t.Errorf("docs/architecture.md lists %q as what pkg/adminclient links; it links %q", listed, links)
	}
}

// interfaceEmbeds is the interfaces the interface name of file embeds.
func interfaceEmbeds(t *testing.T, file, name string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != name {
			return true
		}
		it, ok := ts.Type.(*ast.InterfaceType)
		if !ok {
			t.Fatalf("%s: %s is not an interface", file, name)
		}
		for _, field := range it.Methods.List {
			if id, ok := field.Type.(*ast.Ident); ok && len(field.Names) == 0 {
				out = append(out, id.Name)
			}
		}
		return false
	})
	if len(out) == 0 {
		t.Fatalf("%s: interface %s embeds nothing", file, name)
	}
	return out
}

// exportedFuncs is the exported top-level functions of the package in
// dir, tests left out.
func exportedFuncs(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.IsExported() {
				out = append(out, fn.Name.Name)
			}
		}
	}
	return out
}
