package dynamostore

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/pkg/driver"
)

// keyWalk merges Queries that each return items in the order of one
// string key attribute (the time index's partitions, or the failed and
// parked lists' partitions) into one stream in that order.
type keyWalk struct {
	ctx     context.Context
	db      *DB
	keyAttr string
	desc    bool
	streams []*keyStream
}

type keyStream struct {
	in   *dynamodb.QueryInput
	buf  []item
	next map[string]types.AttributeValue
	done bool
}

// walkIndex walks the time index over parts, tkey within [lo, hi] (none
// when lo > hi: a bound below the retention's floor).
func (db *DB) walkIndex(ctx context.Context, parts []int64, lo, hi string, desc bool) *keyWalk {
	w := &keyWalk{ctx: ctx, db: db, keyAttr: AttrTimeKey, desc: desc}
	if lo > hi {
		return w // DynamoDB refuses BETWEEN with its bounds reversed
	}
	for _, part := range parts {
		var e expr
		in := &dynamodb.QueryInput{TableName: &db.t.Logs, IndexName: aws.String(IndexLogsByTime),
			KeyConditionExpression: aws.String(e.name(AttrTimePart) + " = " + e.val(n(part)) + " AND " +
				e.name(AttrTimeKey) + " BETWEEN " + e.val(s(lo)) + " AND " + e.val(s(hi))),
			ScanIndexForward: aws.Bool(!desc), Limit: aws.Int32(200)}
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
		w.streams = append(w.streams, &keyStream{in: in})
	}
	return w
}

// walkList walks the failed ("f") or parked ("r") list, oldest first, up
// to hi, from the retention's floor (older entries name expired logs).
func (db *DB) walkList(ctx context.Context, kind, hi string) *keyWalk {
	w := &keyWalk{ctx: ctx, db: db, keyAttr: AttrSK}
	lo := db.retention().floorKey(minKey)
	if lo > hi {
		return w // DynamoDB refuses BETWEEN with its bounds reversed
	}
	for part := range db.opts.LogPartitions {
		var e expr
		in := &dynamodb.QueryInput{TableName: &db.t.Logs, ConsistentRead: aws.Bool(true),
			KeyConditionExpression: aws.String(e.name(AttrPK) + " = " + e.val(s(kind+strconv.Itoa(part))) + " AND " +
				e.name(AttrSK) + " BETWEEN " + e.val(s(lo)) + " AND " + e.val(s(hi))),
			Limit: aws.Int32(500)}
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
		w.streams = append(w.streams, &keyStream{in: in})
	}
	return w
}

func (w *keyWalk) fill(st *keyStream) error {
	for len(st.buf) == 0 && !st.done {
		st.in.ExclusiveStartKey = st.next
		res, err := w.db.api.Query(w.ctx, st.in)
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

// peek returns the next item in key order without taking it.
func (w *keyWalk) peek() (item, bool, error) {
	best := -1
	for i, st := range w.streams {
		if err := w.fill(st); err != nil {
			return nil, false, err
		}
		if len(st.buf) == 0 {
			continue
		}
		if best < 0 || (st.buf[0].str(w.keyAttr) < w.streams[best].buf[0].str(w.keyAttr)) != w.desc {
			best = i
		}
	}
	if best < 0 {
		return nil, false, nil
	}
	return w.streams[best].buf[0], true, nil
}

// next takes the next item in key order.
func (w *keyWalk) next() (item, bool, error) {
	it, ok, err := w.peek()
	if !ok || err != nil {
		return nil, false, err
	}
	for _, st := range w.streams {
		if len(st.buf) > 0 && st.buf[0].str(w.keyAttr) == it.str(w.keyAttr) {
			st.buf = st.buf[1:]
			break
		}
	}
	return it, true, nil
}

// refs reads the walk's entries until n of them are pages that want
// keeps, or the walk ends (exhausted).
func (w *keyWalk) refs(n int, want func(pageRef) bool) (refs []pageRef, exhausted bool, err error) {
	for len(refs) < n {
		it, ok, err := w.next()
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return refs, true, nil
		}
		ref, err := refOf(it)
		if err != nil {
			return nil, false, err
		}
		if want(ref) {
			refs = append(refs, ref)
		}
	}
	return refs, false, nil
}

// pageIDs is the pages refs name.
func pageIDs(refs []pageRef) []int64 {
	ids := make([]int64, len(refs))
	for i, r := range refs {
		ids[i] = r.page
	}
	return ids
}

// pageRef is a page as the time index shows it.
type pageRef struct {
	page, lo, hi int64
	key          string
	jobs, groups string
}

func refOf(it item) (pageRef, error) {
	key := it.str(AttrTimeKey)
	hi, page, ok := parseSortKey(key)
	if !ok {
		return pageRef{}, fmt.Errorf("log time index key %q", key)
	}
	return pageRef{page: page, hi: hi, lo: it.int(attrPageLo), key: key,
		jobs: it.str(attrPageJobs), groups: it.str(attrPageGroups)}, nil
}

// parseSortKey inverts SortKey.
func parseSortKey(k string) (a, b int64, ok bool) {
	x, y, found := strings.Cut(k, "#")
	ua, err1 := strconv.ParseUint(x, 16, 64)
	ub, err2 := strconv.ParseUint(y, 16, 64)
	if !found || err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return int64(ua ^ 1<<63), int64(ub ^ 1<<63), true
}

// allLogParts are the time index partitions that hold pages:
// 0..LogPages-1 (the others stay empty; see logPartOf).
func (db *DB) allLogParts() []int64 {
	parts := make([]int64, db.opts.LogPages)
	for i := range parts {
		parts[i] = int64(i)
	}
	return parts
}

// logHeap orders logs newest first: by trigger time, then id, descending.
type logHeap []xjob.Log

func (h logHeap) Len() int { return len(h) }
func (h logHeap) Less(i, j int) bool {
	if h[i].TriggerTime != h[j].TriggerTime {
		return h[i].TriggerTime > h[j].TriggerTime
	}
	return h[i].ID > h[j].ID
}
func (h logHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *logHeap) Push(x any)   { *h = append(*h, x.(xjob.Log)) }
func (h *logHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	*h = old[:len(old)-1]
	return l
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

// readBatch is how many pages a walk reads with one BatchGetItem.
const readBatch = 50

// LogList pages logs newest first. It walks the time index (one partition
// for a job's logs: they share the job's log part, logPartOf) down from
// the upper bound plus the widest page span, reads the pages whose job,
// group and time range can match, and emits a log once no unread page can
// hold a newer one (every unread page's latest trigger time is below it).
func (db *DB) LogList(ctx context.Context, p driver.LogListParams) (driver.LogPage, error) {
	limit := clampLimit(p.Limit, 100, 1000)
	var cursor string
	upper := int64(math.MaxInt64)
	if p.To != 0 {
		upper = p.To
	}
	if p.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		t, _, ok := parseSortKey(string(raw))
		if err != nil || !ok || len(raw) != len(minKey) {
			return driver.LogPage{}, fmt.Errorf("dynamo log list: %w", badCursor(p.Cursor))
		}
		cursor, upper = string(raw), min(upper, t)
	}
	span, err := db.maxSpan(ctx)
	if err != nil {
		return driver.LogPage{}, fmt.Errorf("dynamo log list: %w", err)
	}
	lo, hi := minKey, maxKey
	if p.From != 0 {
		lo = SortKey(p.From, math.MinInt64)
	}
	lo = db.retention().floorKey(lo) // no page older holds a live log
	if upper < math.MaxInt64-span {
		hi = SortKey(upper+span, math.MaxInt64)
	}
	parts := db.allLogParts()
	if p.JobID != 0 {
		parts = []int64{logPartOf(p.JobID, db.opts.LogPages)}
	}
	keep := func(l xjob.Log) bool {
		return (p.JobID == 0 || l.JobID == p.JobID) && (p.GroupID == 0 || l.GroupID == p.GroupID) &&
			logStatusOK(l, p.Status) && (p.From == 0 || l.TriggerTime >= p.From) && (p.To == 0 || l.TriggerTime <= p.To) &&
			(cursor == "" || SortKey(l.TriggerTime, l.ID) < cursor)
	}
	w := db.walkIndex(ctx, parts, lo, hi, true)
	var (
		h   logHeap
		out []xjob.Log
	)
	for {
		next, more, err := w.peek()
		if err != nil {
			return driver.LogPage{}, fmt.Errorf("dynamo log list: %w", err)
		}
		frontier := int64(math.MinInt64)
		if more {
			ref, err := refOf(next)
			if err != nil {
				return driver.LogPage{}, fmt.Errorf("dynamo log list: %w", err)
			}
			frontier = ref.hi
		}
		for h.Len() > 0 && len(out) <= limit && h[0].TriggerTime > frontier {
			out = append(out, heap.Pop(&h).(xjob.Log))
		}
		if len(out) > limit || !more {
			break
		}
		refs, _, err := w.refs(readBatch, func(ref pageRef) bool {
			return ref.lo <= upper && (p.JobID == 0 || listHas(ref.jobs, p.JobID)) && (p.GroupID == 0 || listHas(ref.groups, p.GroupID))
		})
		if err != nil {
			return driver.LogPage{}, fmt.Errorf("dynamo log list: %w", err)
		}
		pages, err := db.readPages(ctx, pageIDs(refs), false)
		if err != nil {
			return driver.LogPage{}, fmt.Errorf("dynamo log list: %w", err)
		}
		for _, pg := range pages {
			for _, l := range pg.logs {
				if keep(l) {
					heap.Push(&h, l)
				}
			}
		}
	}
	var page driver.LogPage
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		page.Next = base64.RawURLEncoding.EncodeToString([]byte(SortKey(last.TriggerTime, last.ID)))
	}
	page.Logs = out
	return page, nil
}

// runningFromKey names the counters item holding the running watermark:
// the time index key up to which every page was read by LogsRunning.
const runningFromKey = "logpages-running-from"

// runningExamine bounds the logs one LogsRunning call reads past the
// watermark (200,000: over three minutes of 1,000 triggers/s).
const runningExamine = 200_000

// recheckList walks the failed ("f") or parked ("r") list oldest first up
// to hi and reads each entry's log (eventually consistent page reads). An
// entry whose log is gone or no longer qualifies (live is false) is
// dropped on the way; the other logs go to keep, which returns false to
// stop the walk.
func (db *DB) recheckList(ctx context.Context, kind, hi string, live, keep func(xjob.Log) bool) error {
	w := db.walkList(ctx, kind, hi)
	for {
		var entries []item
		for len(entries) < readBatch {
			it, ok, err := w.next()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			entries = append(entries, it)
		}
		if len(entries) == 0 {
			return nil
		}
		ids := make([]int64, len(entries))
		for i, e := range entries {
			ids[i] = e.int(attrItemLogID)
		}
		found, err := db.readLogs(ctx, ids, false)
		if err != nil {
			return err
		}
		var stale []xjob.Log
		more := true
		for i, e := range entries {
			l, ok := found[ids[i]]
			switch {
			case !ok || !live(l):
				stale = append(stale, xjob.Log{ID: ids[i], TriggerTime: keyTime(e.str(AttrSK))})
			case more:
				more = keep(l)
			}
		}
		db.dropIndexItems(ctx, kind, stale)
		if !more {
			return nil
		}
	}
}

// LogsRunning returns running logs triggered at or before before, oldest
// first, without a per-trigger index write (see doc.go, "Running logs"):
// the parked list (logs found unfinished when the watermark passed them),
// then the pages of the time index from the watermark up to before, read
// once: each unfinished log in them is parked and the watermark moves on.
// Callers pass a before that stays behind the trigger time of logs still
// to be created (the lost check passes now − LostAfter).
//
// An idle deployment's call costs one GetItem and the time index's
// Queries: the parked list is walked only while the watermark's item says
// it may hold entries (runningState), and the watermark is written only
// when the walk read a page past it (an empty range read again costs
// what it did).
func (db *DB) LogsRunning(ctx context.Context, before int64, limit int) ([]xjob.Log, error) {
	limit = clampLimit(limit, 1000, 10000)
	bKey := SortKey(before, math.MaxInt64)
	st, err := db.runningState(ctx)
	if err != nil {
		return nil, fmt.Errorf("dynamo logs running: %w", err)
	}
	var result []xjob.Log
	seen := map[int64]bool{}
	if !st.parkedEmpty {
		// The whole list, not only up to before: the list is marked empty
		// only when no live entry is left anywhere in it.
		live := 0
		err := db.recheckList(ctx, "r", maxKey, func(l xjob.Log) bool { return !l.Handled() }, func(l xjob.Log) bool {
			live++
			if l.Running() && l.TriggerTime <= before && !seen[l.ID] {
				seen[l.ID] = true
				result = append(result, l)
			}
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("dynamo logs running: parked: %w", err)
		}
		if live == 0 {
			if err := db.markParkedEmpty(ctx, st.parkGen); err != nil {
				return nil, fmt.Errorf("dynamo logs running: %w", err)
			}
		}
	}

	from := db.retention().floorKey(st.from) // pages older hold expired logs only
	w := db.walkIndex(ctx, db.allLogParts(), from, bKey, false)
	last, examined, exhausted, parked := "", 0, false, false
	for examined < runningExamine {
		// The entry at the watermark was read by the call that set it.
		refs, end, err := w.refs(readBatch, func(ref pageRef) bool { return ref.key != from })
		if err != nil {
			return nil, fmt.Errorf("dynamo logs running: %w", err)
		}
		exhausted = end
		if len(refs) > 0 {
			last = refs[len(refs)-1].key
		}
		pages, err := db.readPages(ctx, pageIDs(refs), false)
		if err != nil {
			return nil, fmt.Errorf("dynamo logs running: %w", err)
		}
		var park []types.WriteRequest
		for _, pg := range pages {
			for _, l := range pg.logs {
				examined++
				if l.Handled() {
					continue
				}
				park = append(park, types.WriteRequest{PutRequest: &types.PutRequest{Item: db.indexItem("r", l)}})
				if l.Running() && l.TriggerTime <= before && !seen[l.ID] {
					seen[l.ID] = true
					result = append(result, l)
				}
			}
		}
		if err := db.batchWrite(ctx, db.t.Logs, park); err != nil {
			return nil, fmt.Errorf("dynamo logs running: park: %w", err)
		}
		parked = parked || len(park) > 0
		if exhausted {
			break
		}
	}
	if parked {
		// After the entries, before the watermark: a concurrent call that
		// walked the list before they were written loses its empty mark
		// (or has it undone), and a call that dies in between leaves the
		// watermark where it was: the next call parks them again.
		if err := db.bumpParkGen(ctx); err != nil {
			return nil, fmt.Errorf("dynamo logs running: %w", err)
		}
	}
	// Nothing read past the watermark: leave it (the next call reads the
	// same empty range again, at the same price, and saves the write).
	if last != "" {
		next := last
		if exhausted {
			next = bKey // everything up to before was read
		}
		if next > from {
			if err := db.setRunningFrom(ctx, next); err != nil {
				return nil, fmt.Errorf("dynamo logs running: %w", err)
			}
		}
	}
	slices.SortFunc(result, func(a, b xjob.Log) int {
		return cmp.Or(cmp.Compare(a.TriggerTime, b.TriggerTime), cmp.Compare(a.ID, b.ID))
	})
	return result[:min(len(result), limit)], nil
}

// keyTime is the time part of a list entry's sort key.
func keyTime(k string) int64 {
	t, _, _ := parseSortKey(k)
	return t
}

// Attributes of the watermark's counters item that say whether the parked
// list may hold entries: parkGen grows (ADD) after a call's parked entries
// are written and before it moves the watermark; parkEmpty is the parkGen
// read before a walk of the whole list that found no live entry, written
// conditional on parkGen being still that. The list is known empty while
// parkEmpty = parkGen: entries written after the walk read the list are
// followed by a bump, which either makes the mark lose its condition or
// comes after it and moves parkGen past it; entries whose bump never came
// (the call died) are parked again by the next call, which reads the same
// pages from the watermark the dead call left.
const (
	attrParkGen   = "parkGen"
	attrParkEmpty = "parkEmpty"
)

// runningState is the watermark's counters item as LogsRunning reads it.
type runningState struct {
	from        string // the running watermark
	parkGen     int64
	parkedEmpty bool // the parked list holds no live entry
}

// runningState reads the running watermark and the parked list's marks
// (one strongly consistent GetItem).
func (db *DB) runningState(ctx context.Context) (runningState, error) {
	it, err := db.counter(ctx, runningFromKey)
	if err != nil {
		return runningState{}, fmt.Errorf("read running watermark: %w", err)
	}
	st := runningState{from: minKey, parkGen: it.int(attrParkGen)}
	if k := it.str(AttrTimeKey); k != "" {
		st.from = k
	}
	if _, ok := it[attrParkEmpty]; ok {
		st.parkedEmpty = it.int(attrParkEmpty) == st.parkGen
	}
	return st, nil
}

// bumpParkGen marks the parked list as possibly holding entries.
func (db *DB) bumpParkGen(ctx context.Context) error {
	var u update
	u.Add(attrParkGen, 1)
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Counters,
		Key: item{AttrName: s(runningFromKey)}, UpdateExpression: aws.String(u.String()),
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if err != nil {
		return fmt.Errorf("mark parked list: %w", err)
	}
	return nil
}

// markParkedEmpty records that a walk begun at parkGen gen found the
// parked list empty; a park since (parkGen moved) makes it a no-op.
func (db *DB) markParkedEmpty(ctx context.Context, gen int64) error {
	var u update
	u.Set(attrParkEmpty, n(gen))
	cond := "attribute_not_exists(" + u.name(attrParkGen) + ")"
	if gen != 0 {
		cond = u.name(attrParkGen) + " = " + u.val(n(gen))
	}
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Counters,
		Key: item{AttrName: s(runningFromKey)}, UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if err != nil && !condFailed(err) {
		return fmt.Errorf("mark parked list empty: %w", err)
	}
	return nil
}

// setRunningFrom moves the watermark forward only (a slower concurrent
// call loses the condition, harmlessly).
func (db *DB) setRunningFrom(ctx context.Context, key string) error {
	if err := db.raiseCounter(ctx, runningFromKey, AttrTimeKey, s(key)); err != nil {
		return fmt.Errorf("move running watermark: %w", err)
	}
	return nil
}

// LogsFailedUnalarmed walks the failed list oldest first and keeps the
// logs that failed and are still unalarmed; entries whose log is gone or
// no longer qualifies are dropped on the way.
func (db *DB) LogsFailedUnalarmed(ctx context.Context, before int64, limit int) ([]xjob.Log, error) {
	limit = clampLimit(limit, 1000, 10000)
	var out []xjob.Log
	err := db.recheckList(ctx, "f", SortKey(before, math.MaxInt64), failedUnalarmed, func(l xjob.Log) bool {
		if l.TriggerTime <= before {
			out = append(out, l)
		}
		return len(out) < limit
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo logs failed unalarmed: %w", err)
	}
	return out, nil
}

// LogDeleteBefore deletes up to limit of the oldest logs triggered before
// before: it walks the time index up from the oldest page, reads pages
// that hold such logs and removes them page by page (a page left empty is
// deleted). Logs past their retention are not counted (they are not
// there for any reader); the pages they share with deleted logs lose them
// with the same writes.
func (db *DB) LogDeleteBefore(ctx context.Context, before int64, limit int) (int, error) {
	if before == math.MinInt64 {
		return 0, nil
	}
	limit = clampLimit(limit, 1000, 100000)
	span, err := db.maxSpan(ctx)
	if err != nil {
		return 0, fmt.Errorf("dynamo log delete before: %w", err)
	}
	hi := maxKey
	if before < math.MaxInt64-span {
		hi = SortKey(before+span, math.MaxInt64)
	}
	w := db.walkIndex(ctx, db.allLogParts(), db.retention().floorKey(minKey), hi, false)
	var doomed []xjob.Log
	for len(doomed) < limit {
		refs, _, err := w.refs(readBatch, func(ref pageRef) bool { return ref.lo < before })
		if err != nil {
			return 0, fmt.Errorf("dynamo log delete before: %w", err)
		}
		if len(refs) == 0 {
			break
		}
		pages, err := db.readPages(ctx, pageIDs(refs), false)
		if err != nil {
			return 0, fmt.Errorf("dynamo log delete before: %w", err)
		}
		for _, pg := range pages {
			for _, l := range pg.logs {
				if l.TriggerTime < before {
					doomed = append(doomed, l)
				}
			}
		}
	}
	slices.SortFunc(doomed, func(a, b xjob.Log) int {
		return cmp.Or(cmp.Compare(a.TriggerTime, b.TriggerTime), cmp.Compare(a.ID, b.ID))
	})
	doomed = doomed[:min(len(doomed), limit)]
	ids := make([]int64, len(doomed))
	for i, l := range doomed {
		ids[i] = l.ID
	}
	count, err := db.deleteLogs(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("dynamo log delete before: %w", err)
	}
	return count, nil
}
