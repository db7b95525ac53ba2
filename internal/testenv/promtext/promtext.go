// Package promtext reads a Prometheus text exposition back for tests:
// parsed by the Prometheus parser and checked by the linter promtool runs,
// so a test compares exact sample values rather than matching text (where
// "… 12" is a prefix of "… 120").
package promtext

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Samples parses text (the text format) and returns every sample by its
// series as the format writes it: the name, then the labels sorted by name
// in braces (xjob_triggers_total{result="success",type="CRON"}), with a
// histogram's _bucket (le label last), _sum and _count series. It fails t
// if text does not parse or promlint finds a problem with it.
func Samples(t testing.TB, text string) map[string]float64 {
	t.Helper()
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, text)
	}
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	out := map[string]float64{}
	for _, name := range slices.Sorted(maps.Keys(families)) {
		for _, m := range families[name].GetMetric() {
			labels := labelPairs(m.GetLabel())
			switch {
			case m.Histogram != nil:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					le := fmt.Sprintf(`le="%s"`, formatFloat(b.GetUpperBound()))
					out[series(name+"_bucket", append(labels[:len(labels):len(labels)], le))] = float64(b.GetCumulativeCount())
				}
				out[series(name+"_bucket", append(labels[:len(labels):len(labels)], `le="+Inf"`))] = float64(h.GetSampleCount())
				out[series(name+"_sum", labels)] = h.GetSampleSum()
				out[series(name+"_count", labels)] = float64(h.GetSampleCount())
			case m.Counter != nil:
				out[series(name, labels)] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[series(name, labels)] = m.GetGauge().GetValue()
			case m.Untyped != nil:
				out[series(name, labels)] = m.GetUntyped().GetValue()
			case m.Summary != nil:
				out[series(name+"_sum", labels)] = m.GetSummary().GetSampleSum()
				out[series(name+"_count", labels)] = float64(m.GetSummary().GetSampleCount())
			}
		}
	}
	return out
}

func labelPairs(ls []*dto.LabelPair) []string {
	out := make([]string, 0, len(ls)+1)
	for _, l := range ls {
		out = append(out, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	slices.Sort(out)
	return out
}

func series(name string, labels []string) string {
	if len(labels) == 0 {
		return name
	}
	return name + "{" + strings.Join(labels, ",") + "}"
}

// formatFloat writes a bucket bound as the text format does (0.005, 1, 60).
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
