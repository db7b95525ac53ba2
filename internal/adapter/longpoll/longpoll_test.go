package longpoll

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/xjobdev/xjob/pkg/clock"
)

var start = time.UnixMilli(1_700_000_000_000)

// fakeQueue is a queue of ints whose messages become visible at their
// instant: the pure logic the loop is tested over.
type fakeQueue struct {
	clk     *clock.Fake
	signals Signals
	mu      sync.Mutex
	msgs    map[int]time.Time // message → visible at
	polls   int
	asked   int // NextVisible calls
}

func (q *fakeQueue) send(m int, at time.Time) {
	q.mu.Lock()
	q.msgs[m] = at
	q.mu.Unlock()
	q.signals.Wake("q")
}

// claim takes the messages visible now.
func (q *fakeQueue) claim(context.Context) ([]int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.polls++
	var got []int
	for m, at := range q.msgs {
		if !at.After(q.clk.Now()) {
			got = append(got, m)
			delete(q.msgs, m)
		}
	}
	return got, nil
}

// receive is a long poll of the queue.
func (q *fakeQueue) receive(ctx context.Context, wait time.Duration) ([]int, error) {
	return Receive(ctx, q.poll(), wait, q.claim)
}

func (q *fakeQueue) poll() *Poll {
	return &Poll{
		Name:     "fake queue q",
		Clock:    q.clk,
		Interval: time.Minute,
		Signal:   func() <-chan struct{} { return q.signals.Next("q") },
		NextVisible: func(context.Context) (int64, bool, error) {
			q.mu.Lock()
			defer q.mu.Unlock()
			q.asked++
			next := q.next()
			return next.UnixMilli(), !next.IsZero(), nil
		},
	}
}

// next is the least visible-at of the queue, zero when it is empty; q.mu
// held.
func (q *fakeQueue) next() time.Time {
	var next time.Time
	for _, at := range q.msgs {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// claimNext is claim for ReceiveNext: when it takes nothing it says when
// the next message is due, as a store that reads it in the claim's
// statement does.
func (q *fakeQueue) claimNext(ctx context.Context) ([]int, Next, error) {
	got, err := q.claim(ctx)
	if len(got) > 0 || err != nil {
		return got, Next{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	next := q.next()
	return nil, Next{Known: true, At: next.UnixMilli(), Pending: !next.IsZero()}, nil
}

// TestReceive: the loop returns at once what is visible or, with no
// wait, nothing; it wakes on a local send without the clock moving, at
// a delayed message's instant before its poll interval ends, at its
// poll interval to poll again, and at its wait's end; the end of its
// context comes back named.
func TestReceive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		wait time.Duration
		// meanwhile runs once the receiver sleeps (not at all when wait
		// is 0), on the queue and its clock.
		before    func(q *fakeQueue)
		meanwhile func(q *fakeQueue, cancel context.CancelFunc)
		want      []int
		polls     int
		elapsed   time.Duration
		err       error
	}{
		{name: "visible now", wait: time.Hour, before: func(q *fakeQueue) { q.send(1, start) }, want: []int{1}, polls: 1},
		{name: "no wait, empty", polls: 1},
		{name: "no wait, delayed", before: func(q *fakeQueue) { q.send(1, start.Add(time.Second)) }, polls: 1},
		{name: "local send wakes", wait: time.Hour,
			meanwhile: func(q *fakeQueue, _ context.CancelFunc) { q.send(2, start) }, want: []int{2}, polls: 2},
		{name: "delayed message wakes at its instant", wait: time.Hour,
			before:    func(q *fakeQueue) { q.send(3, start.Add(10*time.Second)) },
			meanwhile: func(q *fakeQueue, _ context.CancelFunc) { q.clk.Advance(10 * time.Second) },
			want:      []int{3}, polls: 2, elapsed: 10 * time.Second},
		{name: "wait ends empty", wait: 30 * time.Second,
			meanwhile: func(q *fakeQueue, _ context.CancelFunc) { q.clk.Advance(30 * time.Second) },
			polls:     2, elapsed: 30 * time.Second},
		{name: "context ends", wait: time.Hour,
			meanwhile: func(_ *fakeQueue, cancel context.CancelFunc) { cancel() }, polls: 1, err: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := &fakeQueue{clk: clock.NewFake(start), msgs: map[int]time.Time{}}
			if tc.before != nil {
				tc.before(q)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			type result struct {
				got []int
				err error
			}
			done := make(chan result, 1)
			go func() {
				got, err := q.receive(ctx, tc.wait)
				done <- result{got, err}
			}()
			if tc.meanwhile != nil {
				if err := q.clk.WaitForSleepers(t.Context(), 1); err != nil {
					t.Fatal(err)
				}
				tc.meanwhile(q, cancel)
			}
			r := <-done
			if !errors.Is(r.err, tc.err) || (r.err != nil && !strings.Contains(r.err.Error(), "fake queue q receive")) {
				t.Fatalf("error %v, want %v named after the queue", r.err, tc.err)
			}
			if len(r.got) != len(tc.want) || (len(tc.want) > 0 && r.got[0] != tc.want[0]) {
				t.Fatalf("received %v, want %v", r.got, tc.want)
			}
			if q.polls != tc.polls {
				t.Errorf("%d polls, want %d", q.polls, tc.polls)
			}
			if el := q.clk.Now().Sub(start); el != tc.elapsed {
				t.Errorf("clock moved %v, want %v", el, tc.elapsed)
			}
		})
	}
}

// TestPollsAgainAtInterval: with nothing sent and nothing delayed, a
// long poll re-polls every interval (another process's send reaches it
// so) until its wait ends.
func TestPollsAgainAtInterval(t *testing.T) {
	t.Parallel()
	q := &fakeQueue{clk: clock.NewFake(start), msgs: map[int]time.Time{}}
	done := make(chan []int, 1)
	go func() {
		got, _ := q.receive(t.Context(), time.Hour)
		done <- got
	}()
	for range 3 {
		if err := q.clk.WaitForSleepers(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		q.clk.Advance(time.Minute)
	}
	// Another process's message, put while the receiver sleeps, is seen
	// at the next poll without a wake.
	if err := q.clk.WaitForSleepers(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	q.mu.Lock()
	q.msgs[7] = start
	q.mu.Unlock()
	q.clk.Advance(time.Minute)
	if got := <-done; len(got) != 1 || got[0] != 7 {
		t.Fatalf("received %v, want [7]", got)
	}
	if q.polls != 5 {
		t.Fatalf("%d polls, want 5 (one per interval)", q.polls)
	}
}

// TestReceiveNext: a claim that says when the queue's next message is
// due spares the wait its NextVisible query, and the wait still wakes at
// that instant (a delayed message), at the interval (an empty queue, so
// another process's send is seen) and on a local send; a claim that does
// not know leaves the wait to ask.
func TestReceiveNext(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		unknown   bool // the claim does not say
		before    func(q *fakeQueue)
		meanwhile func(q *fakeQueue)
		want      int
		polls     int
		asked     int
		elapsed   time.Duration
	}{
		{name: "delayed message wakes at its instant",
			before:    func(q *fakeQueue) { q.send(3, start.Add(10*time.Second)) },
			meanwhile: func(q *fakeQueue) { q.clk.Advance(10 * time.Second) },
			want:      3, polls: 2, elapsed: 10 * time.Second},
		{name: "empty queue polls at the interval",
			meanwhile: func(q *fakeQueue) {
				q.mu.Lock()
				q.msgs[4] = start // another process's send: no wake
				q.mu.Unlock()
				q.clk.Advance(time.Minute)
			},
			want: 4, polls: 2, elapsed: time.Minute},
		{name: "local send wakes", meanwhile: func(q *fakeQueue) { q.send(5, start) }, want: 5, polls: 2},
		{name: "unknown asks NextVisible", unknown: true,
			before:    func(q *fakeQueue) { q.send(6, start.Add(10*time.Second)) },
			meanwhile: func(q *fakeQueue) { q.clk.Advance(10 * time.Second) },
			want:      6, polls: 2, asked: 1, elapsed: 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := &fakeQueue{clk: clock.NewFake(start), msgs: map[int]time.Time{}}
			if tc.before != nil {
				tc.before(q)
			}
			claim := q.claimNext
			if tc.unknown {
				claim = func(ctx context.Context) ([]int, Next, error) {
					got, err := q.claim(ctx)
					return got, Next{}, err
				}
			}
			done := make(chan []int, 1)
			go func() {
				got, err := ReceiveNext(t.Context(), q.poll(), time.Hour, claim)
				if err != nil {
					t.Error(err)
				}
				done <- got
			}()
			if err := q.clk.WaitForSleepers(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			tc.meanwhile(q)
			if got := <-done; len(got) != 1 || got[0] != tc.want {
				t.Fatalf("received %v, want [%d]", got, tc.want)
			}
			q.mu.Lock()
			defer q.mu.Unlock()
			if q.polls != tc.polls || q.asked != tc.asked {
				t.Errorf("%d polls and %d NextVisible calls, want %d and %d", q.polls, q.asked, tc.polls, tc.asked)
			}
			if el := q.clk.Now().Sub(start); el != tc.elapsed {
				t.Errorf("clock moved %v, want %v", el, tc.elapsed)
			}
		})
	}
}

// TestStmtNextVisible runs over a real database/sql statement (SQLite in
// memory, the stores' query): an empty queue has no next message, a
// queue's next is its least visible_at whatever else it holds, another
// queue's messages do not count, and a failing statement's error names
// the queue.
func TestStmtNextVisible(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	ctx := t.Context()
	if _, err := db.ExecContext(ctx, `CREATE TABLE queue_messages (queue TEXT, visible_at INTEGER);
		INSERT INTO queue_messages VALUES ('ring', 300), ('ring', 100), ('ring', 200), ('fast', 50)`); err != nil {
		t.Fatal(err)
	}
	stmt, err := db.PrepareContext(ctx, `SELECT min(visible_at) FROM queue_messages WHERE queue = ?`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		queue string
		at    int64
		ok    bool
	}{
		{queue: "ring", at: 100, ok: true},
		{queue: "fast", at: 50, ok: true},
		{queue: "slow"},
	} {
		t.Run(tc.queue, func(t *testing.T) {
			t.Parallel()
			at, ok, err := StmtNextVisible(ctx, stmt, tc.queue, "test queue "+tc.queue)
			if err != nil || at != tc.at || ok != tc.ok {
				t.Fatalf("next visible = %d, %v, %v; want %d, %v", at, ok, err, tc.at, tc.ok)
			}
		})
	}
	t.Run("failing statement", func(t *testing.T) {
		t.Parallel()
		closed, err := db.PrepareContext(ctx, `SELECT min(visible_at) FROM queue_messages WHERE queue = ?`)
		if err != nil {
			t.Fatal(err)
		}
		if err := closed.Close(); err != nil {
			t.Fatal(err)
		}
		_, ok, err := StmtNextVisible(ctx, closed, "ring", "test queue ring")
		if err == nil || ok || !strings.Contains(err.Error(), "test queue ring receive") {
			t.Fatalf("closed statement: ok %v, err %v; want an error naming the queue", ok, err)
		}
	})
}

// TestReceiveAllocatesNothingOfItsOwn: a Receive that returns at once
// (wait 0, as the dispatch lanes and the benchmarks' queue round ask)
// allocates nothing beyond what its claim does, so that sharing the loop
// costs the stores' hot path nothing: the poll is built once per queue
// and the claim is not kept. Not parallel: testing.AllocsPerRun counts
// the whole process's allocations.
func TestReceiveAllocatesNothingOfItsOwn(t *testing.T) {
	q := &fakeQueue{clk: clock.NewFake(start), msgs: map[int]time.Time{}}
	p := q.poll()
	ctx := t.Context()
	if n := testing.AllocsPerRun(100, func() {
		if _, err := Receive(ctx, p, 0, q.claim); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations a Receive, want 0", n)
	}
}
