package awsstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/pkg/clock"
)

// OpStat is what one function spent on one AWS operation.
type OpStat struct {
	Requests int `json:"requests"`
	Errors   int `json:"errors,omitempty"`
	// Entries counts SQS batch entries and DynamoDB batch items.
	Entries int `json:"entries,omitempty"`
	// Reported is the DynamoDB capacity the service reported
	// (ReturnConsumedCapacity=TOTAL); Derived the units assumed for the
	// requests that reported none (see DeriveUnits).
	Reported float64 `json:"reportedUnits,omitempty"`
	Derived  float64 `json:"derivedUnits,omitempty"`
	// IndexUnits are the write units of global secondary index entries
	// (see Meter.Describe), which neither dynalite nor a request's TOTAL
	// consumed capacity includes.
	IndexUnits float64 `json:"indexUnits,omitempty"`
	// StoredBytes is what the writes added to tables kept for the log
	// retention (items and index entries, with DynamoDB's per-item
	// overhead).
	StoredBytes int `json:"storedBytes,omitempty"`
	// Billed counts SQS requests as billed: one per 64 KB chunk of payload.
	Billed int `json:"billed,omitempty"`
	// NewItems counts items created in tables kept for the log retention
	// that carry no TTL attribute (ttlAttr): the code deletes each once
	// at the end of the retention (see Cost). Items with one are deleted
	// by DynamoDB's TTL, which is free.
	NewItems int `json:"newItems,omitempty"`
	// NewEntries counts the index entries those items added, and
	// PurgedBytes their share of StoredBytes.
	NewEntries  int `json:"newEntries,omitempty"`
	PurgedBytes int `json:"purgedBytes,omitempty"`
	// Lost counts conditional writes whose condition failed (billed at
	// the item's size, as DynamoDB bills them).
	Lost int `json:"lost,omitempty"`
}

func (s OpStat) plus(o OpStat, f float64) OpStat {
	r := func(a, b int) int { return a + int(math.Round(float64(b)*f)) }
	return OpStat{Requests: r(s.Requests, o.Requests), Errors: r(s.Errors, o.Errors), Entries: r(s.Entries, o.Entries),
		Reported: s.Reported + o.Reported*f, Derived: s.Derived + o.Derived*f, IndexUnits: s.IndexUnits + o.IndexUnits*f,
		StoredBytes: r(s.StoredBytes, o.StoredBytes), Billed: r(s.Billed, o.Billed), NewItems: r(s.NewItems, o.NewItems),
		NewEntries: r(s.NewEntries, o.NewEntries), PurgedBytes: r(s.PurgedBytes, o.PurgedBytes), Lost: r(s.Lost, o.Lost)}
}

// InvokeStat counts a function's invocations and their handler time.
// Lambda bills each invocation's time rounded up to the millisecond
// (Billed), and a cold start's Init too (ColdStarts, priced at the
// function's measured init duration, Prices.Init). CPU is the CPU time
// of the CPUCounted invocations whose CPU was measured (the real
// bootstraps', lambdarun.Function.InvokeCPU; in-process handlers share
// one process and have none): what Lambda's CPU share stretches
// (Prices.CPUShare).
type InvokeStat struct {
	Invocations int           `json:"invocations"`
	Duration    time.Duration `json:"durationNs"`
	Billed      time.Duration `json:"billedNs,omitempty"`
	ColdStarts  int           `json:"coldStarts,omitempty"`
	CPU         time.Duration `json:"cpuNs,omitempty"`
	CPUCounted  int           `json:"cpuInvocations,omitempty"`
}

func (s InvokeStat) plus(o InvokeStat, f float64) InvokeStat {
	return InvokeStat{Invocations: s.Invocations + int(math.Round(float64(o.Invocations)*f)),
		Duration: s.Duration + time.Duration(float64(o.Duration)*f), Billed: s.Billed + time.Duration(float64(o.Billed)*f),
		ColdStarts: s.ColdStarts + int(math.Round(float64(o.ColdStarts)*f)),
		CPU:        s.CPU + time.Duration(float64(o.CPU)*f), CPUCounted: s.CPUCounted + int(math.Round(float64(o.CPUCounted)*f))}
}

// CPUPerInvoke is the mean measured CPU time of an invocation, and
// whether any was measured.
func (s InvokeStat) CPUPerInvoke() (time.Duration, bool) {
	if s.CPUCounted == 0 {
		return 0, false
	}
	return s.CPU / time.Duration(s.CPUCounted), true
}

// Usage is a snapshot of a Meter: what every function called and how
// often it was invoked. Keys of Ops are function names (the ESM pollers are
// "esm:ring" and "esm:dispatch", since AWS bills their SQS requests to the
// account too), then "service:Operation" (e.g. "dynamodb:PutItem").
type Usage struct {
	Ops          map[string]map[string]OpStat `json:"ops"`
	Invokes      map[string]InvokeStat        `json:"invokes"`
	HTTPRequests int                          `json:"httpApiRequests"`
	// URLRequests are requests to the function URL (the executor API):
	// each costs its invocation only, with no API Gateway request.
	URLRequests int `json:"functionUrlRequests,omitempty"`
	// LogBytes is what each function wrote to its log (stdout, JSON at
	// the deployed level): CloudWatch Logs ingests it, plus Lambda's own
	// START/END/REPORT lines per invocation (see Cost).
	LogBytes map[string]int `json:"logBytes,omitempty"`
	// Metrics counts, per function, the embedded-metric-format values it
	// wrote per CloudWatch metric (namespace, name and dimensions: one
	// custom metric, billed for every hour it receives a value). A
	// metric with a positive count was written in the interval.
	Metrics map[string]map[string]int `json:"metrics,omitempty"`
	// Seconds is the interval's length (Sub of two snapshots).
	Seconds float64   `json:"seconds,omitempty"`
	at      time.Time // when a Snapshot was taken
}

// MetricSeries returns the custom metrics function fn (every function
// when fn is "") wrote in u, sorted.
func (u Usage) MetricSeries(fn string) []string {
	var out []string
	for f, ms := range u.Metrics {
		if fn != "" && f != fn {
			continue
		}
		for k, n := range ms {
			if n > 0 {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func addMetrics(dst map[string]map[string]int, src map[string]map[string]int, f float64) map[string]map[string]int {
	for fn, ms := range src {
		for k, n := range ms {
			v := int(math.Round(float64(n) * f))
			if v == 0 && f > 0 && n > 0 {
				v = 1 // a scaled share of a written metric is still written
			}
			if dst == nil {
				dst = map[string]map[string]int{}
			}
			if dst[fn] == nil {
				dst[fn] = map[string]int{}
			}
			dst[fn][k] += v
			if dst[fn][k] == 0 {
				delete(dst[fn], k)
			}
		}
	}
	return dst
}

// Sub returns u − before: the usage of the interval between two snapshots.
func (u Usage) Sub(before Usage) Usage {
	out := Usage{Ops: map[string]map[string]OpStat{}, Invokes: map[string]InvokeStat{}, HTTPRequests: u.HTTPRequests - before.HTTPRequests,
		URLRequests: u.URLRequests - before.URLRequests}
	for fn, ops := range u.Ops {
		for op, s := range ops {
			d := s.plus(before.Ops[fn][op], -1)
			if d == (OpStat{}) {
				continue
			}
			if out.Ops[fn] == nil {
				out.Ops[fn] = map[string]OpStat{}
			}
			out.Ops[fn][op] = d
		}
	}
	for fn, s := range u.Invokes {
		if d := s.plus(before.Invokes[fn], -1); d != (InvokeStat{}) {
			out.Invokes[fn] = d
		}
	}
	out.Metrics = addMetrics(addMetrics(nil, u.Metrics, 1), before.Metrics, -1)
	if !u.at.IsZero() && !before.at.IsZero() {
		out.Seconds = u.at.Sub(before.at).Seconds()
	}
	for fn, n := range u.LogBytes {
		if d := n - before.LogBytes[fn]; d != 0 {
			if out.LogBytes == nil {
				out.LogBytes = map[string]int{}
			}
			out.LogBytes[fn] = d
		}
	}
	return out
}

// Add returns u + o.
func (u Usage) Add(o Usage) Usage {
	out := Usage{Ops: map[string]map[string]OpStat{}, Invokes: map[string]InvokeStat{}, HTTPRequests: u.HTTPRequests + o.HTTPRequests,
		URLRequests: u.URLRequests + o.URLRequests}
	for _, src := range []Usage{u, o} {
		for fn, ops := range src.Ops {
			if out.Ops[fn] == nil {
				out.Ops[fn] = map[string]OpStat{}
			}
			for op, s := range ops {
				out.Ops[fn][op] = out.Ops[fn][op].plus(s, 1)
			}
		}
		for fn, s := range src.Invokes {
			out.Invokes[fn] = out.Invokes[fn].plus(s, 1)
		}
		out.Metrics = addMetrics(out.Metrics, src.Metrics, 1)
		out.Seconds += src.Seconds
		for fn, n := range src.LogBytes {
			if out.LogBytes == nil {
				out.LogBytes = map[string]int{}
			}
			out.LogBytes[fn] += n
		}
	}
	return out
}

// Only returns the part of u spent by function fn.
func (u Usage) Only(fn string) Usage {
	out := Usage{Ops: map[string]map[string]OpStat{}, Invokes: map[string]InvokeStat{}}
	if ops, ok := u.Ops[fn]; ok {
		out.Ops[fn] = ops
	}
	if s, ok := u.Invokes[fn]; ok {
		out.Invokes[fn] = s
	}
	if n, ok := u.LogBytes[fn]; ok {
		out.LogBytes = map[string]int{fn: n}
	}
	if ms, ok := u.Metrics[fn]; ok {
		out.Metrics = map[string]map[string]int{fn: ms}
	}
	out.Seconds = u.Seconds
	return out
}

// Scale returns u with every count multiplied by f (rounded to whole
// requests, entries and bytes): the share of an interval's usage that one
// period bears, e.g. a planning scan amortised over the fires it serves.
func (u Usage) Scale(f float64) Usage {
	r := func(x int) int { return int(math.Round(float64(x) * f)) }
	out := Usage{Ops: map[string]map[string]OpStat{}, Invokes: map[string]InvokeStat{}, HTTPRequests: r(u.HTTPRequests), URLRequests: r(u.URLRequests)}
	for fn, ops := range u.Ops {
		out.Ops[fn] = map[string]OpStat{}
		for op, s := range ops {
			out.Ops[fn][op] = OpStat{}.plus(s, f)
		}
	}
	for fn, s := range u.Invokes {
		out.Invokes[fn] = InvokeStat{}.plus(s, f)
	}
	out.Metrics = addMetrics(nil, u.Metrics, f)
	out.Seconds = u.Seconds * f
	for fn, n := range u.LogBytes {
		if out.LogBytes == nil {
			out.LogBytes = map[string]int{}
		}
		out.LogBytes[fn] = r(n)
	}
	return out
}

// Requests counts the requests of function fn (every function when fn is
// "") to service svc ("dynamodb", "sqs", "sns"; every service when "").
func (u Usage) Requests(fn, svc string) int {
	n := 0
	for f, ops := range u.Ops {
		if fn != "" && f != fn {
			continue
		}
		for key, s := range ops {
			if svc == "" || strings.HasPrefix(key, svc+":") {
				n += s.Requests
			}
		}
	}
	return n
}

// Meter counts AWS requests per function, service and operation, and
// Lambda invocations. It is safe for concurrent use.
type Meter struct {
	mu      sync.Mutex
	usage   Usage
	seq     int64
	running map[int64]inflight // invocations begun and not ended
	schema  map[string]tableSchema
	raw     *dynamodb.Client // un-metered, for the index accounting's reads
	hot     *hotTracker
	// excluded are the functions whose work is not counted (Exclude).
	excluded map[string]bool
}

// Exclude stops counting what function fn does from now on: its
// invocations, requests, units (and their share of the hottest items and
// the tables' loads), logs, metrics and HTTP API requests. A harness
// that reads through the admin API while it measures (the result lag's
// polls, through the web function) excludes that function, so that its
// reads are not priced as the workload's.
func (m *Meter) Exclude(fn string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.excluded == nil {
		m.excluded = map[string]bool{}
	}
	m.excluded[fn] = true
}

// counts says whether fn's work is counted (not excluded).
func (m *Meter) counts(fn string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.excluded[fn]
}

type inflight struct {
	fn    string
	start time.Time
}

// NewMeter returns an empty meter whose per-partition limits count wall-clock
// seconds.
func NewMeter() *Meter { return newMeter(clock.Real{}) }

// newMeter returns an empty meter whose per-partition limits count the
// seconds of c.
func newMeter(c clock.Clock) *Meter {
	return &Meter{usage: Usage{Ops: map[string]map[string]OpStat{}, Invokes: map[string]InvokeStat{}, LogBytes: map[string]int{}},
		running: map[int64]inflight{}, hot: newHotTracker(c)}
}

// Snapshot returns a copy of everything counted so far. Invocations still
// running count with the time they have run so far, so that the
// difference of two snapshots holds the share of a long invocation (the
// minute-long scan) that fell between them.
func (m *Meter) Snapshot() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := Usage{Ops: map[string]map[string]OpStat{}, Invokes: maps.Clone(m.usage.Invokes), HTTPRequests: m.usage.HTTPRequests,
		URLRequests: m.usage.URLRequests, LogBytes: maps.Clone(m.usage.LogBytes), Metrics: addMetrics(nil, m.usage.Metrics, 1),
		at: time.Now()}
	for fn, ops := range m.usage.Ops {
		out.Ops[fn] = maps.Clone(ops)
	}
	now := time.Now()
	for _, r := range m.running {
		s := out.Invokes[r.fn]
		s.Duration += now.Sub(r.start)
		s.Billed += now.Sub(r.start) // its end adds the rest, rounded up
		out.Invokes[r.fn] = s
	}
	return out
}

// Begin records the start of one invocation of fn (counted at once) and
// returns the function that records its end.
func (m *Meter) Begin(fn string) (end func()) {
	endCPU := m.BeginInvoke(fn)
	return func() { endCPU(0, false) }
}

// BeginInvoke is Begin for an invocation whose CPU time may be measured:
// its end records cpu when measured is true (InvokeStat.CPU).
func (m *Meter) BeginInvoke(fn string) (end func(cpu time.Duration, measured bool)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.excluded[fn] {
		return func(time.Duration, bool) {}
	}
	m.seq++
	id := m.seq
	start := time.Now()
	m.running[id] = inflight{fn: fn, start: start}
	s := m.usage.Invokes[fn]
	s.Invocations++
	m.usage.Invokes[fn] = s
	return func(cpu time.Duration, measured bool) {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.running, id)
		s := m.usage.Invokes[fn]
		d := time.Since(start)
		s.Duration += d
		s.Billed += BilledDuration(d)
		if measured {
			s.CPU += cpu
			s.CPUCounted++
		}
		m.usage.Invokes[fn] = s
	}
}

// BilledDuration is what Lambda bills for an invocation that ran d: d
// rounded up to the millisecond.
func BilledDuration(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1) / time.Millisecond * time.Millisecond
}

// ColdStart records that function fn started an execution environment:
// Lambda bills its Init (Prices.Init).
func (m *Meter) ColdStart(fn string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.excluded[fn] {
		return
	}
	s := m.usage.Invokes[fn]
	s.ColdStarts++
	m.usage.Invokes[fn] = s
}

// MetricRecords records the custom metrics that the embedded-metric-format
// records in p (JSON lines, as a function writes them to its log) define:
// one per namespace, metric name and set of dimension values. Lines that
// are not such records are ignored.
func (m *Meter) MetricRecords(fn string, p []byte) {
	if !m.counts(fn) {
		return
	}
	for _, key := range EMFMetrics(p) {
		m.mu.Lock()
		if m.usage.Metrics == nil {
			m.usage.Metrics = map[string]map[string]int{}
		}
		if m.usage.Metrics[fn] == nil {
			m.usage.Metrics[fn] = map[string]int{}
		}
		m.usage.Metrics[fn][key]++
		m.mu.Unlock()
	}
}

// EMFMetrics returns the custom metrics the embedded-metric-format
// records in p define, one key per metric value: "namespace/name" and
// the dimensions as "name=value", comma-separated in the directive's
// order.
func EMFMetrics(p []byte) []string {
	var out []string
	for _, line := range bytes.Split(p, []byte("\n")) {
		if !bytes.Contains(line, []byte(`"_aws"`)) {
			continue
		}
		var rec map[string]any
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		dir, _ := rec["_aws"].(map[string]any)
		cws, _ := dir["CloudWatchMetrics"].([]any)
		for _, cw := range cws {
			c, _ := cw.(map[string]any)
			ns, _ := c["Namespace"].(string)
			dimSets, _ := c["Dimensions"].([]any)
			metrics, _ := c["Metrics"].([]any)
			for _, ds := range dimSets {
				names, _ := ds.([]any)
				var dims []string
				for _, n := range names {
					name, _ := n.(string)
					dims = append(dims, fmt.Sprintf("%s=%v", name, rec[name]))
				}
				for _, md := range metrics {
					def, _ := md.(map[string]any)
					name, _ := def["Name"].(string)
					out = append(out, ns+"/"+name+" "+strings.Join(dims, ","))
				}
			}
		}
	}
	return out
}

// LogWrite records n bytes function fn wrote to its log.
func (m *Meter) LogWrite(fn string, n int) {
	m.mu.Lock()
	if !m.excluded[fn] {
		m.usage.LogBytes[fn] += n
	}
	m.mu.Unlock()
}

// HTTPRequest records one request through the HTTP API.
func (m *Meter) HTTPRequest() { m.HTTPRequestTo("") }

// HTTPRequestTo records one request through the HTTP API to function fn
// (none when fn is excluded).
func (m *Meter) HTTPRequestTo(fn string) {
	m.mu.Lock()
	if !m.excluded[fn] {
		m.usage.HTTPRequests++
	}
	m.mu.Unlock()
}

// URLRequest records one request to the function URL.
func (m *Meter) URLRequest() {
	m.mu.Lock()
	m.usage.URLRequests++
	m.mu.Unlock()
}

func (m *Meter) record(fn, key string, d OpStat) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.excluded[fn] {
		return
	}
	ops := m.usage.Ops[fn]
	if ops == nil {
		ops = map[string]OpStat{}
		m.usage.Ops[fn] = ops
	}
	ops[key] = ops[key].plus(d, 1)
}

// Middleware returns the SDK stack option (for a client's APIOptions) that
// meters every request of function fn. It asks DynamoDB for the consumed
// capacity of every request that can report it, bills a write that lost
// its condition at the item's size (DynamoDB charges the larger of the
// stored and the written item), records each request's units per item
// and partition key, and throttles, inside the SDK's retry loop, the
// requests that would push an item or key past DynamoDB's per-partition
// limits (see throttleMiddleware).
func (m *Meter) Middleware(fn string) func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		if err := m.throttleMiddleware(st); err != nil {
			return err
		}
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("xjobAWSEmuMeter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				askCapacity(in.Parameters)
				iw := m.beginIndexed(ctx, in.Parameters)
				ctx = middleware.WithStackValue(ctx, paramsKey{}, in.Parameters)
				out, md, err := next.HandleInitialize(ctx, in)
				svc := strings.ToLower(awsmiddleware.GetServiceID(ctx))
				op := awsmiddleware.GetOperationName(ctx)
				d := OpStat{Requests: 1, Entries: batchEntries(in.Parameters)}
				if err != nil {
					d.Errors = 1
				}
				var hits []indexHit
				switch svc {
				case "dynamodb":
					var ccf *ddbtypes.ConditionalCheckFailedException
					var thr *ddbtypes.ProvisionedThroughputExceededException
					d.Reported = capacity(out.Result)
					switch {
					case errors.As(err, &thr):
						// Throttled on every attempt: nothing billed.
					case d.Reported > 0:
					case errors.As(err, &ccf):
						d.Lost = 1
						d.Derived = lostUnits(in.Parameters, iw)
					default:
						d.Derived = DeriveUnits(op, in.Parameters)
					}
					if iw != nil && err == nil {
						d.IndexUnits, d.StoredBytes, d.NewItems, d.NewEntries, d.PurgedBytes, hits = iw.finish(ctx)
					}
					if bw, ok := in.Parameters.(*dynamodb.BatchWriteItemInput); ok && err == nil {
						d.IndexUnits, d.StoredBytes, d.NewItems, d.NewEntries, d.PurgedBytes = m.batchIndexed(bw)
					}
					if !errors.As(err, &thr) && m.counts(fn) {
						m.recordHot(in.Parameters, out.Result, d, op, hits)
					}
				case "sqs":
					d.Billed = sqsBilled(in.Parameters, out.Result)
				}
				m.record(fn, svc+":"+op, d)
				return out, md, err
			}), middleware.Before)
	}
}

// lostUnits is what a single-item write whose condition failed costs:
// ⌈size/1 KB⌉ of the larger of the item it would have written and the
// one stored (known when the meter read it before the write), at least 1.
func lostUnits(p any, iw *indexedWrite) float64 {
	size := 0
	if put, ok := p.(*dynamodb.PutItemInput); ok {
		size = itemSize(put.Item)
	}
	if iw != nil && iw.old != nil {
		size = max(size, itemSize(iw.old))
	}
	return max(1, math.Ceil(float64(size)/1024))
}

// askCapacity sets ReturnConsumedCapacity=TOTAL on every DynamoDB request
// that takes it.
func askCapacity(p any) {
	t := ddbtypes.ReturnConsumedCapacityTotal
	switch in := p.(type) {
	case *dynamodb.GetItemInput:
		in.ReturnConsumedCapacity = t
	case *dynamodb.PutItemInput:
		in.ReturnConsumedCapacity = t
	case *dynamodb.UpdateItemInput:
		in.ReturnConsumedCapacity = t
	case *dynamodb.DeleteItemInput:
		in.ReturnConsumedCapacity = t
	case *dynamodb.QueryInput:
		in.ReturnConsumedCapacity = t
	case *dynamodb.ScanInput:
		in.ReturnConsumedCapacity = t
	case *dynamodb.BatchGetItemInput:
		in.ReturnConsumedCapacity = t
	case *dynamodb.BatchWriteItemInput:
		in.ReturnConsumedCapacity = t
	case *dynamodb.TransactWriteItemsInput:
		in.ReturnConsumedCapacity = t
	case *dynamodb.TransactGetItemsInput:
		in.ReturnConsumedCapacity = t
	}
}

// capacity is the consumed capacity a DynamoDB response reports.
func capacity(res any) float64 {
	one := func(c *ddbtypes.ConsumedCapacity) float64 {
		if c == nil || c.CapacityUnits == nil {
			return 0
		}
		return *c.CapacityUnits
	}
	many := func(cs []ddbtypes.ConsumedCapacity) (t float64) {
		for i := range cs {
			t += one(&cs[i])
		}
		return t
	}
	switch out := res.(type) {
	case *dynamodb.GetItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.PutItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.ScanOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.BatchGetItemOutput:
		return many(out.ConsumedCapacity)
	case *dynamodb.BatchWriteItemOutput:
		return many(out.ConsumedCapacity)
	case *dynamodb.TransactWriteItemsOutput:
		return many(out.ConsumedCapacity)
	case *dynamodb.TransactGetItemsOutput:
		return many(out.ConsumedCapacity)
	}
	return 0
}

// DeriveUnits is the capacity assumed for a DynamoDB request that reported
// none (a failed conditional write reports nothing, yet AWS charges it):
// the minimum AWS bills for items under 1 KB — 1 write unit per write,
// 1 read unit per strongly consistent read, ½ per eventually consistent
// item read or query page, transactions double.
func DeriveUnits(op string, in any) float64 {
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem":
		return 1
	case "GetItem":
		if g, ok := in.(*dynamodb.GetItemInput); ok && g.ConsistentRead != nil && *g.ConsistentRead {
			return 1
		}
		return 0.5
	case "Query", "Scan":
		return 0.5
	case "BatchWriteItem":
		return float64(batchEntries(in))
	case "BatchGetItem":
		return 0.5 * float64(batchEntries(in))
	case "TransactWriteItems":
		if t, ok := in.(*dynamodb.TransactWriteItemsInput); ok {
			return 2 * float64(len(t.TransactItems))
		}
	case "TransactGetItems":
		if t, ok := in.(*dynamodb.TransactGetItemsInput); ok {
			return 2 * float64(len(t.TransactItems))
		}
	}
	return 0
}

// IsWrite says whether a DynamoDB operation consumes write units.
func IsWrite(op string) bool {
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems":
		return true
	}
	return false
}

// batchEntries counts the entries of a batch request (0 otherwise).
func batchEntries(p any) int {
	n := 0
	switch in := p.(type) {
	case *dynamodb.BatchWriteItemInput:
		for _, rs := range in.RequestItems {
			n += len(rs)
		}
	case *dynamodb.BatchGetItemInput:
		for _, ka := range in.RequestItems {
			n += len(ka.Keys)
		}
	case *sqs.SendMessageBatchInput:
		n = len(in.Entries)
	case *sqs.DeleteMessageBatchInput:
		n = len(in.Entries)
	}
	return n
}

// tableSchema is what the meter needs to know of a table to price its
// index writes and storage: key attributes and global secondary indexes.
type tableSchema struct {
	keys     []string
	gsis     []gsiSchema
	retained bool // items live for the log retention (TTL), so their storage is per trigger
}

type gsiSchema struct {
	name       string
	keys       []string // hash, then range if any
	projectAll bool
	include    []string // the non-key attributes of an INCLUDE projection
}

// Describe tells the meter the deployment's tables (dynamostore.TableSpecs)
// and gives it an un-metered client to read items with. Once described,
// every write to a table with global secondary indexes is priced exactly
// as DynamoDB bills it: the meter reads the item before (and, for an
// update, after) the write and adds, per index, 1 write unit to delete an
// old index entry and ⌈size/1 KB⌉ to write a new or changed one (an
// entry's size is the projected item's for ALL, the keys' for
// KEYS_ONLY, the keys' and the listed attributes' for INCLUDE). Neither dynalite nor a request's ConsumedCapacity
// (TOTAL) includes those units. retained names the tables whose items
// live as long as the log retention; their bytes (and their index
// entries') count as storage per trigger. The extra reads are the
// meter's, not the pipeline's: they go through client, not through the
// metered stack.
func (m *Meter) Describe(client *dynamodb.Client, specs []*dynamodb.CreateTableInput, retained ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.raw = client
	m.schema = map[string]tableSchema{}
	for _, s := range specs {
		ts := tableSchema{retained: slices.Contains(retained, aws.ToString(s.TableName))}
		for _, k := range s.KeySchema {
			ts.keys = append(ts.keys, aws.ToString(k.AttributeName))
		}
		for _, g := range s.GlobalSecondaryIndexes {
			gs := gsiSchema{name: aws.ToString(g.IndexName), projectAll: g.Projection != nil && g.Projection.ProjectionType == ddbtypes.ProjectionTypeAll}
			if g.Projection != nil && g.Projection.ProjectionType == ddbtypes.ProjectionTypeInclude {
				gs.include = g.Projection.NonKeyAttributes
			}
			for _, k := range g.KeySchema {
				gs.keys = append(gs.keys, aws.ToString(k.AttributeName))
			}
			ts.gsis = append(ts.gsis, gs)
		}
		m.schema[aws.ToString(s.TableName)] = ts
	}
}

// batchIndexed prices the index writes and storage of a BatchWriteItem
// without reading the items: a put is taken as a new item, a delete as
// removing one entry from every index (purges delete indexed logs).
// Unprocessed items are counted too (they are retried and billed then).
func (m *Meter) batchIndexed(in *dynamodb.BatchWriteItemInput) (units float64, stored, items, entries, purged int) {
	for table, reqs := range in.RequestItems {
		ts, _, ok := m.schemaOf(table)
		if !ok {
			continue
		}
		for _, r := range reqs {
			switch {
			case r.PutRequest != nil:
				it := r.PutRequest.Item
				_, expires := it[ttlAttr]
				for _, g := range ts.gsis {
					if hasAll(it, g.keys) {
						if g.projectAll {
							units += math.Ceil(float64(itemSize(it)) / 1024)
						} else {
							units++
						}
						if ts.retained {
							stored += indexEntryBytes
							if !expires {
								entries++
								purged += indexEntryBytes
							}
						}
					}
				}
				if ts.retained {
					stored += itemSize(it) + itemOverhead
					if !expires {
						items++
						purged += itemSize(it) + itemOverhead
					}
				}
			case r.DeleteRequest != nil:
				units += float64(len(ts.gsis))
			}
		}
	}
	return units, stored, items, entries, purged
}

func (m *Meter) schemaOf(table string) (tableSchema, *dynamodb.Client, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts, ok := m.schema[table]
	return ts, m.raw, ok && m.raw != nil
}

type item = map[string]ddbtypes.AttributeValue

// ttlAttr is the attribute the templates enable TTL on: DynamoDB deletes
// an item that carries it, free of charge, once it has passed.
const ttlAttr = dynamostore.AttrPurgeAt

// writeTarget is the table and key of a single-item write, and the item a
// put writes.
func writeTarget(p any) (table string, key, put item, ok bool) {
	switch in := p.(type) {
	case *dynamodb.PutItemInput:
		return aws.ToString(in.TableName), nil, in.Item, true
	case *dynamodb.UpdateItemInput:
		return aws.ToString(in.TableName), in.Key, nil, true
	case *dynamodb.DeleteItemInput:
		return aws.ToString(in.TableName), in.Key, nil, true
	}
	return "", nil, nil, false
}

// indexedWrite prices the index writes and storage of one single-item
// write; before runs ahead of the request and after once it succeeded.
type indexedWrite struct {
	m     *Meter
	ts    tableSchema
	raw   *dynamodb.Client
	table string
	key   item
	put   item
	old   item
	isDel bool
}

func (m *Meter) beginIndexed(ctx context.Context, p any) *indexedWrite {
	table, key, put, ok := writeTarget(p)
	if !ok {
		return nil
	}
	ts, raw, ok := m.schemaOf(table)
	if !ok || (len(ts.gsis) == 0 && !ts.retained) {
		return nil
	}
	w := &indexedWrite{m: m, ts: ts, raw: raw, table: table, key: key, put: put}
	_, w.isDel = p.(*dynamodb.DeleteItemInput)
	if w.key == nil {
		w.key = item{}
		for _, k := range ts.keys {
			w.key[k] = put[k]
		}
	}
	w.old = w.read(ctx)
	return w
}

func (w *indexedWrite) read(ctx context.Context) item {
	out, err := w.raw.GetItem(context.WithoutCancel(ctx), &dynamodb.GetItemInput{TableName: aws.String(w.table), Key: w.key, ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		return nil
	}
	return out.Item
}

// finish returns the index write units, the new stored bytes, the items
// and index entries created by the write that succeeded and the bytes of
// those the code must delete (no TTL attribute), and the index partitions
// its index writes landed in.
func (w *indexedWrite) finish(ctx context.Context) (units float64, stored, items, entries, purged int, hits []indexHit) {
	var cur item
	switch {
	case w.isDel:
	case w.put != nil:
		cur = w.put
	default:
		cur = w.read(ctx)
	}
	units, added := indexWritesAt(w.ts.gsis, w.old, cur, func(g gsiSchema, it item, u float64) {
		if len(g.keys) > 0 {
			hits = append(hits, indexHit{key: w.table + "/" + g.name + "|" + attrString(it[g.keys[0]]), units: u})
		}
	})
	if w.ts.retained {
		stored += added * indexEntryBytes
		entries = added
	}
	if w.ts.retained && cur != nil {
		stored += itemSize(cur) - itemSize(w.old) + itemOverhead
		if w.old != nil {
			stored -= itemOverhead
		} else {
			items = 1
		}
	}
	if _, expires := cur[ttlAttr]; expires || cur == nil {
		items, entries = 0, 0 // DynamoDB's TTL deletes it, for free
	} else {
		purged = stored
	}
	return units, stored, items, entries, purged, hits
}

// indexWrites is what one write that turns item old into cur (nil: no
// item) costs in the global secondary indexes gsis, as DynamoDB bills it:
// 1 unit to delete an entry, ⌈entry size / 1 KB⌉ to put or rewrite one;
// an entry whose keys and projected attributes did not change costs
// nothing. added counts the entries that did not exist before.
func indexWrites(gsis []gsiSchema, old, cur item) (units float64, added int) {
	return indexWritesAt(gsis, old, cur, nil)
}

// indexWritesAt is indexWrites that also tells hit (when not nil) the
// units each index write put on its index partition (the new entry's, or
// the deleted one's).
func indexWritesAt(gsis []gsiSchema, old, cur item, hit func(g gsiSchema, it item, units float64)) (units float64, added int) {
	for _, g := range gsis {
		before := units
		oldIn, newIn := hasAll(old, g.keys), hasAll(cur, g.keys)
		entry := 1.0 // index keys + table keys, well under 1 KB
		switch {
		case g.projectAll:
			entry = math.Ceil(float64(itemSize(cur)) / 1024)
		case len(g.include) > 0:
			entry = math.Ceil(float64(itemSize(pick(cur, append(slices.Clone(g.keys), g.include...)))+100) / 1024)
		}
		sameKeys := oldIn && newIn && equalAttrs(old, cur, g.keys)
		switch {
		case sameKeys && g.projectAll && !equalItems(old, cur):
			units += entry
		case sameKeys && len(g.include) > 0 && !equalAttrs(old, cur, g.include):
			units += entry
		case sameKeys:
		case oldIn && newIn:
			units += 1 + entry
		case oldIn:
			units++
		case newIn:
			units += entry
			added++
		}
		if hit != nil && units > before {
			if newIn {
				hit(g, cur, units-before)
			} else {
				hit(g, old, units-before)
			}
		}
	}
	return units, added
}

// DynamoDB bills storage with 100 bytes of overhead per item and per
// index entry.
const (
	itemOverhead    = 100
	indexEntryBytes = 100 + 40 // overhead + keys
)

func hasAll(it item, keys []string) bool {
	if it == nil {
		return false
	}
	for _, k := range keys {
		if _, ok := it[k]; !ok {
			return false
		}
	}
	return true
}

func equalAttrs(a, b item, keys []string) bool {
	for _, k := range keys {
		if !reflect.DeepEqual(a[k], b[k]) {
			return false
		}
	}
	return true
}

// pick returns the attributes of it named in names.
func pick(it item, names []string) item {
	out := item{}
	for _, k := range names {
		if v, ok := it[k]; ok {
			out[k] = v
		}
	}
	return out
}

func equalItems(a, b item) bool { return reflect.DeepEqual(a, b) }

// itemSize is DynamoDB's item size: attribute names plus values (numbers
// about one byte per two digits).
func itemSize(it item) int {
	n := 0
	for k, v := range it {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v ddbtypes.AttributeValue) int {
	switch x := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return len(x.Value)
	case *ddbtypes.AttributeValueMemberN:
		return (len(x.Value)+1)/2 + 1
	case *ddbtypes.AttributeValueMemberB:
		return len(x.Value)
	case *ddbtypes.AttributeValueMemberBOOL, *ddbtypes.AttributeValueMemberNULL:
		return 1
	case *ddbtypes.AttributeValueMemberSS:
		n := 0
		for _, s := range x.Value {
			n += len(s)
		}
		return n
	case *ddbtypes.AttributeValueMemberNS:
		n := 0
		for _, s := range x.Value {
			n += (len(s)+1)/2 + 1
		}
		return n
	case *ddbtypes.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *ddbtypes.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 1
}

// sqsChunk is SQS's billing unit: each 64 KB of a request's payload is
// one request.
const sqsChunk = 64 * 1024

// sqsBilled is the billed request count of one SQS call: its payload
// (message bodies and attributes sent, or received) in 64 KB chunks, at
// least 1.
func sqsBilled(in, out any) int {
	n := 0
	attrs := func(m map[string]sqstypes.MessageAttributeValue) {
		for k, v := range m {
			n += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
		}
	}
	switch x := in.(type) {
	case *sqs.SendMessageInput:
		n += len(aws.ToString(x.MessageBody))
		attrs(x.MessageAttributes)
	case *sqs.SendMessageBatchInput:
		for _, e := range x.Entries {
			n += len(aws.ToString(e.MessageBody))
			attrs(e.MessageAttributes)
		}
	}
	if r, ok := out.(*sqs.ReceiveMessageOutput); ok {
		for _, msg := range r.Messages {
			n += len(aws.ToString(msg.Body))
			attrs(msg.MessageAttributes)
		}
	}
	return max(1, (n+sqsChunk-1)/sqsChunk)
}
