package route

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/xjobdev/xjob"
)

// hashGolden is testdata/hash_golden.json: golden vectors for
// CONSISTENT_HASH computed by xxl-job's algorithm in Java (MD5 ring of 100
// virtual nodes per address in a TreeMap), written by the generator
// testdata/hashgen/HashGolden.java, which `make hash-golden` runs on a
// JDK 17.
type hashGolden struct {
	Hashes []struct {
		Key  string `json:"key"`
		Hash uint32 `json:"hash"`
	} `json:"hashes"`
	Routes []struct {
		Addrs []string   `json:"addrs"`
		Picks [][2]int64 `json:"picks"` // [job id, index in addrs of the address Java picked]
	} `json:"routes"`
}

func readHashGolden(t *testing.T) hashGolden {
	t.Helper()
	raw, err := os.ReadFile("testdata/hash_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g hashGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Hashes) < 5 || len(g.Routes) < 6 {
		t.Fatalf("hash_golden.json has %d hashes and %d address lists: truncated", len(g.Hashes), len(g.Routes))
	}
	return g
}

func TestRingHashGolden(t *testing.T) {
	t.Parallel()
	for _, tt := range readHashGolden(t).Hashes {
		if got := ringHash([]byte(tt.Key)); got != tt.Hash {
			t.Errorf("hash(%q) = %d, want %d", tt.Key, got, tt.Hash)
		}
	}
}

func TestConsistentHashGolden(t *testing.T) {
	t.Parallel()
	cached := New(Options{})
	uncached := New(Options{RingCacheSize: -1})
	for li, tt := range readHashGolden(t).Routes {
		if len(tt.Picks) < 30 {
			t.Fatalf("list %d: %d picks", li, len(tt.Picks))
		}
		for _, pick := range tt.Picks {
			jobID, i := pick[0], pick[1]
			if i < 0 || int(i) >= len(tt.Addrs) {
				t.Fatalf("list %d job %d: index %d", li, jobID, i)
			}
			want := tt.Addrs[i]
			if got := ConsistentHash(jobID, tt.Addrs); got != want {
				t.Errorf("list %d job %d: ConsistentHash = %s, want %s", li, jobID, got, want)
			}
			for name, r := range map[string]*Router{"cached": cached, "uncached": uncached} {
				res, err := r.Route(context.Background(), xjob.RouteConsistentHash, jobID, tt.Addrs)
				if err != nil || res.Address != want {
					t.Errorf("list %d job %d: %s Route = %q, %v; want %s", li, jobID, name, res.Address, err, want)
				}
			}
		}
	}
}

// TestRingCache checks that the cache tells lists apart (a changed list is
// a new ring), survives being emptied when full, and stays stable.
func TestRingCache(t *testing.T) {
	t.Parallel()
	r := New(Options{RingCacheSize: 2})
	lists := [][]string{
		{"http://a/", "http://b/"},
		{"http://b/", "http://a/"}, // same set, other order: another ring, same picks
		{"http://a/", "http://b/", "http://c/"},
		{"http://ab/"},
		{"http://a/b/"},
	}
	for round := range 3 {
		for li, addrs := range lists {
			for job := int64(1); job <= 50; job++ {
				res, err := r.Route(context.Background(), xjob.RouteConsistentHash, job, addrs)
				if err != nil {
					t.Fatal(err)
				}
				if want := ConsistentHash(job, addrs); res.Address != want {
					t.Fatalf("round %d list %d job %d: cached %s, want %s", round, li, job, res.Address, want)
				}
			}
		}
	}
	if n := len(r.rings.m); n > 2 {
		t.Errorf("cache holds %d rings, limit 2", n)
	}
	if listKey([]string{"ab"}) == listKey([]string{"a", "b"}) {
		t.Error("listKey does not separate addresses")
	}
}

// TestConsistentHashSpreads is a sanity check that 100 virtual nodes spread
// jobs over every executor.
func TestConsistentHashSpreads(t *testing.T) {
	t.Parallel()
	addrs := benchAddrs(10)
	ring := buildRing(addrs)
	counts := map[string]int{}
	for job := int64(1); job <= 10000; job++ {
		counts[ring.pick(job)]++
	}
	for _, a := range addrs {
		if counts[a] < 500 || counts[a] > 1500 {
			t.Errorf("%s got %d of 10000 jobs", a, counts[a])
		}
	}
}

func benchAddrs(n int) []string {
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("http://10.0.0.%d:9999/", i+1)
	}
	return addrs
}
