package awsemu

import (
	"context"
	"maps"
	"strings"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
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
}

// InvokeStat counts a function's invocations and their handler time
// (Lambda bills the time, rounded up per invocation to the millisecond).
type InvokeStat struct {
	Invocations int           `json:"invocations"`
	Duration    time.Duration `json:"durationNs"`
}

// Usage is a snapshot of a Meter: what every function called and how
// often it was invoked. Keys of Ops are function names (the ESM pollers are
// "esm:ring" and "esm:dispatch", since AWS bills their SQS requests to the
// account too), then "service:Operation" (e.g. "dynamodb:PutItem").
type Usage struct {
	Ops          map[string]map[string]OpStat `json:"ops"`
	Invokes      map[string]InvokeStat        `json:"invokes"`
	HTTPRequests int                          `json:"httpApiRequests"`
}

// Sub returns u − before: the usage of the interval between two snapshots.
func (u Usage) Sub(before Usage) Usage {
	out := Usage{Ops: map[string]map[string]OpStat{}, Invokes: map[string]InvokeStat{}, HTTPRequests: u.HTTPRequests - before.HTTPRequests}
	for fn, ops := range u.Ops {
		for op, s := range ops {
			b := before.Ops[fn][op]
			d := OpStat{Requests: s.Requests - b.Requests, Errors: s.Errors - b.Errors, Entries: s.Entries - b.Entries,
				Reported: s.Reported - b.Reported, Derived: s.Derived - b.Derived}
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
		b := before.Invokes[fn]
		if d := (InvokeStat{Invocations: s.Invocations - b.Invocations, Duration: s.Duration - b.Duration}); d != (InvokeStat{}) {
			out.Invokes[fn] = d
		}
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
}

type inflight struct {
	fn    string
	start time.Time
}

// NewMeter returns an empty meter.
func NewMeter() *Meter {
	return &Meter{usage: Usage{Ops: map[string]map[string]OpStat{}, Invokes: map[string]InvokeStat{}}, running: map[int64]inflight{}}
}

// Snapshot returns a copy of everything counted so far. Invocations still
// running count with the time they have run so far, so that the
// difference of two snapshots holds the share of a long invocation (the
// minute-long scan) that fell between them.
func (m *Meter) Snapshot() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := Usage{Ops: map[string]map[string]OpStat{}, Invokes: maps.Clone(m.usage.Invokes), HTTPRequests: m.usage.HTTPRequests}
	for fn, ops := range m.usage.Ops {
		out.Ops[fn] = maps.Clone(ops)
	}
	now := time.Now()
	for _, r := range m.running {
		s := out.Invokes[r.fn]
		s.Duration += now.Sub(r.start)
		out.Invokes[r.fn] = s
	}
	return out
}

// Begin records the start of one invocation of fn (counted at once) and
// returns the function that records its end.
func (m *Meter) Begin(fn string) (end func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	id := m.seq
	start := time.Now()
	m.running[id] = inflight{fn: fn, start: start}
	s := m.usage.Invokes[fn]
	s.Invocations++
	m.usage.Invokes[fn] = s
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.running, id)
		s := m.usage.Invokes[fn]
		s.Duration += time.Since(start)
		m.usage.Invokes[fn] = s
	}
}

// HTTPRequest records one request through the HTTP API.
func (m *Meter) HTTPRequest() {
	m.mu.Lock()
	m.usage.HTTPRequests++
	m.mu.Unlock()
}

func (m *Meter) record(fn, key string, d OpStat) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ops := m.usage.Ops[fn]
	if ops == nil {
		ops = map[string]OpStat{}
		m.usage.Ops[fn] = ops
	}
	s := ops[key]
	s.Requests += d.Requests
	s.Errors += d.Errors
	s.Entries += d.Entries
	s.Reported += d.Reported
	s.Derived += d.Derived
	ops[key] = s
}

// Middleware returns the SDK stack option (for a client's APIOptions) that
// meters every request of function fn. It asks DynamoDB for the consumed
// capacity of every request that can report it.
func (m *Meter) Middleware(fn string) func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("xjobAWSEmuMeter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				askCapacity(in.Parameters)
				out, md, err := next.HandleInitialize(ctx, in)
				svc := strings.ToLower(awsmiddleware.GetServiceID(ctx))
				op := awsmiddleware.GetOperationName(ctx)
				d := OpStat{Requests: 1, Entries: batchEntries(in.Parameters)}
				if err != nil {
					d.Errors = 1
				}
				if svc == "dynamodb" {
					d.Reported = capacity(out.Result)
					if d.Reported == 0 {
						d.Derived = DeriveUnits(op, in.Parameters)
					}
				}
				m.record(fn, svc+":"+op, d)
				return out, md, err
			}), middleware.Before)
	}
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
