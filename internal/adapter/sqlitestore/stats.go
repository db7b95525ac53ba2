package sqlitestore

import (
	"context"
	"encoding/binary"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
)

// Writer statistics.
//
// What a trigger costs the writer is mostly what its commits cost: the
// pages a commit appends to the WAL (two pwrite calls each), and the
// pages the checkpointer copies back into the file. These counters say
// how many commits a second run, how many requests and pages each
// carries, and how much the checkpointer copies, so that a change to the
// group commit, the checkpoint cadence or an index is measured by what it
// writes, not guessed from a CPU profile. They cost a few atomic adds and
// one sqlite3_db_status call a commit.

// WriterStats counts the writer's and the checkpointer's work since Open.
type WriterStats struct {
	// Commits is the number of write transactions run; Requests the
	// write requests they carried.
	Commits, Requests int64
	// Pages is the number of pages the writer's commits wrote to the WAL
	// (SQLITE_DBSTATUS_CACHE_WRITE): one WAL frame each.
	Pages int64
	// CacheMisses is the number of pages the writer read from the file or
	// the WAL because its page cache did not hold them.
	CacheMisses int64
	// Waited is the sum, over requests, of the time from a request's hand
	// over to the writer to its answer; MaxWait is the longest.
	Waited, MaxWait time.Duration
	// Checkpoints is the number of checkpoints the checkpointer ran;
	// Backfilled the WAL frames they copied into the database file.
	Checkpoints, Backfilled int64
	// JobIndexed is the number of logs the writer entered into the per-job
	// log index in batches (logjobindex.go).
	JobIndexed int64
}

// writerStats holds WriterStats' counters, updated by the writer and the
// checkpointer goroutines.
type writerStats struct {
	commits, requests    atomic.Int64
	pages, misses        atomic.Int64
	waited, maxWait      atomic.Int64 // nanoseconds
	checkpoints, backfil atomic.Int64
	jobIndexed           atomic.Int64
}

// WriterStats returns the counters so far.
func (db *DB) WriterStats() WriterStats {
	s := &db.stats
	return WriterStats{
		Commits: s.commits.Load(), Requests: s.requests.Load(),
		Pages: s.pages.Load(), CacheMisses: s.misses.Load(),
		Waited: time.Duration(s.waited.Load()), MaxWait: time.Duration(s.maxWait.Load()),
		Checkpoints: s.checkpoints.Load(), Backfilled: s.backfil.Load(),
		JobIndexed: s.jobIndexed.Load(),
	}
}

// Sub returns the counters' growth from prev to s (MaxWait: s's).
func (s WriterStats) Sub(prev WriterStats) WriterStats {
	return WriterStats{
		Commits: s.Commits - prev.Commits, Requests: s.Requests - prev.Requests,
		Pages: s.Pages - prev.Pages, CacheMisses: s.CacheMisses - prev.CacheMisses,
		Waited: s.Waited - prev.Waited, MaxWait: s.MaxWait,
		Checkpoints: s.Checkpoints - prev.Checkpoints, Backfilled: s.Backfilled - prev.Backfilled,
		JobIndexed: s.JobIndexed - prev.JobIndexed,
	}
}

// answered records that a request handed over at since was answered now.
func (s *writerStats) answered(since time.Time) {
	d := int64(time.Since(since))
	s.waited.Add(d)
	for {
		m := s.maxWait.Load()
		if d <= m || s.maxWait.CompareAndSwap(m, d) {
			return
		}
	}
}

// countPages adds the pages the writer connection wrote and missed since
// the last call (the connection's counters are reset on each read).
func (db *DB) countPages() {
	_ = db.wc.Raw(func(dc any) error {
		st, ok := dc.(sqlite.DBStatus)
		if !ok {
			return nil
		}
		if n, _, err := st.Status(sqlite.DBStatusCacheWrite, true); err == nil {
			db.stats.pages.Add(int64(n))
		}
		if n, _, err := st.Status(sqlite.DBStatusCacheMiss, true); err == nil {
			db.stats.misses.Add(int64(n))
		}
		return nil
	})
}

// logStats logs the counters' growth since prev at debug level, once a
// checkpointer tick, while the logger enables it and writes happen; it
// returns the counters now.
func (db *DB) logStats(prev WriterStats, every time.Duration) WriterStats {
	now := db.WriterStats()
	if !db.opts.Logger.Enabled(context.Background(), slog.LevelDebug) {
		return now
	}
	d := now.Sub(prev)
	if d.Commits == 0 {
		return now
	}
	db.opts.Logger.Debug("sqlite writer",
		"window", every,
		"commits", d.Commits,
		"requests_per_commit", ratio(d.Requests, d.Commits),
		"pages_per_commit", ratio(d.Pages, d.Commits),
		"cache_misses", d.CacheMisses,
		"mean_wait", time.Duration(ratio(int64(d.Waited), d.Requests)).String(),
		"checkpoints", d.Checkpoints,
		"backfilled", d.Backfilled,
		"job_indexed", d.JobIndexed)
	return now
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// walSalt reads the first salt of the WAL file's header at path, which
// SQLite changes each time the WAL starts over (0 if there is none).
func walSalt(path string) uint32 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var h [20]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return 0
	}
	return binary.BigEndian.Uint32(h[16:20])
}

// countBackfilled adds the frames a checkpoint copied: copied of the
// frames the WAL with the given salt holds. A WAL that started over since
// the last checkpoint has copied new frames only.
func (db *DB) countBackfilled(salt uint32, copied int) {
	db.ckMu.Lock()
	defer db.ckMu.Unlock()
	n := copied
	if salt == db.ckSalt && copied >= db.ckCopied {
		n = copied - db.ckCopied
	}
	db.ckSalt, db.ckCopied = salt, copied
	db.stats.checkpoints.Add(1)
	db.stats.backfil.Add(int64(n))
}
