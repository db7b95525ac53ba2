package lambdaapp_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// meter counts AWS requests per function (operation, consumed capacity)
// and Lambda invocations with their handler time: the cost accounting of
// the end-to-end test.
type meter struct {
	mu   sync.Mutex
	ops  map[string]map[string]*opStat // function → "dynamodb:PutItem" → stat
	inv  map[string]*invStat
	http int // HTTP API requests
	// seen keeps every operation each function called, setup included;
	// reset leaves it alone (the IAM check covers the whole test).
	seen map[string]map[string]bool
}

type opStat struct {
	N        int
	Reported float64 // capacity units the emulator reported (ReturnConsumedCapacity TOTAL)
	Derived  float64 // units derived when none were reported
	Entries  int     // SQS batch entries / DynamoDB batch items
}

type invStat struct {
	N   int
	Dur time.Duration
}

func newMeter() *meter {
	return &meter{ops: map[string]map[string]*opStat{}, inv: map[string]*invStat{}, seen: map[string]map[string]bool{}}
}

func (m *meter) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops, m.inv, m.http = map[string]map[string]*opStat{}, map[string]*invStat{}, 0
}

// middleware returns the SDK stack option that meters one function's client.
func (m *meter) middleware(fn string) func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("xjobMeter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				askCapacity(in.Parameters)
				out, md, err := next.HandleInitialize(ctx, in)
				svc := strings.ToLower(awsmiddleware.GetServiceID(ctx))
				op := awsmiddleware.GetOperationName(ctx)
				rep, entries := capacity(out.Result), batchEntries(in.Parameters)
				derived := 0.0
				if rep == 0 && svc == "dynamodb" {
					derived = deriveUnits(op, in.Parameters, out.Result, err)
				}
				m.mu.Lock()
				defer m.mu.Unlock()
				if m.ops[fn] == nil {
					m.ops[fn] = map[string]*opStat{}
				}
				key := svc + ":" + op
				if m.seen[fn] == nil {
					m.seen[fn] = map[string]bool{}
				}
				m.seen[fn][key] = true
				s := m.ops[fn][key]
				if s == nil {
					s = &opStat{}
					m.ops[fn][key] = s
				}
				s.N++
				s.Reported += rep
				s.Derived += derived
				s.Entries += entries
				return out, md, err
			}), middleware.Before)
	}
}

func (m *meter) invoked(fn string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.inv[fn]
	if s == nil {
		s = &invStat{}
		m.inv[fn] = s
	}
	s.N++
	s.Dur += d
}

func (m *meter) httpRequest() {
	m.mu.Lock()
	m.http++
	m.mu.Unlock()
}

// iamActions maps metered operations to the IAM actions that allow them.
func (m *meter) iamActions(fn string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var acts []string
	for key := range m.seen[fn] {
		svc, op, _ := strings.Cut(key, ":")
		switch op { // SQS batch calls are authorised by their single-message action
		case "SendMessageBatch":
			op = "SendMessage"
		case "DeleteMessageBatch":
			op = "DeleteMessage"
		}
		acts = append(acts, svc+":"+op)
	}
	sort.Strings(acts)
	return slices.Compact(acts)
}

// askCapacity sets ReturnConsumedCapacity=TOTAL on every DynamoDB request
// that takes it, so the emulator (or AWS) reports the units spent.
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
	}
}

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
	}
	return 0
}

// deriveUnits is the fallback when no capacity was reported (a failed
// conditional write reports none, yet AWS charges it): the minimum AWS
// bills — 1 WRU per write (items here are < 1 KB), 1 RRU per strongly
// consistent read, ½ per eventually consistent item read or query page.
func deriveUnits(op string, in, out any, err error) float64 {
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
	}
	return 0
}

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
	default:
		return sqsEntries(p)
	}
	return n
}

// units splits a function's DynamoDB units into writes and reads.
func (m *meter) units(fn string) (wru, rru float64, reported bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, s := range m.ops[fn] {
		svc, op, _ := strings.Cut(key, ":")
		if svc != "dynamodb" {
			continue
		}
		u := s.Reported + s.Derived
		if s.Reported > 0 {
			reported = true
		}
		switch op {
		case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem":
			wru += u
		default:
			rru += u
		}
	}
	return wru, rru, reported
}

func (m *meter) requests(fn, svc string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for key, s := range m.ops[fn] {
		if strings.HasPrefix(key, svc+":") {
			n += s.N
		}
	}
	return n
}

func (m *meter) opsLine(fn string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []string
	for k := range m.ops[fn] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		s := m.ops[fn][k]
		fmt.Fprintf(&b, " %s×%d", strings.TrimPrefix(strings.TrimPrefix(k, "dynamodb:"), "sqs:"), s.N)
	}
	return b.String()
}
