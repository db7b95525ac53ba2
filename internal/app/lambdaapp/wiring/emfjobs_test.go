package wiring_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/metric"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/clock"
)

// Per-job metrics on AWS keep local mode's bound across environments: two
// environments over one deployment's tables, with a bound of 2, write
// JobResults and JobResultFailures for the same two jobs (the first to
// report results) and every other job's under JobId "other", each result
// counted once.
func TestEMFJobsBoundAcrossEnvironments(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	opts := dynamostore.Options{Tables: dynamostore.TablesWithPrefix(emulator.UniqueName("emf"))}
	store, err := dynamostore.New(emulator.DynamoDB(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	const bound = 2
	clk := clock.NewFake(time.UnixMilli(1_700_000_000_000))
	type env struct {
		out bytes.Buffer
		emf *wiring.EMF
		m   *metric.Metrics
	}
	var envs [2]*env
	for i := range envs {
		e := &env{m: &metric.Metrics{DrainJobs: true}}
		e.emf = wiring.NewEMF(&e.out, "stack-callback", clk)
		e.emf.PerJob(store, bound)
		envs[i] = e
	}
	// Invocations: (environment, job, handle code).
	for _, r := range []struct {
		env  int
		job  int64
		code int
	}{{0, 7, 200}, {0, 7, 500}, {1, 9, 200}, {0, 8, 200}, {1, 7, 200}, {1, 8, 500}, {0, 9, 200}} {
		e := envs[r.env]
		e.m.JobResult(r.job, r.code)
		e.emf.Collect(e.m)
		if err := e.emf.Flush(ctx); err != nil { // one flush per invocation
			t.Fatal(err)
		}
	}
	results, failures := map[string]float64{}, map[string]float64{}
	for _, e := range envs {
		sc := bufio.NewScanner(&e.out)
		for sc.Scan() {
			var rec struct {
				AWS struct {
					CloudWatchMetrics []struct{ Dimensions [][]string }
				} `json:"_aws"`
				JobID             string `json:"JobId"`
				JobResults        float64
				JobResultFailures float64
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatal(err)
			}
			if d := rec.AWS.CloudWatchMetrics[0].Dimensions; len(d) != 1 || len(d[0]) != 2 || d[0][1] != "JobId" {
				t.Fatalf("dimensions %v, want FunctionName and JobId", d)
			}
			results[rec.JobID] += rec.JobResults
			failures[rec.JobID] += rec.JobResultFailures
		}
	}
	// Jobs 7 and 9 asked first (8's first result came after both).
	want := map[string]float64{"7": 3, "9": 2, wiring.JobOther: 2}
	wantFail := map[string]float64{"7": 1, "9": 0, wiring.JobOther: 1}
	if len(results) != bound+1 {
		t.Fatalf("JobIds %v, want %d jobs and other", results, bound)
	}
	for id, n := range want {
		if results[id] != n || failures[id] != wantFail[id] {
			t.Errorf("JobId %s: %v results, %v failures; want %v, %v", id, results[id], failures[id], n, wantFail[id])
		}
	}
}
