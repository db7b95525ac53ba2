package cli

// Jobs as code: `xjob apply -f jobs.yaml` and `xjob export`. The manifest
// (xjob.Manifest) is read as YAML or JSON: YAML is turned into JSON
// (yamljson.go) and decoded with the JSON field names, so one set of names
// (the API's) serves both formats and unknown fields are refused in both.
// Before decoding, the file is walked as YAML nodes so that every
// problem, the server's included, is reported with its item's name and line.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/adminclient"
)

func (a *app) applyCommand() *cobra.Command {
	var file string
	var yes bool
	var p adminclient.ApplyParams
	cmd := &cobra.Command{
		Use:   "apply -f FILE [--prune [--yes]] [--dry-run] [--overwrite]",
		Short: "Make the server's groups and jobs match a YAML or JSON manifest",
		Long: `Make the server's groups and jobs match a YAML or JSON manifest.

A manifest lists executor groups (keyed by appname) and jobs (keyed by name,
or by id when they have none); "xjob export" writes one. apply prints the
plan, then carries it out: it creates what is missing, updates what differs
and, with --prune, deletes every group and job the manifest does not declare.
The server checks the whole manifest (fields, names, children, cycles)
before it writes anything, and writes it as one unit: one bad item and
nothing changes, and a crash leaves the old set or the new one.

An update merges three ways: a field the file has not changed since the
last apply keeps the value a person set in xjob since (started or stopped
included), so applying the same file again changes nothing. The plan shows
old → new for each field it writes, and the fields where xjob's value
stays; --overwrite takes the file's value everywhere. --prune asks before
it deletes, unless --yes.`,
		Example: `  xjob apply -f jobs.yaml --dry-run
  xjob apply -f jobs.yaml --prune
  xjob export > jobs.yaml`,
		Args: noArgs,
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "manifest file, YAML or JSON (`-` for stdin)")
	cmd.Flags().BoolVar(&p.Prune, "prune", false, "delete the groups and jobs the manifest does not declare")
	cmd.Flags().BoolVar(&p.DryRun, "dry-run", false, "print the plan only")
	cmd.Flags().BoolVar(&p.Overwrite, "overwrite", false, "take the file's value of every field, even one changed in xjob since the last apply")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "with --prune: delete without asking")
	_ = cmd.MarkFlagRequired("file")
	cmd.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		m, pos, probs, err := a.readManifest(file)
		if err != nil {
			return err
		}
		if len(probs) > 0 {
			// One round: the server checks what the file's problems
			// leave, and every problem is reported at once.
			dry := p
			dry.DryRun, dry.Prune = true, false
			_, err := c.Apply(ctx, m, dry)
			if apiErr, ok := adminclient.AsAPIError(err); ok && apiErr.Status == http.StatusBadRequest {
				for _, pr := range pos.annotate(apiErr.Problems) {
					probs = append(probs, pr.Field+": "+pr.Message)
				}
			}
			return badInput{fmt.Errorf("manifest %s: %d problems:\n  %s", file, len(probs), strings.Join(probs, "\n  "))}
		}
		if p.Prune && len(m.Groups)+len(m.Jobs) == 0 {
			return usagef("--prune with an empty manifest would delete everything; refusing")
		}
		err = a.apply(ctx, c, m, p, yes)
		if apiErr, ok := adminclient.AsAPIError(err); ok {
			apiErr.Problems = pos.annotate(apiErr.Problems)
			if apiErr.Status == http.StatusBadRequest && len(apiErr.Problems) > 0 {
				// The manifest's problems, as the file's are: exit 2.
				return badInput{fmt.Errorf("manifest %s: %d problems:\n  %s", file, len(apiErr.Problems), problemLines(apiErr.Problems))}
			}
		}
		return err
	})
	return cmd
}

// problemLines lists problems one a line, for a badInput message.
func problemLines(probs []xjob.FieldProblem) string {
	lines := make([]string, len(probs))
	for i, p := range probs {
		lines[i] = p.Field + ": " + p.Message
	}
	return strings.Join(lines, "\n  ")
}

// confirm asks a yes/no question on a terminal; without one it answers no.
func (a *app) confirm(question string) bool {
	f, ok := a.stdin.(*os.File)
	if !ok || !isTerminal(f) {
		return false
	}
	fmt.Fprintf(a.stderr, "%s [y/N] ", question)
	line, _ := bufio.NewReader(f).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// apply prints the plan of m, then (unless dry) carries it out and prints
// what was done.
func (a *app) apply(ctx context.Context, c *adminclient.Client, m xjob.Manifest, p adminclient.ApplyParams, yes bool) error {
	dry := p
	dry.DryRun = true
	plan, err := c.Apply(ctx, m, dry)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if p.DryRun || len(plan.Plan) == 0 {
		return a.emit(plan, func(w io.Writer) { printPlan(w, plan, "Plan") })
	}
	if a.output == "table" {
		printPlan(a.stdout, plan, "Plan")
	}
	if n := countAction(plan, xjob.ActionDelete); n > 0 && !yes {
		if !a.confirm(fmt.Sprintf("Delete %d groups and jobs that the manifest does not declare?", n)) {
			return badInput{fmt.Errorf("--prune would delete %d groups and jobs: confirm on a terminal, or pass --yes", n)}
		}
	}
	res, err := c.Apply(ctx, m, p)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	return a.emit(res, func(w io.Writer) { fmt.Fprintf(w, "Applied: %s.\n", planSummary(res)) })
}

func countAction(res xjob.ApplyResult, action string) int {
	n := 0
	for _, it := range res.Plan {
		if it.Action == action {
			n++
		}
	}
	return n
}

// printPlan writes one line per item (+ create, ~ update, - delete, = keep:
// nothing written), then one per changed field (old → new) and per field
// whose value xjob keeps.
func printPlan(w io.Writer, res xjob.ApplyResult, title string) {
	for _, it := range res.Plan {
		sign := map[string]string{xjob.ActionCreate: "+", xjob.ActionUpdate: "~", xjob.ActionDelete: "-", xjob.ActionKeep: "="}[it.Action]
		line := fmt.Sprintf("%s %s %s", sign, it.Kind, it.Key)
		if it.ID != 0 {
			line += fmt.Sprintf(" (id %d)", it.ID)
		}
		if len(it.Changes) > 0 && len(it.Diffs) == 0 {
			line += ": " + strings.Join(it.Changes, ", ")
		}
		fmt.Fprintln(w, line)
		for _, d := range it.Diffs {
			fmt.Fprintf(w, "    %s: %s → %s\n", d.Field, quoteValue(d.Old), quoteValue(d.New))
		}
		for _, k := range it.Kept {
			fmt.Fprintf(w, "    %s: %s kept (the file says %s; %s)\n", k.Field, quoteValue(k.Old), quoteValue(k.New), keptWhy(k.Side))
		}
	}
	fmt.Fprintf(w, "%s: %s.\n", title, planSummary(res))
}

func keptWhy(side string) string {
	if side == xjob.SideXjob {
		return "changed in xjob since the last apply; --overwrite takes the file's"
	}
	return "changed in both since the last apply; --overwrite takes the file's"
}

// quoteValue shows a plan value: quoted when empty or with spaces.
func quoteValue(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\n\"") {
		return strconv.Quote(v)
	}
	return v
}

func planSummary(res xjob.ApplyResult) string {
	n := map[string]int{}
	for _, it := range res.Plan {
		n[it.Action]++
	}
	out := fmt.Sprintf("%d to create, %d to update, %d to delete, %d unchanged",
		n[xjob.ActionCreate], n[xjob.ActionUpdate], n[xjob.ActionDelete], res.Unchanged)
	if k := n[xjob.ActionKeep]; k > 0 {
		out += fmt.Sprintf(", %d where xjob's values stay", k)
	}
	return out
}

// readManifest reads a YAML or JSON manifest, refusing unknown fields.
// It returns the problems it found in the file (each with its field's
// line) beside the manifest of what could be read, so that the server's
// problems can be asked for in the same round.
func (a *app) readManifest(path string) (xjob.Manifest, positions, []string, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(a.stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return xjob.Manifest{}, positions{}, nil, usagef("--file: %v", err)
	}
	m, pos, probs, err := parseManifestAll(data)
	if err != nil {
		return xjob.Manifest{}, pos, nil, badInput{fmt.Errorf("manifest %s: %w", path, err)}
	}
	return m, pos, probs, nil
}

// positions are where a manifest's items start, to name them in problems.
type positions struct {
	groups, jobs []itemPos
}

type itemPos struct {
	line int
	name string
	// fields are the lines of the item's fields, by name.
	fields map[string]int
	// bad are the fields the file's own problems name: the server's
	// problems with them follow from their being left out, and are not
	// repeated.
	bad map[string]bool
}

// item finds the item a problem field such as "jobs[3].children" names,
// and the rest of the field ("children").
func (p positions) item(field string) (*itemPos, string, string) {
	for _, kind := range []struct {
		prefix, noun string
		items        []itemPos
	}{{"groups[", "group", p.groups}, {"jobs[", "job", p.jobs}} {
		rest, ok := strings.CutPrefix(field, kind.prefix)
		if !ok {
			continue
		}
		idx, sub, ok := strings.Cut(rest, "]")
		i, err := strconv.Atoi(idx)
		if !ok || err != nil || i < 0 || i >= len(kind.items) {
			return nil, "", ""
		}
		return &kind.items[i], kind.noun, strings.TrimPrefix(sub, ".")
	}
	return nil, "", ""
}

// at describes a problem field such as "jobs[3].children" as
// `line 42, job "nightly": children`, the line being the field's when the
// file has it, else the item's.
func (p positions) at(field string) string {
	it, noun, sub := p.item(field)
	if it == nil {
		return field
	}
	line := it.line
	if l, ok := it.fields[sub]; ok {
		line = l
	}
	out := fmt.Sprintf("line %d, %s %q", line, noun, it.name)
	if sub != "" {
		out += ": " + sub
	}
	return out
}

// annotate rewrites problem fields with their item and line, and drops
// the problems of fields the file's own problems already name.
func (p positions) annotate(probs []xjob.FieldProblem) []xjob.FieldProblem {
	out := probs[:0]
	for _, pr := range probs {
		if it, _, sub := p.item(pr.Field); it != nil && it.bad[strings.SplitN(sub, ".", 2)[0]] {
			continue
		}
		pr.Field = p.at(pr.Field)
		out = append(out, pr)
	}
	return out
}

// manifestFields are the JSON names a manifest's groups and jobs accept,
// with the Go type each decodes into.
var manifestFields = map[string]map[string]reflect.Type{
	"groups": jsonFields(reflect.TypeFor[xjob.GroupSpec]()),
	"jobs":   jsonFields(reflect.TypeFor[xjob.JobSpec]()),
}

func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = t.Field(i).Type
		}
	}
	return out
}

// parseManifest decodes YAML or JSON (JSON is YAML) strictly: any
// problem is an error listing them all (see parseManifestAll).
func parseManifest(data []byte) (xjob.Manifest, positions, error) {
	m, pos, probs, err := parseManifestAll(data)
	if err == nil && len(probs) > 0 {
		err = fmt.Errorf("%d problems:\n  %s", len(probs), strings.Join(probs, "\n  "))
	}
	return m, pos, err
}

// parseManifestAll decodes YAML or JSON strictly, in one pass: every
// unknown field and every value of the wrong type is a problem naming its
// item and its own line. The manifest returned leaves those fields out,
// so that what remains can still be checked by the server. err is a file
// that cannot be read as a manifest at all.
func parseManifestAll(data []byte) (xjob.Manifest, positions, []string, error) {
	var m xjob.Manifest
	var pos positions
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return m, pos, nil, err
	}
	js, err := yamlToJSON(data)
	if err != nil {
		return m, pos, nil, err
	}
	if len(root.Content) != 1 {
		return m, pos, nil, nil // an empty file: an empty manifest
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return m, pos, nil, fmt.Errorf("line %d: a manifest is a mapping with groups and jobs", doc.Line)
	}
	// The same document as JSON values, item by item, to decode each
	// field on its own.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil {
		return m, pos, nil, fmt.Errorf("a manifest is a mapping with groups and jobs")
	}
	var probs []string
	clean := map[string][]map[string]json.RawMessage{}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		known, ok := manifestFields[k.Value]
		if !ok {
			probs = append(probs, fmt.Sprintf("line %d: unknown field %q (a manifest has groups and jobs)", k.Line, k.Value))
			continue
		}
		if v.Kind != yaml.SequenceNode {
			if v.Tag != "!!null" {
				probs = append(probs, fmt.Sprintf("line %d: %s must be a list", v.Line, k.Value))
			}
			continue
		}
		var items []json.RawMessage
		_ = json.Unmarshal(raw[k.Value], &items) // a sequence here, so a JSON array
		noun := strings.TrimSuffix(k.Value, "s")
		for n, it := range v.Content {
			ip := itemPos{line: it.Line, name: itemName(it, k.Value), fields: map[string]int{}, bad: map[string]bool{}}
			var values map[string]json.RawMessage
			if it.Kind != yaml.MappingNode || n >= len(items) || json.Unmarshal(items[n], &values) != nil {
				probs = append(probs, fmt.Sprintf("line %d: each of %s must be a mapping", it.Line, k.Value))
				ip.bad[""] = true
			}
			for j := 0; values != nil && j+1 < len(it.Content); j += 2 {
				f := it.Content[j]
				ip.fields[f.Value] = f.Line
				t, ok := known[f.Value]
				if !ok {
					probs = append(probs, fmt.Sprintf("line %d, %s %q: unknown field %q%s", f.Line, noun, ip.name,
						f.Value, suggest(f.Value, known)))
					delete(values, f.Value)
					continue
				}
				if err := json.Unmarshal(values[f.Value], reflect.New(t).Interface()); err != nil {
					probs = append(probs, fmt.Sprintf("line %d, %s %q: %s: %s", f.Line, noun, ip.name, f.Value, valueProblem(err, t)))
					delete(values, f.Value)
					ip.bad[f.Value] = true
				}
			}
			if values != nil {
				clean[k.Value] = append(clean[k.Value], values)
			}
			if k.Value == "groups" {
				pos.groups = append(pos.groups, ip)
			} else {
				pos.jobs = append(pos.jobs, ip)
			}
		}
	}
	cleaned, err := json.Marshal(clean)
	if err != nil {
		return m, pos, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(cleaned))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, pos, nil, err // every field was decoded alone above
	}
	return m, pos, probs, nil
}

// valueProblem says why a value does not fit a field of type t.
func valueProblem(err error, t reflect.Type) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := map[reflect.Kind]string{reflect.String: "a string", reflect.Int: "a whole number", reflect.Int64: "a whole number",
			reflect.Bool: "true or false", reflect.Slice: "a list", reflect.Struct: "a mapping"}[t.Kind()]
		if want == "" {
			want = "a " + t.String()
		}
		return fmt.Sprintf("must be %s, not %s", want, te.Value)
	}
	return err.Error()
}

// itemName is how a problem names a group (its appname) or job (its name, or #id).
func itemName(it *yaml.Node, kind string) string {
	want := "name"
	if kind == "groups" {
		want = "appname"
	}
	var id string
	for j := 0; j+1 < len(it.Content); j += 2 {
		switch it.Content[j].Value {
		case want:
			return it.Content[j+1].Value
		case "id":
			id = "#" + it.Content[j+1].Value
		}
	}
	return id
}

// suggest names the known field closest to an unknown one, if one is close.
func suggest(name string, known map[string]reflect.Type) string {
	best, bestD := "", 3
	for k := range known {
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func (a *app) exportCommand() *cobra.Command {
	var file, format string
	cmd := &cobra.Command{
		Use:   "export [-f FILE] [--format yaml|json]",
		Short: "Write every group and job as a manifest that apply reads back",
		Long: `Write every group and job as a manifest that "xjob apply" reads back.

Jobs keep their ids (and names), groups their appname and id, so applying
the export to an empty server recreates them under the same ids. The format
is --format, else the file's extension (.json or .yaml/.yml), else -o json
when given, else YAML.`,
		Example: `  xjob export -f jobs.yaml
  xjob export --format json | jq '.jobs[].name'`,
		Args: noArgs,
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "write to this file instead of stdout")
	cmd.Flags().StringVar(&format, "format", "", "yaml or json (default: from the file's extension, else yaml)")
	_ = cmd.RegisterFlagCompletionFunc("format", fixedCompletion("yaml,json"))
	cmd.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		if format == "" {
			switch ext := strings.ToLower(filepath.Ext(file)); {
			case ext == ".json":
				format = "json"
			case ext == ".yaml" || ext == ".yml":
				format = "yaml"
			case a.output == "json": // -o json, as every other command
				format = "json"
			default:
				format = "yaml"
			}
		}
		if format != "yaml" && format != "json" {
			return usagef("--format must be yaml or json, got %q", format)
		}
		m, err := c.Export(ctx)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		data, err := encodeManifest(m, format)
		if err != nil {
			return err
		}
		if file == "" {
			// The manifest is for apply, byte for byte: it bypasses the
			// terminal escaping (YAML and JSON already escape control
			// characters; only bidi marks could differ).
			_, err = rawWriter(a.stdout).Write(data)
			return err
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		fmt.Fprintf(a.stderr, "Wrote %d groups and %d jobs to %s.\n", len(m.Groups), len(m.Jobs), file)
		return nil
	})
	return cmd
}

func encodeManifest(m xjob.Manifest, format string) ([]byte, error) {
	if format == "json" {
		b, err := json.MarshalIndent(m, "", "  ")
		return append(b, '\n'), err
	}
	b, err := marshalYAML(m)
	if err != nil {
		return nil, fmt.Errorf("encode yaml: %w", err)
	}
	return b, nil
}
