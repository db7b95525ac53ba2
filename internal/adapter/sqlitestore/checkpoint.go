package sqlitestore

import (
	"context"
	"fmt"
	"time"
)

// Checkpoints.
//
// In WAL mode a commit appends the pages it changed to the WAL, and a
// checkpoint copies them back into the database file and syncs it.
// SQLite's default runs that checkpoint inside the commit that takes the
// WAL past 1,000 pages: on the writer goroutine, so every queued write
// waited behind the copy and the fsync, and a page that later commits
// change again (an index leaf of the current second) was copied again
// every 1,000 pages (8% of xjob local's CPU at 10,000 triggers a second).
//
// Here a checkpointer goroutine, on a connection of its own, runs a
// PASSIVE checkpoint once every checkpointEvery while commits happen. It
// runs beside the writer (a passive checkpoint makes neither writers nor
// readers wait, nor waits for them), and a page changed many times within
// the interval is copied once. The connections keep SQLite's automatic
// checkpoint, at autoCheckpointPages, only as a bound on the WAL should
// the checkpointer fall behind:
//
//	writer ── commit ──▶ WAL ──(every checkpointEvery, if commits) checkpointer: wal_checkpoint(PASSIVE) ──▶ file
//	                      └──(WAL > autoCheckpointPages) the committing connection checkpoints, as before
const (
	checkpointEvery     = time.Second
	autoCheckpointPages = 32768 // 128 MiB of 4 KiB pages
)

// runCheckpointer checkpoints the WAL every checkpointEvery in which a
// write transaction committed, until Close.
func (db *DB) runCheckpointer() {
	defer close(db.checkpointerDone)
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	last := db.stats.commits.Load()
	logged := db.WriterStats()
	for {
		select {
		case <-db.closing:
			return
		case <-tick.C:
		}
		logged = db.logStats(logged, checkpointEvery)
		if n := db.stats.commits.Load(); n != last {
			last = n
			// A failed checkpoint is left to the next one, and to the
			// automatic checkpoint that bounds the WAL.
			_, _, _ = db.checkpoint(context.Background())
		}
	}
}

// checkpoint runs one passive checkpoint and returns how many WAL frames
// it has copied into the database file, of those the WAL holds.
func (db *DB) checkpoint(ctx context.Context) (copied, frames int, err error) {
	var busy int
	salt := walSalt(db.walPath)
	if err = db.ck.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied); err != nil {
		return 0, 0, fmt.Errorf("sqlite checkpoint: %w", err)
	}
	if copied >= 0 { // -1: the checkpoint could not run (SQLITE_BUSY)
		db.countBackfilled(salt, copied)
	}
	return copied, frames, nil
}
