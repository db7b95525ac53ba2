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
	"github.com/xjobdev/xjob/internal/adapter/longpoll"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/pkg/driver"
)

// Ring returns the ring queue.
func (db *DB) Ring() driver.Queue[fire.RingBucket] { return db.ring }

// Dispatch returns one dispatch lane's queue.
func (db *DB) Dispatch(lane fire.Lane) driver.Queue[fire.DispatchTask] {
	switch lane {
	case fire.LaneFast:
		return db.fast
	case fire.LaneSlow:
		return db.slow
	}
	q, _ := db.other.LoadOrStore(lane, newQueue[fire.DispatchTask](db, "dispatch-"+string(lane)))
	return q.(*queue[fire.DispatchTask])
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
	poll longpoll.Poll // Receive's wait, built once
}

func newQueue[T any](db *DB, name string) *queue[T] {
	q := &queue[T]{db: db, name: name}
	q.poll = longpoll.Poll{
		Name:     "sqlite queue " + name,
		Clock:    db.opts.Clock,
		Interval: db.opts.PollInterval,
		Signal:   func() <-chan struct{} { return db.signals.Next(name) },
		NextVisible: func(ctx context.Context) (int64, bool, error) {
			return longpoll.StmtNextVisible(ctx, db.rs.queueNextVisible, name, q.poll.Name)
		},
	}
	return q
}

// Send enqueues msgs in one transaction and wakes this process's waiters.
func (q *queue[T]) Send(ctx context.Context, msgs []driver.Outgoing[T]) error {
	if len(msgs) == 0 {
		return nil
	}
	now := q.db.opts.Clock.Now().UnixMilli()
	// Encode outside the writer: it is the one goroutine all writes share.
	bodies := make([]string, len(msgs))
	for i, m := range msgs {
		body, err := json.Marshal(m.Msg)
		if err != nil {
			return fmt.Errorf("sqlite queue %s send: %w", q.name, err)
		}
		bodies[i] = string(body)
	}
	err := q.db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		for i, m := range msgs {
			if _, err := q.db.ws.queueSend.ExecContext(ctx, q.name, bodies[i], max(m.VisibleAt, now)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite queue %s send: %w", q.name, err)
	}
	q.db.signals.Wake(q.name)
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
	return longpoll.Receive(ctx, &q.poll, p.Wait, func(ctx context.Context) ([]driver.Delivery[T], error) {
		return q.claim(ctx, p)
	})
}

func (q *queue[T]) claim(ctx context.Context, p driver.ReceiveParams) ([]driver.Delivery[T], error) {
	now := q.db.opts.Clock.Now().UnixMilli()
	// Look on a reader first: an empty poll should not take the write lock.
	var one int
	err := q.db.rs.queuePeek.QueryRowContext(ctx, q.name, now).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite queue %s receive: %w", q.name, err)
	}
	// Once the writer has started the claim it runs to completion even if
	// ctx ends meanwhile (write only abandons requests not yet started):
	// rows that the UPDATE claimed but that were never returned would stay
	// hidden for the whole visibility timeout.
	type claimed struct {
		id       int64
		body     string
		receives int
		receipt  string
	}
	var got []claimed
	err = q.db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		got = got[:0]
		rows, err := q.db.ws.queueClaim.QueryContext(ctx, now+p.Visibility.Milliseconds(), q.name, now, p.Max)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c claimed
			if err := rows.Scan(&c.id, &c.body, &c.receives, &c.receipt); err != nil {
				return err
			}
			got = append(got, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite queue %s receive: %w", q.name, err)
	}
	out := make([]driver.Delivery[T], 0, len(got))
	for _, c := range got {
		d := driver.Delivery[T]{Receives: c.receives, Token: strconv.FormatInt(c.id, 10) + "." + c.receipt}
		if err := json.Unmarshal([]byte(c.body), &d.Msg); err != nil {
			q.setAside(ctx, c.id, c.receipt, err)
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// SetAside is how long a message this code cannot decode stays hidden
// before it is tried again. Such a message is a newer version's (written
// before a downgrade: fire.VersionError) or corrupt; it is never deleted
// unread, and never holds back the messages received with it. After an
// upgrade back to the version that wrote it, it is read within this time.
const SetAside = time.Hour

// setAside hides the undecodable message id (its receipt receipt) for
// SetAside and says so in the log.
func (q *queue[T]) setAside(ctx context.Context, id int64, receipt string, derr error) {
	until := q.db.opts.Clock.Now().Add(SetAside).UnixMilli()
	err := q.db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		_, err := q.db.ws.queueRetry.ExecContext(ctx, until, id, receipt)
		return err
	})
	q.db.opts.Logger.ErrorContext(ctx, "queue message this version cannot read set aside; it is tried again later",
		"queue", q.name, "message", id, "retryIn", SetAside.String(), "err", derr, "setAsideErr", err)
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
	type key struct {
		id      int64
		receipt string
	}
	keys := make([]key, len(tokens))
	for i, tok := range tokens {
		id, receipt, err := parseToken(tok)
		if err != nil {
			return fmt.Errorf("sqlite queue %s ack: %w", q.name, err)
		}
		keys[i] = key{id, receipt}
	}
	err := q.db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		for _, k := range keys {
			if _, err := q.db.ws.queueAck.ExecContext(ctx, k.id, k.receipt); err != nil {
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
	err = q.db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		n, err := rowsAffected(q.db.ws.queueRetry.ExecContext(ctx, at, id, receipt))
		if err == nil && n == 0 {
			err = xjob.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite queue %s retry: %w", q.name, err)
	}
	q.db.signals.Wake(q.name)
	return nil
}

// releaseClaimsWithin bounds how old a log ReleaseClaims still looks at:
// far longer than any dispatch claim TTL.
const releaseClaimsWithin = time.Hour

// ReleaseClaims makes every claimed, unacknowledged message of every queue
// visible again at once, and invalidates the old delivery tokens; and it
// expires the dispatch claims of trigger logs created but never triggered
// (ClaimUntil), so the redelivered buckets take those occurrences over at
// once (dispatch first asks the executor whether the dead process's /run
// got through) instead of after the claim TTL. It is for a process that
// knows the previous user of the file is dead — xjob local holding the
// installation lock after a crash — so that what the dead process held
// comes back now instead of after its timeouts. A message some other live
// consumer still holds would be delivered twice; deduplication downstream
// (occurrence ids) makes that harmless. It returns how many messages it
// released (logs not counted).
func (db *DB) ReleaseClaims(ctx context.Context) (int, error) {
	var n int64
	now := db.opts.Clock.Now().UnixMilli()
	err := db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		var err error
		n, err = rowsAffected(c.ExecContext(ctx, `UPDATE queue_messages SET visible_at = ?, receipt = ''
			WHERE receipt <> '' AND visible_at > ?`, now, now))
		if err != nil {
			return err
		}
		// A claim is created with the log (trigger_time = its creation)
		// and lasts the claim TTL (30 s by default): bounding the scan by
		// trigger time keeps it on the logs_time index.
		_, err = c.ExecContext(ctx, `UPDATE logs SET claim_until = ?1, version = version + 1
			WHERE trigger_time >= ?2 AND trigger_code = 0 AND claim_until > ?1`, now, now-releaseClaimsWithin.Milliseconds())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite queue release claims: %w", err)
	}
	if n > 0 {
		for _, name := range []string{db.ring.name, db.fast.name, db.slow.name} {
			db.signals.Wake(name)
		}
	}
	return int(n), nil
}

// QueueDepths counts the messages held by the ring and each dispatch lane
// (visible or delayed, received or not), keyed "ring", "fast", "slow": the
// queue-depth gauge of /metrics.
func (db *DB) QueueDepths(ctx context.Context) (map[string]int64, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT queue, count(*) FROM queue_messages GROUP BY queue`)
	if err != nil {
		return nil, fmt.Errorf("sqlite queue depths: %w", err)
	}
	type depth struct {
		queue string
		n     int64
	}
	all, err := scanAll(rows, func(s scanner) (depth, error) {
		var d depth
		return d, s.Scan(&d.queue, &d.n)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite queue depths: %w", err)
	}
	out := map[string]int64{"ring": 0, string(fire.LaneFast): 0, string(fire.LaneSlow): 0}
	for _, d := range all {
		out[strings.TrimPrefix(d.queue, "dispatch-")] = d.n
	}
	return out, nil
}
