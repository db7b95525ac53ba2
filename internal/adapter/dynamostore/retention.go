package dynamostore

import (
	"math"
	"slices"
	"time"

	"github.com/xjobdev/xjob"
)

// retention is the logs' expiry as of one instant (see doc.go,
// "Retention"). A log is past its retention once now reaches its own
// expiry — its trigger time + LogTTL, in the whole seconds AttrPurgeAt
// stores — or its page's stored AttrPurgeAt, whichever comes first.
// DynamoDB's TTL deletes a page at the latter, perhaps days late; readers
// filter, so that what they return does not depend on when it does.
type retention struct {
	now int64 // Unix ms; 0: logs never expire (TTLs off)
	ttl time.Duration
}

// retention is the expiry as of now.
func (db *DB) retention() retention {
	if db.opts.LogTTL <= 0 {
		return retention{}
	}
	return retention{now: db.opts.Clock.Now().UnixMilli(), ttl: db.opts.LogTTL}
}

// LogExpiry is the logs' retention, LogTTL (0 when TTLs are off): the
// store retires its logs itself (driver.LogExpirer).
func (db *DB) LogExpiry() time.Duration { return max(db.opts.LogTTL, 0) }

// live says whether a log triggered at trigger (Unix ms) is within its
// retention.
func (r retention) live(trigger int64) bool {
	if r.now == 0 {
		return true
	}
	at, _ := purgeAt(trigger, r.ttl)
	return r.now < at*1000
}

// pageLive says whether a page whose stored AttrPurgeAt is at (Unix
// seconds; 0: none) is within it.
func (r retention) pageLive(at int64) bool {
	return r.now == 0 || at == 0 || r.now < at*1000
}

// floor is a trigger time before which no log is live: walks of the time
// index and of the failed and parked lists start there, so expired items
// that TTL has not deleted yet cost no reads.
func (r retention) floor() int64 {
	if r.now == 0 {
		return math.MinInt64
	}
	return r.now - r.ttl.Milliseconds() - 1000
}

// floorKey is floor as the lower bound of a walk keyed by SortKey(trigger
// time, …), no lower than lo.
func (r retention) floorKey(lo string) string {
	return max(lo, SortKey(r.floor(), math.MinInt64))
}

// prune drops the logs of p past their retention; purge is the page's
// stored AttrPurgeAt (0: none). The page keeps its version, so a change
// writes it back over the expired logs (they go with that write, at no
// extra cost) and a page left empty is deleted as any other.
func (r retention) prune(p *logPage, purge int64) {
	if r.now == 0 {
		return
	}
	if !r.pageLive(purge) {
		p.logs = nil
		return
	}
	p.logs = slices.DeleteFunc(p.logs, func(l xjob.Log) bool { return !r.live(l.TriggerTime) })
}
