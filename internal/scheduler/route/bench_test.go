package route

import (
	"context"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// BenchmarkConsistentHash routes jobs over 10 executors, with the ring
// cache (the default) and without it (a ring per call, as xxl-job).
func BenchmarkConsistentHash(b *testing.B) {
	addrs := benchAddrs(10)
	for _, bc := range []struct {
		name string
		size int
	}{{"cached", 0}, {"uncached", -1}} {
		b.Run(bc.name, func(b *testing.B) {
			r := New(Options{RingCacheSize: bc.size})
			ctx := context.Background()
			b.ReportAllocs()
			var job int64
			for b.Loop() {
				job++
				if _, err := r.Route(ctx, xjob.RouteConsistentHash, job, addrs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "selections/s")
		})
	}
}

// BenchmarkStrategies routes 1000 jobs round-robin over 10 executors with
// each stateful or trivial strategy.
func BenchmarkStrategies(b *testing.B) {
	addrs := benchAddrs(10)
	ok := &prober{replies: map[string]protocol.ReturnT{addrs[0]: protocol.OK()}}
	for _, s := range []xjob.RouteStrategy{
		xjob.RouteFirst, xjob.RouteLast, xjob.RouteRandom, xjob.RouteRound,
		xjob.RouteLeastFrequentlyUsed, xjob.RouteLeastRecentlyUsed, xjob.RouteFailover,
	} {
		b.Run(string(s), func(b *testing.B) {
			r := New(Options{Prober: ok})
			ctx := context.Background()
			b.ReportAllocs()
			var job int64
			for b.Loop() {
				job = (job + 1) % 1000
				if _, err := r.Route(ctx, s, job, addrs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParallel measures contention on the Router's lock.
func BenchmarkParallel(b *testing.B) {
	addrs := benchAddrs(10)
	for _, s := range []xjob.RouteStrategy{xjob.RouteRound, xjob.RouteLeastRecentlyUsed, xjob.RouteConsistentHash} {
		b.Run(string(s), func(b *testing.B) {
			r := New(Options{})
			b.RunParallel(func(pb *testing.PB) {
				var job int64
				for pb.Next() {
					job = (job + 1) % 1000
					if _, err := r.Route(context.Background(), s, job, addrs); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
