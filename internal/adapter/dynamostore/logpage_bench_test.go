package dynamostore

import (
	"fmt"
	"testing"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/fire"
)

// realisticPage is a W1-like page: n finished cron logs of different jobs
// with dispatch's English trigger message.
func realisticPage(n int) []xjob.Log {
	const fireAt = 1_795_000_000_000
	logs := make([]xjob.Log, n)
	for i := range logs {
		job := int64(16*i + 3)
		logs[i] = xjob.Log{ID: int64(i + 1), OccurrenceID: fire.Occurrence{JobID: job, Type: xjob.TriggerCron, FireTime: fireAt}.ID(0),
			JobID: job, GroupID: 1, TriggerType: xjob.TriggerCron, ScheduledTime: fireAt, TriggerTime: fireAt + int64(i%40),
			TriggerCode: 200, ExecutorAddress: "http://10.0.3.17:9999/", ExecutorHandler: fmt.Sprintf("demoJobHandler%d", i%7),
			TriggerMsg: "Trigger type: CRON<br>Executor registry type: automatic<br>Executor address list: http://10.0.3.17:9999/<br>" +
				"Route strategy: FIRST<br>Block strategy: SERIAL_EXECUTION<br>Timeout: 0<br>Fail retry count: 0<br><br>" +
				"<span style=\"color:#00c0ef;\" > >>>>>>>>>>>Trigger<<<<<<<<<<< </span><br>Trigger result: success<br>" +
				"address: http://10.0.3.17:9999/<br>code: 200<br>msg: ",
			HandleTime: fireAt + 80 + int64(i%13), HandleCode: 200, ClaimUntil: fireAt + 30_000, Version: 3}
	}
	return logs
}

// BenchmarkPageEncode reports the compressed bytes per log of a W1 page
// (what a page write is billed by) and the CPU of one encode.
func BenchmarkPageEncode(b *testing.B) {
	for _, n := range []int{1, 16, 62, 250} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			logs := realisticPage(n)
			var size int
			for b.Loop() {
				body, err := encodeLogs(logs)
				if err != nil {
					b.Fatal(err)
				}
				size = len(body)
			}
			b.ReportMetric(float64(size)/float64(n), "bytes/log")
		})
	}
}

func BenchmarkPageDecode(b *testing.B) {
	body, err := encodeLogs(realisticPage(62))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := decodeLogs(body); err != nil {
			b.Fatal(err)
		}
	}
}
