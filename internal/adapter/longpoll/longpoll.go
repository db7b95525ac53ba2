// Package longpoll is the wait of a long-polling Receive on a queue kept
// in a database table, shared by the SQL stores (sqlitestore, pgstore,
// mysqlstore). A database has no blocking read, so a receiver that
// finds nothing re-polls: at its poll interval, at once when a send in
// the same process (or, in pgstore, a notification from another node)
// wakes it, and no later than the moment the queue's next delayed
// message becomes visible. The stores differ in how they claim and how
// they ask for that moment (dialect), not in this loop, which is why it
// is here once and the claim and the query stay in each store.
package longpoll

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/xjobdev/xjob/pkg/clock"
)

// Signals wakes a process's waiters on a queue: Next hands out a channel
// that the next Wake of that queue closes. The zero value is ready.
type Signals struct {
	mu sync.Mutex
	m  map[string]chan struct{} // queue name → closed on Wake, then replaced
}

// Next returns the channel closed at the next Wake of queue name. Take it
// before polling the queue, so that a send between the poll and the wait
// is not missed.
func (s *Signals) Next(name string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]chan struct{}{}
	}
	ch, ok := s.m[name]
	if !ok {
		ch = make(chan struct{})
		s.m[name] = ch
	}
	return ch
}

// Wake tells the waiters on queue name that a message was sent to it.
func (s *Signals) Wake(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.m[name]; ok {
		close(ch)
		delete(s.m, name)
	}
}

// Poll is one queue's long poll: what stays the same from one Receive
// to the next, so that a store builds it once per queue and a Receive
// that finds messages at once allocates nothing for the poll.
type Poll struct {
	// Name says which store and queue in errors ("sqlite queue ring").
	Name string
	// Clock is what the poll sleeps on.
	Clock clock.Clock
	// Interval is how long a wait lasts when nothing wakes it sooner.
	Interval time.Duration
	// Signal returns the channel closed at the queue's next local send
	// (Signals.Next of the queue).
	Signal func() <-chan struct{}
	// NextVisible returns when, in Unix milliseconds, the queue's next
	// message becomes visible; ok is false when the queue is empty.
	NextVisible func(ctx context.Context) (at int64, ok bool, err error)
}

// Receive runs claim, which takes what is visible now (nothing is no
// error); when it takes nothing, Receive waits up to wait on p and claims
// again each time it wakes, and returns what the first successful claim
// took, or nothing once wait has passed (at once when wait is not
// positive). claim's and NextVisible's errors come back as they are; the
// end of ctx while waiting comes back wrapped with p.Name.
func Receive[T any](ctx context.Context, p *Poll, wait time.Duration, claim func(context.Context) ([]T, error)) ([]T, error) {
	return ReceiveNext(ctx, p, wait, func(ctx context.Context) ([]T, Next, error) {
		got, err := claim(ctx)
		return got, Next{}, err
	})
}

// Next is what a claim that took nothing learned, in the statement it
// ran anyway, about when the queue's next message becomes visible. An
// empty poll is the common case of a long poll (every receiver of every
// node polls every interval), so a store whose claim can read the
// queue's least visible_at in the same round trip spares the wait its
// own query (NextVisible) and halves an empty poll's round trips.
type Next struct {
	// Known says the claim read it; when false the wait asks
	// p.NextVisible.
	Known bool
	// At is when the next message becomes visible, in Unix milliseconds;
	// meaningful only when Pending.
	At int64
	// Pending is false when the queue holds no message at all.
	Pending bool
}

// ReceiveNext is Receive for a claim that may say, when it takes
// nothing, when the queue's next message becomes visible (Next); the wait
// then asks p.NextVisible only when the claim did not know.
func ReceiveNext[T any](ctx context.Context, p *Poll, wait time.Duration, claim func(context.Context) ([]T, Next, error)) ([]T, error) {
	deadline := p.Clock.Now().Add(wait)
	for {
		sent := p.Signal() // before polling, so no send is missed
		got, known, err := claim(ctx)
		if err != nil || len(got) > 0 {
			return got, err
		}
		now := p.Clock.Now()
		if wait <= 0 || !now.Before(deadline) {
			return nil, nil
		}
		wake := now.Add(p.Interval)
		next, ok := known.At, known.Pending
		if !known.Known {
			if next, ok, err = p.NextVisible(ctx); err != nil {
				return nil, err
			}
		}
		if ok {
			if t := time.UnixMilli(next); t.Before(wake) {
				wake = t
			}
		}
		if deadline.Before(wake) {
			wake = deadline
		}
		if err := sleep(ctx, p.Clock, wake, sent); err != nil {
			return nil, fmt.Errorf("%s receive: %w", p.Name, err)
		}
	}
}

// sleep waits on clk until wake, or until sent is closed.
func sleep(ctx context.Context, clk clock.Clock, wake time.Time, sent <-chan struct{}) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- clk.SleepUntil(sctx, wake) }()
	select {
	case <-sent:
		cancel()
		<-done
		return ctx.Err()
	case err := <-done:
		return err
	}
}

// StmtNextVisible is NextVisible for the stores on database/sql
// (sqlitestore, mysqlstore): stmt selects the least visible_at of the
// queue its one argument names, NULL when the queue is empty. An error
// comes back wrapped with name, as Poll's Name ("sqlite queue ring").
func StmtNextVisible(ctx context.Context, stmt *sql.Stmt, queue, name string) (int64, bool, error) {
	var next sql.NullInt64
	if err := stmt.QueryRowContext(ctx, queue).Scan(&next); err != nil {
		return 0, false, fmt.Errorf("%s receive: %w", name, err)
	}
	return next.Int64, next.Valid, nil
}
