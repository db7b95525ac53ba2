// Command scan is xjob's scan Lambda function: invoked every minute by an EventBridge rule,
// it runs one scan tick under the shard leases and sends the due fires to
// the ring queue (or straight to a dispatch lane when late).
// wiring.Main reads its configuration from the environment (internal/adapter/awsconfig
// names), builds the SDK clients and the function's services once, outside the
// handler, and serves invocations; the function's package links only what it runs.
package main

import (
	_ "time/tzdata" // cron is evaluated in each job's time zone; provided.al2023 ships no zoneinfo

	"github.com/xjobdev/xjob/internal/app/lambdaapp/scanfn"
	"github.com/xjobdev/xjob/internal/app/lambdaapp/wiring"
)

// The scan has no secrets (it calls no executor and serves no route), so
// it gets no secret source and links no SSM client.
func main() { wiring.Main("scan", scanfn.Build, nil) }
