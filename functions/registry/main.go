// Command registry is xjob's registry Lambda function: an EventBridge rule runs the periodic
// maintenance (callback sweep, group refresh, lost-job check, change resume) every minute.
// wiring.Main reads its configuration from the environment (internal/adapter/awsconfig
// names), builds the SDK clients and the function's services once, outside the
// handler, and serves invocations; the function's package links only what it runs.
package main

import (
	_ "time/tzdata" // cron is evaluated in each job's time zone; provided.al2023 ships no zoneinfo

	"github.com/xjobdev/xjob/internal/app/lambdaapp/registryfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
)

// The maintenance calls no executor and serves no route, so it has no
// secrets and links no SSM client.
func main() { wiring.Main("registry", registryfn.Build, nil) }
