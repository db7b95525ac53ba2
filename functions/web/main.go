// Command web is xjob's web Lambda function: behind every other route of the HTTP API, it serves the
// console (/ redirects to it), the /v1 admin API, /metrics, /healthz and executors' job declarations.
// wiring.Main reads its configuration from the environment (internal/adapter/awsconfig
// names), builds the SDK clients and the function's services once, outside the
// handler, and serves invocations; the function's package links only what it runs.
package main

import (
	_ "time/tzdata" // cron is evaluated in each job's time zone; provided.al2023 ships no zoneinfo

	"github.com/xjobdev/xjob/internal/app/lambdaapp/secrets"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/webfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
)

func main() { wiring.Main("web", webfn.Build, secrets.FromSSM) }
