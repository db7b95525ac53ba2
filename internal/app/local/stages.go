package local

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/xjobdev/xjob/internal/scheduler/cluster"
	"github.com/xjobdev/xjob/internal/scheduler/dispatch"
	"github.com/xjobdev/xjob/internal/scheduler/ring"
	"github.com/xjobdev/xjob/pkg/clock"
)

// stage is one background loop of the pipeline, with a context of its own
// so that shutdown can stop the stages one by one, in pipeline order.
type stage struct {
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
}

func newStage(parent context.Context) *stage {
	s := &stage{}
	s.ctx, s.stop = context.WithCancel(context.WithoutCancel(parent))
	return s
}

// run runs fn on the stage's context in a goroutine the stage waits for.
func (s *stage) run(fn func(ctx context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn(s.ctx)
	}()
}

// stages are the pipeline's loops, from the scan down to the counters.
// They outlive Run's context: shutdown stops them, in order.
type stages struct {
	scan, ring, lanes, maint, report *stage
}

func newStages(parent context.Context) *stages {
	return &stages{scan: newStage(parent), ring: newStage(parent), lanes: newStage(parent),
		maint: newStage(parent), report: newStage(parent)}
}

// stopAll cancels every stage without waiting (Run's last resort on any
// return path).
func (s *stages) stopAll() {
	for _, st := range []*stage{s.scan, s.ring, s.lanes, s.maint, s.report} {
		st.stop()
	}
}

// start starts the loops: the counters' flusher, the two dispatch lanes,
// the ring, the scanner and the maintenance loop.
func (s *stages) start(cfg Config, svc *services, p *parts, logger *slog.Logger) {
	s.report.run(func(ctx context.Context) {
		// Run ends with a final flush of the counters.
		if err := p.reports.Run(ctx); err != nil {
			logger.Warn("report counters: final flush", "err", err)
		}
	})
	s.lanes.run(func(ctx context.Context) {
		_ = p.dispatcher.Serve(ctx, p.fast, dispatch.ServeOptions{Workers: cfg.FastWorkers, Visibility: dispatchVisibility})
	})
	s.lanes.run(func(ctx context.Context) {
		_ = p.dispatcher.Serve(ctx, p.slow, dispatch.ServeOptions{Workers: cfg.SlowWorkers, Visibility: dispatchVisibility})
	})
	s.ring.run(func(ctx context.Context) {
		_ = p.ring.Serve(ctx, ring.ServeOptions{Workers: cfg.RingWorkers, Visibility: cfg.ringVisibility()})
	})
	s.scan.run(func(ctx context.Context) { _ = p.scanner.Run(ctx, time.Time{}) })
	s.maint.run(func(ctx context.Context) { maintain(ctx, svc, logger) })
}

// stopScan stops the scan, which releases its shard leases on its way
// out, and takes the node out of its cluster, so the other nodes take its
// shards at their next beat instead of after the lease TTL. The rest of
// the pipeline keeps running: in-flight fires and callbacks finish.
func (s *stages) stopScan(svc *services, member *cluster.Member, logger *slog.Logger) {
	s.scan.stop()
	s.scan.wg.Wait()
	if member == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), httpShutdownGrace)
	defer cancel()
	if err := member.Leave(ctx); err != nil {
		logger.Warn("leaving the cluster", "err", err)
	} else {
		logger.Info("left the cluster: shards handed over")
	}
}

// shutdown stops the pipeline in order, within one grace period: the
// scan first (it releases its leases on its way out, and a cluster node
// leaves the cluster), then the ring once
// its hand-offs are done, then the lanes once drained, the demo executor
// (its last callbacks still reach the listener), the HTTP server, and
// last the counters, after everything that counts.
func (s *stages) shutdown(n node, p *parts, svc *services, demo *demoExecutor, srv *http.Server) {
	cfg, logger := n.cfg, n.logger
	start := n.clk.Now()
	graceCtx, cancelGrace := clockTimeout(n.clk, cfg.Grace)
	defer cancelGrace()
	logger.Info("xjob "+n.name()+" stopping", "grace", cfg.Grace.String())
	s.stopScan(svc, n.member, logger)
	s.maint.stop()
	p.ringGate.drain()
	ringDrained := p.ringGate.waitIdle(graceCtx) == nil
	if !ringDrained {
		// The grace is spent: the ring's in-flight dispatches (they run on
		// the lanes' context) are cut short too rather than awaited.
		s.lanes.stop()
	}
	s.ring.stop()
	s.ring.wg.Wait()
	p.fast.drain()
	p.slow.drain()
	lanesDrained := p.fast.waitIdle(graceCtx) == nil && p.slow.waitIdle(graceCtx) == nil
	s.lanes.stop()
	s.lanes.wg.Wait()
	// HTTP jobs' calls in flight finish within the grace, else they are
	// cut and reported failed (retries apply after the restart).
	p.targets.Shutdown(graceCtx)
	if demo != nil {
		demo.stop(graceCtx)
	}
	hctx, cancelHTTP := clockTimeout(n.clk, httpShutdownGrace)
	defer cancelHTTP()
	if err := srv.Shutdown(hctx); err != nil {
		_ = srv.Close()
	}
	s.maint.wg.Wait()
	s.report.stop()
	s.report.wg.Wait()
	logger.Info("xjob "+n.name()+" stopped", "took", n.clk.Now().Sub(start).Round(time.Millisecond).String(),
		"ringDrained", ringDrained, "lanesDrained", lanesDrained)
}

// clockTimeout is context.WithTimeout on clk: the context ends when clk
// reaches d from now, or when cancel is called.
func clockTimeout(clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	deadline := clk.Now().Add(d)
	go func() {
		if clk.SleepUntil(ctx, deadline) == nil {
			cancel()
		}
	}()
	return ctx, cancel
}
