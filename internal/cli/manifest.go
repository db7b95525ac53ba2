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
		m, pos, err := a.readManifest(file)
		if err != nil {
			return err
		}
		if p.Prune && len(m.Groups)+len(m.Jobs) == 0 {
			return usagef("--prune with an empty manifest would delete everything; refusing")
		}
		err = a.apply(ctx, c, m, p, yes)
		if apiErr, ok := adminclient.AsAPIError(err); ok {
			pos.annotate(apiErr.Problems)
		}
		return err
	})
	return cmd
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
// Every problem found is reported at once, with the item and line.
func (a *app) readManifest(path string) (xjob.Manifest, positions, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(a.stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return xjob.Manifest{}, positions{}, usagef("--file: %v", err)
	}
	m, pos, err := parseManifest(data)
	if err != nil {
		return xjob.Manifest{}, pos, badInput{fmt.Errorf("manifest %s: %w", path, err)}
	}
	return m, pos, nil
}

// positions are where a manifest's items start, to name them in problems.
type positions struct {
	groups, jobs []itemPos
}

type itemPos struct {
	line int
	name string
}

// at describes a problem field such as "jobs[3].children" as
// `line 42, job "nightly": children`.
func (p positions) at(field string) string {
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
			return field
		}
		it := kind.items[i]
		out := fmt.Sprintf("line %d, %s %q", it.line, kind.noun, it.name)
		if sub = strings.TrimPrefix(sub, "."); sub != "" {
			out += ": " + sub
		}
		return out
	}
	return field
}

// annotate rewrites problem fields with their item and line.
func (p positions) annotate(probs []xjob.FieldProblem) {
	for i := range probs {
		probs[i].Field = p.at(probs[i].Field)
	}
}

// manifestFields are the JSON names a manifest's groups and jobs accept.
var manifestFields = map[string]map[string]bool{
	"groups": jsonNames(reflect.TypeFor[xjob.GroupSpec]()),
	"jobs":   jsonNames(reflect.TypeFor[xjob.JobSpec]()),
}

func jsonNames(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}

// parseManifest decodes YAML or JSON (JSON is YAML) strictly. Unknown
// fields and values of the wrong type are all reported, each with its
// item and line.
func parseManifest(data []byte) (xjob.Manifest, positions, error) {
	var m xjob.Manifest
	var pos positions
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return m, pos, err
	}
	var probs []string
	if len(root.Content) == 1 {
		doc := root.Content[0]
		if doc.Kind != yaml.MappingNode {
			return m, pos, fmt.Errorf("line %d: a manifest is a mapping with groups and jobs", doc.Line)
		}
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
			noun := strings.TrimSuffix(k.Value, "s")
			for _, it := range v.Content {
				ip := itemPos{line: it.Line, name: itemName(it, k.Value)}
				if k.Value == "groups" {
					pos.groups = append(pos.groups, ip)
				} else {
					pos.jobs = append(pos.jobs, ip)
				}
				if it.Kind != yaml.MappingNode {
					probs = append(probs, fmt.Sprintf("line %d: each of %s must be a mapping", it.Line, k.Value))
					continue
				}
				for j := 0; j+1 < len(it.Content); j += 2 {
					f := it.Content[j]
					if !known[f.Value] {
						probs = append(probs, fmt.Sprintf("line %d, %s %q: unknown field %q%s", f.Line, noun, ip.name,
							f.Value, suggest(f.Value, known)))
					}
				}
			}
		}
	}
	if len(probs) > 0 {
		return m, pos, fmt.Errorf("%d problems:\n  %s", len(probs), strings.Join(probs, "\n  "))
	}
	js, err := yamlToJSON(data)
	if err != nil {
		return m, pos, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, pos, fmt.Errorf("%s", typeProblem(err, pos))
	}
	return m, pos, nil
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

// typeProblem turns a JSON decoding error into a manifest problem.
func typeProblem(err error, pos positions) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		field := te.Field
		// "jobs.executorTimeout" does not say which job; keep JSON's words.
		return fmt.Sprintf("%s: a %s cannot hold %s", field, te.Type, te.Value)
	}
	return err.Error()
}

// suggest names the known field closest to an unknown one, if one is close.
func suggest(name string, known map[string]bool) string {
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
follows the file's extension (.json or .yaml/.yml), else --format (yaml).`,
		Example: `  xjob export -f jobs.yaml
  xjob export --format json | jq '.jobs[].name'`,
		Args: noArgs,
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "write to this file instead of stdout")
	cmd.Flags().StringVar(&format, "format", "", "yaml or json (default: from the file's extension, else yaml)")
	_ = cmd.RegisterFlagCompletionFunc("format", fixedCompletion("yaml,json"))
	cmd.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		if format == "" {
			switch strings.ToLower(filepath.Ext(file)) {
			case ".json":
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
