package local

import (
	"context"
	"sync"
	"time"

	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/scheduler/ring"
	"github.com/xjobdev/xjob/pkg/driver"
)

// gate wraps a consumer's queue so that shutdown can stop the intake
// without cancelling the work in flight. ring.Serve and dispatch.Serve stop
// receiving only when their context ends, and that context also cancels
// what they are doing; the gate lets them run on while:
//
//	open ──drain()──▶ draining: receives only what is visible now (no wait)
//	                      └─ an empty receive ──▶ closed: Receive blocks until ctx ends
//
// idle() reports when the gate is closed and every delivery it handed out
// has been acked, retried, or has outlived its visibility timeout (after
// which the queue hands it out again anyway). Then the consumer's context
// can be cancelled without cutting anything short.
type gate[T any] struct {
	q   driver.Queue[T]
	now func() time.Time

	mu       sync.Mutex
	state    int                  // gateOpen, gateDraining, gateClosed
	inflight map[string]time.Time // token → end of its visibility
	changed  chan struct{}        // closed and replaced on every change
	draining chan struct{}        // closed once drain() is called
}

const (
	gateOpen = iota
	gateDraining
	gateClosed
)

func newGate[T any](q driver.Queue[T]) *gate[T] {
	return &gate[T]{q: q, now: time.Now, inflight: map[string]time.Time{}, changed: make(chan struct{}),
		draining: make(chan struct{})}
}

func (g *gate[T]) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// drain stops the intake of new deliveries once what is visible now is taken.
func (g *gate[T]) drain() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == gateOpen {
		g.state = gateDraining
		close(g.draining)
		g.notifyLocked()
	}
}

// waitIdle blocks until the gate is closed with nothing in flight, or ctx ends.
func (g *gate[T]) waitIdle(ctx context.Context) error {
	for {
		g.mu.Lock()
		now := g.now()
		var next time.Time
		for tok, until := range g.inflight {
			if !now.Before(until) {
				delete(g.inflight, tok)
			} else if next.IsZero() || until.Before(next) {
				next = until
			}
		}
		idle := g.state == gateClosed && len(g.inflight) == 0
		ch := g.changed
		g.mu.Unlock()
		if idle {
			return nil
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = next.Sub(now)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
}

// Send is not gated: producers (the ring into the lanes, callbacks) keep
// writing to the durable queue while consumers drain.
func (g *gate[T]) Send(ctx context.Context, msgs []driver.Outgoing[T]) error {
	return g.q.Send(ctx, msgs)
}

// Receive passes through while open, takes only what is visible while
// draining, and blocks until ctx ends once closed.
func (g *gate[T]) Receive(ctx context.Context, p driver.ReceiveParams) ([]driver.Delivery[T], error) {
	g.mu.Lock()
	state := g.state
	g.mu.Unlock()
	switch state {
	case gateClosed:
		<-ctx.Done()
		return nil, ctx.Err()
	case gateDraining:
		p.Wait = 0
	default:
		// A long poll started before drain() would hold the consumer for
		// its whole wait; cut it short when draining starts — and only
		// then: acks and retries of other deliveries must not interrupt it.
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-g.draining:
				cancel()
			case <-rctx.Done():
			}
		}()
		ds, err := g.q.Receive(rctx, p)
		if err != nil && ctx.Err() == nil && rctx.Err() != nil {
			err = nil // interrupted by drain(): an empty receive
		}
		g.track(ds, p.Visibility)
		return ds, err
	}
	ds, err := g.q.Receive(ctx, p)
	g.track(ds, p.Visibility)
	if err == nil && len(ds) == 0 {
		g.mu.Lock()
		if g.state == gateDraining {
			g.state = gateClosed
			g.notifyLocked()
		}
		g.mu.Unlock()
	}
	return ds, err
}

func (g *gate[T]) track(ds []driver.Delivery[T], visibility time.Duration) {
	if len(ds) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	until := g.now().Add(visibility)
	for _, d := range ds {
		g.inflight[d.Token] = until
	}
}

func (g *gate[T]) done(tokens ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range tokens {
		delete(g.inflight, t)
	}
	g.notifyLocked()
}

// Ack acknowledges deliveries and forgets them.
func (g *gate[T]) Ack(ctx context.Context, tokens []string) error {
	err := g.q.Ack(ctx, tokens)
	g.done(tokens...)
	return err
}

// Retry hands a delivery back to the queue and forgets it.
func (g *gate[T]) Retry(ctx context.Context, token string, delay time.Duration) error {
	err := g.q.Retry(ctx, token, delay)
	g.done(token)
	return err
}

// Extend keeps a delivery hidden for visibility more while its consumer
// still works on it (ring.Extender), and keeps counting it in flight
// until then, unless it was acked or retried meanwhile.
func (g *gate[T]) Extend(ctx context.Context, token string, visibility time.Duration) error {
	if err := g.q.Retry(ctx, token, visibility); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.inflight[token]; ok {
		g.inflight[token] = g.now().Add(visibility)
		g.notifyLocked()
	}
	return nil
}

// ringQueues is the driver.Queues the ring consumes: its own queue behind
// a gate, the dispatch lanes as they are (the ring only sends to them).
type ringQueues struct {
	driver.Queues
	ring *gate[fire.RingBucket]
}

func (r ringQueues) Ring() driver.Queue[fire.RingBucket] { return r.ring }

var (
	_ driver.Queue[fire.RingBucket] = (*gate[fire.RingBucket])(nil)
	_ driver.Queues                 = ringQueues{}
	_ ring.Extender                 = (*gate[fire.RingBucket])(nil)
)
