package cli

// Jobs as code: `xjob apply -f jobs.yaml` and `xjob export`. The manifest
// (xjob.Manifest) is read as YAML or JSON: YAML is turned into JSON
// (yamljson.go) and decoded with the JSON field names, so one set of names
// (the API's) serves both formats and unknown fields are refused in both.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/adminclient"
)

func (a *app) applyCommand() *cobra.Command {
	var file string
	var p adminclient.ApplyParams
	cmd := &cobra.Command{
		Use:   "apply -f FILE [--prune] [--dry-run]",
		Short: "Make the server's groups and jobs match a YAML or JSON manifest",
		Long: `Make the server's groups and jobs match a YAML or JSON manifest.

A manifest lists executor groups (keyed by appname) and jobs (keyed by name,
or by id when they have none); "xjob export" writes one. apply prints the
plan, then carries it out: it creates what is missing, updates what differs
and, with --prune, deletes every group and job the manifest does not declare.
Applying the same manifest again plans nothing. The server checks the whole
manifest before it writes anything: one bad item and nothing changes.`,
		Example: `  xjob apply -f jobs.yaml --dry-run
  xjob apply -f jobs.yaml --prune
  xjob export > jobs.yaml`,
		Args: noArgs,
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "manifest file, YAML or JSON (`-` for stdin)")
	cmd.Flags().BoolVar(&p.Prune, "prune", false, "delete the groups and jobs the manifest does not declare")
	cmd.Flags().BoolVar(&p.DryRun, "dry-run", false, "print the plan only")
	_ = cmd.MarkFlagRequired("file")
	cmd.RunE = a.do(func(ctx context.Context, c *adminclient.Client, _ []string) error {
		m, err := a.readManifest(file)
		if err != nil {
			return err
		}
		if p.Prune && len(m.Groups)+len(m.Jobs) == 0 {
			return usagef("--prune with an empty manifest would delete everything; refusing")
		}
		return a.apply(ctx, c, m, p)
	})
	return cmd
}

// apply prints the plan of m, then (unless dry) carries it out and prints
// what was done.
func (a *app) apply(ctx context.Context, c *adminclient.Client, m xjob.Manifest, p adminclient.ApplyParams) error {
	plan, err := c.Apply(ctx, m, adminclient.ApplyParams{Prune: p.Prune, DryRun: true})
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if p.DryRun || len(plan.Plan) == 0 {
		return a.emit(plan, func(w io.Writer) { printPlan(w, plan, "Plan") })
	}
	if a.output == "table" {
		printPlan(a.stdout, plan, "Plan")
	}
	res, err := c.Apply(ctx, m, adminclient.ApplyParams{Prune: p.Prune})
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	return a.emit(res, func(w io.Writer) { fmt.Fprintf(w, "Applied: %s.\n", planSummary(res)) })
}

func printPlan(w io.Writer, res xjob.ApplyResult, title string) {
	for _, it := range res.Plan {
		sign := map[string]string{xjob.ActionCreate: "+", xjob.ActionUpdate: "~", xjob.ActionDelete: "-"}[it.Action]
		line := fmt.Sprintf("%s %s %s", sign, it.Kind, it.Key)
		if it.ID != 0 {
			line += fmt.Sprintf(" (id %d)", it.ID)
		}
		if len(it.Changes) > 0 {
			line += ": " + strings.Join(it.Changes, ", ")
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "%s: %s.\n", title, planSummary(res))
}

func planSummary(res xjob.ApplyResult) string {
	n := map[string]int{}
	for _, it := range res.Plan {
		n[it.Action]++
	}
	return fmt.Sprintf("%d to create, %d to update, %d to delete, %d unchanged",
		n[xjob.ActionCreate], n[xjob.ActionUpdate], n[xjob.ActionDelete], res.Unchanged)
}

// readManifest reads a YAML or JSON manifest, refusing unknown fields.
func (a *app) readManifest(path string) (xjob.Manifest, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(a.stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return xjob.Manifest{}, usagef("--file: %v", err)
	}
	m, err := parseManifest(data)
	if err != nil {
		return xjob.Manifest{}, usagef("--file %s: %v", path, err)
	}
	return m, nil
}

// parseManifest decodes YAML or JSON (JSON is YAML) strictly.
func parseManifest(data []byte) (xjob.Manifest, error) {
	var m xjob.Manifest
	js, err := yamlToJSON(data)
	if err != nil {
		return m, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, err
	}
	return m, nil
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
