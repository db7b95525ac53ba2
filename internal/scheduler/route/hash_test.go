package route

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/xjobdev/xjob"
)

// Golden vectors for CONSISTENT_HASH, produced by running xxl-job's own
// algorithm in Java 17: a copy of ExecutorRouteConsistentHash (2.4.x,
// VIRTUAL_NODE_NUM = 100, TreeMap ring, MD5 digest bytes 0-3 little-endian)
// with a main that prints hash(key) for a few keys and, for each address
// list below, "jobId=index" where index is addressList.indexOf(route(jobId,
// addressList)). The Java program lived in /tmp and is not part of the repo.
var goldenHashes = []struct {
	key  string
	want uint32
}{
	{"1", 943901380},
	{"42", 3905343649},
	{"SHARD-http://10.0.0.1:9999/-NODE-0", 3725898238},
	{"SHARD-http://执行器.example/-NODE-99", 1743375963},
	{"", 3649838548},
}

var goldenRoutes = []struct {
	addrs []string
	picks string // "jobId=index ..." as printed by the Java program
}{
	{[]string{"http://127.0.0.1:9999/"},
		"1=0 2=0 3=0 4=0 5=0 6=0 7=0 8=0 9=0 10=0 11=0 12=0 13=0 14=0 15=0 16=0 17=0 18=0 19=0 20=0 0=0 42=0 100=0 999=0 1000=0 4242=0 65536=0 123456=0 1000000=0 2147483647=0"},
	{[]string{"http://10.0.0.1:9999/", "http://10.0.0.2:9999/"},
		"1=0 2=0 3=0 4=1 5=0 6=0 7=1 8=1 9=0 10=0 11=0 12=0 13=0 14=0 15=0 16=1 17=1 18=0 19=0 20=0 0=1 42=1 100=0 999=0 1000=1 4242=1 65536=1 123456=0 1000000=1 2147483647=1"},
	{[]string{"http://10.0.0.1:9999/", "http://10.0.0.2:9999/", "http://10.0.0.3:9999/"},
		"1=2 2=2 3=0 4=2 5=0 6=2 7=1 8=1 9=0 10=0 11=0 12=0 13=2 14=2 15=0 16=1 17=1 18=0 19=0 20=0 0=1 42=1 100=2 999=0 1000=2 4242=2 65536=2 123456=0 1000000=1 2147483647=1"},
	{[]string{"http://192.168.1.10:9999/", "http://192.168.1.11:9999/", "http://192.168.1.12:9999/", "http://192.168.1.13:9999/", "http://192.168.1.14:9999/"},
		"1=4 2=3 3=0 4=2 5=4 6=1 7=1 8=1 9=3 10=4 11=2 12=4 13=4 14=3 15=0 16=0 17=2 18=0 19=2 20=1 0=4 42=3 100=1 999=1 1000=4 4242=1 65536=3 123456=0 1000000=2 2147483647=1"},
	{[]string{"http://exec-a.internal:8080", "https://abc123.lambda-url.eu-west-1.on.aws/", "http://exec-b.internal:8080", "http://[::1]:9999/"},
		"1=0 2=1 3=0 4=2 5=2 6=2 7=2 8=3 9=2 10=1 11=0 12=3 13=3 14=2 15=0 16=3 17=0 18=0 19=3 20=2 0=1 42=3 100=3 999=2 1000=1 4242=1 65536=3 123456=1 1000000=3 2147483647=0"},
	{[]string{"http://执行器.example/", "http://10.0.0.2:9999/"},
		"1=0 2=0 3=1 4=0 5=1 6=0 7=0 8=1 9=0 10=1 11=0 12=0 13=0 14=0 15=1 16=1 17=1 18=1 19=0 20=0 0=1 42=1 100=1 999=1 1000=0 4242=0 65536=0 123456=0 1000000=1 2147483647=1"},
}

func TestRingHashGolden(t *testing.T) {
	t.Parallel()
	for _, tt := range goldenHashes {
		if got := ringHash([]byte(tt.key)); got != tt.want {
			t.Errorf("hash(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
}

func TestConsistentHashGolden(t *testing.T) {
	t.Parallel()
	cached := New(Options{})
	uncached := New(Options{RingCacheSize: -1})
	for li, tt := range goldenRoutes {
		for _, pick := range strings.Fields(tt.picks) {
			id, idx, _ := strings.Cut(pick, "=")
			jobID, err := strconv.ParseInt(id, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			i, err := strconv.Atoi(idx)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.addrs[i]
			if got := ConsistentHash(jobID, tt.addrs); got != want {
				t.Errorf("list %d job %d: ConsistentHash = %s, want %s", li, jobID, got, want)
			}
			for name, r := range map[string]*Router{"cached": cached, "uncached": uncached} {
				res, err := r.Route(context.Background(), xjob.RouteConsistentHash, jobID, tt.addrs)
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
