package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Waking receivers on other nodes.
//
// A long-polling Receive sleeps until the earliest visible_at of its
// queue, or until a Send through the same DB wakes it. A send from another
// node would otherwise wait for the next poll (PollInterval), so every
// write that makes a message visible sooner — Send, Retry, a release —
// also runs pg_notify(notifyChannel, queue name) in its statement, and
// each DB keeps one connection of its own LISTENing, which wakes its
// waiters on that queue: they read the queue again at once.
//
// The notification is only a hint: it is delivered when the statement's
// transaction commits, lost while the listening connection is down, and
// a waiter woken for nothing just reads an empty queue and sleeps again.
// Polling stays the guarantee; after reconnecting, the listener wakes
// every waiter, for the notifications it may have missed.

// notifyChannel is the LISTEN channel of queue sends. Channels are per
// database: installations in two schemas of one database wake each other
// for nothing, which costs a read.
const notifyChannel = "xjob_queues"

// relistenAfter is how long the listener waits before reconnecting after
// its connection failed (wall time: it is about the network, not about
// scheduling).
const relistenAfter = time.Second

// listen holds a LISTEN connection until ctx ends, reconnecting when it
// fails, and wakes this DB's waiters on every notification.
func (db *DB) listen(ctx context.Context, cfg *pgx.ConnConfig) {
	defer close(db.listenDone)
	for ctx.Err() == nil {
		err := db.listenOnce(ctx, cfg)
		if ctx.Err() != nil {
			return
		}
		db.opts.Logger.Debug("queue listener reconnecting", "err", db.secret.clean(err))
		t := time.NewTimer(relistenAfter)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (db *DB) listenOnce(ctx context.Context, cfg *pgx.ConnConfig) error {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN `+notifyChannel); err != nil {
		return err
	}
	db.wakeAll() // whatever was sent while no one listened
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		db.signals.Wake(n.Payload)
	}
}
