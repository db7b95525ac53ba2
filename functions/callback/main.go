// Command callback is xjob's callback Lambda function: behind the HTTP API route /api/callback (also
// under /xxl-job-admin), it records executor results and runs retries, child
// jobs and alarms.
// wiring.Main reads its configuration from the environment (internal/adapter/awsconfig
// names), builds the SDK clients and the function's services once, outside the
// handler, and serves invocations; the function's package links only what it runs.
package main

import (
	_ "time/tzdata" // cron is evaluated in each job's time zone; provided.al2023 ships no zoneinfo

	"github.com/xjobdev/xjob/internal/app/lambdaapp/callbackfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/secrets"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
)

func main() { wiring.Main("callback", callbackfn.Build, secrets.FromSSM) }
