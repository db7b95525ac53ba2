package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

// Group commit.
//
// SQLite allows one writer per file, and in WAL mode most of a small write's
// cost is the transaction around it (WAL frames, locks, the wal-index), not
// the statement. So all writes of a DB go through one goroutine that owns
// the writer connection: it takes the write requests queued while the
// previous transaction ran and runs them all in one BEGIN IMMEDIATE …
// COMMIT, each inside its own SAVEPOINT, so a failing request is rolled
// back alone and never fails the others. A request is a closure; every
// conditional write inside it stays one statement (or several within the
// savepoint) under the file's write lock, so its outcome is the same as if
// it had run in a transaction of its own — for other processes too, which
// only ever see whole committed transactions.
//
// A caller waits for the COMMIT before its write returns, so no write is
// reported before it is durable (as durable as synchronous=NORMAL makes it).

// maxBatch caps the requests one transaction carries, so one commit's WAL
// append stays small and a queue of writers cannot starve readers of
// checkpoints.
const maxBatch = 128

// errClosed is returned for writes submitted after Close.
var errClosed = errors.New("sqlite: store closed")

// Request states: a caller whose context ends takes a pending request back
// (abandoned); once the writer has started it, the caller waits for it.
const (
	reqPending int32 = iota
	reqRunning
	reqAbandoned
)

// writeReq is one closure waiting for the writer goroutine.
type writeReq struct {
	ctx   context.Context // without cancellation: see run
	fn    func(ctx context.Context, c *sql.Conn) error
	at    time.Time // handed over to the writer
	state atomic.Int32
	done  chan error // buffered: the writer never blocks on a caller
}

// write runs fn on the writer connection inside a write transaction it may
// share with other requests, and returns fn's error or the transaction's.
// fn must not keep rows open past its return. It runs at most once.
func (db *DB) write(ctx context.Context, fn func(ctx context.Context, c *sql.Conn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: context.WithoutCancel(ctx), fn: fn, done: make(chan error, 1)}
	r.at = time.Now()
	select {
	case db.reqs <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-db.closing:
		return errClosed
	}
	select {
	case err := <-r.done:
		db.stats.answered(r.at)
		return err
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqPending, reqAbandoned) {
			return ctx.Err()
		}
		err := <-r.done // already running: its outcome is the caller's
		db.stats.answered(r.at)
		return err
	}
}

// runWriter is the writer goroutine: it collects the requests waiting at
// the moment and runs them as one transaction, until Close.
func (db *DB) runWriter() {
	defer close(db.writerDone)
	batch := make([]*writeReq, 0, maxBatch)
	for {
		batch = batch[:0]
		select {
		case r := <-db.reqs:
			batch = append(batch, r)
		case <-db.closing:
			return
		}
		// Let writers that were just answered and are about to send again
		// get in: without this the batch is whoever happened to be
		// waiting, and concurrent callers fall into lockstep one by one.
		runtime.Gosched()
	collect:
		for len(batch) < maxBatch {
			select {
			case r := <-db.reqs:
				batch = append(batch, r)
			default:
				break collect
			}
		}
		for len(batch) > 0 {
			batch = db.runBatch(batch)
		}
	}
}

// runBatch runs batch in one transaction and answers every request it ran.
// If the transaction itself fails after some requests ran, those are
// answered with the failure and the ones not yet run are returned to be
// run in a fresh transaction.
func (db *DB) runBatch(batch []*writeReq) []*writeReq {
	ctx := context.Background()
	live := batch[:0:0]
	for _, r := range batch {
		if r.state.CompareAndSwap(reqPending, reqRunning) {
			live = append(live, r)
		} else {
			r.done <- context.Canceled // abandoned; nobody reads this
		}
	}
	if len(live) == 0 {
		return nil
	}
	db.stats.commits.Add(1)
	db.stats.requests.Add(int64(len(live)))
	if _, err := db.ws.begin.ExecContext(ctx); err != nil {
		answerAll(live, fmt.Errorf("begin: %w", err))
		return nil
	}
	if len(live) == 1 {
		// No savepoint needed: the transaction is the request's own.
		r := live[0]
		if err := r.fn(r.ctx, db.wc); err != nil {
			_, _ = db.ws.rollback.ExecContext(ctx)
			r.done <- err
			return nil
		}
		r.done <- db.commit(ctx)
		return nil
	}
	errs := make([]error, len(live))
	for i, r := range live {
		if _, err := db.ws.savepoint.ExecContext(ctx); err != nil {
			return db.abortBatch(live[:i], live[i:], fmt.Errorf("savepoint: %w", err))
		}
		errs[i] = r.fn(r.ctx, db.wc)
		if errs[i] != nil {
			// Fails only if SQLite rolled the whole transaction back
			// (e.g. an I/O error): the requests before lost their writes.
			if _, err := db.ws.rollbackTo.ExecContext(ctx); err != nil {
				live[i].done <- errs[i]
				return db.abortBatch(live[:i], live[i+1:], fmt.Errorf("rollback to savepoint: %w", err))
			}
		}
		if _, err := db.ws.release.ExecContext(ctx); err != nil {
			return db.abortBatch(live[:i+1], live[i+1:], fmt.Errorf("release savepoint: %w", err))
		}
	}
	cerr := db.commit(ctx)
	for i, r := range live {
		if cerr != nil {
			r.done <- cerr
		} else {
			r.done <- errs[i]
		}
	}
	return nil
}

// abortBatch rolls the transaction back, fails the requests that ran in it
// and hands back the ones that did not run yet, marked pending again.
func (db *DB) abortBatch(ran, rest []*writeReq, err error) []*writeReq {
	_, _ = db.ws.rollback.ExecContext(context.Background())
	answerAll(ran, fmt.Errorf("sqlite write transaction: %w", err))
	for _, r := range rest {
		r.state.Store(reqPending) // only the writer moves a running request
	}
	return rest
}

func answerAll(rs []*writeReq, err error) {
	for _, r := range rs {
		r.done <- err
	}
}

// commit commits the open transaction; if COMMIT fails (SQLITE_BUSY
// leaves the transaction open) it rolls back, so the next BEGIN starts
// clean and no request is reported both failed and applied.
func (db *DB) commit(ctx context.Context) error {
	defer db.countPages()
	if _, err := db.ws.commit.ExecContext(ctx); err != nil {
		_, _ = db.ws.rollback.ExecContext(ctx)
		return fmt.Errorf("sqlite commit: %w", err)
	}
	return nil
}
