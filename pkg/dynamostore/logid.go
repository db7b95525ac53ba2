package dynamostore

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// Log ids are derived from the occurrence, so that creating a log needs no
// counter and no separate dedupe marker (see doc.go, "Log ids").
const (
	// logIDEpoch (2020-01-01 UTC, Unix seconds) is subtracted from the
	// scheduled second, which then fits logIDSecondBits until 2088.
	logIDEpoch      = 1_577_836_800
	logIDSecondBits = 31
	// logIDSlotBits is the hash part: 4 Mi slots per scheduled second, so
	// a second's thousands of fires rarely collide (a collision costs one
	// more conditional write and one read).
	logIDSlotBits = 22
	logIDSlotMask = 1<<logIDSlotBits - 1
	// logIDProbes bounds the ids one occurrence tries. With 10,000 fires
	// in one second the chance that 16 consecutive slots are all taken is
	// far below 1e-30.
	logIDProbes = 16
)

// logIDHash is the occurrence hash behind log ids (DB.idHash; a test
// replaces it per store to force collisions).
func logIDHash(occurrenceID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(occurrenceID))
	return h.Sum64()
}

// logID returns the probe-th candidate id of an occurrence: the fire
// second since logIDEpoch in the high 31 bits and the occurrence hash
// (plus probe, wrapping within the second) in the low 22 bits. Ids stay
// below 2^53, so JavaScript and JSON readers keep them exact. The id
// depends on the occurrence id alone (the one thing every delivery of an
// occurrence shares): the fire time is read from its "/t<ms>/" part
// (xjob.Occurrence.ID); an occurrence without one (manual, API, retry,
// parent) takes its high bits from the hash too. Occurrences that share a
// slot are told apart by the occurrence id stored in the log.
func logID(hash func(string) uint64, occurrenceID string, probe int) int64 {
	h := hash(occurrenceID)
	hi := int64(h>>logIDSlotBits) & (1<<logIDSecondBits - 1)
	if ms, ok := occurrenceFireTime(occurrenceID); ok {
		if sec := ms/1000 - logIDEpoch; sec > 0 && sec < 1<<logIDSecondBits {
			hi = sec
		}
	}
	id := hi<<logIDSlotBits | (int64(h)+int64(probe))&logIDSlotMask
	if id == 0 {
		id = 1 // 0 means "no id" throughout xjob
	}
	return id
}

// occurrenceFireTime extracts the fire time (Unix ms) of a scheduled
// occurrence id "j<job>/t<ms>/s<shard>".
func occurrenceFireTime(occurrenceID string) (int64, bool) {
	parts := strings.Split(occurrenceID, "/")
	if len(parts) != 3 || !strings.HasPrefix(parts[1], "t") {
		return 0, false
	}
	ms, err := strconv.ParseInt(parts[1][1:], 10, 64)
	return ms, err == nil
}
