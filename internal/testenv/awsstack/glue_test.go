package awsstack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/xjobdev/xjob"
	"github.com/xjobdev/xjob/internal/adapter/dynamostore"
	"github.com/xjobdev/xjob/internal/testenv/emulator"
	"github.com/xjobdev/xjob/pkg/driver"
)

// TestMeterGlueJobAdvance prices one scan advance of a running GLUE job
// with a 100 KB source, as the meter bills it (table write and due-index
// entry): the due index projects the whole job item, so an advance costs
// what the item weighs unless the source lives apart from it.
func TestMeterGlueJobAdvance(t *testing.T) {
	dir := emulator.InstalledDir(t)
	dyn, err := emulator.StartDynalite(dir, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer dyn.Stop()
	ctx := context.Background()
	m := NewMeter()
	raw := dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(dyn.Endpoint()) })
	metered := dynamodb.NewFromConfig(emulator.Config(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(dyn.Endpoint())
		o.APIOptions = append(o.APIOptions, m.Middleware("scan"))
	})
	tables := dynamostore.TablesWithPrefix("glue")
	st, err := dynamostore.New(metered, dynamostore.Options{Tables: tables, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTables(ctx); err != nil {
		t.Fatal(err)
	}
	m.Describe(raw, dynamostore.TableSpecs(tables), tables.Logs)
	g, err := st.GroupInsert(ctx, xjob.Group{AppName: "glue-app", Title: "glue"})
	if err != nil {
		t.Fatal(err)
	}
	source := "#!/bin/sh\n" + strings.Repeat("echo 'a line of a long GLUE script, 100 KB in all'\n", 2000)
	j, err := st.JobInsert(ctx, xjob.Job{GroupID: g.ID, Name: "glue", Description: "glue", Author: "t",
		ScheduleType: xjob.ScheduleCron, ScheduleConf: "0 * * * * ?", MisfireStrategy: xjob.MisfireDoNothing,
		RouteStrategy: xjob.RouteFirst, BlockStrategy: xjob.BlockSerialExecution, GlueType: xjob.GlueShell, GlueSource: source,
		TriggerStatus: xjob.StatusRunning, TriggerNextTime: 1_795_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	before := m.Snapshot()
	if err := st.JobAdvance(ctx, driver.JobAdvanceParams{ID: j.ID, ExpectVersion: j.Version,
		TriggerLastTime: j.TriggerNextTime, TriggerNextTime: j.TriggerNextTime + 60_000}); err != nil {
		t.Fatal(err)
	}
	op := m.Snapshot().Sub(before).Ops["scan"]["dynamodb:UpdateItem"]
	wru := op.Reported + op.Derived + op.IndexUnits
	t.Logf("one advance of a GLUE job with a %d-byte source: %.0f write units (index %.0f)", len(source), wru, op.IndexUnits)
	if wru > 5 {
		t.Errorf("an advance costs %.0f write units: the source weighs on the job item", wru)
	}
	got, err := st.JobGet(ctx, j.ID)
	if err != nil || got.GlueSource != source {
		t.Fatalf("job after the advance: source of %d bytes, %v", len(got.GlueSource), err)
	}
}
