package local

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// An ack of one delivery while the consumer long-polls for the next must
// not cut the poll short: the bench once lost whole batches that way (the
// claim was cancelled after its UPDATE, hiding the rows for the visibility
// timeout).
func TestGateAckDoesNotInterruptLongPoll(t *testing.T) {
	t.Parallel()
	ctx, clk, g := gateOnStore(t)
	send := func(sec int64) {
		if err := g.Send(ctx, []driver.Outgoing[fire.RingBucket]{{Msg: fire.RingBucket{Second: sec}}}); err != nil {
			t.Fatal(err)
		}
	}
	send(1)
	first, err := g.Receive(ctx, driver.ReceiveParams{Max: 1, Visibility: time.Minute})
	if err != nil || len(first) != 1 {
		t.Fatalf("first receive = %v, %v", first, err)
	}

	got := make(chan []driver.Delivery[fire.RingBucket], 1)
	go func() {
		ds, err := g.Receive(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Minute, Wait: time.Hour})
		if err != nil {
			t.Error(err)
		}
		got <- ds
	}()
	if err := clk.WaitForSleepers(ctx, 1); err != nil { // the poll is waiting
		t.Fatal(err)
	}
	if err := g.Ack(ctx, []string{first[0].Token}); err != nil {
		t.Fatal(err)
	}
	send(2)
	select {
	case ds := <-got:
		if len(ds) != 1 || ds[0].Msg.Second != 2 {
			t.Fatalf("long poll returned %+v, want the message sent after the ack", ds)
		}
	case <-ctx.Done():
		t.Fatal("long poll never returned")
	}
}

// A delivery the ring keeps hidden (Extend) stays in flight past its
// first visibility, so shutdown waits for it; once acked, a late Extend
// neither fails silently nor brings it back in flight.
func TestGateExtendKeepsADeliveryInFlight(t *testing.T) {
	t.Parallel()
	ctx, clk, g := gateOnStore(t)
	now := clk.Now()
	g.now = func() time.Time { return now }
	if err := g.Send(ctx, []driver.Outgoing[fire.RingBucket]{{Msg: fire.RingBucket{Second: 1}}}); err != nil {
		t.Fatal(err)
	}
	const visibility = 10 * time.Second
	ds, err := g.Receive(ctx, driver.ReceiveParams{Max: 1, Visibility: visibility})
	if err != nil || len(ds) != 1 {
		t.Fatalf("receive = %v, %v", ds, err)
	}
	g.drain()
	if rest, err := g.Receive(ctx, driver.ReceiveParams{Max: 1, Visibility: visibility}); err != nil || len(rest) != 0 {
		t.Fatalf("receive while draining = %v, %v; want nothing (the gate closes)", rest, err)
	}
	idleWithin := func(d time.Duration) bool {
		wctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return g.waitIdle(wctx) == nil
	}

	now = now.Add(visibility / 2)
	if err := g.Extend(ctx, ds[0].Token, visibility); err != nil {
		t.Fatal(err)
	}
	now = now.Add(visibility * 3 / 4) // past the first visibility, within the extension
	if idleWithin(50 * time.Millisecond) {
		t.Fatal("idle while an extended delivery is in flight")
	}
	if err := g.Ack(ctx, []string{ds[0].Token}); err != nil {
		t.Fatalf("ack with the token extended: %v", err)
	}
	if !idleWithin(10 * time.Second) {
		t.Fatal("not idle once the extended delivery is acked")
	}
	if err := g.Extend(ctx, ds[0].Token, visibility); err == nil {
		t.Fatal("extending an acked delivery succeeded")
	}
	if !idleWithin(10 * time.Second) {
		t.Fatal("an extension after the ack put the delivery back in flight")
	}
}

// gateOnStore is a gate on a fresh store's ring, on a fake clock whose
// polls wake only on sends, and a context bounding the test.
func gateOnStore(t *testing.T) (context.Context, *clock.Fake, *gate[fire.RingBucket]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	clk := clock.NewFake(time.UnixMilli(1_800_000_000_000))
	db, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "x.db"), sqlitestore.Options{Clock: clk, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return ctx, clk, newGate(db.Ring())
}
