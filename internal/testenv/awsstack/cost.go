package awsstack

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
)

// Prices are the unit prices a cost estimate uses, in US dollars.
type Prices struct {
	WRU            float64 `json:"wru"`            // DynamoDB on-demand write request unit
	RRU            float64 `json:"rru"`            // DynamoDB on-demand read request unit
	SQSRequest     float64 `json:"sqsRequest"`     // SQS standard queue request
	SNSRequest     float64 `json:"snsRequest"`     // SNS publish
	LambdaRequest  float64 `json:"lambdaRequest"`  // Lambda invocation
	LambdaGBSecond float64 `json:"lambdaGBSecond"` // Lambda duration, arm64
	HTTPRequest    float64 `json:"httpRequest"`    // API Gateway HTTP API request
	// StorageGBMonth is DynamoDB standard storage per GB-month; retained
	// bytes (OpStat.StoredBytes) are held for one month (the default log
	// retention, 30 days).
	StorageGBMonth float64 `json:"storageGBMonth"`
	// PITRGBMonth is point-in-time recovery (continuous backups) per
	// GB-month of table size, on the same retained bytes.
	PITRGBMonth float64 `json:"pitrGBMonth"`
	// LogsIngestGB is CloudWatch Logs ingestion per GB: each function's
	// own output plus LambdaLogBytes per invocation.
	LogsIngestGB float64 `json:"logsIngestGB"`
	// LambdaLogBytes is what Lambda itself writes per invocation: its
	// START, END and REPORT lines at the templates' system log level
	// (awsconfig.PlatformLogBytesAt; none at WARN, the default).
	LambdaLogBytes int `json:"lambdaLogBytes"`
	// AlarmMonth is one standard CloudWatch alarm per month, per metric
	// it reads (an alarm over metric math pays for every metric in it).
	AlarmMonth float64 `json:"alarmMonth"`
	// CustomMetricMonth is one CloudWatch custom metric per month (the
	// first 10,000 tier), billed pro rata for every hour the metric
	// receives a value: a metric written at least once an hour costs the
	// whole month. The functions' embedded-metric-format records define
	// them (Usage.Metrics).
	CustomMetricMonth float64 `json:"customMetricMonth"`
	// LogsStorageGBMonth is CloudWatch Logs storage per GB-month; what is
	// ingested is kept LogsRetentionMonths (the templates'
	// LogRetentionDays, 30 days). Priced on the ingested bytes, an upper
	// bound: CloudWatch bills the compressed size.
	LogsStorageGBMonth  float64 `json:"logsStorageGBMonth"`
	LogsRetentionMonths float64 `json:"logsRetentionMonths"`
	// Init is each function's init duration on a cold start (process
	// start to its first request for an invocation), which Lambda bills
	// at the function's memory for provided runtimes; measured from the
	// real bootstraps (MeasureInit). A function without one is not
	// billed for its cold starts.
	Init map[string]time.Duration `json:"initNs,omitempty"`
	// MemoryGB is the configured memory assumed for every function.
	MemoryGB float64 `json:"memoryGB"`
	// Memory overrides MemoryGB for some functions, in MB: the sizes the
	// template deploys (TemplateMemory; xjobcost sets them all), or a
	// what-if.
	Memory map[string]int `json:"memoryMB,omitempty"`
	// CPUShare prices Lambda time at the function's CPU share: Lambda
	// gives a function CPU in proportion to its memory (VCPUMemoryMB is
	// one vCPU), while the meter's handlers run on a whole core of this
	// machine, so each invocation's CPU-bound part is stretched by
	// CPUStretch and its waiting left as it is. Off, the measured time is
	// billed as it is (the meter before the model).
	CPUShare bool `json:"cpuShare,omitempty"`
	// CPU is each function's mean CPU time an invocation, measured with
	// the real bootstraps, for usage whose invocations carry no measured
	// CPU of their own (the in-process handlers share one process).
	CPU map[string]time.Duration `json:"cpuNs,omitempty"`
	// InitCPU is each function's CPU time during a cold start's Init
	// (lambdarun.Function.InitCPU), stretched as CPU is.
	InitCPU map[string]time.Duration `json:"initCpuNs,omitempty"`
}

// VCPUMemoryMB is the memory at which Lambda gives a function one whole
// vCPU; below it a function gets that share of one (256 MB: 1/6.9).
const VCPUMemoryMB = 1769

// CPUStretch is how much longer cpu of single-threaded CPU-bound work
// takes at memoryMB than on a whole core: cpu × (VCPUMemoryMB/memoryMB −
// 1), and nothing at or above VCPUMemoryMB (work that could use a
// second vCPU is not modelled). This machine's core stands for Lambda's
// vCPU.
func CPUStretch(cpu time.Duration, memoryMB int) time.Duration {
	if memoryMB <= 0 || memoryMB >= VCPUMemoryMB || cpu <= 0 {
		return 0
	}
	return time.Duration(float64(cpu) * (float64(VCPUMemoryMB)/float64(memoryMB) - 1))
}

// MemoryMBOf is function fn's memory under p, in MB.
func (p Prices) MemoryMBOf(fn string) int {
	if mb, ok := p.Memory[fn]; ok && mb > 0 {
		return mb
	}
	return int(math.Round(p.MemoryGB * 1024))
}

// CPUPerInvoke is fn's mean CPU time an invocation in u: measured with
// the invocations (the real bootstraps), else p.CPU's.
func (p Prices) CPUPerInvoke(fn string, inv InvokeStat) time.Duration {
	if cpu, ok := inv.CPUPerInvoke(); ok {
		return cpu
	}
	return p.CPU[fn]
}

// ListPrices are us-east-1 list prices, every function at MemoryMB (the
// templates' MemorySize at their defaults; Memory from TemplateMemory
// prices what the template deploys).
func ListPrices() Prices {
	return Prices{WRU: 0.625e-6, RRU: 0.125e-6, SQSRequest: 0.40e-6, SNSRequest: 0.50e-6,
		LambdaRequest: 0.20e-6, LambdaGBSecond: 0.0000133334, HTTPRequest: 1.00e-6, StorageGBMonth: 0.25,
		PITRGBMonth: 0.20, LogsIngestGB: 0.50, LambdaLogBytes: awsconfig.PlatformLogBytesAt(awsconfig.SystemLogLevel), AlarmMonth: 0.10,
		CustomMetricMonth: 0.30, LogsStorageGBMonth: 0.03, LogsRetentionMonths: 1, MemoryGB: MemoryMB / 1024.0}
}

// MonthSeconds is the month the monthly prices are per: 30 days.
const MonthSeconds = 30 * 24 * 3600

// FunctionCost is one function's share of a metered interval, per trigger
// (counts) and per million triggers (dollars).
type FunctionCost struct {
	Function string `json:"function"`
	// Invocations and MsPerInvoke describe the Lambda side (0 for the ESM
	// pollers, which are not invocations).
	Invocations int     `json:"invocations"`
	MsPerInvoke float64 `json:"msPerInvoke"`
	ColdStarts  int     `json:"coldStarts,omitempty"`
	// MetricSeries counts the custom metrics the function wrote.
	MetricSeries int `json:"metricSeries,omitempty"`
	// Per trigger.
	DynamoDBPerTrigger float64 `json:"dynamodbRequestsPerTrigger"`
	SQSPerTrigger      float64 `json:"sqsRequestsPerTrigger"`
	SNSPerTrigger      float64 `json:"snsRequestsPerTrigger"`
	WRUPerTrigger      float64 `json:"wruPerTrigger"` // index writes included
	IndexWRUPerTrigger float64 `json:"indexWruPerTrigger"`
	RRUPerTrigger      float64 `json:"rruPerTrigger"`
	StoredBytesPerTrig float64 `json:"storedBytesPerTrigger"`
	// Dollars per million triggers.
	DynamoDBPerM float64 `json:"dynamodbUSDPerM"` // request units
	StoragePerM  float64 `json:"storageUSDPerM"`  // DynamoDB storage and PITR for the retention
	// RetentionPerM is the delete, at the end of the retention, of every
	// item (and index entry) the interval created in the retained tables
	// that the code deletes, as LogDeleteBefore pays it: ⌈size/1 KB⌉ per
	// item, 1 per entry. Items with a TTL attribute are left out: DynamoDB's
	// TTL deletes them free of charge.
	RetentionPerM float64 `json:"retentionUSDPerM"`
	LogsPerM      float64 `json:"logsUSDPerM"` // CloudWatch Logs ingestion
	// LogsStoragePerM is the storage of what was ingested, for the log
	// groups' retention.
	LogsStoragePerM float64 `json:"logsStorageUSDPerM"`
	// MetricsPerM is the custom metrics' share of the interval: each
	// written metric's monthly price × the interval's share of a month.
	MetricsPerM float64 `json:"metricsUSDPerM"`
	// LambdaInitPerM is the cold starts' billed Init.
	LambdaInitPerM float64 `json:"lambdaInitUSDPerM"`
	// LostWrites counts conditional writes that lost (billed at size).
	LostWrites         int     `json:"lostWrites"`
	SQSPerM            float64 `json:"sqsUSDPerM"` // SNS included
	LambdaRequestsPerM float64 `json:"lambdaRequestsUSDPerM"`
	LambdaDurationPerM float64 `json:"lambdaDurationUSDPerM"`
	// MemoryMB is the memory the function's time is priced at.
	MemoryMB int `json:"memoryMB,omitempty"`
	// CPUMsPerInvoke is the mean CPU time an invocation (Prices.CPUPerInvoke)
	// and StretchMsPerInvoke what the CPU share adds to its billed time
	// (0 without Prices.CPUShare).
	CPUMsPerInvoke     float64 `json:"cpuMsPerInvoke,omitempty"`
	StretchMsPerInvoke float64 `json:"stretchMsPerInvoke,omitempty"`
	// CPUSharePerM is the part of LambdaDurationPerM and LambdaInitPerM
	// the CPU share adds.
	CPUSharePerM float64 `json:"cpuShareUSDPerM,omitempty"`
	TotalPerM    float64 `json:"totalUSDPerM"`
	// Ops is the operation mix, "service:Operation" → requests.
	Ops map[string]int `json:"ops"`
}

// Cost is a metered interval priced per trigger.
type Cost struct {
	Triggers  int            `json:"triggers"`
	Prices    Prices         `json:"prices"`
	Functions []FunctionCost `json:"functions"`
	// AWSRequestsPerTrigger counts DynamoDB, SQS and SNS requests (ESM
	// polling included); InvocationsPerTrigger Lambda invocations;
	// HTTPPerTrigger API Gateway requests.
	AWSRequestsPerTrigger float64 `json:"awsRequestsPerTrigger"`
	DynamoDBPerTrigger    float64 `json:"dynamodbRequestsPerTrigger"`
	SQSPerTrigger         float64 `json:"sqsRequestsPerTrigger"`
	InvocationsPerTrigger float64 `json:"invocationsPerTrigger"`
	HTTPPerTrigger        float64 `json:"httpApiRequestsPerTrigger"`
	HTTPPerM              float64 `json:"httpApiUSDPerM"`
	TotalPerM             float64 `json:"totalUSDPerM"`
	// CapacityReported says whether the DynamoDB units came (at least in
	// part) from the service's own ConsumedCapacity rather than DeriveUnits.
	CapacityReported bool `json:"capacityReported"`
}

// Cost prices u for triggers triggers. Lambda duration is the measured
// handler time at each function's memory (p.MemoryMBOf; the ring's wait
// to the exact millisecond included, as Lambda bills it), its CPU-bound
// part stretched to the function's CPU share when p.CPUShare is set. A
// zero trigger count yields a zero Cost.
func (u Usage) Cost(triggers int, p Prices) Cost {
	c := Cost{Triggers: triggers, Prices: p}
	if triggers <= 0 {
		return c
	}
	t := float64(triggers)
	perM := 1e6 / t
	fns := map[string]bool{}
	for fn := range u.Ops {
		fns[fn] = true
	}
	for fn := range u.Invokes {
		fns[fn] = true
	}
	for fn := range u.LogBytes {
		fns[fn] = true
	}
	for fn := range u.Metrics {
		fns[fn] = true
	}
	names := make([]string, 0, len(fns))
	for fn := range fns {
		names = append(names, fn)
	}
	slices.SortFunc(names, func(a, b string) int { return compareFunctions(a, b) })
	var ddbN, sqsN, snsN, invN int
	for _, fn := range names {
		fc := FunctionCost{Function: fn, Ops: map[string]int{}}
		var wru, rru, iwru, retire float64
		var fddb, fsqs, fsns, billed, stored int
		for key, s := range u.Ops[fn] {
			fc.Ops[key] = s.Requests
			svc, op, _ := strings.Cut(key, ":")
			switch svc {
			case "dynamodb":
				fddb += s.Requests
				if s.Reported > 0 {
					c.CapacityReported = true
				}
				if IsWrite(op) {
					wru += s.Reported + s.Derived + s.IndexUnits
					iwru += s.IndexUnits
				} else {
					rru += s.Reported + s.Derived
				}
				stored += s.StoredBytes
				fc.LostWrites += s.Lost
				retire += float64(s.NewItems)/2 + float64(max(s.PurgedBytes, 0))/1024 + float64(s.NewEntries)
			case "sqs":
				fsqs += s.Requests
				billed += max(s.Billed, s.Requests)
			case "sns":
				fsns += s.Requests
			}
		}
		inv := u.Invokes[fn]
		fc.Invocations = inv.Invocations
		if inv.Invocations > 0 {
			fc.MsPerInvoke = float64(inv.Duration.Microseconds()) / 1000 / float64(inv.Invocations)
		}
		fc.DynamoDBPerTrigger, fc.SQSPerTrigger, fc.SNSPerTrigger = float64(fddb)/t, float64(fsqs)/t, float64(fsns)/t
		fc.WRUPerTrigger, fc.IndexWRUPerTrigger, fc.RRUPerTrigger = wru/t, iwru/t, rru/t
		fc.StoredBytesPerTrig = float64(stored) / t
		fc.DynamoDBPerM = (wru*p.WRU + rru*p.RRU) * perM
		fc.StoragePerM = float64(stored) / 1e9 * (p.StorageGBMonth + p.PITRGBMonth) * perM
		fc.RetentionPerM = retire * p.WRU * perM
		logGB := float64(u.LogBytes[fn]+inv.Invocations*p.LambdaLogBytes) / 1e9
		fc.LogsPerM = logGB * p.LogsIngestGB * perM
		fc.LogsStoragePerM = logGB * p.LogsStorageGBMonth * p.LogsRetentionMonths * perM
		fc.MetricSeries = len(u.MetricSeries(fn))
		fc.MetricsPerM = float64(fc.MetricSeries) * p.CustomMetricMonth * u.Seconds / MonthSeconds * perM
		fc.SQSPerM = (float64(billed)*p.SQSRequest + float64(fsns)*p.SNSRequest) * perM
		fc.LambdaRequestsPerM = float64(inv.Invocations) * p.LambdaRequest * perM
		// Lambda bills each invocation rounded up to the millisecond (a
		// Usage from before Billed was counted falls back to the sum).
		dur := inv.Billed
		if dur == 0 {
			dur = inv.Duration
		}
		// With the CPU share, each invocation's CPU-bound part is
		// stretched (added to its rounded time unrounded: within 1 ms of
		// rounding the sum), and a cold start's Init likewise.
		fc.MemoryMB = p.MemoryMBOf(fn)
		gb := p.MemoryGB
		if _, ok := p.Memory[fn]; ok {
			gb = float64(fc.MemoryMB) / 1024
		}
		cpu := p.CPUPerInvoke(fn, inv)
		fc.CPUMsPerInvoke = float64(cpu.Microseconds()) / 1000
		init := BilledDuration(p.Init[fn])
		if p.CPUShare {
			st := CPUStretch(cpu, fc.MemoryMB)
			fc.StretchMsPerInvoke = float64(st.Microseconds()) / 1000
			stretched := time.Duration(inv.Invocations) * st
			dur += stretched
			withInit := BilledDuration(p.Init[fn] + CPUStretch(p.InitCPU[fn], fc.MemoryMB))
			fc.CPUSharePerM = (stretched.Seconds() + float64(inv.ColdStarts)*(withInit-init).Seconds()) * gb * p.LambdaGBSecond * perM
			init = withInit
		}
		fc.LambdaDurationPerM = dur.Seconds() * gb * p.LambdaGBSecond * perM
		fc.ColdStarts = inv.ColdStarts
		fc.LambdaInitPerM = float64(inv.ColdStarts) * init.Seconds() * gb * p.LambdaGBSecond * perM
		fc.TotalPerM = fc.DynamoDBPerM + fc.StoragePerM + fc.RetentionPerM + fc.LogsPerM + fc.LogsStoragePerM + fc.MetricsPerM +
			fc.SQSPerM + fc.LambdaRequestsPerM + fc.LambdaDurationPerM + fc.LambdaInitPerM
		c.TotalPerM += fc.TotalPerM
		ddbN, sqsN, snsN, invN = ddbN+fddb, sqsN+fsqs, snsN+fsns, invN+inv.Invocations
		c.Functions = append(c.Functions, fc)
	}
	c.HTTPPerM = float64(u.HTTPRequests) * p.HTTPRequest * perM
	c.TotalPerM += c.HTTPPerM
	c.DynamoDBPerTrigger, c.SQSPerTrigger = float64(ddbN)/t, float64(sqsN+snsN)/t
	c.AWSRequestsPerTrigger = float64(ddbN+sqsN+snsN) / t
	c.InvocationsPerTrigger = float64(invN) / t
	c.HTTPPerTrigger = float64(u.HTTPRequests) / t
	return c
}

// functionOrder is the pipeline's order, for tables; others sort after it.
var functionOrder = []string{"scan", "ring", "dispatch", "callback", "registry", "web", "esm:ring", "esm:dispatch"}

func compareFunctions(a, b string) int {
	ia, ib := slices.Index(functionOrder, a), slices.Index(functionOrder, b)
	if ia < 0 {
		ia = len(functionOrder)
	}
	if ib < 0 {
		ib = len(functionOrder)
	}
	if ia != ib {
		return ia - ib
	}
	return strings.Compare(a, b)
}
