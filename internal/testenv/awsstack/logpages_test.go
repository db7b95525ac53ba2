package awsstack_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
	"github.com/xjobdev/xjob/internal/testenv/awsstack"
	"github.com/xjobdev/xjob/internal/testenv/tool"
	"github.com/xjobdev/xjob/pkg/adminclient"
	"github.com/xjobdev/xjob/pkg/driver"
	"github.com/xjobdev/xjob/pkg/executor"
)

// TestDeploymentLogPages runs the sparse profile (Options.Shards 1,
// LogPages 1): the functions get XJOB_LOG_PAGES, so two every-second jobs'
// runs of one second share one log page (the page part of every log id
// is 0), each job's log list finds its runs, and the scan recorded 1 in
// the layout item, which then refuses the default 16.
func TestDeploymentLogPages(t *testing.T) {
	tool.SkipIfShort(t, "the AWS emulators (dynalite, fauxqs)")
	ctx := context.Background()
	d := awsstack.StartFor(t, ctx, awsstack.Options{Shards: 1, LogPages: 1, RingPollers: 1,
		PollWait: time.Second, Logger: slog.New(slog.DiscardHandler)})
	if d.Store().LogPages() != 1 {
		t.Fatalf("store LogPages %d, want 1", d.Store().LogPages())
	}
	addr, stop := sdkExecutor(t, d, "awsstack-pages", nil, map[string]executor.HandlerFunc{"ok": succeed})
	defer stop()
	api, err := adminclient.New(d.URL(), d.AdminToken())
	if err != nil {
		t.Fatal(err)
	}
	g, err := api.GroupCreate(ctx, xjob.Group{AppName: "awsstack-pages", Title: "t", AddressType: xjob.AddressManual,
		AddressList: []string{addr}})
	if err != nil {
		t.Fatalf("group: %v", err)
	}
	var jobs []int64
	for range 2 {
		job := xjob.Job{GroupID: g.ID, Description: "every second", Author: "t", ScheduleType: xjob.ScheduleCron,
			ScheduleConf: "* * * * * ?", Handler: "ok", TriggerStatus: xjob.StatusRunning}
		job.ApplyDefaults()
		j, err := api.JobCreate(ctx, job)
		if err != nil {
			t.Fatalf("job: %v", err)
		}
		jobs = append(jobs, j.ID)
	}
	// Wait for a second in which both jobs ran successfully.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ids := map[int64][]int64{} // scheduled time → log ids
		for _, job := range jobs {
			page, err := d.Store().LogList(ctx, driver.LogListParams{JobID: job, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range page.Logs {
				if l.JobID != job {
					t.Fatalf("job %d's list holds job %d's log", job, l.JobID)
				}
				if l.TriggerType == xjob.TriggerCron && l.HandleCode == xjob.CodeSuccess {
					ids[l.ScheduledTime] = append(ids[l.ScheduledTime], l.ID)
				}
			}
		}
		shared := false
		for sched, both := range ids {
			for _, id := range both {
				if id&15 != 0 {
					t.Fatalf("log %d of %d: page part %d, want 0 at LogPages 1", id, sched, id&15)
				}
			}
			if len(both) == 2 {
				shared = true
				if both[0]>>22 != both[1]>>22 {
					t.Fatalf("logs %d and %d of one second name different pages", both[0], both[1])
				}
			}
		}
		if shared {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no second with both jobs' successful runs in 30 s; invocation errors: %v", d.Errors())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The scan recorded the functions' LogPages in the layout item.
	endpoint, _ := d.Endpoints()
	ddb := dynamodb.NewFromConfig(aws.Config{Region: awsstack.Region, Credentials: credentials.NewStaticCredentialsProvider("t", "t", "")},
		func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	leases := dynamostore.TablesWithPrefix(awsstack.TablePrefix).Leases
	if err := wiring.CheckLayout(ctx, ddb, leases, 1, 1); err != nil {
		t.Errorf("layout at LogPages 1: %v", err)
	}
	if err := wiring.CheckLayout(ctx, ddb, leases, 1, 16); err == nil || !strings.Contains(err.Error(), "LogPages=1") {
		t.Errorf("layout at LogPages 16 over 1: %v, want a refusal", err)
	}
}
