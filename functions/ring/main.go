// Command ring is xjob's ring Lambda function: fed by the ring queue's SQS event source, it waits to
// each bucket's exact millisecond and hands the fires to a dispatch lane.
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
	app, err := lambdaapp.Init(context.Background(), "ring")
	if err != nil {
		slog.Error("ring: init", "err", err)
		os.Exit(1)
	}
	lambda.Start(app.Ring)
}
