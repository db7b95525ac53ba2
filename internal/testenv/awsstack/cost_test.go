package awsstack

import (
	"math"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestUsageCost(t *testing.T) {
	t.Parallel()
	u := Usage{
		Ops: map[string]map[string]OpStat{
			"dispatch": {"dynamodb:PutItem": {Requests: 100, Reported: 100}, "dynamodb:GetItem": {Requests: 100, Derived: 50}},
			"scan":     {"sqs:SendMessageBatch": {Requests: 10, Entries: 100}},
			"esm:ring": {"sqs:ReceiveMessage": {Requests: 40}},
			"callback": {"sns:Publish": {Requests: 2}},
		},
		Invokes:      map[string]InvokeStat{"dispatch": {Invocations: 10, Duration: 10 * time.Second}},
		HTTPRequests: 5,
	}
	p := Prices{WRU: 1, RRU: 0.5, SQSRequest: 0.25, SNSRequest: 2, LambdaRequest: 3, LambdaGBSecond: 4, HTTPRequest: 10, MemoryGB: 0.5}
	c := u.Cost(100, p)
	perM := 1e6 / 100.0
	wantTotal := (100*1+50*0.5)*perM + (10+40)*0.25*perM + 2*2*perM + 10*3*perM + 10*0.5*4*perM + 5*10*perM
	if !near(c.TotalPerM, wantTotal) {
		t.Errorf("total $/M = %v, want %v", c.TotalPerM, wantTotal)
	}
	if !near(c.AWSRequestsPerTrigger, (200+10+40+2)/100.0) || !near(c.DynamoDBPerTrigger, 2) || !near(c.SQSPerTrigger, 0.52) {
		t.Errorf("per trigger: aws %v ddb %v sqs %v", c.AWSRequestsPerTrigger, c.DynamoDBPerTrigger, c.SQSPerTrigger)
	}
	if !near(c.InvocationsPerTrigger, 0.1) || !near(c.HTTPPerTrigger, 0.05) || !c.CapacityReported {
		t.Errorf("invocations %v http %v reported %v", c.InvocationsPerTrigger, c.HTTPPerTrigger, c.CapacityReported)
	}
	var order []string
	for _, f := range c.Functions {
		order = append(order, f.Function)
		if f.Function == "dispatch" {
			if !near(f.WRUPerTrigger, 1) || !near(f.RRUPerTrigger, 0.5) || !near(f.MsPerInvoke, 1000) {
				t.Errorf("dispatch row %+v", f)
			}
			if !near(f.LambdaDurationPerM, 10*0.5*4*perM) {
				t.Errorf("dispatch duration $/M %v", f.LambdaDurationPerM)
			}
		}
	}
	if want := []string{"scan", "dispatch", "callback", "esm:ring"}; len(order) != len(want) || order[0] != want[0] || order[3] != want[3] {
		t.Errorf("function order %v, want %v", order, want)
	}
	if z := u.Cost(0, p); z.TotalPerM != 0 || len(z.Functions) != 0 {
		t.Errorf("zero triggers: %+v", z)
	}
}

// TestUsageCostBillsWhatLambdaAndCloudWatchBill: Lambda time as billed
// (each invocation rounded up to the millisecond), cold starts' Init at
// the function's measured init duration, custom metrics per metric and
// month for the interval's share of a month, and log storage for the
// retention on top of ingestion.
func TestUsageCostBillsWhatLambdaAndCloudWatchBill(t *testing.T) {
	t.Parallel()
	const window = 60.0 // seconds
	u := Usage{
		Invokes:  map[string]InvokeStat{"ring": {Invocations: 3, Duration: 1500 * time.Microsecond, Billed: 3 * time.Millisecond, ColdStarts: 2}},
		LogBytes: map[string]int{"ring": 1e9},
		Metrics: map[string]map[string]int{"ring": {"xjob/Triggers FunctionName=ring": 2, "xjob/LatenessMaxMs FunctionName=ring": 1, "xjob/Gone FunctionName=ring": 0},
			"scan": {"xjob/ScanCompleted FunctionName=scan": 1}},
		Seconds: window,
	}
	p := Prices{LambdaGBSecond: 1, MemoryGB: 1, CustomMetricMonth: 0.30, LogsIngestGB: 0.5, LogsStorageGBMonth: 0.03, LogsRetentionMonths: 1,
		Init: map[string]time.Duration{"ring": 120*time.Millisecond + 400*time.Microsecond}}
	c := u.Cost(1_000_000, p) // $/M at 1 M triggers: the interval's dollars
	var ring, scan FunctionCost
	for _, f := range c.Functions {
		switch f.Function {
		case "ring":
			ring = f
		case "scan":
			scan = f
		}
	}
	tests := []struct {
		name      string
		got, want float64
	}{
		{"duration: 3 invocations rounded up to 1 ms each", ring.LambdaDurationPerM, 0.003},
		{"init: 2 cold starts of 121 ms", ring.LambdaInitPerM, 2 * 0.121},
		{"ring's 2 written metrics for a minute", ring.MetricsPerM, 2 * 0.30 * window / MonthSeconds},
		{"scan's 1 metric", scan.MetricsPerM, 0.30 * window / MonthSeconds},
		{"logs ingestion", ring.LogsPerM, 0.5},
		{"logs storage for a month", ring.LogsStoragePerM, 0.03},
	}
	for _, tt := range tests {
		if !near(tt.got, tt.want) {
			t.Errorf("%s: $%v, want $%v", tt.name, tt.got, tt.want)
		}
	}
	if ring.MetricSeries != 2 || ring.ColdStarts != 2 {
		t.Errorf("ring row: %d metrics, %d cold starts; want 2 and 2", ring.MetricSeries, ring.ColdStarts)
	}
}

func TestBilledDuration(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want time.Duration }{
		{0, 0}, {time.Nanosecond, time.Millisecond}, {time.Millisecond, time.Millisecond},
		{time.Millisecond + 1, 2 * time.Millisecond}, {326*time.Millisecond + 200*time.Microsecond, 327 * time.Millisecond},
	} {
		if got := BilledDuration(tt.in); got != tt.want {
			t.Errorf("BilledDuration(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestEMFMetrics: one custom metric per namespace, name and dimension
// values of an embedded-metric-format record; other log lines are none.
func TestEMFMetrics(t *testing.T) {
	t.Parallel()
	lines := `{"level":"INFO","msg":"not a metric"}
{"FunctionName":"xjob-ring","Triggers":3,"LatenessMaxMs":4,"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"xjob","Dimensions":[["FunctionName"]],"Metrics":[{"Name":"LatenessMaxMs","Unit":"Milliseconds"},{"Name":"Triggers","Unit":"Count"}]}]}}
{"FunctionName":"xjob-dispatch","JobId":"7","JobResults":1,"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"xjob","Dimensions":[["FunctionName","JobId"]],"Metrics":[{"Name":"JobResults","Unit":"Count"}]}]}}
`
	got := EMFMetrics([]byte(lines))
	want := []string{"xjob/LatenessMaxMs FunctionName=xjob-ring", "xjob/Triggers FunctionName=xjob-ring", "xjob/JobResults FunctionName=xjob-dispatch,JobId=7"}
	if len(got) != len(want) {
		t.Fatalf("metrics %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("metric %d %q, want %q", i, got[i], want[i])
		}
	}
	m := NewMeter()
	m.MetricRecords("ring", []byte(lines))
	m.MetricRecords("ring", []byte(lines))
	if s := m.Snapshot().MetricSeries(""); len(s) != 3 {
		t.Errorf("series after the same records twice: %q, want 3", s)
	}
}

func TestUsageSub(t *testing.T) {
	t.Parallel()
	before := Usage{Ops: map[string]map[string]OpStat{"ring": {"sqs:SendMessageBatch": {Requests: 3, Entries: 20}}},
		Invokes: map[string]InvokeStat{"ring": {Invocations: 2, Duration: time.Second}}, HTTPRequests: 1}
	after := Usage{Ops: map[string]map[string]OpStat{
		"ring": {"sqs:SendMessageBatch": {Requests: 5, Entries: 30}},
		"scan": {"dynamodb:Query": {Requests: 4, Reported: 2}}},
		Invokes: map[string]InvokeStat{"ring": {Invocations: 2, Duration: time.Second}}, HTTPRequests: 4}
	d := after.Sub(before)
	if got := d.Ops["ring"]["sqs:SendMessageBatch"]; got != (OpStat{Requests: 2, Entries: 10}) {
		t.Errorf("ring diff %+v", got)
	}
	if got := d.Ops["scan"]["dynamodb:Query"]; got != (OpStat{Requests: 4, Reported: 2}) {
		t.Errorf("scan diff %+v", got)
	}
	if _, ok := d.Invokes["ring"]; ok || d.HTTPRequests != 3 {
		t.Errorf("invokes %+v http %d", d.Invokes, d.HTTPRequests)
	}
	if d.Requests("", "") != 6 || d.Requests("scan", "dynamodb") != 4 || d.Requests("ring", "dynamodb") != 0 {
		t.Errorf("requests: all %d scan/ddb %d", d.Requests("", ""), d.Requests("scan", "dynamodb"))
	}
}

func TestUsageAddScale(t *testing.T) {
	t.Parallel()
	a := Usage{Ops: map[string]map[string]OpStat{"ring": {"sqs:SendMessageBatch": {Requests: 3, Entries: 20}}},
		Invokes: map[string]InvokeStat{"ring": {Invocations: 2, Duration: time.Second}}, HTTPRequests: 1}
	b := Usage{Ops: map[string]map[string]OpStat{"scan": {"dynamodb:UpdateItem": {Requests: 10, Reported: 10, IndexUnits: 20}}},
		Invokes: map[string]InvokeStat{"scan": {Invocations: 1, Duration: 2 * time.Second}}}
	sum := a.Add(b.Scale(0.5))
	if got := sum.Ops["scan"]["dynamodb:UpdateItem"]; got != (OpStat{Requests: 5, Reported: 5, IndexUnits: 10}) {
		t.Errorf("scaled scan %+v", got)
	}
	if got := sum.Ops["ring"]["sqs:SendMessageBatch"]; got != (OpStat{Requests: 3, Entries: 20}) {
		t.Errorf("ring %+v", got)
	}
	if got := sum.Invokes["scan"]; got != (InvokeStat{Invocations: 1, Duration: time.Second}) || sum.HTTPRequests != 1 {
		t.Errorf("invokes %+v http %d", sum.Invokes, sum.HTTPRequests)
	}
}

func TestDeriveUnits(t *testing.T) {
	t.Parallel()
	batch := &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{"a": make([]ddbtypes.WriteRequest, 3), "b": make([]ddbtypes.WriteRequest, 2)}}
	tests := []struct {
		op   string
		in   any
		want float64
	}{
		{"PutItem", &dynamodb.PutItemInput{}, 1},
		{"UpdateItem", &dynamodb.UpdateItemInput{}, 1},
		{"GetItem", &dynamodb.GetItemInput{}, 0.5},
		{"GetItem", &dynamodb.GetItemInput{ConsistentRead: aws.Bool(true)}, 1},
		{"Query", &dynamodb.QueryInput{}, 0.5},
		{"BatchWriteItem", batch, 5},
		{"TransactWriteItems", &dynamodb.TransactWriteItemsInput{TransactItems: make([]ddbtypes.TransactWriteItem, 2)}, 4},
		{"DescribeTable", &dynamodb.DescribeTableInput{}, 0},
	}
	for _, tt := range tests {
		if got := DeriveUnits(tt.op, tt.in); got != tt.want {
			t.Errorf("DeriveUnits(%s) = %v, want %v", tt.op, got, tt.want)
		}
	}
}

func TestDeletable(t *testing.T) {
	t.Parallel()
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "a", ReceiptHandle: "ra"}, {MessageId: "b", ReceiptHandle: "rb"}, {MessageId: "c", ReceiptHandle: "rc"}}}
	del := deletable(ev, events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "b"}}})
	if len(del) != 2 || *del[0].ReceiptHandle != "ra" || *del[1].ReceiptHandle != "rc" || *del[0].Id == *del[1].Id {
		t.Errorf("deletable = %+v", del)
	}
	if len(deletable(ev, events.SQSEventResponse{})) != 3 {
		t.Error("no failures: every record is deleted")
	}
}

func TestMeterInflight(t *testing.T) {
	t.Parallel()
	m := NewMeter()
	end := m.Begin("scan")
	a := m.Snapshot()
	if s := a.Invokes["scan"]; s.Invocations != 1 {
		t.Fatalf("begun invocation not counted: %+v", s)
	}
	end()
	b := m.Snapshot()
	if b.Invokes["scan"].Duration < a.Invokes["scan"].Duration || len(m.running) != 0 {
		t.Errorf("ended invocation: before %+v after %+v running %d", a.Invokes, b.Invokes, len(m.running))
	}
	if d := b.Sub(a).Invokes["scan"]; d.Invocations != 0 {
		t.Errorf("window diff counts the invocation twice: %+v", d)
	}
}

func TestIndexWrites(t *testing.T) {
	t.Parallel()
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	due := gsiSchema{name: "due", keys: []string{"dueShard", "dueKey"}, projectAll: true}
	byJob := gsiSchema{name: "byJob", keys: []string{"jobId", "timeKey"}}
	byTime := gsiSchema{name: "byTime", keys: []string{"part", "tkey"}, include: []string{"lo"}}
	page := item{"pk": s("p1"), "part": s("1"), "tkey": s("t"), "lo": s("5"), "b": s("logs")}
	pageBody := item{"pk": s("p1"), "part": s("1"), "tkey": s("t"), "lo": s("5"), "b": s("more logs")}
	pageLo := item{"pk": s("p1"), "part": s("1"), "tkey": s("t"), "lo": s("4"), "b": s("logs")}
	running := item{"id": s("1"), "dueShard": s("0"), "dueKey": s("a"), "jobId": s("7"), "timeKey": s("t")}
	advanced := item{"id": s("1"), "dueShard": s("0"), "dueKey": s("b"), "jobId": s("7"), "timeKey": s("t")}
	renamed := item{"id": s("1"), "dueShard": s("0"), "dueKey": s("a"), "jobId": s("7"), "timeKey": s("t"), "desc": s("x")}
	stopped := item{"id": s("1"), "jobId": s("7"), "timeKey": s("t")}
	tests := []struct {
		name      string
		old, cur  item
		wantUnits float64
		wantAdded int
		gsis      []gsiSchema
	}{
		{"INCLUDE: a change outside the projection writes nothing", page, pageBody, 0, 0, []gsiSchema{byTime}},
		{"INCLUDE: a projected attribute change rewrites the entry", page, pageLo, 1, 0, []gsiSchema{byTime}},
		{"INCLUDE: create", nil, page, 1, 1, []gsiSchema{byTime}},
		{"create: one entry per index", nil, running, 2, 2, nil},
		{"due key moves: delete + put in due only", running, advanced, 2, 0, nil},
		{"non-key change: ALL index rewritten, KEYS_ONLY not", running, renamed, 1, 0, nil},
		{"leaves the sparse index: one delete", running, stopped, 1, 0, nil},
		{"unchanged: nothing", running, running, 0, 0, nil},
		{"delete: one per index", running, nil, 2, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gsis := tt.gsis
			if gsis == nil {
				gsis = []gsiSchema{due, byJob}
			}
			u, a := indexWrites(gsis, tt.old, tt.cur)
			if u != tt.wantUnits || a != tt.wantAdded {
				t.Errorf("units %v added %d, want %v %d", u, a, tt.wantUnits, tt.wantAdded)
			}
		})
	}
}

func TestSQSBilledPer64KB(t *testing.T) {
	t.Parallel()
	body := func(n int) *string { b := make([]byte, n); return aws.String(string(b)) }
	tests := []struct {
		name string
		in   any
		want int
	}{
		{"small send", &sqs.SendMessageInput{MessageBody: body(10)}, 1},
		{"batch of 10 × 20 KB", &sqs.SendMessageBatchInput{Entries: func() []sqstypes.SendMessageBatchRequestEntry {
			var es []sqstypes.SendMessageBatchRequestEntry
			for range 10 {
				es = append(es, sqstypes.SendMessageBatchRequestEntry{MessageBody: body(20 << 10)})
			}
			return es
		}()}, 4},
		{"exactly 64 KB", &sqs.SendMessageInput{MessageBody: body(64 << 10)}, 1},
		{"empty receive", &sqs.ReceiveMessageInput{}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := sqsBilled(tt.in, nil); got != tt.want {
				t.Errorf("billed %d, want %d", got, tt.want)
			}
		})
	}
}

// Items that carry the TTL attribute retire free (DynamoDB's TTL deletes
// them): only those without it are priced for the delete the code makes
// at the end of the retention, though both are stored.
func TestRetentionPricesOnlyItemsWithoutTTL(t *testing.T) {
	t.Parallel()
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	m := NewMeter()
	m.Describe(dynamodb.New(dynamodb.Options{}), []*dynamodb.CreateTableInput{{TableName: aws.String("logs"),
		KeySchema: []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk")}, {AttributeName: aws.String("sk")}},
		GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndex{{IndexName: aws.String("byTime"),
			KeySchema: []ddbtypes.KeySchemaElement{{AttributeName: aws.String("part")}, {AttributeName: aws.String("tkey")}}}}}}, "logs")
	expiring := item{"pk": s("p1"), "sk": s("p"), "part": s("1"), "tkey": s("t"), ttlAttr: &ddbtypes.AttributeValueMemberN{Value: "9"}}
	kept := item{"pk": s("p2"), "sk": s("p"), "part": s("1"), "tkey": s("u")}
	put := func(its ...item) *dynamodb.BatchWriteItemInput {
		reqs := make([]ddbtypes.WriteRequest, len(its))
		for i, it := range its {
			reqs[i] = ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: it}}
		}
		return &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{"logs": reqs}}
	}
	retention := func(in *dynamodb.BatchWriteItemInput) (stored int, retire float64) {
		units, stored, items, entries, purged := m.batchIndexed(in)
		u := Usage{Ops: map[string]map[string]OpStat{"fn": {"dynamodb:BatchWriteItem": {Requests: 1, IndexUnits: units,
			StoredBytes: stored, NewItems: items, NewEntries: entries, PurgedBytes: purged}}}}
		return stored, u.Cost(1, Prices{WRU: 1}).Functions[0].RetentionPerM / 1e6
	}
	if stored, retire := retention(put(expiring)); stored == 0 || retire != 0 {
		t.Errorf("an item with a TTL: stored %d bytes, retention %v units; want stored, 0 units", stored, retire)
	}
	stored, retire := retention(put(kept))
	if want := 0.5 + float64(stored)/1024 + 1; !near(retire, want) {
		t.Errorf("an item without a TTL: retention %v units, want %v (item, bytes, index entry)", retire, want)
	}
	if _, both := retention(put(expiring, kept)); !near(both, retire) {
		t.Errorf("both: retention %v units, want the TTL-less item's %v", both, retire)
	}
}

func TestCPUStretch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cpu  time.Duration
		mb   int
		want time.Duration
	}{
		{100 * time.Millisecond, 256, time.Duration(float64(100*time.Millisecond) * (1769.0/256 - 1))}, // ~591 ms
		{100 * time.Millisecond, 1769, 0},
		{100 * time.Millisecond, 3008, 0}, // a second vCPU is not modelled
		{0, 128, 0},
		{10 * time.Millisecond, 128, time.Duration(float64(10*time.Millisecond) * (1769.0/128 - 1))},
		{10 * time.Millisecond, 0, 0},
	}
	for _, tt := range tests {
		if got := CPUStretch(tt.cpu, tt.mb); got != tt.want {
			t.Errorf("CPUStretch(%v, %d) = %v, want %v", tt.cpu, tt.mb, got, tt.want)
		}
	}
}

// TestCostCPUShare prices an invocation's CPU-bound part at the
// function's CPU share: its measured CPU, or the probe's mean when the
// usage has none, stretched at the function's memory; the waiting is
// billed as measured, and the model off bills the old figure.
func TestCostCPUShare(t *testing.T) {
	t.Parallel()
	u := Usage{Invokes: map[string]InvokeStat{
		// 10 invocations of 100 ms, 20 ms CPU each, measured.
		"ring": {Invocations: 10, Duration: time.Second, Billed: time.Second, ColdStarts: 1, CPU: 200 * time.Millisecond, CPUCounted: 10},
		// In-process: no CPU of its own; the probe's 4 ms applies.
		"callback": {Invocations: 10, Duration: 100 * time.Millisecond, Billed: 100 * time.Millisecond},
	}}
	base := Prices{LambdaGBSecond: 1, MemoryGB: 0.25, CPU: map[string]time.Duration{"callback": 4 * time.Millisecond, "ring": time.Second},
		Init: map[string]time.Duration{"ring": 50 * time.Millisecond}, InitCPU: map[string]time.Duration{"ring": 10 * time.Millisecond}}
	k256, k512 := 1769.0/256-1, 1769.0/512-1
	tests := []struct {
		name                  string
		share                 bool
		memory                map[string]int
		ring, callback, added float64 // seconds billed (×GB later): ring, callback, and the model's addition (ring+callback)
		ringInit              float64
		ringMB                int
	}{
		{"model off", false, nil, 1, 0.1, 0, 0.050, 256},
		{"256 MB", true, nil, 1 + 10*0.020*k256, 0.1 + 10*0.004*k256, 10*0.020*k256 + 10*0.004*k256, math.Ceil((0.050+0.010*k256)*1000) / 1000, 256},
		{"ring at 512 MB", true, map[string]int{"ring": 512}, 1 + 10*0.020*k512, 0.1 + 10*0.004*k256, 0, math.Ceil((0.050+0.010*k512)*1000) / 1000, 512},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := base
			p.CPUShare, p.Memory = tt.share, tt.memory
			c := u.Cost(1e6, p) // per million = per trigger × 1e6: one trigger a million
			got := map[string]FunctionCost{}
			for _, f := range c.Functions {
				got[f.Function] = f
			}
			r, cb := got["ring"], got["callback"]
			ringGB := float64(tt.ringMB) / 1024
			approx := func(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }
			if !approx(r.LambdaDurationPerM, tt.ring*ringGB) || !approx(cb.LambdaDurationPerM, tt.callback*0.25) {
				t.Errorf("duration ring %v callback %v, want %v %v", r.LambdaDurationPerM, cb.LambdaDurationPerM, tt.ring*ringGB, tt.callback*0.25)
			}
			if !approx(r.LambdaInitPerM, tt.ringInit*ringGB) {
				t.Errorf("ring init %v, want %v", r.LambdaInitPerM, tt.ringInit*ringGB)
			}
			if r.MemoryMB != tt.ringMB || !near(r.CPUMsPerInvoke, 20) || !near(cb.CPUMsPerInvoke, 4) {
				t.Errorf("ring %d MB, CPU ms ring %v callback %v", r.MemoryMB, r.CPUMsPerInvoke, cb.CPUMsPerInvoke)
			}
			if tt.memory == nil {
				added := (r.CPUSharePerM + cb.CPUSharePerM) - float64(r.ColdStarts)*(tt.ringInit-0.050)*0.25
				if !approx(added, tt.added*0.25) {
					t.Errorf("model adds %v, want %v", added, tt.added*0.25)
				}
			}
			if !tt.share && (r.StretchMsPerInvoke != 0 || r.CPUSharePerM != 0) {
				t.Errorf("model off still stretches: %+v", r)
			}
		})
	}
}

// TestMeterRecordsCPU counts the CPU of the invocations that measured
// it, and only theirs, for the mean an invocation.
func TestMeterRecordsCPU(t *testing.T) {
	t.Parallel()
	m := NewMeter()
	m.BeginInvoke("ring")(30*time.Millisecond, true)
	m.BeginInvoke("ring")(10*time.Millisecond, true)
	m.BeginInvoke("ring")(0, false) // never replied: no CPU of its own
	m.Begin("callback")()
	u := m.Snapshot()
	if cpu, ok := u.Invokes["ring"].CPUPerInvoke(); !ok || cpu != 20*time.Millisecond || u.Invokes["ring"].Invocations != 3 {
		t.Errorf("ring %+v: CPU an invocation %v %v, want 20ms over the 2 measured", u.Invokes["ring"], cpu, ok)
	}
	if _, ok := u.Invokes["callback"].CPUPerInvoke(); ok {
		t.Errorf("callback %+v: CPU measured without any", u.Invokes["callback"])
	}
}
