package mysqlstore

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

// queue is one named queue in the queue_messages table, with JSON bodies
// (see doc.go for the claim protocol). A delivery's token is
// "<id>.<receipt>"; every Receive draws a fresh random receipt, so a
// token from an earlier delivery cannot ack or retry a message that has
// since been redelivered.
type queue[T any] struct {
	db   *DB
	name string
	poll longpoll.Poll // Receive's wait, built once
}

func newQueue[T any](db *DB, name string) *queue[T] {
	q := &queue[T]{db: db, name: name}
	q.poll = longpoll.Poll{
		Name:     "mysql queue " + name,
		Clock:    db.opts.Clock,
		Interval: db.opts.PollInterval,
		Signal:   func() <-chan struct{} { return db.signals.Next(name) },
		NextVisible: func(ctx context.Context) (int64, bool, error) {
			return longpoll.StmtNextVisible(ctx, db.st.queueNextVisible, name, q.poll.Name)
		},
	}
	return q
}

// Send enqueues msgs in one multi-row INSERT and wakes this DB's waiters.
func (q *queue[T]) Send(ctx context.Context, msgs []driver.Outgoing[T]) error {
	if len(msgs) == 0 {
		return nil
	}
	now := q.db.opts.Clock.Now().UnixMilli()
	args := make([]any, 0, 3*len(msgs))
	for _, m := range msgs {
		body, err := json.Marshal(m.Msg)
		if err != nil {
			return fmt.Errorf("mysql queue %s send: %w", q.name, err)
		}
		args = append(args, q.name, body, max(m.VisibleAt, now))
	}
	stmt := `INSERT INTO queue_messages (queue, body, visible_at) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?,?,?),", len(msgs)), ",")
	err := q.db.retry(ctx, "queue send", func() error {
		_, err := q.db.db.ExecContext(ctx, stmt, args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("mysql queue %s send: %w", q.name, err)
	}
	q.db.signals.Wake(q.name)
	return nil
}

// Receive claims up to Max visible messages; with Wait it sleeps on the
// clock until a message may be visible (the earliest visible_at, a send
// through this DB, or the poll interval for sends from other nodes) and
// tries again until Wait has passed.
func (q *queue[T]) Receive(ctx context.Context, p driver.ReceiveParams) ([]driver.Delivery[T], error) {
	if p.Max <= 0 {
		p.Max = 1
	}
	if p.Visibility <= 0 {
		p.Visibility = defaultVisibility
	}
	return longpoll.ReceiveNext(ctx, &q.poll, p.Wait, func(ctx context.Context) ([]driver.Delivery[T], longpoll.Next, error) {
		return q.claim(ctx, p)
	})
}

// claimed is one message a Receive took.
type claimed struct {
	id       int64
	body     []byte
	receives int
}

// claim takes up to p.Max visible messages in one transaction: it locks
// the oldest visible rows no other receiver holds (FOR UPDATE SKIP
// LOCKED, so concurrent receivers on any node take disjoint messages
// without waiting for each other) and hides them for the visibility
// timeout under a fresh receipt. When it takes nothing because nothing
// is visible, it says when the next message will be (longpoll.Next).
func (q *queue[T]) claim(ctx context.Context, p driver.ReceiveParams) ([]driver.Delivery[T], longpoll.Next, error) {
	now := q.db.opts.Clock.Now().UnixMilli()
	// Look first, with the query the wait would ask anyway (one index
	// dive): an empty poll costs this one round trip, opens no
	// transaction, and tells the wait when to poll again.
	var least sql.NullInt64
	if err := q.db.st.queueNextVisible.QueryRowContext(ctx, q.name).Scan(&least); err != nil {
		return nil, longpoll.Next{}, fmt.Errorf("mysql queue %s receive: %w", q.name, err)
	}
	if !least.Valid || least.Int64 > now {
		return nil, longpoll.Next{Known: true, At: least.Int64, Pending: least.Valid}, nil
	}
	// Once the claim has committed, it is returned even if ctx ends
	// meanwhile: rows claimed but never returned would stay hidden for
	// the whole visibility timeout.
	wctx := context.WithoutCancel(ctx)
	var got []claimed
	receipt := randHex(8)
	err := q.db.tx(wctx, "queue receive", func(tx *sql.Tx) error {
		got = got[:0]
		rows, err := tx.StmtContext(wctx, q.db.st.queueLock).QueryContext(wctx, q.name, now, p.Max)
		if err != nil {
			return err
		}
		got, err = scanAll(rows, func(s scanner) (claimed, error) {
			var c claimed
			return c, s.Scan(&c.id, &c.body, &c.receives)
		})
		if err != nil || len(got) == 0 {
			return err
		}
		ids := make([]any, 0, len(got)+4)
		ids = append(ids, now+p.Visibility.Milliseconds(), receipt, q.db.opts.Node)
		for _, c := range got {
			ids = append(ids, c.id)
		}
		_, err = tx.ExecContext(wctx, `UPDATE queue_messages SET receives = receives + 1, visible_at = ?, receipt = ?, node = ?
			WHERE id IN (`+marks(len(got))+`)`, ids...)
		return err
	})
	if err != nil {
		return nil, longpoll.Next{}, fmt.Errorf("mysql queue %s receive: %w", q.name, err)
	}
	// Taking nothing here means other receivers hold what was visible:
	// the wait asks again when the next message is due.
	out := make([]driver.Delivery[T], 0, len(got))
	for _, c := range got {
		d := driver.Delivery[T]{Receives: c.receives + 1, Token: strconv.FormatInt(c.id, 10) + "." + receipt}
		if err := json.Unmarshal(c.body, &d.Msg); err != nil {
			q.setAside(ctx, c.id, receipt, err)
			continue
		}
		out = append(out, d)
	}
	return out, longpoll.Next{}, nil
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
	_, err := q.db.st.queueRetry.ExecContext(context.WithoutCancel(ctx), until, id, receipt)
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

// Ack deletes delivered messages, one DELETE per receipt (one, for the
// tokens of one Receive); tokens whose message is gone or was redelivered
// since are ignored.
func (q *queue[T]) Ack(ctx context.Context, tokens []string) error {
	if len(tokens) == 0 {
		return nil
	}
	byReceipt := map[string][]any{}
	var order []string
	for _, tok := range tokens {
		id, receipt, err := parseToken(tok)
		if err != nil {
			return fmt.Errorf("mysql queue %s ack: %w", q.name, err)
		}
		if _, ok := byReceipt[receipt]; !ok {
			order = append(order, receipt)
		}
		byReceipt[receipt] = append(byReceipt[receipt], id)
	}
	for _, receipt := range order {
		ids := byReceipt[receipt]
		err := q.db.retry(ctx, "queue ack", func() error {
			_, err := q.db.db.ExecContext(ctx, `DELETE FROM queue_messages WHERE receipt = ? AND id IN (`+marks(len(ids))+`)`,
				append([]any{receipt}, ids...)...)
			return err
		})
		if err != nil {
			return fmt.Errorf("mysql queue %s ack: %w", q.name, err)
		}
	}
	return nil
}

// Retry makes a delivered message visible again after delay;
// xjob.ErrNotFound if it was acked or redelivered since.
func (q *queue[T]) Retry(ctx context.Context, token string, delay time.Duration) error {
	id, receipt, err := parseToken(token)
	if err != nil {
		return fmt.Errorf("mysql queue %s retry: %w", q.name, err)
	}
	at := q.db.opts.Clock.Now().Add(max(delay, 0)).UnixMilli()
	err = q.db.retry(ctx, "queue retry", func() error {
		n, err := rowsAffected(q.db.st.queueRetry.ExecContext(ctx, at, id, receipt))
		if err == nil && n == 0 {
			err = xjob.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("mysql queue %s retry: %w", q.name, err)
	}
	q.db.signals.Wake(q.name)
	return nil
}

// releaseClaimsWithin bounds how old a log ReleaseClaims still looks at:
// far longer than any dispatch claim TTL.
const releaseClaimsWithin = time.Hour

// ReleaseClaims makes every received, unacknowledged message of every
// queue visible again at once, invalidating the old delivery tokens, and
// expires the dispatch claims of trigger logs created but never triggered
// (ClaimUntil), so the redelivered buckets take those occurrences over at
// once instead of after the claim TTL. It is local mode's crash recovery
// (sqlitestore.DB.ReleaseClaims) and, on a shared database, only right
// when no other node is alive — a whole cluster restarting: a message a
// live node still holds would be delivered twice (occurrence ids make
// that harmless, not free). A node that knows which peer died uses
// ReleaseNodeClaims. It returns how many messages it released.
func (db *DB) ReleaseClaims(ctx context.Context) (int, error) {
	now := db.opts.Clock.Now().UnixMilli()
	var n int64
	err := db.retry(ctx, "release claims", func() error {
		var err error
		n, err = rowsAffected(db.db.ExecContext(ctx, `UPDATE queue_messages SET visible_at = ?, receipt = '', node = ''
			WHERE receipt <> '' AND visible_at > ?`, now, now))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mysql queue release claims: %w", err)
	}
	// A claim is created with the log (trigger_time = its creation) and
	// lasts the claim TTL (30 s by default): bounding the scan by trigger
	// time keeps it on the logs_time index.
	err = db.retry(ctx, "release log claims", func() error {
		_, err := db.db.ExecContext(ctx, `UPDATE logs SET claim_until = ?, version = version + 1
			WHERE trigger_time >= ? AND trigger_code = 0 AND claim_until > ?`, now, now-releaseClaimsWithin.Milliseconds(), now)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mysql log release claims: %w", err)
	}
	if n > 0 {
		db.wakeAll()
	}
	return int(n), nil
}

// ReleaseNodeClaims makes the messages node received (its Options.Node)
// and never acknowledged visible again at once, invalidating its delivery
// tokens: for the node that sees a peer leave or expire, so that the ring
// buckets and lane tasks the dead node held come back now instead of
// after their visibility timeouts. The claims the dead node holds on
// trigger logs created and never triggered expire too, except those it
// marked as calling (LogsCalling: it may be calling them) (a ring bucket's
// logs are claimed a second or so before their instant): the redelivered
// bucket takes them over at once, not after the claim TTL. It returns how
// many messages it released (logs not counted).
func (db *DB) ReleaseNodeClaims(ctx context.Context, node string) (int, error) {
	if node == "" {
		return 0, errors.New("mysql release node claims: empty node id (every unnamed node's claims are not one node's)")
	}
	now := db.opts.Clock.Now().UnixMilli()
	var n int64
	err := db.retry(ctx, "release node claims", func() error {
		// Logs first: a bucket the message release redelivers must find
		// them expired.
		if _, err := db.db.ExecContext(ctx, `UPDATE logs SET claim_until = ?, version = version + 1
			WHERE trigger_time >= ? AND trigger_code = 0 AND claim_until > ? AND claimed_by = ?`,
			now, now-releaseClaimsWithin.Milliseconds(), now, node); err != nil {
			return err
		}
		var err error
		n, err = rowsAffected(db.db.ExecContext(ctx, `UPDATE queue_messages SET visible_at = ?, receipt = '', node = ''
			WHERE node = ? AND receipt <> '' AND visible_at > ?`, now, node, now))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mysql queue release claims of node %s: %w", node, err)
	}
	if n > 0 {
		db.wakeAll()
	}
	return int(n), nil
}

// wakeAll wakes the waiters of the ring and both lanes.
func (db *DB) wakeAll() {
	for _, name := range []string{db.ring.name, db.fast.name, db.slow.name} {
		db.signals.Wake(name)
	}
}

// QueueDepths counts the messages held by the ring and each dispatch lane
// (visible or delayed, received or not), keyed "ring", "fast", "slow": the
// queue-depth gauge of /metrics.
func (db *DB) QueueDepths(ctx context.Context) (map[string]int64, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT queue, COUNT(*) FROM queue_messages GROUP BY queue`)
	if err != nil {
		return nil, fmt.Errorf("mysql queue depths: %w", err)
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
		return nil, fmt.Errorf("mysql queue depths: %w", err)
	}
	out := map[string]int64{"ring": 0, string(fire.LaneFast): 0, string(fire.LaneSlow): 0}
	for _, d := range all {
		out[strings.TrimPrefix(d.queue, "dispatch-")] = d.n
	}
	return out, nil
}
