package metric

import (
	"testing"
	"time"
)

func TestSnapshot(t *testing.T) {
	t.Parallel()
	var m Metrics
	for range 98 {
		m.Trigger(true, 3*time.Millisecond)
	}
	m.Trigger(true, 40*time.Millisecond)
	m.Trigger(true, 2*time.Hour)
	m.Trigger(false, 0)
	m.Result(200)
	m.Result(502)
	m.Duplicate()
	m.Drop()
	m.ScanTick(30*time.Millisecond, 1000)
	m.ScanTick(300*time.Millisecond, 1000)
	s := m.Snapshot()
	want := Snapshot{Triggers: 100, TriggerFailures: 1, Duplicates: 1, Dropped: 1, Successes: 1, Failures: 1,
		FireDelayP50: 5, FireDelayP99: 50, FireDelayAvg: s.FireDelayAvg,
		ScanTicks: 2, ScanJobs: 2000, ScanTickP50: 50, ScanTickP99: 500}
	if s != want {
		t.Fatalf("Snapshot = %+v, want %+v", s, want)
	}
	var nilM *Metrics
	nilM.Trigger(true, time.Second) // must not panic
	if nilM.Snapshot() != (Snapshot{}) {
		t.Fatal("nil metrics must snapshot to zero")
	}
}
