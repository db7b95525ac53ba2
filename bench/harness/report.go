package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes r to dir/<scenario>-[baseline-]<stamp>.json and returns
// the path.
func WriteJSON(dir, stamp string, r *Result) (string, error) {
	tag := ""
	if r.Target != "" && r.Target != TargetCandidate {
		tag = r.Target + "-"
	}
	path := filepath.Join(dir, r.Scenario+"-"+tag+stamp+".json")
	// The profile lies beside the JSON: name it by its file name alone, so a
	// committed result carries no path of the machine that ran it.
	out := *r
	if out.Profile != "" {
		out.Profile = filepath.Base(out.Profile)
	}
	if out.AllocProfile != "" {
		out.AllocProfile = filepath.Base(out.AllocProfile)
	}
	data, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return "", fmt.Errorf("result json: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("result json: %w", err)
	}
	return path, nil
}

// PrintTable writes the results as an aligned Markdown table, one row per
// scenario and binary. When a run was on the emulated AWS stack, three
// columns are added: Lambda invocations and AWS requests per trigger, and
// $ per million triggers.
func PrintTable(w io.Writer, rs []*Result) {
	withAWS := slices.ContainsFunc(rs, func(r *Result) bool { return r.AWS != nil })
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, "| "+strings.Join(cells, "\t| ")+"\t|") }
	head := []string{"scenario", "xjob", "jobs", "stored", "window s", "fired/expected", "trig/s", "p50 ms", "p90 ms", "p99 ms",
		"max ms", "lost", "misfired", "pending", "skipped", "dup", "late", "drain s", "cpu s", "cpu µs/trg", "harness cpu s", "rss MB", "scan ticks", "scan p50/p99 ms"}
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
		scan := fmt.Sprintf("%d/%d", r.Scan.P50Ms, r.Scan.P99Ms)
		ticks := fmt.Sprint(r.Scan.Ticks)
		if r.AWS != nil {
			scan, ticks = f(r.ScanTick.P50)+"/"+f(r.ScanTick.P99), fmt.Sprint(r.ScanTick.N)
		}
		rate := fmt.Sprintf("%.0f", r.Rate)
		if r.GraceSeconds > 0 && !r.Sustained {
			rate += " (behind)" // a steady run that needed a drain after the window
		}
		cells := []string{r.Scenario, label(r), fmt.Sprint(r.Jobs), fmt.Sprint(r.Stored), fmt.Sprintf("%.0f", r.WindowSeconds),
			fmt.Sprintf("%d/%d", r.Fired, r.Expected), rate,
			f(r.LatenessP50), f(r.LatenessP90), f(r.LatenessP99), f(r.LatenessMax),
			fmt.Sprint(r.Lost), fmt.Sprint(r.Misfired), fmt.Sprint(r.Pending), fmt.Sprint(r.Skipped), fmt.Sprint(r.Duplicates),
			fmt.Sprint(r.FiredLate), f(r.DrainSeconds),
			f(r.Usage.CPUSeconds), fmt.Sprintf("%.0f", r.CPUPerTriggerUs), fmt.Sprintf("%.2f", r.HarnessCPUSeconds),
			fmt.Sprintf("%.0f", r.Usage.PeakRSSMB), ticks, scan}
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

func label(r *Result) string {
	switch {
	case r.Target == "" && r.Label == "":
		return "–"
	case r.Label == "":
		return r.Target
	case r.Target == "":
		return r.Label
	}
	return r.Target + " " + r.Label
}

// PrintComparison writes, for every scenario run by both binaries, the
// baseline's and the candidate's key figures side by side with the ratio
// candidate / baseline (below 1 is better for times and CPU, above 1 for
// trig/s). Counts (lost, misfired, dup) are shown, not divided.
func PrintComparison(w io.Writer, rs []*Result) {
	base := map[string]*Result{}
	for _, r := range rs {
		if r.Target == TargetBaseline {
			base[r.Scenario] = r
		}
	}
	if len(base) == 0 {
		return
	}
	fmt.Fprintln(w, "\nbaseline → candidate (ratio = candidate / baseline)")
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(tw, "| "+strings.Join(cells, "\t| ")+"\t|") }
	row("scenario", "figure", "baseline", "candidate", "ratio")
	row("---", "---", "---", "---", "---")
	for _, c := range rs {
		b, ok := base[c.Scenario]
		if !ok || c.Target == TargetBaseline {
			continue
		}
		name := c.Scenario
		if c.Target != TargetCandidate {
			name += " (" + c.Target + ")" // a --variant's rows
		}
		for _, fig := range comparedFigures {
			bv, cv := fig.get(b), fig.get(c)
			if bv == 0 && cv == 0 && fig.skipZero {
				continue
			}
			row(name, fig.name, fig.format(bv), fig.format(cv), ratio(bv, cv, fig.count))
		}
	}
	_ = tw.Flush()
}

type figure struct {
	name     string
	get      func(*Result) float64
	count    bool // an absolute count: no ratio
	skipZero bool // left out when 0 for both
}

func (f figure) format(v float64) string {
	if f.count || v == math.Trunc(v) && math.Abs(v) >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

var comparedFigures = []figure{
	{name: "fired/expected %", get: func(r *Result) float64 {
		if r.Expected == 0 {
			return 0
		}
		return math.Round(1000*float64(r.Fired)/float64(r.Expected)) / 10
	}},
	{name: "within 1 s %", get: func(r *Result) float64 { return r.InTimePct }},
	{name: "trig/s", get: func(r *Result) float64 { return r.Rate }},
	{name: "lateness p50 ms", get: func(r *Result) float64 { return r.LatenessP50 }},
	{name: "lateness p99 ms", get: func(r *Result) float64 { return r.LatenessP99 }},
	{name: "lateness max ms", get: func(r *Result) float64 { return r.LatenessMax }},
	{name: "lost", get: func(r *Result) float64 { return float64(r.Lost) }, count: true},
	{name: "misfired", get: func(r *Result) float64 { return float64(r.Misfired) }, count: true},
	{name: "pending (late, still queued)", get: func(r *Result) float64 { return float64(r.Pending) }, count: true, skipZero: true},
	{name: "skipped", get: func(r *Result) float64 { return float64(r.Skipped) }, count: true, skipZero: true},
	{name: "dup", get: func(r *Result) float64 { return float64(r.Duplicates) }, count: true},
	{name: "fired late (after window + grace)", get: func(r *Result) float64 { return float64(r.FiredLate) }, count: true, skipZero: true},
	{name: "drain s after the window", get: func(r *Result) float64 { return r.DrainSeconds }, skipZero: true},
	{name: "cpu s (lifetime)", get: func(r *Result) float64 { return r.Usage.CPUSeconds }},
	{name: "cpu µs/trigger", get: func(r *Result) float64 { return r.CPUPerTriggerUs }},
	{name: "harness cpu s (span)", get: func(r *Result) float64 { return r.HarnessCPUSeconds }, skipZero: true},
	{name: "peak rss MB", get: func(r *Result) float64 { return math.Round(r.Usage.PeakRSSMB) }},
	{name: "scan tick p99 ms", get: func(r *Result) float64 { return float64(r.Scan.P99Ms) }, skipZero: true},
}

func ratio(b, c float64, count bool) string {
	switch {
	case count:
		return ""
	case b == 0 && c == 0:
		return "="
	case b == 0:
		return "–"
	}
	return fmt.Sprintf("×%.2f", c/b)
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
