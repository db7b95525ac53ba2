// Command callback is xjob's callback Lambda function, the executor API: behind its Lambda
// function URL (the executors' admin address) it serves /api/callback, /api/registry and
// /api/registryRemove (also under /xxl-job-admin): it records executor results and heartbeats.
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
