// Package fire is the pipeline's vocabulary for one fire of a job as it
// travels from the scan to an executor: its deterministic occurrence id,
// the ring bucket that holds it until its second, the dispatch task that
// asks for it to be triggered, the lane it goes through, and the rules the
// services share about it (which shard owns a job, when a planned fire is
// superseded, when a job moves to the slow lane).
//
// These are wire formats between xjob's own services, versioned because a
// message may wait in a queue across an upgrade; they are not API, so they
// live under internal/ and may change with any release.
package fire

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"unicode/utf8"

	"github.com/xjobdev/xjob"
)

// Occurrence names one fire of one job. Its ID is deterministic: the same
// fire reached twice (SQS redelivery, two scanners, a retried Lambda) has
// the same ID, and the trigger log is created conditionally on it, so the
// executor sees it once.
type Occurrence struct {
	JobID int64            `json:"jobId"`
	Type  xjob.TriggerType `json:"triggerType"`
	// FireTime is the scheduled fire time for CRON and MISFIRE occurrences.
	FireTime int64 `json:"fireTime,omitempty"`
	// Ref distinguishes occurrences that have no schedule time: the parent
	// log id for RETRY and PARENT, a request id for MANUAL and API.
	Ref string `json:"ref,omitempty"`
}

// ID returns the occurrence's deterministic id for broadcast shard index
// shard (0 when not broadcasting).
//
// A scheduled fire is named by its job and fire time alone, whether it was
// fired on time (CRON) or by the misfire strategy (MISFIRE): two scanners
// that classify the same fire differently still produce one id.
//
// It is appended in a buffer on the stack, so that the id is its one
// allocation (one a trigger; concatenated, it was three).
func (o Occurrence) ID(shard int) string {
	var buf [64]byte
	b := append(buf[:0], 'j')
	b = strconv.AppendInt(b, o.JobID, 10)
	if o.Scheduled() {
		b = append(b, "/t"...)
		b = strconv.AppendInt(b, o.FireTime, 10)
	} else {
		b = append(b, '/')
		b = append(b, o.Type...)
		b = append(b, "/r"...)
		b = append(b, o.Ref...)
	}
	b = append(b, "/s"...)
	b = strconv.AppendInt(b, int64(shard), 10)
	return string(b)
}

// Scheduled reports whether the occurrence comes from the job's schedule
// (CRON or MISFIRE) rather than from a person, a retry or a parent job.
func (o Occurrence) Scheduled() bool {
	return o.Type == xjob.TriggerCron || o.Type == xjob.TriggerMisfire
}

// Reasons Superseded gives for an occurrence that no longer fires.
const (
	ReasonJobDeleted = "job deleted"
	ReasonJobRevised = "job stopped or edited since the fire was planned"
)

// Superseded says why occurrence o, planned under the job's schedule
// revision planned, must not fire any more, or "" when it still applies.
// job is the job as stored now, nil once it has been deleted.
//
//   - A deleted job fires nothing.
//   - A fire of the schedule (CRON, MISFIRE) planned under a recorded
//     revision is dropped once the job's revision has moved on. Every stop
//     or edit by a person bumps the revision; the scan's advance does not,
//     nor does the scan stopping a job whose schedule has no next time, so
//     the last fires it pushed for an ending schedule still run.
//   - planned 0 records no revision (a task built outside the scan, such
//     as a direct invocation of the dispatch function): nothing to compare,
//     so it fires. The scan always records one; revisions start at 1.
//   - A trigger by a person, a retry or a parent job (MANUAL, API, RETRY,
//     PARENT) is not planned from the schedule and fires even on a stopped
//     job, as in xxl-job.
//
// The rule lives in the domain package, next to Revision, because two
// services apply it and neither may import the other: the ring before it
// hands a bucket's fires to a lane, and dispatch when it loads the job (for
// the fires the scan sends straight to a lane, and for a hand-off that
// waited in a lane queue after the ring checked it). One function keeps
// the two checks from drifting apart.
func Superseded(job *xjob.Job, o Occurrence, planned int64) string {
	switch {
	case job == nil:
		return ReasonJobDeleted
	case o.Scheduled() && planned != 0 && job.Revision != planned:
		return ReasonJobRevised
	}
	return ""
}

// RingItem is one occurrence waiting in a ring bucket, with the job's
// schedule revision when it was pushed.
type RingItem struct {
	JobID    int64 `json:"j"`
	FireTime int64 `json:"t"`
	Revision int64 `json:"r"`
	// Delivery names the message that carried the item (the AWS ring
	// function sets it to its bucket's ID); the ring gives it to the
	// item's task (DispatchTask.Delivery). Not part of the message.
	Delivery string `json:"-"`
}

// RingBucket is one message on the ring: every occurrence of one scan shard
// due within one second.
type RingBucket struct {
	Shard  int        `json:"shard"`
	Second int64      `json:"second"` // Unix seconds of the fire times
	Items  []RingItem `json:"items"`
	// ID names this message, whatever queue message carries it: the
	// queue's redeliveries and duplicates of it, and its return from the
	// dead-letter queue, have the same ID; another message with the same
	// fires (a scan's re-send, an admin push) has another. Provisional
	// claims are made in its name (package dispatch). Empty in a message
	// written before IDs, which its queue message's id then names.
	ID string `json:"id,omitempty"`
}

// NewBucketID is a fresh RingBucket.ID: 64 random bits.
func NewBucketID() string {
	return strconv.FormatUint(rand.Uint64(), 36)
}

// FireAt returns the bucket's start in Unix milliseconds.
func (b RingBucket) FireAt() int64 { return b.Second * 1000 }

// RingVersion is the format of the ring messages this code writes, and the
// newest it reads. A bucket waits in the ring queue up to its delay (15
// minutes on SQS), so during an upgrade the new code reads what the old
// code wrote, and during a rollback the reverse: every message says its
// format in "v". A message without "v" was written before messages carried
// one, and is version 1, the format of today's, so the buckets delayed in
// the queue across the upgrade that introduced versions still fire. A
// message of a newer version is refused with a *VersionError, never read
// as if it were this one: its consumer leaves it in the queue (for the
// newer code, or the dead-letter queue to be redriven once that runs).
const RingVersion = 1

// DispatchVersion is the format of the dispatch lane messages
// (DispatchTask) this code writes and the newest it reads, with the same
// rules as RingVersion: a task waits in its lane up to its retry delay, so
// both sides of an upgrade read it.
const DispatchVersion = 1

// VersionError is the error of decoding a queued message of a format this
// code does not know: Kind names the queue's messages ("ring",
// "dispatch", "results"), Newest the newest version this code reads.
type VersionError struct {
	Kind    string
	Version int
	Newest  int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s message version %d is newer than this code reads (%d)", e.Kind, e.Version, e.Newest)
}

// CheckVersion returns the version a queued message of kind says in "v"
// (0, no "v": version 1, written before messages carried one) when this
// code, which reads up to newest, can read it; a *VersionError when it is
// newer; an error when it is no version at all.
func CheckVersion(kind string, v, newest int) error {
	switch v = cmp.Or(v, 1); {
	case v > newest:
		return &VersionError{Kind: kind, Version: v, Newest: newest}
	case v < 1:
		return fmt.Errorf("%s message version %d is not a version", kind, v)
	}
	return nil
}

// ringWire is RingBucket as sent: the bucket and its format version.
type ringWire struct {
	Version int `json:"v,omitempty"`
	ringFields
}

// ringFields has RingBucket's fields without its methods, so encoding it
// does not recurse into MarshalJSON.
type ringFields RingBucket

// MarshalJSON writes the bucket with "v": RingVersion.
func (b RingBucket) MarshalJSON() ([]byte, error) {
	return json.Marshal(ringWire{Version: RingVersion, ringFields: ringFields(b)})
}

// UnmarshalJSON reads a bucket of any version up to RingVersion ("v"
// missing: version 1) and refuses a newer one with *VersionError.
func (b *RingBucket) UnmarshalJSON(data []byte) error {
	var w ringWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	if err := CheckVersion("ring", w.Version, RingVersion); err != nil {
		return err
	}
	*b = RingBucket(w.ringFields)
	return nil
}

// Lane is a dispatch lane: xxl-job's fast and slow trigger pools.
type Lane string

// Lanes.
const (
	LaneFast Lane = "fast"
	LaneSlow Lane = "slow"
)

// DispatchTask asks the dispatcher to trigger one occurrence.
type DispatchTask struct {
	Occurrence Occurrence `json:"occurrence"`
	// Revision is the job revision the occurrence was planned under; 0
	// skips the check (manual, retry and child triggers).
	Revision int64 `json:"revision,omitempty"`
	// Param overrides the job's param when set (manual trigger, retry).
	Param *string `json:"param,omitempty"`
	// AddressList overrides the group's addresses (manual trigger).
	AddressList []string `json:"addressList,omitempty"`
	// FailRetryCount overrides the job's retry count (retries count down).
	FailRetryCount *int `json:"failRetryCount,omitempty"`
	// ShardIndex/ShardTotal pin a broadcast shard (a retried shard re-runs
	// only itself); ShardTotal 0 means route normally.
	ShardIndex int `json:"shardIndex,omitempty"`
	ShardTotal int `json:"shardTotal,omitempty"`
	// EnqueuedAt is when the task was created (Unix ms), for fire delay.
	EnqueuedAt int64 `json:"enqueuedAt,omitempty"`
	// Delivery names the ring message the task came from (RingItem.Delivery),
	// while the fast lane carries it: the ring's own dispatch, and a task it
	// sends on to the fast lane queue. A dispatcher that claims
	// provisionally (dispatch.Config.ProvisionalClaims) claims in its name,
	// so that only that message's deliveries may take the claim over
	// (xjob.Log.Delivery). Empty for every other task.
	Delivery string `json:"delivery,omitempty"`
}

// dispatchWire is DispatchTask as sent: the task and its format version.
type dispatchWire struct {
	Version int `json:"v,omitempty"`
	dispatchFields
}

// dispatchFields has DispatchTask's fields without its methods.
type dispatchFields DispatchTask

// MarshalJSON writes the task with "v": DispatchVersion.
func (t DispatchTask) MarshalJSON() ([]byte, error) {
	return json.Marshal(dispatchWire{Version: DispatchVersion, dispatchFields: dispatchFields(t)})
}

// UnmarshalJSON reads a task of any version up to DispatchVersion ("v"
// missing: version 1) and refuses a newer one with *VersionError.
func (t *DispatchTask) UnmarshalJSON(data []byte) error {
	var w dispatchWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	if err := CheckVersion("dispatch", w.Version, DispatchVersion); err != nil {
		return err
	}
	*t = DispatchTask(w.dispatchFields)
	return nil
}

// Validate checks a task built outside the core (a direct Lambda invocation).
func (t *DispatchTask) Validate() error {
	var p []xjob.FieldProblem
	add := func(field, format string, args ...any) {
		p = append(p, xjob.FieldProblem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if t.Occurrence.JobID <= 0 {
		add("jobId", "is required")
	}
	switch {
	case !t.Occurrence.Type.Valid():
		add("triggerType", "unknown trigger type %q", t.Occurrence.Type)
	case t.Occurrence.Scheduled() && t.Occurrence.FireTime <= 0:
		add("fireTime", "is required for a scheduled trigger")
	case !t.Occurrence.Scheduled() && t.Occurrence.Ref == "":
		add("ref", "is required for a %s trigger", t.Occurrence.Type)
	case len(t.Occurrence.Ref) > 128:
		add("ref", "at most 128 bytes")
	}
	if t.Param != nil && utf8.RuneCountInString(*t.Param) > xjob.MaxParamLen {
		add("executorParam", "is %d characters, at most %d allowed", utf8.RuneCountInString(*t.Param), xjob.MaxParamLen)
	}
	for _, a := range t.AddressList {
		var ve *xjob.ValidationError
		if err := xjob.ValidateAddress(a); errors.As(err, &ve) {
			for _, prob := range ve.Problems {
				add("addressList", "%s", prob.Message)
			}
		}
	}
	if t.ShardTotal < 0 || t.ShardIndex < 0 || (t.ShardTotal > 0 && t.ShardIndex >= t.ShardTotal) {
		add("shardIndex", "must be in [0, shardTotal)")
	}
	if len(p) > 0 {
		return &xjob.ValidationError{Problems: p}
	}
	return nil
}

// ShardingParam formats a broadcast shard as xxl-job stores it ("i/n").
func ShardingParam(index, total int) string {
	return fmt.Sprintf("%d/%d", index, total)
}

// Slow-lane rule carried over from xxl-job: a job with more than
// SlowLaneCount dispatches slower than SlowDispatch in the current minute
// goes to the slow lane.
const (
	SlowDispatch  = 500 // ms
	SlowLaneCount = 10
)

// LaneOf picks the dispatch lane for job at now (Unix ms).
func LaneOf(job *xjob.Job, now int64) Lane {
	if job.SlowMinute == now/60000 && job.SlowCount > SlowLaneCount {
		return LaneSlow
	}
	return LaneFast
}

// ShardOf maps a job id to one of n scan shards. The id is mixed first
// (splitmix64's finaliser) so that consecutive ids spread evenly.
func ShardOf(jobID int64, n int) int {
	if n <= 1 {
		return 0
	}
	z := uint64(jobID) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return int(z % uint64(n))
}
