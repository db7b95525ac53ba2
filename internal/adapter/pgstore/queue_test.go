package pgstore

import (
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/adapter/longpoll"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
)

// TestEmptyClaimSaysWhenNext: the claim statement that takes nothing
// also returns the queue's least visible_at, so an empty long poll is
// one round trip; when what is due is held by another receiver this
// instant, it says nothing (the wait asks again rather than poll at once
// on a snapshot's answer); a claim that takes messages returns them.
func TestEmptyClaimSaysWhenNext(t *testing.T) {
	t.Parallel()
	later := epoch.Add(10 * time.Second).UnixMilli()
	for _, tc := range []struct {
		name      string
		visibleAt []int64 // messages sent, by visible-at
		held      bool    // another transaction locks the queue's rows
		want      longpoll.Next
		got       int
	}{
		{name: "empty queue", want: longpoll.Next{Known: true}},
		{name: "delayed message", visibleAt: []int64{later, later + 5000}, want: longpoll.Next{Known: true, At: later, Pending: true}},
		{name: "due message held by another receiver", visibleAt: []int64{epoch.UnixMilli()}, held: true},
		{name: "due message", visibleAt: []int64{epoch.UnixMilli(), later}, got: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := setup(t, Options{Clock: clock.NewFake(epoch)})
			q := db.Ring().(*queue[fire.RingBucket])
			for i, at := range tc.visibleAt {
				if err := q.Send(ctx, []driver.Outgoing[fire.RingBucket]{{Msg: fire.RingBucket{Second: int64(i)}, VisibleAt: at}}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.held {
				tx, err := db.pool.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = tx.Rollback(ctx) }()
				if _, err := tx.Exec(ctx, `SELECT id FROM queue_messages WHERE queue = $1 FOR UPDATE`, q.name); err != nil {
					t.Fatal(err)
				}
			}
			got, next, err := q.claim(ctx, driver.ReceiveParams{Max: 10, Visibility: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.got || next != tc.want {
				t.Fatalf("claim took %d and said %+v; want %d and %+v", len(got), next, tc.got, tc.want)
			}
		})
	}
}
