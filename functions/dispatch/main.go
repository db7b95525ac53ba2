// Command dispatch is xjob's dispatch Lambda function: fed by the fast and slow lanes' SQS event
// sources, it triggers executors; a direct invocation
// {"jobId":…,"executorParam":…,"addressList":[…]} triggers a job by hand.
// lambdaapp.Main reads its configuration from the environment (internal/adapter/awsconfig
// names), builds the SDK clients and services once, outside the handler, and
// serves invocations with the function's handler (App.Handler).
package main

import (
	_ "time/tzdata" // cron is evaluated in each job's time zone; provided.al2023 ships no zoneinfo

	"github.com/xjobdev/xjob/internal/app/lambdaapp"
)

func main() { lambdaapp.Main("dispatch") }
