package xjob_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The architecture, as a test. Every package of the module sits in one
// layer, and imports only packages of its own layer or of layers below it:
// the domain knows nothing of the services, the services know the world
// only through the ports, the adapters and the web layer plug into them,
// and only the wiring knows every part. A package in no layer fails the
// test, so a new package has to be placed — and so read — on arrival.
//
// Patterns are paths relative to the module; "dir/..." is dir and every
// package below it. Only production imports count: a test may reach
// upwards (the core's tests run over the real SQLite store).
var layers = []struct {
	name string
	pkgs []string
}{
	{"foundation", []string{"pkg/clock", "pkg/protocol", "pkg/schedule", "internal/strictjson", "internal/egress", "internal/text", "internal/fallback", "internal/target"}},
	{"domain", []string{".", "internal/fire"}},
	{"ports", []string{"pkg/driver", "pkg/driver/drivertest"}},
	{"sdk and client", []string{"pkg/executor/...", "internal/exechttp", "pkg/adminclient", "internal/demo"}},
	{"core services", []string{"internal/scheduler/...", "internal/metric"}},
	{"control plane", []string{"internal/admin"}},
	{"adapters", []string{"internal/adapter/...", "internal/xxlimport"}},
	{"web", []string{"internal/web/..."}},
	{"wiring", []string{"internal/app/..."}},
	{"entry points", []string{"cmd/...", "functions/...", "internal/cli", "examples/...", "internal/tools/...", "infra", "deploy"}},
	{"test env and bench", []string{"internal/testenv/...", "internal/xxlimport/xxltest", "bench/..."}},
}

// Dependency rules beyond the layers, on each package's whole dependency
// closure (what it links), not only its direct imports. That no Lambda
// function links SQLite is checked where the functions' build tags are
// known: TestFunctionsLinkOnlyWhatTheyRun in internal/app/lambdaapp.
var (
	// The core reaches storage and the cloud only through the ports, so
	// local mode and AWS run the same code.
	coreLayers    = []string{"foundation", "domain", "ports", "core services", "control plane"}
	coreForbidden = []string{
		"github.com/aws/aws-sdk-go-v2", "github.com/aws/aws-lambda-go",
		"database/sql", "modernc.org/sqlite", "github.com/mattn/go-sqlite3",
	}

	// The executor SDK is what users link into their own services: it
	// must not drag in the scheduler's backends, metrics or web layer.
	// aws-lambda-go is the Lambda adapter's reason to exist, and only its.
	sdkPackages  = []string{"pkg/executor", "pkg/executor/lambdaexec"}
	sdkForbidden = []string{
		"github.com/aws/aws-sdk-go-v2", "github.com/aws/aws-lambda-go",
		"database/sql", "modernc.org/sqlite", "github.com/mattn/go-sqlite3", "github.com/prometheus", module + "/internal/web", module + "/internal/adapter", module + "/internal/app",
	}
	sdkAllowed = map[string][]string{"pkg/executor/lambdaexec": {"github.com/aws/aws-lambda-go"}}
)

// Direct imports some packages may not make although their layer allows
// them. The web handlers reach the stores only through the services: they
// build admin's and auth's parameter types, never a port's, so that a
// change to a port's parameter struct stops at the service and never
// ripples into an HTTP handler (web → admin → driver). auth is spared: it
// is the service that owns the user and sign-in stores (its doc comment
// says why). Only production imports count: a handler's test may seed the
// store directly.
var importRules = []struct {
	pkgs, except []string // patterns of the packages the rule holds, and of those it spares
	banned       []string // patterns of what they must not import
	why          string
}{
	{
		pkgs: []string{"internal/web/..."}, except: []string{"internal/web/auth"}, banned: []string{"pkg/driver/..."},
		why: "the web handlers reach the stores through internal/admin and internal/web/auth",
	},
}

// adminclientBudget caps the non-standard packages the admin client links,
// itself included: it is a JSON client over net/http, and a tool that
// imports it should not pay for the server. It links five: adminclient,
// xjob, pkg/schedule (for Job.Schedule), pkg/protocol and internal/text.
const adminclientBudget = 5

const module = "github.com/xjobdev/xjob"

// pkg is what `go list -json` says about one package, as far as this test
// cares.
type pkg struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
	Module     *struct{ Path string }
}

// listing is every package of the module and its dependency closure,
// from one go list call shared by the tests of this file.
var listing = sync.OnceValues(func() (modulePackages, error) {
	out, err := exec.Command("go", "list", "-deps", "-json", "./...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w\n%s", err, ee.Stderr)
		}
		return modulePackages{}, fmt.Errorf("go list: %w", err)
	}
	l := modulePackages{std: map[string]bool{}}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return l, fmt.Errorf("decode go list output: %w", err)
		}
		switch {
		case p.Standard:
			l.std[p.ImportPath] = true
		case p.Module != nil && p.Module.Path == module:
			l.own = append(l.own, p)
		}
	}
	if len(l.own) == 0 {
		return l, errors.New("go list found no package of the module")
	}
	return l, nil
})

type modulePackages struct {
	own []pkg           // the module's packages
	std map[string]bool // the standard library packages they link
}

func listModule(t *testing.T) (own []pkg, std map[string]bool) {
	t.Helper()
	l, err := listing()
	if err != nil {
		t.Fatal(err)
	}
	return l.own, l.std
}

// rel is an import path relative to the module ("." for the root), or ""
// for a path outside it.
func rel(importPath string) string {
	if importPath == module {
		return "."
	}
	if r, ok := strings.CutPrefix(importPath, module+"/"); ok {
		return r
	}
	return ""
}

func matches(pattern, r string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return r == dir || strings.HasPrefix(r, dir+"/")
	}
	return r == pattern
}

// layerOf returns the index of r's layer, or -1.
func layerOf(r string) int {
	for i, l := range layers {
		for _, p := range l.pkgs {
			if matches(p, r) {
				return i
			}
		}
	}
	return -1
}

// under reports whether dep is prefix or a package below it.
func under(dep, prefix string) bool {
	return dep == prefix || strings.HasPrefix(dep, prefix+"/")
}

func TestLayersImportOnlyDownward(t *testing.T) {
	t.Parallel()
	own, _ := listModule(t)
	for _, p := range own {
		r := rel(p.ImportPath)
		li := layerOf(r)
		if li < 0 {
			t.Errorf("package %s is in no layer: place it in arch_test.go's layers", r)
			continue
		}
		for _, imp := range p.Imports {
			ri := rel(imp)
			if ri == "" {
				continue
			}
			if lj := layerOf(ri); lj > li {
				t.Errorf("%s (%s) imports %s (%s): layers import only downward", r, layers[li].name, ri, layerName(lj))
			}
		}
	}
}

func layerName(i int) string {
	if i < 0 {
		return "no layer"
	}
	return layers[i].name
}

// forbiddenDeps reports the dependencies of p under any of forbidden,
// except those under allowed.
func forbiddenDeps(p pkg, forbidden, allowed []string) []string {
	var bad []string
	for _, dep := range append([]string{p.ImportPath}, p.Deps...) {
		if slices.ContainsFunc(allowed, func(a string) bool { return under(dep, a) }) {
			continue
		}
		if slices.ContainsFunc(forbidden, func(f string) bool { return under(dep, f) }) {
			bad = append(bad, dep)
		}
	}
	return bad
}

func TestDependencyRules(t *testing.T) {
	t.Parallel()
	own, _ := listModule(t)
	for _, p := range own {
		r := rel(p.ImportPath)
		var rules []string
		var forbidden, allowed []string
		if li := layerOf(r); li >= 0 && slices.Contains(coreLayers, layers[li].name) {
			rules, forbidden = append(rules, "core"), append(forbidden, coreForbidden...)
		}
		if slices.Contains(sdkPackages, r) {
			rules, forbidden, allowed = append(rules, "executor SDK"), append(forbidden, sdkForbidden...), sdkAllowed[r]
		}
		if bad := forbiddenDeps(p, forbidden, allowed); len(bad) > 0 {
			t.Errorf("%s (%s) links %s", r, strings.Join(rules, ", "), strings.Join(bad, ", "))
		}
	}
	for _, r := range sdkPackages {
		if !slices.ContainsFunc(own, func(p pkg) bool { return rel(p.ImportPath) == r }) {
			t.Errorf("the SDK rule names %s, which go list did not find", r)
		}
	}
}

func TestImportRules(t *testing.T) {
	t.Parallel()
	own, _ := listModule(t)
	matchesAny := func(patterns []string, r string) bool {
		return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, r) })
	}
	for _, rule := range importRules {
		for _, p := range own {
			r := rel(p.ImportPath)
			if !matchesAny(rule.pkgs, r) || matchesAny(rule.except, r) {
				continue
			}
			for _, imp := range p.Imports {
				if ri := rel(imp); ri != "" && matchesAny(rule.banned, ri) {
					t.Errorf("%s imports %s: %s", r, ri, rule.why)
				}
			}
		}
		// A pattern that matches nothing is a package that moved: the
		// rule would hold vacuously.
		for _, pattern := range slices.Concat(rule.pkgs, rule.except, rule.banned) {
			if !slices.ContainsFunc(own, func(o pkg) bool { return matches(pattern, rel(o.ImportPath)) }) {
				t.Errorf("import rule %q: pattern %s matches no package", rule.why, pattern)
			}
		}
	}
}

func TestAdminclientDependencyBudget(t *testing.T) {
	t.Parallel()
	own, std := listModule(t)
	i := slices.IndexFunc(own, func(p pkg) bool { return p.ImportPath == module+"/pkg/adminclient" })
	if i < 0 {
		t.Fatal("adminclient not found")
	}
	var nonstd []string
	for _, dep := range append([]string{own[i].ImportPath}, own[i].Deps...) {
		if !std[dep] {
			nonstd = append(nonstd, dep)
		}
	}
	if len(nonstd) > adminclientBudget {
		t.Fatalf("adminclient links %d non-standard packages, budget %d:\n%s",
			len(nonstd), adminclientBudget, strings.Join(nonstd, "\n"))
	}
}

// TestLayerPatternsMatch keeps the table honest: a pattern that matches no
// package is a package that moved or went away.
func TestLayerPatternsMatch(t *testing.T) {
	t.Parallel()
	own, _ := listModule(t)
	for _, l := range layers {
		for _, p := range l.pkgs {
			if !slices.ContainsFunc(own, func(o pkg) bool { return matches(p, rel(o.ImportPath)) }) {
				t.Errorf("layer %s: pattern %s matches no package", l.name, p)
			}
		}
	}
}
