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
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	clk := clock.NewFake(time.UnixMilli(1_800_000_000_000))
	db, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "x.db"), sqlitestore.Options{Clock: clk, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g := newGate(db.Ring())
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
