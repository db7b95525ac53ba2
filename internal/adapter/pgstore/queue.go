package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

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

// claimTimeout bounds a claim that runs on after its caller gave up (see
// claim).
const claimTimeout = 30 * time.Second

// queue is one named queue in the queue_messages table, with JSON bodies.
// A delivery's token is "<id>.<receipt>"; every receive draws a fresh
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
		Name:     "pgstore queue " + name,
		Clock:    db.opts.Clock,
		Interval: db.opts.PollInterval,
		Signal:   func() <-chan struct{} { return db.signals.Next(name) },
		NextVisible: func(ctx context.Context) (int64, bool, error) {
			var next *int64
			if err := db.pool.QueryRow(ctx, `SELECT min(visible_at) FROM queue_messages WHERE queue = $1`, name).Scan(&next); err != nil {
				return 0, false, db.wrap("queue "+name+" receive", err)
			}
			if next == nil {
				return 0, false, nil
			}
			return *next, true, nil
		},
	}
	return q
}

// Send enqueues msgs in one INSERT and wakes the waiters of every node
// (notify.go).
func (q *queue[T]) Send(ctx context.Context, msgs []driver.Outgoing[T]) error {
	if len(msgs) == 0 {
		return nil
	}
	now := q.db.opts.Clock.Now().UnixMilli()
	bodies, at := make([]string, len(msgs)), make([]int64, len(msgs))
	for i, m := range msgs {
		body, err := json.Marshal(m.Msg)
		if err != nil {
			return fmt.Errorf("pgstore queue %s send: %w", q.name, err)
		}
		bodies[i], at[i] = string(body), max(m.VisibleAt, now)
	}
	_, err := q.db.pool.Exec(ctx, `WITH sent AS (INSERT INTO queue_messages (queue, body, visible_at)
			SELECT $1, b, v FROM unnest($2::text[], $3::bigint[]) AS m(b, v))
		SELECT pg_notify('`+notifyChannel+`', $1)`, q.name, bodies, at)
	if err != nil {
		return q.db.wrap("queue "+q.name+" send", err)
	}
	q.db.signals.Wake(q.name)
	return nil
}

// Receive claims up to Max visible messages in one statement; with Wait
// it sleeps on the clock until a message may be visible (the earliest
// visible_at, a send through this DB, or the poll interval for sends from
// other nodes) and tries again until Wait has passed.
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

// sqlQueueClaim claims the oldest visible messages of a queue. SKIP
// LOCKED passes over rows another receive is claiming this instant, so
// concurrent receivers on any node take disjoint messages without waiting
// for each other; the claim pushes visible_at out by the visibility
// timeout and stamps a fresh receipt. When it claims nothing, the same
// statement returns one more row, id NULL, with the queue's least
// visible_at (NULL when the queue is empty): an empty poll, the common
// case of a long poll, is then one round trip instead of the claim and
// the wait's NextVisible query.
const sqlQueueClaim = `WITH c AS (UPDATE queue_messages m
	SET receives = m.receives + 1, visible_at = $1, receipt = $2, claimed_by = $3
	FROM (SELECT id FROM queue_messages WHERE queue = $4 AND visible_at <= $5
	      ORDER BY visible_at, id LIMIT $6 FOR UPDATE SKIP LOCKED) c
	WHERE m.id = c.id
	RETURNING m.id, m.body, m.receives)
	SELECT id, body, receives, NULL::bigint FROM c
	UNION ALL
	SELECT NULL, NULL, NULL, min(visible_at) FROM queue_messages WHERE queue = $4
	HAVING NOT EXISTS (SELECT 1 FROM c)`

func (q *queue[T]) claim(ctx context.Context, p driver.ReceiveParams) ([]driver.Delivery[T], longpoll.Next, error) {
	if err := ctx.Err(); err != nil {
		return nil, longpoll.Next{}, err
	}
	now := q.db.opts.Clock.Now().UnixMilli()
	receipt := newReceipt()
	// Once started, the claim runs to completion even if ctx ends
	// meanwhile: rows the UPDATE claimed but never returned would stay
	// hidden for the whole visibility timeout.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	type claimed struct {
		id       pgtype.Int8
		body     pgtype.Text
		receives pgtype.Int4
		least    pgtype.Int8 // the row of an empty claim: the queue's least visible_at
	}
	rows, err := q.db.pool.Query(cctx, sqlQueueClaim, now+p.Visibility.Milliseconds(), receipt, q.db.opts.Node, q.name, now, p.Max)
	got, err := scanAll(rows, err, func(r pgx.Row) (claimed, error) {
		var c claimed
		err := r.Scan(&c.id, &c.body, &c.receives, &c.least)
		return c, err
	})
	if err != nil {
		return nil, longpoll.Next{}, q.db.wrap("queue "+q.name+" receive", err)
	}
	if len(got) == 1 && !got[0].id.Valid {
		// Nothing claimed. The least visible_at is read in the claim's
		// snapshot: when it is due already, the rows are another
		// receiver's this instant, and the wait asks again (Next unknown)
		// rather than poll at once on a stale answer.
		switch least := got[0].least; {
		case !least.Valid:
			return nil, longpoll.Next{Known: true}, nil
		case least.Int64 > now:
			return nil, longpoll.Next{Known: true, At: least.Int64, Pending: true}, nil
		}
		return nil, longpoll.Next{}, nil
	}
	out := make([]driver.Delivery[T], 0, len(got))
	for _, c := range got {
		if !c.id.Valid {
			continue // the empty claim's row never comes with claimed ones
		}
		d := driver.Delivery[T]{Receives: int(c.receives.Int32), Token: strconv.FormatInt(c.id.Int64, 10) + "." + receipt}
		if err := json.Unmarshal([]byte(c.body.String), &d.Msg); err != nil {
			q.setAside(ctx, c.id.Int64, receipt, err)
			continue
		}
		out = append(out, d)
	}
	return out, longpoll.Next{}, nil
}

// newReceipt draws a claim's random receipt.
func newReceipt() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b[:])
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
	_, err := q.db.pool.Exec(context.WithoutCancel(ctx), `UPDATE queue_messages SET visible_at = $1 WHERE id = $2 AND receipt = $3`,
		until, id, receipt)
	q.db.opts.Logger.ErrorContext(ctx, "queue message this version cannot read set aside; it is tried again later",
		"queue", q.name, "message", id, "retryIn", SetAside.String(), "err", derr, "setAsideErr", q.db.secret.clean(err))
}

func parseToken(token string) (int64, string, error) {
	ids, receipt, ok := strings.Cut(token, ".")
	id, err := strconv.ParseInt(ids, 10, 64)
	if !ok || err != nil || receipt == "" {
		return 0, "", &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "token", Message: fmt.Sprintf("%q is not a delivery token", token)}}}
	}
	return id, receipt, nil
}

// Ack deletes delivered messages in one statement; tokens whose message
// is gone or was redelivered since are ignored.
func (q *queue[T]) Ack(ctx context.Context, tokens []string) error {
	if len(tokens) == 0 {
		return nil
	}
	ids, receipts := make([]int64, len(tokens)), make([]string, len(tokens))
	for i, tok := range tokens {
		id, receipt, err := parseToken(tok)
		if err != nil {
			return fmt.Errorf("pgstore queue %s ack: %w", q.name, err)
		}
		ids[i], receipts[i] = id, receipt
	}
	err := retry(func() error {
		_, err := q.db.pool.Exec(ctx, `DELETE FROM queue_messages
			WHERE (id, receipt) IN (SELECT * FROM unnest($1::bigint[], $2::text[]))`, ids, receipts)
		return err
	})
	if err != nil {
		return q.db.wrap("queue "+q.name+" ack", err)
	}
	return nil
}

// Retry makes a delivered message visible again after delay;
// xjob.ErrNotFound if it was acked or redelivered since.
func (q *queue[T]) Retry(ctx context.Context, token string, delay time.Duration) error {
	id, receipt, err := parseToken(token)
	if err != nil {
		return fmt.Errorf("pgstore queue %s retry: %w", q.name, err)
	}
	at := q.db.opts.Clock.Now().Add(max(delay, 0)).UnixMilli()
	var n int
	err = q.db.pool.QueryRow(ctx, `WITH retried AS (
			UPDATE queue_messages SET visible_at = $1 WHERE id = $2 AND receipt = $3 RETURNING 1)
		SELECT count(*) FROM (SELECT pg_notify('`+notifyChannel+`', $4) FROM retried) AS n`, at, id, receipt, q.name).Scan(&n)
	if err == nil && n == 0 {
		err = xjob.ErrNotFound
	}
	if err != nil {
		return q.db.wrap("queue "+q.name+" retry", err)
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
// once instead of after the claim TTL. It is sqlitestore.DB.ReleaseClaims
// for a shared database, and so only for a caller that knows every
// consumer is gone: the only node of a cluster, starting (NodesLive shows
// no other). With other nodes live, what they hold would be delivered
// twice (deduplication downstream makes that harmless, not free); release
// a dead node's messages with ReleaseNodeClaims instead. It returns how
// many messages it released (logs not counted).
func (db *DB) ReleaseClaims(ctx context.Context) (int, error) {
	now := db.opts.Clock.Now().UnixMilli()
	var n int64
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE queue_messages SET visible_at = $1, receipt = ''
			WHERE receipt <> '' AND visible_at > $1`, now)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		// A claim is created with the log (trigger_time = its creation)
		// and lasts the claim TTL (30 s by default): bounding the scan by
		// trigger time keeps it on the logs_time index.
		_, err = tx.Exec(ctx, `UPDATE logs SET claim_until = $1, version = version + 1
			WHERE trigger_time >= $2 AND trigger_code = 0 AND claim_until > $1`, now, now-releaseClaimsWithin.Milliseconds())
		return err
	})
	if err != nil {
		return 0, db.wrap("queue release claims", err)
	}
	if n > 0 {
		db.notifyAll(ctx)
	}
	return int(n), nil
}

// notifyAll wakes the waiters of the ring and both lanes on every node.
func (db *DB) notifyAll(ctx context.Context) {
	// Best effort: a lost notification costs a poll interval.
	_, _ = db.pool.Exec(ctx, `SELECT pg_notify('`+notifyChannel+`', q) FROM unnest($1::text[]) AS q`,
		[]string{db.ring.name, db.fast.name, db.slow.name})
}

// ReleaseNodeClaims makes the messages node received and has not acked
// visible again at once, invalidating its tokens, and expires the claims
// it holds on logs created but never triggered, except those it marked
// as calling (LogsCalling: it may be calling them): for the node that sees
// another leave the cluster (its beat expired, or NodeLeave), so that
// what the dead node held comes back now instead of after the visibility
// timeouts and the log claim TTL. (A ring bucket's logs are claimed a
// second or so before their instant; a node killed in between left them
// claimed, and the bucket, redelivered, could not take them over for the
// claim TTL.) It returns how many messages it released (logs not
// counted).
func (db *DB) ReleaseNodeClaims(ctx context.Context, node string) (int, error) {
	if node == "" {
		return 0, errors.New("pgstore release node claims: empty node id (every unnamed node's claims are not one node's)")
	}
	now := db.opts.Clock.Now().UnixMilli()
	var n int64
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		// Logs first: a bucket redelivered by the message release must
		// find them expired.
		if _, err := tx.Exec(ctx, `UPDATE logs SET claim_until = $1, version = version + 1
			WHERE trigger_time >= $2 AND trigger_code = 0 AND claim_until > $1 AND claimed_by = $3`,
			now, now-releaseClaimsWithin.Milliseconds(), node); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE queue_messages SET visible_at = $1, receipt = ''
			WHERE claimed_by = $2 AND receipt <> '' AND visible_at > $1`, now, node)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, db.wrap("queue release claims of node "+node, err)
	}
	if n > 0 {
		db.notifyAll(ctx)
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
	rows, err := db.pool.Query(ctx, `SELECT queue, count(*) FROM queue_messages GROUP BY queue`)
	type depth struct {
		queue string
		n     int64
	}
	all, err := scanAll(rows, err, func(s pgx.Row) (depth, error) {
		var d depth
		return d, s.Scan(&d.queue, &d.n)
	})
	if err != nil {
		return nil, db.wrap("queue depths", err)
	}
	out := map[string]int64{"ring": 0, string(fire.LaneFast): 0, string(fire.LaneSlow): 0}
	for _, d := range all {
		out[strings.TrimPrefix(d.queue, "dispatch-")] = d.n
	}
	return out, nil
}
