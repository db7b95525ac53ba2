// Command registry is xjob's registry Lambda function: behind the rest of the HTTP API, it serves
// executor heartbeats and the admin API; an EventBridge rule runs the periodic
// maintenance (sweep, group refresh, lost-job check, log purge).
// lambdaapp.Main reads its configuration from the environment (internal/adapter/awsconfig
// names), builds the SDK clients and services once, outside the handler, and
// serves invocations with the function's handler (App.Handler).
package main

import (
	_ "time/tzdata" // cron is evaluated in each job's time zone; provided.al2023 ships no zoneinfo

	"github.com/xjobdev/xjob/internal/app/lambdaapp"
)

func main() { lambdaapp.Main("registry") }
