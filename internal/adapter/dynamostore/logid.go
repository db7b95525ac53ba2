package dynamostore

import (
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/xjobdev/xjob/internal/fire"
)

// Log ids name the page a log lives in (see doc.go, "Log pages"):
//
//	id = second << 22 | k << 4 | part
//
// second (31 bits) is the occurrence's fire second since logIDEpoch, part
// (4 bits) is the job's shard among 16 (fire.ShardOf(job, 16)) masked to
// Options.LogPages (ShardOf(job, 16) & (LogPages-1): all of it at the
// default 16, always 0 at 1), and k (18 bits) tells the logs of one page
// apart. The page is (second, part): with the scan shard count dividing
// LogPages, and LogPages dividing 16 (ShardOf(job, n) is the same hash
// mod n, and masking to a power of two is mod it), one ring bucket — one
// scan shard's fires of one second — fills its own pages, and no two
// buckets write one page. The id keeps its 4 part bits whatever
// LogPages is, and a log's page is read from its id (pageOfLog), so a
// log is found by id whatever setting wrote it.
// Occurrences without a fire time (manual, API, retry, parent) take second
// and k from a hash of the occurrence id, with the second's top bit set:
// their page is one no schedule uses before 2054 (fire seconds stay below
// 2^30 until then), usually theirs alone. A hashed log never shares a page
// with fires of a real second, whose page span it would widen by years.
const (
	// logIDEpoch (2020-01-01 UTC, Unix seconds) is subtracted from the
	// fire second, which then fits logIDSecondBits until 2088.
	logIDEpoch      = 1_577_836_800
	logIDSecondBits = 31
	logIDSlotBits   = 22 // k and part
	logPartBits     = 4
	logParts        = 1 << logPartBits
	logKBits        = logIDSlotBits - logPartBits
	logKMask        = 1<<logKBits - 1
	// logHashedSecond marks the seconds of hash-placed pages.
	logHashedSecond = 1 << (logIDSecondBits - 1)
)

// logIDHash is the occurrence hash behind hash-placed log ids (DB.idHash;
// a test replaces it per store to force collisions).
func logIDHash(occurrenceID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(occurrenceID))
	return h.Sum64()
}

// logPlace returns the page an occurrence's log lives in and the k it
// prefers there. Both depend only on the occurrence id and the job, which
// every delivery of an occurrence shares, so every delivery finds the same
// page, and in it the log by occurrence id. A scheduled fire prefers a k
// derived from its job and broadcast shard (distinct for distinct jobs of
// one page below 2^22 jobs), so the logs of one page rarely need the next
// free k. pages is Options.LogPages.
func logPlace(hash func(string) uint64, pages int, occurrenceID string, jobID int64) (page, k int64) {
	part := logPartOf(jobID, pages)
	h := hash(occurrenceID)
	sec := int64(h>>logKBits)&(logHashedSecond-1) | logHashedSecond
	k = int64(h) & logKMask
	if ms, shard, ok := parseScheduled(occurrenceID); ok {
		if s := ms/1000 - logIDEpoch; s > 0 && s < logHashedSecond {
			sec = s
			k = (jobID + shard*40_503) & logKMask
		}
	}
	return sec<<logPartBits | part, k
}

// logPartOf is the page part, and the time index partition, of a job's
// logs when a second has pages pages: the job's shard among 16 masked to
// pages (a power of two up to 16).
func logPartOf(jobID int64, pages int) int64 {
	return int64(fire.ShardOf(jobID, logParts)) & int64(pages-1)
}

// logIDOf is the id of the log with k in page.
func logIDOf(page, k int64) int64 {
	return (page>>logPartBits)<<logIDSlotBits | (k&logKMask)<<logPartBits | page&(logParts-1)
}

// pageOfLog is the page a log id names.
func pageOfLog(id int64) int64 {
	return (id>>logIDSlotBits)<<logPartBits | id&(logParts-1)
}

// parseScheduled extracts the fire time (Unix ms) and broadcast shard of
// a scheduled occurrence id "j<job>/t<ms>/s<shard>".
func parseScheduled(occurrenceID string) (ms, shard int64, ok bool) {
	parts := strings.Split(occurrenceID, "/")
	if len(parts) != 3 || !strings.HasPrefix(parts[1], "t") || !strings.HasPrefix(parts[2], "s") {
		return 0, 0, false
	}
	ms, err := strconv.ParseInt(parts[1][1:], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	shard, err = strconv.ParseInt(parts[2][1:], 10, 64)
	if err != nil || shard < 0 {
		return 0, 0, false
	}
	return ms, shard, true
}
