package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/testenv/awsstack"
)

// TestCPUFile carries a -bootstraps run's CPU an invocation to the
// in-process run's prices, per workload, and refuses what is not a CPU
// time.
func TestCPUFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		ok         bool
		w5Ring     time.Duration // p.CPU["ring"] for W5
	}{
		{"two workloads", `{"W5":{"ring":4.5,"callback":2.1},"W1":{"ring":46.9}}`, true, 4500 * time.Microsecond},
		{"empty", `{}`, true, 0},
		{"negative", `{"W5":{"ring":-1}}`, false, 0},
		{"past Lambda's limit", `{"W5":{"ring":1e9}}`, false, 0},
		{"not JSON", `W5 ring 4.5`, false, 0},
		{"wrong shape", `{"W5":4.5}`, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "cpu.json")
			if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			tab, err := readCPU(path)
			if (err == nil) != tt.ok {
				t.Fatalf("readCPU: %v, want ok %v", err, tt.ok)
			}
			if !tt.ok {
				return
			}
			p := tab.prices(awsstack.ListPrices(), "W5")
			if p.CPU["ring"] != tt.w5Ring {
				t.Errorf("W5 ring CPU %v, want %v", p.CPU["ring"], tt.w5Ring)
			}
			// Written back, it reads the same.
			out := filepath.Join(t.TempDir(), "again.json")
			if err := writeCPU(out, tab); err != nil {
				t.Fatal(err)
			}
			again, err := readCPU(out)
			if err != nil || len(again) != len(tab) || again["W5"]["ring"] != tab["W5"]["ring"] {
				t.Errorf("round trip %v %v, want %v", again, err, tab)
			}
		})
	}
}

// FuzzCPUFile: whatever a -cpu-file holds, parseCPU either refuses it
// or yields CPU times an invocation can have, which price without
// panicking.
func FuzzCPUFile(f *testing.F) {
	f.Add([]byte(`{"W5":{"ring":4.5,"callback":2.1},"W1":{"ring":46.9}}`))
	f.Add([]byte(`{"W5":{"ring":-1}}`))
	f.Add([]byte(`{"W5":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := parseCPU(b)
		if err != nil {
			return
		}
		for w, fns := range tab {
			p := tab.prices(awsstack.ListPrices(), w)
			for fn := range fns {
				if c := p.CPU[fn]; c < 0 || c > 15*time.Minute {
					t.Fatalf("%s %s: CPU %v accepted", w, fn, c)
				}
			}
		}
	})
}
