package lambdaapp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// List prices (us-east-1) from issue 5.
const (
	pricePerWRU       = 0.625e-6
	pricePerRRU       = 0.125e-6
	pricePerSQS       = 0.40e-6
	pricePerInvoke    = 0.20e-6
	pricePerGBSecond  = 0.0000133334 // Lambda arm64 duration
	pricePerHTTPAPI   = 1.00e-6
	assumedMemoryGB   = 0.128 // configured memory assumed for every function (128 MB)
	functionsInTables = "scan ring dispatch callback registry"
)

// costTable prints what the test's pipeline spent per trigger, per
// function, and the $ per million triggers at list prices.
func costTable(t *testing.T, m *meter, triggers int) {
	t.Helper()
	if triggers == 0 {
		return
	}
	per := 1e6 / float64(triggers)
	var b strings.Builder
	fmt.Fprintf(&b, "\ncost per million triggers (%d triggers measured; Lambda memory %.0f MB assumed; duration = measured handler time)\n", triggers, assumedMemoryGB*1000)
	fmt.Fprintf(&b, "%-14s %7s %9s %8s %8s %7s %9s %9s %9s %9s %9s\n", "function", "invokes", "ms/inv", "WRU/trg", "RRU/trg", "SQS/trg", "$DDB/M", "$SQS/M", "$λreq/M", "$λdur/M", "$total/M")
	var total float64
	rows := append(strings.Fields(functionsInTables), "esm:ring", "esm:dispatch")
	reportedAny := false
	for _, fn := range rows {
		m.mu.Lock()
		inv := m.inv[fn]
		m.mu.Unlock()
		var n int
		var dur time.Duration
		if inv != nil && !strings.HasPrefix(fn, "esm:") {
			n, dur = inv.N, inv.Dur
		}
		wru, rru, rep := m.units(fn)
		reportedAny = reportedAny || rep
		sqsN := m.requests(fn, "sqs") + m.requests(fn, "sns")
		ddb := (wru*pricePerWRU + rru*pricePerRRU) * per
		sq := float64(sqsN) * pricePerSQS * per
		lreq := float64(n) * pricePerInvoke * per
		ldur := dur.Seconds() * assumedMemoryGB * pricePerGBSecond * per
		sum := ddb + sq + lreq + ldur
		total += sum
		msPer := 0.0
		if n > 0 {
			msPer = float64(dur.Milliseconds()) / float64(n)
		}
		fmt.Fprintf(&b, "%-14s %7d %9.1f %8.2f %8.2f %7.2f %9.3f %9.3f %9.3f %9.3f %9.3f   ops:%s\n", fn, n, msPer,
			wru/float64(triggers), rru/float64(triggers), float64(sqsN)/float64(triggers), ddb, sq, lreq, ldur, sum, m.opsLine(fn))
	}
	m.mu.Lock()
	httpN := m.http
	m.mu.Unlock()
	api := float64(httpN) * pricePerHTTPAPI * per
	total += api
	fmt.Fprintf(&b, "%-14s %7d %9s %8s %8s %7s %9s %9s %9s %9s %9.3f\n", "http api", httpN, "", "", "", "", "", "", "", "", api)
	fmt.Fprintf(&b, "%-14s %7s %9s %8s %8s %7s %9s %9s %9s %9s %9.3f\n", "TOTAL", "", "", "", "", "", "", "", "", "", total)
	src := "derived from request shapes (emulator reported no consumed capacity)"
	if reportedAny {
		src = "as reported by the emulator (ReturnConsumedCapacity=TOTAL, table only: GSI writes not included), derived where none was reported"
	}
	fmt.Fprintf(&b, "capacity units: %s\n", src)
	t.Log(b.String())
}
