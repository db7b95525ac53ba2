package dynamostore

import (
	"bytes"
	"cmp"
	"compress/flate"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/text"
	"github.com/xjobdev/xjob/pkg/driver"
)

// A log page holds every log of one (fire second, job's shard among 16): one item
// whose logs are one compressed JSON attribute. Every log change is a
// read-modify-write of its page, conditional on the page's version, so a
// ring bucket's claims, its executors' replies and a callback request's
// results each cost one write per page, not one per trigger.
type logPage struct {
	id      int64
	version int64      // 0: not stored yet
	logs    []xjob.Log // ordered by id
}

// Page item attributes.
const (
	attrPageVersion = "v"      // N: the page's version (conditional writes)
	attrPageBody    = "b"      // B: flate-compressed JSON of the logs
	attrPageLo      = "lo"     // N: the earliest trigger time in the page
	attrPageJobs    = "jobs"   // S: ",<job>,<job>," of the page's logs
	attrPageGroups  = "groups" // S: ",<group>,…," of the page's logs
	attrItemLogID   = "id"     // N: the log a failed or parked item names
)

// pageKey is a page item's key.
func pageKey(page int64) item {
	return item{AttrPK: s("p" + strconv.FormatInt(page, 10)), AttrSK: s("p")}
}

// storedLog is a log as its page stores it: the fields xjob.Log keeps out
// of its JSON too.
type storedLog struct {
	xjob.Log
	ClaimUntil int64  `json:"claimUntil,omitempty"`
	Version    int64  `json:"version"`
	Delivery   string `json:"delivery,omitempty"`
}

// maxPageBody bounds a page's compressed logs, well under DynamoDB's
// 400 KB item limit. A page that would outgrow it has its longest messages
// cut (see fitPage).
const maxPageBody = 300 << 10

// pageFlateLevel is the page bodies' compression level: the lowest that
// uses a preset dictionary (flate.BestSpeed ignores it, and a one-log
// page then stays ~430 bytes instead of ~90).
const pageFlateLevel = 2

// flateWriters pools writers primed with pageDict1 (a writer's Reset
// keeps its dictionary).
var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriterDict(nil, pageFlateLevel, []byte(pageDict1))
	return w
}}

// encodeLogs renders logs as a pageBodyDict1 body (see pagedict.go).
func encodeLogs(logs []xjob.Log) ([]byte, error) {
	stored := make([]storedLog, len(logs))
	for i, l := range logs {
		stored[i] = storedLog{Log: l, ClaimUntil: l.ClaimUntil, Version: l.Version, Delivery: l.Delivery}
	}
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false) // trigger messages are HTML: an escaped '<' costs 6 bytes
	if err := enc.Encode(stored); err != nil {
		return nil, fmt.Errorf("encode log page: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteByte(pageBodyDict1)
	w := flateWriters.Get().(*flate.Writer)
	defer flateWriters.Put(w)
	w.Reset(&buf)
	if _, err := w.Write(bytes.TrimSuffix(raw.Bytes(), []byte("\n"))); err != nil {
		return nil, fmt.Errorf("compress log page: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("compress log page: %w", err)
	}
	return buf.Bytes(), nil
}

// flateReaders pools decompressors of either body format (Reset sets
// the dictionary).
var flateReaders sync.Pool

// decodeLogs decodes a page body of either format: pages written before
// pageBodyDict1 are read as they were.
func decodeLogs(body []byte) ([]xjob.Log, error) {
	var dict []byte
	if len(body) > 0 && body[0] == pageBodyDict1 {
		body, dict = body[1:], []byte(pageDict1)
	}
	var r io.ReadCloser
	if pooled, ok := flateReaders.Get().(io.ReadCloser); ok {
		if err := pooled.(flate.Resetter).Reset(bytes.NewReader(body), dict); err == nil {
			r = pooled
		}
	}
	if r == nil {
		r = flate.NewReaderDict(bytes.NewReader(body), dict)
	}
	defer flateReaders.Put(r)
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("decompress log page: %w", err)
	}
	var stored []storedLog
	if err := json.Unmarshal(raw, &stored); err != nil {
		return nil, fmt.Errorf("decode log page: %w", err)
	}
	logs := make([]xjob.Log, len(stored))
	for i, sl := range stored {
		logs[i] = sl.Log
		logs[i].ClaimUntil, logs[i].Version, logs[i].Delivery = sl.ClaimUntil, sl.Version, sl.Delivery
	}
	return logs, nil
}

// fitPage encodes the page's logs, cutting the trigger and handle messages
// to 16 KB, 4 KB, 1 KB and then 256 bytes, and then the executor params
// and sharding params (and messages with them) to 1 KB, 256 and 64
// bytes, until the page fits maxPageBody. Messages go first (they are
// diagnostics); params are what the executor was sent, so they are cut
// only when a page of many logs with long, incompressible params would
// otherwise outgrow the item limit — a page that does not fit can never
// be written, and its fires would be lost. A page that still does not fit
// (tens of thousands of logs in one second's page) is an error.
func fitPage(logs []xjob.Log) ([]byte, error) {
	body, err := encodeLogs(logs)
	cut := func(limit int, params bool) {
		for i := range logs {
			logs[i].TriggerMsg = text.Truncate(logs[i].TriggerMsg, limit)
			logs[i].HandleMsg = text.Truncate(logs[i].HandleMsg, limit)
			if params {
				logs[i].ExecutorParam = text.Truncate(logs[i].ExecutorParam, limit)
				logs[i].ExecutorShardingParam = text.Truncate(logs[i].ExecutorShardingParam, limit)
			}
		}
	}
	for _, step := range []struct {
		limit  int
		params bool
	}{{16 << 10, false}, {4 << 10, false}, {1 << 10, false}, {256, false}, {1 << 10, true}, {256, true}, {64, true}} {
		if err != nil || len(body) <= maxPageBody {
			return body, err
		}
		cut(step.limit, step.params)
		body, err = encodeLogs(logs)
	}
	if err == nil && len(body) > maxPageBody {
		err = fmt.Errorf("log page of %d logs is %d bytes compressed, over %d", len(logs), len(body), maxPageBody)
	}
	return body, err
}

// decodePage decodes a page item, without the logs past their retention
// as of r.
func decodePage(it item, r retention) (*logPage, error) {
	pk := it.str(AttrPK)
	id, err := strconv.ParseInt(strings.TrimPrefix(pk, "p"), 10, 64)
	if err != nil || !strings.HasPrefix(pk, "p") {
		return nil, fmt.Errorf("log page key %q", pk)
	}
	p := &logPage{id: id, version: it.int(attrPageVersion)}
	if b, ok := it[attrPageBody].(*types.AttributeValueMemberB); ok {
		if p.logs, err = decodeLogs(b.Value); err != nil {
			return nil, fmt.Errorf("log page %d: %w", id, err)
		}
	}
	r.prune(p, it.int(AttrPurgeAt))
	return p, nil
}

// find returns the index of the log with id, or -1.
func (p *logPage) find(id int64) int {
	i, ok := p.search(id)
	if !ok {
		return -1
	}
	return i
}

// search is where the log with id is, or would be inserted, in the page's
// logs (kept in id order), and whether it is there.
func (p *logPage) search(id int64) (int, bool) {
	return slices.BinarySearchFunc(p.logs, id, func(l xjob.Log, id int64) int { return cmp.Compare(l.ID, id) })
}

// occurrences maps each occurrence in the page to its log's id (the first
// in id order, should one repeat): one pass for a whole batch of claims,
// where a scan of the page per claim would be quadratic.
func (p *logPage) occurrences() map[string]int64 {
	m := make(map[string]int64, len(p.logs))
	for _, l := range p.logs {
		if _, ok := m[l.OccurrenceID]; !ok {
			m[l.OccurrenceID] = l.ID
		}
	}
	return m
}

// insert adds l at its k, or at the next k that is free in the page.
func (p *logPage) insert(l xjob.Log, k int64) (xjob.Log, error) {
	for tries := 0; tries <= logKMask; tries, k = tries+1, (k+1)&logKMask {
		id := logIDOf(p.id, k)
		i, taken := p.search(id)
		if id == 0 || taken {
			continue
		}
		l.ID = id
		p.logs = slices.Insert(p.logs, i, l)
		return l, nil
	}
	return xjob.Log{}, fmt.Errorf("log page %d is full", p.id)
}

// timeRange returns the earliest and latest trigger time of the page.
func (p *logPage) timeRange() (lo, hi int64) {
	for i, l := range p.logs {
		if i == 0 || l.TriggerTime < lo {
			lo = l.TriggerTime
		}
		if i == 0 || l.TriggerTime > hi {
			hi = l.TriggerTime
		}
	}
	return lo, hi
}

// idList renders ids as ",a,b,": a substring test finds one. logs is not
// empty (an empty page is deleted, not written).
func idList(logs []xjob.Log, of func(xjob.Log) int64) string {
	ids := make([]int64, 0, len(logs))
	for _, l := range logs {
		ids = append(ids, of(l))
	}
	slices.Sort(ids)
	return "," + formatIDs(slices.Compact(ids)) + ","
}

func listHas(list string, id int64) bool {
	return strings.Contains(list, ","+strconv.FormatInt(id, 10)+",")
}

// readPages reads pages by id (missing ones are left out), strongly
// consistent when asked.
func (db *DB) readPages(ctx context.Context, ids []int64, consistent bool) (map[int64]*logPage, error) {
	keys := make([]item, 0, len(ids))
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			keys = append(keys, pageKey(id))
		}
	}
	items, err := db.batchGet(ctx, db.t.Logs, keys, consistent)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]*logPage, len(items))
	r := db.retention()
	now := db.opts.Clock.Now()
	for _, it := range items {
		p, err := decodePage(it, r)
		if err != nil {
			return nil, err
		}
		out[p.id] = p
		if consistent && settled(p) {
			db.recent.keep(p, now)
		}
	}
	return out, nil
}

// recentReadLogs is the most logs a page read strongly consistent (a
// callback's LogGetMany) may hold to be remembered (see settled).
const recentReadLogs = 4

// settled reports whether a page just read is worth remembering for the
// change that follows it (a callback's LogFinishMany after its
// LogGetMany), which then skips its own read: a sparse page (at most
// recentReadLogs logs) whose every log has its trigger recorded (by the
// reply, or by the ring's provisional claim, whose successful call writes
// nothing more). Such a page has no writer due: the ring wrote what it
// writes, and callbacks of a page's few logs seldom meet. A page with a log still
// waiting for its trigger record is read again before the change, as
// before: its ring is about to write it (the executor's callback often
// comes before the ring records the reply), and a change from the read
// would lose that race, a lost write (1 WCU) where the read it saves is
// a fifth of that. Dense pages are not remembered either: with the results
// of many callbacks landing on them, a change from a read made before
// the job reads lost its round several times as often as one from a
// read just before it (a W5 run of the results applier: 43 lost page
// writes in two minutes against 9).
func settled(p *logPage) bool {
	if len(p.logs) == 0 || len(p.logs) > recentReadLogs {
		return false
	}
	for _, l := range p.logs {
		if l.TriggerCode == xjob.CodeNone {
			return false
		}
	}
	return true
}

// readLogs reads the pages of ids and returns the logs among ids that
// exist, by id.
func (db *DB) readLogs(ctx context.Context, ids []int64, consistent bool) (map[int64]xjob.Log, error) {
	pageIDs := make([]int64, len(ids))
	for i, id := range ids {
		pageIDs[i] = pageOfLog(id)
	}
	pages, err := db.readPages(ctx, pageIDs, consistent)
	if err != nil {
		return nil, err
	}
	found := make(map[int64]xjob.Log, len(ids))
	for _, id := range ids {
		if p := pages[pageOfLog(id)]; p != nil {
			if j := p.find(id); j >= 0 {
				found[id] = p.logs[j]
			}
		}
	}
	return found, nil
}

func (db *DB) readPage(ctx context.Context, id int64) (*logPage, error) {
	it, err := db.getItem(ctx, db.t.Logs, pageKey(id))
	if errors.Is(err, xjob.ErrNotFound) {
		return &logPage{id: id}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read log page %d: %w", id, err)
	}
	return decodePage(it, db.retention())
}

// pageAttempts bounds the read-modify-write rounds of one page change;
// each lost round means another writer changed the page in between. With
// the backoff below (full jitter, doubling from 4 ms to 128 ms) they
// outlast a burst of dozens of writers on one page, ~5 s in all.
const pageAttempts = 60

// mutatePage applies change to the page's current logs and writes the
// page back, conditional on its version; when another writer got there
// first it reads the page again and applies change again (so change must
// compute everything it reports from the page it is given). change returns
// whether it changed anything. Index items follow the logs: failed items
// are written before the page and removed after it (see doc.go).
func (db *DB) mutatePage(ctx context.Context, id int64, change func(p *logPage) (bool, error)) error {
	return db.mutatePageIn(ctx, id, pageAttempts, change)
}

// mutatePageIn is mutatePage in at most attempts rounds from a read. With
// one (driver.OneRound), a lost round is the answer: driver.ErrContended,
// nothing written. A lost write from the remembered page does not count:
// that page may merely be stale, which says nothing of contention.
func (db *DB) mutatePageIn(ctx context.Context, id int64, attempts int, change func(p *logPage) (bool, error)) error {
	if p := db.recent.take(id, db.opts.Clock.Now()); p != nil {
		_, hi := p.timeRange()
		purge, _ := purgeAt(hi, db.opts.LogTTL)
		db.retention().prune(p, purge) // as a read would
		// The page as this store last wrote it: when the change
		// writes and no other writer came in between, that saves the
		// read. Anything else (nothing to change, which may be a stale
		// view's answer, or a lost write) goes on as if it had not been
		// there, from a read.
		if failedBefore, changed, err := p.changeWith(change); err == nil && changed {
			if err := db.writePage(ctx, p, failedBefore); !condFailed(err) {
				return err
			}
		}
	}
	for attempt := 0; ; attempt++ {
		p, err := db.readPage(ctx, id)
		if err != nil {
			return err
		}
		// Only the failed-index members as read: the write compares them
		// with the page's after the change (change edits p.logs in place).
		var failedBefore []xjob.Log
		for _, l := range p.logs {
			if failedUnalarmed(l) {
				failedBefore = append(failedBefore, l)
			}
		}
		changed, err := change(p)
		if err != nil || !changed {
			return err
		}
		err = db.writePage(ctx, p, failedBefore)
		if !condFailed(err) {
			return err
		}
		if attempt+1 >= attempts {
			if attempts == 1 {
				return fmt.Errorf("log page %d: %w", id, driver.ErrContended)
			}
			return fmt.Errorf("log page %d: changed by another writer %d times in a row", id, attempts)
		}
		// Back off with full jitter, so racing writers spread out.
		d := time.Duration(1+rand.IntN(4<<min(attempt, 5))) * time.Millisecond
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// claimPage is mutatePage for claims (LogCreate, LogCreateMany): a page
// this store does not remember is first taken not to exist, and written
// as change makes it from empty, conditional on there being no such
// item. A claim is normally its page's first write (the scan sends a
// page's fires of a second in one message, so the ring's claim comes
// before anything else writes it, and a manual or retry fire's page is
// a hashed second of its own), and the read that would only find the
// page missing is the one request saved: a strongly consistent read
// unit for each page a claim creates, most of a sparse deployment's ring
// reads. When the page does exist (a message delivered again, a bulk
// start's pushes sharing a page) the write loses its condition, which
// does not count as a round, and the claim goes on as mutatePage does,
// from a read: the loser pays the lost write on top of the read.
func (db *DB) claimPage(ctx context.Context, id int64, change func(p *logPage) (bool, error)) error {
	if !db.recent.has(id, db.opts.Clock.Now()) {
		p := &logPage{id: id}
		changed, err := change(p)
		if err != nil {
			return err
		}
		if changed {
			if err := db.writePage(ctx, p, nil); !condFailed(err) {
				return err
			}
		}
	}
	return db.mutatePage(ctx, id, change)
}

// changeWith applies change to p, returning p's failed-index members as
// they were before it.
func (p *logPage) changeWith(change func(p *logPage) (bool, error)) (failedBefore []xjob.Log, changed bool, err error) {
	for _, l := range p.logs {
		if failedUnalarmed(l) {
			failedBefore = append(failedBefore, l)
		}
	}
	changed, err = change(p)
	return failedBefore, changed, err
}

// recentTTL is how long a page this store wrote stays in recentPages: a
// ring bucket's claims are followed by the record of its executors'
// replies within its lead and the calls.
const recentTTL = 2 * time.Second

// recentLimit bounds the pages recentPages keeps.
const recentLimit = 1024

// recentPages remembers pages as this store last wrote them, for
// recentTTL, so that the next change of such a page need not read it
// first (mutatePage). A remembered page can be stale (another writer's
// change since): the change's conditional write then loses and the page
// is read, as with any lost round. Pages merely read are remembered only
// when settled (see there).
type recentPages struct {
	mu sync.Mutex
	m  map[int64]recentPage
}

type recentPage struct {
	p  logPage
	at time.Time
}

// keep remembers a copy of p (a page with logs, stored at p.version) at
// now.
func (r *recentPages) keep(p *logPage, now time.Time) {
	if p.version == 0 || len(p.logs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[int64]recentPage{}
	}
	if len(r.m) >= recentLimit {
		for id, e := range r.m {
			if now.Sub(e.at) > recentTTL {
				delete(r.m, id)
			}
		}
		if len(r.m) >= recentLimit {
			clear(r.m)
		}
	}
	r.m[p.id] = recentPage{p: logPage{id: p.id, version: p.version, logs: slices.Clone(p.logs)}, at: now}
}

// has reports whether page id is remembered and not older than
// recentTTL at now.
func (r *recentPages) has(id int64, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[id]
	return ok && now.Sub(e.at) <= recentTTL && !now.Before(e.at)
}

// take returns the remembered page id (to change: it is forgotten) or
// nil when there is none or it is older than recentTTL at now.
func (r *recentPages) take(id int64, now time.Time) *logPage {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[id]
	if !ok {
		return nil
	}
	delete(r.m, id)
	if now.Sub(e.at) > recentTTL || now.Before(e.at) {
		return nil
	}
	return &e.p
}

// writePage stores p (or deletes it when it holds no log), conditional on
// the version it was read at; failedBefore is its failed-index members as
// read. A lost condition comes back as the SDK's
// ConditionalCheckFailedException.
func (db *DB) writePage(ctx context.Context, p *logPage, failedBefore []xjob.Log) error {
	addFailed, dropFailed := failedDiff(failedBefore, p.logs)
	if len(addFailed) > 0 {
		reqs := make([]types.WriteRequest, len(addFailed))
		for i, l := range addFailed {
			reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: db.indexItem("f", l)}}
		}
		if err := db.batchWrite(ctx, db.t.Logs, reqs); err != nil {
			return fmt.Errorf("log page %d: failed index: %w", p.id, err)
		}
	}
	var e expr
	var cond string
	if p.version > 0 {
		cond = e.name(attrPageVersion) + " = " + e.val(n(p.version))
	} else {
		cond = "attribute_not_exists(" + e.name(AttrPK) + ")"
	}
	if len(p.logs) == 0 {
		if p.version == 0 {
			return nil
		}
		_, err := db.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &db.t.Logs, Key: pageKey(p.id),
			ConditionExpression: &cond, ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
		if err != nil {
			return err
		}
	} else {
		body, err := fitPage(p.logs)
		if err != nil {
			return err
		}
		lo, hi := p.timeRange()
		if err := db.noteSpan(ctx, hi-lo); err != nil {
			return err
		}
		it := pageKey(p.id)
		it[attrPageVersion] = n(p.version + 1)
		it[attrPageBody] = &types.AttributeValueMemberB{Value: body}
		it[AttrTimePart] = n(p.id & (logParts - 1))
		it[AttrTimeKey] = s(SortKey(hi, p.id))
		it[attrPageLo] = n(lo)
		it[attrPageJobs] = s(idList(p.logs, func(l xjob.Log) int64 { return l.JobID }))
		it[attrPageGroups] = s(idList(p.logs, func(l xjob.Log) int64 { return l.GroupID }))
		if at, ok := purgeAt(hi, db.opts.LogTTL); ok {
			it[AttrPurgeAt] = n(at)
		}
		_, err = db.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &db.t.Logs, Item: it,
			ConditionExpression: &cond, ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
		if err != nil {
			return err
		}
	}
	p.version++
	db.recent.keep(p, db.opts.Clock.Now())
	if len(dropFailed) > 0 {
		db.dropIndexItems(ctx, "f", dropFailed)
	}
	return nil
}

// failedUnalarmed is membership of the failed index.
func failedUnalarmed(l xjob.Log) bool { return l.Failed() && l.AlarmStatus == xjob.AlarmDefault }

// failedDiff returns the failed-index entries a page change adds (logs
// now failed and unalarmed under a key they were not before) and drops.
func failedDiff(before, after []xjob.Log) (add, drop []xjob.Log) {
	if !slices.ContainsFunc(before, failedUnalarmed) && !slices.ContainsFunc(after, failedUnalarmed) {
		return nil, nil // the common page: no maps on the write path
	}
	key := func(l xjob.Log) string { return SortKey(l.TriggerTime, l.ID) }
	was := map[string]xjob.Log{}
	for _, l := range before {
		if failedUnalarmed(l) {
			was[key(l)] = l
		}
	}
	is := map[string]bool{}
	for _, l := range after {
		if failedUnalarmed(l) {
			is[key(l)] = true
			if _, ok := was[key(l)]; !ok {
				add = append(add, l)
			}
		}
	}
	for k, l := range was {
		if !is[k] {
			drop = append(drop, l)
		}
	}
	return add, drop
}

// indexItem is a log's entry in the failed ("f") or parked ("r") list:
// partition kind + (id mod LogPartitions), sorted by trigger time.
func (db *DB) indexItem(kind string, l xjob.Log) item {
	it := item{AttrPK: s(kind + strconv.FormatInt(l.ID%int64(db.opts.LogPartitions), 10)),
		AttrSK: s(SortKey(l.TriggerTime, l.ID)), attrItemLogID: n(l.ID)}
	if at, ok := purgeAt(l.TriggerTime, db.opts.LogTTL); ok {
		it[AttrPurgeAt] = n(at)
	}
	return it
}

// dropIndexItems deletes failed or parked entries. It is best effort:
// readers re-check every entry against its log and drop stale ones.
func (db *DB) dropIndexItems(ctx context.Context, kind string, logs []xjob.Log) {
	reqs := make([]types.WriteRequest, len(logs))
	for i, l := range logs {
		k := db.indexItem(kind, l)
		reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: item{AttrPK: k[AttrPK], AttrSK: k[AttrSK]}}}
	}
	_ = db.batchWrite(ctx, db.t.Logs, reqs)
}

// spanKey names the counters item holding the widest trigger-time span
// (latest − earliest) of any page beyond spanFloor: a reader walking pages
// by their latest trigger time looks that much past its bound. Readers
// always look spanFloor past it, so the logs of one bucket (triggered
// within a second or so of each other) never record a span, and a
// recorded one is rounded up to spanFloor times a power of two: the item
// is written a handful of times in a table's life, not per page.
const (
	spanKey   = "logpages-span"
	spanFloor = 60_000
)

// noteSpan records span (rounded up) if it is wider than every span
// recorded, before the page that has it is written.
func (db *DB) noteSpan(ctx context.Context, span int64) error {
	if span <= max(spanFloor, db.span.Load()) {
		return nil
	}
	rounded := int64(spanFloor)
	for rounded < span {
		rounded *= 2
	}
	if err := db.raiseCounter(ctx, spanKey, "value", n(rounded)); err != nil {
		return fmt.Errorf("record log page span: %w", err)
	}
	for cur := db.span.Load(); cur < rounded && !db.span.CompareAndSwap(cur, rounded); cur = db.span.Load() {
	}
	return nil
}

// raiseCounter sets attr of a counters-table item to v unless it holds a
// value at least as high already (a higher concurrent write wins,
// harmlessly): the page span and the running watermark only grow.
func (db *DB) raiseCounter(ctx context.Context, name, attr string, v types.AttributeValue) error {
	var u update
	u.Set(attr, v)
	cond := "attribute_not_exists(" + u.name(attr) + ") OR " + u.name(attr) + " < " + u.val(v)
	_, err := db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &db.t.Counters, Key: item{AttrName: s(name)},
		UpdateExpression: aws.String(u.String()), ConditionExpression: &cond,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values})
	if err != nil && !condFailed(err) {
		return err
	}
	return nil
}

// counter reads a counters-table item (strongly consistent); a missing
// one reads as an empty item.
func (db *DB) counter(ctx context.Context, name string) (item, error) {
	it, err := db.getItem(ctx, db.t.Counters, item{AttrName: s(name)})
	if errors.Is(err, xjob.ErrNotFound) {
		return item{}, nil
	}
	return it, err
}

// maxSpan reads the widest page span recorded (strongly consistent: a
// page is written only after its span is recorded).
func (db *DB) maxSpan(ctx context.Context) (int64, error) {
	it, err := db.counter(ctx, spanKey)
	if err != nil {
		return 0, fmt.Errorf("read log page span: %w", err)
	}
	return max(spanFloor, it.int("value")), nil
}
