package dynamostore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

func logKey(id int64) item { return item{AttrID: n(id)} }

func (db *DB) logPart(id int64) int64 { return id % int64(db.opts.LogPartitions) }

func encodeLog(l xjob.Log, part int64, ttl time.Duration) item {
	it := item{
		AttrID:                   n(l.ID),
		AttrOccurrenceID:         s(l.OccurrenceID),
		AttrJobID:                n(l.JobID),
		AttrGroupID:              n(l.GroupID),
		"triggerType":            s(string(l.TriggerType)),
		"scheduledTime":          n(l.ScheduledTime),
		"triggerTime":            n(l.TriggerTime),
		"triggerCode":            n(int64(l.TriggerCode)),
		"triggerMsg":             s(l.TriggerMsg),
		"executorAddress":        s(l.ExecutorAddress),
		"executorHandler":        s(l.ExecutorHandler),
		"executorParam":          s(l.ExecutorParam),
		"executorShardingParam":  s(l.ExecutorShardingParam),
		"executorFailRetryCount": n(int64(l.ExecutorFailRetryCount)),
		"handleTime":             n(l.HandleTime),
		"handleCode":             n(int64(l.HandleCode)),
		"handleMsg":              s(l.HandleMsg),
		"alarmStatus":            n(int64(l.AlarmStatus)),
		"claimUntil":             n(l.ClaimUntil),
		"version":                n(l.Version),
		AttrTimeKey:              s(SortKey(l.TriggerTime, l.ID)),
		AttrTimePart:             n(part),
	}
	if l.Failed() && l.AlarmStatus == xjob.AlarmDefault {
		it[AttrFailPart] = n(part)
	}
	if at, ok := purgeAt(l.TriggerTime, ttl); ok {
		it[AttrPurgeAt] = n(at)
	}
	return it
}

func decodeLog(it item) xjob.Log {
	return xjob.Log{
		ID:                     it.int(AttrID),
		OccurrenceID:           it.str(AttrOccurrenceID),
		JobID:                  it.int(AttrJobID),
		GroupID:                it.int(AttrGroupID),
		TriggerType:            xjob.TriggerType(it.str("triggerType")),
		ScheduledTime:          it.int("scheduledTime"),
		TriggerTime:            it.int("triggerTime"),
		TriggerCode:            int(it.int("triggerCode")),
		TriggerMsg:             it.str("triggerMsg"),
		ExecutorAddress:        it.str("executorAddress"),
		ExecutorHandler:        it.str("executorHandler"),
		ExecutorParam:          it.str("executorParam"),
		ExecutorShardingParam:  it.str("executorShardingParam"),
		ExecutorFailRetryCount: int(it.int("executorFailRetryCount")),
		HandleTime:             it.int("handleTime"),
		HandleCode:             int(it.int("handleCode")),
		HandleMsg:              it.str("handleMsg"),
		AlarmStatus:            xjob.AlarmStatus(it.int("alarmStatus")),
		ClaimUntil:             it.int("claimUntil"),
		Version:                it.int("version"),
	}
}

// LogCreate stores a new log under the id its occurrence names (logID):
// one conditional put (attribute_not_exists) is both the write and the
// dedupe. When the id is taken, a consistent read tells a repeat of the
// same occurrence (ErrConflict with the stored log) from a collision with
// another occurrence of the same second, which moves on to the next probe
// id; every delivery of an occurrence walks the same probe sequence, so
// they all meet at one log.
func (db *DB) LogCreate(ctx context.Context, l xjob.Log) (xjob.Log, error) {
	if l.OccurrenceID == "" {
		return xjob.Log{}, &xjob.ValidationError{Problems: []xjob.FieldProblem{{Field: "occurrenceId", Message: "is required"}}}
	}
	l.Version = 1
	for probe, tries := 0, 0; probe < logIDProbes && tries < 2*logIDProbes; tries++ {
		l.ID = logID(db.idHash, l.OccurrenceID, probe)
		var f expr
		_, err := db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Logs, Item: encodeLog(l, db.logPart(l.ID), db.opts.LogTTL),
			ConditionExpression: aws.String("attribute_not_exists(" + f.name(AttrID) + ")"), ExpressionAttributeNames: f.names})
		if err == nil {
			return l, nil
		}
		if !condFailed(err) {
			return xjob.Log{}, fmt.Errorf("dynamo log create %s: %w", l.OccurrenceID, err)
		}
		existing, err := db.LogGet(ctx, l.ID)
		switch {
		case errors.Is(err, xjob.ErrNotFound):
			continue // purged between the put and the read: try the same id again
		case err != nil:
			return xjob.Log{}, fmt.Errorf("dynamo log create %s: %w", l.OccurrenceID, err)
		case existing.OccurrenceID == l.OccurrenceID:
			return existing, fmt.Errorf("dynamo log create %s: %w", l.OccurrenceID, xjob.ErrConflict)
		}
		probe++ // another occurrence holds this id
	}
	return xjob.Log{}, fmt.Errorf("dynamo log create %s: no free log id after %d probes", l.OccurrenceID, logIDProbes)
}

// LogGet returns one log (strongly consistent read) or xjob.ErrNotFound.
func (db *DB) LogGet(ctx context.Context, id int64) (xjob.Log, error) {
	it, err := db.getItem(ctx, db.t.Logs, logKey(id))
	if err != nil {
		return xjob.Log{}, fmt.Errorf("dynamo log get %d: %w", id, err)
	}
	return decodeLog(it), nil
}

// updateLog runs one conditional update of a log; a lost condition maps to
// ErrNotFound or ErrConflict.
func (db *DB) updateLog(ctx context.Context, id int64, u *update, cond string, rv types.ReturnValue) (item, error) {
	out, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Logs, Key: logKey(id),
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values, ReturnValues: rv})
	if condFailed(err) {
		return nil, db.missingOr(ctx, db.t.Logs, logKey(id), xjob.ErrConflict)
	}
	if err != nil {
		return nil, err
	}
	return out.Attributes, nil
}

// LogClaim takes over an untriggered log, conditional on its version.
func (db *DB) LogClaim(ctx context.Context, p driver.LogClaimParams) (xjob.Log, error) {
	var u update
	u.Set("claimUntil", n(p.ClaimUntil))
	u.Set("triggerTime", n(p.TriggerTime))
	u.Set(AttrTimeKey, s(SortKey(p.TriggerTime, p.ID)))
	u.Incr("version")
	cond := u.name("version") + " = " + u.val(n(p.ExpectVersion)) + " AND " + u.name("triggerCode") + " = " + u.val(n(0))
	it, err := db.updateLog(ctx, p.ID, &u, cond, types.ReturnValueAllNew)
	if err != nil {
		return xjob.Log{}, fmt.Errorf("dynamo log claim %d: %w", p.ID, err)
	}
	return decodeLog(it), nil
}

// LogTriggered records the executor's reply to /run if none is recorded.
// A failed trigger with no result yet also enters the failed index; a
// successful one writes no index (LogsRunning finds it through byTime).
// When the callback came first, a second conditional write records the
// reply and leaves the indexes as the result set them.
func (db *DB) LogTriggered(ctx context.Context, p driver.LogTriggeredParams) error {
	if p.TriggerCode == xjob.CodeNone {
		return fmt.Errorf("dynamo log triggered %d: trigger code 0 records nothing", p.ID)
	}
	set := func(u *update) {
		u.Set("executorAddress", s(p.ExecutorAddress))
		u.Set("triggerCode", n(int64(p.TriggerCode)))
		u.Set("triggerMsg", s(p.TriggerMsg))
		u.Incr("version")
	}
	var u update
	set(&u)
	if p.TriggerCode != xjob.CodeSuccess {
		u.SetExpr(AttrFailPart, u.name(AttrTimePart))
	}
	zero := u.val(n(0))
	cond := u.name("triggerCode") + " = " + zero + " AND " + u.name("handleCode") + " = " + zero
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Logs, Key: logKey(p.ID),
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if err == nil || !condFailed(err) {
		return wrapErr("dynamo log triggered", p.ID, err)
	}
	var v update
	set(&v)
	cond = v.name("triggerCode") + " = " + v.val(n(0))
	_, err = db.updateLog(ctx, p.ID, &v, cond, types.ReturnValueNone)
	return wrapErr("dynamo log triggered", p.ID, err)
}

// LogFinish records the first result (condition handleCode = 0), takes the
// log out of the running index and into the failed one on a failure.
func (db *DB) LogFinish(ctx context.Context, p driver.LogFinishParams) (xjob.Log, error) {
	if p.HandleCode == xjob.CodeNone {
		return xjob.Log{}, fmt.Errorf("dynamo log finish %d: handle code 0 records nothing", p.ID)
	}
	var u update
	u.Set("handleTime", n(p.HandleTime))
	u.Set("handleCode", n(int64(p.HandleCode)))
	u.Set("handleMsg", s(p.HandleMsg))
	u.Incr("version")
	u.Remove(AttrRunPart)
	if p.HandleCode == xjob.CodeSuccess {
		u.Remove(AttrFailPart)
	} else {
		u.SetExpr(AttrFailPart, u.name(AttrTimePart))
	}
	cond := u.name("handleCode") + " = " + u.val(n(0))
	it, err := db.updateLog(ctx, p.ID, &u, cond, types.ReturnValueAllNew)
	if err != nil {
		return xjob.Log{}, fmt.Errorf("dynamo log finish %d: %w", p.ID, err)
	}
	return decodeLog(it), nil
}

// LogSetAlarm compares-and-sets the alarm status. Leaving status 0 takes
// the log out of the failed index; returning to 0 puts it back (reads
// re-check that it failed).
func (db *DB) LogSetAlarm(ctx context.Context, p driver.LogSetAlarmParams) error {
	var u update
	u.Set("alarmStatus", n(int64(p.To)))
	u.Incr("version")
	if p.To == xjob.AlarmDefault {
		u.SetExpr(AttrFailPart, u.name(AttrTimePart))
	} else {
		u.Remove(AttrFailPart)
	}
	cond := u.name("alarmStatus") + " = " + u.val(n(int64(p.From)))
	_, err := db.updateLog(ctx, p.ID, &u, cond, types.ReturnValueNone)
	return wrapErr("dynamo log set alarm", p.ID, err)
}

// logWalk describes a walk over one keys-only log index in trigger order.
type logWalk struct {
	index   string
	pkAttr  string
	parts   []int64 // partition key values to merge
	lo, hi  string  // inclusive AttrTimeKey bounds
	desc    bool
	skipKey string // a key to leave out (the cursor's)
	keep    func(xjob.Log) bool
	limit   int
	// examine, when above 0, stops the walk after that many logs were
	// passed to keep.
	examine int
}

// walkLogs merges the index partitions in key order, batch-reads the logs
// the keys name and keeps those keep accepts, until limit are kept or the
// range is exhausted. Reads: one Query per partition per page of keys,
// plus one eventually consistent read per log examined.
func (db *DB) walkLogs(ctx context.Context, w logWalk) ([]xjob.Log, error) {
	if w.lo > w.hi {
		return nil, nil
	}
	page := int32(min(max(2*w.limit, 25), 500))
	type stream struct {
		buf  []item
		next map[string]types.AttributeValue
		done bool
		in   *dynamodb.QueryInput
	}
	streams := make([]*stream, len(w.parts))
	for i, part := range w.parts {
		var e expr
		in := &dynamodb.QueryInput{TableName: &db.t.Logs, IndexName: aws.String(w.index),
			KeyConditionExpression: aws.String(e.name(w.pkAttr) + " = " + e.val(n(part)) + " AND " +
				e.name(AttrTimeKey) + " BETWEEN " + e.val(s(w.lo)) + " AND " + e.val(s(w.hi))),
			ScanIndexForward: aws.Bool(!w.desc), Limit: aws.Int32(page)}
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
		streams[i] = &stream{in: in}
	}
	fill := func(st *stream) error {
		for len(st.buf) == 0 && !st.done {
			st.in.ExclusiveStartKey = st.next
			res, err := db.api.Query(ctx, st.in)
			if err != nil {
				return err
			}
			for _, it := range res.Items {
				st.buf = append(st.buf, it)
			}
			st.next = res.LastEvaluatedKey
			st.done = len(res.LastEvaluatedKey) == 0
		}
		return nil
	}
	var kept []xjob.Log
	examined := 0
	for len(kept) < w.limit && (w.examine <= 0 || examined < w.examine) {
		// Take the next batch of keys in merged order.
		var batch []item
		for len(batch) < int(page) {
			best := -1
			for i, st := range streams {
				if err := fill(st); err != nil {
					return nil, err
				}
				if len(st.buf) == 0 {
					continue
				}
				k := st.buf[0].str(AttrTimeKey)
				if best < 0 || (k < streams[best].buf[0].str(AttrTimeKey)) != w.desc {
					best = i
				}
			}
			if best < 0 {
				break
			}
			k := streams[best].buf[0]
			streams[best].buf = streams[best].buf[1:]
			if k.str(AttrTimeKey) != w.skipKey {
				batch = append(batch, k)
			}
		}
		if len(batch) == 0 {
			break
		}
		keys := make([]item, len(batch))
		for i, k := range batch {
			keys[i] = logKey(k.int(AttrID))
		}
		items, err := db.batchGet(ctx, db.t.Logs, keys)
		if err != nil {
			return nil, err
		}
		byID := make(map[int64]xjob.Log, len(items))
		for _, it := range items {
			l := decodeLog(it)
			byID[l.ID] = l
		}
		for _, k := range batch {
			l, ok := byID[k.int(AttrID)]
			if !ok {
				continue
			}
			examined++
			if w.keep(l) {
				kept = append(kept, l)
				if len(kept) == w.limit {
					break
				}
			}
			if w.examine > 0 && examined >= w.examine {
				break
			}
		}
	}
	return kept, nil
}

// logStatusOK applies LogListParams.Status.
func logStatusOK(l xjob.Log, st xjob.LogStatus) bool {
	switch st {
	case xjob.LogSuccess:
		return l.Handled() && l.HandleCode == xjob.CodeSuccess
	case xjob.LogFail:
		return l.Failed()
	case xjob.LogRunning:
		return l.Running()
	}
	return true
}

func (db *DB) allParts() []int64 {
	parts := make([]int64, db.opts.LogPartitions)
	for i := range parts {
		parts[i] = int64(i)
	}
	return parts
}

// LogList pages logs newest first. It queries the byJob index when a job
// is given, else byGroup, else every partition of byTime (merged), with
// From/To as the key range; status and the other id filter are applied to
// the logs read. The cursor is the last served log's index sort key.
func (db *DB) LogList(ctx context.Context, p driver.LogListParams) (driver.LogPage, error) {
	limit := clampLimit(p.Limit, 100, 1000)
	w := logWalk{lo: minKey, hi: maxKey, desc: true, limit: limit + 1}
	switch {
	case p.JobID != 0:
		w.index, w.pkAttr, w.parts = IndexLogsByJob, AttrJobID, []int64{p.JobID}
	case p.GroupID != 0:
		w.index, w.pkAttr, w.parts = IndexLogsByGroup, AttrGroupID, []int64{p.GroupID}
	default:
		w.index, w.pkAttr, w.parts = IndexLogsByTime, AttrTimePart, db.allParts()
	}
	if p.From != 0 {
		w.lo = SortKey(p.From, math.MinInt64)
	}
	if p.To != 0 {
		w.hi = SortKey(p.To, math.MaxInt64)
	}
	if p.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		if err != nil || len(raw) != len(minKey) {
			return driver.LogPage{}, fmt.Errorf("dynamo log list: %w", badCursor(p.Cursor))
		}
		w.hi, w.skipKey = min(w.hi, string(raw)), string(raw)
	}
	w.keep = func(l xjob.Log) bool {
		return (p.GroupID == 0 || l.GroupID == p.GroupID) && logStatusOK(l, p.Status)
	}
	logs, err := db.walkLogs(ctx, w)
	if err != nil {
		return driver.LogPage{}, fmt.Errorf("dynamo log list: %w", err)
	}
	var page driver.LogPage
	if len(logs) > limit {
		logs = logs[:limit]
		last := logs[limit-1]
		page.Next = base64.RawURLEncoding.EncodeToString([]byte(SortKey(last.TriggerTime, last.ID)))
	}
	page.Logs = logs
	return page, nil
}

// runningFromKey names the counters item holding the running watermark.
const runningFromKey = "logs-running-from"

// runningExamine bounds the logs one LogsRunning call reads past the
// watermark (200,000: over three minutes of 1,000 triggers/s).
const runningExamine = 200_000

// LogsRunning returns running logs triggered at or before before, oldest
// first, without a per-trigger index write (see doc.go, "Running logs"):
//
//  1. the parked logs: the sparse running index, which holds only logs
//     found unfinished when the watermark passed them;
//  2. the logs of byTime from the watermark up to before, read once: each
//     one still unfinished is parked (one conditional update, only for
//     logs older than the lost-check delay, so rarely), and the watermark
//     moves to the last log read.
//
// Callers pass a before that stays behind the trigger time of logs still
// to be created (the lost check passes now − LostAfter).
func (db *DB) LogsRunning(ctx context.Context, before int64, limit int) ([]xjob.Log, error) {
	limit = clampLimit(limit, 1000, 10000)
	hi := SortKey(before, math.MaxInt64)
	parked, err := db.walkLogs(ctx, logWalk{index: IndexLogsRunning, pkAttr: AttrRunPart, parts: db.allParts(),
		lo: minKey, hi: hi, limit: limit,
		keep: func(l xjob.Log) bool { return l.Running() && l.TriggerTime <= before }})
	if err != nil {
		return nil, fmt.Errorf("dynamo logs running: parked: %w", err)
	}
	if len(parked) == limit {
		return parked, nil
	}
	from, err := db.runningFrom(ctx)
	if err != nil {
		return nil, fmt.Errorf("dynamo logs running: %w", err)
	}
	seen := make(map[int64]bool, len(parked))
	for _, l := range parked {
		seen[l.ID] = true
	}
	last, examined := "", 0
	var park []xjob.Log
	fresh, err := db.walkLogs(ctx, logWalk{index: IndexLogsByTime, pkAttr: AttrTimePart, parts: db.allParts(),
		lo: from, hi: hi, limit: limit - len(parked), examine: runningExamine,
		keep: func(l xjob.Log) bool {
			last, examined = SortKey(l.TriggerTime, l.ID), examined+1
			if l.Handled() {
				return false
			}
			park = append(park, l)
			return l.Running() && l.TriggerTime <= before && !seen[l.ID]
		}})
	if err != nil {
		return nil, fmt.Errorf("dynamo logs running: %w", err)
	}
	for _, l := range park {
		if err := db.parkRunning(ctx, l.ID); err != nil {
			return nil, fmt.Errorf("dynamo logs running: park %d: %w", l.ID, err)
		}
	}
	next := last
	if len(fresh) < limit-len(parked) && examined < runningExamine {
		next = hi // the whole range up to before was read
	}
	if next > from {
		if err := db.setRunningFrom(ctx, next); err != nil {
			return nil, fmt.Errorf("dynamo logs running: %w", err)
		}
	}
	return append(parked, fresh...), nil
}

// runningFrom reads the running watermark: every log whose byTime key is
// below it is finished or parked.
func (db *DB) runningFrom(ctx context.Context) (string, error) {
	it, err := db.getItem(ctx, db.t.Counters, item{AttrName: s(runningFromKey)})
	if errors.Is(err, xjob.ErrNotFound) {
		return minKey, nil
	}
	if err != nil {
		return "", fmt.Errorf("read running watermark: %w", err)
	}
	if k := it.str(AttrTimeKey); k != "" {
		return k, nil
	}
	return minKey, nil
}

// setRunningFrom moves the watermark forward only (a slower concurrent
// call loses the condition, harmlessly).
func (db *DB) setRunningFrom(ctx context.Context, key string) error {
	var u update
	u.Set(AttrTimeKey, s(key))
	cond := "attribute_not_exists(" + u.name(AttrTimeKey) + ") OR " + u.name(AttrTimeKey) + " < " + u.val(s(key))
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Counters, Key: item{AttrName: s(runningFromKey)},
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if err != nil && !condFailed(err) {
		return fmt.Errorf("move running watermark: %w", err)
	}
	return nil
}

// parkRunning enters an unfinished log into the running index (a log
// finished meanwhile, or purged, loses the condition and stays out).
func (db *DB) parkRunning(ctx context.Context, id int64) error {
	var u update
	u.SetExpr(AttrRunPart, u.name(AttrTimePart))
	cond := u.name("handleCode") + " = " + u.val(n(0))
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Logs, Key: logKey(id),
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if err != nil && !condFailed(err) {
		return err
	}
	return nil
}

// LogsFailedUnalarmed walks the sparse failed index oldest first, keeping
// logs that failed and are still unalarmed.
func (db *DB) LogsFailedUnalarmed(ctx context.Context, before int64, limit int) ([]xjob.Log, error) {
	logs, err := db.walkLogs(ctx, logWalk{index: IndexLogsFailed, pkAttr: AttrFailPart, parts: db.allParts(),
		lo: minKey, hi: SortKey(before, math.MaxInt64), limit: clampLimit(limit, 1000, 10000),
		keep: func(l xjob.Log) bool {
			return l.Failed() && l.AlarmStatus == xjob.AlarmDefault && l.TriggerTime <= before
		}})
	if err != nil {
		return nil, fmt.Errorf("dynamo logs failed unalarmed: %w", err)
	}
	return logs, nil
}

// LogDeleteBefore deletes up to limit of the oldest logs triggered before
// before (BatchWriteItem, unprocessed items retried). The TTL attribute is the backstop; this is the exact retention.
func (db *DB) LogDeleteBefore(ctx context.Context, before int64, limit int) (int, error) {
	if before == math.MinInt64 {
		return 0, nil
	}
	logs, err := db.walkLogs(ctx, logWalk{index: IndexLogsByTime, pkAttr: AttrTimePart, parts: db.allParts(),
		lo: minKey, hi: SortKey(before-1, math.MaxInt64), limit: clampLimit(limit, 1000, 100000),
		keep: func(l xjob.Log) bool { return l.TriggerTime < before }})
	if err != nil {
		return 0, fmt.Errorf("dynamo log delete before: %w", err)
	}
	reqs := make([]types.WriteRequest, 0, len(logs))
	for _, l := range logs {
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: logKey(l.ID)}})
	}
	if err := db.batchWrite(ctx, db.t.Logs, reqs); err != nil {
		return 0, fmt.Errorf("dynamo log delete before: %w", err)
	}
	return len(logs), nil
}
