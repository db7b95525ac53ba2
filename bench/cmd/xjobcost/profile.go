package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/xjobdev/xjob/bench/harness"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
)

// w5Profile is a deployment W5 runs on: the stack parameters a sparse
// deployment changes (docs/aws.md, "Sparse deployments"), zero for the
// stack's defaults.
type w5Profile struct {
	name, label      string
	shards, logPages int
	// memory are functions' MemorySize in MB other than the template's.
	memory map[string]int
}

// apply is w deployed on the profile.
func (p w5Profile) apply(w harness.Workload) harness.Workload {
	w.Shards, w.LogPages, w.Memory = p.shards, p.logPages, p.memory
	return w
}

// prices is pr with the profile's function memory.
func (p w5Profile) prices(pr awsstack.Prices) awsstack.Prices {
	if len(p.memory) == 0 {
		return pr
	}
	pr.Memory = maps.Clone(pr.Memory)
	if pr.Memory == nil {
		pr.Memory = map[string]int{}
	}
	maps.Copy(pr.Memory, p.memory)
	return pr
}

// parseW5Profiles reads -w5-profiles: a comma-separated list of sparse
// and default, each at most once. shards is -shards and mem the
// template's memory, for the default profile's label.
func parseW5Profiles(v string, shards int, mem map[string]int) ([]w5Profile, error) {
	known := map[string]w5Profile{
		"sparse":  {name: "sparse", label: "Shards=1, LogPages=1, RingMemorySize=128", shards: 1, logPages: 1, memory: map[string]int{"ring": 128}},
		"default": {name: "default", label: fmt.Sprintf("Shards=%d, LogPages=16, RingMemorySize=%d", shards, mem["ring"])},
	}
	var out []w5Profile
	var seen []string
	for name := range strings.SplitSeq(v, ",") {
		name = strings.TrimSpace(name)
		p, ok := known[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("unknown profile %q (sparse, default)", name)
		case slices.Contains(seen, name):
			return nil, fmt.Errorf("profile %q named twice", name)
		}
		seen = append(seen, name)
		out = append(out, p)
	}
	return out, nil
}
