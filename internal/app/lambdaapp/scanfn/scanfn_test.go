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
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/clock"
)

func TestMain(m *testing.M) { emulator.Main(m) }

// TestKeeperTakesQuietTableOnDemand: a scan function of a stack deployed
// with TableBillingMode PROVISIONED, on dynalite and a fake clock, with
// no job: its log pages table (provisioned, as the templates create it)
// stays provisioned for 59 quiet minutes and is on demand after the hour;
// the jobs table is never touched. On an on-demand stack no keeper runs.
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
			logs := prefix + "-" + dynamostore.TableLogs
			if mode == "PROVISIONED" {
				provision(t, api, logs)
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
				if got := billing(t, api, logs); got != want {
					t.Fatalf("minute %d: log pages %s, want %s", m, got, want)
				}
				clk.Advance(time.Minute)
			}
			if got := billing(t, api, prefix+"-"+dynamostore.TableJobs); got != types.BillingModePayPerRequest {
				t.Errorf("jobs table %s, want it on demand as created", got)
			}
		})
	}
}

// provision switches a table and its indexes to 1 read and 1 write unit,
// as the templates create the steady table with TableCapacityMin 1.
func provision(t *testing.T, api *dynamodb.Client, name string) {
	t.Helper()
	one := &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(1)}
	in := &dynamodb.UpdateTableInput{TableName: aws.String(name), BillingMode: types.BillingModeProvisioned, ProvisionedThroughput: one,
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Update: &types.UpdateGlobalSecondaryIndexAction{
			IndexName: aws.String("byTime"), ProvisionedThroughput: one}}}}
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
