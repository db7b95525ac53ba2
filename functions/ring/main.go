// Command ring is xjob's ring Lambda function: fed by the ring queue's SQS event source, it waits to
// each bucket's exact millisecond, dispatches the fast lane's fires itself (what it cannot finish
// goes to the fast lane queue) and sends the slow lane's to the slow lane queue.
// wiring.Main reads its configuration from the environment (internal/adapter/awsconfig
// names), builds the SDK clients and the function's services once, outside the
// handler, and serves invocations; the function's package links only what it runs.
package main

import (
	_ "time/tzdata" // cron is evaluated in each job's time zone; provided.al2023 ships no zoneinfo

	"github.com/xjobdev/xjob/internal/app/lambdaapp/ringfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/secrets"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
)

func main() { wiring.Main("ring", ringfn.Build, secrets.FromSSM) }
