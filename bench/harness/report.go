package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes r to dir/<scenario>-<stamp>.json and returns the path.
func WriteJSON(dir, stamp string, r *Result) (string, error) {
	path := filepath.Join(dir, r.Scenario+"-"+stamp+".json")
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("result json: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("result json: %w", err)
	}
	return path, nil
}

// PrintTable writes the results as an aligned Markdown table.
func PrintTable(w io.Writer, rs []*Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, "| "+strings.Join(cells, "\t| ")+"\t|") }
	head := []string{"scenario", "jobs", "stored", "window s", "fired/expected", "trig/s", "p50 ms", "p90 ms", "p99 ms",
		"max ms", "lost", "skipped", "dup", "cpu s", "rss MB", "scan p50/p99 ms"}
	row(head...)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = "---"
	}
	row(sep...)
	f := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	for _, r := range rs {
		row(r.Scenario, fmt.Sprint(r.Jobs), fmt.Sprint(r.Stored), fmt.Sprintf("%.0f", r.WindowSeconds),
			fmt.Sprintf("%d/%d", r.Fired, r.Expected), fmt.Sprintf("%.0f", r.Rate),
			f(r.LatenessP50), f(r.LatenessP90), f(r.LatenessP99), f(r.LatenessMax),
			fmt.Sprint(r.Lost), fmt.Sprint(r.Skipped), fmt.Sprint(r.Duplicates),
			f(r.Usage.CPUSeconds), fmt.Sprintf("%.0f", r.Usage.PeakRSSMB), f(r.ScanTick.P50)+"/"+f(r.ScanTick.P99))
	}
	_ = tw.Flush()
}
