// Command registry is xjob's registry Lambda function: behind the rest of the HTTP API, it serves
// executor heartbeats and the admin API; an EventBridge rule runs the periodic
// maintenance (sweep, group refresh, lost-job check, log purge).
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
	app, err := lambdaapp.Init(context.Background(), "registry")
	if err != nil {
		slog.Error("registry: init", "err", err)
		os.Exit(1)
	}
	lambda.Start(app.Registry)
}
