package lambdaapp_test

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/xjobdev/xjob/internal/testenv/awsstack"
)

// costTable prints what the test's pipeline spent per trigger, per
// function, and the $ per million triggers at list prices: u is the
// metered window, priced by awsstack (the same accounting bench --aws uses).
func costTable(t *testing.T, u awsstack.Usage, triggers int) {
	t.Helper()
	if triggers == 0 {
		return
	}
	c := u.Cost(triggers, awsstack.ListPrices())
	var b strings.Builder
	fmt.Fprintf(&b, "\ncost per million triggers (%d triggers measured; Lambda memory %.0f MB assumed; duration = measured handler time)\n", triggers, c.Prices.MemoryGB*1000)
	fmt.Fprintf(&b, "%-14s %7s %9s %8s %8s %7s %9s %9s %9s %9s %9s\n", "function", "invokes", "ms/inv", "WRU/trg", "RRU/trg", "SQS/trg", "$DDB/M", "$SQS/M", "$λreq/M", "$λdur/M", "$total/M")
	for _, f := range c.Functions {
		fmt.Fprintf(&b, "%-14s %7d %9.1f %8.2f %8.2f %7.2f %9.3f %9.3f %9.3f %9.3f %9.3f   ops:%s\n", f.Function, f.Invocations, f.MsPerInvoke,
			f.WRUPerTrigger, f.RRUPerTrigger, f.SQSPerTrigger+f.SNSPerTrigger, f.DynamoDBPerM, f.SQSPerM, f.LambdaRequestsPerM, f.LambdaDurationPerM, f.TotalPerM, opsLine(f.Ops))
	}
	fmt.Fprintf(&b, "%-14s %7d %9s %8s %8s %7s %9s %9s %9s %9s %9.3f\n", "http api", u.HTTPRequests, "", "", "", "", "", "", "", "", c.HTTPPerM)
	fmt.Fprintf(&b, "%-14s %7s %9s %8s %8s %7s %9s %9s %9s %9s %9.3f\n", "TOTAL", "", "", "", "", "", "", "", "", "", c.TotalPerM)
	src := "derived from request shapes (emulator reported no consumed capacity)"
	if c.CapacityReported {
		src = "as reported by the emulator (ReturnConsumedCapacity=TOTAL, table only: GSI writes not included), derived where none was reported"
	}
	fmt.Fprintf(&b, "capacity units: %s\n", src)
	t.Log(b.String())
}

// opsLine is a function's operation mix, e.g. " PutItem×3 SendMessageBatch×1".
func opsLine(ops map[string]int) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(ops)) {
		fmt.Fprintf(&b, " %s×%d", strings.TrimPrefix(strings.TrimPrefix(k, "dynamodb:"), "sqs:"), ops[k])
	}
	return b.String()
}

// iamActions maps the operations fn called (in u) to the IAM actions that
// allow them.
func iamActions(u awsstack.Usage, fn string) []string {
	var acts []string
	for key := range u.Ops[fn] {
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

// consumeActions are what the templates grant a function on each queue
// its SQS event source mapping reads (infra's consumeActions).
var consumeActions = []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"}
