package awsstack

import "testing"

// TestMeterExclude: an excluded function's invocations, cold starts,
// requests, logs, metrics and HTTP API requests are not counted; the
// others' still are.
func TestMeterExclude(t *testing.T) {
	t.Parallel()
	m := NewMeter()
	m.Exclude("web")
	emf := []byte(`{"_aws":{"CloudWatchMetrics":[{"Namespace":"xjob","Dimensions":[[]],"Metrics":[{"Name":"Reads"}]}]}}`)
	for _, fn := range []string{"web", "callback"} {
		m.Begin(fn)()
		m.ColdStart(fn)
		m.record(fn, "dynamodb:GetItem", OpStat{Requests: 1, Reported: 0.5})
		m.LogWrite(fn, 100)
		m.MetricRecords(fn, emf)
		m.HTTPRequestTo(fn)
	}
	m.HTTPRequest() // a request counted without a function
	u := m.Snapshot()
	if _, ok := u.Invokes["web"]; ok || u.Ops["web"] != nil || u.LogBytes["web"] != 0 || len(u.MetricSeries("web")) != 0 {
		t.Errorf("excluded web counted: invokes %+v ops %+v logs %d metrics %v", u.Invokes["web"], u.Ops["web"], u.LogBytes["web"], u.MetricSeries("web"))
	}
	if in := u.Invokes["callback"]; in.Invocations != 1 || in.ColdStarts != 1 || u.Ops["callback"]["dynamodb:GetItem"].Requests != 1 ||
		u.LogBytes["callback"] != 100 || len(u.MetricSeries("callback")) != 1 {
		t.Errorf("callback not counted: invokes %+v ops %+v logs %d metrics %v", in, u.Ops["callback"], u.LogBytes["callback"], u.MetricSeries("callback"))
	}
	if u.HTTPRequests != 2 {
		t.Errorf("HTTP API requests = %d, want 2 (callback's and the one without a function; not web's)", u.HTTPRequests)
	}
}
