package dynamostore_test

import (
	"sync"
	"testing"

	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
)

// Processes asking at once give per-job metrics to max jobs in all, the
// same ones for every asker; the rest never get one.
func TestMetricJobsBoundAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	opts := dynamostore.Options{Tables: dynamostore.TablesWithPrefix(emulator.UniqueName("t"))}
	first, err := dynamostore.New(emulator.DynamoDB(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	const max = 3
	var mu sync.Mutex
	answers := map[int64]map[bool]int{}
	var wg sync.WaitGroup
	for p := range 4 { // four processes, each asking for jobs 1..8 in its own order
		wg.Go(func() {
			db, err := dynamostore.New(emulator.DynamoDB(t), opts)
			if err != nil {
				t.Error(err)
				return
			}
			jobs := make([]int64, 8)
			for i := range jobs {
				jobs[i] = int64((i+2*p)%8 + 1)
			}
			got, err := db.MetricJobs(ctx, jobs, max)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for job, ok := range got {
				if answers[job] == nil {
					answers[job] = map[bool]int{}
				}
				answers[job][ok]++
			}
		})
	}
	wg.Wait()
	tracked := 0
	for job, a := range answers {
		if len(a) != 1 {
			t.Errorf("job %d: answers %v, want the same for every process", job, a)
		}
		if a[true] > 0 {
			tracked++
		}
	}
	if tracked != max {
		t.Fatalf("%d jobs got per-job metrics, want %d (answers %v)", tracked, max, answers)
	}
	again, err := first.MetricJobs(ctx, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}, max)
	if err != nil {
		t.Fatal(err)
	}
	for job, ok := range again {
		if wasTracked := answers[job][true] > 0; ok != wasTracked {
			t.Errorf("job %d asked again: %v, want %v", job, ok, wasTracked)
		}
	}
}
