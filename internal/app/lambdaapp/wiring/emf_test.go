package wiring_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob/clock"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/metric"
)

// TestEMF checks the records CloudWatch Logs turns into metrics: one JSON
// line each, the _aws directive naming the namespace, the FunctionName
// dimension and every metric with its unit, the values at the top level;
// Counters writes the counters' growth since its last call, nothing when
// none grew.
func TestEMF(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	e := wiring.NewEMF(&out, "stack-ring", clock.NewFake(time.UnixMilli(1_700_000_000_123)))
	e.Put(map[string]float64{wiring.MetricFires: 3, wiring.MetricLatenessMax: 42})
	var rec struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		FunctionName  string
		Fires         float64
		LatenessMaxMs float64
	}
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil || !strings.HasSuffix(out.String(), "}\n") {
		t.Fatalf("record %q: %v", out.String(), err)
	}
	cw := rec.AWS.CloudWatchMetrics
	if rec.AWS.Timestamp != 1_700_000_000_123 || len(cw) != 1 || cw[0].Namespace != wiring.MetricNamespace ||
		len(cw[0].Dimensions) != 1 || cw[0].Dimensions[0][0] != "FunctionName" || rec.FunctionName != "stack-ring" ||
		rec.Fires != 3 || rec.LatenessMaxMs != 42 || len(cw[0].Metrics) != 2 ||
		cw[0].Metrics[0].Name != "Fires" || cw[0].Metrics[0].Unit != "Count" || cw[0].Metrics[1].Unit != "Milliseconds" {
		t.Errorf("record %s", out.String())
	}

	out.Reset()
	var m metric.Metrics
	e.Counters(&m)
	if out.Len() != 0 {
		t.Errorf("no counter grew, but a record was written: %s", out.String())
	}
	m.Trigger(true, time.Millisecond)
	m.Trigger(true, time.Millisecond)
	m.Result(500)
	e.Counters(&m)
	var c map[string]any
	if err := json.Unmarshal(out.Bytes(), &c); err != nil || c["Triggers"] != 2.0 || c["Results"] != 1.0 || c["ResultFailures"] != 1.0 {
		t.Errorf("counters record %s (%v)", out.String(), err)
	}
	out.Reset()
	m.Trigger(true, time.Millisecond)
	e.Counters(&m)
	if err := json.Unmarshal(out.Bytes(), &c); err != nil || c["Triggers"] != 1.0 {
		t.Errorf("second counters record %s, want the growth since the first (%v)", out.String(), err)
	}
}
