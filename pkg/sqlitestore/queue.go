package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Ring returns the ring queue.
func (db *DB) Ring() driver.Queue[xjob.RingBucket] { return db.ring }

// Dispatch returns one dispatch lane's queue.
func (db *DB) Dispatch(lane xjob.Lane) driver.Queue[xjob.DispatchTask] {
	switch lane {
	case xjob.LaneFast:
		return db.fast
	case xjob.LaneSlow:
		return db.slow
	}
	q, _ := db.other.LoadOrStore(lane, newQueue[xjob.DispatchTask](db, "dispatch-"+string(lane)))
	return q.(*queue[xjob.DispatchTask])
}

// defaultVisibility hides a received message when the caller names no
// visibility timeout (SQS's default too).
const defaultVisibility = 30 * time.Second

// queue is one named queue in the queue_messages table, with JSON bodies.
// A delivery's token is "<id>.<receipt>"; every delivery draws a fresh
// random receipt, so a token from an earlier delivery cannot ack or retry
// a message that has since been redelivered.
type queue[T any] struct {
	db   *DB
	name string
}

func newQueue[T any](db *DB, name string) *queue[T] { return &queue[T]{db: db, name: name} }

// Send enqueues msgs in one transaction and wakes this process's waiters.
func (q *queue[T]) Send(ctx context.Context, msgs []driver.Outgoing[T]) error {
	if len(msgs) == 0 {
		return nil
	}
	now := q.db.opts.Clock.Now().UnixMilli()
	err := q.db.inTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO queue_messages (queue, body, visible_at) VALUES (?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, m := range msgs {
			body, err := json.Marshal(m.Msg)
			if err != nil {
				return err
			}
			if _, err := stmt.ExecContext(ctx, q.name, string(body), max(m.VisibleAt, now)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite queue %s send: %w", q.name, err)
	}
	q.db.wake(q.name)
	return nil
}

// Receive claims up to Max visible messages in one UPDATE … RETURNING; with
// Wait it sleeps on the clock until a message may be visible (the earliest
// visible_at, a send in this process, or the poll interval for sends from
// other processes) and tries again until Wait has passed.
func (q *queue[T]) Receive(ctx context.Context, p driver.ReceiveParams) ([]driver.Delivery[T], error) {
	if p.Max <= 0 {
		p.Max = 1
	}
	if p.Visibility <= 0 {
		p.Visibility = defaultVisibility
	}
	clk := q.db.opts.Clock
	deadline := clk.Now().Add(p.Wait)
	for {
		sent := q.db.signal(q.name) // before polling, so no send is missed
		got, err := q.claim(ctx, p)
		if err != nil || len(got) > 0 {
			return got, err
		}
		now := clk.Now()
		if p.Wait <= 0 || !now.Before(deadline) {
			return nil, nil
		}
		wake := now.Add(q.db.opts.PollInterval)
		var next sql.NullInt64
		if err := q.db.r.QueryRowContext(ctx, `SELECT min(visible_at) FROM queue_messages WHERE queue = ?`, q.name).Scan(&next); err != nil {
			return nil, fmt.Errorf("sqlite queue %s receive: %w", q.name, err)
		}
		if next.Valid {
			if t := time.UnixMilli(next.Int64); t.Before(wake) {
				wake = t
			}
		}
		if deadline.Before(wake) {
			wake = deadline
		}
		if err := q.sleep(ctx, wake, sent); err != nil {
			return nil, fmt.Errorf("sqlite queue %s receive: %w", q.name, err)
		}
	}
}

// sleep waits on the clock until wake, or until sent is closed.
func (q *queue[T]) sleep(ctx context.Context, wake time.Time, sent <-chan struct{}) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- q.db.opts.Clock.SleepUntil(sctx, wake) }()
	select {
	case <-sent:
		cancel()
		<-done
		return ctx.Err()
	case err := <-done:
		return err
	}
}

func (q *queue[T]) claim(ctx context.Context, p driver.ReceiveParams) ([]driver.Delivery[T], error) {
	now := q.db.opts.Clock.Now().UnixMilli()
	// Look on a reader first: an empty poll should not take the write lock.
	var one int
	err := q.db.r.QueryRowContext(ctx, `SELECT 1 FROM queue_messages WHERE queue = ? AND visible_at <= ? LIMIT 1`,
		q.name, now).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite queue %s receive: %w", q.name, err)
	}
	// The claim runs to completion even if ctx ends meanwhile: rows that
	// the UPDATE claimed but that were never returned would stay hidden
	// for the whole visibility timeout.
	rows, err := q.db.w.QueryContext(context.WithoutCancel(ctx), `UPDATE queue_messages
		SET receives = receives + 1, visible_at = ?1, receipt = lower(hex(randomblob(12)))
		WHERE id IN (SELECT id FROM queue_messages WHERE queue = ?2 AND visible_at <= ?3
		             ORDER BY visible_at, id LIMIT ?4)
		RETURNING id, body, receives, receipt`,
		now+p.Visibility.Milliseconds(), q.name, now, p.Max)
	if err != nil {
		return nil, fmt.Errorf("sqlite queue %s receive: %w", q.name, err)
	}
	defer rows.Close()
	var out []driver.Delivery[T]
	for rows.Next() {
		var (
			id      int64
			body    string
			d       driver.Delivery[T]
			receipt string
		)
		if err := rows.Scan(&id, &body, &d.Receives, &receipt); err != nil {
			return nil, fmt.Errorf("sqlite queue %s receive: %w", q.name, err)
		}
		if err := json.Unmarshal([]byte(body), &d.Msg); err != nil {
			return nil, fmt.Errorf("sqlite queue %s receive: message %d: %w", q.name, id, err)
		}
		d.Token = strconv.FormatInt(id, 10) + "." + receipt
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite queue %s receive: %w", q.name, err)
	}
	return out, nil
}

func parseToken(token string) (int64, string, error) {
	ids, receipt, ok := strings.Cut(token, ".")
	id, err := strconv.ParseInt(ids, 10, 64)
	if !ok || err != nil || receipt == "" {
		return 0, "", &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "token", Message: fmt.Sprintf("%q is not a delivery token", token)}}}
	}
	return id, receipt, nil
}

// Ack deletes delivered messages; tokens whose message is gone or was
// redelivered since are ignored.
func (q *queue[T]) Ack(ctx context.Context, tokens []string) error {
	if len(tokens) == 0 {
		return nil
	}
	err := q.db.inTx(ctx, func(tx *sql.Tx) error {
		for _, tok := range tokens {
			id, receipt, err := parseToken(tok)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM queue_messages WHERE id = ? AND receipt = ?`, id, receipt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite queue %s ack: %w", q.name, err)
	}
	return nil
}

// Retry makes a delivered message visible again after delay;
// xjob.ErrNotFound if it was acked or redelivered since.
func (q *queue[T]) Retry(ctx context.Context, token string, delay time.Duration) error {
	id, receipt, err := parseToken(token)
	if err != nil {
		return fmt.Errorf("sqlite queue %s retry: %w", q.name, err)
	}
	at := q.db.opts.Clock.Now().Add(max(delay, 0)).UnixMilli()
	n, err := rowsAffected(q.db.w.ExecContext(ctx, `UPDATE queue_messages SET visible_at = ? WHERE id = ? AND receipt = ?`, at, id, receipt))
	if err == nil && n == 0 {
		err = xjob.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sqlite queue %s retry: %w", q.name, err)
	}
	q.db.wake(q.name)
	return nil
}
