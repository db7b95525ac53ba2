package drivertest

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

// QueueHarness is one fresh, empty queue and the time it runs on. Queue
// timing is asserted by "eventually, within a budget" loops that let time
// pass through Advance, never at exact instants, so the same suite runs on
// a fake clock (SQLite) and on a server's real clock (SQS).
type QueueHarness struct {
	Queue driver.Queue[fire.RingBucket]
	// Now returns the queue's current time; VisibleAt is computed from it.
	Now func() time.Time
	// Advance lets d of the queue's time pass: it moves a fake clock, or
	// sleeps when the queue runs on real time.
	Advance func(d time.Duration)
	// Settle, when set, blocks until the code under test sleeps on the
	// queue's clock or ctx ends (clock.Fake.WaitForSleepers), so that
	// long-poll tests on a fake clock let time pass only once Receive
	// waits. Leave it nil for queues on real time.
	Settle func(ctx context.Context)
}

const (
	queueStep   = 250 * time.Millisecond // how much time passes between polls
	queueBudget = 20 * time.Second       // how much may pass before "eventually" fails
	wallLimit   = 60 * time.Second       // safety net for goroutines blocked in Receive
)

func bucket(i int) fire.RingBucket {
	return fire.RingBucket{Shard: i % 4, Second: 1_700_000_000 + int64(i),
		Items: []fire.RingItem{{JobID: int64(i), FireTime: 1_700_000_000_000 + int64(i)*1000, Revision: 3}}}
}

func out(now time.Time, delay time.Duration, msgs ...fire.RingBucket) []driver.Outgoing[fire.RingBucket] {
	var o []driver.Outgoing[fire.RingBucket]
	for _, m := range msgs {
		o = append(o, driver.Outgoing[fire.RingBucket]{Msg: m, VisibleAt: now.Add(delay).UnixMilli()})
	}
	return o
}

// receiveUntil polls (Wait 0) until done says so, letting time pass
// between polls, and returns every delivery seen.
func receiveUntil(t *testing.T, h QueueHarness, p driver.ReceiveParams, done func([]driver.Delivery[fire.RingBucket]) bool) []driver.Delivery[fire.RingBucket] {
	t.Helper()
	start := h.Now()
	var got []driver.Delivery[fire.RingBucket]
	for {
		ds, err := h.Queue.Receive(t.Context(), p)
		requireNoErr(t, err, "receive")
		if len(ds) > max(p.Max, 1) {
			t.Fatalf("received %d messages with Max %d", len(ds), p.Max)
		}
		got = append(got, ds...)
		if done(got) {
			return got
		}
		if h.Now().Sub(start) > queueBudget {
			t.Fatalf("gave up after %v of queue time with %d deliveries", queueBudget, len(got))
		}
		h.Advance(queueStep)
	}
}

func atLeast(n int) func([]driver.Delivery[fire.RingBucket]) bool {
	return func(ds []driver.Delivery[fire.RingBucket]) bool { return len(ds) >= n }
}

// receiveNone checks that a receive right now returns nothing.
func receiveNone(t *testing.T, h QueueHarness, what string) {
	t.Helper()
	ds, err := h.Queue.Receive(t.Context(), driver.ReceiveParams{Max: 10, Visibility: 30 * time.Second})
	requireNoErr(t, err, what)
	if len(ds) != 0 {
		t.Fatalf("%s: received %d messages, want none", what, len(ds))
	}
}

// receiveWaiting runs a long-polling Receive in a goroutine and lets time
// pass until it returns; it returns the deliveries and the queue time spent.
func receiveWaiting(t *testing.T, h QueueHarness, p driver.ReceiveParams, meanwhile func()) ([]driver.Delivery[fire.RingBucket], time.Duration) {
	t.Helper()
	type result struct {
		ds  []driver.Delivery[fire.RingBucket]
		err error
	}
	done := make(chan result, 1)
	start := h.Now()
	go func() {
		ds, err := h.Queue.Receive(t.Context(), p)
		done <- result{ds, err}
	}()
	if meanwhile != nil {
		meanwhile()
	}
	limit := time.After(wallLimit)
	for {
		if h.Settle != nil {
			sctx, cancel := context.WithCancel(t.Context())
			settled := make(chan struct{})
			go func() { h.Settle(sctx); close(settled) }()
			select {
			case r := <-done:
				cancel()
				requireNoErr(t, r.err, "long-poll receive")
				return r.ds, h.Now().Sub(start)
			case <-limit:
				cancel()
				t.Fatalf("long-poll receive with Wait %v did not return", p.Wait)
			case <-settled:
				cancel()
				h.Advance(queueStep)
			}
			continue
		}
		select {
		case r := <-done:
			requireNoErr(t, r.err, "long-poll receive")
			return r.ds, h.Now().Sub(start)
		case <-limit:
			t.Fatalf("long-poll receive with Wait %v did not return", p.Wait)
		case <-time.After(10 * time.Millisecond): // let the receiver run, then let time pass
			h.Advance(queueStep)
		}
	}
}

func msgs(ds []driver.Delivery[fire.RingBucket]) []fire.RingBucket {
	out := make([]fire.RingBucket, len(ds))
	for i, d := range ds {
		out[i] = d.Msg
	}
	slices.SortFunc(out, func(a, b fire.RingBucket) int { return int(a.Second - b.Second) })
	return out
}

// ExerciseQueue runs the Queue contract against queues from newQueue.
func ExerciseQueue(t *testing.T, newQueue func(t *testing.T) QueueHarness) {
	t.Helper()
	vis := 5 * time.Second

	t.Run("SendReceiveAck", func(t *testing.T) {
		t.Parallel()
		h, ctx := newQueue(t), t.Context()
		sent := []fire.RingBucket{bucket(1), bucket(2), bucket(3)}
		requireNoErr(t, h.Queue.Send(ctx, out(h.Now(), 0, sent...)), "send")
		requireNoErr(t, h.Queue.Send(ctx, nil), "send nothing")
		got := receiveUntil(t, h, driver.ReceiveParams{Max: 10, Visibility: vis}, atLeast(3))
		if !reflect.DeepEqual(msgs(got), sent) {
			t.Fatalf("received %+v, want %+v", msgs(got), sent)
		}
		var tokens []string
		for _, d := range got {
			if d.Receives != 1 || d.Token == "" {
				t.Fatalf("first delivery: receives %d token %q", d.Receives, d.Token)
			}
			tokens = append(tokens, d.Token)
		}
		requireNoErr(t, h.Queue.Ack(ctx, tokens), "ack")
		requireNoErr(t, h.Queue.Ack(ctx, tokens), "ack again")
		requireNoErr(t, h.Queue.Ack(ctx, nil), "ack nothing")
		h.Advance(vis + time.Second)
		receiveNone(t, h, "after ack and visibility")
	})

	t.Run("VisibleAtDelaysDelivery", func(t *testing.T) {
		t.Parallel()
		h, ctx := newQueue(t), t.Context()
		requireNoErr(t, h.Queue.Send(ctx, out(h.Now(), 3*time.Second, bucket(1))), "send delayed")
		requireNoErr(t, h.Queue.Send(ctx, out(h.Now(), -time.Minute, bucket(2))), "send with past VisibleAt")
		start := h.Now()
		got := receiveUntil(t, h, driver.ReceiveParams{Max: 10, Visibility: 30 * time.Second}, atLeast(1))
		if len(got) != 1 || got[0].Msg.Second != bucket(2).Second {
			t.Fatalf("first receive: %+v, want only the undelayed message", msgs(got))
		}
		got = receiveUntil(t, h, driver.ReceiveParams{Max: 10, Visibility: 30 * time.Second}, atLeast(1))
		if len(got) != 1 || !reflect.DeepEqual(got[0].Msg, bucket(1)) {
			t.Fatalf("second receive: %+v", msgs(got))
		}
		if waited := h.Now().Sub(start); waited < 2*time.Second {
			t.Fatalf("delayed message arrived after %v, sent 3 s ahead", waited)
		}
	})

	t.Run("VisibilityTimeoutRedelivers", func(t *testing.T) {
		t.Parallel()
		h, ctx := newQueue(t), t.Context()
		requireNoErr(t, h.Queue.Send(ctx, out(h.Now(), 0, bucket(7))), "send")
		first := receiveUntil(t, h, driver.ReceiveParams{Max: 1, Visibility: vis}, atLeast(1))[0]
		if first.Receives != 1 {
			t.Fatalf("first delivery counts %d receives", first.Receives)
		}
		receiveNone(t, h, "while hidden")
		second := receiveUntil(t, h, driver.ReceiveParams{Max: 1, Visibility: vis}, atLeast(1))[0]
		if second.Receives != 2 || second.Token == first.Token || !reflect.DeepEqual(second.Msg, first.Msg) {
			t.Fatalf("redelivery: receives %d token changed %v msg %+v", second.Receives, second.Token != first.Token, second.Msg)
		}
		requireNoErr(t, h.Queue.Ack(ctx, []string{second.Token}), "ack")
		requireNoErr(t, h.Queue.Ack(ctx, []string{second.Token}), "ack twice")
		h.Advance(vis + time.Second)
		receiveNone(t, h, "after ack")
	})

	t.Run("Retry", func(t *testing.T) {
		t.Parallel()
		h, ctx := newQueue(t), t.Context()
		requireNoErr(t, h.Queue.Send(ctx, out(h.Now(), 0, bucket(4))), "send")
		long := driver.ReceiveParams{Max: 1, Visibility: 10 * time.Minute}
		d := receiveUntil(t, h, long, atLeast(1))[0]
		start := h.Now()
		requireNoErr(t, h.Queue.Retry(ctx, d.Token, 3*time.Second), "retry")
		receiveNone(t, h, "right after retry with delay")
		d2 := receiveUntil(t, h, long, atLeast(1))[0]
		if d2.Receives != 2 || !reflect.DeepEqual(d2.Msg, bucket(4)) {
			t.Fatalf("after retry: receives %d msg %+v", d2.Receives, d2.Msg)
		}
		if waited := h.Now().Sub(start); waited < 2*time.Second || waited >= queueBudget {
			t.Fatalf("retried message came back after %v, retried with 3 s", waited)
		}
		requireNoErr(t, h.Queue.Retry(ctx, d2.Token, 0), "retry now")
		d3 := receiveUntil(t, h, long, atLeast(1))[0]
		if d3.Receives != 3 {
			t.Fatalf("after retry now: receives %d", d3.Receives)
		}
		requireNoErr(t, h.Queue.Ack(ctx, []string{d3.Token}), "ack")
	})

	// A receiver still working on a delivery keeps it hidden with Retry
	// and its delay (the ring's keepHidden): the delivery stays its, and
	// its token still acknowledges it.
	t.Run("RetryKeepsTheDelivery", func(t *testing.T) {
		t.Parallel()
		h, ctx := newQueue(t), t.Context()
		requireNoErr(t, h.Queue.Send(ctx, out(h.Now(), 0, bucket(5))), "send")
		d := receiveUntil(t, h, driver.ReceiveParams{Max: 1, Visibility: 2 * time.Second}, atLeast(1))[0]
		h.Advance(time.Second)
		requireNoErr(t, h.Queue.Retry(ctx, d.Token, 4*time.Second), "hide for longer")
		h.Advance(2 * time.Second)
		receiveNone(t, h, "past the first visibility, hidden for longer")
		requireNoErr(t, h.Queue.Retry(ctx, d.Token, 4*time.Second), "hide for longer again, same token")
		requireNoErr(t, h.Queue.Ack(ctx, []string{d.Token}), "ack with the first token")
		h.Advance(5 * time.Second)
		receiveNone(t, h, "after the ack")
	})

	t.Run("MaxRespected", func(t *testing.T) {
		t.Parallel()
		h, ctx := newQueue(t), t.Context()
		var sent []fire.RingBucket
		for i := range 7 {
			sent = append(sent, bucket(i))
		}
		requireNoErr(t, h.Queue.Send(ctx, out(h.Now(), 0, sent...)), "send")
		got := receiveUntil(t, h, driver.ReceiveParams{Max: 2, Visibility: time.Minute}, atLeast(7))
		if !reflect.DeepEqual(msgs(got), sent) {
			t.Fatalf("received %+v, want each of %+v once", msgs(got), sent)
		}
	})

	t.Run("WaitReturnsWhenVisible", func(t *testing.T) {
		t.Parallel()
		h, ctx := newQueue(t), t.Context()
		requireNoErr(t, h.Queue.Send(ctx, out(h.Now(), 2*time.Second, bucket(5))), "send delayed")
		got, waited := receiveWaiting(t, h, driver.ReceiveParams{Max: 10, Visibility: time.Minute, Wait: 20 * time.Second}, nil)
		if len(got) != 1 || !reflect.DeepEqual(got[0].Msg, bucket(5)) {
			t.Fatalf("long poll got %+v", msgs(got))
		}
		if waited >= 15*time.Second {
			t.Fatalf("long poll returned after %v, the message was visible after 2 s", waited)
		}
	})

	t.Run("WaitReturnsOnSend", func(t *testing.T) {
		t.Parallel()
		h, ctx := newQueue(t), t.Context()
		got, waited := receiveWaiting(t, h, driver.ReceiveParams{Max: 10, Visibility: time.Minute, Wait: 20 * time.Second}, func() {
			requireNoErr(t, h.Queue.Send(ctx, out(h.Now(), 0, bucket(6))), "send")
		})
		if len(got) != 1 || !reflect.DeepEqual(got[0].Msg, bucket(6)) {
			t.Fatalf("long poll got %+v", msgs(got))
		}
		if waited >= 15*time.Second {
			t.Fatalf("long poll returned after %v though a message was sent at once", waited)
		}
	})

	t.Run("WaitTimesOutEmpty", func(t *testing.T) {
		t.Parallel()
		h := newQueue(t)
		got, _ := receiveWaiting(t, h, driver.ReceiveParams{Max: 10, Visibility: time.Minute, Wait: 2 * time.Second}, nil)
		if len(got) != 0 {
			t.Fatalf("long poll on an empty queue got %+v", msgs(got))
		}
	})
}
