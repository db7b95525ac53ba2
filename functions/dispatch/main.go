// Command dispatch is xjob's dispatch Lambda function: fed by the fast and slow lanes' SQS event
// sources, it triggers executors; a direct invocation
// {"jobId":…,"executorParam":…,"addressList":[…]} triggers a job by hand.
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
	app, err := lambdaapp.Init(context.Background(), "dispatch")
	if err != nil {
		slog.Error("dispatch: init", "err", err)
		os.Exit(1)
	}
	lambda.Start(app.Dispatch)
}
