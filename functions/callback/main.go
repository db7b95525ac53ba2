// Command callback is xjob's callback Lambda function: behind the HTTP API route /api/callback (also
// under /xxl-job-admin), it records executor results and runs retries, child
// jobs and alarms.
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
	app, err := lambdaapp.Init(context.Background(), "callback")
	if err != nil {
		slog.Error("callback: init", "err", err)
		os.Exit(1)
	}
	lambda.Start(app.Callback)
}
