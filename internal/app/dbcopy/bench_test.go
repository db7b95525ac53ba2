package dbcopy

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/sqlitestore"
	"github.com/xjobdev/xjob/internal/testenv/pgserver"
)

// BenchmarkCopyLogs copies an installation of 20,000 logs into a fresh
// PostgreSQL database per iteration, a page of 100 and of 1,000 logs per
// read and write, and reports logs/s. Compare the two in one run:
//
//	go test -run '^$' -bench CopyLogs -benchtime 3x ./internal/app/dbcopy/
func BenchmarkCopyLogs(b *testing.B) {
	const n = 20_000
	srv := pgserver.Start(b)
	file := filepath.Join(b.TempDir(), "xjob.db")
	writeState(b, file, shards)
	db, err := sqlitestore.Open(b.Context(), file, sqlitestore.Options{Shards: shards})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UnixMilli()
	for start := 0; start < n; start += 1000 {
		logs := make([]xjob.Log, 1000)
		for i := range logs {
			id := int64(start + i + 1)
			logs[i] = xjob.Log{ID: id, OccurrenceID: fmt.Sprintf("j1/MANUAL/r%d/s0", id), JobID: 1, GroupID: 1,
				TriggerType: xjob.TriggerManual, TriggerTime: now - id, TriggerCode: 200, TriggerMsg: "Trigger type: Manual<br>Route: FIRST",
				ExecutorAddress: "http://10.0.0.9:9999/", ExecutorHandler: "demo", ExecutorParam: "p=1", ExecutorShardingParam: "0/1",
				HandleTime: now - id + 100, HandleCode: 200, HandleMsg: "done", Version: 3}
		}
		if err := db.LogRestore(b.Context(), logs); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	for _, page := range []int{100, 1000} {
		b.Run(fmt.Sprintf("page=%d", page), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				to := srv.NewDatabase(b)
				b.StartTimer()
				sum, err := Copy(b.Context(), Options{From: file, To: to, PageSize: page})
				if err != nil || sum.Logs != n {
					b.Fatalf("copy: %+v %v", sum, err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "logs/s")
		})
	}
}
