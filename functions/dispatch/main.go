// Command dispatch is xjob's dispatch Lambda function: fed by the fast and slow lanes' SQS event
// sources, it triggers executors; a direct invocation
// {"jobId":…,"executorParam":…,"addressList":[…]} triggers a job by hand.
// wiring.Main reads its configuration from the environment (internal/adapter/awsconfig
// names), builds the SDK clients and the function's services once, outside the
// handler, and serves invocations; the function's package links only what it runs.
package main

import (
	_ "time/tzdata" // cron is evaluated in each job's time zone; provided.al2023 ships no zoneinfo

	"github.com/xjobdev/xjob/internal/app/lambdaapp/dispatchfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/secrets"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
)

func main() { wiring.Main("dispatch", dispatchfn.Build, secrets.FromSSM) }
