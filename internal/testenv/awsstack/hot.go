package awsstack

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/xjobdev/xjob/pkg/clock"
)

// DynamoDB's per-partition limits: one item lives in one partition, and a
// partition serves at most this many units a second whatever the table's
// capacity mode. Adaptive capacity can split a hot partition by sort key,
// never below one item, so an item and (as far as this meter models it) a
// partition key are held to them.
const (
	PartitionWCU = 1000
	PartitionRCU = 3000
)

// Hot is the busiest one-second load the meter saw on one item or one
// partition key.
type Hot struct {
	Key string  `json:"key"` // table|key attributes (item) or table[/index]|partition value
	WCU float64 `json:"wcu"`
	RCU float64 `json:"rcu"`
	At  int64   `json:"at"` // the second (Unix)
}

// Hottest is the peak one-second load of any item and any partition key
// since the last ResetHot, and the requests the meter answered with
// ProvisionedThroughputExceededException.
type Hottest struct {
	ItemW, ItemR Hot // the item with the most write units in a second; with the most read units
	KeyW, KeyR   Hot // the same per partition key (index partitions included)
	Throttled    int
}

// hotTracker counts units per item and per partition key per second of
// its clock (the wall clock but in tests).
type hotTracker struct {
	clock     clock.Clock
	mu        sync.Mutex
	sec       int64
	items     map[string]*load // this second's
	keys      map[string]*load
	best      Hottest
	throttled int
	// tables is every table's (and index's) units per second since the
	// last reset: what provisioned capacity would have to serve.
	tables map[string]map[int64]*load
	// limits (0: not enforced)
	wcu, rcu float64
}

type load struct{ w, r float64 }

func newHotTracker(c clock.Clock) *hotTracker {
	return &hotTracker{clock: c, items: map[string]*load{}, keys: map[string]*load{}, wcu: PartitionWCU, rcu: PartitionRCU}
}

// roll starts second now, folding the second that ended into the peaks.
func (h *hotTracker) roll(now int64) {
	if now == h.sec {
		return
	}
	h.fold()
	h.sec = now
	clear(h.items)
	clear(h.keys)
}

func (h *hotTracker) fold() {
	for k, l := range h.items {
		if l.w > h.best.ItemW.WCU {
			h.best.ItemW = Hot{Key: k, WCU: l.w, RCU: l.r, At: h.sec}
		}
		if l.r > h.best.ItemR.RCU {
			h.best.ItemR = Hot{Key: k, WCU: l.w, RCU: l.r, At: h.sec}
		}
	}
	for k, l := range h.keys {
		if l.w > h.best.KeyW.WCU {
			h.best.KeyW = Hot{Key: k, WCU: l.w, RCU: l.r, At: h.sec}
		}
		if l.r > h.best.KeyR.RCU {
			h.best.KeyR = Hot{Key: k, WCU: l.w, RCU: l.r, At: h.sec}
		}
	}
}

// admit says whether a request touching items and keys, expected to cost
// w write or r read units on each, fits in this second's budget of every
// one of them. One that does not is throttled (counted).
func (h *hotTracker) admit(items, keys []string, w, r float64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.roll(h.clock.Now().Unix())
	over := func(m map[string]*load, ks []string) bool {
		for _, k := range ks {
			l := m[k]
			if l == nil {
				continue
			}
			if h.wcu > 0 && w > 0 && l.w+w > h.wcu || h.rcu > 0 && r > 0 && l.r+r > h.rcu {
				return true
			}
		}
		return false
	}
	if over(h.items, items) || over(h.keys, keys) {
		h.throttled++
		return false
	}
	return true
}

// add records units spent on one item (item "" for none) and its key.
func (h *hotTracker) add(item, key string, w, r float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.roll(h.clock.Now().Unix())
	at := func(m map[string]*load, k string) {
		if k == "" {
			return
		}
		l := m[k]
		if l == nil {
			l = &load{}
			m[k] = l
		}
		l.w += w
		l.r += r
	}
	at(h.items, item)
	at(h.keys, key)
	k := key
	if k == "" {
		k = item
	}
	if table, _, ok := strings.Cut(k, "|"); ok {
		if h.tables == nil {
			h.tables = map[string]map[int64]*load{}
		}
		if h.tables[table] == nil {
			h.tables[table] = map[int64]*load{}
		}
		l := h.tables[table][h.sec]
		if l == nil {
			l = &load{}
			h.tables[table][h.sec] = l
		}
		l.w += w
		l.r += r
	}
}

func (h *hotTracker) snapshot() Hottest {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fold()
	out := h.best
	out.Throttled = h.throttled
	return out
}

func (h *hotTracker) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.best, h.throttled = Hottest{}, 0
	h.tables = nil
	clear(h.items)
	clear(h.keys)
}

// TableLoad is one table's (or one index's: "table/index") units in
// one second.
type TableLoad struct {
	At       int64 // the second (Unix)
	WCU, RCU float64
}

// TableSeconds returns each table's and index's load per second since
// the last ResetHot, in time order, keyed "table" or "table/index" (the
// deployment's table names).
func (m *Meter) TableSeconds() map[string][]TableLoad {
	m.hot.mu.Lock()
	defer m.hot.mu.Unlock()
	out := map[string][]TableLoad{}
	for t, secs := range m.hot.tables {
		for at, l := range secs {
			out[t] = append(out[t], TableLoad{At: at, WCU: l.w, RCU: l.r})
		}
		slices.SortFunc(out[t], func(a, b TableLoad) int { return int(a.At - b.At) })
	}
	return out
}

// Hottest returns the peak one-second loads since the last ResetHot.
func (m *Meter) Hottest() Hottest { return m.hot.snapshot() }

// ResetHot forgets the peaks (at the start of a measured window).
func (m *Meter) ResetHot() { m.hot.reset() }

// SetPartitionLimits changes the per-item and per-key limits the meter
// enforces (0 and 0: none).
func (m *Meter) SetPartitionLimits(wcu, rcu float64) {
	m.hot.mu.Lock()
	m.hot.wcu, m.hot.rcu = wcu, rcu
	m.hot.mu.Unlock()
}

// target is one item or partition a DynamoDB request touches, with the
// units it spends there.
type target struct {
	item, key string
	w, r      float64
}

type paramsKey struct{}

// throttleMiddleware sits inside the SDK's retry loop (Finalize, after
// Retry): a request that would push one of its items or partition keys
// past DynamoDB's per-partition limit this second is answered with
// ProvisionedThroughputExceededException, as DynamoDB answers it, so the
// SDK's retryer and the code's own back-off run. Throttled requests are
// not billed.
func (m *Meter) throttleMiddleware(st *middleware.Stack) error {
	return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("xjobAWSEmuThrottle",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if p := middleware.GetStackValue(ctx, paramsKey{}); p != nil {
				items, keys, w, r := m.estimate(p)
				if len(items)+len(keys) > 0 && !m.hot.admit(items, keys, w, r) {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, &ddbtypes.ProvisionedThroughputExceededException{
						Message: aws.String("The level of configured provisioned throughput for the table was exceeded (emulated per-partition limit)")}
				}
			}
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

// estimate lists what a request will touch before it runs, with the
// least units it costs on each (1 write unit, ½ read unit; a put its
// item's size), for the admission check.
func (m *Meter) estimate(p any) (items, keys []string, w, r float64) {
	for _, t := range m.targets(p, nil, 0) {
		if t.item != "" {
			items = append(items, t.item)
		}
		keys = append(keys, t.key)
		w, r = max(w, t.w), max(r, t.r)
	}
	return items, keys, w, r
}

// targets splits a request's units over the items and partitions it
// touched: single-item operations put all of units on their item, batch
// writes one unit per ⌈item size/1 KB⌉ on each, batch gets and queries
// share units evenly. units 0 means "estimate" (see estimate).
func (m *Meter) targets(p any, out any, units float64) []target {
	m.mu.Lock()
	schema := m.schema
	m.mu.Unlock()
	keyOf := func(table string, it item) (string, string) {
		ts, ok := schema[table]
		if !ok || len(ts.keys) == 0 {
			return "", ""
		}
		var parts []string
		for _, k := range ts.keys {
			parts = append(parts, attrString(it[k]))
		}
		return table + "|" + strings.Join(parts, "|"), table + "|" + parts[0]
	}
	var ts []target
	one := func(table string, key item, w, r float64) {
		if it, k := keyOf(table, key); k != "" {
			ts = append(ts, target{item: it, key: k, w: w, r: r})
		}
	}
	est := units == 0
	switch in := p.(type) {
	case *dynamodb.GetItemInput:
		one(aws.ToString(in.TableName), in.Key, 0, pick1(est, 0.5, units))
	case *dynamodb.PutItemInput:
		one(aws.ToString(in.TableName), in.Item, pick1(est, math.Ceil(float64(itemSize(in.Item))/1024), units), 0)
	case *dynamodb.UpdateItemInput:
		one(aws.ToString(in.TableName), in.Key, pick1(est, 1, units), 0)
	case *dynamodb.DeleteItemInput:
		one(aws.ToString(in.TableName), in.Key, pick1(est, 1, units), 0)
	case *dynamodb.BatchWriteItemInput:
		for table, reqs := range in.RequestItems {
			for _, rq := range reqs {
				switch {
				case rq.PutRequest != nil:
					one(table, rq.PutRequest.Item, math.Ceil(float64(itemSize(rq.PutRequest.Item))/1024), 0)
				case rq.DeleteRequest != nil:
					one(table, rq.DeleteRequest.Key, 1, 0)
				}
			}
		}
	case *dynamodb.BatchGetItemInput:
		n := 0
		for _, ka := range in.RequestItems {
			n += len(ka.Keys)
		}
		for table, ka := range in.RequestItems {
			for _, k := range ka.Keys {
				one(table, k, 0, pick1(est, 0.5, units/float64(max(n, 1))))
			}
		}
	case *dynamodb.QueryInput:
		table := aws.ToString(in.TableName)
		s, ok := schema[table]
		if !ok {
			break
		}
		hash, where := "", table
		if idx := aws.ToString(in.IndexName); idx != "" {
			where = table + "/" + idx
			for _, g := range s.gsis {
				if g.name == idx && len(g.keys) > 0 {
					hash = g.keys[0]
				}
			}
		} else if len(s.keys) > 0 {
			hash = s.keys[0]
		}
		if v, ok := hashValue(aws.ToString(in.KeyConditionExpression), hash, in.ExpressionAttributeNames, in.ExpressionAttributeValues); ok {
			ts = append(ts, target{key: where + "|" + v, r: pick1(est, 0.5, units)})
		}
	}
	return ts
}

func pick1(est bool, guess, units float64) float64 {
	if est {
		return guess
	}
	return units
}

// hashValue finds "hash = :v" (or "#n = :v") in a key condition.
func hashValue(cond, hash string, names map[string]string, vals map[string]ddbtypes.AttributeValue) (string, bool) {
	if hash == "" {
		return "", false
	}
	for _, clause := range strings.Split(cond, " AND ") {
		lhs, rhs, ok := strings.Cut(clause, "=")
		if !ok {
			continue
		}
		lhs, rhs = strings.Trim(strings.TrimSpace(lhs), "()"), strings.Trim(strings.TrimSpace(rhs), "()")
		if n, ok := names[lhs]; ok {
			lhs = n
		}
		if lhs != hash {
			continue
		}
		if v, ok := vals[rhs]; ok {
			return attrString(v), true
		}
	}
	return "", false
}

func attrString(v ddbtypes.AttributeValue) string {
	switch x := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return x.Value
	case *ddbtypes.AttributeValueMemberN:
		return x.Value
	case *ddbtypes.AttributeValueMemberB:
		return fmt.Sprintf("%x", x.Value)
	case nil:
		return ""
	}
	return "?"
}

// recordHot spreads a finished request's units over what it touched, and
// its index writes over the index partitions they landed in.
func (m *Meter) recordHot(p any, out any, d OpStat, op string, idx []indexHit) {
	units := d.Reported + d.Derived
	if units <= 0 && len(idx) == 0 {
		return
	}
	ts := m.targets(p, out, units)
	if IsWrite(op) {
		for _, t := range ts {
			m.hot.add(t.item, t.key, t.w, 0)
		}
	} else {
		for _, t := range ts {
			m.hot.add(t.item, t.key, 0, t.r)
		}
	}
	for _, h := range idx {
		m.hot.add("", h.key, h.units, 0)
	}
}

// indexHit is the write units one index write put on one index
// partition.
type indexHit struct {
	key   string
	units float64
}
