// Command scan is xjob's scan Lambda function: invoked every minute by an EventBridge rule,
// it ticks once a second under the scan shard leases and pushes due fires to
// the ring queue (or straight to a dispatch lane when late).
// It reads its configuration from the environment (internal/awsconfig names),
// builds the SDK clients and services once, outside the handler, and serves
// invocations with lambdaapp's handler.
package main

import (
	"context"
	"log/slog"
	"os"
	_ "time/tzdata" // cron is evaluated in each job's time zone; provided.al2023 ships no zoneinfo

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/xjobdev/xjob/internal/lambdaapp"
)

func main() {
	app, err := lambdaapp.Init(context.Background(), "scan")
	if err != nil {
		slog.Error("scan: init", "err", err)
		os.Exit(1)
	}
	lambda.Start(app.Scan)
}
