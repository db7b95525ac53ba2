package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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

// PrintTable writes the results as an aligned Markdown table. When a run
// was on the emulated AWS stack, three columns are added: Lambda
// invocations and AWS requests per trigger, and $ per million triggers.
func PrintTable(w io.Writer, rs []*Result) {
	withAWS := slices.ContainsFunc(rs, func(r *Result) bool { return r.AWS != nil })
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, "| "+strings.Join(cells, "\t| ")+"\t|") }
	head := []string{"scenario", "jobs", "stored", "window s", "fired/expected", "trig/s", "p50 ms", "p90 ms", "p99 ms",
		"max ms", "lost", "skipped", "dup", "cpu s", "rss MB", "scan p50/p99 ms"}
	if withAWS {
		head = append(head, "λ inv/trg", "aws req/trg", "$/M trig")
	}
	row(head...)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = "---"
	}
	row(sep...)
	f := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	for _, r := range rs {
		cells := []string{r.Scenario, fmt.Sprint(r.Jobs), fmt.Sprint(r.Stored), fmt.Sprintf("%.0f", r.WindowSeconds),
			fmt.Sprintf("%d/%d", r.Fired, r.Expected), fmt.Sprintf("%.0f", r.Rate),
			f(r.LatenessP50), f(r.LatenessP90), f(r.LatenessP99), f(r.LatenessMax),
			fmt.Sprint(r.Lost), fmt.Sprint(r.Skipped), fmt.Sprint(r.Duplicates),
			f(r.Usage.CPUSeconds), fmt.Sprintf("%.0f", r.Usage.PeakRSSMB), f(r.ScanTick.P50) + "/" + f(r.ScanTick.P99)}
		switch {
		case r.AWS != nil:
			c := r.AWS.Cost
			cells = append(cells, fmt.Sprintf("%.3f", c.InvocationsPerTrigger), fmt.Sprintf("%.2f", c.AWSRequestsPerTrigger),
				fmt.Sprintf("%.2f", c.TotalPerM))
		case withAWS:
			cells = append(cells, "–", "–", "–")
		}
		row(cells...)
	}
	_ = tw.Flush()
}

// PrintCost writes an AWS run's cost breakdown per function: invocations,
// requests per trigger by service, capacity units per trigger and $ per
// million triggers (nothing for other runs).
func PrintCost(w io.Writer, r *Result) {
	if r.AWS == nil {
		return
	}
	c := r.AWS.Cost
	fmt.Fprintf(w, "\n%s: AWS cost per trigger (%d triggers in the window; Lambda %.0f MB, measured handler time)\n", r.Scenario, c.Triggers, c.Prices.MemoryGB*1000)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, "| "+strings.Join(cells, "\t| ")+"\t|") }
	row("function", "invokes", "ms/inv", "ddb/trg", "sqs+sns/trg", "WRU/trg", "RRU/trg", "$ddb/M", "$sqs/M", "$λreq/M", "$λdur/M", "$total/M")
	row("---", "---", "---", "---", "---", "---", "---", "---", "---", "---", "---", "---")
	f2 := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	for _, fc := range c.Functions {
		row(fc.Function, fmt.Sprint(fc.Invocations), fmt.Sprintf("%.1f", fc.MsPerInvoke), f2(fc.DynamoDBPerTrigger),
			f2(fc.SQSPerTrigger+fc.SNSPerTrigger), f2(fc.WRUPerTrigger), f2(fc.RRUPerTrigger),
			f2(fc.DynamoDBPerM), f2(fc.SQSPerM), f2(fc.LambdaRequestsPerM), f2(fc.LambdaDurationPerM), f2(fc.TotalPerM))
	}
	row("http api", fmt.Sprint(r.AWS.Usage.HTTPRequests), "", "", "", "", "", "", "", "", "", f2(c.HTTPPerM))
	row("TOTAL", "", "", f2(c.DynamoDBPerTrigger), f2(c.SQSPerTrigger), "", "", "", "", "", "", f2(c.TotalPerM))
	_ = tw.Flush()
	if n := len(r.AWS.InvocationErrors); n > 0 {
		fmt.Fprintf(w, "%d invocation errors, first: %s\n", n, r.AWS.InvocationErrors[0])
	}
}
