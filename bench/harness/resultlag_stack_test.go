package harness

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/internal/testenv/tool"
	"github.com/xjobdev/xjob/pkg/adminclient"
)

// TestResultLagOnStack reads sampled results through the admin API of
// the emulated stack as the cost runs do: every sample shows within the
// deadline, after its callback returned, and the reads (the web
// function) are left out of the meter, so that they are not priced.
func TestResultLagOnStack(t *testing.T) {
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := awsstack.StartFor(t, ctx, awsstack.Options{Root: "../..", Shards: 2, RingPollers: 1,
		PollWait: time.Second, NoMaintenance: true, Logger: slog.New(slog.DiscardHandler)})
	exe, err := StartExecutor()
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	exe.SetAdmin(d.ExecutorURL())
	exe.SetAccessToken(d.AccessToken())
	api, err := adminclient.New(d.URL(), d.AdminToken())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := createJobsOn(ctx, api, d.AdminToken(), []string{exe.Address()}, "", 3,
		func(int) string { return "* * * * * ?" }); err != nil {
		t.Fatal(err)
	}
	d.Meter().Exclude(lagFunction)
	warmReaders(ctx, api)
	before := d.Meter().Snapshot()
	d.Meter().ResetHot()
	const samples = 6
	from := time.Now()
	lag := NewResultLag(ResultLagOptions{From: from, To: from.Add(6 * time.Second), Every: 2, Limit: samples})
	exe.OnCallback(lag.Offer)
	if err := lag.Run(ctx, resultShown(api)); err != nil {
		t.Fatal(err)
	}
	usage := d.Meter().Snapshot().Sub(before)
	r := lag.Report()
	r.Queued, r.Requests = ResultPaths(usage)
	t.Log(r)
	if r.Sampled != samples || r.Visible.N != samples || r.Missed != 0 || r.Pending != 0 || r.Offered < 2*samples-1 {
		t.Errorf("%s: want %d sampled and shown, from at least %d results", r, samples, 2*samples-1)
	}
	if r.Visible.P50 < 0 || r.Visible.Max > DefaultLagDeadline.Seconds()*1000 {
		t.Errorf("%s: lags out of range", r)
	}
	if r.Requests == 0 || r.Path() == "" {
		t.Errorf("%s: no callback request metered", r)
	}
	if in := usage.Invokes[lagFunction]; in.Invocations != 0 || usage.Ops[lagFunction] != nil || usage.HTTPRequests != 0 {
		t.Errorf("the reads were metered: %d web invocations, ops %v, %d HTTP API requests", in.Invocations, usage.Ops[lagFunction], usage.HTTPRequests)
	}
	// The reads went to the log pages: the tables' loads (the hottest
	// keys, the provisioned pricing) hold no more read units than the
	// metered requests spent.
	var tableRCU float64
	for _, secs := range d.Meter().TableSeconds() {
		for _, s := range secs {
			tableRCU += s.RCU
		}
	}
	if read := readUnits(usage); tableRCU > read+1e-6 {
		t.Errorf("the tables' loads hold %.1f read units, the metered reads %.1f: the lag's reads are in them", tableRCU, read)
	}
}

// readUnits sums the metered DynamoDB read units of u.
func readUnits(u awsstack.Usage) float64 {
	var n float64
	for _, ops := range u.Ops {
		for op, st := range ops {
			if strings.HasPrefix(op, "dynamodb:") && !awsstack.IsWrite(strings.TrimPrefix(op, "dynamodb:")) {
				n += st.Reported + st.Derived
			}
		}
	}
	return n
}
