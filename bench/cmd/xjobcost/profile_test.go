package main

import (
	"testing"

	"github.com/xjobdev/xjob/bench/harness"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
)

func TestParseW5Profiles(t *testing.T) {
	t.Parallel()
	mem := map[string]int{"ring": 256, "callback": 256}
	for _, tc := range []struct {
		in    string
		names []string
		bad   bool
	}{
		{in: "sparse,default", names: []string{"sparse", "default"}},
		{in: "default", names: []string{"default"}},
		{in: " sparse ", names: []string{"sparse"}},
		{in: "", bad: true},
		{in: "dense", bad: true},
		{in: "sparse,sparse", bad: true},
	} {
		got, err := parseW5Profiles(tc.in, 4, mem)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: no error", tc.in)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if len(got) != len(tc.names) {
			t.Fatalf("%q: %d profiles, want %d", tc.in, len(got), len(tc.names))
		}
		for i, n := range tc.names {
			if got[i].name != n {
				t.Errorf("%q: profile %d is %s, want %s", tc.in, i, got[i].name, n)
			}
		}
	}
}

// The sparse profile prices the ring at 128 MB and leaves the caller's
// memory map alone; the default profile prices at the template's.
func TestW5ProfilePrices(t *testing.T) {
	t.Parallel()
	ps, err := parseW5Profiles("sparse,default", 4, map[string]int{"ring": 256})
	if err != nil {
		t.Fatal(err)
	}
	base := awsstack.Prices{Memory: map[string]int{"ring": 256, "callback": 256}}
	sparse := ps[0].prices(base)
	if sparse.Memory["ring"] != 128 || sparse.Memory["callback"] != 256 {
		t.Errorf("sparse memory %v, want ring 128 and callback 256", sparse.Memory)
	}
	if base.Memory["ring"] != 256 {
		t.Errorf("the caller's memory changed: %v", base.Memory)
	}
	if d := ps[1].prices(base); d.Memory["ring"] != 256 {
		t.Errorf("default memory %v, want the template's", d.Memory)
	}
	if w := ps[0].apply(harness.Workload{Name: "W5"}); w.Shards != 1 || w.LogPages != 1 || w.Memory["ring"] != 128 {
		t.Errorf("sparse workload %+v", w)
	}
}
