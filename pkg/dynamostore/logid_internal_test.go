package dynamostore

import (
	"testing"

	"github.com/xjobdev/xjob"
)

func TestLogIDLayout(t *testing.T) {
	t.Parallel()
	const fire = 1_795_000_000_123 // 2026-11, in ms
	scheduled := xjob.Occurrence{JobID: 7, Type: xjob.TriggerCron, FireTime: fire}.ID(0)
	tests := []struct {
		name, occ string
		second    int64 // the id's high bits, -1: from the hash
	}{
		{"scheduled", scheduled, fire/1000 - logIDEpoch},
		{"misfire names the same fire", xjob.Occurrence{JobID: 7, Type: xjob.TriggerMisfire, FireTime: fire}.ID(0), fire/1000 - logIDEpoch},
		{"manual", xjob.Occurrence{JobID: 7, Type: xjob.TriggerManual, Ref: "abc"}.ID(0), -1},
		{"before the epoch", "j7/t5/s0", -1},
		{"not a number", "j7/tx/s0", -1},
		{"free form", "occ-1", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for probe := range logIDProbes {
				id := logID(logIDHash, tt.occ, probe)
				if id <= 0 || id >= 1<<53 {
					t.Fatalf("probe %d: id %d outside (0, 2^53)", probe, id)
				}
				if again := logID(logIDHash, tt.occ, probe); again != id {
					t.Fatalf("probe %d: id %d then %d", probe, id, again)
				}
			}
			if logID(logIDHash, tt.occ, 0) == logID(logIDHash, tt.occ, 1) {
				t.Fatal("probes 0 and 1 share an id")
			}
			if got := logID(logIDHash, tt.occ, 0) >> logIDSlotBits; tt.second >= 0 && got != tt.second {
				t.Fatalf("id's second = %d, want %d", got, tt.second)
			}
		})
	}
}

func FuzzOccurrenceFireTime(f *testing.F) {
	for _, s := range []string{"j1/t1795000000123/s0", "j1/MANUAL/rx/s0", "", "/t/", "j/t-5/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, occ string) {
		for probe := range 2 {
			if id := logID(logIDHash, occ, probe); id <= 0 || id >= 1<<53 {
				t.Fatalf("%q probe %d: id %d outside (0, 2^53)", occ, probe, id)
			}
		}
	})
}
