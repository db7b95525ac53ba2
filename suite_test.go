package xjob_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The test suite's own rules, as tests: a test skips only under -short or
// for a platform it cannot run on (never because a tool is missing, which
// fails it: internal/testenv/tool), and make fuzz runs every fuzz target.

// goFile is one parsed Go file of the module.
type goFile struct {
	path string // slash-separated, relative to the module root
	fset *token.FileSet
	file *ast.File
}

// moduleFiles parses every .go file of the module, skipping what is not
// Go source of this module (testdata, node_modules, hidden directories,
// build output).
func moduleFiles(t *testing.T) []goFile {
	t.Helper()
	var out []goFile
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bin" || name == "dist") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out = append(out, goFile{path: filepath.ToSlash(path), fset: fset, file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("found only %d Go files: run from the repository root", len(out))
	}
	return out
}

// TestSkipsOnlyForShortOrPlatform fails on any call of Skip, Skipf or
// SkipNow that is not the body of an if whose condition is testing.Short()
// or a platform check (runtime.GOOS or runtime.GOARCH compared with a
// literal, or os.Getuid/os.Geteuid for a test that needs root) with the
// reason in the message. A test that skips because something it needs is
// missing prints ok while testing nothing: it must fail instead, naming
// the make target that installs it (internal/testenv/tool).
func TestSkipsOnlyForShortOrPlatform(t *testing.T) {
	t.Parallel()
	var bad []string
	for _, f := range moduleFiles(t) {
		for _, v := range badSkips(f.fset, f.file) {
			bad = append(bad, f.path+":"+v)
		}
	}
	for _, b := range bad {
		t.Errorf("%s", b)
	}
}

// badSkips lists the skips of one file that break the rule, as
// "line: why".
func badSkips(fset *token.FileSet, file *ast.File) []string {
	var out []string
	var stack []ast.Node
	ast.Inspect(file, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "Skip" && sel.Sel.Name != "Skipf" && sel.Sel.Name != "SkipNow") {
			return true
		}
		line := fset.Position(call.Pos()).Line
		if why := skipGuard(stack, call); why != "" {
			out = append(out, strconv.Itoa(line)+": "+sel.Sel.Name+" "+why)
		}
		return true
	})
	return out
}

// skipGuard says what is wrong with the guard of call ("" for nothing);
// stack holds call's ancestors, call last.
func skipGuard(stack []ast.Node, call *ast.CallExpr) string {
	var guard *ast.IfStmt
	for i := len(stack) - 2; i >= 0; i-- {
		if _, ok := stack[i].(*ast.FuncLit); ok {
			break
		}
		if s, ok := stack[i].(*ast.IfStmt); ok {
			if call.Pos() < s.Body.Pos() || call.End() > s.Body.End() {
				return "in the else branch of an if or in its condition: skip only in the body of `if testing.Short()` or of a platform check"
			}
			guard = s
			break
		}
	}
	if guard == nil {
		return "not guarded: skip only in the body of `if testing.Short()` or of a platform check"
	}
	short, platform, ok := guardLeaves(guard.Cond)
	if !ok {
		return "guarded by a condition other than testing.Short() or a platform check: a missing tool must fail the test (internal/testenv/tool)"
	}
	if platform && !short && !hasReason(call) {
		return "for a platform without a reason: say what the test needs"
	}
	return ""
}

// guardLeaves reports whether every operand of cond's && and || is
// testing.Short() or a platform check, and which kinds it saw.
func guardLeaves(cond ast.Expr) (short, platform, ok bool) {
	switch c := cond.(type) {
	case *ast.ParenExpr:
		return guardLeaves(c.X)
	case *ast.CallExpr:
		return isCall(c, "testing", "Short"), false, isCall(c, "testing", "Short")
	case *ast.BinaryExpr:
		switch c.Op {
		case token.LOR, token.LAND:
			s1, p1, ok1 := guardLeaves(c.X)
			s2, p2, ok2 := guardLeaves(c.Y)
			return s1 || s2, p1 || p2, ok1 && ok2
		case token.EQL, token.NEQ, token.LSS, token.GTR, token.LEQ, token.GEQ:
			if (isPlatform(c.X) && isLiteral(c.Y)) || (isPlatform(c.Y) && isLiteral(c.X)) {
				return false, true, true
			}
		}
	}
	return false, false, false
}

func isPlatform(e ast.Expr) bool {
	if s, ok := e.(*ast.SelectorExpr); ok {
		if id, ok := s.X.(*ast.Ident); ok && id.Name == "runtime" && (s.Sel.Name == "GOOS" || s.Sel.Name == "GOARCH") {
			return true
		}
	}
	c, ok := e.(*ast.CallExpr)
	return ok && (isCall(c, "os", "Getuid") || isCall(c, "os", "Geteuid"))
}

func isLiteral(e ast.Expr) bool {
	_, ok := e.(*ast.BasicLit)
	return ok
}

func isCall(c *ast.CallExpr, pkg, name string) bool {
	s, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != name || len(c.Args) != 0 {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// hasReason reports whether a skip's first argument is a non-empty string
// literal.
func hasReason(call *ast.CallExpr) bool {
	if len(call.Args) == 0 {
		return false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return false
	}
	s, err := strconv.Unquote(lit.Value)
	return err == nil && strings.TrimSpace(s) != ""
}

// TestSkipGuardCatches holds the skip rule to the cases it exists for.
func TestSkipGuardCatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		bad        bool
	}{
		{"short", `if testing.Short() { t.Skip("needs Chromium") }`, false},
		{"short without a reason", `if testing.Short() { t.SkipNow() }`, false},
		{"platform", `if runtime.GOOS == "windows" { t.Skip("needs SIGKILL") }`, false},
		{"root", `if os.Getuid() != 0 { t.Skip("needs root to chown") }`, false},
		{"short or platform", `if testing.Short() || runtime.GOARCH != "amd64" { t.Skipf("x %d", 1) }`, false},
		{"platform without a reason", `if runtime.GOOS == "windows" { t.SkipNow() }`, true},
		{"platform with an empty reason", `if runtime.GOOS == "windows" { t.Skip("") }`, true},
		{"missing tool outside CI", `if err != nil { if errors.Is(err, ErrNotInstalled) && os.Getenv("CI") == "" { t.Skip(err) }; t.Fatal(err) }`, true},
		{"short or a missing tool", `if testing.Short() || os.Getenv("TOOL") == "" { t.Skip("no tool") }`, true},
		{"not short", `if !testing.Short() { t.Skip("long only") }`, true},
		{"unguarded", `t.Skip("flaky")`, true},
		{"in the else branch", `if testing.Short() { return } else { t.Skip("x") }`, true},
		{"short outside a nested condition", `if testing.Short() { if flaky { t.Skip("x") } }`, true},
		{"in a closure under short", `if testing.Short() { func() { t.Skip("x") }() }`, true},
		{"benchmark", `if found == nil { b.Skip("no data") }`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := "package p\nfunc f() {\n" + tt.body + "\n}\n"
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "p.go", src, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := badSkips(fset, f)
			if (len(got) > 0) != tt.bad {
				t.Fatalf("%s: flagged %v, want flagged %v", tt.body, got, tt.bad)
			}
		})
	}
}

// makeFuzzTargets finds the FUZZ_TARGETS assignment of the Makefile, over
// its continued lines; an entry is "./dir:FuzzName" ("." for the root
// package).
var makeFuzzTargets = regexp.MustCompile(`(?m)^FUZZ_TARGETS\s*:=((?:[^\n]*\\\n)*[^\n]*)`)

// TestMakeFuzzListsEveryTarget keeps make fuzz (FUZZ_TARGETS in the
// Makefile) equal to the fuzz targets the code declares: a target that is
// left out is never fuzzed beyond its seeds, one that no longer exists
// makes make fuzz fail.
func TestMakeFuzzListsEveryTarget(t *testing.T) {
	t.Parallel()
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := makeFuzzTargets.FindSubmatch(mk)
	if m == nil {
		t.Fatal("no FUZZ_TARGETS := … in the Makefile")
	}
	listed := strings.Fields(strings.ReplaceAll(string(m[1]), "\\\n", " "))
	var declared []string
	for _, f := range moduleFiles(t) {
		if !strings.HasSuffix(f.path, "_test.go") {
			continue
		}
		for _, d := range f.file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Fuzz") {
				continue
			}
			dir := "."
			if d := filepath.Dir(filepath.FromSlash(f.path)); d != "." {
				dir = "./" + filepath.ToSlash(d)
			}
			declared = append(declared, dir+":"+fn.Name.Name)
		}
	}
	if len(declared) < 10 {
		t.Fatalf("found only %d fuzz targets", len(declared))
	}
	for _, d := range declared {
		if !slices.Contains(listed, d) {
			t.Errorf("fuzz target %s is missing from FUZZ_TARGETS in the Makefile", d)
		}
	}
	for _, l := range listed {
		if !slices.Contains(declared, l) {
			t.Errorf("FUZZ_TARGETS lists %s, which no _test.go declares", l)
		}
	}
	if dup := len(listed) - len(slices.Compact(slices.Sorted(slices.Values(listed)))); dup > 0 {
		t.Errorf("FUZZ_TARGETS lists %d targets twice", dup)
	}
}

// testName is a test or fuzz target's name as docs and comments quote it.
var testName = regexp.MustCompile(`\b(?:Test|Fuzz)[A-Z][A-Za-z0-9_]*`)

// TestQuotedTestsExist keeps the docs and the code's comments from citing
// tests that were renamed or removed: every TestX or FuzzX named in a
// Markdown page or a Go comment is declared in some _test.go.
func TestQuotedTestsExist(t *testing.T) {
	t.Parallel()
	files := moduleFiles(t)
	declared := map[string]bool{}
	for _, f := range files {
		if !strings.HasSuffix(f.path, "_test.go") {
			continue
		}
		for _, d := range f.file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				declared[fn.Name.Name] = true
			}
		}
	}
	check := func(where, text string) {
		for _, at := range testName.FindAllStringIndex(text, -1) {
			name := text[at[0]:at[1]]
			if declared[name] {
				continue
			}
			// After -run or -fuzz it is a pattern: some test must match it.
			before := strings.TrimRight(text[:at[0]], "'\"^")
			if strings.HasSuffix(before, "-run ") || strings.HasSuffix(before, "-run=") || strings.HasSuffix(before, "-fuzz ") {
				if slices.ContainsFunc(slices.Collect(maps.Keys(declared)), func(d string) bool { return strings.HasPrefix(d, name) }) {
					continue
				}
			}
			t.Errorf("%s names %s, which no _test.go declares", where, name)
		}
	}
	for _, f := range files {
		for _, cg := range f.file.Comments {
			check(fmt.Sprintf("%s:%d", f.path, f.fset.Position(cg.Pos()).Line), cg.Text())
		}
	}
	var pages []string
	for _, glob := range []string{"*.md", "docs/*.md", "docs/*/*.md", "functions/*.md", "bench/*.md", "bench/results/*.md", "infra/*.md"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, m...)
	}
	for _, p := range pages {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		check(p, string(text))
	}
}
