package callback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fallback"
	"github.com/xjobdev/xjob/internal/fire"
	"github.com/xjobdev/xjob/internal/text"
	"github.com/xjobdev/xjob/pkg/clock"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/protocol"
)

// Recorded is a share of one callback request, recorded durably on
// arrival (a queue message) and applied later with others (Apply). At is
// when it arrived: the results' handle time.
type Recorded struct {
	At    int64                          `json:"at"`
	Items []protocol.HandleCallbackParam `json:"items"`
}

// RecordedVersion is the format of the results messages (Recorded) this
// code writes and the newest it reads, with the ring's rules
// (fire.RingVersion): a record waits in the results queue until a batch
// applies it, so both sides of an upgrade or a rollback read it; one
// without "v" is version 1, a newer one is refused with *fire.VersionError
// (kind "results") and left in the queue, never applied as if it were
// this version.
const RecordedVersion = 1

type recordedWire struct {
	Version int `json:"v,omitempty"`
	recordedFields
}

type recordedFields Recorded

// MarshalJSON writes the record with "v": RecordedVersion.
func (r Recorded) MarshalJSON() ([]byte, error) {
	return json.Marshal(recordedWire{Version: RecordedVersion, recordedFields: recordedFields(r)})
}

// UnmarshalJSON reads a record of any version up to RecordedVersion and
// refuses a newer one with *fire.VersionError.
func (r *Recorded) UnmarshalJSON(data []byte) error {
	var w recordedWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	if err := fire.CheckVersion("results", w.Version, RecordedVersion); err != nil {
		return err
	}
	*r = Recorded(w.recordedFields)
	return nil
}

// MaxRecordedBytes bounds one Recorded's JSON, so that ten of them fit
// in one SQS batch request (256 KB).
const MaxRecordedBytes = 24 << 10

// Recorder takes executor results (the body of POST /api/callback) and
// records each request durably and small — one queue message per
// request, split when large — instead of writing the trigger logs at
// once. Apply merges what many requests recorded into one write per log
// page, so the page writes a result costs do not depend on how the
// executors batch their callbacks: a fleet sending one result per
// request pays for a page write shared by every result of the batch.
//
// An executor still hears "recorded" only once its results are durable:
// a failed send fails every item, and the executor sends the request
// again. Verdicts on an item that need the store (log not found, repeat
// callback) are no longer answered to the executor — xxl-job answers
// 200 regardless and only logs them — they are logged by Apply.
type Recorder struct {
	q   driver.Queue[Recorded]
	clk clock.Clock
}

// NewRecorder returns a Recorder sending to q (clk nil: the wall clock).
func NewRecorder(q driver.Queue[Recorded], clk clock.Clock) *Recorder {
	clk = fallback.Clock(clk)
	return &Recorder{q: q, clk: clk}
}

// Callback records items; the per-item errors are Service.Callback's
// validation verdicts, or the send's error for every item it carried.
func (r *Recorder) Callback(ctx context.Context, items []protocol.HandleCallbackParam) []error {
	errs := make([]error, len(items))
	at := clock.Millis(r.clk)
	var msgs []driver.Outgoing[Recorded]
	var cur Recorded
	var owners [][]int // owners[m] are the items of msgs[m]
	var mine []int
	size := 0
	flush := func() {
		if len(cur.Items) > 0 {
			msgs, owners = append(msgs, driver.Outgoing[Recorded]{Msg: cur}), append(owners, mine)
		}
		cur, mine, size = Recorded{At: at}, nil, 0
	}
	flush()
	for i, it := range items {
		if errs[i] = validItem(it); errs[i] != nil {
			continue
		}
		// The kept message is cut here as Service cuts it (HandleMsg), so
		// that one item always fits a message.
		it.HandleMsg = text.Truncate(it.HandleMsg, MaxHandleMsg)
		b, err := json.Marshal(it)
		if err != nil {
			errs[i] = fmt.Errorf("callback record: %w", err)
			continue
		}
		if size+len(b)+64 > MaxRecordedBytes {
			flush()
		}
		cur.Items, mine = append(cur.Items, it), append(mine, i)
		size += len(b) + 1
	}
	flush()
	if len(msgs) == 0 {
		return errs
	}
	if err := r.q.Send(ctx, msgs); err != nil {
		err = fmt.Errorf("callback record: %w", err)
		for _, is := range owners {
			for _, i := range is {
				errs[i] = err
			}
		}
	}
	return errs
}

// validItem is the verdict Callback gives an item without the store.
func validItem(it protocol.HandleCallbackParam) error {
	switch {
	case it.LogID <= 0:
		return ErrLogNotFound
	case it.HandleCode == xjob.CodeNone:
		return &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "handleCode", Message: "must not be 0"}}}
	}
	return nil
}

// Apply records the results of many recorded requests at once: one read
// of their logs' jobs (as Callback) and one LogFinishMany over all their items
// (so a log page is written once per Apply however many requests named
// it), each result with the handle time of its arrival, then completes
// the logs recorded. It returns, per recorded request, whether it must be
// applied again: true when one of its items failed for a reason a retry
// can change (a store error); verdicts (not found, repeat, invalid) are
// final and logged.
func (s *Service) Apply(ctx context.Context, recs []Recorded) (retry []bool) {
	var items []protocol.HandleCallbackParam
	var ats []int64
	var of []int // of[k]: the Recorded of items[k]
	for r, rec := range recs {
		for _, it := range rec.Items {
			items, ats, of = append(items, it), append(ats, rec.At), append(of, r)
		}
	}
	errs := make([]error, len(items))
	var ids []int64
	for i, it := range items {
		if errs[i] = validItem(it); errs[i] == nil {
			ids = append(ids, it.LogID)
		}
	}
	if len(ids) > 0 {
		s.callbackMany(ctx, items, errs, ids, ats)
	}
	s.logRejected(ctx, items, onlyVerdicts(errs))
	retry = make([]bool, len(recs))
	for k, err := range errs {
		if err != nil && !Final(err) {
			retry[of[k]] = true
		}
	}
	return retry
}

// Final says whether a per-item callback error is a verdict a resend
// would not change (not found, repeat, invalid), rather than a failure to
// record it.
func Final(err error) bool {
	var ve *xjob.ValidationError
	return errors.Is(err, xjob.ErrNotFound) || errors.Is(err, xjob.ErrConflict) || errors.As(err, &ve)
}

func onlyVerdicts(errs []error) []error {
	out := make([]error, len(errs))
	for i, err := range errs {
		if err != nil && Final(err) {
			out[i] = err
		}
	}
	return out
}
