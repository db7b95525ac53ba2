package deploy

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// instruction is one Dockerfile instruction with its continuation lines
// joined: the keyword upper-cased, the leading --flags, and the rest.
type instruction struct {
	line  int // where it starts, from 1
	cmd   string
	flags []string
	args  string
}

// stage is one FROM and the instructions up to the next.
type stage struct {
	from   instruction
	base   string // the image it starts from
	name   string // its AS name, "" without one
	instrs []instruction
}

// dockerfile is a parsed Dockerfile: the ARGs before the first FROM, and
// the stages.
type dockerfile struct {
	globalArgs []instruction
	stages     []stage
}

// parseDockerfile reads the Dockerfile syntax the repository uses:
// comments, parser directives (read as comments), line continuations with
// the default escape character, --flags and the exec (JSON) form. It
// refuses what it cannot read rather than misread it: another escape
// character, heredocs, an instruction before the first FROM other than ARG,
// a file that ends inside a continuation.
func parseDockerfile(src string) (dockerfile, error) {
	var (
		df      dockerfile
		pending strings.Builder
		start   int
	)
	flush := func() error {
		text := strings.TrimSpace(pending.String())
		pending.Reset()
		if text == "" {
			return nil
		}
		in, err := parseInstruction(start, text)
		if err != nil {
			return err
		}
		return df.add(in)
	}
	for i, line := range strings.Split(src, "\n") {
		n := i + 1
		line = strings.TrimRightFunc(line, unicode.IsSpace)
		trimmed := strings.TrimLeftFunc(line, unicode.IsSpace)
		if strings.HasPrefix(trimmed, "#") {
			if n == 1 || len(df.stages) == 0 && len(df.globalArgs) == 0 && pending.Len() == 0 {
				if k, v, ok := strings.Cut(strings.TrimSpace(trimmed[1:]), "="); ok && strings.EqualFold(strings.TrimSpace(k), "escape") && strings.TrimSpace(v) != `\` {
					return df, fmt.Errorf("line %d: escape character %q is not supported", n, strings.TrimSpace(v))
				}
			}
			continue // a comment, also between continuation lines
		}
		if pending.Len() == 0 {
			if trimmed == "" {
				continue
			}
			start = n
		} else if trimmed == "" {
			continue // an empty line inside a continuation
		}
		if body, ok := strings.CutSuffix(line, `\`); ok {
			pending.WriteString(body)
			pending.WriteByte(' ')
			continue
		}
		pending.WriteString(line)
		if err := flush(); err != nil {
			return df, err
		}
	}
	if pending.Len() > 0 {
		return df, fmt.Errorf("line %d: the file ends inside a continuation", start)
	}
	if len(df.stages) == 0 {
		return df, errors.New("no FROM instruction")
	}
	return df, nil
}

var keyword = regexp.MustCompile(`^[A-Za-z]+$`)

func parseInstruction(line int, text string) (instruction, error) {
	word, rest, _ := strings.Cut(text, " ")
	if i := strings.IndexAny(word, "\t"); i >= 0 {
		word, rest = word[:i], word[i+1:]+" "+rest
	}
	if !keyword.MatchString(word) {
		return instruction{}, fmt.Errorf("line %d: %q is not an instruction", line, word)
	}
	in := instruction{line: line, cmd: strings.ToUpper(word)}
	rest = strings.TrimSpace(rest)
	for strings.HasPrefix(rest, "--") {
		flag, after, _ := strings.Cut(rest, " ")
		in.flags = append(in.flags, flag)
		rest = strings.TrimSpace(after)
	}
	in.args = rest
	if strings.Contains(in.args, "<<") && (in.cmd == "RUN" || in.cmd == "COPY" || in.cmd == "ADD") {
		return in, fmt.Errorf("line %d: heredocs are not supported", line)
	}
	return in, nil
}

func (df *dockerfile) add(in instruction) error {
	if in.cmd != "FROM" {
		if len(df.stages) == 0 {
			if in.cmd != "ARG" {
				return fmt.Errorf("line %d: %s before the first FROM", in.line, in.cmd)
			}
			df.globalArgs = append(df.globalArgs, in)
			return nil
		}
		s := &df.stages[len(df.stages)-1]
		s.instrs = append(s.instrs, in)
		return nil
	}
	words := strings.Fields(in.args)
	s := stage{from: in}
	switch {
	case len(words) == 1:
		s.base = words[0]
	case len(words) == 3 && strings.EqualFold(words[1], "AS"):
		s.base, s.name = words[0], strings.ToLower(words[2])
	default:
		return fmt.Errorf("line %d: FROM %q: want IMAGE [AS NAME]", in.line, in.args)
	}
	df.stages = append(df.stages, s)
	return nil
}

// execForm is the instruction's arguments in exec (JSON array) form, or
// false when they are in shell form.
func (in instruction) execForm() ([]string, bool) {
	if !strings.HasPrefix(in.args, "[") {
		return nil, false
	}
	var words []string
	if err := json.Unmarshal([]byte(in.args), &words); err != nil {
		return nil, false
	}
	return words, true
}

// flag is the value of --name=value among the instruction's flags.
func (in instruction) flag(name string) (string, bool) {
	for _, f := range in.flags {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// all is every instruction of the stage named cmd.
func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.instrs {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// render writes the parsed file back, one instruction a line (the fuzz
// target's round trip).
func (df dockerfile) render() string {
	var b strings.Builder
	line := func(in instruction) {
		b.WriteString(in.cmd)
		for _, f := range in.flags {
			b.WriteString(" " + f)
		}
		if in.args != "" {
			b.WriteString(" " + in.args)
		}
		b.WriteByte('\n')
	}
	for _, in := range df.globalArgs {
		line(in)
	}
	for _, s := range df.stages {
		line(s.from)
		for _, in := range s.instrs {
			line(in)
		}
	}
	return b.String()
}

func TestParseDockerfile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		src     string
		wantErr string
		check   func(t *testing.T, df dockerfile)
	}{
		{name: "stages, continuations and comments", src: "# syntax=docker/dockerfile:1\nARG GO=1.26\nFROM golang:${GO} AS Build\nRUN --mount=type=cache,target=/x \\\n  # a comment inside\n\n  go build \\\n  -o /out/x .\nFROM scratch\nCOPY --from=build /out/x /x\nENTRYPOINT [\"/x\"]\n",
			check: func(t *testing.T, df dockerfile) {
				if len(df.globalArgs) != 1 || len(df.stages) != 2 {
					t.Fatalf("got %d global ARGs and %d stages", len(df.globalArgs), len(df.stages))
				}
				if s := df.stages[0]; s.name != "build" || s.base != "golang:${GO}" {
					t.Errorf("stage 0 = %q from %q", s.name, s.base)
				}
				run := df.stages[0].all("RUN")[0]
				if run.line != 4 || run.args != "go build    -o /out/x ." || !slices.Equal(run.flags, []string{"--mount=type=cache,target=/x"}) {
					t.Errorf("RUN = %+v", run)
				}
				if w, ok := df.stages[1].all("ENTRYPOINT")[0].execForm(); !ok || !slices.Equal(w, []string{"/x"}) {
					t.Errorf("ENTRYPOINT exec form = %q, %v", w, ok)
				}
				if from, _ := df.stages[1].all("COPY")[0].flag("from"); from != "build" {
					t.Errorf("COPY --from = %q", from)
				}
			}},
		{name: "no FROM", src: "ARG X\n", wantErr: "no FROM"},
		{name: "instruction before FROM", src: "RUN true\nFROM scratch\n", wantErr: "before the first FROM"},
		{name: "other escape", src: "# escape=`\nFROM scratch\n", wantErr: "escape character"},
		{name: "heredoc", src: "FROM scratch\nRUN <<EOF\ntrue\nEOF\n", wantErr: "heredoc"},
		{name: "continued to the end", src: "FROM scratch\nRUN true \\\n# c\n", wantErr: "ends inside a continuation"},
		{name: "bad FROM", src: "FROM a b\n", wantErr: "want IMAGE"},
		{name: "not a keyword", src: "FROM scratch\n{}\n", wantErr: "not an instruction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			df, err := parseDockerfile(tt.src)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, df)
		})
	}
}

// FuzzDockerfile: the parser never panics, and what it accepts it reads
// back the same once written one instruction a line.
func FuzzDockerfile(f *testing.F) {
	if src, err := os.ReadFile("../Dockerfile"); err == nil {
		f.Add(string(src))
	}
	f.Add("FROM scratch\n")
	f.Add("ARG A=1\nFROM a AS b\nRUN x \\\n y\n# c\nCMD [\"z\"]\n")
	f.Fuzz(func(t *testing.T, src string) {
		df, err := parseDockerfile(src)
		if err != nil {
			return
		}
		again, err := parseDockerfile(df.render())
		if err != nil {
			t.Fatalf("re-parsing %q: %v", df.render(), err)
		}
		if got, want := again.render(), df.render(); got != want {
			t.Fatalf("round trip changed the file:\n%s\nto\n%s", want, got)
		}
	})
}

// image is the repository's Dockerfile, parsed, with its build and final
// stages picked out.
type image struct {
	df           dockerfile
	build, final stage
	goBuild      instruction // the RUN that builds the binary
}

func loadImage(t *testing.T) image {
	t.Helper()
	df, err := parseDockerfile(string(readFile(t, "../Dockerfile")))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	if len(df.stages) < 2 {
		t.Fatalf("Dockerfile: %d stages, want a builder and a final stage", len(df.stages))
	}
	im := image{df: df, build: df.stages[0], final: df.stages[len(df.stages)-1]}
	for _, in := range im.build.all("RUN") {
		if strings.Contains(in.args, "go build") {
			im.goBuild = in
		}
	}
	if im.goBuild.cmd == "" {
		t.Fatal("Dockerfile: the first stage has no RUN with go build")
	}
	return im
}

// goBuildOutput is the -o path of the build command.
var goBuildOutput = regexp.MustCompile(`\s-o\s+(\S+)`)

func TestDockerfile(t *testing.T) {
	t.Parallel()
	im := loadImage(t)
	if !strings.HasPrefix(im.build.base, "golang:1.26") {
		t.Errorf("builder starts from %q, want golang:1.26", im.build.base)
	}
	if im.build.name == "" {
		t.Error("the builder stage has no name for COPY --from")
	}

	run := im.goBuild.args
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/xjob"} {
		if !strings.Contains(run, want) {
			t.Errorf("the build command lacks %s: %s", want, run)
		}
	}
	// The zone database must be in the binary (-tags timetzdata) or copied
	// into the final stage (distroless carries /usr/share/zoneinfo).
	tags := regexp.MustCompile(`-tags[ =]"?([^\s"]+)`).FindStringSubmatch(run)
	hasTZTag := tags != nil && slices.Contains(strings.Split(tags[1], ","), "timetzdata")
	if !hasTZTag && !copiesZoneinfo(im.final) {
		t.Errorf("neither -tags timetzdata in %q nor zoneinfo copied into the final stage", run)
	}
	out := goBuildOutput.FindStringSubmatch(run)
	if out == nil {
		t.Fatalf("the build command has no -o: %s", run)
	}

	base := im.final.base
	if !strings.HasPrefix(base, "gcr.io/distroless/static") && base != "scratch" {
		t.Errorf("final stage starts from %q, want distroless static or scratch", base)
	}
	if base == "scratch" && !copiesPath(im.final, "/etc/ssl/certs") {
		t.Error("a scratch image needs the CA certificates copied in")
	}

	var copied bool
	for _, in := range im.final.all("COPY") {
		from, _ := in.flag("from")
		if w := strings.Fields(in.args); from == im.build.name && len(w) == 2 && w[0] == out[1] && w[1] == "/xjob" {
			copied = true
		}
	}
	if !copied {
		t.Errorf("the final stage does not COPY --from=%s %s /xjob", im.build.name, out[1])
	}

	users := im.final.all("USER")
	if len(users) == 0 {
		t.Fatal("the final stage sets no USER: it would run as root")
	}
	if u, _, _ := strings.Cut(users[len(users)-1].args, ":"); u != "65532" {
		t.Errorf("USER %q, want the non-root 65532 (distroless nonroot)", users[len(users)-1].args)
	}
	if got := lastExec(t, im.final, "ENTRYPOINT"); !slices.Equal(got, []string{"/xjob"}) {
		t.Errorf("ENTRYPOINT %q, want [\"/xjob\"]", got)
	}
	if got := lastExec(t, im.final, "CMD"); !slices.Equal(got, []string{"server"}) {
		t.Errorf("CMD %q, want [\"server\"]", got)
	}
	var exposed bool
	for _, in := range im.final.all("EXPOSE") {
		exposed = exposed || slices.Contains(strings.Fields(in.args), fmt.Sprint(serverPort)) ||
			slices.Contains(strings.Fields(in.args), fmt.Sprintf("%d/tcp", serverPort))
	}
	if !exposed {
		t.Errorf("the final stage does not EXPOSE %d", serverPort)
	}
	// A HEALTHCHECK in shell form needs a shell, which distroless lacks.
	for _, in := range im.final.all("HEALTHCHECK") {
		if _, ok := in.execForm(); !ok && !strings.EqualFold(in.args, "NONE") && !strings.HasPrefix(in.args, "CMD [") {
			t.Errorf("line %d: HEALTHCHECK in shell form: the final image has no shell", in.line)
		}
	}
}

func lastExec(t *testing.T, s stage, cmd string) []string {
	t.Helper()
	all := s.all(cmd)
	if len(all) == 0 {
		return nil
	}
	w, ok := all[len(all)-1].execForm()
	if !ok {
		t.Errorf("line %d: %s in shell form: the final image has no shell", all[len(all)-1].line, cmd)
	}
	return w
}

func copiesZoneinfo(s stage) bool { return copiesPath(s, "/usr/share/zoneinfo") }

func copiesPath(s stage, path string) bool {
	for _, in := range s.all("COPY") {
		if strings.Contains(in.args, path) {
			return true
		}
	}
	return false
}

// TestDockerfileBuild runs the Dockerfile's build command as it is written
// (the Go toolchain, no Docker engine) and checks what it makes: a static
// binary, built without cgo, with the zone database and the version it was
// given, that runs.
func TestDockerfileBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the xjob binary (-short)")
	}
	t.Parallel()
	im := loadImage(t)
	out := goBuildOutput.FindStringSubmatch(im.goBuild.args)
	if out == nil {
		t.Fatalf("the build command has no -o: %s", im.goBuild.args)
	}
	bin := filepath.Join(t.TempDir(), "xjob")
	script := strings.Replace(im.goBuild.args, out[0], " -o "+bin, 1)
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = ".."
	const version = "v0.0.0-deploytest"
	cmd.Env = append(os.Environ(), "TARGETOS="+runtime.GOOS, "TARGETARCH="+runtime.GOARCH, "VERSION="+version)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, b)
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("the binary is not ELF: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a program interpreter: it is dynamically linked")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %q", libs)
	}

	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	for k, want := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "-tags": "timetzdata"} {
		if settings[k] != want {
			t.Errorf("build setting %s = %q, want %q", k, settings[k], want)
		}
	}

	got, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !bytes.Contains(got, []byte(version)) {
		t.Errorf("xjob version = %q (%v), want it to name %s", got, err, version)
	}
}

// TestDockerignoreKeepsSources: every file `go build ./cmd/xjob` reads
// (Go sources and embedded files of the module's packages it links, and
// go.mod/go.sum) reaches the builder, and VCS data, local databases and
// build output do not.
func TestDockerignoreKeepsSources(t *testing.T) {
	t.Parallel()
	ignore, err := parseDockerignore(string(readFile(t, "../.dockerignore")))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".git/HEAD", "bin/xjob", "dist/scan.zip", ".xjob/xjob.db", "x/y.db-wal", "test/emulators/node_modules/a/b.js", "deploy/compose/.env"} {
		if !ignore(p) {
			t.Errorf(".dockerignore sends %s to the builder", p)
		}
	}
	files := buildInputs(t)
	if len(files) < 50 {
		t.Fatalf("found only %d files go build reads", len(files))
	}
	for _, p := range files {
		if ignore(p) {
			t.Errorf(".dockerignore leaves out %s, which go build ./cmd/xjob reads", p)
		}
	}
}

// buildInputs lists, relative to the repository, the files of the module
// that building cmd/xjob reads.
func buildInputs(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=Dir,GoFiles,EmbedFiles,Module", "./cmd/xjob")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"go.mod", "go.sum"}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			Dir                 string
			GoFiles, EmbedFiles []string
			Module              *struct{ Path string }
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || p.Module.Path != "github.com/xjobdev/xjob" {
			continue
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range append(p.GoFiles, p.EmbedFiles...) {
			files = append(files, filepath.ToSlash(filepath.Join(rel, f)))
		}
	}
	return files
}

// parseDockerignore turns .dockerignore into a predicate on slash paths
// relative to the build context, as Docker reads it: a pattern matches a
// path or any directory above it, * and ? stay within a path element, **
// spans any number. Exceptions (!) are refused, since nothing here needs
// them and they are where readings differ.
func parseDockerignore(src string) (func(string) bool, error) {
	var res []*regexp.Regexp
	for i, line := range strings.Split(src, "\n") {
		p := strings.TrimSpace(line)
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		if strings.HasPrefix(p, "!") {
			return nil, fmt.Errorf("line %d: exceptions (!) are not supported", i+1)
		}
		p = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(p)), "/")
		var re strings.Builder
		re.WriteString("^")
		for j := 0; j < len(p); j++ {
			switch c := p[j]; {
			case strings.HasPrefix(p[j:], "**/"):
				re.WriteString("(.*/)?")
				j += 2
			case strings.HasPrefix(p[j:], "**"):
				re.WriteString(".*")
				j++
			case c == '*':
				re.WriteString("[^/]*")
			case c == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		re.WriteString("(/.*)?$")
		r, err := regexp.Compile(re.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		res = append(res, r)
	}
	return func(path string) bool {
		for _, r := range res {
			if r.MatchString(path) {
				return true
			}
		}
		return false
	}, nil
}

func TestParseDockerignore(t *testing.T) {
	t.Parallel()
	ignore, err := parseDockerignore("# c\n.git\n**/*.db\n/bin\ndocs/*.png\n")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		".git": true, ".git/HEAD": true, ".github/x": false, "a.db": true, "a/b/c.db": true, "a.dbx": false,
		"bin/xjob": true, "cmd/bin/x": false, "docs/a.png": true, "docs/x/a.png": false, "docs/a.md": false,
	} {
		if got := ignore(path); got != want {
			t.Errorf("ignore(%q) = %v, want %v", path, got, want)
		}
	}
	if _, err := parseDockerignore("!keep\n"); err == nil {
		t.Error("an exception was accepted")
	}
}
