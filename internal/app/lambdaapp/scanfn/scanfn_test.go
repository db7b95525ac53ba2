package scanfn_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/xjobdev/xjob/internal/adapter/awsconfig"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/scanfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/scheduler/capacity"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/clock"
)

func TestMain(m *testing.M) { emulator.Main(m) }

// TestKeeperTakesQuietTableOnDemand: a scan function of a stack deployed
// with TableBillingMode PROVISIONED, on dynalite and a fake clock, with
// no job: its steady tables (provisioned, as the templates create them)
// stay provisioned for 59 quiet minutes and are on demand after the hour.
// On an on-demand stack no keeper runs and the tables stay on demand.
func TestKeeperTakesQuietTableOnDemand(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, mode := range []string{"PROVISIONED", "PAY_PER_REQUEST"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			api := emulator.DynamoDB(t)
			prefix := emulator.UniqueName("keep")
			env := map[string]string{awsconfig.EnvTablePrefix: prefix, awsconfig.EnvShards: "2", awsconfig.EnvRingQueueURL: "http://q/ring",
				awsconfig.EnvDispatchFastURL: "http://q/fast", awsconfig.EnvDispatchSlowURL: "http://q/slow",
				awsconfig.EnvTableBillingMode: mode, awsconfig.EnvTableCapacityMin: "1", awsconfig.EnvTableCapacityMax: "100",
				awsconfig.EnvTableTargetUtilization: "70"}
			cfg, err := wiring.LoadConfig("scan", func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			// dynalite stamps a table created on demand with its switch to
			// on demand (LastUpdateToPayPerRequestDateTime) at its own
			// time: the keeper's 12 h spacing counts from it, so the fake
			// clock starts past it.
			clk := clock.NewFake(time.Now().Add(13 * time.Hour).Truncate(time.Minute))
			b, err := wiring.NewBase(cfg, wiring.Deps{DynamoDB: api, SQS: emulator.SQS(t), Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Store.CreateTables(ctx); err != nil {
				t.Fatal(err)
			}
			logs, jobs := prefix+"-"+dynamostore.TableLogs, prefix+"-"+dynamostore.TableJobs
			if mode == "PROVISIONED" {
				provision(t, api, logs, "byTime")
				provision(t, api, jobs, "due", "byGroup", "byShard")
			}
			f, err := scanfn.New(b)
			if err != nil {
				t.Fatal(err)
			}
			for m := range 61 {
				if err := f.Handle(ctx, events.EventBridgeEvent{}); err != nil {
					t.Fatalf("minute %d: %v", m, err)
				}
				want := types.BillingModeProvisioned
				if mode == "PAY_PER_REQUEST" || m >= 59 {
					want = types.BillingModePayPerRequest
				}
				for _, tb := range []string{logs, jobs} {
					if got := billing(t, api, tb); got != want {
						t.Fatalf("minute %d: %s %s, want %s", m, tb, got, want)
					}
				}
				clk.Advance(time.Minute)
			}
		})
	}
}

// provision switches a table and its indexes to 1 read and 1 write unit,
// as the templates create the steady tables with TableCapacityMin 1.
func provision(t *testing.T, api *dynamodb.Client, name string, indexes ...string) {
	t.Helper()
	one := &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(1)}
	in := &dynamodb.UpdateTableInput{TableName: aws.String(name), BillingMode: types.BillingModeProvisioned, ProvisionedThroughput: one}
	for _, ix := range indexes {
		in.GlobalSecondaryIndexUpdates = append(in.GlobalSecondaryIndexUpdates, types.GlobalSecondaryIndexUpdate{
			Update: &types.UpdateGlobalSecondaryIndexAction{IndexName: aws.String(ix), ProvisionedThroughput: one}})
	}
	if _, err := api.UpdateTable(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

func billing(t *testing.T, api *dynamodb.Client, name string) types.BillingMode {
	t.Helper()
	out, err := api.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Table.BillingModeSummary == nil {
		return types.BillingModeProvisioned
	}
	return out.Table.BillingModeSummary.BillingMode
}

// TestPerFireBreakEven: with the per-fire units the scan gives its
// keepers, the keepers' cost rule keeps the steady tables where the
// meter's table loads say they cost least — both on demand idle, the log
// pages provisioned and the jobs table on demand at W5's 100 fires a
// minute, both provisioned at W1's 1,000 fires a second.
func TestPerFireBreakEven(t *testing.T) {
	t.Parallel()
	tests := []struct {
		table    string
		rate     float64
		onDemand bool
	}{
		{dynamostore.TableLogs, 0, true}, {dynamostore.TableLogs, 100.0 / 60, false}, {dynamostore.TableLogs, 1000, false},
		{dynamostore.TableJobs, 0, true}, {dynamostore.TableJobs, 100.0 / 60, true}, {dynamostore.TableJobs, 1000, false},
	}
	for _, tt := range tests {
		od, pr := capacity.New(capacity.DefaultPolicy(), scanfn.PerFire[tt.table], nil).Costs(tt.rate)
		if got := od < pr; got != tt.onDemand {
			t.Errorf("%s at %.2f fires/s: on demand $%.5f/h, provisioned $%.5f/h: on demand %v, want %v", tt.table, tt.rate, od, pr, got, tt.onDemand)
		}
	}
}

// TestTunablesRingLead: the scan's ring lead is the stack's RingLead
// (XJOB_RING_LEAD) when set, wiring.DefaultRingLead otherwise, and a
// test's override in Deps wins over both.
func TestTunablesRingLead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      string
		override time.Duration
		want     time.Duration
	}{
		{"default", "", 0, wiring.DefaultRingLead},
		{"stack", "100ms", 0, 100 * time.Millisecond},
		{"override", "100ms", 400 * time.Millisecond, 400 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{awsconfig.EnvTablePrefix: "p", awsconfig.EnvShards: "4", awsconfig.EnvRingQueueURL: "http://q/ring",
				awsconfig.EnvDispatchFunction: "dispatch", awsconfig.EnvRingLead: tt.env}
			cfg, err := wiring.LoadConfig("scan", func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			b := &wiring.Base{Config: cfg, Deps: wiring.Deps{Scan: wiring.ScanTunables{RingLead: tt.override}}}
			if got := scanfn.Tunables(b).RingLead; got != tt.want {
				t.Errorf("ring lead %s, want %s", got, tt.want)
			}
		})
	}
}
