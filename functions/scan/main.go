// Command scan is xjob's scan Lambda function: invoked every minute by an EventBridge rule,
// it ticks once a second under the scan shard leases and pushes due fires to
// the ring queue (or straight to a dispatch lane when late).
// lambdaapp.Main reads its configuration from the environment (internal/adapter/awsconfig
// names), builds the SDK clients and services once, outside the handler, and
// serves invocations with the function's handler (App.Handler).
package main

import (
	_ "time/tzdata" // cron is evaluated in each job's time zone; provided.al2023 ships no zoneinfo

	"github.com/xjobdev/xjob/internal/app/lambdaapp"
)

func main() { lambdaapp.Main("scan") }
